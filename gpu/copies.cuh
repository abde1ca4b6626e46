/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copies.cuh: copies from global into shared memory for the kernels of
 * decode.cu and products.cu: staged so that a thread's loads are all in
 * flight before its first store (x, decoding tables), or asynchronous
 * (cp.async: escape counts), and requests to L2 ahead of use.
 */
#ifndef GLYD_COPIES_CUH
#define GLYD_COPIES_CUH

#include "cuda_common.cuh"

/* Copies into shared memory at a kernel's start, a thread's loads all
 * issued before its first store. A loop that stores each value as it
 * arrives waits a whole trip to memory every pass (the load, then the
 * store that needs it, then the next load), and at a kernel's start every
 * warp of the device waits at once, with no other work to hide it: x for a
 * row of 4096 took 16 trips in a row that way at 256 threads, the decoding
 * table 8 more. In 16-byte words, STAGE_WORDS a thread at a time (more
 * would spill at batch 1), either is one trip. */
#define STAGE_WORDS 4

/* Words [k0, n) of src into dst (shared), a block's threads side by side. */
__device__ __forceinline__ void stage_words(uint4* dst, const uint4* __restrict__ src, unsigned k0, unsigned n)
{
    for (; k0 < n; k0 += STAGE_WORDS * blockDim.x) {
        uint4 w[STAGE_WORDS];
#pragma unroll
        for (int j = 0; j < STAGE_WORDS; j++) {
            unsigned const k = k0 + j * blockDim.x + threadIdx.x;
            if (k < n) w[j] = __ldg(src + k);
        }
#pragma unroll
        for (int j = 0; j < STAGE_WORDS; j++) {
            unsigned const k = k0 + j * blockDim.x + threadIdx.x;
            if (k < n) dst[k] = w[j];
        }
    }
}

/* A decoding table of `bytes` (even) into dst (shared, 16-byte aligned):
 * in 16-byte words where the table is aligned to them (device allocations
 * are) and whole. */
__device__ __forceinline__ bool table_in_words(const void* table, unsigned bytes)
{
    return !(bytes & 15) && !((uintptr_t)table & 15);
}

__device__ __forceinline__ void stage_table(void* dst, const void* __restrict__ table, unsigned bytes)
{
    if (!table_in_words(table, bytes)) {
        for (unsigned k = threadIdx.x; k < bytes / 2; k += blockDim.x)
            ((uint16_t*)dst)[k] = ((const uint16_t*)table)[k];
        return;
    }
    stage_words((uint4*)dst, (const uint4*)table, 0, bytes / 16);
}

/* The same in two halves, for other loads to share the first one's trip:
 * table_begin loads a thread's first TABLE_FIRST words, table_end stores
 * them and copies the rest (none where the block has a thread for every
 * TABLE_FIRST words: the 8 KiB multi-symbol table at 256 threads). */
#define TABLE_FIRST 2
typedef struct { uint4 w[TABLE_FIRST]; } table_words;

__device__ __forceinline__ table_words table_begin(const void* __restrict__ table, unsigned bytes)
{
    table_words f;
#pragma unroll
    for (int j = 0; j < TABLE_FIRST; j++) {
        unsigned const k = j * blockDim.x + threadIdx.x;
        f.w[j] = make_uint4(0, 0, 0, 0);
        if (table_in_words(table, bytes) && k < bytes / 16) f.w[j] = __ldg((const uint4*)table + k);
    }
    return f;
}

__device__ __forceinline__ void table_end(void* dst, const void* __restrict__ table, unsigned bytes, table_words f)
{
    if (!table_in_words(table, bytes)) {
        stage_table(dst, table, bytes);
        return;
    }
#pragma unroll
    for (int j = 0; j < TABLE_FIRST; j++) {
        unsigned const k = j * blockDim.x + threadIdx.x;
        if (k < bytes / 16) ((uint4*)dst)[k] = f.w[j];
    }
    stage_words((uint4*)dst, (const uint4*)table, TABLE_FIRST * blockDim.x, bytes / 16);
}

/* Vectors [0, vectors) of x's part [part * span, part * span + span) into
 * xs (shared, 16-byte aligned), vector v from xs + v * stride, 4 floats of
 * padding after every 32 (gk_rows_stride). span and cols are multiples of
 * 32 (gk_rows_shape), so a 16-byte word of x never straddles the padding. */
__device__ __forceinline__ void stage_x(float* xs, const float* __restrict__ x, uint64_t cols, uint64_t span,
                                        uint64_t stride, uint64_t part, unsigned vectors)
{
    unsigned const perVector = (unsigned)(span / 4), n = vectors * perVector; /* words */
    if ((uintptr_t)x & 15) {
        for (unsigned v = 0; v < vectors; v++)
            for (uint64_t c = threadIdx.x; c < span; c += blockDim.x)
                xs[v * stride + c + c / 32 * 4] = x[v * cols + part * span + c];
        return;
    }
    for (unsigned k0 = 0; k0 < n; k0 += STAGE_WORDS * blockDim.x) {
        float4 w[STAGE_WORDS];
#pragma unroll
        for (int j = 0; j < STAGE_WORDS; j++) {
            unsigned const k = k0 + j * blockDim.x + threadIdx.x, v = vectors > 1 ? k / perVector : 0;
            if (k < n) w[j] = __ldg((const float4*)(x + v * cols + part * span) + (k - v * perVector));
        }
#pragma unroll
        for (int j = 0; j < STAGE_WORDS; j++) {
            unsigned const k = k0 + j * blockDim.x + threadIdx.x, v = vectors > 1 ? k / perVector : 0;
            unsigned const c = k - v * perVector; /* in words */
            if (k < n) ((float4*)xs)[v * (stride / 4) + c + c / 8] = w[j];
        }
    }
}

/* Four bytes of global memory into shared memory, copied while the
 * thread goes on (cp.async, sm_80 on: no register waits for them, so no
 * instruction does until copy_wait); a __syncwarp after copy_wait shows
 * them to the warp. On the CPU (tests/cudacpu), copied at once. */
__device__ __forceinline__ void copy4_async(uint32_t* dst, const void* src)
{
#ifndef GLYD_CUDACPU
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(__cvta_generic_to_global(src))
                 : "memory");
#else
    memcpy(dst, src, 4);
#endif
}

__device__ __forceinline__ void copy_wait(void)
{
#ifndef GLYD_CUDACPU
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/* Asks L2 for the 128-byte line of p. */
__device__ __forceinline__ void prefetch_l2(const void* p)
{
#ifndef GLYD_CUDACPU
    asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(p)));
#else
    (void)*(const volatile uint8_t*)p; /* the kernels on the CPU (tests/cudacpu): the address checked by a read */
#endif
}

#endif /* GLYD_COPIES_CUH */

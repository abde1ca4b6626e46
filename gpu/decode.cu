/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * decode.cu: tensor blobs decoded on the GPU, whole (into bf16) or inside a
 * matrix-vector product. The per-thread work is gpu/tensor_kernels.h,
 * shared with the CPU emulation that tests it (tests/unit/test_cuda.c);
 * here are the launches, the block-wide prefix sums and the reductions.
 *
 *   fast layout, whole tensor: a block per unit, a thread per group of 32
 *     elements; each group's escapes start where the block's prefix sum of
 *     the groups before it says. Codes in the nibble form (tensor_kernels.h,
 *     written once at upload by nibble_kernel) let a thread rebuild its
 *     group in registers a few instructions a weight, and a warp store its
 *     32 groups through shared memory in 512-byte runs; in bit planes,
 *     element by element.
 *   Huffman layout, whole tensor: a thread per run of GK_HUF_RUN symbols,
 *     from the run index built at upload; where a unit's stream is too long
 *     for the index, a thread per unit with the table in shared memory.
 *   y = W x where rows are whole groups (every real model): the rows
 *     kernel. x staged in shared memory; a warp per unit, row by row; a
 *     thread per group, rebuilt in registers (fast layout, nibble form),
 *     read as it is (plain bf16) or from the warp's unit decoded into
 *     shared memory (Huffman), and multiplied there; a butterfly of
 *     shuffles sums each row in a fixed order, the same for every layout.
 *   y = W x otherwise (rows that cut groups): the general kernel, a block
 *     per unit, a warp per row (or per part of a long row); lanes decode the
 *     32 elements of a group side by side. Parts of long rows are added in
 *     order afterwards, by either kernel.
 */
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glyd_tensor.h"
#include "glyd_cuda.h"
#include "tensor_kernels.h"

extern "C" size_t glyd_cudaDescribeBlob(const void* blob, size_t size, gk_tensor* t, gk_huf_tables* tables);
extern "C" size_t glyd_tensorHuffmanRuns(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                         uint16_t* runs);

#define BLOCK 128      /* threads of a decoding block */
#define GEMV_WARPS 8   /* warps of a product block */
#define GEMV_MAX_BATCH 8
#define GEMV_MAX_ITEMS GK_GEMV_MAX_ITEMS

struct glyd_cudaTensor_s {
    gk_tensor t;
    uint8_t* blob;     /* device */
    gk_huf_tables* tables; /* device: the Huffman layout's decoding tables */
    uint16_t* runs;    /* device: its run index, where every unit's stream is short enough */
    size_t bytes;
};

static __thread char g_lastError[256];

extern "C" const char* glyd_cudaLastError(void) { return g_lastError; }

/* A CUDA call's failure as a glyd error, its reason kept. */
static size_t cuda_failed(cudaError_t e, const char* what)
{
    snprintf(g_lastError, sizeof g_lastError, "%s: %s", what, cudaGetErrorString(e));
    return (size_t)-(int)GLYD_error_GENERIC;
}
#define CUDA_TRY(call, what)                                   \
    do {                                                       \
        cudaError_t const e_ = (call);                         \
        if (e_ != cudaSuccess) return cuda_failed(e_, what);   \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Kernels                                                                  */
/* ------------------------------------------------------------------------ */

/* A group's sign-and-mantissa bytes from p (8-byte aligned), elements
 * 4k .. 4k + 3 in raw[k]. */
__device__ __forceinline__ void planes_load(const uint8_t* __restrict__ p, uint32_t raw[8])
{
    const uint2* const rp = (const uint2*)p;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint2 const d = __ldg(rp + k);
        raw[2 * k] = d.x;
        raw[2 * k + 1] = d.y;
    }
}

/* Group q's sign-and-mantissa bytes. */
__device__ __forceinline__ void group_planes(const uint8_t* __restrict__ blob, const gk_tensor& t, uint64_t q,
                                             uint32_t raw[8])
{
    planes_load(blob + t.planes + 32 * q, raw);
}

/* A whole group of a fast-layout blob with its codes as nibbles (sel, its
 * escape mask m) and its planes (raw) rebuilt into pairs of bf16
 * (tensor_kernels.h): its escapes from number mine on (never past nbEsc),
 * from the step's window (words of it in shared memory, from escape first
 * on), patched by gk_group_patch: in registers, or where they are too many
 * for that, through the thread's slot of shared memory. */
__device__ __forceinline__ void nibble_pairs(const uint8_t* __restrict__ blob, const gk_tensor& t,
                                             const uint32_t sel[4], uint32_t m, const uint32_t raw[8],
                                             const uint32_t* window, unsigned words, uint64_t first, uint64_t mine,
                                             uint64_t nbEsc, uint32_t symLo, uint32_t symHi, uint32_t* slot,
                                             uint32_t pairs[16])
{
    uint32_t ex[8];
    gk_group_exponents(sel, symLo, symHi, ex);
    gk_group_patch(blob, &t, m, mine, nbEsc, window, words, first, ex, slot);
    gk_group_pairs(ex, raw, pairs);
}

/* The sum of v over lanes 0 .. lane of the warp: a shuffle up and an
 * add a step, the add predicated on the shuffle's own test that the lane
 * it read is in the warp (rather than a lane test and a select). */
__device__ __forceinline__ unsigned warp_inclusive_sum(unsigned v, unsigned lane)
{
#ifndef GLYD_CUDACPU
    (void)lane;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1)
        asm("{\n\t.reg .u32 r;\n\t.reg .pred p;\n\t"
            "shfl.sync.up.b32 r|p, %0, %1, 0, 0xffffffff;\n\t"
            "@p add.u32 %0, %0, r;\n\t}"
            : "+r"(v)
            : "r"(d));
#else /* the kernels on the CPU (tests/cudacpu): no PTX */
    for (int d = 1; d < 32; d <<= 1) {
        unsigned const n = __shfl_up_sync(0xFFFFFFFFu, v, d);
        if (lane >= (unsigned)d) v += n;
    }
#endif
    return v;
}

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

/* Whether the nibble form's word loads are aligned (device allocations
 * are; a blob's parts are when its element count is a multiple of 4). */
static __host__ __device__ bool nibble_words_aligned(const uint8_t* blob, const gk_tensor* t)
{
    return !((uintptr_t)(blob + t->planes) & 7) && !((uintptr_t)(blob + t->codePlanes) & 3);
}

/* A warp's 32 whole groups as pairs of bf16 (pairs: the lane's group's)
 * into dst (16-byte aligned), through stage (shared memory: AT_ONCE lanes'
 * groups, 64 bytes each, staged at a time), so that each 16-byte store of
 * the warp writes 512 bytes in a row. Stored where they were, each lane's
 * 64 bytes in four 16-byte stores, a store wrote half of each 32-byte
 * sector it touched, and the writes took twice their bytes on the way to
 * L2: bulk decoding of 4096 x 4096 kept the crossbar into L2 81% busy with
 * DRAM at 38%. Lane l's chunk k is staged at stage[l % AT_ONCE][k ^ (l >>
 * 1 & 3)], so that neither the stores nor the loads of a quarter warp share
 * a bank. */
template <unsigned AT_ONCE> /* 32 (2 KiB of stage) or 16 (1 KiB) */
__device__ __forceinline__ void warp_store_groups(uint4* __restrict__ dst, const uint32_t pairs[16], uint4 (*stage)[4],
                                                  unsigned lane)
{
    static_assert(AT_ONCE == 32 || AT_ONCE == 16, "whole quarter warps a round");
#pragma unroll
    for (unsigned h = 0; h < 32 / AT_ONCE; h++) {
        if (lane / AT_ONCE == h)
#pragma unroll
            for (unsigned k = 0; k < 4; k++)
                stage[lane % AT_ONCE][k ^ (lane >> 1 & 3)] =
                    make_uint4(pairs[4 * k], pairs[4 * k + 1], pairs[4 * k + 2], pairs[4 * k + 3]);
        __syncwarp();
#pragma unroll
        for (unsigned j = 0; j < AT_ONCE / 8; j++) {
            unsigned const q = 8 * j + (lane >> 2), c = lane & 3; /* the round's group q's chunk c */
            dst[4 * AT_ONCE * h + 32 * j + lane] = stage[q][c ^ (q >> 1 & 3)];
        }
        __syncwarp(); /* the stage is read before it is written again */
    }
}

/* gk_unit_start for a read ahead (bulk decoding, products): where the
 * count of escapes before unit u is (NULL for unit 0, whose count is 0);
 * read in one load where it is aligned (the blob's index of counts is, as
 * coded), so that its register is all that its use waits on: four byte
 * loads were joined into a word as they were made, which waited for them
 * there. */
__device__ __forceinline__ const uint8_t* unit_start_at(const uint8_t* __restrict__ blob, const gk_tensor& t,
                                                        uint64_t u)
{
    return u ? blob + t.ends + 4 * (u - 1) : NULL;
}

__device__ __forceinline__ uint32_t unit_start_ahead(const uint8_t* __restrict__ blob, const gk_tensor& t, uint64_t u)
{
    const uint8_t* const p = unit_start_at(blob, t, u);
    if (!p) return 0;
    return (uintptr_t)p & 3 ? gk_read32(p) : __ldg((const uint32_t*)p);
}

/* Units [u0, u1), element i into out[i - u0 * unitSize]. Registers held
 * to 48, so that 10 blocks fit a multiprocessor (the warps' stores through
 * shared memory took 55 otherwise: 9, as many warps as a block fewer).
 * The grid fills the device once (decode_grid) and each block loops over
 * its units, reading the next one's escape counts while it decodes this
 * one: a block a unit read them first, a trip to memory before its
 * window's and its groups' loads could start. */
__global__ void __launch_bounds__(BLOCK, 10)
fast_decode_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t u0, uint64_t u1, uint16_t* __restrict__ out)
{
    typedef cub::BlockScan<uint32_t, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    __shared__ uint32_t slots[BLOCK][GK_PATCH_SLOT_WORDS];
    __shared__ uint32_t window[BLOCK];
    __shared__ uint4 staged[BLOCK / 32][32][4];
    uint64_t const origin = u0 * t.unitSize;
    unsigned const lane = threadIdx.x & 31;
    /* the nibble form: a thread rebuilds its whole group in registers, and
     * a warp whose groups are all whole writes them 512 bytes at a time */
    bool const wide = t.codeForm == GK_CODES_NIBBLES && nibble_words_aligned(blob, &t) && !((uintptr_t)out & 15);
    uint32_t const symLo = gk_read32(t.fastSymbols), symHi = gk_read32(t.fastSymbols + 4);
    uint64_t u = u0 + blockIdx.x;
    /* the escapes before unit u (even lanes) and after it (odd lanes), each
     * lane's own: read as the block's, the compiler took each into a
     * uniform register as it was loaded, which waited for it there */
    uint32_t ahead = u < u1 ? unit_start_ahead(blob, t, u + (lane & 1)) : 0;
    for (; u < u1; u += gridDim.x) {
        uint64_t const a = u * t.unitSize;
        uint64_t const b = gk_unit_end(&t, u);
        uint64_t const last = (b - 1) >> 5, nbEsc = __shfl_sync(0xFFFFFFFFu, ahead, 1);
        uint64_t esc = __shfl_sync(0xFFFFFFFFu, ahead, 0);
        if (u + gridDim.x < u1) ahead = unit_start_ahead(blob, t, u + gridDim.x + (lane & 1));
        for (uint64_t g0 = a >> 5; g0 <= last; g0 += BLOCK) {
            uint64_t const g = g0 + threadIdx.x;
            bool const whole = wide && g <= last && 32 * g + 32 <= b;
            bool const warpWhole = wide && 32 * (g - lane + 32) <= b; /* the same in every lane of the warp */
            uint32_t sel[4], raw[8], m = 0;
            /* every load of the step first: the escape window, codes,
             * planes; the window's word stored in shared memory once they
             * are all issued (stored as it came, it held the group's loads
             * back a trip to memory) */
            uint64_t const first = gk_window_first(esc);
            uint32_t const word = wide ? gk_window_word(blob, &t, first, threadIdx.x) : 0;
            if (whole) {
                const uint32_t* const cp = (const uint32_t*)(blob + t.codePlanes) + 3 * g;
                uint32_t const w0 = __ldg(cp), w1 = __ldg(cp + 1), w2 = __ldg(cp + 2);
                group_planes(blob, t, g, raw);
                gk_nibble_selectors(w0, w1, w2, sel);
                m = gk_nibble_escapes(w0, w1, w2);
            } else if (g <= last) {
                m = gk_fast_escapes(blob, &t, g, a, b);
            }
            if (wide) window[threadIdx.x] = word;
            uint32_t before, total;
            Scan(scan).ExclusiveSum(gk_popc(m), before, total);
            __syncthreads(); /* the window is whole */
            if (whole) {
                uint32_t pairs[16];
                nibble_pairs(blob, t, sel, m, raw, window, BLOCK, first, esc + before, nbEsc, symLo, symHi,
                             slots[threadIdx.x], pairs);
                if (warpWhole) {
                    uint4* const dst = (uint4*)(out + (32 * (g - lane) - origin)); /* the warp's first group's */
                    warp_store_groups<32>(dst, pairs, staged[threadIdx.x >> 5], lane);
                } else {
                    uint4* const dst = (uint4*)(out + (32 * g - origin));
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        dst[k] = make_uint4(pairs[4 * k], pairs[4 * k + 1], pairs[4 * k + 2], pairs[4 * k + 3]);
                }
            } else if (g <= last) {
                gk_fast_group(blob, &t, g, a, b, esc + before, nbEsc, out, origin);
            }
            esc += total;
            __syncthreads(); /* the scan's storage and the window are used again */
        }
    }
}

/* Units [0, nbUnits) rewritten in the nibble form: a block per unit, a
 * thread per group, each group's escapes where the block's prefix sum
 * says (counted in the planes, before the thread rewrites its own group). */
__global__ void nibble_kernel(uint8_t* __restrict__ blob, gk_tensor t)
{
    typedef cub::BlockScan<uint32_t, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    for (uint64_t u = blockIdx.x; u < t.nbUnits; u += gridDim.x) {
        uint64_t const a = u * t.unitSize;
        uint64_t const b = gk_unit_end(&t, u);
        uint64_t const last = (b - 1) >> 5, nbEsc = gk_unit_start(blob, &t, u + 1);
        uint64_t esc = gk_unit_start(blob, &t, u);
        for (uint64_t g0 = a >> 5; g0 <= last; g0 += BLOCK) {
            uint64_t const g = g0 + threadIdx.x;
            uint32_t const count = g <= last ? gk_popc(gk_fast_escapes(blob, &t, g, 0, t.nbElements)) : 0;
            uint32_t before, total;
            Scan(scan).ExclusiveSum(count, before, total);
            if (g <= last) gk_nibble_group(blob, &t, g, esc + before, nbEsc);
            esc += total;
            __syncthreads(); /* the scan's storage is used again */
        }
    }
}

__global__ void huffman_decode_kernel(const uint8_t* __restrict__ blob, gk_tensor t,
                                      const gk_huf_tables* __restrict__ tables, uint16_t* __restrict__ out)
{
    __shared__ __align__(16) uint16_t shared[1 << GK_HUF_MAX_BITS];
    stage_table(shared, tables->one, 2u << t.maxBits);
    __syncthreads();
    for (uint64_t u = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; u < t.nbUnits;
         u += (uint64_t)gridDim.x * blockDim.x)
        gk_huffman_unit(blob, &t, shared, u, out);
}

/* One unit's segments (its whole rows, or the unit itself when it is part
 * of a long row), each cut into chunks of groups when the unit has fewer
 * segments than the block has warps, so that every warp works: warp w
 * takes items (segment, chunk) w, w + GEMV_WARPS, ... Each item's escapes
 * start where the block's count of the items before it says; each item
 * sums in its warp's butterfly, then each segment adds its chunks in order
 * into y (whole rows) or parts[v][unit] (parts of long rows). */
/* HUFFMAN: the Huffman layout, each unit first decoded into shared memory
 * a run a thread (runs: where each starts), then read in the same order:
 * every layout gives the same sums. Otherwise fast or stored. */
template <bool HUFFMAN>
__global__ void fast_gemv_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t rows, uint64_t cols,
                                 const float* __restrict__ x, unsigned batch, float* __restrict__ y,
                                 float* __restrict__ parts, const gk_huf_tables* __restrict__ tables,
                                 const uint16_t* __restrict__ runs)
{
    __shared__ uint32_t before[GEMV_MAX_ITEMS + 1];
    __shared__ float sums[GEMV_MAX_ITEMS * GEMV_MAX_BATCH];
    __shared__ uint16_t unit[HUFFMAN ? GK_HUF_UNIT_MAX : 1];
    __shared__ __align__(16) uint16_t codes[HUFFMAN ? 1 << GK_HUF_MAX_BITS : 1];
    unsigned const warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (HUFFMAN) {
        stage_table(codes, tables->one, 2u << t.maxBits);
        __syncthreads();
    }
    for (uint64_t u = blockIdx.x; u < t.nbUnits; u += gridDim.x) {
        gk_gemv_unit const g = gk_gemv_plan(&t, u, cols, GEMV_WARPS);
        uint64_t const nbEsc = HUFFMAN ? 0 : gk_escapes_before(blob, &t, u + 1);
        if (HUFFMAN) {
            for (uint64_t k = threadIdx.x; k < gk_huf_runs_per_unit(&t); k += blockDim.x)
                gk_huf_unit_run(blob, &t, codes, runs, u, k, g.a, g.b, unit, g.a);
            __syncthreads();
        }
        if (!HUFFMAN) {
            /* each item's escapes start after those of the items before it */
            for (uint64_t it = warp; it < g.nbItems; it += GEMV_WARPS) {
                uint64_t ia, ib;
                uint32_t n = 0;
                gk_gemv_item(&g, it, &ia, &ib);
                for (uint64_t q = (ia >> 5) + lane; ia < ib && q <= (ib - 1) >> 5; q += 32)
                    n += gk_popc(gk_escapes(blob, &t, q, ia, ib));
                for (int m = 16; m; m >>= 1) n += __shfl_xor_sync(0xFFFFFFFFu, n, m);
                if (lane == 0) before[it + 1] = n;
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                before[0] = 0;
                for (uint64_t it = 1; it <= g.nbItems; it++) before[it] += before[it - 1];
            }
            __syncthreads();
        }
        for (uint64_t it = warp; it < g.nbItems; it += GEMV_WARPS) {
            uint64_t ia, ib;
            uint64_t esc = HUFFMAN ? 0 : gk_escapes_before(blob, &t, u) + before[it];
            float acc[GEMV_MAX_BATCH];
            gk_gemv_item(&g, it, &ia, &ib);
            uint64_t const col0 = (ia / cols) * cols;
            for (unsigned v = 0; v < GEMV_MAX_BATCH; v++) acc[v] = 0;
            for (uint64_t q = ia >> 5; ia < ib && q <= (ib - 1) >> 5; q++) {
                uint64_t const i = 32 * q + lane;
                float const w = __uint_as_float(!HUFFMAN ? gk_lane(blob, &t, q, lane, ia, ib, esc, nbEsc)
                                                : i >= ia && i < ib ? (uint32_t)unit[i - g.a] << 16 : 0u);
                /* fmaf, as the emulation: not left to the compiler's contraction of a * b + c */
                if (i >= ia && i < ib)
                    for (unsigned v = 0; v < batch; v++) acc[v] = fmaf(w, x[v * cols + (i - col0)], acc[v]);
                if (!HUFFMAN) esc += gk_popc(gk_escapes(blob, &t, q, ia, ib)); /* the same in every lane */
            }
            for (unsigned v = 0; v < batch; v++) {
                float r = acc[v];
                for (int m = 16; m; m >>= 1) r += __shfl_xor_sync(0xFFFFFFFFu, r, m);
                if (lane == 0) sums[it * GEMV_MAX_BATCH + v] = r;
            }
        }
        __syncthreads();
        for (uint64_t sg = threadIdx.x; sg < g.nbSeg; sg += blockDim.x)
            for (unsigned v = 0; v < batch; v++) {
                float r = sums[sg * g.chunks * GEMV_MAX_BATCH + v];
                for (uint64_t c = 1; c < g.chunks; c++) r += sums[(sg * g.chunks + c) * GEMV_MAX_BATCH + v];
                if (g.whole) y[v * rows + g.firstRow + sg] = r;
                else parts[v * t.nbUnits + u] = r;
            }
        __syncthreads(); /* before[] and sums[] are used again */
    }
}

/* Long rows: the parts' sums added in order. */
__global__ void gemv_parts_kernel(const float* __restrict__ parts, uint64_t nbUnits, uint64_t rows,
                                  uint64_t perRow, unsigned batch, float* __restrict__ y)
{
    uint64_t const r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (unsigned v = 0; v < batch; v++) {
        float s = 0;
        for (uint64_t p = 0; p < perRow; p++) s += parts[v * nbUnits + r * perRow + p];
        y[v * rows + r] = s;
    }
}

/* ------------------------------------------------------------------------ */
/* Products by rows of whole groups (gk_rows_fits): a thread per group       */
/* ------------------------------------------------------------------------ */

/* Shared memory of a rows block: x (vectors x stride floats), then the
 * fast layout's slots, windows and counts (gk_rows_fast_smem); or the
 * multi-symbol decoding table, x, then the symbols of the units a warp
 * decodes at once, a byte an element (Huffman). */
#define ROWS_HUF_TABLES (sizeof(uint32_t) << GK_HUF_MAX_BITS)

static size_t rows_smem(int layout, const gk_tensor* t, uint64_t cols, unsigned vectors, unsigned warps)
{
    if (layout == GK_LAYOUT_FAST) return gk_rows_fast_smem(t, cols, vectors, warps);
    size_t const xs = sizeof(float) * vectors * gk_rows_stride(gk_rows_span(t, cols));
    if (layout == GK_LAYOUT_HUFFMAN)
        return ROWS_HUF_TABLES + xs + (size_t)warps * gk_huf_units_together(t) * gk_huf_unit_bytes(t);
    return xs;
}

/* What launches need of the current device, asked once per device. */
typedef struct {
    int device;
    int sms;         /* multiprocessors */
    size_t smemMost; /* shared memory a block may have (opted in) */
} device_limits;

static cudaError_t limits(device_limits* out)
{
    static device_limits known[16];
    int device, v;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return e;
    if (device < 16 && known[device].sms) {
        *out = known[device];
        return cudaSuccess;
    }
    if ((e = cudaDeviceGetAttribute(&out->sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)) != cudaSuccess)
        return e;
    out->smemMost = (size_t)v;
    out->device = device;
    if (device < 16) known[device] = *out;
    return cudaSuccess;
}

/* The unit that item (a row, or where rows are cut in parts, this
 * block's part of a row) is. */
__device__ __forceinline__ uint64_t rows_unit(uint64_t item, uint64_t perRow, uint64_t part)
{
    return perRow > 1 ? item * perRow + part : item;
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

/* What the rows kernel reads of an item before its first step, read an
 * item ahead of its use (the first in x's trip: a warp mostly has one
 * item, and at a row a unit these reads were a trip of their own before
 * the row's first step, a fifth of a 4096-column row's): the fast layout's
 * escape counts around item0, into the warp's two words of shared memory
 * (rows_counts_ahead; held in registers, at batch 1 one was spilled as it
 * was loaded, and the spill's store waited for the load); where the lane's
 * run of the Huffman units from item0 on starts (the stream's first word
 * needs it). */
typedef struct {
    uint64_t bit; /* Huffman */
} rows_ahead;

/* Lanes 0 and 1: the escapes before unit u and after it into counts[0]
 * and counts[1], copied where aligned (the index of counts is, as coded). */
__device__ __forceinline__ void rows_counts_ahead(uint32_t* counts, const uint8_t* __restrict__ blob,
                                                  const gk_tensor& t, uint64_t u, unsigned lane)
{
    if (lane > 1) return;
    const uint8_t* const p = unit_start_at(blob, t, u + lane);
    if (p && !((uintptr_t)p & 3)) copy4_async(counts + lane, p);
    else counts[lane] = unit_start_ahead(blob, t, u + lane);
}

/* The counts that rows_counts_ahead asked for, seen by every lane. */
__device__ __forceinline__ void rows_counts_wait(void)
{
    copy_wait();
    __syncwarp();
}

template <int LAYOUT>
__device__ __forceinline__ rows_ahead rows_read_ahead(const uint8_t* __restrict__ blob, const gk_tensor& t,
                                                      const uint16_t* __restrict__ runs, uint32_t* counts,
                                                      uint64_t item0, uint64_t items, uint64_t step, uint64_t perRow,
                                                      uint64_t part, unsigned lane, unsigned rpu, unsigned together)
{
    rows_ahead a = { 0 };
    if (LAYOUT == GK_LAYOUT_FAST && item0 < items)
        rows_counts_ahead(counts, blob, t, rows_unit(item0, perRow, part), lane);
    if (LAYOUT == GK_LAYOUT_HUFFMAN) {
        uint64_t const item = item0 + lane / rpu * step;
        if (lane < together * rpu && item < items)
            a.bit = gk_huf_run_bit(blob, &t, runs, rows_unit(item, perRow, part), lane % rpu);
    }
    return a;
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

/* Unit u's planes (Huffman) asked of L2, a 128-byte line a lane at a time
 * (lines from the blob's start, which device allocations align: a hint,
 * but kept to the blob). */
__device__ __forceinline__ void prefetch_planes(const uint8_t* __restrict__ blob, const gk_tensor& t, uint64_t u,
                                                unsigned lane)
{
    uint64_t const a = t.planes + gk_huf_group_planes(&t) * (u * t.unitSize / 32);
    uint64_t const b = t.planes + gk_huf_group_planes(&t) * ((gk_unit_end(&t, u) + 31) / 32);
    for (uint64_t o = (a & ~(uint64_t)127) + 128 * lane; o < b; o += 128 * 32)
        prefetch_l2(blob + o);
}

/* A warp per unit, row by row (see tensor_kernels.h); blockIdx.y is the
 * part of a long row that the block's units hold, whose x it stages.
 * vectors (at most BATCH) of x are read from x, y and parts as given.
 * At batch 1, the common case, registers are held to 64 a thread (no
 * spills, sm_90), so that 4 blocks fit a multiprocessor rather than 3:
 * a step's loads are all issued at once, and more warps keep more of
 * them in flight. Not for the Huffman layout, whose blocks' shared memory
 * (some 96 KiB at rows of 4096: the units each warp decodes at once) lets
 * only 2 fit on sm_90, 1 on sm_80/86/89: held to 64 there, registers
 * bought nothing and spilled on sm_80. */
template <int LAYOUT, int BATCH>
__global__ void __launch_bounds__(32 * GK_ROWS_WARPS, BATCH > 1                    ? 1
                                                      : LAYOUT == GK_LAYOUT_HUFFMAN ? 2
                                                                                    : GK_ROWS_FAST_BLOCKS)
rows_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t rows, uint64_t cols, const float* __restrict__ x,
            unsigned vectors, float* __restrict__ y, float* __restrict__ parts,
            const gk_huf_tables* __restrict__ tables, const uint16_t* __restrict__ runs)
{
    unsigned const warps = blockDim.x >> 5;
    extern __shared__ __align__(16) uint8_t smem[];
    uint64_t const span = gk_rows_span(&t, cols), stride = gk_rows_stride(span);
    unsigned const groups = (unsigned)(span / 32); /* span is a unit's at most: 32-bit arithmetic within a row */
    uint64_t const perRow = cols / span, part = blockIdx.y;
    unsigned const warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* Huffman: the multi-symbol table first, where its address is a
     * constant (its lookups are most of the product's work); then x, then
     * per layout */
    uint32_t* const multi = (uint32_t*)smem;
    float* const xs = (float*)(smem + (LAYOUT == GK_LAYOUT_HUFFMAN ? ROWS_HUF_TABLES : 0));
    uint8_t* const after = (uint8_t*)xs + sizeof(float) * vectors * stride;
    uint64_t const items = perRow > 1 ? rows : t.nbUnits, step = (uint64_t)gridDim.x * warps;
    /* Huffman: a warp decodes `together` of its units at once, their runs
     * a lane each (32 at most), then multiplies them one after another */
    unsigned const rpu = LAYOUT == GK_LAYOUT_HUFFMAN ? (unsigned)gk_huf_runs_per_unit(&t) : 1;
    unsigned const together = LAYOUT == GK_LAYOUT_HUFFMAN ? gk_huf_units_together(&t) : 1;
    /* loads that need nothing staged share x's trip: the Huffman table's,
     * and the warp's first item's reads */
    unsigned const multiBytes = 4u << GK_HUF_MAX_BITS;
    table_words const tableFirst = table_begin(LAYOUT == GK_LAYOUT_HUFFMAN ? tables->multi : NULL,
                                               LAYOUT == GK_LAYOUT_HUFFMAN ? multiBytes : 0);
    uint64_t const firstItem = (uint64_t)blockIdx.x * warps + warp;
    /* fast: a slot a thread, then a window of 32 words a warp, then each
     * warp's two escape counts read ahead */
    uint32_t* const window = (uint32_t*)after + GK_PATCH_SLOT_WORDS * blockDim.x + 32 * warp;
    uint32_t* const counts = (uint32_t*)(after + sizeof(uint32_t) * (GK_PATCH_SLOT_WORDS + 1) * blockDim.x) + 2 * warp;
    rows_ahead ahead =
        rows_read_ahead<LAYOUT>(blob, t, runs, counts, firstItem, items, step, perRow, part, lane, rpu, together);
    /* x's part for this block, padded */
    stage_x(xs, x, cols, span, stride, part, BATCH == 1 ? 1 : vectors);
    if (LAYOUT == GK_LAYOUT_HUFFMAN) table_end(multi, tables->multi, multiBytes, tableFirst);
    __syncthreads();
    uint32_t const symLo = gk_read32(t.fastSymbols), symHi = gk_read32(t.fastSymbols + 4);
    uint8_t* const units = LAYOUT != GK_LAYOUT_HUFFMAN ? NULL
                           : after + warp * together * gk_huf_unit_bytes(&t);
    /* Huffman: a block's warps decode their units side by side, then
     * multiply them side by side, and only 2 blocks fit a multiprocessor:
     * read where they are used, each step's planes were a trip to memory
     * that few other warps had work to cover. So the units' planes are
     * asked of L2 before they are decoded, and each step's read a step
     * ahead (planes: the lane's for the step at hand) */
    gk_planes planes;
    for (uint64_t item0 = firstItem; item0 < items; item0 += together * step) {
        rows_ahead const now = ahead;
        uint64_t escNow = 0, endNow = 0; /* fast */
        if (LAYOUT == GK_LAYOUT_FAST) {
            rows_counts_wait();
            escNow = counts[0], endNow = counts[1];
            __syncwarp(); /* read by every lane before the next item's come */
        }
        ahead = rows_read_ahead<LAYOUT>(blob, t, runs, counts, item0 + together * step, items, step, perRow, part,
                                        lane, rpu, together);
        if (LAYOUT == GK_LAYOUT_HUFFMAN) {
            for (unsigned j = 0; j < together && item0 + j * step < items; j++)
                prefetch_planes(blob, t, rows_unit(item0 + j * step, perRow, part), lane);
            __syncwarp(); /* the last units' reads are done */
            uint64_t const item = item0 + lane / rpu * step, u = rows_unit(item, perRow, part);
            if (lane < together * rpu && item < items)
                gk_huf_unit_symbols(blob, &t, multi, now.bit, u, lane % rpu,
                                    units + lane / rpu * gk_huf_unit_bytes(&t));
            __syncwarp();
        }
        for (unsigned j = 0; j < together && item0 + j * step < items; j++) {
            uint64_t const u = rows_unit(item0 + j * step, perRow, part);
            uint64_t const unitStart = u * t.unitSize, nbRows = gk_rows_in_unit(&t, cols, u);
            /* fast: one item at a time (together 1) */
            uint64_t const nbEsc = endNow;
            uint64_t esc = escNow;
            uint8_t* const unit = units + j * gk_huf_unit_bytes(&t);
            for (uint64_t r = 0; r < nbRows; r++) {
                uint64_t const q0 = (unitStart + r * span) / 32;
                float acc[BATCH][4];
#pragma unroll
                for (int v = 0; v < BATCH; v++) acc[v][0] = acc[v][1] = acc[v][2] = acc[v][3] = 0;
                /* Huffman: the row's planes, a group's at a time (each step's
                 * address in 32 bits from here, where a group's number was a
                 * 64-bit product); its first step's now */
                const uint8_t* const rowPlanes = blob + t.planes + gk_huf_group_planes(&t) * q0;
                unsigned const groupPlanes = (unsigned)gk_huf_group_planes(&t);
                if (LAYOUT == GK_LAYOUT_HUFFMAN)
                    gk_huffman_planes_at(&t, rowPlanes + (lane < groups ? groupPlanes * lane : 0), &planes);
                constexpr int stepsUnrolled = LAYOUT == GK_LAYOUT_HUFFMAN ? 2 : 1; /* see the planes below */
#pragma unroll stepsUnrolled
                for (unsigned i = 0; i < groups; i += 32) {
                    uint64_t const q = q0 + i + lane;
                    bool const active = i + lane < groups;
                    uint32_t pairs[16];
                    if (LAYOUT == GK_LAYOUT_FAST) {
                        /* every load of the step first: codes, planes, a word
                         * of the warp's escape window */
                        uint64_t const first = gk_window_first(esc);
                        uint32_t const word = gk_window_word(blob, &t, first, lane);
                        uint32_t w0, w1, w2, sel[4], raw[8];
                        const uint32_t* const cp = (const uint32_t*)(blob + t.codePlanes) + 3 * q;
                        w0 = active ? __ldg(cp) : 0, w1 = active ? __ldg(cp + 1) : 0;
                        w2 = active ? __ldg(cp + 2) : 0;
                        if (active) group_planes(blob, t, q, raw);
                        gk_nibble_selectors(w0, w1, w2, sel);
                        uint32_t m = gk_nibble_escapes(w0, w1, w2);
                        /* this lane's escapes start after the lanes' before it */
                        unsigned const count = __popc(m), before = warp_inclusive_sum(count, lane);
                        uint64_t const mine = esc + before - count;
                        esc += __shfl_sync(0xFFFFFFFFu, before, 31);
                        __syncwarp(); /* the last step's window is read */
                        window[lane] = word;
                        __syncwarp();
                        if (active)
                            nibble_pairs(blob, t, sel, m, raw, window, 32, first, mine, nbEsc, symLo, symHi,
                                         (uint32_t*)after + GK_PATCH_SLOT_WORDS * threadIdx.x, pairs);
                    } else if (LAYOUT == GK_LAYOUT_STORED) {
                        if (active) {
                            const uint4* const p = (const uint4*)(blob + 64 * q);
#pragma unroll
                            for (int k = 0; k < 4; k++) {
                                uint4 const d = __ldg(p + k);
                                pairs[4 * k] = d.x;
                                pairs[4 * k + 1] = d.y;
                                pairs[4 * k + 2] = d.z;
                                pairs[4 * k + 3] = d.w;
                            }
                        }
                    } else {
                        /* the next step's planes before this step's are used (where the lane
                         * has no group there, and after the row's last step, the row's first
                         * again: read, not used, so that the copy into planes needs no test,
                         * and two steps unrolled keep the two sets in registers rather than
                         * copying one into the other: 276 instructions a step became 255) */
                        gk_planes next;
                        unsigned const nextGroup = i + 32 + lane;
                        gk_huffman_planes_at(&t, rowPlanes + (nextGroup < groups ? groupPlanes * nextGroup : 0),
                                             &next);
                        if (active) {
                            uint32_t const o = (uint32_t)(r * span) + 32 * (i + lane); /* in the unit */
                            const uint4* const p = (const uint4*)(unit + (uint32_t)gk_huf_slot_offset(o));
                            uint4 const a = p[0], b = p[1];
                            uint32_t const sym[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
                            gk_huffman_join(&t, &planes, sym, pairs);
                        }
                        planes = next;
                    }
                    if (active) {
                        unsigned const c = 32 * (i + lane); /* the group's first column in the part */
#pragma unroll
                        for (int v = 0; v < BATCH; v++) {
                            /* vectors past the last read vector 0's x, their sums unused */
                            const float* const xv = xs + (v < (int)vectors ? v : 0) * stride + c + c / 32 * 4;
                            float xl[32];
#pragma unroll
                            for (int k = 0; k < 8; k++) {
                                float4 const f = *(const float4*)(xv + 4 * k);
                                xl[4 * k] = f.x;
                                xl[4 * k + 1] = f.y;
                                xl[4 * k + 2] = f.z;
                                xl[4 * k + 3] = f.w;
                            }
                            gk_group_fma(pairs, xl, acc[v]);
                        }
                    }
                }
#pragma unroll
                for (int v = 0; v < BATCH; v++) {
                    float s = (acc[v][0] + acc[v][1]) + (acc[v][2] + acc[v][3]);
                    for (int m = 16; m; m >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, m);
                    if (lane == 0 && v < (int)vectors) {
                        if (perRow > 1) parts[v * t.nbUnits + u] = s;
                        else y[v * rows + u * (t.unitSize / cols) + r] = s;
                    }
                }
            }
        }
    }
}

/* A launch of the rows kernel for vectors [0, vectors) of x, with warps
 * per block and smem bytes of shared memory that the device allows. */
template <int LAYOUT, int BATCH>
static cudaError_t launch_rows(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                               const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x, unsigned vectors,
                               float* y, float* parts, unsigned warps, size_t smem, const device_limits* dev,
                               cudaStream_t stream)
{
    /* the shared memory limit raised once per device; blocks per
     * multiprocessor for the last few block shapes and devices (an engine
     * asks for the same few). Not for host threads launching at once. */
    static unsigned ready; /* a bit per device */
    static struct { int device; size_t smem; unsigned warps; int perSm; } seen[4];
    static unsigned next;
    int perSm = 0;
    unsigned k;
    cudaError_t e;
    if (t->nbElements == 0) return cudaSuccess; /* no items */
    if (dev->device >= 32 || !((ready >> dev->device) & 1)) {
        e = cudaFuncSetAttribute(rows_kernel<LAYOUT, BATCH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)dev->smemMost);
        if (e != cudaSuccess) return e;
        if (dev->device < 32) ready |= 1u << dev->device;
    }
    for (k = 0; k < 4 && !perSm; k++)
        if (seen[k].perSm && seen[k].device == dev->device && seen[k].smem == smem && seen[k].warps == warps)
            perSm = seen[k].perSm;
    if (!perSm) {
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, rows_kernel<LAYOUT, BATCH>, 32 * warps, smem);
        if (e != cudaSuccess) return e;
        if (!perSm) return cudaErrorInvalidConfiguration;
        seen[next % 4].device = dev->device;
        seen[next % 4].smem = smem;
        seen[next % 4].warps = warps;
        seen[next++ % 4].perSm = perSm;
    }
    /* enough blocks to fill the device, each staging x once and looping
     * (a Huffman warp takes several small units at once) */
    gk_rows_grid const g = gk_rows_launch_grid(t, rows, cols, warps,
                                               LAYOUT == GK_LAYOUT_HUFFMAN ? gk_huf_units_together(t) : 1,
                                               (uint64_t)dev->sms * perSm);
    rows_kernel<LAYOUT, BATCH><<<dim3((unsigned)g.blocks, (unsigned)g.perRow), 32 * warps, smem, stream>>>(
        blob, *t, rows, cols, x, vectors, y, parts, tables, runs);
    return cudaGetLastError();
}

template <int LAYOUT>
static cudaError_t launch_rows_layout(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                      const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x,
                                      unsigned vectors, float* y, float* parts, unsigned warps,
                                      const device_limits* dev, cudaStream_t s)
{
    size_t const smem = rows_smem(LAYOUT, t, cols, vectors, warps);
    if (vectors == 1)
        return launch_rows<LAYOUT, 1>(blob, t, tables, runs, rows, cols, x, 1, y, parts, warps, smem, dev, s);
    if (vectors == 2)
        return launch_rows<LAYOUT, 2>(blob, t, tables, runs, rows, cols, x, 2, y, parts, warps, smem, dev, s);
    if (vectors <= 4)
        return launch_rows<LAYOUT, 4>(blob, t, tables, runs, rows, cols, x, vectors, y, parts, warps, smem, dev, s);
    return launch_rows<LAYOUT, 8>(blob, t, tables, runs, rows, cols, x, vectors, y, parts, warps, smem, dev, s);
}

/* y = W x by rows of whole groups, as many vectors at a time as a block
 * stages; the device's alignment of blobs (cudaMalloc) is what its word
 * loads assume, checked. */
static cudaError_t gemv_rows(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                             uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y, float* parts,
                             cudaStream_t s)
{
    int const layout = (int)t->layout;
    unsigned warps = GK_ROWS_WARPS, most = gk_rows_vectors(t, cols);
    device_limits dev;
    cudaError_t e0;
    /* the word loads' alignment (Huffman blobs': glyd_cudaLaunchGemv's) */
    bool const misaligned = layout == GK_LAYOUT_FAST     ? !nibble_words_aligned(blob, t)
                            : layout == GK_LAYOUT_STORED ? ((uintptr_t)blob & 15) != 0
                                                         : false;
    if (misaligned) return cudaErrorMisalignedAddress;
    if ((e0 = limits(&dev)) != cudaSuccess) return e0;
    /* within the device's shared memory: fewer warps (Huffman: each holds
     * up to 8.5 KiB of symbols), then fewer vectors at a time */
    while (warps > 1 && rows_smem(layout, t, cols, 1, warps) > dev.smemMost) warps /= 2;
    while (most > 1 && rows_smem(layout, t, cols, most, warps) > dev.smemMost) most--;
    if (rows_smem(layout, t, cols, most, warps) > dev.smemMost) return cudaErrorInvalidConfiguration;
    for (unsigned v0 = 0; v0 < batch; v0 += most) {
        unsigned const n = batch - v0 < most ? batch - v0 : most;
        const float* const xv = x + (size_t)v0 * cols;
        float* const yv = y + (size_t)v0 * rows;
        float* const pv = parts ? parts + (size_t)v0 * t->nbUnits : NULL;
        cudaError_t e;
        if (t->layout == GK_LAYOUT_FAST)
            e = launch_rows_layout<GK_LAYOUT_FAST>(blob, t, tables, runs, rows, cols, xv, n, yv, pv, warps, &dev, s);
        else if (t->layout == GK_LAYOUT_STORED)
            e = launch_rows_layout<GK_LAYOUT_STORED>(blob, t, tables, runs, rows, cols, xv, n, yv, pv, warps, &dev, s);
        else
            e = launch_rows_layout<GK_LAYOUT_HUFFMAN>(blob, t, tables, runs, rows, cols, xv, n, yv, pv, warps, &dev, s);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* ------------------------------------------------------------------------ */
/* Host                                                                     */
/* ------------------------------------------------------------------------ */

extern "C" glyd_cudaTensor* glyd_cudaTensorUpload(const void* blob, size_t size, size_t* error)
{
    glyd_cudaTensor* const t = (glyd_cudaTensor*)calloc(1, sizeof(glyd_cudaTensor));
    gk_huf_tables* const tables = (gk_huf_tables*)malloc(sizeof(gk_huf_tables));
    cudaError_t e;
    *error = 0;
    if (!t || !tables) {
        *error = (size_t)-(int)GLYD_error_memory_allocation;
        free(t);
        free(tables);
        return NULL;
    }
    *error = glyd_cudaDescribeBlob(blob, size, &t->t, tables);
    if (glyd_isError(*error)) {
        free(t);
        free(tables);
        return NULL;
    }
    *error = 0;
    t->bytes = size + (t->t.layout == GK_LAYOUT_HUFFMAN ? sizeof(gk_huf_tables) : 0);
    e = cudaMalloc((void**)&t->blob, size);
    if (e == cudaSuccess) e = cudaMemcpy(t->blob, blob, size, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && t->t.layout == GK_LAYOUT_HUFFMAN) {
        e = cudaMalloc((void**)&t->tables, sizeof(gk_huf_tables));
        if (e == cudaSuccess) e = cudaMemcpy(t->tables, tables, sizeof(gk_huf_tables), cudaMemcpyHostToDevice);
    }
    if (e == cudaSuccess && t->t.layout == GK_LAYOUT_HUFFMAN && gk_huf_index_size(&t->t)) {
        /* the run index, for a thread per run rather than per unit; none
         * where a unit's stream is over 65535 bits */
        size_t const runBytes = sizeof(uint16_t) * gk_huf_index_size(&t->t);
        uint16_t* const runs = (uint16_t*)malloc(runBytes);
        if (!runs) {
            *error = (size_t)-(int)GLYD_error_memory_allocation;
            glyd_cudaTensorFree(t);
            free(tables);
            return NULL;
        }
        if (!glyd_isError(glyd_tensorHuffmanRuns(blob, &t->t, tables, runs))) {
            e = cudaMalloc((void**)&t->runs, runBytes);
            if (e == cudaSuccess) e = cudaMemcpy(t->runs, runs, runBytes, cudaMemcpyHostToDevice);
            t->bytes += runBytes;
        }
        free(runs);
    }
    free(tables);
    if (e != cudaSuccess) {
        *error = cuda_failed(e, "upload");
        glyd_cudaTensorFree(t);
        return NULL;
    }
    return t;
}

extern "C" void glyd_cudaTensorFree(glyd_cudaTensor* t)
{
    if (!t) return;
    cudaFree(t->blob);
    cudaFree(t->tables);
    cudaFree(t->runs);
    free(t);
}

extern "C" uint64_t glyd_cudaTensorElements(const glyd_cudaTensor* t) { return t->t.nbElements; }
extern "C" size_t glyd_cudaTensorBytes(const glyd_cudaTensor* t) { return t->bytes; }

/* Blocks for n units: enough to fill the device, the rest looped over. */
static unsigned grid_for(uint64_t n) { return (unsigned)(n < 65535 * 8 ? (n ? n : 1) : 65535 * 8); }

/* Blocks of fast_decode_kernel for n units: as many as the device holds
 * at once (asked once per device), or n where fewer. */
static cudaError_t decode_grid(uint64_t n, unsigned* grid)
{
    static int perSm[16];
    device_limits dev;
    cudaError_t e = limits(&dev);
    int per = dev.device < 16 ? perSm[dev.device] : 0;
    if (e != cudaSuccess) return e;
    if (!per) {
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, fast_decode_kernel, BLOCK, 0);
        if (e != cudaSuccess) return e;
        if (per < 1) per = 1;
        if (dev.device < 16) perSm[dev.device] = per;
    }
    uint64_t const full = (uint64_t)dev.sms * (uint64_t)per;
    *grid = grid_for(n < full ? n : full);
    return cudaSuccess;
}

/* The backend's launchers (gpu/backend.c through gpu/device.c): units
 * [u0, u1) of a fast-layout blob into out (from the first unit's first
 * element); y = W x with room for parts given. 0 or the CUDA error. */
extern "C" int glyd_cudaLaunchDecodeUnits(const uint8_t* blob, const gk_tensor* t, uint64_t u0, uint64_t u1,
                                          uint16_t* out, void* stream)
{
    unsigned grid;
    cudaError_t e;
    if (u1 <= u0) return 0;
    if ((e = decode_grid(u1 - u0, &grid)) != cudaSuccess) return (int)e;
    fast_decode_kernel<<<grid, BLOCK, 0, (cudaStream_t)stream>>>(blob, *t, u0, u1, out);
    return (int)cudaGetLastError();
}

/* A fast-layout blob's codes (planes, units of whole groups) into the
 * nibble form, in place. */
extern "C" int glyd_cudaLaunchNibbles(uint8_t* blob, const gk_tensor* t, void* stream)
{
    if (t->layout != GK_LAYOUT_FAST || t->codeForm != GK_CODES_PLANES || t->unitSize % 32)
        return (int)cudaErrorInvalidValue;
    if (t->nbElements == 0) return 0;
    nibble_kernel<<<grid_for(t->nbUnits), BLOCK, 0, (cudaStream_t)stream>>>(blob, *t);
    return (int)cudaGetLastError();
}

/* Units [u0, u1) of a Huffman blob, a thread per run, into out (from the
 * first unit's first element). */
__global__ void huffman_runs_kernel(const uint8_t* __restrict__ blob, gk_tensor t,
                                    const gk_huf_tables* __restrict__ tables, const uint16_t* __restrict__ runs,
                                    uint64_t u0, uint64_t u1, uint16_t* __restrict__ out)
{
    /* the table in shared memory: each symbol's lookup waits on it */
    __shared__ __align__(16) uint16_t codes[1 << GK_HUF_MAX_BITS];
    uint64_t const rpu = gk_huf_runs_per_unit(&t);
    stage_table(codes, tables->one, 2u << t.maxBits);
    __syncthreads();
    for (uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; r < (u1 - u0) * rpu;
         r += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t const u = u0 + r / rpu;
        uint64_t const a = u * t.unitSize, b = gk_unit_end(&t, u);
        gk_huf_unit_run(blob, &t, codes, runs, u, r % rpu, a, b, out, u0 * t.unitSize);
    }
}

/* The same where every group is whole (gk_huf_by_groups): a block takes
 * BLOCK runs at a time; each thread decodes its run to symbols in shared
 * memory through the multi-symbol table; then the block's threads build
 * its groups from symbols and planes (gk_huffman_pairs), consecutive
 * threads on consecutive groups, a warp on 4 runs. Where those are whole
 * and follow one another, as in a matrix's rows, the warp stores their
 * 32 groups 512 bytes at a time (warp_store_groups), staged 16 lanes at a
 * time in the runs' symbol rows, which it has read by then (the kernel's
 * shared memory, 45.5 KiB, leaves no room for a stage of its own);
 * otherwise each group in four 16-byte stores. */
__global__ void huffman_groups_kernel(const uint8_t* __restrict__ blob, gk_tensor t,
                                      const gk_huf_tables* __restrict__ tables, const uint16_t* __restrict__ runs,
                                      uint64_t u0, uint64_t u1, uint16_t* __restrict__ out)
{
    __shared__ __align__(16) uint32_t multi[1 << GK_HUF_MAX_BITS];
    __shared__ __align__(16) uint8_t syms[BLOCK][GK_HUF_SLOT]; /* a run a row; padded as in the rows kernel */
    /* each row's run: its first element and its length (0: none), found by
     * the thread that decodes it; the groups' threads read them, where each
     * divided by the runs of a unit before (some 60 instructions a group) */
    __shared__ uint64_t runStart[BLOCK];
    __shared__ uint32_t runLength[BLOCK];
    /* a bit a row: its run is whole (GK_HUF_RUN elements). Four whole runs
     * in a row follow one another: only a unit's last run can be short,
     * so a unit whose last is whole ends where the next unit starts */
    __shared__ uint32_t runsWhole[BLOCK / 32];
    uint64_t const rpu = gk_huf_runs_per_unit(&t), nbRuns = (u1 - u0) * rpu, origin = u0 * t.unitSize;
    unsigned const lane = threadIdx.x & 31, runsOfWarp = 32 / (GK_HUF_RUN / 32);
    bool const wide = !((uintptr_t)out & 15); /* as each run starts a group, so are the runs' stores */
    static_assert(sizeof syms[0] * (32 / (GK_HUF_RUN / 32)) >= 16 * 64 && sizeof syms[0] % 16 == 0,
                  "a warp's symbol rows hold 16 lanes' groups, 16-byte aligned");
    stage_table(multi, tables->multi, 4u << GK_HUF_MAX_BITS);
    __syncthreads();
    for (uint64_t r0 = (uint64_t)blockIdx.x * BLOCK; r0 < nbRuns; r0 += (uint64_t)gridDim.x * BLOCK) {
        uint64_t a = 0, b = 0;
        if (r0 + threadIdx.x < nbRuns) {
            uint64_t const r = r0 + threadIdx.x, u = u0 + r / rpu;
            uint64_t const bit = gk_huf_run_at(blob, &t, runs, u, r % rpu, &a, &b);
            gk_huffman_symbols(blob, &t, multi, bit, a, b, syms[threadIdx.x], a);
        }
        runStart[threadIdx.x] = a;
        runLength[threadIdx.x] = (uint32_t)(b - a);
        unsigned const wholeRuns = __ballot_sync(0xFFFFFFFFu, b - a == GK_HUF_RUN);
        if (lane == 0) runsWhole[threadIdx.x >> 5] = wholeRuns;
        __syncthreads();
        for (unsigned idx = threadIdx.x; idx < BLOCK * (GK_HUF_RUN / 32); idx += BLOCK) {
            unsigned const row = idx / (GK_HUF_RUN / 32), g = idx % (GK_HUF_RUN / 32);
            /* the warp's runs (the same in every lane): whole, so one after the other */
            unsigned const row0 = (idx - lane) / (GK_HUF_RUN / 32);
            bool const whole = wide && (~runsWhole[row0 >> 5] >> (row0 & 31) & ((1u << runsOfWarp) - 1)) == 0;
            if (!whole && 32 * g >= runLength[row]) continue;
            uint64_t const first = runStart[row] + 32 * g; /* the group's first element */
            const uint4* const p = (const uint4*)(syms[row] + 32 * g);
            uint4 const s0 = p[0], s1 = p[1];
            uint32_t const sym[8] = { s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w };
            uint32_t pairs[16];
            gk_huffman_pairs(blob, &t, first / 32, sym, pairs);
            if (whole) {
                __syncwarp(); /* every lane's symbols read: their rows are the stage */
                uint4* const dst = (uint4*)(out + (runStart[row0] - origin)); /* the warp's first group's */
                warp_store_groups<16>(dst, pairs, (uint4(*)[4])syms[row0], lane);
                continue;
            }
            uint4* const dst = (uint4*)(out + (first - origin));
#pragma unroll
            for (int k = 0; k < 4; k++)
                dst[k] = make_uint4(pairs[4 * k], pairs[4 * k + 1], pairs[4 * k + 2], pairs[4 * k + 3]);
        }
        __syncthreads(); /* the symbols are used again */
    }
}

extern "C" int glyd_cudaLaunchDecodeRuns(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                         const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* out,
                                         void* stream)
{
    uint64_t const n = (u1 - u0) * gk_huf_runs_per_unit(t);
    cudaStream_t const s = (cudaStream_t)stream;
    if (u1 <= u0) return 0;
    if (!gk_huf_blob_aligned(blob)) return (int)cudaErrorMisalignedAddress;
    if (gk_huf_by_groups(t) && !((uintptr_t)out & 15))
        huffman_groups_kernel<<<grid_for((n + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(blob, *t, tables, runs, u0, u1, out);
    else
        huffman_runs_kernel<<<grid_for((n + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(blob, *t, tables, runs, u0, u1, out);
    return (int)cudaGetLastError();
}

/* tables and runs: the Huffman layout's (NULL for the others). */
extern "C" int glyd_cudaLaunchGemv(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                   const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x,
                                   unsigned batch, float* y, float* parts, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    if (t->nbElements == 0) return 0;
    /* the Huffman kernels decode whole units into shared memory through
     * the run index: the emulation's conditions, checked here as well */
    if (t->layout == GK_LAYOUT_HUFFMAN && (!tables || !gk_huf_products_fit(t, runs != NULL)))
        return (int)cudaErrorInvalidValue;
    if (t->layout == GK_LAYOUT_HUFFMAN && !gk_huf_blob_aligned(blob)) return (int)cudaErrorMisalignedAddress;
    if (gk_rows_fits(t, cols)) {
        cudaError_t const e = gemv_rows(blob, t, tables, runs, rows, cols, x, batch, y, parts, s);
        if (e != cudaSuccess) return (int)e;
    } else if (t->layout == GK_LAYOUT_HUFFMAN)
        fast_gemv_kernel<true><<<grid_for(t->nbUnits), 32 * GEMV_WARPS, 0, s>>>(blob, *t, rows, cols, x, batch, y,
                                                                               parts, tables, runs);
    else
        fast_gemv_kernel<false><<<grid_for(t->nbUnits), 32 * GEMV_WARPS, 0, s>>>(blob, *t, rows, cols, x, batch, y,
                                                                                parts, NULL, NULL);
    if (t->unitSize < cols && cudaPeekAtLastError() == cudaSuccess)
        gemv_parts_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, s>>>(parts, t->nbUnits, rows, cols / t->unitSize,
                                                                         batch, y);
    return (int)cudaGetLastError();
}

extern "C" size_t glyd_cudaTensorNibbles(glyd_cudaTensor* t)
{
    CUDA_TRY((cudaError_t)glyd_cudaLaunchNibbles(t->blob, &t->t, NULL), "nibble form");
    CUDA_TRY(cudaDeviceSynchronize(), "nibble form");
    t->t.codeForm = GK_CODES_NIBBLES;
    return 0;
}

extern "C" size_t glyd_cudaDecode(const glyd_cudaTensor* t, uint16_t* dst, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    if (t->t.nbElements == 0) return 0;
    if (t->t.layout == GK_LAYOUT_FAST)
        CUDA_TRY((cudaError_t)glyd_cudaLaunchDecodeUnits(t->blob, &t->t, 0, t->t.nbUnits, dst, stream),
                 "decode launch");
    else if (t->runs || gk_huf_index_size(&t->t) == 0)
        CUDA_TRY((cudaError_t)glyd_cudaLaunchDecodeRuns(t->blob, &t->t, t->tables, t->runs, 0, t->t.nbUnits, dst,
                                                        stream),
                 "decode launch");
    else
        huffman_decode_kernel<<<grid_for((t->t.nbUnits + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(t->blob, t->t,
                                                                                           t->tables, dst);
    CUDA_TRY(cudaGetLastError(), "decode launch");
    return 0;
}

extern "C" size_t glyd_cudaGemv(const glyd_cudaTensor* w, uint64_t rows, uint64_t cols, const float* x,
                                unsigned batch, float* y, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    gk_tensor const* const t = &w->t;
    float* parts = NULL;
    if (batch < 1 || batch > GEMV_MAX_BATCH) return (size_t)-(int)GLYD_error_parameter_outOfBound;
    if (rows * cols != t->nbElements || cols == 0) return (size_t)-(int)GLYD_error_parameter_outOfBound;
    if (t->layout == GK_LAYOUT_HUFFMAN && !gk_huf_products_fit(t, w->runs != NULL))
        return (size_t)-(int)GLYD_error_parameter_outOfBound;
    /* units of whole rows (few enough to count), or even parts of one row */
    if (!gk_gemv_fits(t, cols)) return (size_t)-(int)GLYD_error_parameter_outOfBound;
    if (t->unitSize < cols)
        CUDA_TRY(cudaMallocAsync((void**)&parts, sizeof(float) * batch * t->nbUnits, s), "gemv parts");
    CUDA_TRY((cudaError_t)glyd_cudaLaunchGemv(w->blob, t, w->tables, w->runs, rows, cols, x, batch, y, parts, stream),
             "gemv launch");
    if (parts) CUDA_TRY(cudaFreeAsync(parts, s), "gemv parts");
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_common.cuh: what the CUDA sources of the tensor kernels share
 * (decode.cu, products.cu, upload.cu): a device tensor, CUDA errors as glyd
 * errors, the device's limits, grids, and the per-thread steps that both
 * bulk decoding and products take (a group's planes, its rebuilt pairs,
 * where a unit's escapes start).
 */
#ifndef GLYD_CUDA_COMMON_CUH
#define GLYD_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glyd_tensor.h"
#include "glyd_cuda.h"
#include "tensor_kernels.h"

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

/* Whether the nibble form's word loads are aligned (device allocations
 * are; a blob's parts are when its element count is a multiple of 4). */
static inline __host__ __device__ bool nibble_words_aligned(const uint8_t* blob, const gk_tensor* t)
{
    return !((uintptr_t)(blob + t->planes) & 7) && !((uintptr_t)(blob + t->codePlanes) & 3);
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

/* What launches need of the current device, asked once per device. */
typedef struct {
    int device;
    int sms;         /* multiprocessors */
    size_t smemMost; /* shared memory a block may have (opted in) */
} device_limits;

/* Blocks for n units: enough to fill the device, the rest looped over. */
static inline unsigned grid_for(uint64_t n) { return (unsigned)(n < 65535 * 8 ? (n ? n : 1) : 65535 * 8); }

/* A CUDA call's failure as a glyd error, its reason kept for
 * glyd_cudaLastError. */
size_t cuda_failed(cudaError_t e, const char* what);
#define CUDA_TRY(call, what)                                   \
    do {                                                       \
        cudaError_t const e_ = (call);                         \
        if (e_ != cudaSuccess) return cuda_failed(e_, what);   \
    } while (0)

/* The current device's limits, asked of it once. */
cudaError_t device_limits_get(device_limits* out);

#endif /* GLYD_CUDA_COMMON_CUH */

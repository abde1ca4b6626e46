/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.cu: the kernels of the GPU backend other than the products
 * (decode.cu): embedding rows, RMSNorm, the rotation and the paged cache,
 * attention, SwiGLU, the residual add, the greedy pick, and the widening of
 * decoded tiles for cuBLAS. Each thread's work is gpu/engine_kernels.h,
 * which the CPU emulation (gpu/emulated_device.c) runs as well; here are the
 * launches, the shared memory, the warps' butterflies and the barriers
 * between phases. Launchers are asynchronous on the given stream and
 * return 0 or the launch's CUDA error.
 */
#include <cuda_runtime.h>

#include "engine_kernels.h"

#define FULL_MASK 0xFFFFFFFFu
#define ELEMENTWISE_THREADS 256

__device__ __forceinline__ float warp_sum(float v)
{
    for (int m = 16; m; m >>= 1) v += __shfl_xor_sync(FULL_MASK, v, m);
    return v;
}

__device__ __forceinline__ uint64_t warp_sum_u64(uint64_t v)
{
    for (int m = 16; m; m >>= 1) v += __shfl_xor_sync(FULL_MASK, v, m);
    return v;
}

/* A warp per token: the escapes of the row's unit before the row, counted
 * by the lanes together; then the row's groups, a lane per element. */
__global__ void embed_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t cols,
                             const int* __restrict__ tokens, float* __restrict__ x)
{
    unsigned const lane = threadIdx.x;
    uint64_t const r = (uint64_t)tokens[blockIdx.x], a = r * cols, b = a + cols;
    uint64_t const u = gk_row_unit(&t, cols, r), uEnd = (b + t.unitSize - 1) / t.unitSize;
    uint64_t const nbEsc = gk_escapes_before(blob, &t, uEnd);
    uint64_t esc = gk_escapes_before(blob, &t, u);
    float* const out = x + (uint64_t)blockIdx.x * cols;
    if (t.layout != GK_LAYOUT_STORED && a > u * t.unitSize) {
        uint64_t const ua = u * t.unitSize;
        uint64_t n = 0;
        for (uint64_t g = (ua >> 5) + lane; g <= (a - 1) >> 5; g += 32)
            n += gk_popc(gk_fast_escapes(blob, &t, g, ua, a));
        esc += warp_sum_u64(n);
    }
    for (uint64_t g = a >> 5; g <= (b - 1) >> 5; g++) {
        uint64_t const i = 32 * g + lane;
        float const v = gk_row_lane(blob, &t, a, cols, g, lane, esc, nbEsc);
        if (i >= a && i < b) out[i - a] = v;
        esc += gk_popc(gk_escapes(blob, &t, g, a, b));
    }
}

__global__ void rmsnorm_kernel(gk_rmsnorm a)
{
    __shared__ float partial[GK_NORM_THREADS];
    __shared__ float scale;
    uint64_t const r = blockIdx.x;
    partial[threadIdx.x] = gk_rms_partial(&a, r, threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) scale = gk_rms_scale(partial, a.n, a.eps);
    __syncthreads();
    gk_rms_apply(&a, r, threadIdx.x, scale);
}

/* A block per token: biases; each head's norm (a warp per head); the
 * rotation; k and v into the cache. */
__global__ void rotate_kernel(gk_rotate a)
{
    uint64_t const t = blockIdx.x;
    unsigned const j = threadIdx.x, warp = j >> 5, lane = j & 31;
    gk_rot_bias(&a, t, j);
    __syncthreads();
    if (a.qNorm) {
        for (unsigned hh = warp; hh < a.nbHeads + a.nbKvHeads; hh += GK_ROT_THREADS / 32) {
            const float* w;
            float* const x = gk_rot_head(&a, t, hh, &w);
            float const sum = warp_sum(gk_head_partial(x, a.headDim, lane));
            gk_head_apply(x, w, a.headDim, lane, sum, a.eps);
        }
        __syncthreads();
    }
    gk_rot_rope(&a, t, j);
    __syncthreads();
    gk_rot_store(&a, t, j);
}

/* A block per (token, head, chunk of positions); the phases of
 * engine_kernels.h, the chunk's scores in shared memory. */
__global__ void attend_kernel(gk_attend a)
{
    extern __shared__ float row[];
    __shared__ float warpMax[GK_ATT_WARPS], warpSumS[GK_ATT_WARPS];
    __shared__ float most, total;
    uint64_t const t = blockIdx.x / a.nbHeads, c = blockIdx.y;
    unsigned const h = blockIdx.x % a.nbHeads;
    unsigned const warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float const scale = 1.0f / sqrtf((float)a.headDim);
    uint64_t const last = a.pos + t, p0 = c * a.chunk;
    if (p0 > last) return; /* past this token's positions: the whole block */
    uint64_t const p1 = p0 + a.chunk <= last ? p0 + a.chunk : last + 1;
    /* A: scores */
    float m = -INFINITY;
    for (uint64_t p = p0 + warp; p < p1; p += GK_ATT_WARPS) {
        float const s = warp_sum(gk_att_partial(&a, t, h, p, lane)) * scale;
        if (lane == 0) row[p - p0] = s;
        if (s > m) m = s;
    }
    if (lane == 0) warpMax[warp] = m;
    __syncthreads();
    /* B: the largest */
    if (threadIdx.x == 0) {
        float v = warpMax[0];
        for (unsigned w = 1; w < GK_ATT_WARPS; w++) if (warpMax[w] > v) v = warpMax[w];
        most = v;
    }
    __syncthreads();
    /* C: exponentials, each warp's sum in position order */
    float sum = 0;
    for (uint64_t p = p0 + warp; p < p1; p += GK_ATT_WARPS) {
        float const e = expf(row[p - p0] - most);
        __syncwarp();
        if (lane == 0) row[p - p0] = e;
        sum += e;
    }
    if (lane == 0) warpSumS[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0;
        for (unsigned w = 0; w < GK_ATT_WARPS; w++) s += warpSumS[w];
        total = s;
    }
    __syncthreads();
    /* E: the chunk's output, its largest score and its sum */
    for (uint64_t i = threadIdx.x; i < a.headDim; i += blockDim.x) gk_att_chunk_out(&a, t, h, c, row, i);
    if (threadIdx.x == 0) {
        float* const part = gk_att_part(&a, t, h, c);
        part[a.headDim] = most;
        part[a.headDim + 1] = total;
    }
}

/* F: a block per (token, head), the chunks merged. */
__global__ void attend_merge_kernel(gk_attend a)
{
    uint64_t const t = blockIdx.x / a.nbHeads;
    unsigned const h = blockIdx.x % a.nbHeads;
    for (uint64_t i = threadIdx.x; i < a.headDim; i += blockDim.x) gk_att_merge(&a, t, h, i);
}

__global__ void add_kernel(float* __restrict__ x, const float* __restrict__ y, uint64_t n)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[i] += y[i];
}

__global__ void swiglu_kernel(float* __restrict__ g, const float* __restrict__ u, uint64_t n)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        g[i] = gk_swiglu(g[i], u[i]);
}

__global__ void widen_kernel(const uint16_t* __restrict__ src, uint64_t n, float* __restrict__ out)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        out[i] = __uint_as_float((uint32_t)src[i] << 16);
}

__global__ void argmax_kernel(const float* __restrict__ x, uint64_t n, int* __restrict__ token)
{
    __shared__ uint64_t partial[GK_ARGMAX_THREADS];
    partial[threadIdx.x] = gk_argmax_partial(x, n, threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) *token = (int)gk_argmax_final(x, n, partial);
}

__global__ void penalize_kernel(float* __restrict__ x, const int* __restrict__ ids, uint64_t n, float penalty)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        x[ids[i]] = gk_penalized(x[ids[i]], penalty);
}

/* One block: the phases of engine_kernels.h's sampling candidates. */
__global__ void topk_kernel(const float* __restrict__ x, uint64_t n, float temperature, unsigned k,
                            float* __restrict__ keys, int* __restrict__ ids)
{
    __shared__ uint32_t hist[256];
    __shared__ uint32_t prefix, mask, need;
    __shared__ uint64_t greater[GK_TOPK_THREADS], equal[GK_TOPK_THREADS];
    unsigned const j = threadIdx.x;
    uint64_t a, b;
    gk_topk_run(n, j, &a, &b);
    if (j == 0) { prefix = 0; mask = 0; need = k; }
    for (int shift = 24; shift >= 0; shift -= 8) {
        if (j < 256) hist[j] = 0;
        __syncthreads();
        for (uint64_t i = a; i < b; i++) {
            uint32_t const key = gk_topk_key(x, i, temperature);
            if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], 1u);
        }
        __syncthreads();
        if (j == 0) {
            uint32_t nd = need;
            prefix |= (uint32_t)gk_topk_digit(hist, &nd) << shift;
            need = nd;
            mask |= 255u << shift;
        }
        __syncthreads();
    }
    uint64_t g = 0, e = 0;
    for (uint64_t i = a; i < b; i++) {
        uint32_t const key = gk_topk_key(x, i, temperature);
        g += key > prefix;
        e += key == prefix;
    }
    greater[j] = g;
    equal[j] = e;
    __syncthreads();
    if (j == 0) {
        uint64_t sg = 0, se = 0;
        for (unsigned t = 0; t < GK_TOPK_THREADS; t++) {
            uint64_t const gt = greater[t], et = equal[t];
            greater[t] = sg;
            equal[t] = se;
            sg += gt;
            se += et;
        }
    }
    __syncthreads();
    uint64_t gi = greater[j], ei = (k - need) + equal[j];
    for (uint64_t i = a; i < b; i++) {
        uint32_t const key = gk_topk_key(x, i, temperature);
        uint64_t const at = key > prefix ? gi++ : key == prefix ? ei++ : k;
        if (at < k) {
            keys[at] = x[i] / temperature;
            ids[at] = (int)i;
        }
    }
    __syncthreads();
    if (j == 0) gk_topk_sort(keys, ids, k);
}

/* ------------------------------------------------------------------------ */
/* Launchers                                                                */
/* ------------------------------------------------------------------------ */

static unsigned elementwise_grid(uint64_t n)
{
    uint64_t const blocks = (n + ELEMENTWISE_THREADS - 1) / ELEMENTWISE_THREADS;
    return (unsigned)(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

extern "C" int glyd_cudaLaunchEmbed(const uint8_t* blob, const gk_tensor* t, uint64_t cols, const int* tokens,
                                    size_t T, float* x, void* stream)
{
    if (T == 0) return 0;
    embed_kernel<<<(unsigned)T, 32, 0, (cudaStream_t)stream>>>(blob, *t, cols, tokens, x);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchRmsnorm(const gk_rmsnorm* a, void* stream)
{
    if (a->rows == 0) return 0;
    rmsnorm_kernel<<<(unsigned)a->rows, GK_NORM_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchRotate(const gk_rotate* a, void* stream)
{
    if (a->T == 0) return 0;
    rotate_kernel<<<(unsigned)a->T, GK_ROT_THREADS, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchAttend(const gk_attend* a, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    unsigned blocks, chunks;
    if (a->T == 0) return 0;
    if (a->chunk == 0 || a->chunk > GK_ATT_CHUNK_MAX) return (int)cudaErrorInvalidValue;
    blocks = (unsigned)(a->T * a->nbHeads);
    chunks = (unsigned)gk_att_chunks(a, a->T - 1); /* the last token sees the most */
    if (chunks > GK_ATT_SPLITS) return (int)cudaErrorInvalidValue;
    attend_kernel<<<dim3(blocks, chunks), 32 * GK_ATT_WARPS, sizeof(float) * a->chunk, s>>>(*a);
    if (cudaPeekAtLastError() == cudaSuccess) attend_merge_kernel<<<blocks, 128, 0, s>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchAdd(float* x, const float* y, size_t n, void* stream)
{
    add_kernel<<<elementwise_grid(n), ELEMENTWISE_THREADS, 0, (cudaStream_t)stream>>>(x, y, n);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchSwiglu(float* g, const float* u, size_t n, void* stream)
{
    swiglu_kernel<<<elementwise_grid(n), ELEMENTWISE_THREADS, 0, (cudaStream_t)stream>>>(g, u, n);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchWiden(const uint16_t* src, uint64_t n, float* out, void* stream)
{
    widen_kernel<<<elementwise_grid(n), ELEMENTWISE_THREADS, 0, (cudaStream_t)stream>>>(src, n, out);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchArgmax(const float* x, size_t n, int* token, void* stream)
{
    argmax_kernel<<<1, GK_ARGMAX_THREADS, 0, (cudaStream_t)stream>>>(x, n, token);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchPenalize(float* x, const int* ids, size_t n, float penalty, void* stream)
{
    penalize_kernel<<<elementwise_grid(n), ELEMENTWISE_THREADS, 0, (cudaStream_t)stream>>>(x, ids, n, penalty);
    return (int)cudaGetLastError();
}

extern "C" int glyd_cudaLaunchTopk(const float* x, size_t n, float temperature, unsigned k, float* keys, int* ids,
                                   void* stream)
{
    topk_kernel<<<1, GK_TOPK_THREADS, 0, (cudaStream_t)stream>>>(x, n, temperature, k, keys, ids);
    return (int)cudaGetLastError();
}

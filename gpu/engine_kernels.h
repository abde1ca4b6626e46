/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine_kernels.h: the work of the GPU backend's threads (backend.c) other than
 * products: norms, the rotation and the paged KV cache, attention, picking
 * the greedy token, reading embedding rows. Written once for the CUDA
 * kernels (engine.cu) and their emulation on the CPU (emulated_device.c), so
 * that both split the work among threads alike and add every sum in the
 * same order. The launches, shared memory and synchronisation are the
 * callers': each function here is one thread's part of one phase.
 *
 * The cache is paged: page p of a layer holds positions [p * GK_PAGE,
 * (p + 1) * GK_PAGE), each a row of nbKvHeads * headDim values (bf16, or
 * fp32), keys and values in separate pages; a layer's page table lists
 * its pages' addresses.
 */
#ifndef GLYD_ENGINE_KERNELS_H
#define GLYD_ENGINE_KERNELS_H

#include "tensor_kernels.h"

#ifndef __CUDACC__
#  include <math.h>
#  include <string.h>
#endif

#define GK_PAGE          64   /* positions per page of the cache */
#define GK_NORM_THREADS  256  /* threads of a norm's block: one partial sum each */
#define GK_ROT_THREADS   128  /* threads of a token's rotation block */
#define GK_ATT_WARPS     4    /* warps of a (token, head) attention block */
#define GK_ARGMAX_THREADS 1024

GK_FN uint32_t gk_float_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}

/* fp32 to bf16, to nearest with ties to even; a NaN stays a NaN: the
 * rounding of both engines' caches. */
GK_FN uint16_t gk_bf16(float f)
{
    uint32_t const u = gk_float_bits(f);
    if ((u & 0x7FFFFFFF) > 0x7F800000) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

/* ------------------------------------------------------------------------ */
/* RMSNorm: a block of GK_NORM_THREADS per row                              */
/* ------------------------------------------------------------------------ */

typedef struct {
    const float* x;          /* rows of n, stride apart */
    float* out;              /* the same shape; may be x */
    const float* w;          /* (n) */
    uint64_t rows, n, stride;
    float eps;
} gk_rmsnorm;

/* Thread j's sum of squares over elements j, j + GK_NORM_THREADS, ... of row r. */
GK_FN float gk_rms_partial(const gk_rmsnorm* a, uint64_t r, unsigned j)
{
    const float* const x = a->x + r * a->stride;
    float s = 0;
    uint64_t i;
    for (i = j; i < a->n; i += GK_NORM_THREADS) s += x[i] * x[i];
    return s;
}

/* The row's scale from the threads' partial sums, added in thread order. */
GK_FN float gk_rms_scale(const float* partial, uint64_t n, float eps)
{
    float s = 0;
    unsigned j;
    for (j = 0; j < GK_NORM_THREADS; j++) s += partial[j];
    return 1.0f / sqrtf(s / (float)n + eps);
}

GK_FN void gk_rms_apply(const gk_rmsnorm* a, uint64_t r, unsigned j, float scale)
{
    const float* const x = a->x + r * a->stride;
    float* const out = a->out + r * a->stride;
    uint64_t i;
    for (i = j; i < a->n; i += GK_NORM_THREADS) out[i] = a->w[i] * (x[i] * scale);
}

/* ------------------------------------------------------------------------ */
/* q and k made ready, k and v cached: a block of GK_ROT_THREADS per token   */
/* ------------------------------------------------------------------------ */

typedef struct {
    float *q, *k, *v;                 /* (T, nbHeads * headDim), (T, nbKvHeads * headDim) x2 */
    const float *bq, *bk, *bv;        /* biases (Qwen2), or NULL */
    const float *qNorm, *kNorm;       /* each head's norm (Qwen3, (headDim)), or NULL */
    const float* invFreq;             /* (headDim / 2) */
    float ropeScale, eps;
    unsigned nbHeads, nbKvHeads, headDim;
    uint64_t T, pos;                  /* token t is at position pos + t */
    void* const* kPages;              /* the layer's page tables */
    void* const* vPages;
    int kvF32;
} gk_rotate;

/* Phase 1: biases, thread j's elements of token t. */
GK_FN void gk_rot_bias(const gk_rotate* a, uint64_t t, unsigned j)
{
    uint64_t const qDim = (uint64_t)a->nbHeads * a->headDim, kvDim = (uint64_t)a->nbKvHeads * a->headDim;
    uint64_t i;
    if (!a->bq) return;
    for (i = j; i < qDim; i += GK_ROT_THREADS) a->q[t * qDim + i] += a->bq[i];
    for (i = j; i < kvDim; i += GK_ROT_THREADS) {
        a->k[t * kvDim + i] += a->bk[i];
        a->v[t * kvDim + i] += a->bv[i];
    }
}

/* Phase 2 (with head norms): head hh of token t (q's heads, then k's), a
 * warp per head: lane's partial sum of squares, then, once the warp's
 * butterfly has added them, its elements scaled. */
GK_FN float* gk_rot_head(const gk_rotate* a, uint64_t t, unsigned hh, const float** w)
{
    uint64_t const hd = a->headDim;
    if (hh < a->nbHeads) { *w = a->qNorm; return a->q + (t * a->nbHeads + hh) * hd; }
    *w = a->kNorm;
    return a->k + (t * a->nbKvHeads + (hh - a->nbHeads)) * hd;
}

GK_FN float gk_head_partial(const float* x, unsigned headDim, unsigned lane)
{
    float s = 0;
    unsigned i;
    for (i = lane; i < headDim; i += 32) s += x[i] * x[i];
    return s;
}

GK_FN void gk_head_apply(float* x, const float* w, unsigned headDim, unsigned lane, float sum, float eps)
{
    float const scale = 1.0f / sqrtf(sum / (float)headDim + eps);
    unsigned i;
    for (i = lane; i < headDim; i += 32) x[i] = w[i] * (x[i] * scale);
}

/* Phase 3: the rotation (rotate_half) of thread j's pairs of token t, over
 * q's heads and then k's. */
GK_FN void gk_rot_rope(const gk_rotate* a, uint64_t t, unsigned j)
{
    unsigned const half = a->headDim / 2;
    uint64_t const nbPairs = (uint64_t)(a->nbHeads + a->nbKvHeads) * half;
    float const posf = (float)(a->pos + t);
    uint64_t p;
    for (p = j; p < nbPairs; p += GK_ROT_THREADS) {
        unsigned const hh = (unsigned)(p / half), i = (unsigned)(p % half);
        const float* w;
        float* const x = gk_rot_head(a, t, hh, &w);
        float const angle = posf * a->invFreq[i];
        float const c = cosf(angle) * a->ropeScale, s = sinf(angle) * a->ropeScale;
        float const x0 = x[i], x1 = x[i + half];
        x[i] = x0 * c - x1 * s;
        x[i + half] = x1 * c + x0 * s;
    }
}

/* Where position p's element i (of nbKvHeads * headDim) lies in pages. */
GK_FN uint64_t gk_page_slot(uint64_t p, uint64_t i, uint64_t kvDim) { return (p % GK_PAGE) * kvDim + i; }

GK_FN float gk_cache_get(const void* const* pages, uint64_t p, uint64_t i, uint64_t kvDim, int f32)
{
    const void* const page = pages[p / GK_PAGE];
    uint64_t const at = gk_page_slot(p, i, kvDim);
    if (f32) return ((const float*)page)[at];
    return gk_bits_float((uint32_t)((const uint16_t*)page)[at] << 16);
}

/* Phase 4: thread j's elements of token t's k and v into the cache. */
GK_FN void gk_rot_store(const gk_rotate* a, uint64_t t, unsigned j)
{
    uint64_t const kvDim = (uint64_t)a->nbKvHeads * a->headDim, p = a->pos + t;
    void* const kp = a->kPages[p / GK_PAGE];
    void* const vp = a->vPages[p / GK_PAGE];
    uint64_t i;
    for (i = j; i < kvDim; i += GK_ROT_THREADS) {
        uint64_t const at = gk_page_slot(p, i, kvDim);
        float const k = a->k[t * kvDim + i], v = a->v[t * kvDim + i];
        if (a->kvF32) {
            ((float*)kp)[at] = k;
            ((float*)vp)[at] = v;
        } else {
            ((uint16_t*)kp)[at] = gk_bf16(k);
            ((uint16_t*)vp)[at] = gk_bf16(v);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Attention: a block of GK_ATT_WARPS warps per (token, head, chunk)         */
/* ------------------------------------------------------------------------ */
/*
 * Token t (position P = pos + t) and head h see positions 0..P, cut into
 * chunks of `chunk` positions (gk_att_chunk: at most GK_ATT_SPLITS of
 * them), a block each, so that a long context keeps the whole GPU busy
 * even for one token. In chunk c's block:
 *   A. warp w takes the chunk's positions w, w + GK_ATT_WARPS, ...: its
 *      lanes' partial dot products of q and the key, added by the warp's
 *      butterfly; the score into the block's row; the warp's largest;
 *   B. the chunk's largest score m (the warps' in order);
 *   C. warp w: each of its scores e = exp(score - m), and their sum in
 *      position order; the chunk's sum l adds the warps' in order;
 *   E. thread j: the chunk's output elements j, j + 32 * GK_ATT_WARPS, ...,
 *      each the weights e times the values, added in position order, not
 *      yet divided; with m and l, into the chunk's part.
 * Then a block per (token, head) merges the chunks:
 *   F. thread j: output element i = j, ...: with M the largest of the
 *      chunks' m, the chunks' outputs times exp(m - M), added in chunk
 *      order, over their sums l times exp(m - M), likewise.
 */
#define GK_ATT_SPLITS    64    /* chunks of a (token, head), at most */
#define GK_ATT_CHUNK_MIN 256   /* positions of a chunk, at least */
#define GK_ATT_CHUNK_MAX 8192  /* and at most: a chunk's scores fit in 32 KiB of shared memory */

typedef struct {
    const float* q;                   /* (T, nbHeads * headDim) */
    float* out;                       /* (T, nbHeads * headDim) */
    float* part;                      /* (T, nbHeads, GK_ATT_SPLITS, headDim + 2): each chunk's
                                       * output, then its largest score and its sum */
    const void* const* kPages;        /* the layer's page tables */
    const void* const* vPages;
    unsigned nbHeads, nbKvHeads, headDim;
    uint64_t T, pos, chunk;           /* chunk: gk_att_chunk(pos + T) */
    int kvF32;
} gk_attend;

/* Positions per chunk for a batch that sees `positions` positions at most:
 * a multiple of 32 from GK_ATT_CHUNK_MIN up, few enough for GK_ATT_SPLITS
 * chunks; 0 past GK_ATT_SPLITS * GK_ATT_CHUNK_MAX positions. */
GK_FN uint64_t gk_att_chunk(uint64_t positions)
{
    uint64_t c = (positions + GK_ATT_SPLITS - 1) / GK_ATT_SPLITS;
    c = (c + 31) / 32 * 32;
    if (c < GK_ATT_CHUNK_MIN) c = GK_ATT_CHUNK_MIN;
    return c <= GK_ATT_CHUNK_MAX ? c : 0;
}

/* Chunks that token t sees. */
GK_FN uint64_t gk_att_chunks(const gk_attend* a, uint64_t t) { return (a->pos + t + a->chunk) / a->chunk; }

GK_FN float* gk_att_part(const gk_attend* a, uint64_t t, unsigned h, uint64_t c)
{
    return a->part + ((t * a->nbHeads + h) * GK_ATT_SPLITS + c) * (a->headDim + 2);
}

/* A: lane's part of the dot product of head h's q (token t) and the key at p. */
GK_FN float gk_att_partial(const gk_attend* a, uint64_t t, unsigned h, uint64_t p, unsigned lane)
{
    uint64_t const hd = a->headDim, kvDim = (uint64_t)a->nbKvHeads * hd;
    uint64_t const kvOff = (uint64_t)(h / (a->nbHeads / a->nbKvHeads)) * hd;
    const float* const q = a->q + (t * a->nbHeads + h) * hd;
    float s = 0;
    uint64_t i;
    for (i = lane; i < hd; i += 32) s += q[i] * gk_cache_get(a->kPages, p, kvOff + i, kvDim, a->kvF32);
    return s;
}

/* E: chunk c's output element i for head h, token t, from its weights
 * (row[p - first position]). */
GK_FN void gk_att_chunk_out(const gk_attend* a, uint64_t t, unsigned h, uint64_t c, const float* row, uint64_t i)
{
    uint64_t const hd = a->headDim, kvDim = (uint64_t)a->nbKvHeads * hd;
    uint64_t const kvOff = (uint64_t)(h / (a->nbHeads / a->nbKvHeads)) * hd;
    uint64_t const p0 = c * a->chunk, last = a->pos + t;
    uint64_t const p1 = p0 + a->chunk <= last ? p0 + a->chunk : last + 1;
    float o = 0;
    uint64_t p;
    for (p = p0; p < p1; p++) o += row[p - p0] * gk_cache_get(a->vPages, p, kvOff + i, kvDim, a->kvF32);
    gk_att_part(a, t, h, c)[i] = o;
}

/* F: output element i of head h, token t, from its chunks. */
GK_FN void gk_att_merge(const gk_attend* a, uint64_t t, unsigned h, uint64_t i)
{
    uint64_t const n = gk_att_chunks(a, t), hd = a->headDim;
    float most = -INFINITY, sum = 0, o = 0;
    uint64_t c;
    for (c = 0; c < n; c++) {
        float const m = gk_att_part(a, t, h, c)[hd];
        if (m > most) most = m;
    }
    for (c = 0; c < n; c++) {
        const float* const part = gk_att_part(a, t, h, c);
        float const f = expf(part[hd] - most);
        sum += f * part[hd + 1];
        o += f * part[i];
    }
    a->out[(t * a->nbHeads + h) * hd + i] = o / sum;
}

/* ------------------------------------------------------------------------ */
/* The largest logit: one block of GK_ARGMAX_THREADS                         */
/* ------------------------------------------------------------------------ */

/* Whether x[c] beats x[best] (best == n: nothing yet): larger, or equal
 * and earlier. NaNs are passed over. */
GK_FN int gk_argmax_beats(const float* x, uint64_t n, uint64_t c, uint64_t best)
{
    if (!(x[c] == x[c])) return 0;
    return best == n || x[c] > x[best] || (x[c] == x[best] && c < best);
}

/* Thread j's best of elements j, j + GK_ARGMAX_THREADS, ...; n if none. */
GK_FN uint64_t gk_argmax_partial(const float* x, uint64_t n, unsigned j)
{
    uint64_t best = n, i;
    for (i = j; i < n; i += GK_ARGMAX_THREADS)
        if (gk_argmax_beats(x, n, i, best)) best = i;
    return best;
}

/* The threads' bests, taken in thread order; 0 when every value is a NaN. */
GK_FN uint64_t gk_argmax_final(const float* x, uint64_t n, const uint64_t* partial)
{
    uint64_t best = n;
    unsigned j;
    for (j = 0; j < GK_ARGMAX_THREADS; j++)
        if (partial[j] < n && gk_argmax_beats(x, n, partial[j], best)) best = partial[j];
    return best == n ? 0 : best;
}

/* ------------------------------------------------------------------------ */
/* Sampling's candidates: one block of GK_TOPK_THREADS                       */
/* ------------------------------------------------------------------------ */
/*
 * The repetition penalty (a thread per distinct token of the history), then
 * the best k of x[i] / temperature, best first, ties to the lower index, as
 * the CPU sampler sorts them:
 *   1. a radix select of the k-th largest key, 8 bits a pass from the top:
 *      each thread counts its own run of elements into a shared histogram;
 *      thread 0 finds the digit where the count from the top reaches k;
 *   2. each thread counts its elements above that key and equal to it;
 *      thread 0 turns the counts into offsets (thread order is index order);
 *   3. each thread writes its elements above the key, and its equal ones
 *      while fewer than k are taken, at those offsets;
 *   4. thread 0 sorts the k (keys desc, then ids).
 * Counts are integers: the result does not depend on the order of atomics.
 */

#define GK_TOPK_THREADS 1024

/* silu(g) * u: SwiGLU's product, the same on every backend. */
GK_FN float gk_swiglu(float g, float u) { return g / (1.0f + expf(-g)) * u; }

GK_FN float gk_penalized(float x, float penalty) { return x > 0 ? x / penalty : x * penalty; }

/* A float's order as an unsigned key (larger float, larger key); NaN lowest. */
GK_FN uint32_t gk_order_key(float f)
{
    uint32_t const u = gk_float_bits(f);
    if (!(f == f)) return 0;
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* Thread j's run of [0, n). */
GK_FN void gk_topk_run(uint64_t n, unsigned j, uint64_t* a, uint64_t* b)
{
    uint64_t const per = (n + GK_TOPK_THREADS - 1) / GK_TOPK_THREADS;
    *a = per * j < n ? per * j : n;
    *b = per * (j + 1) < n ? per * (j + 1) : n;
}

/* The key of element i: each thread counts the digit at the pass's shift of
 * the keys of its run that match the digits found so far. */
GK_FN uint32_t gk_topk_key(const float* x, uint64_t i, float temperature)
{
    return gk_order_key(x[i] / temperature);
}

/* 1, thread 0: the digit whose bin holds the *need-th key from the top;
 * *need becomes its rank within the bin. */
GK_FN unsigned gk_topk_digit(const uint32_t* hist, uint32_t* need)
{
    uint32_t above = 0;
    unsigned d;
    for (d = 256; d-- > 0;) {
        if (above + hist[d] >= *need) break;
        above += hist[d];
    }
    *need -= above;
    return d;
}

/* 4, thread 0: keys desc, ids asc (an insertion sort: k is small). */
GK_FN void gk_topk_sort(float* keys, int* ids, unsigned k)
{
    unsigned i;
    for (i = 1; i < k; i++) {
        float const kv = keys[i];
        int const id = ids[i];
        unsigned j = i;
        while (j > 0 && (keys[j - 1] < kv || (keys[j - 1] == kv && ids[j - 1] > id))) {
            keys[j] = keys[j - 1];
            ids[j] = ids[j - 1];
            j--;
        }
        keys[j] = kv;
        ids[j] = id;
    }
}

/* ------------------------------------------------------------------------ */
/* Embedding rows: a warp per token                                          */
/* ------------------------------------------------------------------------ */

/* Row r's first element, and the unit that holds it. */
GK_FN uint64_t gk_row_unit(const gk_tensor* t, uint64_t cols, uint64_t r) { return r * cols / t->unitSize; }

/* Lane j's element of group g of row r (elements [a, a + cols)) as a float;
 * esc: the escape number of the group's first escaped lane. */
GK_FN float gk_row_lane(const uint8_t* blob, const gk_tensor* t, uint64_t a, uint64_t cols, uint64_t g, unsigned j,
                        uint64_t esc, uint64_t nbEsc)
{
    return gk_bits_float(gk_lane(blob, t, g, j, a, a + cols, esc, nbEsc));
}

#endif /* GLYD_ENGINE_KERNELS_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attention.c: one query head's attention over the cached keys and values
 * of a layer (fp32 or bf16), the kernel of the CPU backend's attention.
 *
 * Scores: q . k of four positions at a time (four chains of FMAs in
 * flight), each position's lanes summed by the same tree whether it is in
 * a block of four or alone. Softmax: the largest score, exp of each score
 * less it, their sum in eight lanes. Values: the weighted rows summed in
 * two interleaved sets of accumulators (even and odd positions), added at
 * the end and divided by the softmax's sum.
 *
 * A head's result depends only on its query, the cache and the positions
 * it sees, never on the other heads or tokens or on the thread it runs on:
 * a prompt gives each token what it would get alone. The SIMD paths (AVX2
 * with FMA, AVX-512 where the CPU has it) sum in other orders than the
 * portable one, so the last bits of a result depend on the CPU's path.
 */
#include <math.h>

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define ATT_SIMD 1
#else
#  define ATT_SIMD 0
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------------------ */
/* Portable                                                                 */
/* ------------------------------------------------------------------------ */

ALWAYS_INLINE float cached(const void* row, size_t i, int f32)
{
    return f32 ? ((const float*)row)[i] : glyd_bf16ToF32(((const uint16_t*)row)[i]);
}

ALWAYS_INLINE const void* cache_row(const void* cache, size_t at, int f32)
{
    return f32 ? (const void*)((const float*)cache + at) : (const void*)((const uint16_t*)cache + at);
}

/* s[t] = q . k_t for positions [t0, t1) */
ALWAYS_INLINE void scores_portable(const glyd_kvHead* kv, const float* q, size_t t0, size_t t1, float* s, int f32)
{
    size_t const n = kv->headDim;
    size_t t = t0, i;
    for (; t + 4 <= t1; t += 4) {
        const void* const k0 = cache_row(kv->k, t * kv->stride, f32);
        const void* const k1 = cache_row(kv->k, (t + 1) * kv->stride, f32);
        const void* const k2 = cache_row(kv->k, (t + 2) * kv->stride, f32);
        const void* const k3 = cache_row(kv->k, (t + 3) * kv->stride, f32);
        float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (i = 0; i < n; i++) {
            a0 += q[i] * cached(k0, i, f32);
            a1 += q[i] * cached(k1, i, f32);
            a2 += q[i] * cached(k2, i, f32);
            a3 += q[i] * cached(k3, i, f32);
        }
        s[t] = a0; s[t + 1] = a1; s[t + 2] = a2; s[t + 3] = a3;
    }
    for (; t < t1; t++) {
        const void* const k0 = cache_row(kv->k, t * kv->stride, f32);
        float a0 = 0;
        for (i = 0; i < n; i++) a0 += q[i] * cached(k0, i, f32);
        s[t] = a0;
    }
}

/* out = sum of p[t] v_t over [t0, t1), even and odd positions apart */
ALWAYS_INLINE void values_portable(const glyd_kvHead* kv, const float* p, size_t t0, size_t t1, float* out, int f32)
{
    size_t const n = kv->headDim;
    size_t t, i;
    for (i = 0; i < n; i++) {
        float e = 0, o = 0;
        for (t = t0; t + 2 <= t1; t += 2) {
            e += p[t] * cached(cache_row(kv->v, t * kv->stride, f32), i, f32);
            o += p[t + 1] * cached(cache_row(kv->v, (t + 1) * kv->stride, f32), i, f32);
        }
        if (t < t1) e += p[t] * cached(cache_row(kv->v, t * kv->stride, f32), i, f32);
        out[i] = e + o;
    }
}

static void scores_c(const glyd_kvHead* kv, const float* q, size_t t0, size_t t1, float* s)
{
    if (kv->f32) scores_portable(kv, q, t0, t1, s, 1);
    else scores_portable(kv, q, t0, t1, s, 0);
}

static void values_c(const glyd_kvHead* kv, const float* p, size_t t0, size_t t1, float* out)
{
    if (kv->f32) values_portable(kv, p, t0, t1, out, 1);
    else values_portable(kv, p, t0, t1, out, 0);
}

/* ------------------------------------------------------------------------ */
/* AVX2 and FMA: 8 lanes                                                    */
/* ------------------------------------------------------------------------ */

#if ATT_SIMD
#  define AVX2 __attribute__((target("avx2,fma"))) ALWAYS_INLINE
#  define AVX2_FN __attribute__((target("avx2,fma"))) static

/* Eight values of a row from i (n - i of them when fewer, the rest 0). */
AVX2 __m256 load8(const void* row, size_t i, size_t n, int f32)
{
    if (i + 8 <= n) {
        if (f32) return _mm256_loadu_ps((const float*)row + i);
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(const void*)((const uint16_t*)row + i))), 16));
    }
    {
        float tail[8] = { 0 };
        size_t k;
        for (k = 0; i + k < n; k++) tail[k] = cached(row, i + k, f32);
        return _mm256_loadu_ps(tail);
    }
}

/* The sums of the lanes of four accumulators, each by the same tree. */
AVX2 __m128 sum4_avx2(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 const t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

AVX2 void scores_avx2_of(const glyd_kvHead* kv, const float* q, size_t t0, size_t t1, float* s, int f32)
{
    size_t const n = kv->headDim;
    size_t t = t0, i;
    for (; t + 4 <= t1; t += 4) {
        const void* const k0 = cache_row(kv->k, t * kv->stride, f32);
        const void* const k1 = cache_row(kv->k, (t + 1) * kv->stride, f32);
        const void* const k2 = cache_row(kv->k, (t + 2) * kv->stride, f32);
        const void* const k3 = cache_row(kv->k, (t + 3) * kv->stride, f32);
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (i = 0; i < n; i += 8) {
            __m256 const qv = load8(q, i, n, 1);
            a0 = _mm256_fmadd_ps(qv, load8(k0, i, n, f32), a0);
            a1 = _mm256_fmadd_ps(qv, load8(k1, i, n, f32), a1);
            a2 = _mm256_fmadd_ps(qv, load8(k2, i, n, f32), a2);
            a3 = _mm256_fmadd_ps(qv, load8(k3, i, n, f32), a3);
        }
        _mm_storeu_ps(s + t, sum4_avx2(a0, a1, a2, a3));
    }
    for (; t < t1; t++) {
        const void* const k0 = cache_row(kv->k, t * kv->stride, f32);
        __m256 a0 = _mm256_setzero_ps();
        for (i = 0; i < n; i += 8) a0 = _mm256_fmadd_ps(load8(q, i, n, 1), load8(k0, i, n, f32), a0);
        s[t] = _mm_cvtss_f32(sum4_avx2(a0, a0, a0, a0));
    }
}

/* Up to 4 vectors (32 values) of out from i, over every position. */
AVX2 void values_avx2_block(const glyd_kvHead* kv, const float* p, size_t t0, size_t t1, float* out, size_t i,
                            int f32)
{
    size_t const n = kv->headDim, nb = GLYD_MIN((n - i + 7) / 8, 4);
    __m256 e[4], o[4];
    size_t t, j;
    for (j = 0; j < 4; j++) e[j] = o[j] = _mm256_setzero_ps();
    for (t = t0; t + 2 <= t1; t += 2) {
        const void* const v0 = cache_row(kv->v, t * kv->stride, f32);
        const void* const v1 = cache_row(kv->v, (t + 1) * kv->stride, f32);
        __m256 const p0 = _mm256_set1_ps(p[t]), p1 = _mm256_set1_ps(p[t + 1]);
        for (j = 0; j < nb; j++) {
            e[j] = _mm256_fmadd_ps(p0, load8(v0, i + 8 * j, n, f32), e[j]);
            o[j] = _mm256_fmadd_ps(p1, load8(v1, i + 8 * j, n, f32), o[j]);
        }
    }
    if (t < t1) {
        const void* const v0 = cache_row(kv->v, t * kv->stride, f32);
        for (j = 0; j < nb; j++) e[j] = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), load8(v0, i + 8 * j, n, f32), e[j]);
    }
    for (j = 0; j < nb; j++) {
        float sum[8];
        size_t k;
        _mm256_storeu_ps(sum, _mm256_add_ps(e[j], o[j]));
        for (k = 0; k < 8 && i + 8 * j + k < n; k++) out[i + 8 * j + k] = sum[k];
    }
}

AVX2_FN void scores_avx2(const glyd_kvHead* kv, const float* q, size_t t0, size_t t1, float* s)
{
    if (kv->f32) scores_avx2_of(kv, q, t0, t1, s, 1);
    else scores_avx2_of(kv, q, t0, t1, s, 0);
}

AVX2_FN void values_avx2(const glyd_kvHead* kv, const float* p, size_t t0, size_t t1, float* out)
{
    size_t i;
    for (i = 0; i < kv->headDim; i += 32) {
        if (kv->f32) values_avx2_block(kv, p, t0, t1, out, i, 1);
        else values_avx2_block(kv, p, t0, t1, out, i, 0);
    }
}

/* ------------------------------------------------------------------------ */
/* AVX-512: 16 lanes, the tails masked                                      */
/* ------------------------------------------------------------------------ */

#  define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) ALWAYS_INLINE
#  define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) static

AVX512 __mmask16 tail_mask(size_t i, size_t n)
{
    return n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
}

/* Sixteen values of a row from i, those past n 0. */
AVX512 __m512 load16(const void* row, size_t i, __mmask16 k, int f32)
{
    if (f32) return _mm512_maskz_loadu_ps(k, (const float*)row + i);
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, (const uint16_t*)row + i)), 16));
}

AVX512 __m256 halves(__m512 a)
{
    return _mm256_add_ps(_mm512_castps512_ps256(a),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

AVX512 __m128 sum4_avx512(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    return sum4_avx2(halves(a0), halves(a1), halves(a2), halves(a3));
}

AVX512 void scores_avx512_of(const glyd_kvHead* kv, const float* q, size_t t0, size_t t1, float* s, int f32)
{
    size_t const n = kv->headDim;
    size_t t = t0, i;
    for (; t + 4 <= t1; t += 4) {
        const void* const k0 = cache_row(kv->k, t * kv->stride, f32);
        const void* const k1 = cache_row(kv->k, (t + 1) * kv->stride, f32);
        const void* const k2 = cache_row(kv->k, (t + 2) * kv->stride, f32);
        const void* const k3 = cache_row(kv->k, (t + 3) * kv->stride, f32);
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (i = 0; i < n; i += 16) {
            __mmask16 const m = tail_mask(i, n);
            __m512 const qv = _mm512_maskz_loadu_ps(m, q + i);
            a0 = _mm512_fmadd_ps(qv, load16(k0, i, m, f32), a0);
            a1 = _mm512_fmadd_ps(qv, load16(k1, i, m, f32), a1);
            a2 = _mm512_fmadd_ps(qv, load16(k2, i, m, f32), a2);
            a3 = _mm512_fmadd_ps(qv, load16(k3, i, m, f32), a3);
        }
        _mm_storeu_ps(s + t, sum4_avx512(a0, a1, a2, a3));
    }
    for (; t < t1; t++) {
        const void* const k0 = cache_row(kv->k, t * kv->stride, f32);
        __m512 a0 = _mm512_setzero_ps();
        for (i = 0; i < n; i += 16) {
            __mmask16 const m = tail_mask(i, n);
            a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load16(k0, i, m, f32), a0);
        }
        s[t] = _mm_cvtss_f32(sum4_avx512(a0, a0, a0, a0));
    }
}

/* Up to 4 vectors (64 values) of out from i, over every position. */
AVX512 void values_avx512_block(const glyd_kvHead* kv, const float* p, size_t t0, size_t t1, float* out, size_t i,
                                int f32)
{
    size_t const n = kv->headDim, nb = GLYD_MIN((n - i + 15) / 16, 4);
    __m512 e[4], o[4];
    __mmask16 m[4];
    size_t t, j;
    for (j = 0; j < 4; j++) {
        e[j] = o[j] = _mm512_setzero_ps();
        m[j] = j < nb ? tail_mask(i + 16 * j, n) : 0;
    }
    for (t = t0; t + 2 <= t1; t += 2) {
        const void* const v0 = cache_row(kv->v, t * kv->stride, f32);
        const void* const v1 = cache_row(kv->v, (t + 1) * kv->stride, f32);
        __m512 const p0 = _mm512_set1_ps(p[t]), p1 = _mm512_set1_ps(p[t + 1]);
        for (j = 0; j < nb; j++) {
            e[j] = _mm512_fmadd_ps(p0, load16(v0, i + 16 * j, m[j], f32), e[j]);
            o[j] = _mm512_fmadd_ps(p1, load16(v1, i + 16 * j, m[j], f32), o[j]);
        }
    }
    if (t < t1) {
        const void* const v0 = cache_row(kv->v, t * kv->stride, f32);
        for (j = 0; j < nb; j++)
            e[j] = _mm512_fmadd_ps(_mm512_set1_ps(p[t]), load16(v0, i + 16 * j, m[j], f32), e[j]);
    }
    for (j = 0; j < nb; j++) _mm512_mask_storeu_ps(out + i + 16 * j, m[j], _mm512_add_ps(e[j], o[j]));
}

AVX512_FN void scores_avx512(const glyd_kvHead* kv, const float* q, size_t t0, size_t t1, float* s)
{
    if (kv->f32) scores_avx512_of(kv, q, t0, t1, s, 1);
    else scores_avx512_of(kv, q, t0, t1, s, 0);
}

AVX512_FN void values_avx512(const glyd_kvHead* kv, const float* p, size_t t0, size_t t1, float* out)
{
    size_t i;
    for (i = 0; i < kv->headDim; i += 64) {
        if (kv->f32) values_avx512_block(kv, p, t0, t1, out, i, 1);
        else values_avx512_block(kv, p, t0, t1, out, i, 0);
    }
}
#endif /* ATT_SIMD */

/* ------------------------------------------------------------------------ */
/* One head                                                                 */
/* ------------------------------------------------------------------------ */

typedef void (*scores_fn)(const glyd_kvHead*, const float*, size_t, size_t, float*);
typedef void (*values_fn)(const glyd_kvHead*, const float*, size_t, size_t, float*);

typedef struct {
    scores_fn scores;
    values_fn values;
} kernels;

static int g_simdLimit = GLYD_SIMD_BEST;

void glyd_attendSimdLimit(int level) { g_simdLimit = level; }

/* The widest kernels the CPU runs (and the limit allows). */
static const kernels* pick_kernels(void)
{
    static const kernels kPortable = { scores_c, values_c };
#if ATT_SIMD
    static const kernels kAvx2 = { scores_avx2, values_avx2 };
    static const kernels kAvx512 = { scores_avx512, values_avx512 };
    if (g_simdLimit >= GLYD_SIMD_AVX512 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return &kAvx512;
    if (g_simdLimit >= GLYD_SIMD_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &kAvx2;
#endif
    return &kPortable;
}

/* att[first..pos] = exp(att - max); returns their sum, in eight lanes
 * added at the end (one chain of adds would be as slow as the scores). */
static float softmax_weights(float* att, size_t first, size_t pos, float scale)
{
    float maxv = -INFINITY, lane[8] = { 0 }, sum;
    size_t t;
    unsigned k;
    for (t = first; t <= pos; t++) {
        att[t] *= scale;
        if (att[t] > maxv) maxv = att[t];
    }
    glyd_expShifted(att + first, pos + 1 - first, maxv);
    for (t = first; t <= pos; t++) lane[(t - first) & 7] += att[t];
    sum = lane[0];
    for (k = 1; k < 8; k++) sum += lane[k];
    return sum;
}

void glyd_attendHead(const glyd_kvHead* kv, const float* q, size_t first, size_t pos, float scale, float* att,
                     float* out)
{
    const kernels* const k = pick_kernels();
    float sum;
    size_t i;
    k->scores(kv, q, first, pos + 1, att);
    sum = softmax_weights(att, first, pos, scale);
    k->values(kv, att, first, pos + 1, out);
    for (i = 0; i < kv->headDim; i++) out[i] /= sum;
}

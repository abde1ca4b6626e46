/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delta_rule.c: the recurrence of a Gated DeltaNet value head (deltanet.c
 * runs the rest of the layer). Token after token, its state S (dk x dv):
 *
 *   S = a S                       a = e^logDecay, in (0, 1]
 *   d = beta (v - S^T k)          the correction of S's prediction for k
 *   S = S + k d^T
 *   o = S^T q
 *
 * The portable path runs it as written, two passes over S a token. The
 * AVX2 path rewrites it so that S is read and written once a token: with
 * p = S^T k and r = S^T q taken from the state before the token,
 *
 *   d = beta (v - a p) ;  o = a r + d (k . q) ;  S = a S + k d^T
 *
 * and the pass that writes a token's S sums the next token's p and r as it
 * goes. Each element's arithmetic is the same whichever token starts a
 * call, so a prompt and its tokens one at a time still agree to the bit;
 * the two paths round otherwise, as attention's do.
 */
#include <math.h>

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define DELTA_SIMD 1
#else
#  define DELTA_SIMD 0
#endif

static void delta_step(float* S, const float* q, const float* k, const float* v, float decay, float beta, float* o,
                       float* kv, unsigned dk, unsigned dv)
{
    unsigned i, j;
    for (j = 0; j < dv; j++) kv[j] = 0;
    for (i = 0; i < dk; i++) {
        float* const row = S + (size_t)i * dv;
        float const ki = k[i];
        for (j = 0; j < dv; j++) {
            row[j] *= decay;
            kv[j] += row[j] * ki;
        }
    }
    for (j = 0; j < dv; j++) kv[j] = (v[j] - kv[j]) * beta; /* the correction */
    for (j = 0; j < dv; j++) o[j] = 0;
    for (i = 0; i < dk; i++) {
        float* const row = S + (size_t)i * dv;
        float const ki = k[i], qi = q[i];
        for (j = 0; j < dv; j++) {
            row[j] += ki * kv[j];
            o[j] += row[j] * qi;
        }
    }
}

static void delta_rule_portable(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* kv)
{
    size_t t;
    for (t = 0; t < T; t++)
        delta_step(S, x->q + t * x->qkStride, x->k + t * x->qkStride, x->v + t * x->vStride,
                   expf(x->logDecay[t * x->gateStride]), x->beta[t * x->gateStride], x->o + t * x->oStride, kv,
                   dk, dv);
}

#if DELTA_SIMD
#  define AVX2_FN __attribute__((target("avx2,fma"))) static

/* p = S^T k and r = S^T q for 16 columns from j, S unchanged. */
AVX2_FN void read_block(const float* S, const float* k, const float* q, float* p, float* r, unsigned dk,
                        unsigned dv, unsigned j)
{
    __m256 p0 = _mm256_setzero_ps(), p1 = p0, r0 = p0, r1 = p0;
    unsigned i;
    for (i = 0; i < dk; i++) {
        const float* const row = S + (size_t)i * dv + j;
        __m256 const s0 = _mm256_loadu_ps(row), s1 = _mm256_loadu_ps(row + 8);
        __m256 const ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
        p0 = _mm256_fmadd_ps(s0, ki, p0);
        p1 = _mm256_fmadd_ps(s1, ki, p1);
        r0 = _mm256_fmadd_ps(s0, qi, r0);
        r1 = _mm256_fmadd_ps(s1, qi, r1);
    }
    _mm256_storeu_ps(p + j, p0);
    _mm256_storeu_ps(p + j + 8, p1);
    _mm256_storeu_ps(r + j, r0);
    _mm256_storeu_ps(r + j + 8, r1);
}

/* S = a S + k d^T for 16 columns from j; with nextK (and nextQ), p and r
 * for the next token summed from the new S as it is written. */
AVX2_FN void write_block(float* S, float a, const float* k, const float* d, const float* nextK, const float* nextQ,
                         float* p, float* r, unsigned dk, unsigned dv, unsigned j)
{
    __m256 const va = _mm256_set1_ps(a), d0 = _mm256_loadu_ps(d + j), d1 = _mm256_loadu_ps(d + j + 8);
    __m256 p0 = _mm256_setzero_ps(), p1 = p0, r0 = p0, r1 = p0;
    unsigned i;
    for (i = 0; i < dk; i++) {
        float* const row = S + (size_t)i * dv + j;
        __m256 const ki = _mm256_set1_ps(k[i]);
        __m256 const s0 = _mm256_fmadd_ps(ki, d0, _mm256_mul_ps(va, _mm256_loadu_ps(row)));
        __m256 const s1 = _mm256_fmadd_ps(ki, d1, _mm256_mul_ps(va, _mm256_loadu_ps(row + 8)));
        _mm256_storeu_ps(row, s0);
        _mm256_storeu_ps(row + 8, s1);
        if (nextK) {
            __m256 const nk = _mm256_set1_ps(nextK[i]), nq = _mm256_set1_ps(nextQ[i]);
            p0 = _mm256_fmadd_ps(s0, nk, p0);
            p1 = _mm256_fmadd_ps(s1, nk, p1);
            r0 = _mm256_fmadd_ps(s0, nq, r0);
            r1 = _mm256_fmadd_ps(s1, nq, r1);
        }
    }
    if (nextK) {
        _mm256_storeu_ps(p + j, p0);
        _mm256_storeu_ps(p + j + 8, p1);
        _mm256_storeu_ps(r + j, r0);
        _mm256_storeu_ps(r + j + 8, r1);
    }
}

/* dv a multiple of 16; scratch: 3 dv floats */
AVX2_FN void delta_rule_avx2(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* scratch)
{
    float* const p = scratch;
    float* const r = scratch + dv;
    float* const d = scratch + 2 * dv;
    size_t t;
    unsigned i, j;
    for (j = 0; j < dv; j += 16) read_block(S, x->k, x->q, p, r, dk, dv, j);
    for (t = 0; t < T; t++) {
        const float* const k = x->k + t * x->qkStride;
        const float* const q = x->q + t * x->qkStride;
        const float* const v = x->v + t * x->vStride;
        float* const o = x->o + t * x->oStride;
        float const a = expf(x->logDecay[t * x->gateStride]), beta = x->beta[t * x->gateStride];
        const float* const nextK = t + 1 < T ? k + x->qkStride : NULL;
        const float* const nextQ = t + 1 < T ? q + x->qkStride : NULL;
        float kq = 0;
        for (i = 0; i < dk; i++) kq = fmaf(k[i], q[i], kq);
        for (j = 0; j < dv; j += 8) {
            __m256 const va = _mm256_set1_ps(a);
            __m256 const dj = _mm256_mul_ps(_mm256_set1_ps(beta),
                                            _mm256_fnmadd_ps(va, _mm256_loadu_ps(p + j), _mm256_loadu_ps(v + j)));
            _mm256_storeu_ps(d + j, dj);
            _mm256_storeu_ps(o + j, _mm256_fmadd_ps(dj, _mm256_set1_ps(kq), _mm256_mul_ps(va, _mm256_loadu_ps(r + j))));
        }
        for (j = 0; j < dv; j += 16) write_block(S, a, k, d, nextK, nextQ, p, r, dk, dv, j);
    }
}
#endif

void glyd_deltaRule(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* scratch)
{
#if DELTA_SIMD
    if (dv % 16 == 0 && glyd_avx2FmaUsable()) {
        delta_rule_avx2(S, x, T, dk, dv, scratch);
        return;
    }
#endif
    delta_rule_portable(S, x, T, dk, dv, scratch);
}

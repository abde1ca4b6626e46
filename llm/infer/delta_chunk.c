/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delta_chunk.c: the chunked form of a Gated DeltaNet value head's delta
 * rule, for prompts (delta_rule.c has the recurrence). A block of n tokens
 * becomes products of (n x dk), (dk x dv) and (n x n) matrices and one
 * triangular solve, instead of n passes over the state. With G_t the sum of
 * the block's log decays up to token t, g_t = e^G_t, and S0 the state
 * before the block, the corrections D (n x dv) solve
 *
 *   D_t = beta_t (v_t - g_t S0^T k_t) - beta_t sum_{s<t} (k_t . k_s) e^(G_t - G_s) D_s
 *
 * and then
 *
 *   o_t = g_t S0^T q_t + sum_{s<=t} (q_t . k_s) e^(G_t - G_s) D_s
 *   S   = g_n S0 + sum_s e^(G_n - G_s) k_s D_s^T
 *
 * which is the recurrence's algebra, summed in another order: the outputs
 * round otherwise than a token at a time (and depend on where the blocks
 * start), so the engine runs it only when asked (glyd_llmParams).
 * No decay is divided by: e^(G_t - G_s) with s <= t is at most 1.
 */
#include <math.h>
#include <string.h>

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define CHUNK_SIMD 1
#else
#  define CHUNK_SIMD 0
#endif

enum { N = GLYD_DELTA_CHUNK };

/* C (m x n) = (accumulate ? C : 0) + A (m x k) B (k x n), row-major with
 * leading dimensions lda, ldb, ldc. */
typedef void gemm_fn(float* C, size_t ldc, const float* A, size_t lda, const float* B, size_t ldb, size_t m, size_t n,
                     size_t k, int accumulate);

static void gemm_portable(float* C, size_t ldc, const float* A, size_t lda, const float* B, size_t ldb, size_t m,
                          size_t n, size_t k, int accumulate)
{
    size_t i, j, l;
    for (i = 0; i < m; i++) {
        float* const c = C + i * ldc;
        if (!accumulate) for (j = 0; j < n; j++) c[j] = 0;
        for (l = 0; l < k; l++) {
            float const a = A[i * lda + l];
            const float* const b = B + l * ldb;
            for (j = 0; j < n; j++) c[j] += a * b[j];
        }
    }
}

#if CHUNK_SIMD
#  define AVX2_FN __attribute__((target("avx2,fma")))

/* rows (at most 4) rows of C, 16 columns from j, in registers */
static inline __attribute__((always_inline)) AVX2_FN void gemm_block(float* C, size_t ldc, const float* A, size_t lda,
                                                                      const float* B, size_t ldb, size_t k,
                                                                      int accumulate, size_t rows)
{
    __m256 c[4][2];
    size_t l, r;
    for (r = 0; r < rows; r++) {
        c[r][0] = accumulate ? _mm256_loadu_ps(C + r * ldc) : _mm256_setzero_ps();
        c[r][1] = accumulate ? _mm256_loadu_ps(C + r * ldc + 8) : _mm256_setzero_ps();
    }
    for (l = 0; l < k; l++) {
        __m256 const b0 = _mm256_loadu_ps(B + l * ldb), b1 = _mm256_loadu_ps(B + l * ldb + 8);
        for (r = 0; r < rows; r++) {
            __m256 const a = _mm256_set1_ps(A[r * lda + l]);
            c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
        }
    }
    for (r = 0; r < rows; r++) {
        _mm256_storeu_ps(C + r * ldc, c[r][0]);
        _mm256_storeu_ps(C + r * ldc + 8, c[r][1]);
    }
}

/* n a multiple of 16 */
static AVX2_FN void gemm_avx2(float* C, size_t ldc, const float* A, size_t lda, const float* B, size_t ldb, size_t m,
                              size_t n, size_t k, int accumulate)
{
    size_t i, j;
    for (j = 0; j < n; j += 16) {
        for (i = 0; i + 4 <= m; i += 4) gemm_block(C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, k, accumulate, 4);
        switch (m - i) {
        case 3: gemm_block(C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, k, accumulate, 3); break;
        case 2: gemm_block(C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, k, accumulate, 2); break;
        case 1: gemm_block(C + i * ldc + j, ldc, A + i * lda, lda, B + j, ldb, k, accumulate, 1); break;
        default: break;
        }
    }
}
#endif

size_t glyd_deltaChunkWork(unsigned dk, unsigned dv)
{
    return (size_t)N * (3 * (size_t)dv + dk) + 4 * (size_t)N * N;
}

/* One block of n <= N tokens; wide multiplies products dv columns wide,
 * narrow those n wide. */
static inline __attribute__((always_inline)) void chunk(float* S, const glyd_deltaTokens* x, size_t n, unsigned dk,
                                                        unsigned dv, float* work, gemm_fn* wide, gemm_fn* narrow)
{
    float* const ps = work;                  /* (2n, dv): [K; Q] S0 */
    float* const kt = ps + 2 * N * dv;       /* (dk, n): K^T, then its columns decayed to the block's end */
    float* const dots = kt + (size_t)N * dk; /* (2n, n): [K; Q] K^T */
    float* const d = dots + 2 * N * N;       /* (n, dv): the corrections */
    float* const mix = d + (size_t)N * dv;   /* (n, n): (q_t . k_s) e^(G_t - G_s), s <= t */
    float* const decay = mix + N * N;        /* (n, n): e^(G_t - G_s), s <= t */
    float G[N], g[N];
    size_t t, s, i;
    unsigned j;
    for (t = 0; t < n; t++) {
        G[t] = (t ? G[t - 1] : 0.0f) + x->logDecay[t * x->gateStride];
        g[t] = expf(G[t]);
        for (s = 0; s <= t; s++) decay[t * n + s] = expf(G[t] - G[s]);
    }
    wide(ps, dv, x->k, x->qkStride, S, dv, n, dv, dk, 0);
    wide(ps + n * dv, dv, x->q, x->qkStride, S, dv, n, dv, dk, 0);
    for (i = 0; i < dk; i++)
        for (s = 0; s < n; s++) kt[i * n + s] = x->k[s * x->qkStride + i];
    narrow(dots, n, x->k, x->qkStride, kt, n, n, n, dk, 0);
    narrow(dots + n * n, n, x->q, x->qkStride, kt, n, n, n, dk, 0);
    for (t = 0; t < n; t++) {
        float const beta = x->beta[t * x->gateStride];
        const float* const v = x->v + t * x->vStride;
        float* const o = x->o + t * x->oStride;
        float* const dt = d + t * dv;
        for (j = 0; j < dv; j++) {
            dt[j] = beta * (v[j] - g[t] * ps[t * dv + j]);
            o[j] = g[t] * ps[(n + t) * dv + j];
        }
        /* the triangular solve, row by row */
        for (s = 0; s < t; s++) {
            float const w = -beta * dots[t * n + s] * decay[t * n + s];
            const float* const ds = d + s * dv;
            for (j = 0; j < dv; j++) dt[j] += w * ds[j];
        }
        for (s = 0; s < n; s++) mix[t * n + s] = s <= t ? dots[(n + t) * n + s] * decay[t * n + s] : 0.0f;
    }
    wide(x->o, x->oStride, mix, n, d, dv, n, dv, n, 1);
    for (i = 0; i < dk; i++)
        for (s = 0; s < n; s++) kt[i * n + s] *= decay[(n - 1) * n + s];
    for (i = 0; i < (size_t)dk * dv; i++) S[i] *= g[n - 1];
    wide(S, dv, kt, n, d, dv, dk, dv, n, 1);
}

/* token t's block of at most N tokens */
static glyd_deltaTokens block_at(const glyd_deltaTokens* x, size_t t)
{
    glyd_deltaTokens const b = { x->q + t * x->qkStride, x->k + t * x->qkStride, x->qkStride,
                                 x->v + t * x->vStride, x->vStride, x->logDecay + t * x->gateStride,
                                 x->beta + t * x->gateStride, x->gateStride, x->o + t * x->oStride, x->oStride };
    return b;
}

static void chunked_portable(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* work)
{
    size_t t;
    for (t = 0; t < T; t += N) {
        glyd_deltaTokens const b = block_at(x, t);
        chunk(S, &b, GLYD_MIN((size_t)N, T - t), dk, dv, work, gemm_portable, gemm_portable);
    }
}

#if CHUNK_SIMD
/* dv a multiple of 16 */
static AVX2_FN void chunked_avx2(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* work)
{
    size_t t;
    for (t = 0; t < T; t += N) {
        glyd_deltaTokens const b = block_at(x, t);
        size_t const n = GLYD_MIN((size_t)N, T - t);
        chunk(S, &b, n, dk, dv, work, gemm_avx2, n % 16 ? gemm_portable : gemm_avx2);
    }
}
#endif

void glyd_deltaRuleChunked(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* work)
{
#if CHUNK_SIMD
    if (dv % 16 == 0 && glyd_avx2FmaUsable()) {
        chunked_avx2(S, x, T, dk, dv, work);
        return;
    }
#endif
    chunked_portable(S, x, T, dk, dv, work);
}

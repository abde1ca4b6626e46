/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_deltanet.c: what the chunked form of the delta rule would gain over
 * the engine's recurrence (llm/infer/delta_rule.c) on the CPU, on one
 * thread: nanoseconds a token and value head, Qwen3.5-9B's heads (32 value
 * heads of 128 x 128), best of R runs taken in turns.
 *
 *   build/bench_deltanet [--tokens T] [--rounds R]
 *
 * The engine runs the recurrence token after token so that a prompt and
 * its tokens one at a time agree to the bit; the chunked form (transformers'
 * for prompts) turns a block of C tokens into products of C x 128 and
 * 128 x 128 matrices and a triangular solve, and rounds otherwise. It is
 * written here with AVX2 and FMA, as the engine's widest recurrence is,
 * for blocks of 16, 32 (the engine's batch) and 64 tokens, and checked
 * against the recurrence before it is timed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/tensor/tensor.h"
#include "../llm/infer/infer.h"
#include "bench_util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#  include <immintrin.h>
#else
#  error "bench_deltanet measures x86-64 kernels"
#endif

enum { DK = 128, DV = 128, HEADS = 32, CHUNK_MAX = 64 };

#define AVX2_FN __attribute__((target("avx2,fma"))) static

/* uniform in (-1, 1] */
static float uniform(uint64_t* s) { return (float)(2.0 * bench_uniform(s) - 1.0); }

/* C (m x n) = (accumulate ? C : 0) + A (m x k) B (k x n), all row-major;
 * m a multiple of 4, n of 16: 4 x 16 blocks of C in registers. */
AVX2_FN void gemm(float* C, size_t ldc, const float* A, size_t lda, const float* B, size_t ldb, size_t m, size_t n,
                  size_t k, int accumulate)
{
    size_t i, j, l, r;
    for (i = 0; i < m; i += 4)
        for (j = 0; j < n; j += 16) {
            __m256 c[4][2];
            for (r = 0; r < 4; r++) {
                c[r][0] = accumulate ? _mm256_loadu_ps(C + (i + r) * ldc + j) : _mm256_setzero_ps();
                c[r][1] = accumulate ? _mm256_loadu_ps(C + (i + r) * ldc + j + 8) : _mm256_setzero_ps();
            }
            for (l = 0; l < k; l++) {
                __m256 const b0 = _mm256_loadu_ps(B + l * ldb + j), b1 = _mm256_loadu_ps(B + l * ldb + j + 8);
                for (r = 0; r < 4; r++) {
                    __m256 const a = _mm256_set1_ps(A[(i + r) * lda + l]);
                    c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
                    c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
                }
            }
            for (r = 0; r < 4; r++) {
                _mm256_storeu_ps(C + (i + r) * ldc + j, c[r][0]);
                _mm256_storeu_ps(C + (i + r) * ldc + j + 8, c[r][1]);
            }
        }
}

/* y += s x, n a multiple of 8 */
AVX2_FN void axpy(float* y, float s, const float* x, size_t n)
{
    __m256 const vs = _mm256_set1_ps(s);
    size_t j;
    for (j = 0; j < n; j += 8) _mm256_storeu_ps(y + j, _mm256_fmadd_ps(vs, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
}

/* The delta rule over one block of n tokens (n a multiple of 4, at most
 * CHUNK_MAX) of one head, from its state S0. With G the running sum of the
 * log decays and g_t = e^G_t, the corrections D (n x dv) solve
 *   D_t = beta_t (v_t - g_t (S0^T k_t)) - sum_{s<t} beta_t (k_t . k_s) e^(G_t - G_s) D_s,
 * and then
 *   o_t = g_t (S0^T q_t) + sum_{s<=t} (q_t . k_s) e^(G_t - G_s) D_s
 *   S   = g_n S0 + sum_s e^(G_n - G_s) k_s D_s^T. */
AVX2_FN void chunk(float* S, const float* q, const float* k, const float* v, const float* logDecay, const float* beta,
                   float* o, size_t n)
{
    static float kq[2 * CHUNK_MAX * DK], ps[2 * CHUNK_MAX * DV], kt[DK * CHUNK_MAX], dots[2 * CHUNK_MAX * CHUNK_MAX];
    static float d[CHUNK_MAX * DV], mix[CHUNK_MAX * CHUNK_MAX], wk[DK * CHUNK_MAX], decay[CHUNK_MAX * CHUNK_MAX];
    float G[CHUNK_MAX] = { 0 }, g[CHUNK_MAX];
    size_t t, s, i;
    for (t = 0; t < n; t++) G[t] = (t ? G[t - 1] : 0.0f) + logDecay[t];
    for (t = 0; t < n; t++) {
        g[t] = expf(G[t]);
        for (s = 0; s <= t; s++) decay[t * n + s] = expf(G[t] - G[s]);
    }
    memcpy(kq, k, n * DK * sizeof(float));
    memcpy(kq + n * DK, q, n * DK * sizeof(float));
    gemm(ps, DV, kq, DK, S, DV, 2 * n, DV, DK, 0); /* [K; Q] S0 */
    for (i = 0; i < DK; i++)
        for (s = 0; s < n; s++) kt[i * n + s] = k[s * DK + i];
    gemm(dots, n, kq, DK, kt, n, 2 * n, n, DK, 0); /* [K; Q] K^T */
    for (t = 0; t < n; t++) {
        __m256 const vb = _mm256_set1_ps(beta[t]), vg = _mm256_set1_ps(g[t]);
        float* const dt = d + t * DV;
        for (i = 0; i < DV; i += 8) {
            __m256 const p = _mm256_loadu_ps(ps + t * DV + i), r = _mm256_loadu_ps(ps + (n + t) * DV + i);
            _mm256_storeu_ps(dt + i, _mm256_mul_ps(vb, _mm256_fnmadd_ps(vg, p, _mm256_loadu_ps(v + t * DV + i))));
            _mm256_storeu_ps(o + t * DV + i, _mm256_mul_ps(vg, r));
        }
        for (s = 0; s < t; s++) axpy(dt, -beta[t] * dots[t * n + s] * decay[t * n + s], d + s * DV, DV);
        for (s = 0; s < n; s++) mix[t * n + s] = s <= t ? dots[(n + t) * n + s] * decay[t * n + s] : 0.0f;
    }
    gemm(o, DV, mix, n, d, DV, n, DV, n, 1);
    for (i = 0; i < DK; i++)
        for (s = 0; s < n; s++) wk[i * n + s] = decay[(n - 1) * n + s] * k[s * DK + i];
    {
        __m256 const gn = _mm256_set1_ps(g[n - 1]);
        for (i = 0; i < DK * DV; i += 8) _mm256_storeu_ps(S + i, _mm256_mul_ps(gn, _mm256_loadu_ps(S + i)));
    }
    gemm(S, DV, wk, n, d, DV, DK, DV, n, 1);
}

typedef struct {
    float *q, *k, *v, *logDecay, *beta; /* (HEADS, T, ...) */
    size_t T;
} inputs;

static void recurrence(float* S, const inputs* in, float* o, float* scratch)
{
    unsigned h;
    for (h = 0; h < HEADS; h++) {
        size_t const T = in->T;
        glyd_deltaTokens const x = { in->q + h * T * DK, in->k + h * T * DK, DK, in->v + h * T * DV, DV,
                                     in->logDecay + h * T, in->beta + h * T, 1, o + h * T * DV, DV };
        glyd_deltaRule(S + (size_t)h * DK * DV, &x, T, DK, DV, scratch);
    }
}

static void chunked(float* S, const inputs* in, float* o, size_t C)
{
    unsigned h;
    size_t t;
    for (h = 0; h < HEADS; h++)
        for (t = 0; t < in->T; t += C) {
            size_t const ht = h * in->T + t;
            chunk(S + (size_t)h * DK * DV, in->q + ht * DK, in->k + ht * DK, in->v + ht * DV, in->logDecay + ht,
                  in->beta + ht, o + ht * DV, C);
        }
}

int main(int argc, char** argv)
{
    static const size_t kChunks[3] = { 16, 32, 64 };
    inputs in;
    size_t T = 64, n, i, t;
    int rounds = 20, a, r, v;
    uint64_t seed = 1;
    double best[5] = { 1e30, 1e30, 1e30, 1e30, 1e30 };
    float *S, *o[5], *scratch;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--tokens") && a + 1 < argc) T = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
        else { fprintf(stderr, "usage: bench_deltanet [--tokens T] [--rounds R]\n"); return 2; }
    }
    if (T == 0 || T % 64 || rounds < 1) { fprintf(stderr, "bench_deltanet: T a multiple of 64\n"); return 2; }
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "bench_deltanet: the chunked form here needs AVX2 and FMA\n");
        return 1;
    }
    in.T = T;
    n = HEADS * T;
    in.q = (float*)malloc(n * DK * sizeof(float));
    in.k = (float*)malloc(n * DK * sizeof(float));
    in.v = (float*)malloc(n * DV * sizeof(float));
    in.logDecay = (float*)malloc(n * sizeof(float));
    in.beta = (float*)malloc(n * sizeof(float));
    S = (float*)malloc((size_t)HEADS * DK * DV * sizeof(float));
    scratch = (float*)malloc(3 * DV * sizeof(float));
    for (v = 0; v < 5; v++) o[v] = (float*)malloc(n * DV * sizeof(float));
    if (!in.q || !in.k || !in.v || !in.logDecay || !in.beta || !S || !scratch || !o[0] || !o[1] || !o[2] || !o[3] ||
        !o[4])
        return 1;
    /* unit queries (over sqrt(dk)) and keys, as the layer makes them;
     * decays and betas as a trained model's gates spread them */
    for (t = 0; t < n; t++) {
        float* const qt = in.q + t * DK;
        float* const kt = in.k + t * DK;
        double sq = 0, sk = 0;
        for (i = 0; i < DK; i++) { qt[i] = uniform(&seed); kt[i] = uniform(&seed); sq += qt[i] * qt[i]; sk += kt[i] * kt[i]; }
        for (i = 0; i < DK; i++) { qt[i] /= (float)(sqrt(sq) * sqrt((double)DK)); kt[i] /= (float)sqrt(sk); }
        for (i = 0; i < DV; i++) in.v[t * DV + i] = uniform(&seed);
        in.logDecay[t] = -0.25f * (uniform(&seed) + 1.0f);
        in.beta[t] = (uniform(&seed) + 1.0f) / 2.0f;
    }
    /* v: 0 the portable recurrence, 1 the widest, 2.. the chunked form */
    for (r = 0; r < rounds; r++)
        for (v = 0; v < 5; v++) {
            double t0;
            memset(S, 0, (size_t)HEADS * DK * DV * sizeof(float));
            glyd_tensorSimdLimit(v == 0 ? GLYD_SIMD_NONE : GLYD_SIMD_BEST);
            t0 = bench_now_s();
            if (v < 2) recurrence(S, &in, o[v], scratch);
            else chunked(S, &in, o[v], kChunks[v - 2]);
            best[v] = fmin(best[v], bench_now_s() - t0);
        }
    for (v = 1; v < 5; v++) {
        double worst = 0, scale = 0;
        for (i = 0; i < n * DV; i++) {
            worst = fmax(worst, fabs((double)o[v][i] - o[0][i]));
            scale = fmax(scale, fabs((double)o[0][i]));
        }
        if (!(worst <= 1e-5 * scale)) {
            fprintf(stderr, "bench_deltanet: form %d is %g from the recurrence (outputs up to %g)\n", v, worst, scale);
            return 1;
        }
    }
    printf("delta rule, %d value heads of %d x %d, %zu tokens, one thread (ns a token and head)\n", HEADS, DK, DV, T);
    printf("  recurrence, portable        %8.1f\n", best[0] * 1e9 / (double)n);
    printf("  recurrence, widest kernel   %8.1f\n", best[1] * 1e9 / (double)n);
    for (v = 2; v < 5; v++)
        printf("  chunked, blocks of %2zu       %8.1f   %.2fx the widest recurrence\n", kChunks[v - 2],
               best[v] * 1e9 / (double)n, best[1] / best[v]);
    free(in.q); free(in.k); free(in.v); free(in.logDecay); free(in.beta); free(S); free(scratch);
    for (v = 0; v < 5; v++) free(o[v]);
    return 0;
}

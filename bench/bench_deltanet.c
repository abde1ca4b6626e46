/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_deltanet.c: the two forms of Gated DeltaNet's delta rule on the
 * CPU, on one thread: the recurrence (llm/infer/delta_rule.c), which runs
 * token after token so that a prompt and its tokens one at a time agree to
 * the bit, and the chunked form (delta_chunk.c, glyd_llmParams'
 * chunkedPrompts), which turns a block of 16 tokens into products of
 * 16 x 128 and 128 x 128 matrices and a triangular solve, and rounds
 * otherwise. Each on the portable code and the widest kernel (AVX2 and
 * FMA), checked against the portable recurrence, then timed:
 * nanoseconds a token and value head, Qwen3.5-9B's heads (32 value heads
 * of 128 x 128), best of R runs taken in turns.
 *
 *   build/bench_deltanet [--tokens T] [--rounds R]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/tensor/tensor.h"
#include "../llm/infer/infer.h"
#include "bench_util.h"

enum { DK = 128, DV = 128, HEADS = 32, FORMS = 4 };

/* uniform in (-1, 1] */
static float uniform(uint64_t* s) { return (float)(2.0 * bench_uniform(s) - 1.0); }

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

static void chunked(float* S, const inputs* in, float* o, float* work)
{
    unsigned h;
    for (h = 0; h < HEADS; h++) {
        size_t const T = in->T;
        glyd_deltaTokens const x = { in->q + h * T * DK, in->k + h * T * DK, DK, in->v + h * T * DV, DV,
                                     in->logDecay + h * T, in->beta + h * T, 1, o + h * T * DV, DV };
        glyd_deltaRuleChunked(S + (size_t)h * DK * DV, &x, T, DK, DV, work);
    }
}

int main(int argc, char** argv)
{
    static const char* const kNames[FORMS] = { "recurrence, portable", "recurrence, widest kernel",
                                               "chunked, portable", "chunked, widest kernel" };
    inputs in;
    size_t T = 64, n, i, t;
    int rounds = 20, a, r, v;
    uint64_t seed = 1;
    double best[FORMS] = { 1e30, 1e30, 1e30, 1e30 };
    float *S, *o[FORMS], *work;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--tokens") && a + 1 < argc) T = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
        else { fprintf(stderr, "usage: bench_deltanet [--tokens T] [--rounds R]\n"); return 2; }
    }
    if (T == 0 || rounds < 1) { fprintf(stderr, "usage: bench_deltanet [--tokens T] [--rounds R]\n"); return 2; }
    in.T = T;
    n = HEADS * T;
    in.q = (float*)malloc(n * DK * sizeof(float));
    in.k = (float*)malloc(n * DK * sizeof(float));
    in.v = (float*)malloc(n * DV * sizeof(float));
    in.logDecay = (float*)malloc(n * sizeof(float));
    in.beta = (float*)malloc(n * sizeof(float));
    S = (float*)malloc((size_t)HEADS * DK * DV * sizeof(float));
    work = (float*)malloc(glyd_deltaChunkWork(DK, DV) * sizeof(float));
    for (v = 0; v < FORMS; v++) o[v] = (float*)malloc(n * DV * sizeof(float));
    if (!in.q || !in.k || !in.v || !in.logDecay || !in.beta || !S || !work || !o[0] || !o[1] || !o[2] || !o[3])
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
    for (r = 0; r < rounds; r++)
        for (v = 0; v < FORMS; v++) {
            double t0;
            memset(S, 0, (size_t)HEADS * DK * DV * sizeof(float));
            glyd_tensorSimdLimit(v % 2 ? GLYD_SIMD_BEST : GLYD_SIMD_NONE);
            t0 = bench_now_s();
            if (v < 2) recurrence(S, &in, o[v], work);
            else chunked(S, &in, o[v], work);
            best[v] = fmin(best[v], bench_now_s() - t0);
        }
    for (v = 1; v < FORMS; v++) {
        double worst = 0, scale = 0;
        for (i = 0; i < n * DV; i++) {
            worst = fmax(worst, fabs((double)o[v][i] - o[0][i]));
            scale = fmax(scale, fabs((double)o[0][i]));
        }
        if (!(worst <= 1e-5 * scale)) {
            fprintf(stderr, "bench_deltanet: %s is %g from the recurrence (outputs up to %g)\n", kNames[v], worst,
                    scale);
            return 1;
        }
    }
    printf("delta rule, %d value heads of %d x %d, %zu tokens, one thread (ns a token and head)\n", HEADS, DK, DV, T);
    for (v = 0; v < FORMS; v++)
        printf("  %-27s %8.1f   %.2fx the portable recurrence\n", kNames[v], best[v] * 1e9 / (double)n,
               best[0] / best[v]);
    printf("  chunked / recurrence, widest kernels: %.2fx\n", best[1] / best[3]);
    free(in.q); free(in.k); free(in.v); free(in.logDecay); free(in.beta); free(S); free(work);
    for (v = 0; v < FORMS; v++) free(o[v]);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_tiles.c: the engine's prompt kernel (llm/infer/tiles.c) on one
 * thread, in GFLOP/s: a block of bf16 rows times a batch of fp32 vectors at
 * each SIMD level this CPU has, beside the core's FMA peak and, where the
 * CPU has AVX512_BF16, the products in bf16 pairs that prompts take when
 * asked (llm/infer/tiles_bf16.c: the vectors rounded to bf16, as
 * llama.cpp's native build does) and the error that rounding costs. Best of
 * R runs taken in turns.
 *
 *   build/bench_tiles [ROWS COLS] [--vectors N] [--rounds R]
 *
 * The defaults (64 rows of 896, 32 vectors: Qwen2.5-0.5B's widths, the
 * engine's batch) keep the rows in L2, so the figures are the kernels'.
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
#  error "bench_tiles measures x86-64 kernels"
#endif

/* Seconds for `iters` runs of twelve independent chains of FMAs (8 lanes). */
__attribute__((target("avx2,fma"), noinline))
static double fma_peak_seconds(long iters)
{
    __m256 const b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2), a3 = _mm256_set1_ps(3);
    __m256 a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5), a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7);
    __m256 a8 = _mm256_set1_ps(8), a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
    float sink[8];
    double const t0 = bench_now_s();
    long n;
    for (n = 0; n < iters; n++) {
        a0 = _mm256_fmadd_ps(a0, b, c); a1 = _mm256_fmadd_ps(a1, b, c); a2 = _mm256_fmadd_ps(a2, b, c);
        a3 = _mm256_fmadd_ps(a3, b, c); a4 = _mm256_fmadd_ps(a4, b, c); a5 = _mm256_fmadd_ps(a5, b, c);
        a6 = _mm256_fmadd_ps(a6, b, c); a7 = _mm256_fmadd_ps(a7, b, c); a8 = _mm256_fmadd_ps(a8, b, c);
        a9 = _mm256_fmadd_ps(a9, b, c); a10 = _mm256_fmadd_ps(a10, b, c); a11 = _mm256_fmadd_ps(a11, b, c);
    }
    {
        double const t = bench_now_s() - t0;
        __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
        s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
        _mm256_storeu_ps(sink, s);
        if (sink[0] == 42.0f) puts(""); /* keeps the chains */
        return t;
    }
}

int main(int argc, char** argv)
{
    static const int kLevels[2] = { GLYD_SIMD_AVX2, GLYD_SIMD_AVX512 };
    static const char* const kNames[2] = { "tiles, AVX2", "tiles, AVX-512" };
    size_t rows = 64, cols = 896, nbVec = 32, i, v;
    int rounds = 15, a, nb = 0, r, k, have[3];
    uint64_t s = 1;
    double best[3] = { 1e30, 1e30, 1e30 }, peak, flops;
    uint16_t *w, *xb;
    float *x, *xd, *y, *yb;
    long const reps = 300;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--vectors") && a + 1 < argc) nbVec = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
        else if (argv[a][0] != '-' && nb < 2) { if (nb++ == 0) rows = strtoull(argv[a], NULL, 10); else cols = strtoull(argv[a], NULL, 10); }
        else { fprintf(stderr, "usage: bench_tiles [ROWS COLS] [--vectors N] [--rounds R]\n"); return 2; }
    }
    if (!rows || rows % 4 || !cols || cols % 32 || nbVec < 4 || nbVec > GLYD_BATCH || nbVec % 4 || rounds < 1) {
        fprintf(stderr, "bench_tiles: rows a multiple of 4, cols of 32, vectors a multiple of 4 up to %d\n", GLYD_BATCH);
        return 2;
    }
    w = (uint16_t*)malloc(rows * cols * 2);
    xb = (uint16_t*)malloc(nbVec * cols * 2);
    x = (float*)malloc(nbVec * cols * sizeof(float));
    /* on cache lines, as the engine keeps it */
    xd = (float*)aligned_alloc(64, (nbVec * cols * sizeof(float) + 63) / 64 * 64);
    y = (float*)malloc(nbVec * rows * sizeof(float));
    yb = (float*)malloc(nbVec * rows * sizeof(float));
    if (!w || !xb || !x || !xd || !y || !yb) return 1;
    /* weights of a trained model's spread (N(0, 0.02) in bf16), activations of unit scale */
    for (i = 0; i < rows * cols; i++) {
        double const u1 = bench_uniform(&s), u2 = bench_uniform(&s);
        w[i] = bench_to_bf16((float)(0.02 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
    }
    for (i = 0; i < nbVec * cols; i++) {
        x[i] = (float)(2.0 * bench_uniform(&s) - 1.0);
    }
    glyd_bf16FromFloats(xb, x, nbVec * cols);
    /* the tiles take x as the engine lays it out */
    for (v = 0; v < nbVec; v++) glyd_deinterleaveX(xd + v * cols, x + v * cols, cols, (uint32_t)cols);
    have[0] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    have[1] = have[0] && __builtin_cpu_supports("avx512f");
    have[2] = glyd_bf16PairsUsable();
    if (!have[0]) { fprintf(stderr, "bench_tiles: the tiles need AVX2 and FMA\n"); return 1; }
    peak = 1e30;
    for (r = 0; r < 5; r++) peak = fmin(peak, fma_peak_seconds(20000000L));
    for (r = 0; r < rounds; r++)
        for (k = 0; k < 3; k++) {
            double t0;
            long n;
            if (!have[k]) continue;
            if (k < 2) glyd_tensorSimdLimit(kLevels[k]);
            t0 = bench_now_s();
            for (n = 0; n < reps; n++) {
                if (k < 2) {
                    if (!glyd_tileTimesBatch(w, rows, cols, (uint32_t)cols, xd, nbVec, y, rows)) return 1;
                } else {
                    glyd_bf16PairsTimesBatch(w, rows, cols, xb, nbVec, yb, rows);
                }
            }
            best[k] = fmin(best[k], bench_now_s() - t0);
        }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    flops = 2.0 * (double)rows * (double)cols * (double)nbVec * (double)reps;
    printf("%zu rows of %zu times %zu vectors, one thread (GFLOP/s)\n", rows, cols, nbVec);
    printf("  FMA peak (12 chains of 8 lanes)  %6.1f\n", 20000000.0 * 12 * 16 / peak / 1e9);
    for (k = 0; k < 2; k++)
        if (have[k]) printf("  %-32s %6.1f\n", kNames[k], flops / best[k] / 1e9);
    if (have[2]) {
        /* what rounding x to bf16 costs, against the fp32 products (y
         * holds the last level's) */
        double worst = 0, scale = 0;
        for (v = 0; v < nbVec; v++)
            for (i = 0; i < rows; i++) {
                worst = fmax(worst, fabs((double)yb[v * rows + i] - y[v * rows + i]));
                scale = fmax(scale, fabs((double)y[v * rows + i]));
            }
        printf("  %-32s %6.1f   (largest difference %.2g of the largest output)\n", "bf16 pairs, AVX512_BF16",
               flops / best[2] / 1e9, worst / scale);
    } else {
        printf("  bf16 pairs: this CPU has no AVX512_BF16\n");
    }
    free(w); free(xb); free(x); free(xd); free(y); free(yb);
    return 0;
}

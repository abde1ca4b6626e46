/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_fused.c: the products that decode in registers (llm/infer/fused.c)
 * on one thread, 3-bit against 4-bit fast codes, and 3-bit codes in bf16
 * pairs (glyd_llmParams.bf16Decode) where the CPU has them: nanoseconds a
 * group of 32 weights, best of R runs taken in turns.
 *
 *   build/bench_fused [ROWS COLS] [--rounds R] [--avx2]
 *
 * The matrix (4864 x 896 by default, Qwen2.5-0.5B's down projection
 * transposed: 6 MB coded, in L3) holds weights drawn from N(0, 0.02) and
 * rounded to bf16, whose exponents spread as trained weights' do. --avx2
 * keeps the kernels to AVX2, as on a CPU without AVX-512.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../llm/infer/infer.h"
#include "../lib/tensor/tensor.h"
#include "bench_util.h"

int main(int argc, char** argv)
{
    static const unsigned kCodes[2] = { GLYD_TENSOR_FAST_CODES, GLYD_TENSOR_NIBBLE_CODES };
    uint64_t rows = 4864, cols = 896, i, s = 1;
    int rounds = 20, avx2 = 0, a, nb = 0, k, r;
    glyd_matrix m[2];
    double best[3] = { 1e30, 1e30, 1e30 };
    uint16_t *w, *xp;
    float *xd, *y;
    int pairs;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--avx2")) avx2 = 1;
        else if (argv[a][0] != '-' && nb < 2) { if (nb++ == 0) rows = strtoull(argv[a], NULL, 10); else cols = strtoull(argv[a], NULL, 10); }
        else { fprintf(stderr, "usage: bench_fused [ROWS COLS] [--rounds R] [--avx2]\n"); return 2; }
    }
    if (!rows || !cols || cols % 32 || rounds < 1) { fprintf(stderr, "bench_fused: COLS a multiple of 32\n"); return 2; }
    w = (uint16_t*)malloc((size_t)(rows * cols) * 2);
    xd = (float*)aligned_alloc(64, ((size_t)cols * sizeof(float) + 63) / 64 * 64);
    y = (float*)malloc((size_t)rows * sizeof(float));
    xp = (uint16_t*)malloc((size_t)glyd_bf16PairOrderSize(cols, (uint32_t)cols) * 2);
    if (!w || !xd || !y || !xp) return 1;
    for (i = 0; i < rows * cols; i++) {
        double const u1 = bench_uniform(&s), u2 = bench_uniform(&s);
        w[i] = bench_to_bf16((float)(0.02 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
    }
    for (i = 0; i < cols; i++) xd[i] = (float)((int)(i * 7 % 13) - 6) / 8.0f;
    if (avx2) glyd_tensorSimdLimit(GLYD_SIMD_AVX2);
    for (k = 0; k < 2; k++) {
        if (glyd_isError(glyd_matrixEncodeFast(&m[k], w, rows, cols, kCodes[k], NULL, NULL)) || !glyd_fusedFits(&m[k])) {
            fprintf(stderr, "bench_fused: no fused product for %u codes on this CPU\n", kCodes[k]);
            return 1;
        }
    }
    glyd_bf16PairOrder(xp, xd, cols, (uint32_t)cols);
    pairs = glyd_fusedPairsFits(&m[0]);
    for (r = 0; r < rounds; r++)
        for (k = 0; k < 2 + pairs; k++) {
            double const t0 = bench_now_s();
            if (glyd_isError(k < 2 ? glyd_fusedRows(&m[k], xd, y, 0, rows) : glyd_fusedRowsPairs(&m[0], xp, y, 0, rows)))
                return 1;
            best[k] = fmin(best[k], bench_now_s() - t0);
        }
    printf("## Fused products: %llu x %llu, one thread, %s, best of %d\n\n", (unsigned long long)rows,
           (unsigned long long)cols, avx2 ? "kept to AVX2" : "the CPU's widest kernels", rounds);
    printf("| codes | ns a group of 32 | coded bytes a weight |\n| --- | ---: | ---: |\n");
    for (k = 0; k < 2 + pairs; k++)
        printf("| %s | %.3f | %.3f |\n", k == 0 ? "3-bit" : k == 1 ? "4-bit" : "3-bit, bf16 pairs",
               best[k] * 1e9 / (double)(rows * cols / 32), (double)glyd_matrixBytes(&m[k % 2]) / (double)(rows * cols));
    printf("\n4-bit / 3-bit time: %.3f\n", best[1] / best[0]);
    if (pairs) printf("3-bit in bf16 pairs / in fp32: %.3f\n", best[2] / best[0]);
    for (k = 0; k < 2; k++) glyd_matrixFree(&m[k]);
    free(xp);
    free(w);
    free(xd);
    free(y);
    return 0;
}

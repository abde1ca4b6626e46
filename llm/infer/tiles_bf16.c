/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tiles_bf16.c: a block of bf16 rows times a batch of vectors rounded to
 * bf16, with AVX512_BF16's pair products (VDPBF16PS: sixteen lanes each
 * add w[2i] x[2i] + w[2i+1] x[2i+1] to an fp32 sum), the arithmetic of
 * llama.cpp's bf16 products on such CPUs. A pair product does the work of
 * two FMAs in one instruction, and the weights need no widening, so a
 * prompt's products run about twice as fast as tiles.c's fp32 ones; but
 * the vectors lose their low 16 bits, so the engine runs this only when
 * asked (glyd_llmParams.bf16Prompts), and decoding a token at a time stays
 * in fp32.
 *
 * Each (row, vector) pair's sum runs over the row in one order whatever
 * the batch, the rows' form or the threads, so coded and plain weights
 * still give the same bits.
 */
#include <string.h>

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define PAIRS_X86 1
#else
#  define PAIRS_X86 0
#endif

int glyd_bf16PairsUsable(void)
{
#if PAIRS_X86
    return glyd_tensorSimdLimitGet() >= GLYD_SIMD_AVX512 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

#if PAIRS_X86
#  define BF16_FN __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* Rows per step, and vectors: 4 x 6 sums, 4 rows and one vector in the
 * 32 registers. */
enum { ROWS = 4, VECTORS = 6 };

static BF16_FN void to_bf16(uint16_t* xb, const float* x, size_t n)
{
    size_t i;
    for (i = 0; i + 32 <= n; i += 32) {
        __m512bh const b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512((void*)(xb + i), (__m512i)b);
    }
    if (i < n) {
        size_t const left = n - i;
        __mmask16 const lo = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1);
        __mmask16 const hi = (__mmask16)(left <= 16 ? 0 : (1u << (left - 16)) - 1);
        __m512bh const b = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + i + 16), _mm512_maskz_loadu_ps(lo, x + i));
        _mm512_mask_storeu_epi16(xb + i, (__mmask32)((1ull << left) - 1), (__m512i)b);
    }
}

/* nbRows (<= ROWS) rows `cols` apart times V (<= VECTORS) vectors of xb
 * (cols apart): y[v * yStride + k]. The row's last cols % 32 elements come
 * in through a masked load (zeros past the end). */
static inline __attribute__((always_inline)) BF16_FN void step(const uint16_t* w, uint64_t cols, unsigned nbRows,
                                                             const uint16_t* xb, unsigned V, float* y,
                                                             uint64_t yStride)
{
    __m512 a[ROWS][VECTORS];
    __mmask32 const tail = (__mmask32)((1ull << (cols % 32)) - 1);
    uint64_t i;
    unsigned k, v;
    for (k = 0; k < nbRows; k++)
        for (v = 0; v < V; v++) a[k][v] = _mm512_setzero_ps();
    for (i = 0; i + 32 <= cols; i += 32) {
        __m512i wk[ROWS];
        for (k = 0; k < nbRows; k++) wk[k] = _mm512_loadu_si512((const void*)(w + k * cols + i));
        for (v = 0; v < V; v++) {
            __m512bh const xv = (__m512bh)_mm512_loadu_si512((const void*)(xb + v * cols + i));
            for (k = 0; k < nbRows; k++) a[k][v] = _mm512_dpbf16_ps(a[k][v], (__m512bh)wk[k], xv);
        }
    }
    if (tail) {
        __m512i wk[ROWS];
        for (k = 0; k < nbRows; k++) wk[k] = _mm512_maskz_loadu_epi16(tail, w + k * cols + i);
        for (v = 0; v < V; v++) {
            __m512bh const xv = (__m512bh)_mm512_maskz_loadu_epi16(tail, xb + v * cols + i);
            for (k = 0; k < nbRows; k++) a[k][v] = _mm512_dpbf16_ps(a[k][v], (__m512bh)wk[k], xv);
        }
    }
    for (k = 0; k < nbRows; k++)
        for (v = 0; v < V; v++) y[v * yStride + k] = _mm512_reduce_add_ps(a[k][v]);
}

/* ROWS rows (or nbRows, the last few) times every vector, VECTORS at a time */
static inline __attribute__((always_inline)) BF16_FN void rows_times_batch(const uint16_t* w, uint64_t cols,
                                                                         unsigned nbRows, const uint16_t* xb,
                                                                         size_t nbVec, float* y, uint64_t yStride)
{
    size_t v0;
    for (v0 = 0; v0 < nbVec; v0 += VECTORS) {
        const uint16_t* const x = xb + v0 * cols;
        float* const out = y + v0 * yStride;
        switch (GLYD_MIN((size_t)VECTORS, nbVec - v0)) {
        case 6: step(w, cols, nbRows, x, 6, out, yStride); break;
        case 5: step(w, cols, nbRows, x, 5, out, yStride); break;
        case 4: step(w, cols, nbRows, x, 4, out, yStride); break;
        case 3: step(w, cols, nbRows, x, 3, out, yStride); break;
        case 2: step(w, cols, nbRows, x, 2, out, yStride); break;
        default: step(w, cols, nbRows, x, 1, out, yStride); break;
        }
    }
}

static BF16_FN void times_batch(const uint16_t* block, uint64_t nbRows, uint64_t cols, const uint16_t* xb,
                                size_t nbVec, float* y, uint64_t yStride)
{
    uint64_t r;
    for (r = 0; r + ROWS <= nbRows; r += ROWS) rows_times_batch(block + r * cols, cols, ROWS, xb, nbVec, y + r, yStride);
    switch (nbRows - r) {
    case 3: rows_times_batch(block + r * cols, cols, 3, xb, nbVec, y + r, yStride); break;
    case 2: rows_times_batch(block + r * cols, cols, 2, xb, nbVec, y + r, yStride); break;
    case 1: rows_times_batch(block + r * cols, cols, 1, xb, nbVec, y + r, yStride); break;
    default: break;
    }
}
#endif

void glyd_bf16FromFloats(uint16_t* xb, const float* x, size_t n)
{
    size_t i;
#if PAIRS_X86
    if (glyd_bf16PairsUsable()) {
        to_bf16(xb, x, n);
        return;
    }
#endif
    for (i = 0; i < n; i++) xb[i] = glyd_f32ToBf16(x[i]);
}

int glyd_bf16PairsTimesBatch(const uint16_t* block, uint64_t nbRows, uint64_t cols, const uint16_t* xb, size_t nbVec,
                             float* y, uint64_t yStride)
{
#if PAIRS_X86
    if (!glyd_bf16PairsUsable()) return 0;
    times_batch(block, nbRows, cols, xb, nbVec, y, yStride);
    return 1;
#else
    (void)block; (void)nbRows; (void)cols; (void)xb; (void)nbVec; (void)y; (void)yStride;
    return 0;
#endif
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bf16_dot.c: bf16_rows_times_vectors (bf16_dot.h). VDPBF16PS multiplies
 * 32 pairs of bf16 values and adds them, two by two, into 16 fp32 lanes.
 * Four rows are taken at a time against one vector, four independent sums
 * in flight; a row's sum is its lanes added by a fixed tree.
 */
#include "bf16_dot.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define HAVE_BF16_DOT 1
#else
#  define HAVE_BF16_DOT 0
#endif

#if HAVE_BF16_DOT

int bf16_dot_available(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

#define DOT_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

DOT_TARGET static inline __m512bh load32(const uint16_t* p)
{
    return (__m512bh)_mm512_loadu_si512((const void*)p);
}

DOT_TARGET static inline __m512bh load_tail(const uint16_t* p, __mmask32 m)
{
    return (__m512bh)_mm512_maskz_loadu_epi16(m, (const void*)p);
}

/* Four rows, `cols` apart, against one vector. */
DOT_TARGET static void four_rows(const uint16_t* w, size_t cols, const uint16_t* x, float out[4])
{
    size_t const full = cols & ~(size_t)31;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    size_t c;
    for (c = 0; c < full; c += 32) {
        __m512bh const xv = load32(x + c);
        a0 = _mm512_dpbf16_ps(a0, load32(w + c), xv);
        a1 = _mm512_dpbf16_ps(a1, load32(w + cols + c), xv);
        a2 = _mm512_dpbf16_ps(a2, load32(w + 2 * cols + c), xv);
        a3 = _mm512_dpbf16_ps(a3, load32(w + 3 * cols + c), xv);
    }
    if (c < cols) {
        __mmask32 const m = (__mmask32)((1u << (cols - c)) - 1u);
        __m512bh const xv = load_tail(x + c, m);
        a0 = _mm512_dpbf16_ps(a0, load_tail(w + c, m), xv);
        a1 = _mm512_dpbf16_ps(a1, load_tail(w + cols + c, m), xv);
        a2 = _mm512_dpbf16_ps(a2, load_tail(w + 2 * cols + c, m), xv);
        a3 = _mm512_dpbf16_ps(a3, load_tail(w + 3 * cols + c, m), xv);
    }
    out[0] = _mm512_reduce_add_ps(a0);
    out[1] = _mm512_reduce_add_ps(a1);
    out[2] = _mm512_reduce_add_ps(a2);
    out[3] = _mm512_reduce_add_ps(a3);
}

/* One row against one vector, summed as four_rows sums each of its rows. */
DOT_TARGET static float one_row(const uint16_t* w, size_t cols, const uint16_t* x)
{
    size_t const full = cols & ~(size_t)31;
    __m512 a = _mm512_setzero_ps();
    size_t c;
    for (c = 0; c < full; c += 32) a = _mm512_dpbf16_ps(a, load32(w + c), load32(x + c));
    if (c < cols) {
        __mmask32 const m = (__mmask32)((1u << (cols - c)) - 1u);
        a = _mm512_dpbf16_ps(a, load_tail(w + c, m), load_tail(x + c, m));
    }
    return _mm512_reduce_add_ps(a);
}

DOT_TARGET void bf16_rows_times_vectors(const uint16_t* w, size_t nbRows, size_t cols, const uint16_t* x,
                                        size_t nbVec, float* y, size_t yStride)
{
    size_t r = 0, t;
    for (; r + 4 <= nbRows; r += 4)
        for (t = 0; t < nbVec; t++) {
            float out[4];
            four_rows(w + r * cols, cols, x + t * cols, out);
            y[t * yStride + r] = out[0];
            y[t * yStride + r + 1] = out[1];
            y[t * yStride + r + 2] = out[2];
            y[t * yStride + r + 3] = out[3];
        }
    for (; r < nbRows; r++)
        for (t = 0; t < nbVec; t++) y[t * yStride + r] = one_row(w + r * cols, cols, x + t * cols);
}

#else

int bf16_dot_available(void) { return 0; }

void bf16_rows_times_vectors(const uint16_t* w, size_t nbRows, size_t cols, const uint16_t* x, size_t nbVec,
                             float* y, size_t yStride)
{
    (void)w; (void)nbRows; (void)cols; (void)x; (void)nbVec; (void)y; (void)yStride;
}

#endif

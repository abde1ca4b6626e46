/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vexp.c: e^x over arrays, for SiLU and the softmax of attention, eight
 * lanes at a time where AVX2 and FMA are (libm's expf, one element at a
 * time, took a tenth of a prompt's time). With x = n ln2 + r, |r| <= ln2/2
 * (ln2 in two parts, so that r is exact), e^r is Cephes' polynomial of
 * degree 7 (within 2 ulp of e^x) and 2^n is applied in two halves, so that
 * large x overflow to infinity and small ones underflow through the
 * subnormals as libm's do; NaN stays NaN.
 *
 * Every element goes through the same arithmetic, the last few of an array
 * padded to a full register, so that an element's result does not depend
 * on where it sits: a batch of tokens and the same tokens one at a time
 * still agree to the bit. Without AVX2 (or below glyd_tensorSimdLimit's
 * GLYD_SIMD_AVX2) the same steps run one element at a time, fmaf where the
 * vectors fuse, so every path gives the same bits, as the products do.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define VEXP_SIMD 1
#else
#  define VEXP_SIMD 0
#endif

/* The reduction's constants: ln2 = LN2_HI + LN2_LO, LN2_HI exact in 9
 * bits so that n LN2_HI is exact; then Cephes' coefficients of
 * (e^r - 1 - r) / r^2. */
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f
/* past these, e^x is 0 or infinite whatever the rounding */
#define X_LOW -104.0f
#define X_HIGH 89.0f

/* 2^k for k in [-126, 127] */
static inline float pow2(int k)
{
    uint32_t const bits = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* e^x, exp8's steps one lane at a time */
static float exp1(float x)
{
    float const c = fminf(fmaxf(x, X_LOW), X_HIGH); /* NaN becomes X_LOW, as with max_ps */
    float const n = rintf(c * LOG2E);
    float const r = fmaf(-n, LN2_LO, fmaf(-n, LN2_HI, c));
    int const ni = (int)n, n1 = ni >> 1, n2 = ni - n1;
    float p = P0, y;
    p = fmaf(p, r, P1);
    p = fmaf(p, r, P2);
    p = fmaf(p, r, P3);
    p = fmaf(p, r, P4);
    p = fmaf(p, r, P5);
    y = fmaf(p, r * r, r) + 1.0f;
    y = y * pow2(n1);
    y = y * pow2(n2);
    return isnan(x) ? x : y;
}

#if VEXP_SIMD
#  define AVX2_FN __attribute__((target("avx2,fma")))

/* e^x, eight lanes */
static inline __attribute__((always_inline)) AVX2_FN __m256 exp8(__m256 x)
{
    __m256 const lo = _mm256_set1_ps(X_LOW), hi = _mm256_set1_ps(X_HIGH);
    __m256 const c = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 const n = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* r = c - n ln2 */
    __m256 const r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), c));
    __m256 p = _mm256_set1_ps(P0);
    __m256i const ni = _mm256_cvtps_epi32(n);
    __m256i const n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256i const bias = _mm256_set1_epi32(127);
    __m256 y;
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(P5));
    y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    /* 2^n as 2^n1 2^n2, each a normal number for n in [-150, 129] */
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23)));
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23)));
    /* NaN in, NaN out (min and max turned it into a bound) */
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* up to 8 floats into a register, the rest zeros, and back */
static inline __attribute__((always_inline)) AVX2_FN __m256 load_tail(const float* p, size_t n)
{
    float buf[8] = { 0 };
    memcpy(buf, p, n * sizeof(float));
    return _mm256_loadu_ps(buf);
}

static inline __attribute__((always_inline)) AVX2_FN void store_tail(float* p, __m256 v, size_t n)
{
    float buf[8];
    _mm256_storeu_ps(buf, v);
    memcpy(p, buf, n * sizeof(float));
}

static AVX2_FN void exp_shifted_avx2(float* x, size_t n, float shift)
{
    __m256 const s = _mm256_set1_ps(shift);
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s)));
    if (i < n) store_tail(x + i, exp8(_mm256_sub_ps(load_tail(x + i, n - i), s)), n - i);
}

/* g / (1 + e^-g) u, as gk_swiglu writes it (and glyd_swiglu one at a time) */
static inline __attribute__((always_inline)) AVX2_FN __m256 swiglu8(__m256 g, __m256 u)
{
    __m256 const e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

static AVX2_FN void swiglu_avx2(float* gate, const float* up, size_t n)
{
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(gate + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) store_tail(gate + i, swiglu8(load_tail(gate + i, n - i), load_tail(up + i, n - i)), n - i);
}
#endif

void glyd_expShifted(float* x, size_t n, float shift)
{
    size_t i;
#if VEXP_SIMD
    if (glyd_avx2FmaUsable()) {
        exp_shifted_avx2(x, n, shift);
        return;
    }
#endif
    for (i = 0; i < n; i++) x[i] = exp1(x[i] - shift);
}

void glyd_swiglu(float* gate, const float* up, size_t n)
{
    size_t i;
#if VEXP_SIMD
    if (glyd_avx2FmaUsable()) {
        swiglu_avx2(gate, up, n);
        return;
    }
#endif
    for (i = 0; i < n; i++) gate[i] = gate[i] / (1.0f + exp1(-gate[i])) * up[i];
}

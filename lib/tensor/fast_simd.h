/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fast_simd.h: reading the fast layout's codes (3-bit or 4-bit) with AVX2,
 * shared by the tensor decoder and the engine's products that decode in
 * registers.
 * Include only where TENSOR_FAST_AVX2 (x86-64, GCC or Clang) holds.
 */
#ifndef GLYD_FAST_SIMD_H
#define GLYD_FAST_SIMD_H

#include <immintrin.h>
#include <string.h>

#include "tensor.h"

/* The 3-bit codes of a group of 32 elements, one byte each. */
__attribute__((target("avx2")))
static inline __m256i fast_codes_avx2(const uint8_t* group)
{
    __m256i const spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    __m256i const bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i const one = _mm256_set1_epi8(1);
    __m256i c = _mm256_setzero_si256();
    int k;
    /* each plane's bit of element j is bit j % 8 of byte j / 8: spread the
     * bytes, keep each lane's bit, clamp it to 1; the planes in from the top */
    for (k = 2; k >= 0; k--) {
        __m256i const w = _mm256_shuffle_epi8(_mm256_set1_epi32((int)glyd_read32(group + 4 * k)), spread);
        c = _mm256_add_epi8(_mm256_add_epi8(c, c), _mm256_min_epu8(_mm256_and_si256(w, bits), one));
    }
    return c;
}

/* The 4-bit codes of a group of 32 elements, one byte each, in the order
 * elements 0-7, 16-23, 8-15, 24-31 (glyd_nibbleByte): the low 128-bit lane
 * takes the 16 bytes' low halves, the high lane their high halves. */
__attribute__((target("avx2"), always_inline))
static inline __m256i fast_nibbles_avx2(const uint8_t* group)
{
    __m256i const both = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)group));
    return _mm256_and_si256(_mm256_blend_epi32(both, _mm256_srli_epi16(both, 4), 0xF0), _mm256_set1_epi8(15));
}

/* Group g's codes, of either width, in element order. */
__attribute__((target("avx2")))
static inline __m256i fast_group_codes_avx2(const glyd_tensorView* v, uint64_t g)
{
    if (v->fastCodes == GLYD_TENSOR_NIBBLE_CODES)
        return _mm256_permute4x64_epi64(fast_nibbles_avx2(v->codePlanes + g * 16), 0xD8);
    return fast_codes_avx2(v->codePlanes + g * 12);
}

/* Code -> exponent, in both 128-bit lanes; the escape code gives 0. */
__attribute__((target("avx2")))
static inline __m256i fast_lut_avx2(const glyd_tensorView* v)
{
    uint8_t lut16[16];
    memset(lut16, 0, sizeof lut16);
    memcpy(lut16, v->fastSymbols, v->fastCodes);
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)lut16));
}

/* 32 elements as bf16 from their exponents e and sign-and-mantissa bytes
 * raw (element order, m80: 0x80 in every byte): elements 0-15 in *first,
 * 16-31 in *last, two to a 32-bit lane. */
__attribute__((target("avx2"), always_inline))
static inline void fast_bf16_avx2(__m256i e, __m256i raw, __m256i m80, __m256i* first, __m256i* last)
{
    /* high byte: sign, exponent's top 7 bits; low byte: exponent's low bit, mantissa */
    __m256i hi = _mm256_or_si256(_mm256_and_si256(raw, m80), _mm256_andnot_si256(m80, _mm256_srli_epi16(e, 1)));
    __m256i lo = _mm256_or_si256(_mm256_andnot_si256(m80, raw), _mm256_and_si256(m80, _mm256_slli_epi16(e, 7)));
    /* unpacking works within 128-bit lanes: elements 0-7 and 8-15 side by side first */
    hi = _mm256_permute4x64_epi64(hi, 0xD8);
    lo = _mm256_permute4x64_epi64(lo, 0xD8);
    *first = _mm256_unpacklo_epi8(lo, hi);
    *last = _mm256_unpackhi_epi8(lo, hi);
}

#endif /* GLYD_FAST_SIMD_H */

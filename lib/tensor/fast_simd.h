/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fast_simd.h: reading the fast layout's codes with AVX2, shared by the
 * tensor decoder and the engine's products that decode in registers.
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

/* Code -> exponent, in both 128-bit lanes; code 7 (escape) gives 0. */
__attribute__((target("avx2")))
static inline __m256i fast_lut_avx2(const glyd_tensorView* v)
{
    uint8_t lut16[16];
    memset(lut16, 0, sizeof lut16);
    memcpy(lut16, v->fastSymbols, GLYD_TENSOR_FAST_CODES);
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)lut16));
}

#endif /* GLYD_FAST_SIMD_H */

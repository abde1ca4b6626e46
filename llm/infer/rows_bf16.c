/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rows_bf16.c: bf16 rows times one vector rounded to bf16, in bf16 pairs
 * (AVX512_BF16), the arithmetic of llama.cpp's bf16 products on such CPUs,
 * for a token's products when asked (glyd_llmParams.bf16Decode). One pair
 * product does the work of two FMAs, and the weights need no widening into
 * fp32 lanes. The rows are plain weights, or coded ones decoded into a
 * buffer; fused.c decodes the fast layout's in registers and sums in the
 * same order (pairs.h), so the two give the same bits.
 */
#include "pairs.h"

uint64_t glyd_bf16PairOrderSize(uint64_t cols, uint32_t chunk)
{
    return (cols + chunk - 1) / chunk * glyd_pairsPieceStride(chunk);
}

void glyd_bf16PairOrder(uint16_t* xp, const float* x, uint64_t cols, uint32_t chunk)
{
    uint64_t const stride = glyd_pairsPieceStride(chunk);
    uint64_t p, i;
    for (p = 0; p < cols; p += chunk, xp += stride) {
        uint64_t const n = GLYD_MIN((uint64_t)chunk, cols - p);
        for (i = 0; i < stride; i++) {
            /* slot i: step i % 64 / 32 of part i / 64, lane word i % 32 */
            uint64_t const e = i / 64 * 64 + 16 * (i % 32 / 8) + 8 * (i % 64 / 32) + i % 8;
            xp[i] = e < n ? glyd_f32ToBf16(x[p + e]) : 0;
        }
    }
}

#if PAIRS_X86
/* One piece of n elements of a row against its part of the laid-out
 * vector. */
__attribute__((target(PAIRS_TARGET))) static float piece_pairs(const uint16_t* w, const uint16_t* xp, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    size_t i;
    for (i = 0; i + 64 <= n; i += 64) {
        __m512i const w0 = _mm512_loadu_si512((const void*)(w + i)), w1 = _mm512_loadu_si512((const void*)(w + i + 32));
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_shuffle_i64x2(w0, w1, 0x88),
                              (__m512bh)_mm512_loadu_si512((const void*)(xp + i)));
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_shuffle_i64x2(w0, w1, 0xDD),
                              (__m512bh)_mm512_loadu_si512((const void*)(xp + i + 32)));
    }
    if (i < n) {
        size_t const m = n - i;
        __mmask32 const first = (__mmask32)(m >= 32 ? ~0u : (1u << m) - 1);
        __mmask32 const second = (__mmask32)(m <= 32 ? 0 : m == 64 ? ~0u : (1u << (m - 32)) - 1);
        __m512i const w0 = _mm512_maskz_loadu_epi16(first, w + i), w1 = _mm512_maskz_loadu_epi16(second, w + i + 32);
        a0 = _mm512_mask_dpbf16_ps(a0, pairs_reach(m, 0), (__m512bh)_mm512_shuffle_i64x2(w0, w1, 0x88),
                                   (__m512bh)_mm512_loadu_si512((const void*)(xp + i)));
        a1 = _mm512_mask_dpbf16_ps(a1, pairs_reach(m, 1), (__m512bh)_mm512_shuffle_i64x2(w0, w1, 0xDD),
                                   (__m512bh)_mm512_loadu_si512((const void*)(xp + i + 32)));
    }
    return pairs_close(a0, a1);
}
#endif

int glyd_bf16RowsTimesVector(const uint16_t* block, uint64_t nbRows, uint64_t cols, uint32_t chunk, const uint16_t* xp,
                             float* y)
{
#if PAIRS_X86
    uint64_t const stride = glyd_pairsPieceStride(chunk);
    uint64_t r, p, k;
    if (!glyd_bf16PairsUsable()) return 0;
    for (r = 0; r < nbRows; r++) {
        float sum = 0;
        for (p = 0, k = 0; p < cols; p += chunk, k++)
            sum += piece_pairs(block + r * cols + p, xp + k * stride, (size_t)GLYD_MIN((uint64_t)chunk, cols - p));
        y[r] = sum;
    }
    return 1;
#else
    (void)block; (void)nbRows; (void)cols; (void)chunk; (void)xp; (void)y;
    return 0;
#endif
}

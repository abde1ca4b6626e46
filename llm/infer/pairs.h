/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pairs.h: the order in which a token's products in bf16 pairs
 * (glyd_llmParams.bf16Decode) sum a row, shared by rows_bf16.c (bf16 rows,
 * plain or decoded into a buffer) and fused.c (decoded in registers), so
 * that coded and plain weights give the same bits.
 *
 * A row is summed in pieces of `chunk` elements, as the fp32 products do,
 * the pieces added in order from 0. A piece goes 64 elements at a time in
 * two steps of sixteen pairs: step 0 takes elements 16q + 0..7 and step 1
 * elements 16q + 8..15 (q = 0..3), pair j of a step in lane j. That is
 * what unpacking two registers of a group pair's low and high bytes within
 * their 128-bit lanes gives, and what two 128-bit shuffles make of 64 bf16
 * in order. Step 0 adds into one set of sixteen fp32 sums and step 1 into
 * another (VDPBF16PS); a piece's last 64 or fewer elements leave the lanes
 * they do not reach as they are. Then the two sets are added and their
 * lanes summed in a fixed tree (pairs_close). The vector is laid out in
 * that order once a product (glyd_bf16PairOrder), each piece from a
 * multiple of 64 and zero past its end, so a step loads it in one piece.
 */
#ifndef GLYD_INFER_PAIRS_H
#define GLYD_INFER_PAIRS_H

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define PAIRS_X86 1
#  define PAIRS_TARGET "avx512f,avx512bw,avx512bf16"

/* Lanes of step `step` that a part of m (1..64) elements reaches: those
 * whose pair starts before m. */
static inline __mmask16 pairs_reach(size_t m, unsigned step)
{
    unsigned mask = 0, lane;
    for (lane = 0; lane < 16; lane++)
        if (16 * (lane / 4) + 8 * step + 2 * (lane % 4) < m) mask |= 1u << lane;
    return (__mmask16)mask;
}

/* A piece's sum from its two sets of lane sums. */
__attribute__((target(PAIRS_TARGET), always_inline)) static inline float pairs_close(__m512 step0, __m512 step1)
{
    __m512 const a = _mm512_add_ps(step0, step1);
    __m256 const h = _mm256_add_ps(_mm512_castps512_ps256(a),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
#else
#  define PAIRS_X86 0
#endif

/* Elements from one piece of the laid-out vector to the next: `chunk`
 * rounded up to 64. */
static inline uint64_t glyd_pairsPieceStride(uint32_t chunk) { return ((uint64_t)chunk + 63) / 64 * 64; }

#endif

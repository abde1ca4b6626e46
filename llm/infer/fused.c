/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused.c: a matrix in the fast layout times one vector, decoded in
 * registers with AVX-512. Two groups of 32 elements at a time go from their
 * code words, escapes and sign-and-mantissa bytes to fp32 lanes and into
 * the row's sums without being stored, so that a token's products are one
 * pass over the coded bytes.
 *
 * The sums are weights.c's (see DOT_BLOCK there): sixteen lanes, element
 * 2j of each block of 16 into even lane j and 2j + 1 into odd lane j, one
 * fused multiply-add after another in block order, then even + odd and the
 * fixed tree; each piece of `chunk` elements so, pieces added in order. The
 * results are thus bit for bit those of decoding the units and multiplying
 * the rows, and those of the plain weights. Only pieces of whole groups (a
 * chunk that is a multiple of 32, as in every model seen) go this way.
 *
 * Without AVX-512 there is no fused path: escapes cannot be expanded into
 * their lanes in a register, and decoding units into a buffer and summing
 * four rows at a time from it (weights.c) measured faster than every AVX2
 * form tried (docs/ENGINE.md).
 */
#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include "../../lib/tensor/fast_simd.h"
#  define FUSED_AVX512 1
#else
#  define FUSED_AVX512 0
#endif

/* The planes of a unit are read ahead of use by this many elements: the
 * hardware prefetcher alone falls behind. */
#define FUSED_PREFETCH 2048

#if FUSED_AVX512
/* vpermt2b indexes from [64 low bytes | 64 high bytes] of two groups' bf16
 * elements to the fp32 lanes of each of their four blocks of 16: lane
 * j < 8 holds the block's element 2j, lane 8 + j its element 2j + 1, the
 * bf16 bits in the lane's top two bytes (index bit 6 picks the high
 * bytes; the bottom two bytes are zeroed by a mask). */
#  define LANE(e) 0, 0, (e), 64 + (e)
#  define BLOCK(f)                                                                                   \
      LANE(f + 0), LANE(f + 2), LANE(f + 4), LANE(f + 6), LANE(f + 8), LANE(f + 10), LANE(f + 12),   \
      LANE(f + 14), LANE(f + 1), LANE(f + 3), LANE(f + 5), LANE(f + 7), LANE(f + 9), LANE(f + 11),   \
      LANE(f + 13), LANE(f + 15)
static const uint8_t g_blockIndex[4][64] = { { BLOCK(0) }, { BLOCK(16) }, { BLOCK(32) }, { BLOCK(48) } };
#  undef BLOCK
#  undef LANE

/* vpermb indexes taking byte b of code word k of a group to byte 7 - k of
 * its qword b: the words at bytes 0-11 (first group) and 12-23 (second);
 * the other bytes are masked. */
#  define QWORD(w, b) 0, 0, 0, 0, 0, (w) + 8 + (b), (w) + 4 + (b), (w) + (b)
static const uint8_t g_codeGather[64] = { QWORD(0, 0),  QWORD(0, 1),  QWORD(0, 2),  QWORD(0, 3),
                                          QWORD(12, 0), QWORD(12, 1), QWORD(12, 2), QWORD(12, 3) };
#  undef QWORD

#  define AVX512_TARGET "avx2,bmi,bmi2,fma,avx512f,avx512vl,avx512bw,avx512vbmi,avx512vbmi2,gfni"

typedef struct {
    __m512i lut;          /* code -> exponent in each 128-bit lane; code 7 gives 0 */
    __m512i gather;       /* g_codeGather */
    __m512i index[4];     /* g_blockIndex */
} kernel_tables;

/* nb (1 or 2) groups from g on into acc: returns 0 when they need escapes
 * beyond escEnd. */
__attribute__((target(AVX512_TARGET), always_inline))
static inline int groups_avx512(const glyd_tensorView* v, uint64_t g, unsigned const nb, const float* xd,
                                uint64_t* esc, uint64_t escEnd, const kernel_tables* t, __m512* acc)
{
    const uint8_t* const planes = v->codePlanes + g * 12;
    const uint8_t* const raw = v->planes[0] + g * 32;
    __m512i const m80 = _mm512_set1_epi8((char)0x80);
    __mmask64 const topHalves = _cvtu64_mask64(0xCCCCCCCCCCCCCCCCULL);
    /* the code words' bytes gathered into the top of each qword, then each
     * qword's 8 x 8 bits transposed: byte j of qword b becomes the 3-bit
     * code of element 8b + j (absent words give code 0, not an escape) */
    __m512i const words = _mm512_castsi256_si512(_mm256_maskz_loadu_epi8(nb == 2 ? 0xFFFFFF : 0xFFF, planes));
    __m512i const c = _mm512_gf2p8affine_epi64_epi8(
        _mm512_set1_epi64((long long)0x8040201008040201ULL),
        _mm512_maskz_permutexvar_epi8(_cvtu64_mask64(0xE0E0E0E0E0E0E0E0ULL), t->gather, words), 0);
    __mmask64 const kEsc = _mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(7));
    uint64_t const nbEsc = (uint64_t)__builtin_popcountll(_cvtmask64_u64(kEsc));
    __m512i e, r, hi, lo;
    unsigned b;
    _mm_prefetch((const char*)raw + FUSED_PREFETCH, _MM_HINT_T0);
    _mm_prefetch((const char*)planes + FUSED_PREFETCH * 3 / 8, _MM_HINT_T0);
    if (nbEsc > escEnd - *esc) return 0;
    /* the table's exponents, the escapes expanded into their lanes */
    e = _mm512_mask_expand_epi8(_mm512_shuffle_epi8(t->lut, c), kEsc,
                                _mm512_maskz_loadu_epi8(_cvtu64_mask64(_bzhi_u64(~0ULL, (unsigned)nbEsc)),
                                                        v->escapes + *esc));
    *esc += nbEsc;
    r = _mm512_maskz_loadu_epi8(_cvtu64_mask64(nb == 2 ? ~0ULL : 0xFFFFFFFFULL), raw);
    /* high byte: sign, exponent's top 7 bits; low byte: exponent's low
     * bit, mantissa (0xCA: the second operand's bits where m80 is set) */
    hi = _mm512_ternarylogic_epi32(m80, r, _mm512_srli_epi16(e, 1), 0xCA);
    lo = _mm512_ternarylogic_epi32(m80, _mm512_slli_epi16(e, 7), r, 0xCA);
    for (b = 0; b < 2 * nb; b++)
        *acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi8(topHalves, lo, t->index[b], hi)),
                               _mm512_loadu_ps(xd + 16 * b), *acc);
    return 1;
}

/* One piece: ng groups from g on, against xd (the piece's part of x,
 * deinterleaved as weights.c lays it out), the unit's escapes from *esc
 * (advanced) to escEnd. Its sum in *out; returns 0 when the escapes run
 * out. */
__attribute__((target(AVX512_TARGET)))
static int piece_avx512(const glyd_tensorView* v, uint64_t g, uint64_t ng, const float* xd, uint64_t* esc,
                        uint64_t escEnd, float* out)
{
    kernel_tables t;
    __m512 acc = _mm512_setzero_ps();
    float lanes[8];
    uint64_t k;
    unsigned b;
    t.lut = _mm512_broadcast_i32x4(_mm256_castsi256_si128(fast_lut_avx2(v)));
    t.gather = _mm512_loadu_si512(g_codeGather);
    for (b = 0; b < 4; b++) t.index[b] = _mm512_loadu_si512(g_blockIndex[b]);
    for (k = 0; k + 2 <= ng; k += 2)
        if (!groups_avx512(v, g + k, 2, xd + 32 * k, esc, escEnd, &t, &acc)) return 0;
    if (k < ng && !groups_avx512(v, g + k, 1, xd + 32 * k, esc, escEnd, &t, &acc)) return 0;
    _mm256_storeu_ps(lanes, _mm256_add_ps(_mm512_castps512_ps256(acc),
                                          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1))));
    *out = glyd_dotTree(lanes);
    return 1;
}
#endif

int glyd_fusedFits(const glyd_matrix* w)
{
#if FUSED_AVX512
    return !w->plain && w->view.layout == GLYD_TLAYOUT_FAST && w->chunk % 32 == 0 &&
           glyd_tensorSimdLimitGet() >= GLYD_SIMD_AVX512 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2") &&
           __builtin_cpu_supports("gfni") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
#else
    (void)w;
    return 0;
#endif
}

#if FUSED_AVX512
/* Unit u's pieces: out[k] is piece k summed, plus 0 (as weights.c's
 * rows_dot starts each row from 0). */
static size_t unit_pieces(const glyd_matrix* w, uint64_t u, const float* xd, float* out)
{
    const glyd_tensorView* const v = &w->view;
    uint64_t const a = u * v->unitSize, b = GLYD_MIN(a + v->unitSize, v->nbElements);
    uint64_t esc = u ? glyd_read32(v->escapeEnds + 4 * (u - 1)) : 0;
    uint64_t const escEnd = glyd_read32(v->escapeEnds + 4 * u);
    uint64_t i;
    for (i = a; i < b; i += w->chunk, out++) {
        float s;
        RETURN_ERROR_IF(!piece_avx512(v, i / 32, w->chunk / 32, xd + i % w->cols, &esc, escEnd, &s),
                        corruption_detected, "escape beyond the unit's escapes");
        *out = 0.0f + s;
    }
    RETURN_ERROR_IF(esc != escEnd, corruption_detected, "unit's escapes not all used");
    return 0;
}
#endif

size_t glyd_fusedRows(const glyd_matrix* w, const float* xd, float* y, uint64_t r0, uint64_t r1)
{
    RETURN_ERROR_IF(!glyd_fusedFits(w), GENERIC, "no fused product for this matrix");
#if FUSED_AVX512
    if (w->view.unitSize % w->cols == 0) {
        /* units of whole rows, a row a piece: r0 is a unit's first row, r1
         * a unit's end or the last row */
        uint64_t const rpu = w->view.unitSize / w->cols;
        uint64_t u;
        RETURN_ERROR_IF(r0 % rpu || (r1 % rpu && r1 != w->rows), GENERIC, "product range not aligned on units");
        for (u = r0 / rpu; u * rpu < r1; u++) FORWARD_IF_ERROR(unit_pieces(w, u, xd, y + u * rpu));
    } else {
        /* long rows, a unit a piece: each row's pieces added in order */
        uint64_t const parts = w->cols / w->view.unitSize;
        uint64_t r, p;
        for (r = r0; r < r1; r++) {
            float sum = 0;
            for (p = 0; p < parts; p++) {
                float part;
                FORWARD_IF_ERROR(unit_pieces(w, r * parts + p, xd, &part));
                sum += part;
            }
            y[r] = sum;
        }
    }
    return 0;
#else
    (void)xd, (void)y, (void)r0, (void)r1;
    return GLYD_ERROR(GENERIC);
#endif
}

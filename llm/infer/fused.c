/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused.c: a matrix in the fast layout times one vector, decoded in
 * registers with AVX-512 or AVX2. Groups of 32 elements go from their codes
 * (3-bit ones, or the 4-bit ones the engine keeps where AVX2 is the widest
 * kernel), escapes and sign-and-mantissa bytes to fp32 lanes and into the
 * row's sums without being stored, so that a token's products are one pass
 * over the coded bytes.
 *
 * The sums are weights.c's (see DOT_BLOCK there): sixteen lanes, element
 * 2j of each block of 16 into even lane j and 2j + 1 into odd lane j, one
 * fused multiply-add after another in block order, then even + odd and the
 * fixed tree; each piece of `chunk` elements so, pieces added in order. The
 * results are thus bit for bit those of decoding the units and multiplying
 * the rows, and those of the plain weights. Only pieces of whole groups (a
 * chunk that is a multiple of 32, as in every model seen) go this way.
 */
#include "infer.h"
#include "pairs.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include "../../lib/tensor/fast_simd.h"
#  define FUSED_X86 1
#else
#  define FUSED_X86 0
#endif

/* The planes of a unit are read ahead of use by this many elements: the
 * hardware prefetcher alone falls behind. */
#define FUSED_PREFETCH 2048

#if FUSED_X86
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

/* nb (1 or 2) groups from g on as bytes in element order: *hi their
 * elements' high bytes (sign, exponent's top 7 bits), *lo their low ones
 * (exponent's low bit, mantissa). Returns 0 when they need escapes beyond
 * escEnd. */
__attribute__((target(AVX512_TARGET), always_inline))
static inline int group_bytes_avx512(const glyd_tensorView* v, uint64_t g, unsigned const nb, uint64_t* esc,
                                     uint64_t escEnd, const kernel_tables* t, __m512i* hi, __m512i* lo)
{
    const uint8_t* const planes = v->codePlanes + g * 12;
    const uint8_t* const raw = v->planes[0] + g * 32;
    __m512i const m80 = _mm512_set1_epi8((char)0x80);
    /* the code words' bytes gathered into the top of each qword, then each
     * qword's 8 x 8 bits transposed: byte j of qword b becomes the 3-bit
     * code of element 8b + j (absent words give code 0, not an escape) */
    __m512i const words = _mm512_castsi256_si512(_mm256_maskz_loadu_epi8(nb == 2 ? 0xFFFFFF : 0xFFF, planes));
    __m512i const c = _mm512_gf2p8affine_epi64_epi8(
        _mm512_set1_epi64((long long)0x8040201008040201ULL),
        _mm512_maskz_permutexvar_epi8(_cvtu64_mask64(0xE0E0E0E0E0E0E0E0ULL), t->gather, words), 0);
    __mmask64 const kEsc = _mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(7));
    uint64_t const nbEsc = (uint64_t)__builtin_popcountll(_cvtmask64_u64(kEsc));
    __m512i e, r;
    _mm_prefetch((const char*)raw + FUSED_PREFETCH, _MM_HINT_T0);
    _mm_prefetch((const char*)planes + FUSED_PREFETCH * 3 / 8, _MM_HINT_T0);
    if (nbEsc > escEnd - *esc) return 0;
    /* the table's exponents, the escapes expanded into their lanes */
    e = _mm512_mask_expand_epi8(_mm512_shuffle_epi8(t->lut, c), kEsc,
                                _mm512_maskz_loadu_epi8(_cvtu64_mask64(_bzhi_u64(~0ULL, (unsigned)nbEsc)),
                                                        v->escapes + *esc));
    *esc += nbEsc;
    r = _mm512_maskz_loadu_epi8(_cvtu64_mask64(nb == 2 ? ~0ULL : 0xFFFFFFFFULL), raw);
    /* 0xCA: the second operand's bits where m80 is set, else the third's */
    *hi = _mm512_ternarylogic_epi32(m80, r, _mm512_srli_epi16(e, 1), 0xCA);
    *lo = _mm512_ternarylogic_epi32(m80, _mm512_slli_epi16(e, 7), r, 0xCA);
    return 1;
}

/* nb (1 or 2) groups from g on into acc: returns 0 when they need escapes
 * beyond escEnd. */
__attribute__((target(AVX512_TARGET), always_inline))
static inline int groups_avx512(const glyd_tensorView* v, uint64_t g, unsigned const nb, const float* xd,
                                uint64_t* esc, uint64_t escEnd, const kernel_tables* t, __m512* acc)
{
    __mmask64 const topHalves = _cvtu64_mask64(0xCCCCCCCCCCCCCCCCULL);
    __m512i hi, lo;
    unsigned b;
    if (!group_bytes_avx512(v, g, nb, esc, escEnd, t, &hi, &lo)) return 0;
    for (b = 0; b < 2 * nb; b++)
        *acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_maskz_permutex2var_epi8(topHalves, lo, t->index[b], hi)),
                               _mm512_loadu_ps(xd + 16 * b), *acc);
    return 1;
}

/* A call's tables for v. */
__attribute__((target(AVX512_TARGET)))
static void tables_avx512(const glyd_tensorView* v, kernel_tables* t)
{
    unsigned b;
    t->lut = _mm512_broadcast_i32x4(_mm256_castsi256_si128(fast_lut_avx2(v)));
    t->gather = _mm512_loadu_si512(g_codeGather);
    for (b = 0; b < 4; b++) t->index[b] = _mm512_loadu_si512(g_blockIndex[b]);
}

/* One piece: ng groups from g on, against xd (the piece's part of x,
 * deinterleaved as weights.c lays it out), the unit's escapes from *esc
 * (advanced) to escEnd, through the call's tables t. Its sum in *out;
 * returns 0 when the escapes run out. */
__attribute__((target(AVX512_TARGET)))
static int piece_avx512(const glyd_tensorView* v, uint64_t g, uint64_t ng, const float* xd, uint64_t* esc,
                        uint64_t escEnd, const kernel_tables* t, float* out)
{
    __m512 acc = _mm512_setzero_ps();
    float lanes[8];
    uint64_t k;
    for (k = 0; k + 2 <= ng; k += 2)
        if (!groups_avx512(v, g + k, 2, xd + 32 * k, esc, escEnd, t, &acc)) return 0;
    if (k < ng && !groups_avx512(v, g + k, 1, xd + 32 * k, esc, escEnd, t, &acc)) return 0;
    _mm256_storeu_ps(lanes, _mm256_add_ps(_mm512_castps512_ps256(acc),
                                          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1))));
    *out = glyd_dotTree(lanes);
    return 1;
}

/* One piece in bf16 pairs (pairs.h): ng groups from g on against xp (the
 * piece's part of the vector in pair order), into *out. The bytes of two
 * groups unpacked within 128-bit lanes are the order's two steps. */
__attribute__((target(AVX512_TARGET ",avx512bf16")))
static int piece_pairs_avx512(const glyd_tensorView* v, uint64_t g, uint64_t ng, const uint16_t* xp, uint64_t* esc,
                              uint64_t escEnd, const kernel_tables* t, float* out)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    __m512i hi, lo;
    uint64_t k;
    for (k = 0; k + 2 <= ng; k += 2) {
        if (!group_bytes_avx512(v, g + k, 2, esc, escEnd, t, &hi, &lo)) return 0;
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_unpacklo_epi8(lo, hi),
                              (__m512bh)_mm512_loadu_si512((const void*)(xp + 32 * k)));
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_unpackhi_epi8(lo, hi),
                              (__m512bh)_mm512_loadu_si512((const void*)(xp + 32 * k + 32)));
    }
    if (k < ng) {
        if (!group_bytes_avx512(v, g + k, 1, esc, escEnd, t, &hi, &lo)) return 0;
        a0 = _mm512_mask_dpbf16_ps(a0, pairs_reach(32, 0), (__m512bh)_mm512_unpacklo_epi8(lo, hi),
                                   (__m512bh)_mm512_loadu_si512((const void*)(xp + 32 * k)));
        a1 = _mm512_mask_dpbf16_ps(a1, pairs_reach(32, 1), (__m512bh)_mm512_unpackhi_epi8(lo, hi),
                                   (__m512bh)_mm512_loadu_si512((const void*)(xp + 32 * k + 32)));
    }
    *out = pairs_close(a0, a1);
    return 1;
}

#  define AVX2_TARGET "avx2,fma,popcnt"

/* pshufb indexes spreading byte j / 8 of code word k to element j's byte. */
static const uint8_t g_spread[3][32] __attribute__((aligned(32))) = {
#  define SPREAD(k) { 4 * k, 4 * k, 4 * k, 4 * k, 4 * k, 4 * k, 4 * k, 4 * k,                             \
                      4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1, 4 * k + 1, \
                      4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, 4 * k + 2, \
                      4 * k + 3, 4 * k + 3, 4 * k + 3, 4 * k + 3, 4 * k + 3, 4 * k + 3, 4 * k + 3, 4 * k + 3 }
    SPREAD(0), SPREAD(1), SPREAD(2)
#  undef SPREAD
};

/* What a group's code words say, before it is known where its escapes
 * start. AVX2 has no byte expansion: each escape's rank among its half's
 * escapes (a prefix count of the escape lanes, in each 16-lane half) will
 * pick its byte from a 16-byte window of the escapes with one shuffle, the
 * upper half's window starting after the lower half's escapes. */
typedef struct {
    __m256i exponents; /* the table's; 0 in escape lanes (code 7) */
    __m256i isEsc;     /* -1 in escape lanes */
    __m256i rank;      /* in escape lanes, 1 + the escapes before it in its half */
    unsigned nbEsc;    /* in the group */
    unsigned nbLow;    /* in its first 16 elements */
} group_codes;

/* words: the group's three code words and 4 bytes beyond (unused). */
__attribute__((target(AVX2_TARGET), always_inline))
static inline group_codes read_codes(const uint8_t* words, __m256i lut)
{
    __m256i const all = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)words));
    __m256i const bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i const one = _mm256_set1_epi8(1);
    __m256i c = _mm256_setzero_si256(), rank;
    group_codes out;
    uint32_t mask;
    int k;
    /* each plane's bit of element j is bit j % 8 of byte j / 8 of its word:
     * spread the bytes, keep each lane's bit, clamp it to 1; planes from the top */
    for (k = 2; k >= 0; k--) {
        __m256i const w = _mm256_shuffle_epi8(all, _mm256_load_si256((const __m256i*)(const void*)g_spread[k]));
        c = _mm256_add_epi8(_mm256_add_epi8(c, c), _mm256_min_epu8(_mm256_and_si256(w, bits), one));
    }
    out.isEsc = _mm256_cmpeq_epi8(c, _mm256_set1_epi8(7));
    out.exponents = _mm256_shuffle_epi8(lut, c);
    mask = (uint32_t)_mm256_movemask_epi8(out.isEsc);
    out.nbEsc = (unsigned)__builtin_popcount(mask);
    out.nbLow = (unsigned)__builtin_popcount(mask & 0xFFFF);
    /* escape lanes are -1: a prefix sum in each half gives minus their
     * inclusive count */
    rank = out.isEsc;
    rank = _mm256_add_epi8(rank, _mm256_slli_si256(rank, 1));
    rank = _mm256_add_epi8(rank, _mm256_slli_si256(rank, 2));
    rank = _mm256_add_epi8(rank, _mm256_slli_si256(rank, 4));
    rank = _mm256_add_epi8(rank, _mm256_slli_si256(rank, 8));
    out.rank = _mm256_abs_epi8(rank);
    return out;
}

static const uint32_t g_m80[8] __attribute__((aligned(32))) = {
    0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u
};
static const uint32_t g_high[8] __attribute__((aligned(32))) = {
    0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u
};

/* A group's elements into the even and odd sums: its escapes from window
 * (window[-1] must be readable, as the blob's code planes precede its
 * escapes, and window[0..31] too), its sign-and-mantissa bytes from raw. */
__attribute__((target(AVX2_TARGET), always_inline))
static inline void join_group(const group_codes* gc, const uint8_t* raw, const uint8_t* window, const float* xd,
                              __m256* accEven, __m256* accOdd)
{
    /* loaded each time, which measured 2% faster than the compiler's
     * rebuilding them in the registers the loop runs short of */
    __m256i const m80 = *(const volatile __m256i*)(const volatile void*)g_m80;
    __m256i const high = *(const volatile __m256i*)(const volatile void*)g_high;
    __m256i const escWindows = _mm256_loadu2_m128i((const __m128i*)(const void*)(window + gc->nbLow - 1),
                                                   (const __m128i*)(const void*)(window - 1));
    __m256i const e = _mm256_or_si256(gc->exponents, _mm256_and_si256(_mm256_shuffle_epi8(escWindows, gc->rank), gc->isEsc));
    __m256i b0, b1; /* elements 0-15 and 16-31 as bf16, two to a 32-bit lane */
    fast_bf16_avx2(e, _mm256_loadu_si256((const __m256i*)(const void*)raw), m80, &b0, &b1);
    *accEven = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(b0, 16)), _mm256_loadu_ps(xd), *accEven);
    *accOdd = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(b0, high)), _mm256_loadu_ps(xd + 8), *accOdd);
    *accEven = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(b1, 16)), _mm256_loadu_ps(xd + 16), *accEven);
    *accOdd = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(b1, high)), _mm256_loadu_ps(xd + 24), *accOdd);
}

/* Group g's code words, copied where 16 bytes from them would pass the
 * blob's end (its last group, with few escapes after it). */
static inline const uint8_t* code_words(const glyd_tensorView* v, uint64_t g, const uint8_t* blobEnd, uint8_t* copy)
{
    const uint8_t* const words = v->codePlanes + g * 12;
    if (words + 16 <= blobEnd) return words;
    memset(copy, 0, 16);
    memcpy(copy, words, 12);
    return copy;
}

/* A unit's pieces with AVX2 (piece_avx512's sums, a group at a time):
 * nbPieces pieces of perPiece groups from group g on, each against xd;
 * their sums in out. lut16: code -> exponent. escLimit is the blob's
 * escape count, past which nothing is read. Each group's codes are read
 * one group ahead of its join, across pieces too: 4% faster on Zen 3 than
 * one group after the other. Returns 0 when the escapes run out. */
__attribute__((target(AVX2_TARGET)))
static int unit_avx2(const glyd_tensorView* v, uint64_t g, uint64_t nbPieces, uint64_t perPiece, const float* xd,
                     uint64_t* escp, uint64_t escEnd, uint64_t escLimit, const uint8_t* lut16, float* out)
{
    __m256i const lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)lut16));
    const uint8_t* const escapes = v->escapes;
    const uint8_t* const blobEnd = escapes + escLimit;
    uint64_t const last = g + nbPieces * perPiece - 1;
    uint64_t esc = *escp, p, j;
    uint8_t tail[33], words[16];
    group_codes next = read_codes(code_words(v, g, blobEnd, words), lut);
    for (p = 0; p < nbPieces; p++) {
        __m256 accEven = _mm256_setzero_ps(), accOdd = accEven;
        float lanes[8];
        for (j = 0; j < perPiece; j++, g++) {
            group_codes const cur = next;
            const uint8_t* const raw = v->planes[0] + g * 32;
            const uint8_t* window = escapes + esc;
            if (g < last) next = read_codes(code_words(v, g + 1, blobEnd, words), lut);
            _mm_prefetch((const char*)raw + FUSED_PREFETCH, _MM_HINT_T0);
            _mm_prefetch((const char*)(v->codePlanes + g * 12) + FUSED_PREFETCH * 3 / 8, _MM_HINT_T0);
            if (cur.nbEsc > escEnd - esc) return 0;
            if (escLimit - esc < 32) {
                /* the blob's last escapes: the windows read 32 bytes */
                memset(tail, 0, sizeof tail);
                memcpy(tail + 1, window, (size_t)(escLimit - esc));
                window = tail + 1;
            }
            join_group(&cur, raw, window, xd + 32 * j, &accEven, &accOdd);
            esc += cur.nbEsc;
        }
        _mm256_storeu_ps(lanes, _mm256_add_ps(accEven, accOdd));
        out[p] = 0.0f + glyd_dotTree(lanes);
    }
    *escp = esc;
    return 1;
}

/* Code -> exponent split as fast_bf16_avx2 joins it: its top 7 bits (the
 * high byte's low bits) and its low bit (the low byte's top bit). */
typedef struct {
    __m256i hi, lo;
} split_lut;

static const uint8_t g_laneIndex[32] __attribute__((aligned(32))) = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
};

/* A group's escapes (mask: its escape lanes, in the order the codes come,
 * fast_nibbles_avx2) ORed into *hi and *lo from the unit's escapes, which
 * are in element order. Returns 0 when they run out. Registers only: a
 * store and reload of hi and lo, or a call, made the loop keep them (or
 * its constants) in memory on the path without escapes too. */
__attribute__((target(AVX2_TARGET), always_inline))
static inline int patch_escapes(uint32_t mask, const uint8_t* escapes, uint64_t* esc, uint64_t escEnd, __m256i* hi,
                                __m256i* lo)
{
    /* lanes 8-15 hold elements 16-23, lanes 16-23 elements 8-15 */
    uint32_t inOrder = (mask & 0xFF0000FFu) | (mask & 0xFF00u) << 8 | (mask >> 8 & 0xFF00u);
    if ((uint64_t)__builtin_popcount(mask) > escEnd - *esc) return 0;
    for (; inOrder; inOrder &= inOrder - 1) {
        unsigned const e = (unsigned)__builtin_ctz(inOrder);
        /* the byte holding e's code, in the low lane or (its high half) the high one */
        unsigned const lane = glyd_nibbleByte(e) + 4 * glyd_nibbleShift(e);
        unsigned const x = escapes[(*esc)++];
        __m256i const at = _mm256_cmpeq_epi8(_mm256_load_si256((const __m256i*)(const void*)g_laneIndex),
                                             _mm256_set1_epi8((char)lane));
        *hi = _mm256_or_si256(*hi, _mm256_and_si256(at, _mm256_set1_epi8((char)(x >> 1))));
        *lo = _mm256_or_si256(*lo, _mm256_and_si256(at, _mm256_set1_epi8((char)((x & 1) << 7))));
    }
    return 1;
}

/* A unit's pieces from 4-bit codes (unit_avx2's sums). The codes come from
 * one 16-byte load in the order elements 0-7, 16-23 | 8-15, 24-31, which
 * is what unpacking bytes within 128-bit lanes needs, so only the
 * sign-and-mantissa bytes are permuted; each code picks its exponent's two
 * parts from two tables (code 15 gives zeros); and escapes are rare enough
 * (about one group in eighty on the models seen) to be patched on a branch
 * seldom taken. */
__attribute__((target(AVX2_TARGET)))
static int unit_nibbles_avx2(const glyd_tensorView* v, uint64_t g, uint64_t nbPieces, uint64_t perPiece,
                             const float* xd, uint64_t* escp, uint64_t escEnd, const split_lut* lut, float* out)
{
    __m256i const escCode = _mm256_set1_epi8(GLYD_TENSOR_NIBBLE_CODES);
    __m256i const m80 = _mm256_set1_epi8((char)0x80);
    __m256i const high = _mm256_set1_epi32((int)0xFFFF0000u);
    __m256i const lutHi = lut->hi, lutLo = lut->lo;
    const uint8_t* const codes = v->codePlanes;
    const uint8_t* const raw = v->planes[0];
    uint64_t esc = *escp, p, j;
    for (p = 0; p < nbPieces; p++) {
        __m256 accEven = _mm256_setzero_ps(), accOdd = accEven;
        float lanes[8];
        for (j = 0; j < perPiece; j++, g++) {
            __m256i const c = fast_nibbles_avx2(codes + 16 * g);
            __m256i const r = _mm256_permute4x64_epi64(
                _mm256_loadu_si256((const __m256i*)(const void*)(raw + 32 * g)), 0xD8);
            uint32_t const escMask = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, escCode));
            /* high byte: sign, exponent's top 7 bits; low byte: exponent's low bit, mantissa */
            __m256i hi = _mm256_or_si256(_mm256_and_si256(r, m80), _mm256_shuffle_epi8(lutHi, c));
            __m256i lo = _mm256_or_si256(_mm256_andnot_si256(m80, r), _mm256_shuffle_epi8(lutLo, c));
            const float* const x = xd + 32 * j;
            __m256i b0, b1; /* elements 0-15 and 16-31 as bf16, two to a 32-bit lane */
            _mm_prefetch((const char*)(raw + 32 * g) + FUSED_PREFETCH, _MM_HINT_T0);
            _mm_prefetch((const char*)(codes + 16 * g) + FUSED_PREFETCH / 2, _MM_HINT_T0);
            if (__builtin_expect(escMask != 0, 0) && !patch_escapes(escMask, v->escapes, &esc, escEnd, &hi, &lo))
                return 0;
            b0 = _mm256_unpacklo_epi8(lo, hi);
            b1 = _mm256_unpackhi_epi8(lo, hi);
            accEven = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(b0, 16)), _mm256_loadu_ps(x), accEven);
            accOdd = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(b0, high)), _mm256_loadu_ps(x + 8), accOdd);
            accEven = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(b1, 16)), _mm256_loadu_ps(x + 16), accEven);
            accOdd = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(b1, high)), _mm256_loadu_ps(x + 24), accOdd);
        }
        _mm256_storeu_ps(lanes, _mm256_add_ps(accEven, accOdd));
        out[p] = 0.0f + glyd_dotTree(lanes);
    }
    *escp = esc;
    return 1;
}

static int avx512_fits(void)
{
    return glyd_tensorSimdLimitGet() >= GLYD_SIMD_AVX512 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2") &&
           __builtin_cpu_supports("gfni") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma");
}

static int avx2_fits(void)
{
    return glyd_tensorSimdLimitGet() >= GLYD_SIMD_AVX2 && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("popcnt");
}
#endif

int glyd_fusedFits(const glyd_matrix* w)
{
#if FUSED_X86
    if (w->plain || w->view.layout != GLYD_TLAYOUT_FAST || w->chunk % 32 != 0) return 0;
    return w->view.fastCodes == GLYD_TENSOR_NIBBLE_CODES ? avx2_fits() : avx512_fits() || avx2_fits();
#else
    (void)w;
    return 0;
#endif
}

int glyd_fusedPairsFits(const glyd_matrix* w)
{
#if FUSED_X86
    return !w->plain && w->view.layout == GLYD_TLAYOUT_FAST && w->chunk % 32 == 0 &&
           w->view.fastCodes == GLYD_TENSOR_FAST_CODES && avx512_fits() && glyd_bf16PairsUsable();
#else
    (void)w;
    return 0;
#endif
}

unsigned glyd_fusedCodes(void)
{
#if FUSED_X86
    if (!avx512_fits() && avx2_fits()) return GLYD_TENSOR_NIBBLE_CODES;
#endif
    return GLYD_TENSOR_FAST_CODES;
}

#if FUSED_X86
/* What every unit of one call shares. */
typedef struct {
    const glyd_matrix* w;
    int nibbles;         /* 4-bit codes (AVX2) */
    int wide;            /* else AVX-512, else AVX2 */
    const uint16_t* xp;  /* not NULL: in bf16 pairs, against this vector */
    uint64_t escLimit;   /* the blob's escapes */
    uint8_t lut16[16];   /* code -> exponent; the escape code gives 0 */
    split_lut split;     /* 4-bit codes: the exponent's two parts */
    kernel_tables tables;/* AVX-512 */
} fused_call;

static void call_init(fused_call* c, const glyd_matrix* w, const uint16_t* xp)
{
    const glyd_tensorView* const v = &w->view;
    uint8_t hi[32], lo[32];
    unsigned k;
    c->w = w;
    c->xp = xp;
    c->nibbles = v->fastCodes == GLYD_TENSOR_NIBBLE_CODES;
    c->wide = !c->nibbles && avx512_fits();
    c->escLimit = v->nbUnits ? glyd_read32(v->escapeEnds + 4 * (v->nbUnits - 1)) : 0;
    memset(c->lut16, 0, sizeof c->lut16);
    memcpy(c->lut16, v->fastSymbols, v->fastCodes);
    for (k = 0; k < 32; k++) {
        hi[k] = (uint8_t)(c->lut16[k % 16] >> 1);
        lo[k] = (uint8_t)((c->lut16[k % 16] & 1) << 7);
    }
    memcpy(&c->split.hi, hi, 32);
    memcpy(&c->split.lo, lo, 32);
    /* the AVX-512 kernel's tables once a call, not once a piece: a row
     * of 896 is only 14 of its steps */
    if (c->wide) tables_avx512(v, &c->tables);
}

/* Unit u's pieces: out[k] is piece k summed, plus 0 (as weights.c's
 * rows_dot starts each row from 0). */
static size_t unit_pieces(const fused_call* c, uint64_t u, const float* xd, float* out)
{
    const glyd_matrix* const w = c->w;
    const glyd_tensorView* const v = &w->view;
    uint64_t const a = u * v->unitSize, b = GLYD_MIN(a + v->unitSize, v->nbElements);
    uint64_t esc = u ? glyd_read32(v->escapeEnds + 4 * (u - 1)) : 0;
    uint64_t const escEnd = glyd_read32(v->escapeEnds + 4 * u);
    if (c->nibbles) {
        RETURN_ERROR_IF(!unit_nibbles_avx2(v, a / 32, (b - a) / w->chunk, w->chunk / 32, xd + a % w->cols, &esc,
                                           escEnd, &c->split, out),
                        corruption_detected, "escape beyond the unit's escapes");
    } else if (c->xp) {
        uint64_t const stride = glyd_pairsPieceStride(w->chunk);
        uint64_t i;
        for (i = a; i < b; i += w->chunk, out++) {
            float s;
            RETURN_ERROR_IF(!piece_pairs_avx512(v, i / 32, w->chunk / 32, c->xp + i % w->cols / w->chunk * stride, &esc,
                                                escEnd, &c->tables, &s),
                            corruption_detected, "escape beyond the unit's escapes");
            *out = 0.0f + s;
        }
    } else if (c->wide) {
        uint64_t i;
        for (i = a; i < b; i += w->chunk, out++) {
            float s;
            RETURN_ERROR_IF(!piece_avx512(v, i / 32, w->chunk / 32, xd + i % w->cols, &esc, escEnd, &c->tables, &s),
                            corruption_detected, "escape beyond the unit's escapes");
            *out = 0.0f + s;
        }
    } else {
        RETURN_ERROR_IF(!unit_avx2(v, a / 32, (b - a) / w->chunk, w->chunk / 32, xd + a % w->cols, &esc, escEnd,
                                   c->escLimit, c->lut16, out),
                        corruption_detected, "escape beyond the unit's escapes");
    }
    RETURN_ERROR_IF(esc != escEnd, corruption_detected, "unit's escapes not all used");
    return 0;
}
#endif

#if FUSED_X86
/* glyd_fusedRows' and glyd_fusedRowsPairs' walk over rows [r0, r1). */
static size_t rows_walk(const glyd_matrix* w, const float* xd, const uint16_t* xp, float* y, uint64_t r0, uint64_t r1)
{
    fused_call c;
    call_init(&c, w, xp);
    if (w->view.unitSize % w->cols == 0) {
        /* units of whole rows, a row a piece: r0 is a unit's first row, r1
         * a unit's end or the last row */
        uint64_t const rpu = w->view.unitSize / w->cols;
        uint64_t u;
        RETURN_ERROR_IF(r0 % rpu || (r1 % rpu && r1 != w->rows), GENERIC, "product range not aligned on units");
        for (u = r0 / rpu; u * rpu < r1; u++) FORWARD_IF_ERROR(unit_pieces(&c, u, xd, y + u * rpu));
    } else {
        /* long rows, a unit a piece: each row's pieces added in order */
        uint64_t const parts = w->cols / w->view.unitSize;
        uint64_t r, p;
        for (r = r0; r < r1; r++) {
            float sum = 0;
            for (p = 0; p < parts; p++) {
                float part;
                FORWARD_IF_ERROR(unit_pieces(&c, r * parts + p, xd, &part));
                sum += part;
            }
            y[r] = sum;
        }
    }
    return 0;
}
#endif

size_t glyd_fusedRows(const glyd_matrix* w, const float* xd, float* y, uint64_t r0, uint64_t r1)
{
    RETURN_ERROR_IF(!glyd_fusedFits(w), GENERIC, "no fused product for this matrix");
#if FUSED_X86
    return rows_walk(w, xd, NULL, y, r0, r1);
#else
    (void)xd, (void)y, (void)r0, (void)r1;
    return GLYD_ERROR(GENERIC);
#endif
}

size_t glyd_fusedRowsPairs(const glyd_matrix* w, const uint16_t* xp, float* y, uint64_t r0, uint64_t r1)
{
    RETURN_ERROR_IF(!glyd_fusedPairsFits(w), GENERIC, "no fused product in bf16 pairs for this matrix");
#if FUSED_X86
    return rows_walk(w, NULL, xp, y, r0, r1);
#else
    (void)xp, (void)y, (void)r0, (void)r1;
    return GLYD_ERROR(GENERIC);
#endif
}

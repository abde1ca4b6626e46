/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fused.c: a matrix in the fast layout times one vector, decoded in
 * registers. Each group of 32 elements goes from its three code words, its
 * escapes and its 32 sign-and-mantissa bytes to fp32 weights and into the
 * row's sums without being stored, so that a token's products are one pass
 * over the coded bytes, which is what bounds a token's time.
 *
 * The sums are weights.c's (see DOT_BLOCK there): sixteen lanes, element
 * 2j of each block of 16 into even lane j and 2j + 1 into odd lane j, one
 * fused multiply-add after another in block order, then even + odd and the
 * fixed tree; each piece of `chunk` elements so, pieces added in order. The
 * results are thus bit for bit those of decoding the units and multiplying
 * the rows, and those of the plain weights. Only pieces of whole groups (a
 * chunk that is a multiple of 32, as in every model seen) go this way.
 *
 * One row's sums are a chain of dependent additions, one per block of 16
 * elements: alone, a row waits on it. So STREAMS units are summed in
 * lockstep, a piece of each at a time (each unit has its own escapes, so
 * they decode independently), and their chains overlap.
 */
#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include "../../lib/tensor/fast_simd.h"
#  define FUSED_X86 1
#else
#  define FUSED_X86 0
#endif

#ifndef STREAMS
#  define STREAMS 4
#endif

/* The planes of a unit are read ahead of use by this many elements: the
 * hardware prefetcher alone falls behind on the several streams. */
#define FUSED_PREFETCH 2048

/* One piece of a unit: ng groups from group g on, against xd (the piece's
 * part of x, deinterleaved as weights.c lays it out), the unit's escapes
 * from esc (advanced) to escEnd; its sum goes to sum. */
typedef struct {
    uint64_t g;
    const float* xd;
    uint64_t esc, escEnd;
    float sum;
} piece;

/* ns (1 to STREAMS) pieces of ng groups each. Returns 0 when a piece needs
 * escapes beyond its unit's. */
typedef int (*pieces_fn)(const glyd_tensorView* v, uint64_t ng, piece* p, unsigned ns);

#if FUSED_X86
/* vpermb indexes from [32 low bytes | 32 high bytes] of a group's bf16
 * elements to the fp32 lanes of one of its blocks of 16: lane j < 8 holds
 * the block's element 2j, lane 8 + j its element 2j + 1, the bf16 bits in
 * the lane's top two bytes (the bottom two are zeroed by a mask). */
#  define LANE(e) 0, 0, (e), 32 + (e)
#  define BLOCK(f)                                                                                   \
      LANE(f + 0), LANE(f + 2), LANE(f + 4), LANE(f + 6), LANE(f + 8), LANE(f + 10), LANE(f + 12),   \
      LANE(f + 14), LANE(f + 1), LANE(f + 3), LANE(f + 5), LANE(f + 7), LANE(f + 9), LANE(f + 11),   \
      LANE(f + 13), LANE(f + 15)
static const uint8_t g_blockIndex[2][64] = { { BLOCK(0) }, { BLOCK(16) } };
#  undef BLOCK
#  undef LANE

#  define AVX512_TARGET "avx2,bmi,bmi2,fma,avx512f,avx512vl,avx512bw,avx512vbmi,avx512vbmi2"

/* Group g of a piece into its sums: the 3-bit codes become the table's
 * exponents, the escapes are expanded into their lanes (the table gives 0
 * there), joined with the sign-and-mantissa bytes, moved to the lanes of
 * each block and multiplied. Returns 0 when the escapes run out. */
__attribute__((target(AVX512_TARGET), always_inline))
static inline int group_avx512(const glyd_tensorView* v, uint64_t g, const float* xd, uint64_t* esc,
                               uint64_t escEnd, __m256i lut, __m512i indexA, __m512i indexB, __m512* acc)
{
    const uint8_t* const planes = v->codePlanes + g * 12;
    const uint8_t* const raw = v->planes[0] + g * 32;
    __m256i const m80 = _mm256_set1_epi8((char)0x80);
    __mmask64 const topHalves = _cvtu64_mask64(0xCCCCCCCCCCCCCCCCULL);
    __mmask32 const k0 = _cvtu32_mask32(glyd_read32(planes));
    __mmask32 const k1 = _cvtu32_mask32(glyd_read32(planes + 4));
    __mmask32 const k2 = _cvtu32_mask32(glyd_read32(planes + 8));
    __mmask32 const kEsc = _kand_mask32(_kand_mask32(k0, k1), k2);
    unsigned const nbEsc = (unsigned)__builtin_popcount(_cvtmask32_u32(kEsc));
    __m256i c, e, hi, lo, r;
    __m512i both;
    _mm_prefetch((const char*)raw + FUSED_PREFETCH, _MM_HINT_T0);
    _mm_prefetch((const char*)planes + FUSED_PREFETCH * 3 / 8, _MM_HINT_T0);
    c = _mm256_maskz_mov_epi8(k0, _mm256_set1_epi8(1));
    c = _mm256_mask_add_epi8(c, k1, c, _mm256_set1_epi8(2));
    c = _mm256_mask_add_epi8(c, k2, c, _mm256_set1_epi8(4));
    if (nbEsc > escEnd - *esc) return 0;
    e = _mm256_mask_expand_epi8(_mm256_shuffle_epi8(lut, c), kEsc,
                                _mm256_maskz_loadu_epi8(_cvtu32_mask32(_bzhi_u32(~0u, nbEsc)), v->escapes + *esc));
    *esc += nbEsc;
    r = _mm256_loadu_si256((const __m256i*)(const void*)raw);
    /* high byte: sign, exponent's top 7 bits; low byte: exponent's low
     * bit, mantissa (0xCA: the second operand's bits where m80 is set) */
    hi = _mm256_ternarylogic_epi32(m80, r, _mm256_srli_epi16(e, 1), 0xCA);
    lo = _mm256_ternarylogic_epi32(m80, _mm256_slli_epi16(e, 7), r, 0xCA);
    both = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    *acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi8(topHalves, indexA, both)),
                           _mm512_loadu_ps(xd), *acc);
    *acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_maskz_permutexvar_epi8(topHalves, indexB, both)),
                           _mm512_loadu_ps(xd + 16), *acc);
    return 1;
}

__attribute__((target(AVX512_TARGET), always_inline))
static inline int pieces_avx512_n(const glyd_tensorView* v, uint64_t ng, piece* p, unsigned const ns)
{
    __m256i const lut = fast_lut_avx2(v);
    __m512i const indexA = _mm512_loadu_si512(g_blockIndex[0]), indexB = _mm512_loadu_si512(g_blockIndex[1]);
    __m512 acc[STREAMS];
    uint64_t k;
    unsigned s;
    for (s = 0; s < ns; s++) acc[s] = _mm512_setzero_ps();
    for (k = 0; k < ng; k++)
        for (s = 0; s < ns; s++)
            if (!group_avx512(v, p[s].g + k, p[s].xd + 32 * k, &p[s].esc, p[s].escEnd, lut, indexA, indexB, &acc[s]))
                return 0;
    for (s = 0; s < ns; s++) {
        float lanes[8];
        __m256 const even = _mm512_castps512_ps256(acc[s]);
        __m256 const odd = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[s]), 1));
        _mm256_storeu_ps(lanes, _mm256_add_ps(even, odd));
        p[s].sum = glyd_dotTree(lanes);
    }
    return 1;
}

__attribute__((target(AVX512_TARGET)))
static int pieces_avx512(const glyd_tensorView* v, uint64_t ng, piece* p, unsigned ns)
{
    switch (ns) {
    case 4: return pieces_avx512_n(v, ng, p, 4);
    case 2: return pieces_avx512_n(v, ng, p, 2);
    default: {
        unsigned s;
        for (s = 0; s < ns; s++)
            if (!pieces_avx512_n(v, ng, p + s, 1)) return 0;
        return 1;
    }
    }
}

static int has_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
           __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("fma");
}

/* Without AVX-512, escapes cannot be expanded into their lanes in a
 * register: each piece is decoded a run of groups at a time into a buffer
 * that stays in L1 (the decoder's own AVX2 path, escapes patched from a
 * list), and the runs of all pieces are summed from there together, their
 * lanes carried from run to run. */
#  define AVX2_RUN 32 /* groups */

__attribute__((target("avx2,bmi,fma"), always_inline))
static inline int pieces_avx2_n(const glyd_tensorView* v, uint64_t ng, piece* p, unsigned const ns)
{
    uint16_t run[STREAMS][AVX2_RUN * 32] __attribute__((aligned(32)));
    __m256i const high = _mm256_set1_epi32((int)0xFFFF0000u);
    __m256 even[STREAMS], odd[STREAMS];
    uint64_t k;
    unsigned s;
    for (s = 0; s < ns; s++) even[s] = odd[s] = _mm256_setzero_ps();
    for (k = 0; k < ng; k += AVX2_RUN) {
        uint64_t const n = GLYD_MIN((uint64_t)AVX2_RUN, ng - k);
        size_t i;
        for (s = 0; s < ns; s++)
            if (!glyd_fastBf16GroupsAvx2(v, p[s].g + k, p[s].g + k + n, &p[s].esc, p[s].escEnd, (uint8_t*)run[s]))
                return 0;
        for (i = 0; i < n * 32; i += 16)
            for (s = 0; s < ns; s++) {
                __m256i const h = _mm256_load_si256((const __m256i*)(const void*)(run[s] + i));
                const float* const x = p[s].xd + 32 * k + i;
                even[s] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)), _mm256_loadu_ps(x), even[s]);
                odd[s] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(h, high)), _mm256_loadu_ps(x + 8), odd[s]);
            }
    }
    for (s = 0; s < ns; s++) {
        float lanes[8];
        _mm256_storeu_ps(lanes, _mm256_add_ps(even[s], odd[s]));
        p[s].sum = glyd_dotTree(lanes);
    }
    return 1;
}

__attribute__((target("avx2,bmi,fma")))
static int pieces_avx2(const glyd_tensorView* v, uint64_t ng, piece* p, unsigned ns)
{
    switch (ns) {
    case 4: return pieces_avx2_n(v, ng, p, 4);
    case 2: return pieces_avx2_n(v, ng, p, 2);
    default: {
        unsigned s;
        for (s = 0; s < ns; s++)
            if (!pieces_avx2_n(v, ng, p + s, 1)) return 0;
        return 1;
    }
    }
}
#endif

/* The kernel this CPU runs under the decoders' SIMD limit, or NULL. */
static pieces_fn pick_kernel(void)
{
#if FUSED_X86
    int const limit = glyd_tensorSimdLimitGet();
    if (limit >= GLYD_SIMD_AVX512 && has_avx512()) return pieces_avx512;
    if (limit >= GLYD_SIMD_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("fma"))
        return pieces_avx2;
#endif
    return NULL;
}

int glyd_fusedFits(const glyd_matrix* w)
{
    return !w->plain && w->view.layout == GLYD_TLAYOUT_FAST && w->chunk % 32 == 0 && pick_kernel() != NULL;
}

/* Units [u, u + n) (n <= STREAMS), all of one size, in lockstep: out[i][k]
 * is piece k of unit u + i summed, plus 0 (as weights.c's rows_dot starts
 * each row from 0). */
static size_t units_in_lockstep(const glyd_matrix* w, pieces_fn kernel, const float* xd, uint64_t u, unsigned n,
                                float* const* out)
{
    const glyd_tensorView* const v = &w->view;
    uint64_t const first = u * v->unitSize;
    uint64_t const size = GLYD_MIN((uint64_t)v->unitSize, v->nbElements - first);
    piece p[STREAMS];
    uint64_t off;
    unsigned i, k;
    for (i = 0; i < n; i++) {
        p[i].esc = u + i ? glyd_read32(v->escapeEnds + 4 * (u + i - 1)) : 0;
        p[i].escEnd = glyd_read32(v->escapeEnds + 4 * (u + i));
    }
    for (off = 0, k = 0; off < size; off += w->chunk, k++) {
        for (i = 0; i < n; i++) {
            uint64_t const at = first + i * v->unitSize + off;
            p[i].g = at / 32;
            p[i].xd = xd + at % w->cols;
        }
        RETURN_ERROR_IF(!kernel(v, w->chunk / 32, p, n), corruption_detected, "escape beyond the unit's escapes");
        for (i = 0; i < n; i++) out[i][k] = 0.0f + p[i].sum;
    }
    for (i = 0; i < n; i++)
        RETURN_ERROR_IF(p[i].esc != p[i].escEnd, corruption_detected, "unit's escapes not all used");
    return 0;
}

/* How many of units [u, end) go in lockstep next: up to STREAMS, the
 * tensor's shorter last unit alone. */
static unsigned lockstep_count(const glyd_tensorView* v, uint64_t u, uint64_t end)
{
    unsigned n = (unsigned)GLYD_MIN((uint64_t)STREAMS, end - u);
    if (n > 1 && u + n == v->nbUnits && v->nbElements % v->unitSize != 0) n--;
    return n;
}

size_t glyd_fusedRows(const glyd_matrix* w, const float* xd, float* y, uint64_t r0, uint64_t r1)
{
    pieces_fn const kernel = pick_kernel();
    const glyd_tensorView* const v = &w->view;
    RETURN_ERROR_IF(!glyd_fusedFits(w), GENERIC, "no fused product for this matrix");
    if (v->unitSize % w->cols == 0) {
        /* units of whole rows, a row a piece: r0 is a unit's first row, r1
         * a unit's end or the last row */
        uint64_t const rpu = v->unitSize / w->cols, end = (r1 + rpu - 1) / rpu;
        uint64_t u;
        RETURN_ERROR_IF(r0 % rpu || (r1 % rpu && r1 != w->rows), GENERIC, "product range not aligned on units");
        for (u = r0 / rpu; u < end;) {
            unsigned const n = lockstep_count(v, u, end);
            float* out[STREAMS];
            unsigned i;
            for (i = 0; i < n; i++) out[i] = y + (u + i) * rpu;
            FORWARD_IF_ERROR(units_in_lockstep(w, kernel, xd, u, n, out));
            u += n;
        }
    } else {
        /* long rows, a unit a piece: each row's pieces added in order */
        uint64_t const parts = w->cols / v->unitSize, end = r1 * parts;
        uint64_t u;
        for (u = r0 * parts; u < end;) {
            unsigned const n = lockstep_count(v, u, end);
            float sums[STREAMS];
            float* out[STREAMS];
            unsigned i;
            for (i = 0; i < n; i++) out[i] = &sums[i];
            FORWARD_IF_ERROR(units_in_lockstep(w, kernel, xd, u, n, out));
            for (i = 0; i < n; i++, u++) {
                if (u % parts == 0) y[u / parts] = sums[i];
                else y[u / parts] += sums[i];
            }
        }
    }
    return 0;
}

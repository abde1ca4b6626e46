/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv_page.c: pages of a bf16 KV cache (glyd_tensor.h, docs/FORMAT.md
 * "KV pages"). A value's sign and mantissa are kept as one byte; its
 * exponent is coded in tiers against a table of the stream's most
 * frequent exponents: a 2-bit code for every value (the three most
 * frequent, or an escape), a 3-bit code for each escaped value (the next
 * seven, or a second escape), the exponent itself for the rest. Planes of
 * fixed-width codes, not a Huffman stream, so that attention can decode a
 * page with shuffles and expands as it reads it.
 */
#include <string.h>

#include "tensor.h"

#define KV_TIER1 3 /* exponents with a 2-bit code */
#define KV_TIER2 7 /* exponents with a 3-bit code after an escape */
#define KV_ESCAPE1 3
#define KV_ESCAPE2 7

/* Plane sizes of a tiered page of n values, e1 of them escaped once and e2
 * of those twice. */
static size_t tiered_size(size_t n, size_t e1, size_t e2)
{
    return 1 + n + (n + 3) / 4 + (3 * e1 + 7) / 8 + e2;
}

void glyd_kvTableFit(glyd_kvTable* table, const unsigned short* values, size_t n)
{
    uint32_t count[256];
    uint8_t taken[256];
    size_t i;
    unsigned k;
    memset(count, 0, sizeof count);
    memset(taken, 0, sizeof taken);
    for (i = 0; i < n; i++) count[(values[i] >> 7) & 0xFF]++;
    /* the most frequent first, the smaller exponent on a tie; exponents no
     * value has fill the rest, so that the table's exponents are distinct */
    for (k = 0; k < GLYD_KV_TABLE_SIZE; k++) {
        unsigned best = 256, e;
        for (e = 0; e < 256; e++)
            if (!taken[e] && (best == 256 || count[e] > count[best])) best = e;
        taken[best] = 1;
        table->exponent[k] = (uint8_t)best;
    }
}

/* Each exponent's code: 0..2 a first-tier code, 3 + c for second-tier code
 * c, 10 for one stored as is. */
static void code_map(const glyd_kvTable* table, uint8_t map[256])
{
    unsigned k;
    memset(map, KV_TIER1 + KV_TIER2, 256);
    for (k = GLYD_KV_TABLE_SIZE; k-- > 0;) map[table->exponent[k]] = (uint8_t)k;
}

/* Values escaped once (e1) and twice (e2) under the table. */
static void count_escapes(const unsigned short* values, size_t n, const uint8_t map[256], size_t* e1, size_t* e2)
{
    size_t i, one = 0, two = 0;
    for (i = 0; i < n; i++) {
        uint8_t const code = map[(values[i] >> 7) & 0xFF];
        one += code >= KV_TIER1;
        two += code >= KV_TIER1 + KV_TIER2;
    }
    *e1 = one;
    *e2 = two;
}

size_t glyd_kvPageBound(size_t n) { return 1 + 2 * n; }

size_t glyd_kvPageSize(const unsigned short* values, size_t n, const glyd_kvTable* table)
{
    uint8_t map[256];
    size_t e1, e2, tiered;
    RETURN_ERROR_IF(n == 0 || n > GLYD_KV_PAGE_MAX, parameter_outOfBound, "values in a KV page");
    code_map(table, map);
    count_escapes(values, n, map, &e1, &e2);
    tiered = tiered_size(n, e1, e2);
    return tiered < glyd_kvPageBound(n) ? tiered : glyd_kvPageBound(n);
}

size_t glyd_kvPageEncode(void* dst, size_t dstCapacity, const unsigned short* values, size_t n, const glyd_kvTable* table)
{
    uint8_t* const out = (uint8_t*)dst;
    uint8_t map[256];
    size_t e1, e2, size, i;
    RETURN_ERROR_IF(n == 0 || n > GLYD_KV_PAGE_MAX, parameter_outOfBound, "values in a KV page");
    code_map(table, map);
    count_escapes(values, n, map, &e1, &e2);
    size = tiered_size(n, e1, e2);
    if (size >= glyd_kvPageBound(n)) {
        RETURN_ERROR_IF(dstCapacity < glyd_kvPageBound(n), dstSize_tooSmall, "KV page");
        out[0] = GLYD_KV_STORED;
        for (i = 0; i < n; i++) glyd_writeLE16(out + 1 + 2 * i, values[i]);
        return glyd_kvPageBound(n);
    }
    RETURN_ERROR_IF(dstCapacity < size, dstSize_tooSmall, "KV page");
    {
        uint8_t* const signs = out + 1;
        uint8_t* const codes = signs + n;
        uint8_t* const escapes = codes + (n + 3) / 4;
        uint8_t* const raw = escapes + (3 * e1 + 7) / 8;
        size_t bit = 0, r = 0;
        out[0] = GLYD_KV_TIERED;
        memset(codes, 0, (size_t)(raw - codes));
        for (i = 0; i < n; i++) {
            uint16_t const v = values[i];
            uint8_t const e = (uint8_t)(v >> 7);
            uint8_t const code = map[e];
            signs[i] = (uint8_t)((v >> 8 & 0x80) | (v & 0x7F));
            codes[i / 4] |= (uint8_t)((code < KV_TIER1 ? code : KV_ESCAPE1) << 2 * (i % 4));
            if (code < KV_TIER1) continue;
            {
                unsigned const second = code < KV_TIER1 + KV_TIER2 ? code - KV_TIER1 : KV_ESCAPE2;
                /* 3 bits at `bit`, low bits first, across a byte boundary */
                escapes[bit / 8] |= (uint8_t)(second << bit % 8);
                if (bit % 8 > 5) escapes[bit / 8 + 1] |= (uint8_t)(second >> (8 - bit % 8));
                bit += 3;
                if (second == KV_ESCAPE2) raw[r++] = e;
            }
        }
        assert(bit == 3 * e1 && r == e2);
    }
    return size;
}

/* The first tier's escapes among the 2-bit codes of `bytes` bytes: pairs
 * of bits 11, counted eight bytes at a time (a word's bit count in shifts
 * and adds: the library is built for any x86-64, which may lack popcnt). */
static size_t count_escapes_in(const uint8_t* codes, size_t bytes)
{
    uint64_t const pairs = 0x5555555555555555ull;
    size_t count = 0, i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t const w = glyd_read64(codes + i);
        uint64_t x = w & (w >> 1) & pairs;        /* a bit at each escape's low position */
        x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
        count += (size_t)((x * 0x0101010101010101ull) >> 56);
    }
    for (; i < bytes; i++) {
        unsigned const c = codes[i];
        unsigned x = c & (c >> 1) & 0x55;
        count += (x & 1) + (x >> 2 & 1) + (x >> 4 & 1) + (x >> 6 & 1);
    }
    return count;
}

/* A tiered page being decoded: its planes, how far the escapes and raw
 * exponents are read, and its table's exponents by tier. */
typedef struct {
    const uint8_t *signs, *codes, *escapes, *raw;
    size_t escSize, rawCount;
    size_t bit, r; /* next escape code's bit, next raw exponent */
    uint8_t tier1[16], tier2[16]; /* code -> exponent; escape codes give 0 */
} kv_reader;

/* Value i, one at a time. Returns 0 where the raw exponents run out. */
GLYD_FORCE_INLINE int decode_one(kv_reader* k, size_t i, uint16_t* dst)
{
    unsigned const code = k->codes[i / 4] >> 2 * (i % 4) & 3;
    uint8_t const sm = k->signs[i];
    unsigned e = k->tier1[code];
    if (code == KV_ESCAPE1) {
        unsigned second = k->escapes[k->bit / 8] >> k->bit % 8;
        if (k->bit % 8 > 5) second |= (unsigned)k->escapes[k->bit / 8 + 1] << (8 - k->bit % 8);
        second &= 7;
        k->bit += 3;
        e = k->tier2[second];
        if (second == KV_ESCAPE2) {
            if (k->r == k->rawCount) return 0;
            e = k->raw[k->r++];
        }
    }
    dst[i] = (uint16_t)((sm & 0x80) << 8 | e << 7 | (sm & 0x7F));
    return 1;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include "fast_simd.h"
#  define KV_SIMD 1

/* Each value's 2-bit code as a byte, 32 values from their 8 bytes: each
 * byte spread to its four lanes, whose masks pick its pair of bits. */
#  define KV_SPREAD _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)
#  define KV_LOW_BITS _mm256_set1_epi32(0x40100401)
#  define KV_HIGH_BITS _mm256_set1_epi32((int)0x80200802u)

/* The groups of 32 values [0, groups) with AVX-512: the escaped values'
 * 3-bit codes cut from the escape plane in one multishift, their raw
 * exponents and then their exponents put in place by expands, so that no
 * branch depends on where escapes fall. Returns 0 where the raw exponents
 * run out. */
__attribute__((target("avx2,bmi,bmi2,popcnt,avx512f,avx512vl,avx512bw,avx512vbmi,avx512vbmi2")))
static int decode_groups_avx512(kv_reader* k, size_t groups, uint16_t* dst)
{
    __m256i const spread = KV_SPREAD, low = KV_LOW_BITS, high = KV_HIGH_BITS;
    __m256i const lut1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)k->tier1));
    __m256i const lut2 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)k->tier2));
    __m256i const one = _mm256_set1_epi8(1), two = _mm256_set1_epi8(2), seven = _mm256_set1_epi8(7);
    __m256i const m80 = _mm256_set1_epi8((char)0x80);
    /* eight 3-bit codes a 64-bit lane: lane q holds the window's bytes
     * 3q..3q+7, code j of it at bit 3j (plus the first code's offset) */
    __m256i const gather = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 8, 9, 10, 6, 7, 8, 9, 10, 11,
                                            12, 13, 9, 10, 11, 12, 13, 14, 15, 16);
    __m256i const offsets = _mm256_setr_epi8(0, 3, 6, 9, 12, 15, 18, 21, 0, 3, 6, 9, 12, 15, 18, 21, 0, 3, 6, 9,
                                             12, 15, 18, 21, 0, 3, 6, 9, 12, 15, 18, 21);
    const uint8_t* const codes = k->codes;
    const uint8_t* const signs = k->signs;
    const uint8_t* const escapes = k->escapes;
    const uint8_t* const raw = k->raw;
    size_t const escSize = k->escSize, rawCount = k->rawCount;
    size_t bit = k->bit, r = k->r, g; /* in registers: the next group's loads wait on them */
    for (g = 0; g < groups; g++) {
        __m256i const w = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)glyd_read64(codes + 8 * g)), spread);
        __mmask32 const lo = _mm256_test_epi8_mask(w, low), hi = _mm256_test_epi8_mask(w, high);
        __mmask32 const esc = _kand_mask32(lo, hi);
        unsigned const m = (unsigned)__builtin_popcount(_cvtmask32_u32(esc));
        __m256i e = _mm256_shuffle_epi8(lut1, _mm256_mask_add_epi8(_mm256_maskz_mov_epi8(lo, one), hi,
                                                                   _mm256_maskz_mov_epi8(lo, one), two));
        __m256i first, last;
        if (m) {
            /* m codes from bit `bit` on: inside the plane, which holds them
             * all; bytes past its end are not loaded */
            size_t const at = bit / 8, avail = escSize - at;
            __m256i const window =
                _mm256_maskz_loadu_epi8(avail >= 32 ? ~0u : _bzhi_u32(~0u, (unsigned)avail), escapes + at);
            __m256i const ctrl = _mm256_add_epi8(offsets, _mm256_set1_epi8((char)(bit % 8)));
            __m256i const second =
                _mm256_and_si256(_mm256_multishift_epi64_epi8(ctrl, _mm256_permutexvar_epi8(gather, window)), seven);
            __mmask32 const raws = _mm256_mask_cmpeq_epi8_mask(_bzhi_u32(~0u, m), second, seven);
            unsigned const nr = (unsigned)__builtin_popcount(_cvtmask32_u32(raws));
            __m256i e2;
            if (nr > rawCount - r) return 0;
            e2 = _mm256_mask_expand_epi8(_mm256_shuffle_epi8(lut2, second), raws,
                                         _mm256_maskz_loadu_epi8(_bzhi_u32(~0u, nr), raw + r));
            e = _mm256_mask_expand_epi8(e, esc, e2);
            bit += 3 * (size_t)m;
            r += nr;
        }
        fast_bf16_avx2(e, _mm256_loadu_si256((const __m256i*)(const void*)(signs + 32 * g)), m80, &first, &last);
        _mm256_storeu_si256((__m256i*)(void*)(dst + 32 * g), first);
        _mm256_storeu_si256((__m256i*)(void*)(dst + 32 * g + 16), last);
    }
    k->bit = bit;
    k->r = r;
    return 1;
}

/* The same with AVX2: the first tier's exponents by a shuffle, escaped
 * values (their lanes joined with exponent 0) patched one by one. */
__attribute__((target("avx2,bmi")))
static int decode_groups_avx2(kv_reader* k, size_t groups, uint16_t* dst)
{
    __m256i const spread = KV_SPREAD, low = KV_LOW_BITS, high = KV_HIGH_BITS;
    __m256i const lut1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)k->tier1));
    __m256i const one = _mm256_set1_epi8(1), three = _mm256_set1_epi8(3);
    __m256i const m80 = _mm256_set1_epi8((char)0x80);
    size_t g;
    for (g = 0; g < groups; g++) {
        __m256i const w = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)glyd_read64(k->codes + 8 * g)), spread);
        __m256i const lo = _mm256_min_epu8(_mm256_and_si256(w, low), one);
        __m256i const hi = _mm256_min_epu8(_mm256_and_si256(w, high), one);
        __m256i const c = _mm256_add_epi8(lo, _mm256_add_epi8(hi, hi));
        uint32_t esc = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, three));
        __m256i first, last;
        fast_bf16_avx2(_mm256_shuffle_epi8(lut1, c),
                       _mm256_loadu_si256((const __m256i*)(const void*)(k->signs + 32 * g)), m80, &first, &last);
        _mm256_storeu_si256((__m256i*)(void*)(dst + 32 * g), first);
        _mm256_storeu_si256((__m256i*)(void*)(dst + 32 * g + 16), last);
        for (; esc; esc &= esc - 1)
            if (!decode_one(k, 32 * g + (size_t)_tzcnt_u32(esc), dst)) return 0;
    }
    return 1;
}
#else
#  define KV_SIMD 0
#endif

size_t glyd_kvPageDecode(uint16_t* dst, size_t n, const void* src, size_t srcSize, const glyd_kvTable* table)
{
    const uint8_t* const in = (const uint8_t*)src;
    kv_reader k;
    size_t i = 0, e1 = 0;
    RETURN_ERROR_IF(n == 0 || n > GLYD_KV_PAGE_MAX, parameter_outOfBound, "values in a KV page");
    RETURN_ERROR_IF(srcSize < 1, corruption_detected, "empty KV page");
    if (in[0] == GLYD_KV_STORED) {
        RETURN_ERROR_IF(srcSize != glyd_kvPageBound(n), corruption_detected, "stored KV page of another size");
        for (i = 0; i < n; i++) dst[i] = (uint16_t)(in[1 + 2 * i] | in[2 + 2 * i] << 8);
        return n;
    }
    RETURN_ERROR_IF(in[0] != GLYD_KV_TIERED, corruption_detected, "KV page layout");
    RETURN_ERROR_IF(srcSize < tiered_size(n, 0, 0), corruption_detected, "KV page too short");
    memset(&k, 0, sizeof k);
    k.signs = in + 1;
    k.codes = k.signs + n;
    /* escapes of the first tier size the second plane; what is left after
     * it must be the raw exponents */
    e1 = count_escapes_in(k.codes, (n + 3) / 4);
    RETURN_ERROR_IF(n % 4 && k.codes[n / 4] >> 2 * (n % 4), corruption_detected, "KV page padding");
    RETURN_ERROR_IF(srcSize < tiered_size(n, e1, 0), corruption_detected, "KV page too short");
    k.escapes = k.codes + (n + 3) / 4;
    k.escSize = (3 * e1 + 7) / 8;
    k.raw = k.escapes + k.escSize;
    k.rawCount = srcSize - tiered_size(n, e1, 0);
    memcpy(k.tier1, table->exponent, KV_TIER1);
    memcpy(k.tier2, table->exponent + KV_TIER1, KV_TIER2);
    i = 0;
#if KV_SIMD
    if (glyd_tensorSimdLimitGet() >= GLYD_SIMD_AVX512 && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
        __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2")) {
        RETURN_ERROR_IF(!decode_groups_avx512(&k, n / 32, dst), corruption_detected, "KV page's raw exponents");
        i = n / 32 * 32;
    } else if (glyd_tensorSimdLimitGet() >= GLYD_SIMD_AVX2 && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("bmi")) {
        RETURN_ERROR_IF(!decode_groups_avx2(&k, n / 32, dst), corruption_detected, "KV page's raw exponents");
        i = n / 32 * 32;
    }
#endif
    for (; i < n; i++) RETURN_ERROR_IF(!decode_one(&k, i, dst), corruption_detected, "KV page's raw exponents");
    RETURN_ERROR_IF(k.r != k.rawCount, corruption_detected, "KV page's raw exponents");
    RETURN_ERROR_IF(k.bit % 8 && k.escapes[k.bit / 8] >> k.bit % 8, corruption_detected, "KV page padding");
    return n;
}

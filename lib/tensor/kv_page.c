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

size_t glyd_kvPageDecode(uint16_t* dst, size_t n, const void* src, size_t srcSize, const glyd_kvTable* table)
{
    const uint8_t* const in = (const uint8_t*)src;
    size_t i, e1 = 0, e2 = 0, escSize, bit = 0, r = 0;
    const uint8_t *signs, *codes, *escapes, *raw;
    RETURN_ERROR_IF(n == 0 || n > GLYD_KV_PAGE_MAX, parameter_outOfBound, "values in a KV page");
    RETURN_ERROR_IF(srcSize < 1, corruption_detected, "empty KV page");
    if (in[0] == GLYD_KV_STORED) {
        RETURN_ERROR_IF(srcSize != glyd_kvPageBound(n), corruption_detected, "stored KV page of another size");
        for (i = 0; i < n; i++) dst[i] = (uint16_t)(in[1 + 2 * i] | in[2 + 2 * i] << 8);
        return n;
    }
    RETURN_ERROR_IF(in[0] != GLYD_KV_TIERED, corruption_detected, "KV page layout");
    RETURN_ERROR_IF(srcSize < tiered_size(n, 0, 0), corruption_detected, "KV page too short");
    signs = in + 1;
    codes = signs + n;
    /* escapes of the first tier: they size the second plane */
    for (i = 0; i < (n + 3) / 4; i++) {
        unsigned const c = codes[i];
        /* a pair of bits 11 is an escape */
        e1 += (unsigned)__builtin_popcount(c & (c >> 1) & 0x55);
    }
    RETURN_ERROR_IF(n % 4 && codes[n / 4] >> 2 * (n % 4), corruption_detected, "KV page padding");
    escapes = codes + (n + 3) / 4;
    escSize = (3 * e1 + 7) / 8;
    RETURN_ERROR_IF(srcSize < tiered_size(n, e1, 0), corruption_detected, "KV page too short");
    raw = escapes + escSize;
    e2 = srcSize - tiered_size(n, e1, 0); /* what is left must be the raw exponents, exactly */
    for (i = 0; i < n; i++) {
        unsigned const code = codes[i / 4] >> 2 * (i % 4) & 3;
        uint8_t const sm = signs[i];
        unsigned e;
        if (code < KV_TIER1) {
            e = table->exponent[code];
        } else {
            unsigned second = escapes[bit / 8] >> bit % 8;
            if (bit % 8 > 5) second |= (unsigned)escapes[bit / 8 + 1] << (8 - bit % 8);
            second &= 7;
            bit += 3;
            if (second < KV_ESCAPE2) {
                e = table->exponent[KV_TIER1 + second];
            } else {
                RETURN_ERROR_IF(r == e2, corruption_detected, "KV page's raw exponents");
                e = raw[r++];
            }
        }
        dst[i] = (uint16_t)((sm & 0x80) << 8 | e << 7 | (sm & 0x7F));
    }
    RETURN_ERROR_IF(r != e2, corruption_detected, "KV page's raw exponents");
    RETURN_ERROR_IF(bit % 8 && escapes[bit / 8] >> bit % 8, corruption_detected, "KV page padding");
    return n;
}

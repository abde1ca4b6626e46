/* SPDX-License-Identifier: BSD-3-Clause */
/* test_kv_page.c: KV pages (glyd_kvPage*): the real caches of the kv
 * fixture come back exactly, page by page, in under 0.70 of their bf16
 * bytes; so do every bf16 pattern, pages of one value, pages of every
 * size up to the largest, and values a table does not know; damaged and
 * truncated pages are refused, never read past; every SIMD path decodes
 * what the portable one does. */
#include <stdlib.h>
#include <string.h>

#include "glyd_tensor.h"
#include "../../lib/tensor/tensor.h"
#include "../../llm/model/model.h"
#include "harness.h"

/* glyd_kvPageDecode on each SIMD path the CPU has, the same result from
 * each (the first's returned). */
static size_t decode_every_path(uint16_t* dst, size_t n, const void* page, size_t size, const glyd_kvTable* table)
{
    uint16_t* const other = (uint16_t*)malloc(n * sizeof(uint16_t) + 1);
    size_t first = 0;
    int level;
    CHECK(other != NULL);
    for (level = GLYD_SIMD_NONE; other && level <= GLYD_SIMD_BEST; level++) {
        size_t r;
        glyd_tensorSimdLimit(level);
        r = glyd_kvPageDecode(level ? other : dst, n, page, size, table);
        if (level == GLYD_SIMD_NONE) first = r;
        else CHECK(r == first && (glyd_isError(r) || !memcmp(other, dst, n * sizeof(uint16_t))));
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    free(other);
    return first;
}

/* Codes values[0..n) under table and checks that they come back, that the
 * page has the size glyd_kvPageSize promised and that every shorter or
 * longer page is refused. Returns the page's size (0 on a failure). */
static size_t page_round_trip(const uint16_t* values, size_t n, const glyd_kvTable* table)
{
    size_t const cap = glyd_kvPageBound(n);
    uint8_t* const page = (uint8_t*)malloc(cap + 1);
    uint16_t* const back = (uint16_t*)malloc(n * sizeof(uint16_t));
    size_t size = 0;
    CHECK(page && back);
    if (page && back) {
        size = glyd_kvPageEncode(page, cap, values, n, table);
        CHECK_OK(size);
        if (glyd_isError(size)) size = 0;
        CHECK(size == glyd_kvPageSize(values, n, table));
        CHECK(size <= cap);
        if (size) {
            CHECK(decode_every_path(back, n, page, size, table) == n);
            CHECK(!memcmp(back, values, n * sizeof(uint16_t)));
            CHECK_ERR(decode_every_path(back, n, page, size - 1, table), GLYD_error_corruption_detected);
            page[size] = 0;
            CHECK_ERR(decode_every_path(back, n, page, size + 1, table), GLYD_error_corruption_detected);
        }
    }
    free(page);
    free(back);
    return size;
}

/* The fixture's caches: each tensor [..., positions, heads, headDim], a
 * stream per head (and per leading index, a passage), coded in pages of
 * `positions` positions with a table fitted on the stream's first page.
 * Returns the pages' bytes, *values the values coded. */
static size_t code_fixture(size_t positions, size_t* values)
{
    char path[1024];
    size_t fileSize, coded = 0, t;
    uint8_t* file;
    glyd_safetensors st;
    const char* why = NULL;
    *values = 0;
    snprintf(path, sizeof path, "%s/../fixtures/kv/kv.safetensors", corpus_dir());
    file = read_file(path, &fileSize);
    CHECK(file != NULL);
    if (!file) return 0;
    CHECK_OK(glyd_stParse(&st, file, fileSize, &why));
    for (t = 0; t < st.nbTensors; t++) {
        const glyd_stTensor* const ten = &st.tensors[t];
        const uint16_t* const all = (const uint16_t*)(file + st.dataStart + ten->begin);
        size_t const dim = (size_t)ten->shape[ten->ndim - 1], heads = (size_t)ten->shape[ten->ndim - 2];
        size_t const length = (size_t)ten->shape[ten->ndim - 3];
        size_t const sequences = (size_t)ten->nbElements / (dim * heads * length);
        uint16_t* const page = (uint16_t*)malloc(positions * dim * sizeof(uint16_t));
        size_t s, h, p, k;
        CHECK(ten->dtype == GLYD_ST_BF16 && ten->ndim >= 3 && page);
        if (ten->dtype != GLYD_ST_BF16 || ten->ndim < 3 || !page) { free(page); continue; }
        for (s = 0; s < sequences; s++) {
            for (h = 0; h < heads; h++) {
                glyd_kvTable table;
                for (p = 0; p < length; p += positions) {
                    size_t const rows = length - p < positions ? length - p : positions;
                    for (k = 0; k < rows; k++)
                        memcpy(page + k * dim, all + ((s * length + p + k) * heads + h) * dim, dim * sizeof(uint16_t));
                    if (p == 0) glyd_kvTableFit(&table, page, rows * dim);
                    coded += page_round_trip(page, rows * dim, &table);
                    *values += rows * dim;
                }
            }
        }
        free(page);
    }
    glyd_stFree(&st);
    free(file);
    return coded;
}

TEST(kv_pages_of_real_caches_come_back_in_less)
{
    size_t values, bytes;
    /* pages of 16 positions, as many as the engine's */
    bytes = code_fixture(16, &values);
    CHECK(values == 9457664);
    /* the order-0 bound is 0.665 of bf16's bytes, the mark 0.70 */
    CHECK(bytes < 0.70 * 2.0 * (double)values);
}

TEST(kv_pages_keep_every_bf16_pattern)
{
    static uint16_t all[GLYD_KV_PAGE_MAX];
    glyd_kvTable fitted, other;
    size_t i, n;
    for (i = 0; i < GLYD_KV_PAGE_MAX; i++) all[i] = (uint16_t)i; /* NaNs, infinities, subnormals, -0 */
    glyd_kvTableFit(&fitted, all, GLYD_KV_PAGE_MAX);
    /* all ten exponents differ even where every count is the same */
    for (i = 0; i < GLYD_KV_TABLE_SIZE; i++)
        for (n = 0; n < i; n++) CHECK(fitted.exponent[i] != fitted.exponent[n]);
    /* uniform exponents: the page is stored */
    CHECK(page_round_trip(all, GLYD_KV_PAGE_MAX, &fitted) == glyd_kvPageBound(GLYD_KV_PAGE_MAX));
    /* every pattern among values that make the page pay, in pages of
     * several sizes (the codes' padding differs with n % 4) */
    for (i = 0; i < 64; i++) all[i] = 0x3F80; /* 1.0 */
    glyd_kvTableFit(&other, all, 64);
    {
        static const size_t kSizes[] = { 1, 2, 3, 4, 5, 7, 16, 100, 1024 };
        static uint16_t page[1024];
        size_t s;
        for (s = 0; s < sizeof kSizes / sizeof kSizes[0]; s++) {
            size_t next = 0, k;
            n = kSizes[s];
            while (next < GLYD_KV_PAGE_MAX) {
                for (k = 0; k < n; k++)
                    page[k] = (n == 1 || k % 2 == 0) && next < GLYD_KV_PAGE_MAX ? (uint16_t)next++
                                                                          : (uint16_t)(0x3F80 ^ (k & 0x807F));
                page_round_trip(page, n, &other);
            }
        }
    }
}

TEST(kv_pages_of_one_value_and_of_every_tier)
{
    static uint16_t page[4096];
    glyd_kvTable table;
    size_t i, size;
    for (i = 0; i < 4096; i++) page[i] = 0xBF80; /* -1.0 */
    glyd_kvTableFit(&table, page, 4096);
    CHECK(table.exponent[0] == 0x7F);
    /* a byte and 2 bits a value */
    size = page_round_trip(page, 4096, &table);
    CHECK(size == 1 + 4096 + 1024);
    /* values in each tier: first, second (an escape), neither (two) */
    for (i = 0; i < 4096; i++) {
        unsigned const tier = (unsigned)(i * 2654435761u >> 7) % 3;
        unsigned const e = tier == 0 ? table.exponent[i % 3] : tier == 1 ? table.exponent[3 + i % 7] : 200 + i % 50;
        page[i] = (uint16_t)((i & 1) << 15 | e << 7 | (i & 0x7F));
    }
    size = page_round_trip(page, 4096, &table);
    CHECK(size > 1 + 4096 + 1024 && size < glyd_kvPageBound(4096));
}

TEST(kv_pages_refuse_damage_and_bad_arguments)
{
    static uint16_t values[512], back[512];
    uint8_t page[1 + 2 * 512];
    glyd_kvTable table;
    size_t i, size;
    unsigned bit;
    for (i = 0; i < 512; i++) values[i] = (uint16_t)(0x3C00 + (i * 7919 % 1031)); /* exponents 120-127 */
    values[100] = 0x7F80;                                                           /* +inf: a raw exponent */
    glyd_kvTableFit(&table, values, 512);
    size = glyd_kvPageEncode(page, sizeof page, values, 511, &table); /* 511: the codes have padding */
    CHECK_OK(size);
    if (glyd_isError(size)) return;
    CHECK(page[0] == 1); /* tiered */
    /* every truncation, and every bit flipped: refused or decoded, never
     * read or written past (the sanitizers watch) */
    for (i = 0; i < size; i++) CHECK(glyd_isError(decode_every_path(back, 511, page, i, &table)));
    for (i = 0; i < size; i++) {
        for (bit = 0; bit < 8; bit++) {
            size_t r;
            page[i] ^= (uint8_t)(1u << bit);
            r = decode_every_path(back, 511, page, size, &table);
            CHECK(glyd_isError(r) || r == 511);
            page[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* the codes' padding (the pair of bits after 511 values) must be zero */
    page[1 + 511 + 127] |= 0xC0;
    CHECK_ERR(glyd_kvPageDecode(back, 511, page, size, &table), GLYD_error_corruption_detected);
    page[1 + 511 + 127] &= 0x3F;
    CHECK(glyd_kvPageDecode(back, 511, page, size, &table) == 511 && !memcmp(back, values, 511 * 2));
    /* a layout this version does not know */
    page[0] = 2;
    CHECK_ERR(glyd_kvPageDecode(back, 511, page, size, &table), GLYD_error_corruption_detected);
    page[0] = 1;
    CHECK_ERR(glyd_kvPageEncode(page, sizeof page, values, 0, &table), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_kvPageEncode(page, sizeof page, values, GLYD_KV_PAGE_MAX + 1, &table),
              GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_kvPageDecode(back, 0, page, size, &table), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_kvPageEncode(page, size - 1, values, 511, &table), GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_kvPageSize(values, 0, &table), GLYD_error_parameter_outOfBound);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_kv_page.c: KV pages (glyd_kvPage*, include/glyd_tensor.h). The
 * input's first ten bytes are a table and the next two a count of values
 * (and where to damage a page); the rest, taken as bf16 values, must come
 * back exactly through a page coded under the table and under the table
 * fitted on them; that page with a byte changed, and the rest taken as a
 * page, must be refused or decode to as many values as asked, never
 * reading or writing out of bounds, the same on every SIMD path, and what
 * decodes must code back to a page that decodes to the same values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glyd_tensor.h"
#include "../../lib/tensor/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

/* Values through a page under table, and back. */
static void round_trip(const uint16_t* values, size_t n, const glyd_kvTable* table)
{
    static uint8_t coded[1 + 2 * GLYD_KV_PAGE_MAX];
    static uint16_t back[GLYD_KV_PAGE_MAX];
    size_t const s = glyd_kvPageEncode(coded, sizeof coded, values, n, table);
    REQUIRE(!glyd_isError(s) && s == glyd_kvPageSize(values, n, table));
    REQUIRE(glyd_kvPageDecode(back, n, coded, s, table) == n);
    REQUIRE(memcmp(back, values, n * sizeof(uint16_t)) == 0);
}

/* A page of n values decoded where it can be: refused or n values that
 * code again, the same on every SIMD path. */
static void hostile(const uint8_t* page, size_t size, size_t n, const glyd_kvTable* table)
{
    static uint16_t values[GLYD_KV_PAGE_MAX], other[GLYD_KV_PAGE_MAX];
    size_t r;
    int level;
    glyd_tensorSimdLimit(GLYD_SIMD_NONE);
    r = glyd_kvPageDecode(values, n, page, size, table);
    REQUIRE(r == n || glyd_getErrorCode(r) == GLYD_error_corruption_detected);
    for (level = GLYD_SIMD_AVX2; level <= GLYD_SIMD_BEST; level++) {
        glyd_tensorSimdLimit(level);
        REQUIRE(glyd_kvPageDecode(other, n, page, size, table) == r);
        REQUIRE(r != n || memcmp(other, values, n * sizeof(uint16_t)) == 0);
    }
    if (r == n) round_trip(values, n, table);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static uint16_t values[GLYD_KV_PAGE_MAX];
    static uint8_t page[1 + 2 * GLYD_KV_PAGE_MAX];
    glyd_kvTable table, fitted;
    size_t n, k, asked, at;
    if (size < GLYD_KV_TABLE_SIZE + 2) return 0;
    memcpy(table.exponent, data, GLYD_KV_TABLE_SIZE);
    asked = ((size_t)data[GLYD_KV_TABLE_SIZE] | (size_t)data[GLYD_KV_TABLE_SIZE + 1] << 8) + 1;
    data += GLYD_KV_TABLE_SIZE + 2;
    size -= GLYD_KV_TABLE_SIZE + 2;

    n = size / 2;
    if (n > 0) {
        size_t s;
        for (k = 0; k < n; k++) values[k] = (uint16_t)(data[2 * k] | data[2 * k + 1] << 8);
        round_trip(values, n, &table);
        glyd_kvTableFit(&fitted, values, n);
        round_trip(values, n, &fitted);
        s = glyd_kvPageEncode(page, sizeof page, values, n, &fitted);
        REQUIRE(!glyd_isError(s));
        at = asked % s;
        page[at] ^= (uint8_t)(asked >> 8 | 1);
        hostile(page, s, n, &fitted);
    }
    hostile(data, size, asked, &table);
    return 0;
}

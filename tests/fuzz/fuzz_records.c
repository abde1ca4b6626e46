/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_records.c: log columns (lib/records). Each input is, in turn, text
 * that must come back byte for byte through its columns, and columns that
 * must be refused or rebuild exactly the size their header promises,
 * never reading or writing out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/records/records.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    size_t const cap = 8 * size + 64;
    uint8_t* const cols = (uint8_t*)malloc(cap);
    uint8_t* back = (uint8_t*)malloc(size + 1);
    size_t r, promised;
    REQUIRE(cols && back);
    /* as text */
    r = glyd_logToColumns(cols, cap, data, size);
    REQUIRE(!glyd_isError(r));
    REQUIRE(glyd_logFromColumns(back, size, cols, r) == size);
    REQUIRE(memcmp(back, data, size) == 0);
    free(back);
    /* as columns: a rebuilt text of at most 1 MiB */
    promised = glyd_logRebuiltSize(data, size);
    if (!glyd_isError(promised) && promised <= (1u << 20)) {
        back = (uint8_t*)malloc(promised + 1);
        REQUIRE(back);
        r = glyd_logFromColumns(back, promised, data, size);
        REQUIRE(glyd_isError(r) || r == promised);
        free(back);
    }
    free(cols);
    return 0;
}

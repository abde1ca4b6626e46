/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_cm.c: the context-mixing coder (lib/entropy/cm.h). Each input must
 * come back byte for byte through a stream; that stream with one byte
 * changed (where the input says), and the input itself taken as a stream
 * (of a size its first two bytes give), must be refused or decode to the
 * size asked, never reading or writing out of bounds. Inputs past
 * INPUT_MAX bytes are cut there. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/entropy/cm.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

/* Inputs and decoded sizes kept short: the coder runs at about 1 MB/s,
 * far slower under the sanitizers and the fuzzer's tracing of compares
 * (most of a run: setting up a model's tables four times), so that the
 * fuzzer gets through several hundred runs in CI's half minute. */
#define INPUT_MAX 512
#define DECODED_MAX 2047

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    size_t const cap = GLYD_MIN(size, INPUT_MAX) + INPUT_MAX / 8 + 64;
    uint8_t* const stream = (uint8_t*)malloc(cap);
    uint8_t* back = (uint8_t*)malloc(size + 1);
    size_t r, s;
    REQUIRE(stream && back);
    size = GLYD_MIN(size, INPUT_MAX);
    s = glyd_cmCompress(stream, cap, data, size);
    REQUIRE(!glyd_isError(s));
    REQUIRE(glyd_cmDecompress(back, size, stream, s) == size);
    REQUIRE(memcmp(back, data, size) == 0);
    if (size >= 2) {
        size_t const at = ((size_t)data[0] << 8 | data[1]) % s;
        stream[at] ^= (uint8_t)(data[size - 1] | 1);
        r = glyd_cmDecompress(back, size, stream, s);
        REQUIRE(r == size || glyd_getErrorCode(r) == GLYD_error_corruption_detected);
    }
    free(back);
    if (size >= 2) {
        size_t const n = ((size_t)data[0] | (size_t)data[1] << 8) & DECODED_MAX;
        back = (uint8_t*)malloc(n + 1);
        REQUIRE(back);
        r = glyd_cmDecompress(back, n, data + 2, size - 2);
        REQUIRE(r == n || glyd_getErrorCode(r) == GLYD_error_corruption_detected);
        free(back);
    }
    free(stream);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cm.c: the context-mixing coder (lib/entropy/cm.h): the corpus and
 * odd inputs come back byte for byte, logs, tables and prose in less than
 * the block coder's level 19 takes; a stream that does not fit is refused;
 * damaged, truncated and padded streams are refused or decode to the size
 * asked, never out of bounds. */
#include <stdlib.h>
#include <string.h>

#include "../../lib/entropy/cm.h"
#include "harness.h"

/* src[0..n) through the coder and back; returns the stream's size (0 on a
 * failure, which is reported). */
static size_t cm_round_trip(const uint8_t* src, size_t n)
{
    size_t const cap = n + n / 8 + 64;
    uint8_t* const stream = (uint8_t*)malloc(cap);
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    size_t size = 0, r;
    CHECK(stream && back);
    if (stream && back) {
        r = glyd_cmCompress(stream, cap, src, n);
        CHECK_OK(r);
        if (!glyd_isError(r)) {
            CHECK(glyd_cmDecompress(back, n, stream, r) == n);
            CHECK(memcmp(back, src, n) == 0);
            size = r;
        }
    }
    free(stream);
    free(back);
    return size;
}

TEST(cm_round_trips_the_corpus_in_less_than_level_19)
{
    static const char* const kFolders[] = { "logs", "tables", "text" };
    size_t const most = harness_quick() ? 65536 : 1u << 18;
    size_t f;
    for (f = 0; f < 3; f++) {
        char* paths[64];
        int const nb = corpus_files(kFolders[f], paths, 64);
        int k;
        for (k = 0; k < nb; k++) {
            size_t n;
            uint8_t* const data = read_file(paths[k], &n);
            if (data) {
                size_t const take = GLYD_MIN(n, most);
                size_t const cap = glyd_compressBound(take);
                uint8_t* const lz = (uint8_t*)malloc(cap);
                size_t const cm = cm_round_trip(data, take);
                size_t const level19 = lz ? glyd_compress(lz, cap, data, take, 19) : 0;
                CHECK_OK(level19);
                /* logs, tables and prose: under the block coder's level 19;
                 * anything else (a JPEG, game records) at most a little
                 * more than itself */
                if (f < 2 || strstr(paths[k], ".txt")) CHECK(cm > 0 && cm < level19);
                else CHECK(cm > 0 && cm <= take + take / 64 + 16);
                free(lz);
            }
            free(data);
            free(paths[k]);
        }
    }
}

TEST(cm_round_trips_odd_inputs)
{
    size_t const big = harness_quick() ? 65536 : 1u << 20;
    uint8_t* const buf = (uint8_t*)malloc(big);
    test_rng rng = { 0x5EED };
    size_t i, size;
    CHECK(buf);
    if (!buf) return;
    /* nothing, one byte, every byte value */
    CHECK(cm_round_trip(buf, 0) == 4);
    buf[0] = 'x';
    CHECK(cm_round_trip(buf, 1) > 0);
    for (i = 0; i < 4096; i++) buf[i] = (uint8_t)(i * 7 + (i >> 8));
    CHECK(cm_round_trip(buf, 4096) > 0);
    /* one byte repeated: next to nothing */
    memset(buf, 0xA5, big);
    size = cm_round_trip(buf, big);
    CHECK(size > 0 && size < 64 + big / 1000);
    /* noise: little more than itself */
    rng_fill(&rng, buf, big);
    size = cm_round_trip(buf, big);
    CHECK(size > 0 && size <= big + big / 64 + 16);
    /* lines of one column, the byte above repeating */
    for (i = 0; i < big; i++) buf[i] = i % 17 == 16 ? '\n' : (uint8_t)('a' + (i % 17 + i / 170) % 26);
    size = cm_round_trip(buf, big);
    CHECK(size > 0 && size < big / 20);
    free(buf);
}

TEST(cm_refuses_a_stream_that_does_not_fit)
{
    static const char kText[] = "a stream of some length, that cannot fit in eight bytes of output at all";
    uint8_t out[256];
    size_t const n = sizeof kText - 1;
    size_t const size = glyd_cmCompress(out, sizeof out, kText, n);
    CHECK_OK(size);
    CHECK_ERR(glyd_cmCompress(out, 3, kText, n), GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_cmCompress(out, 8, kText, n), GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_cmCompress(out, size - 1, kText, n), GLYD_error_dstSize_tooSmall);
    CHECK(glyd_cmCompress(out, size, kText, n) == size);
}

TEST(cm_refuses_damaged_streams)
{
    size_t n, size, i;
    char* paths[64];
    int const nb = corpus_files("logs", paths, 64);
    uint8_t *data = NULL, *stream, *back;
    int k;
    for (k = 0; k < nb; k++) {
        if (!data) data = read_file(paths[k], &n);
        free(paths[k]);
    }
    if (!data) return;
    n = GLYD_MIN(n, 2000);
    stream = (uint8_t*)malloc(n + 64);
    back = (uint8_t*)malloc(n + 1);
    CHECK(stream && back);
    if (stream && back) {
        size = glyd_cmCompress(stream, n + 63, data, n);
        CHECK_OK(size);
        /* every truncation, and a byte too many */
        for (i = 0; i < size; i++) CHECK_ERR(glyd_cmDecompress(back, n, stream, i), GLYD_error_corruption_detected);
        stream[size] = 0;
        CHECK_ERR(glyd_cmDecompress(back, n, stream, size + 1), GLYD_error_corruption_detected);
        /* bits flipped: refused, or some text of the size asked (which the
         * frame's checksum or the columns' structure then judges) */
        for (i = 0; i < size * 8; i += harness_quick() ? 29 : 3) {
            size_t r;
            stream[i / 8] ^= (uint8_t)(1u << (i % 8));
            r = glyd_cmDecompress(back, n, stream, size);
            CHECK(r == n || glyd_getErrorCode(r) == GLYD_error_corruption_detected);
            stream[i / 8] ^= (uint8_t)(1u << (i % 8));
        }
        /* the intact stream still decodes */
        CHECK(glyd_cmDecompress(back, n, stream, size) == n && memcmp(back, data, n) == 0);
    }
    free(stream);
    free(back);
    free(data);
}

TEST(cm_streams_do_not_depend_on_the_run)
{
    static const char kText[] = "2015-10-18 18:01:47,978 INFO [main] job 17 started\n"
                                "2015-10-18 18:01:48,012 INFO [main] job 18 started\n";
    uint8_t a[256], b[256];
    size_t const n = sizeof kText - 1;
    size_t const x = glyd_cmCompress(a, sizeof a, kText, n);
    size_t const y = glyd_cmCompress(b, sizeof b, kText, n);
    CHECK_OK(x);
    CHECK(x == y && memcmp(a, b, x) == 0);
    CHECK(glyd_cmMemory(n) < glyd_cmMemory(1u << 24));
}

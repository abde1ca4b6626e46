/* SPDX-License-Identifier: BSD-3-Clause */
/* test_common.c: the base layer: errors, varints, bit streams, thread pool. */
#include <stdatomic.h>
#include <stdlib.h>

#include "../../lib/common/common.h"
#include "harness.h"

TEST(error_codes_are_pinned)
{
    /* these values are part of the ABI */
    CHECK(GLYD_error_prefix_unknown == 10);
    CHECK(GLYD_error_corruption_detected == 20);
    CHECK(GLYD_error_checksum_wrong == 22);
    CHECK(GLYD_error_dstSize_tooSmall == 70);
    CHECK(GLYD_error_maxCode == 120);
    CHECK(!glyd_isError(0));
    CHECK(!glyd_isError(12345));
    CHECK(glyd_isError(GLYD_ERROR(corruption_detected)));
    CHECK(glyd_getErrorCode(GLYD_ERROR(checksum_wrong)) == GLYD_error_checksum_wrong);
    CHECK(glyd_getErrorCode(7) == GLYD_error_no_error);
    CHECK(strcmp(glyd_getErrorName(GLYD_ERROR(checksum_wrong)), "Restored data doesn't match checksum") == 0);
    CHECK(strcmp(glyd_getErrorString((glyd_ErrorCode)99), "Unspecified error code") == 0);
}

TEST(varint_round_trip_and_limits)
{
    uint8_t buf[16];
    uint64_t const values[] = { 0, 1, 127, 128, 255, 16383, 16384, 1u << 20, 0xFFFFFFFFULL,
                                0x123456789ABCDEFULL, ~0ULL };
    size_t i;
    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        uint64_t v = 0;
        size_t const w = glyd_writeVarint(buf, sizeof buf, values[i]);
        CHECK(w == glyd_varintSize(values[i]));
        CHECK(glyd_readVarint(buf, w, &v) == w);
        CHECK(v == values[i]);
        CHECK(glyd_readVarint(buf, w - 1, &v) == 0); /* truncated */
        CHECK(glyd_writeVarint(buf, w - 1, values[i]) == 0);
    }
    /* non-canonical encodings and overlong ones are refused */
    {
        uint64_t v;
        uint8_t zero[2] = { 0x81, 0x00 };
        uint8_t big[11] = { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0 };
        uint8_t endless[12];
        memset(endless, 0xFF, sizeof endless);
        CHECK(glyd_readVarint(zero, 2, &v) == 0);
        CHECK(glyd_readVarint(big, 10, &v) == 0);
        CHECK(glyd_readVarint(endless, sizeof endless, &v) == 0);
    }
}

TEST(backward_bits_round_trip)
{
    /* random fields of 0..56 bits, read back in reverse order */
    enum { N = 20000 };
    static uint64_t vals[N];
    static unsigned lens[N];
    static uint8_t buf[N * 8 + 16];
    test_rng r = { 42 };
    glyd_bitWriter bw;
    glyd_bitReader br;
    size_t i, size;
    int ok = 1;
    glyd_bitWriterInit(&bw, buf, sizeof buf);
    for (i = 0; i < N; i++) {
        lens[i] = (unsigned)(rng_next(&r) % 57);
        vals[i] = lens[i] ? rng_next(&r) >> (64 - lens[i]) : 0;
        glyd_bitWrite(&bw, vals[i], lens[i]);
        glyd_bitFlush(&bw);
    }
    size = glyd_bitWriterClose(&bw);
    CHECK(size > 0);
    CHECK_OK(glyd_bitReaderInit(&br, buf, size));
    for (i = N; i-- > 0;) {
        glyd_bitReload(&br);
        if (glyd_bitRead(&br, lens[i]) != vals[i]) ok = 0;
    }
    CHECK(ok);
    glyd_bitReload(&br);
    CHECK(glyd_bitFinished(&br));
}

TEST(backward_bits_short_streams_and_overflow)
{
    uint8_t buf[32];
    glyd_bitWriter bw;
    glyd_bitReader br;
    size_t size;
    glyd_bitWriterInit(&bw, buf, sizeof buf);
    glyd_bitWrite(&bw, 5, 3);
    glyd_bitWrite(&bw, 0x1FF, 9);
    size = glyd_bitWriterClose(&bw);
    CHECK(size == 2);
    CHECK_OK(glyd_bitReaderInit(&br, buf, size));
    CHECK(glyd_bitRead(&br, 9) == 0x1FF);
    CHECK(glyd_bitRead(&br, 3) == 5);
    CHECK(glyd_bitReload(&br) == glyd_bit_completed);
    /* reading past the end is reported, never undefined */
    glyd_bitRead(&br, 20);
    CHECK(glyd_bitReload(&br) == glyd_bit_overflow);
    /* a stream must end with its marker */
    buf[0] = 0x10; buf[1] = 0;
    CHECK_ERR(glyd_bitReaderInit(&br, buf, 2), GLYD_error_corruption_detected);
    CHECK_ERR(glyd_bitReaderInit(&br, buf, 0), GLYD_error_corruption_detected);
    /* a writer too small for its content reports it */
    glyd_bitWriterInit(&bw, buf, 8);
    {
        int k;
        for (k = 0; k < 10; k++) { glyd_bitWrite(&bw, 0x1234567, 25); glyd_bitFlush(&bw); }
    }
    CHECK(glyd_bitWriterClose(&bw) == 0);
}

TEST(forward_bits_round_trip)
{
    uint8_t buf[4096];
    glyd_fwdWriter w;
    glyd_fwdReader rd;
    test_rng r = { 7 };
    unsigned lens[1000];
    uint32_t vals[1000];
    size_t i, size;
    int ok = 1;
    glyd_fwdWriterInit(&w, buf, sizeof buf);
    for (i = 0; i < 1000; i++) {
        lens[i] = (unsigned)(rng_next(&r) % 25);
        vals[i] = lens[i] ? (uint32_t)(rng_next(&r) >> (64 - lens[i])) : 0;
        glyd_fwdWrite(&w, vals[i], lens[i]);
    }
    size = glyd_fwdWriterClose(&w);
    CHECK(size > 0);
    glyd_fwdReaderInit(&rd, buf, size);
    for (i = 0; i < 1000; i++)
        if (glyd_fwdRead(&rd, lens[i]) != vals[i]) ok = 0;
    CHECK(ok);
    CHECK(!glyd_fwdReaderOverrun(&rd));
    glyd_fwdRead(&rd, 24);
    glyd_fwdRead(&rd, 24);
    CHECK(glyd_fwdReaderOverrun(&rd));
}

static atomic_int g_jobsDone;
static void count_job(void* arg)
{
    (void)arg;
    atomic_fetch_add(&g_jobsDone, 1);
}

TEST(thread_pool_runs_every_job)
{
    glyd_pool* const pool = glyd_poolCreate(3, glyd_defaultCMem);
    int i;
    CHECK(pool != NULL);
    if (!pool) return;
    CHECK(glyd_poolSize(pool) == 3);
    atomic_store(&g_jobsDone, 0);
    for (i = 0; i < 1000; i++) glyd_poolAdd(pool, count_job, NULL); /* more than the queue holds */
    glyd_poolWait(pool);
    CHECK(atomic_load(&g_jobsDone) == 1000);
    glyd_poolFree(pool);
    CHECK(glyd_poolCreate(0, glyd_defaultCMem) == NULL);
    CHECK(glyd_nbCores() >= 1);
}

TEST(count_common_prefix)
{
    uint8_t a[100], b[100];
    size_t i;
    for (i = 0; i < 100; i++) a[i] = b[i] = (uint8_t)i;
    CHECK(glyd_count(a, b, a + 100) == 100);
    b[37] ^= 1;
    CHECK(glyd_count(a, b, a + 100) == 37);
    CHECK(glyd_count(a, b, a + 5) == 5);
    b[0] ^= 1;
    CHECK(glyd_count(a, b, a + 100) == 0);
}

/* The frame checksum: XXH3-64 through whichever build the CPU gets (the AVX2
 * one here on most machines, the plain one in `make portable`) must equal
 * libxxhash's, one-shot and streamed in pieces; XXH64 likewise. */
TEST(checksums_match_libxxhash)
{
    size_t const max = 1 << 20;
    uint8_t* const buf = (uint8_t*)malloc(max);
    glyd_csum* const c = (glyd_csum*)malloc(sizeof(glyd_csum));
    test_rng r = { 77 };
    size_t sizes[40], k;
    int ok = 1;
    rng_fill(&r, buf, max);
    for (k = 0; k < 32; k++) sizes[k] = k * 37; /* every XXH3 short-input path */
    sizes[32] = 240; sizes[33] = 241; sizes[34] = 1024; sizes[35] = 1025;
    sizes[36] = 65536; sizes[37] = 100003; sizes[38] = max - 1; sizes[39] = max;
    for (k = 0; k < 40; k++) {
        size_t const n = sizes[k];
        size_t pos = 0;
        if (glyd_csumOnce(glyd_csum_xxh3, buf, n) != XXH3_64bits(buf, n)) ok = 0;
        if (glyd_csumOnce(glyd_csum_xxh64, buf, n) != XXH64(buf, n, 0)) ok = 0;
        glyd_csumReset(c, glyd_csum_xxh3);
        while (pos < n) {
            size_t const draw = (size_t)(rng_next(&r) % 5000); /* GLYD_MIN evaluates twice */
            size_t const take = GLYD_MIN(n - pos, draw);
            glyd_csumUpdate(c, buf + pos, take);
            pos += take;
        }
        if (glyd_csumDigest(c) != XXH3_64bits(buf, n)) ok = 0;
        glyd_csumReset(c, glyd_csum_xxh64);
        glyd_csumUpdate(c, buf, n);
        if (glyd_csumDigest(c) != XXH64(buf, n, 0)) ok = 0;
    }
    CHECK(ok);
    free(c);
    free(buf);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* test_long.c: long-distance matching (glyd_c_longMatching, --long):
 * repeats far beyond the level's reach are found, in one shot, streamed, and
 * on workers; output always decodes to the input. */
#include <stdlib.h>
#include <string.h>

#include "../../include/glyd.h"
#include "harness.h"

/* A random chunk A, other random bytes B, then A again with a few bytes
 * changed: A's repeat lies |A| + |B| back, beyond any level's hash tables
 * at level 1 (whose window is 2^19). */
static uint8_t* distant_repeat(size_t chunk, size_t gap, size_t* n)
{
    test_rng r = { 77 };
    uint8_t* const p = (uint8_t*)malloc(2 * chunk + gap);
    size_t i;
    rng_fill(&r, p, chunk + gap);
    memcpy(p + chunk + gap, p, chunk);
    for (i = 0; i < 8; i++) p[chunk + gap + (rng_next(&r) % chunk)] ^= 0x5A;
    *n = 2 * chunk + gap;
    return p;
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

static size_t compress_long(const uint8_t* src, size_t n, int level, int longMatching, int windowLog,
                            int workers, uint8_t** out)
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t const cap = glyd_compressBound(n);
    size_t r;
    *out = (uint8_t*)malloc(cap);
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level));
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_longMatching, longMatching));
    if (windowLog) CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_windowLog, windowLog));
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_nbWorkers, workers));
    r = glyd_compress2(c, *out, cap, src, n);
    CHECK_OK(r);
    glyd_freeCCtx(c);
    return glyd_isError(r) ? 0 : r;
}

static int round_trips(const uint8_t* frame, size_t size, const uint8_t* src, size_t n)
{
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    size_t const r = glyd_decompress(back, n + 1, frame, size);
    int const ok = !glyd_isError(r) && r == n && memcmp(back, src, n) == 0;
    free(back);
    return ok;
}

TEST(long_matching_finds_distant_repeats)
{
    size_t const chunk = (size_t)3 << 20, gap = (size_t)2 << 20;
    size_t n, plain, withLong;
    uint8_t* const src = distant_repeat(chunk, gap, &n);
    uint8_t *a, *b;
    int level;
    for (level = 1; level <= 9; level += 8) {
        plain = compress_long(src, n, level, 0, 0, 0, &a);
        withLong = compress_long(src, n, level, 1, 0, 0, &b);
        /* random data: without the repeat nothing compresses */
        CHECK(plain > n - n / 100);
        /* with it, the second copy costs almost nothing */
        CHECK(withLong < chunk + gap + chunk / 100);
        CHECK(round_trips(a, plain, src, n));
        CHECK(round_trips(b, withLong, src, n));
        free(a);
        free(b);
    }
    free(src);
}

TEST(long_matching_window_is_sized_from_input_and_honoured)
{
    size_t const chunk = (size_t)1 << 20, gap = (size_t)3 << 20;
    size_t n, c;
    uint8_t* const src = distant_repeat(chunk, gap, &n);
    uint8_t* f;
    glyd_frameInfo info;
    /* the default long window covers the 5 MiB input: 2^23 */
    c = compress_long(src, n, 3, 1, 0, 0, &f);
    CHECK_OK(glyd_getFrameInfo(&info, f, c));
    CHECK(info.windowLog == 23);
    CHECK(c < chunk + gap + chunk / 100);
    CHECK(round_trips(f, c, src, n));
    free(f);
    /* an explicit window shorter than the repeat's distance: no long match
     * may cross it (the decoder would refuse the offset) */
    c = compress_long(src, n, 3, 1, 21, 0, &f);
    CHECK(c > n - n / 100);
    CHECK(round_trips(f, c, src, n));
    free(f);
    free(src);
}

TEST(long_matching_streamed_and_on_workers)
{
    size_t const chunk = (size_t)2 << 20, gap = (size_t)1 << 20;
    size_t n, c, pos = 0, outPos = 0, rem;
    uint8_t* const src = distant_repeat(chunk, gap, &n);
    size_t const cap = glyd_compressBound(n) + 1024;
    uint8_t* const dst = (uint8_t*)malloc(cap);
    glyd_CCtx* const cc = glyd_createCCtx();
    uint8_t* f;
    test_rng r = { 5 };
    /* streaming: the history moves in the context's buffer as input comes */
    CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_longMatching, 1));
    do {
        size_t const take = min_size(n - pos, (size_t)(rng_next(&r) % 300000) + 1);
        glyd_inBuffer in = { src + pos, take, 0 };
        glyd_outBuffer out = { dst + outPos, cap - outPos, 0 };
        rem = glyd_compressStream(cc, &out, &in, pos + take == n ? glyd_e_end : glyd_e_continue);
        CHECK_OK(rem);
        if (glyd_isError(rem)) break;
        pos += in.pos;
        outPos += out.pos;
    } while (pos < n || rem != 0);
    CHECK(outPos < chunk + gap + chunk / 100);
    CHECK(round_trips(dst, outPos, src, n));
    glyd_freeCCtx(cc);
    free(dst);
    /* workers code segments independently, each with its own long matcher */
    c = compress_long(src, n, 3, 1, 0, 2, &f);
    CHECK(round_trips(f, c, src, n));
    free(f);
    free(src);
}

TEST(long_matching_on_real_text_and_tiny_inputs)
{
    size_t n, c, i;
    char path[1024];
    uint8_t* data;
    uint8_t* f;
    snprintf(path, sizeof path, "%s/tables/diamonds.csv", corpus_dir());
    data = read_file(path, &n);
    if (!data) return;
    for (i = 0; i < 3; i++) {
        int const level = i == 0 ? -1 : i == 1 ? 3 : 12;
        c = compress_long(data, n, level, 1, 0, 0, &f);
        /* (the --fast levels code bytes without entropy coding) */
        CHECK(c > 0 && c < (level < 0 ? n / 2 : n / 3));
        CHECK(round_trips(f, c, data, n));
        free(f);
    }
    for (i = 0; i < 300; i += 7) {
        c = compress_long(data, i, 3, 1, 0, 0, &f);
        CHECK(round_trips(f, c, data, i));
        free(f);
    }
    free(data);
}

TEST(long_matching_parameter)
{
    glyd_CCtx* const c = glyd_createCCtx();
    int v = -1;
    glyd_bounds const b = glyd_cParam_getBounds(glyd_c_longMatching);
    CHECK(b.error == 0 && b.lowerBound == 0 && b.upperBound == 1);
    CHECK_OK(glyd_CCtx_getParameter(c, glyd_c_longMatching, &v));
    CHECK(v == 0);
    CHECK_ERR(glyd_CCtx_setParameter(c, glyd_c_longMatching, 2), GLYD_error_parameter_outOfBound);
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_longMatching, 1));
    CHECK_OK(glyd_CCtx_getParameter(c, glyd_c_longMatching, &v));
    CHECK(v == 1);
    CHECK_OK(glyd_CCtx_reset(c, glyd_reset_parameters));
    CHECK_OK(glyd_CCtx_getParameter(c, glyd_c_longMatching, &v));
    CHECK(v == 0);
    glyd_freeCCtx(c);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fastblock.c: the fast block of the --fast levels (docs/FORMAT.md,
 * section 16): round trips through every API path, edge cases, segments on
 * workers, and hostile blocks and frames, which must fail cleanly. */
#include <stdlib.h>

#include "../../lib/frame/frame.h"
#include "../../lib/lz/fastblock.h"
#include "harness.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

/* Decodes one-shot into a buffer of exactly n bytes (no slack for wide
 * copies), with `workers` threads. */
static int one_shot_gives(const uint8_t* frame, size_t size, const uint8_t* src, size_t n, int workers)
{
    glyd_DCtx* const d = glyd_createDCtx();
    uint8_t* const out = (uint8_t*)malloc(n ? n : 1);
    size_t r;
    int ok;
    glyd_DCtx_setParameter(d, glyd_d_nbWorkers, workers);
    r = glyd_decompressDCtx(d, out, n, frame, size);
    ok = !glyd_isError(r) && r == n && (n == 0 || memcmp(out, src, n) == 0);
    glyd_freeDCtx(d);
    free(out);
    return ok;
}

/* Decodes as a stream fed in pieces of `piece` bytes. */
static int stream_gives(const uint8_t* frame, size_t size, const uint8_t* src, size_t n, size_t piece)
{
    glyd_DCtx* const d = glyd_createDCtx();
    size_t const outCap = glyd_DStreamOutSize();
    uint8_t* const out = (uint8_t*)malloc(outCap);
    size_t inPos = 0, got = 0, r = 1;
    int ok = 1;
    while (ok && r != 0) {
        glyd_inBuffer ib = { frame + inPos, GLYD_MIN(piece, size - inPos), 0 };
        glyd_outBuffer ob = { out, outCap, 0 };
        r = glyd_decompressStream(d, &ob, &ib);
        if (glyd_isError(r)) { ok = 0; break; }
        if (got + ob.pos > n || memcmp(out, src + got, ob.pos) != 0) ok = 0;
        got += ob.pos;
        inPos += ib.pos;
        if (inPos == size && ib.pos == 0 && ob.pos == 0 && r != 0) ok = 0; /* stuck */
    }
    glyd_freeDCtx(d);
    free(out);
    return ok && got == n;
}

/* Block types of a frame (bit t set when a block of type t occurs), and its
 * number of segments (restart bits plus the first block). */
static unsigned block_types(const uint8_t* frame, size_t size, unsigned* segments)
{
    glyd_frameHeader fh;
    size_t pos = glyd_frameHeaderRead(&fh, frame, size);
    unsigned types = 0;
    *segments = 0;
    if (glyd_isError(pos)) return 0;
    for (;;) {
        glyd_blockHeader bh;
        if (size - pos < GLYD_BLOCKHEADER_SIZE) return types;
        bh = glyd_blockHeaderRead(frame + pos);
        types |= 1u << bh.type;
        if (bh.restart || *segments == 0) (*segments)++;
        pos += GLYD_BLOCKHEADER_SIZE + glyd_blockBodySize(bh);
        if (bh.last || pos > size) return types;
    }
}

static uint8_t* corpus_file(const char* folder, const char* name, size_t* n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", corpus_dir(), folder, name);
    return read_file(path, n);
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                              */
/* ------------------------------------------------------------------------ */

TEST(fast_block_corpus_round_trips)
{
    static const char* const folders[] = { "text", "logs", "tables", "bin" };
    static const int levels[] = { -1, -2, -4, -9, -64 };
    int const nbLevels = harness_quick() ? 2 : 5;
    int fi;
    for (fi = 0; fi < 4; fi++) {
        char* paths[64];
        int const nb = corpus_files(folders[fi], paths, 64);
        int i, l;
        CHECK(nb > 0);
        for (i = 0; i < nb; i++) {
            size_t n, size;
            uint8_t* const src = read_file(paths[i], &n);
            for (l = 0; src && l < nbLevels; l++) {
                unsigned segs;
                uint8_t* const f = test_compress(src, n, levels[l], 0, 0, 0, &size);
                int const ok = one_shot_gives(f, size, src, n, 0);
                if (!ok) fprintf(stderr, "    %s at --fast=%d\n", paths[i], -levels[l]);
                CHECK(ok);
                /* compressed blocks never appear at --fast levels */
                CHECK((block_types(f, size, &segs) & (1u << GLYD_BLOCK_COMPRESSED)) == 0);
                if (l == 0) CHECK(stream_gives(f, size, src, n, 4099));
                free(f);
            }
            free(src);
            free(paths[i]);
        }
    }
}

TEST(fast_block_is_used_and_beats_raw_on_text)
{
    size_t n, size;
    unsigned segs;
    uint8_t* const src = corpus_file("text", "alice29.txt", &n);
    uint8_t* f;
    if (!src) return;
    f = test_compress(src, n, -1, 0, 0, 0, &size);
    CHECK(block_types(f, size, &segs) & (1u << GLYD_BLOCK_FAST));
    CHECK(size < n * 2 / 3);
    CHECK(one_shot_gives(f, size, src, n, 0));
    free(f);
    free(src);
}

TEST(fast_block_edge_cases)
{
    static const int levels[] = { -1, -3, -20 };
    size_t const big = (size_t)1 << 20;
    uint8_t* const buf = (uint8_t*)malloc(3 * big);
    test_rng r = { 77 };
    size_t n, i, size;
    int l;
    for (l = 0; l < 3; l++) {
        int const level = levels[l];
        uint8_t* f;
        int ok = 1;
        /* empty and tiny inputs, every size up to 300, text and random */
        rng_fill(&r, buf, 150);
        for (i = 150; i < 300; i++) buf[i] = (uint8_t)("abcabcabd"[i % 9]);
        for (n = 0; n <= 300; n++) {
            const uint8_t* const src = n <= 150 ? buf : buf + 300 - n;
            f = test_compress(src, n, level, 0, 0, 0, &size);
            if (!one_shot_gives(f, size, src, n, 0)) ok = 0;
            free(f);
        }
        CHECK(ok);
        /* incompressible: stored raw, within the bound */
        rng_fill(&r, buf, big);
        f = test_compress(buf, big, level, 0, 0, 0, &size);
        CHECK(size <= GLYD_COMPRESSBOUND(big));
        CHECK(one_shot_gives(f, size, buf, big, 0));
        free(f);
        /* all zeros, and zeros with a little noise (long matches at offset 1) */
        memset(buf, 0, big);
        f = test_compress(buf, big, level, 0, 0, 0, &size);
        CHECK(size < 200);
        CHECK(one_shot_gives(f, size, buf, big, 0));
        free(f);
        for (i = 0; i < big; i += 4093) buf[i] = (uint8_t)rng_next(&r);
        f = test_compress(buf, big, level, 0, 0, 0, &size);
        CHECK(size < big / 100);
        CHECK(one_shot_gives(f, size, buf, big, 0));
        CHECK(stream_gives(f, size, buf, big, 777));
        free(f);
        /* matches crossing blocks: random data repeated, the copy a block or
         * more later (and beyond 64 KiB, where offsets take 5 bytes) */
        rng_fill(&r, buf, 200000);
        memcpy(buf + 200000, buf, 200000);
        memcpy(buf + 400000, buf + 1000, 300000);
        f = test_compress(buf, 700000, level, 0, 0, 0, &size);
        CHECK(one_shot_gives(f, size, buf, 700000, 0));
        CHECK(stream_gives(f, size, buf, 700000, 65536));
        free(f);
        {   /* a text twice: the second copy is coded against the first */
            size_t tn, single;
            uint8_t* const text = corpus_file("text", "alice29.txt", &tn);
            if (text && 2 * tn <= 3 * big) {
                f = test_compress(text, tn, level, 0, 0, 0, &single);
                free(f);
                memcpy(buf, text, tn);
                memcpy(buf + tn, text, tn);
                f = test_compress(buf, 2 * tn, level, 0, 0, 0, &size);
                CHECK(size < single + single / 2);
                CHECK(one_shot_gives(f, size, buf, 2 * tn, 0));
                free(f);
            }
            free(text);
        }
        /* long literal runs between matches */
        for (i = 0; i + 1000 <= big; i += 1000) {
            rng_fill(&r, buf + i, 700);
            memcpy(buf + i + 700, buf + (i >= 5000 ? i - 5000 : 0), 300);
        }
        f = test_compress(buf, i, level, 0, 0, 0, &size);
        CHECK(one_shot_gives(f, size, buf, i, 0));
        free(f);
        /* maximum lengths: a whole 1 MiB block of a short period (one match
         * as long as the block, and its 4-byte extra length) */
        for (i = 0; i < big; i++) buf[i] = (uint8_t)("0123456789abcdefg"[i % 17]);
        f = test_compress(buf, big, level, 0, -1, 20, &size);
        CHECK(size < 1000); /* a larger acceleration probes sparsely: more literals */
        CHECK(one_shot_gives(f, size, buf, big, 0));
        CHECK(stream_gives(f, size, buf, big, 1 << 16));
        free(f);
    }
    free(buf);
}

TEST(fast_block_segments_on_workers)
{
    size_t n, size;
    unsigned segs;
    uint8_t* const src = corpus_file("tables", "diamonds.csv", &n);
    int l;
    if (!src) return;
    for (l = 1; l <= 4; l += 3) {
        uint8_t* const f = test_compress(src, n, -l, 2, 16, 0, &size);
        unsigned const types = block_types(f, size, &segs);
        CHECK(types & (1u << GLYD_BLOCK_FAST));
        CHECK(segs >= n >> 16);
        CHECK(one_shot_gives(f, size, src, n, 2));
        CHECK(one_shot_gives(f, size, src, n, 0));
        CHECK(stream_gives(f, size, src, n, 100000));
        {   /* a range from the middle, through the seek table */
            glyd_DCtx* const d = glyd_createDCtx();
            uint8_t part[5000];
            size_t const r = glyd_decompressRange(d, part, sizeof part, f, size, 1000000);
            CHECK(r == sizeof part && memcmp(part, src + 1000000, sizeof part) == 0);
            glyd_freeDCtx(d);
        }
        free(f);
        /* the same frame written by one thread decodes on two */
        {
            uint8_t* const g = test_compress(src, n, -l, 0, 16, 0, &size);
            CHECK(one_shot_gives(g, size, src, n, 2));
            free(g);
        }
    }
    free(src);
}

TEST(fast_block_streaming_compression)
{
    size_t n;
    uint8_t* const src = corpus_file("logs", "OpenStack_2k.log", &n);
    glyd_CCtx* const c = glyd_createCCtx();
    size_t const cap = glyd_compressBound(n) + 1024;
    uint8_t* const dst = (uint8_t*)malloc(cap);
    size_t pos = 0, r;
    glyd_outBuffer ob = { dst, cap, 0 };
    if (!src) { glyd_freeCCtx(c); free(dst); return; }
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, -2));
    /* a small window, so that history is moved while streaming */
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_windowLog, 16));
    while (pos < n) {
        size_t const take = GLYD_MIN((size_t)12345, n - pos);
        glyd_inBuffer ib = { src + pos, take, 0 };
        CHECK_OK(glyd_compressStream(c, &ob, &ib, glyd_e_continue));
        pos += ib.pos;
    }
    do {
        glyd_inBuffer ib = { NULL, 0, 0 };
        r = glyd_compressStream(c, &ob, &ib, glyd_e_end);
        CHECK_OK(r);
    } while (r != 0 && !glyd_isError(r));
    CHECK(one_shot_gives(dst, ob.pos, src, n, 0));
    CHECK(stream_gives(dst, ob.pos, src, n, 999));
    glyd_freeCCtx(c);
    free(dst);
    free(src);
}

/* ------------------------------------------------------------------------ */
/* Hand-made blocks                                                         */
/* ------------------------------------------------------------------------ */

/* A fast block body from its parts (stream contents given as bytes). */
typedef struct {
    uint8_t b[512];
    size_t size;
} body_t;

static void make_body(body_t* o, uint64_t C, uint64_t nbSeq, const uint8_t* lits, size_t litSize,
                      const uint8_t* toks, const uint8_t* offs, size_t offSize, const uint8_t* exts, size_t extSize)
{
    size_t p = 0;
    p += glyd_writeVarint(o->b + p, sizeof o->b - p, C);
    p += glyd_writeVarint(o->b + p, sizeof o->b - p, nbSeq);
    p += glyd_writeVarint(o->b + p, sizeof o->b - p, litSize);
    p += glyd_writeVarint(o->b + p, sizeof o->b - p, offSize);
    if (litSize) memcpy(o->b + p, lits, litSize);
    p += litSize;
    if (nbSeq) memcpy(o->b + p, toks, (size_t)nbSeq);
    p += (size_t)nbSeq;
    if (offSize) memcpy(o->b + p, offs, offSize);
    p += offSize;
    if (extSize) memcpy(o->b + p, exts, extSize);
    p += extSize;
    o->size = p;
}

/* Decodes a body after `histSize` bytes of history into a buffer that ends
 * exactly at the block's declared end plus `slack`. The body is copied to
 * a buffer of its exact size, so that ASan sees any read past it. Returns
 * the decoder's result; *out receives the content (caller frees). */
static size_t decode_body_at(const body_t* body, const uint8_t* hist, size_t histSize, size_t windowSize,
                             size_t C, size_t slack, uint8_t** out)
{
    uint8_t* const in = (uint8_t*)malloc(body->size ? body->size : 1);
    uint8_t* const buf = (uint8_t*)malloc(histSize + C + slack + 1);
    size_t r;
    memcpy(in, body->b, body->size);
    memcpy(buf, hist, histSize);
    r = glyd_fastDecodeBlock(buf + histSize, buf + histSize + C + slack, buf, windowSize, 1u << 17, in,
                             body->size);
    free(in);
    *out = buf;
    return r;
}

TEST(fast_block_hand_made_blocks_decode)
{
    /* "abcd" + match(off 4, 8) + "xyz" + match(long offset) + tail */
    static const uint8_t hist[70000] = { 0 };
    body_t b;
    uint8_t* out;
    size_t r;
    {
        static const uint8_t lits[] = { 'a', 'b', 'c', 'd', 'x', 'y', 'z', 'T' };
        static const uint8_t toks[] = { 0x44, 0x30 };       /* ll 4, ml 8; ll 3, ml 4 */
        static const uint8_t offs[] = { 4, 0, 0, 0, 0x10, 0x11, 0 }; /* 4; long 65536 + 0x1110 */
        make_body(&b, 4 + 8 + 3 + 4 + 1, 2, lits, 8, toks, offs, 7, NULL, 0);
        r = decode_body_at(&b, hist, sizeof hist, 1u << 17, 20, 0, &out);
        CHECK(r == 20);
        CHECK(memcmp(out + sizeof hist, "abcdabcdabcdxyz\0\0\0\0T", 20) == 0);
        free(out);
        /* the same with room past the block: the wide path */
        r = decode_body_at(&b, hist, sizeof hist, 1u << 17, 20, 64, &out);
        CHECK(r == 20 && memcmp(out + sizeof hist, "abcdabcdabcdxyz\0\0\0\0T", 20) == 0);
        free(out);
        /* the long offset beyond a smaller window */
        r = decode_body_at(&b, hist, sizeof hist, 1u << 16, 20, 64, &out);
        CHECK_ERR(r, GLYD_error_corruption_detected);
        free(out);
        /* ... or before the history */
        r = decode_body_at(&b, hist, 1000, 1u << 17, 20, 64, &out);
        CHECK_ERR(r, GLYD_error_corruption_detected);
        free(out);
    }
    {   /* extra lengths: ll 15 + 2, ml 19 + 300 (the u24 form), offset 1 */
        uint8_t lits[18];
        static const uint8_t toks[] = { 0xFF };
        static const uint8_t offs[] = { 1, 0 };
        static const uint8_t exts[] = { 2, 255, 45, 0, 0 };
        size_t const C = 17 + 319 + 1;
        size_t i;
        int ok = 1;
        for (i = 0; i < 18; i++) lits[i] = (uint8_t)('A' + i);
        make_body(&b, C, 1, lits, 18, toks, offs, 2, exts, 5);
        for (i = 0; i < 2; i++) {
            size_t k;
            r = decode_body_at(&b, hist, 0, 1u << 17, C, i ? 100 : 0, &out);
            CHECK(r == C);
            if (r == C) {
                for (k = 0; k < 17; k++) if (out[k] != 'A' + k) ok = 0;
                for (k = 17; k < 17 + 319; k++) if (out[k] != 'A' + 16) ok = 0;
                if (out[C - 1] != 'A' + 17) ok = 0;
            }
            free(out);
        }
        CHECK(ok);
    }
}

TEST(fast_block_forged_blocks_fail_cleanly)
{
    static const uint8_t hist[300] = { 1, 2, 3 };
    static const uint8_t lits[] = { 'h', 'e', 'l', 'l', 'o', '!', '?', '.' };
    static const uint8_t toks2[] = { 0x50, 0x10 };
    static const uint8_t offs2[] = { 5, 0, 6, 0 };
    body_t b;
    uint8_t* out;
    size_t r, slack;
    for (slack = 0; slack <= 128; slack += 128) {
        /* valid: "hello" + match(5,4) + "!" + match(6,4) + "?." */
        make_body(&b, 16, 2, lits, 8, toks2, offs2, 4, NULL, 0);
        r = decode_body_at(&b, hist, 0, 1024, 16, slack, &out);
        CHECK(r == 16 && memcmp(out, "hellohell!ohel?.", 16) == 0);
        free(out);
        /* an offset before the history (none here) or of 0 */
        {
            static const uint8_t offsFar[] = { 6, 0, 6, 0 };
            make_body(&b, 16, 2, lits, 8, toks2, offsFar, 4, NULL, 0);
            CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
            /* ... which history makes valid */
            CHECK(decode_body_at(&b, hist, 300, 1024, 16, slack, &out) == 16);
            free(out);
            /* ... unless the window is smaller */
            CHECK_ERR(decode_body_at(&b, hist, 300, 4, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
        }
        /* the content size disagrees with the sequences */
        make_body(&b, 17, 2, lits, 8, toks2, offs2, 4, NULL, 0);
        CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 17, slack, &out), GLYD_error_corruption_detected);
        free(out);
        make_body(&b, 15, 2, lits, 8, toks2, offs2, 4, NULL, 0);
        CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 15, slack, &out), GLYD_error_corruption_detected);
        free(out);
        /* a match length beyond the block */
        {
            static const uint8_t toksLong[] = { 0x5F, 0x10 };
            static const uint8_t ext[] = { 200 };
            make_body(&b, 16, 2, lits, 8, toksLong, offs2, 4, ext, 1);
            CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
            /* extra lengths that run out */
            make_body(&b, 16, 2, lits, 8, toksLong, offs2, 4, NULL, 0);
            CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
        }
        /* a literal run beyond the literals */
        {
            static const uint8_t toksLit[] = { 0xE0, 0x10 };
            make_body(&b, 16, 2, lits, 8, toksLit, offs2, 4, NULL, 0);
            CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
        }
        /* offsets that run out, or are left over */
        make_body(&b, 16, 2, lits, 8, toks2, offs2, 2, NULL, 0);
        CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
        free(out);
        {
            static const uint8_t offs3[] = { 5, 0, 6, 0, 7, 0 };
            make_body(&b, 16, 2, lits, 8, toks2, offs3, 6, NULL, 0);
            CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
            /* extra lengths left over */
            make_body(&b, 16, 2, lits, 8, toks2, offs2, 4, offs3, 1);
            CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
            free(out);
        }
        /* header fields out of range */
        {
            static const uint8_t toks5[] = { 0x50, 0x10, 0, 0, 0 };
            make_body(&b, 16, 5, lits, 8, toks5, offs2, 4, NULL, 0); /* nbSeq > C / 4 */
        }
        CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
        free(out);
        make_body(&b, 0, 0, NULL, 0, NULL, NULL, 0, NULL, 0);
        CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 0, slack, &out), GLYD_error_corruption_detected);
        free(out);
        make_body(&b, (1u << 17) + 1, 0, NULL, 0, NULL, NULL, 0, NULL, 0); /* above blockMax */
        CHECK_ERR(decode_body_at(&b, hist, 0, 1024, 16, slack, &out), GLYD_error_corruption_detected);
        free(out);
        /* every truncation of the valid body */
        make_body(&b, 16, 2, lits, 8, toks2, offs2, 4, NULL, 0);
        {
            size_t const full = b.size;
            int ok = 1;
            for (b.size = 0; b.size < full; b.size++) {
                r = decode_body_at(&b, hist, 0, 1024, 16, slack, &out);
                if (!glyd_isError(r)) ok = 0;
                free(out);
            }
            CHECK(ok);
        }
    }
    /* a block that does not fit the output buffer */
    make_body(&b, 16, 2, lits, 8, toks2, offs2, 4, NULL, 0);
    {
        uint8_t small[10];
        CHECK_ERR(glyd_fastDecodeBlock(small, small + sizeof small, small, 1024, 1u << 17, b.b, b.size),
                  GLYD_error_dstSize_tooSmall);
    }
}

/* Random bodies, random streams: any result but a crash or an overrun. */
TEST(fast_block_random_bodies_fail_cleanly)
{
    test_rng r = { 4242 };
    static uint8_t hist[4096];
    int i, nbOk = 0;
    int const rounds = harness_quick() ? 3000 : 20000;
    rng_fill(&r, hist, sizeof hist);
    for (i = 0; i < rounds; i++) {
        body_t b;
        uint8_t lits[64], toks[40], offs[100], exts[16];
        size_t const litSize = rng_next(&r) % 64, nbSeq = rng_next(&r) % 40;
        size_t const offSize = rng_next(&r) % 100, extSize = rng_next(&r) % 16;
        size_t const C = 1 + rng_next(&r) % 400;
        size_t k;
        uint8_t* out;
        size_t res;
        rng_fill(&r, lits, sizeof lits);
        rng_fill(&r, toks, sizeof toks);
        rng_fill(&r, offs, sizeof offs);
        rng_fill(&r, exts, sizeof exts);
        /* mostly small offsets and lengths, so that some blocks get far */
        for (k = 1; k < sizeof offs; k += 2) if (rng_next(&r) & 1) offs[k] = 0;
        for (k = 0; k < sizeof offs; k += 2) if (rng_next(&r) & 1) offs[k] &= 63;
        make_body(&b, C, nbSeq, lits, litSize, toks, offs, offSize, exts, extSize);
        res = decode_body_at(&b, hist, (size_t)(rng_next(&r) % 4096), 1u << (10 + rng_next(&r) % 8), C,
                             (size_t)(rng_next(&r) % 3) * 40, &out);
        if (!glyd_isError(res)) {
            CHECK(res == C);
            nbOk++;
        }
        free(out);
    }
    CHECK(nbOk < rounds);
}

/* ------------------------------------------------------------------------ */
/* Hostile frames                                                           */
/* ------------------------------------------------------------------------ */

/* Decodes damaged frames one-shot (exact and roomy buffers), on two
 * workers, and streamed; each must give an error or the original. */
static int damaged_frame_is_safe(const uint8_t* f, size_t size, const uint8_t* src, size_t n)
{
    uint8_t* const out = (uint8_t*)malloc(n + 100);
    int ok = 1, w;
    for (w = 0; w <= 2; w += 2) {
        glyd_DCtx* const d = glyd_createDCtx();
        size_t r;
        glyd_DCtx_setParameter(d, glyd_d_nbWorkers, w);
        r = glyd_decompressDCtx(d, out, n, f, size);
        if (!glyd_isError(r) && (r != n || memcmp(out, src, n) != 0)) ok = 0;
        r = glyd_decompressDCtx(d, out, n + 100, f, size);
        if (!glyd_isError(r) && (r != n || memcmp(out, src, n) != 0)) ok = 0;
        glyd_freeDCtx(d);
    }
    {   /* streamed, the checksum check off: the block decoder alone */
        glyd_DCtx* const d = glyd_createDCtx();
        size_t const outCap = glyd_DStreamOutSize();
        uint8_t* const sout = (uint8_t*)malloc(outCap);
        glyd_inBuffer ib = { f, size, 0 };
        size_t r, got = 0;
        glyd_DCtx_setParameter(d, glyd_d_checksumCheck, 0);
        do {
            glyd_outBuffer ob = { sout, outCap, 0 };
            r = glyd_decompressStream(d, &ob, &ib);
            got += ob.pos;
            if (glyd_isError(r) || (ob.pos == 0 && ib.pos == ib.size)) break;
        } while (r != 0);
        (void)got;
        glyd_freeDCtx(d);
        free(sout);
    }
    free(out);
    return ok;
}

TEST(fast_block_every_byte_corrupted)
{
    /* a small fast frame in small blocks (so that there are several, with
     * matches across them), damaged one byte at a time */
    size_t n, size, i;
    uint8_t* const text = corpus_file("text", "alice29.txt", &n);
    uint8_t* f;
    uint8_t* g;
    int ok = 1;
    unsigned segs;
    if (!text) return;
    n = harness_quick() ? 2500 : 6000;
    f = test_compress(text, n, -1, 0, 0, 12, &size);
    CHECK(block_types(f, size, &segs) & (1u << GLYD_BLOCK_FAST));
    g = (uint8_t*)malloc(size);
    for (i = 0; i < size; i++) {
        static const uint8_t flips[] = { 0x01, 0x80, 0xFF, 0x10 };
        size_t k;
        for (k = 0; k < sizeof flips; k++) {
            memcpy(g, f, size);
            g[i] ^= flips[k];
            if (!damaged_frame_is_safe(g, size, text, n)) ok = 0;
        }
    }
    CHECK(ok);
    free(g);
    /* and every truncation */
    g = (uint8_t*)malloc(n);
    for (i = 0; i < size; i++)
        if (!glyd_isError(glyd_decompress(g, n, f, i))) ok = 0;
    CHECK(ok);
    free(g);
    free(f);
    free(text);
}

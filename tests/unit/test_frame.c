/* SPDX-License-Identifier: BSD-3-Clause */
/* test_frame.c: the public API: one-shot and streaming round trips over the
 * corpus, edge cases, segments and random access, parameters, allocators,
 * and hostile input of every kind. */
#include <stdatomic.h>
#include <stdlib.h>

#include "../../lib/frame/frame.h"
#include "harness.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

/* One-shot decompression must give back exactly src. */
static int decodes_to(const uint8_t* frame, size_t size, const uint8_t* src, size_t n, int workers)
{
    glyd_DCtx* const d = glyd_createDCtx();
    uint8_t* const out = (uint8_t*)malloc(n + 1);
    size_t r;
    int ok;
    glyd_DCtx_setParameter(d, glyd_d_nbWorkers, workers);
    r = glyd_decompressDCtx(d, out, n, frame, size);
    ok = !glyd_isError(r) && r == n && memcmp(out, src, n) == 0;
    if (glyd_isError(r)) fprintf(stderr, "    decode error: %s\n", glyd_getErrorName(r));
    free(out);
    glyd_freeDCtx(d);
    return ok;
}

/* Streaming compression with inputs and outputs cut into random pieces. */
static uint8_t* stream_compress(const uint8_t* src, size_t n, int level, size_t maxIn, size_t maxOut,
                                uint64_t seed, size_t* outSize)
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t const cap = glyd_compressBound(n) + 1024;
    uint8_t* const dst = (uint8_t*)malloc(cap);
    test_rng r = { seed };
    size_t inPos = 0, outPos = 0, rem;
    glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level);
    do {
        /* (drawn first: GLYD_MIN evaluates its arguments twice) */
        size_t const inDraw = (size_t)(rng_next(&r) % maxIn) + 1;
        size_t const outDraw = (size_t)(rng_next(&r) % maxOut) + 1;
        size_t const inLen = GLYD_MIN(n - inPos, inDraw);
        size_t const outLen = GLYD_MIN(cap - outPos, outDraw);
        glyd_inBuffer ib = { src + inPos, inLen, 0 };
        glyd_outBuffer ob = { dst + outPos, outLen, 0 };
        glyd_EndDirective const op = inPos + inLen == n ? glyd_e_end : glyd_e_continue;
        rem = glyd_compressStream(c, &ob, &ib, op);
        if (glyd_isError(rem)) { CHECK_OK(rem); break; }
        inPos += ib.pos;
        outPos += ob.pos;
        if (op == glyd_e_continue) rem = 1;
    } while (inPos < n || rem != 0);
    glyd_freeCCtx(c);
    *outSize = outPos;
    return dst;
}

/* Streaming decompression in random pieces; returns 1 if it gives src. */
static int stream_decodes_to(const uint8_t* frame, size_t size, const uint8_t* src, size_t n,
                             size_t maxIn, size_t maxOut, uint64_t seed)
{
    glyd_DCtx* const d = glyd_createDCtx();
    uint8_t* const out = (uint8_t*)malloc(n + 1);
    test_rng r = { seed };
    size_t inPos = 0, outPos = 0, ret = 1;
    int ok = 1, guard = 0;
    while ((inPos < size || ret != 0) && guard++ < 100000000) {
        size_t const inDraw = (size_t)(rng_next(&r) % maxIn) + 1;
        size_t const outDraw = (size_t)(rng_next(&r) % maxOut) + 1;
        size_t const inLen = GLYD_MIN(size - inPos, inDraw);
        size_t const outLen = GLYD_MIN(n + 1 - outPos, outDraw);
        glyd_inBuffer ib = { frame + inPos, inLen, 0 };
        glyd_outBuffer ob = { out + outPos, outLen, 0 };
        ret = glyd_decompressStream(d, &ob, &ib);
        if (glyd_isError(ret)) { fprintf(stderr, "    %s\n", glyd_getErrorName(ret)); ok = 0; break; }
        inPos += ib.pos;
        outPos += ob.pos;
        if (ib.pos == 0 && ob.pos == 0 && inPos == size) { ok = ret == 0; break; }
    }
    ok = ok && ret == 0 && outPos == n && memcmp(out, src, n) == 0;
    free(out);
    glyd_freeDCtx(d);
    return ok;
}

static uint8_t* corpus_file(const char* rel, size_t* n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", corpus_dir(), rel);
    return read_file(path, n);
}

/* ------------------------------------------------------------------------ */
/* Round trips                                                              */
/* ------------------------------------------------------------------------ */

static void corpus_round_trip(const char* folder, const int* levels, int nbLevels)
{
    char* paths[64];
    int const nb = corpus_files(folder, paths, 64);
    int i, l;
    CHECK(nb > 0);
    for (i = 0; i < nb; i++) {
        size_t n, c;
        uint8_t* const data = read_file(paths[i], &n);
        for (l = 0; data && l < nbLevels; l++) {
            uint8_t* const frame = test_compress(data, n, levels[l], 0, 0, 0, &c);
            int const ok = decodes_to(frame, c, data, n, 0);
            if (!ok) fprintf(stderr, "    %s at level %d\n", paths[i], levels[l]);
            CHECK(ok);
            free(frame);
        }
        free(data);
        free(paths[i]);
    }
}

TEST(corpus_round_trip_fast_levels)
{
    static const int levels[] = { -20, -5, -1, 1, 2 };
    corpus_round_trip("text", levels, 5);
    corpus_round_trip("logs", levels, 5);
    corpus_round_trip("tables", levels, 5);
    corpus_round_trip("bin", levels, 5);
    corpus_round_trip("delta", levels, 5);
}

TEST(corpus_round_trip_middle_levels)
{
    static const int levels[] = { 3, 5, 7, 9 };
    corpus_round_trip("text", levels, 4);
    corpus_round_trip("logs", levels, 4);
    corpus_round_trip("tables", levels, 4);
    corpus_round_trip("bin", levels, 4);
}

TEST_SLOW(corpus_round_trip_high_levels)
{
    static const int levels[] = { 12, 19, GLYD_LEVEL_MAX };
    corpus_round_trip("text", levels, 3);
    corpus_round_trip("logs", levels, 3);
}

TEST(small_inputs_every_size)
{
    /* every size from 0 to 300 bytes, text and random */
    uint8_t src[300];
    test_rng r = { 2 };
    size_t n;
    int ok = 1;
    rng_fill(&r, src, 150);
    memcpy(src + 150, "the quick brown fox jumps over the lazy dog; the quick brown fox jumps again and "
                      "again over the lazy dog, who does not mind at all, being lazy. the end. the end. ",
           150);
    for (n = 0; n <= sizeof src; n++) {
        size_t c;
        uint8_t* const frame = test_compress(src + sizeof src - n, n, 3, 0, 0, 0, &c);
        if (!decodes_to(frame, c, src + sizeof src - n, n, 0)) ok = 0;
        if (!stream_decodes_to(frame, c, src + sizeof src - n, n, 7, 5, n)) ok = 0;
        free(frame);
    }
    CHECK(ok);
}

TEST(empty_input_makes_a_valid_frame)
{
    uint8_t frame[64], out[1];
    size_t const c = glyd_compress(frame, sizeof frame, NULL, 0, 3);
    CHECK_OK(c);
    CHECK(glyd_decompress(out, 0, frame, c) == 0);
    CHECK(glyd_getFrameContentSize(frame, c) == 0);
    CHECK(glyd_findFrameCompressedSize(frame, c) == c);
    CHECK(glyd_decompress(out, sizeof out, frame, c) == 0);
}

TEST(one_byte_input)
{
    uint8_t frame[64], out[4];
    uint8_t const b = 0x5A;
    size_t const c = glyd_compress(frame, sizeof frame, &b, 1, 19);
    CHECK_OK(c);
    CHECK(glyd_decompress(out, sizeof out, frame, c) == 1);
    CHECK(out[0] == 0x5A);
}

TEST(incompressible_data_stays_within_bound)
{
    size_t const n = 3u << 20;
    uint8_t* const src = (uint8_t*)malloc(n);
    test_rng r = { 1234 };
    size_t c;
    uint8_t* frame;
    rng_fill(&r, src, n);
    frame = test_compress(src, n, 3, 0, 0, 0, &c);
    CHECK(c <= GLYD_COMPRESSBOUND(n));
    CHECK(c > n); /* stored, with a little framing */
    CHECK(decodes_to(frame, c, src, n, 0));
    free(frame);
    free(src);
}

TEST(compress_bound_holds_for_tiny_blocks)
{
    /* the smallest blocks the parameters allow, on random data */
    size_t const n = 1u << 20;
    uint8_t* const src = (uint8_t*)malloc(n);
    uint8_t* const dst = (uint8_t*)malloc(GLYD_COMPRESSBOUND(n));
    glyd_CCtx* const c = glyd_createCCtx();
    test_rng r = { 99 };
    size_t res;
    rng_fill(&r, src, n);
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_windowLog, 10));
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_segmentLog, 16));
    res = glyd_compress2(c, dst, GLYD_COMPRESSBOUND(n), src, n);
    CHECK_OK(res);
    CHECK(decodes_to(dst, res, src, n, 0));
    glyd_freeCCtx(c);
    free(src);
    free(dst);
}

TEST(streaming_round_trip_random_pieces)
{
    size_t n, c;
    uint8_t* const data = corpus_file("text/alice29.txt", &n);
    int level;
    if (!data) return;
    for (level = -1; level <= 9; level += 5) {
        uint8_t* const frame = stream_compress(data, n, level, 5000, 3000, (uint64_t)level + 10, &c);
        CHECK(decodes_to(frame, c, data, n, 0));
        CHECK(stream_decodes_to(frame, c, data, n, 4000, 2000, 5));
        free(frame);
    }
    {   /* byte by byte in and out */
        uint8_t* const frame = stream_compress(data, 20000, 3, 1, 1, 3, &c);
        CHECK(decodes_to(frame, c, data, 20000, 0));
        CHECK(stream_decodes_to(frame, c, data, 20000, 1, 1, 4));
        free(frame);
    }
    free(data);
}

TEST(streaming_equals_one_shot_format)
{
    /* a streamed frame is an ordinary frame: it has no content size, but
     * decodes with the one-shot API, and lists the same content */
    size_t n, c;
    uint8_t* const data = corpus_file("logs/Android_2k.log", &n);
    uint8_t* frame;
    glyd_frameInfo fi;
    if (!data) return;
    frame = stream_compress(data, n, 3, 1 << 16, 1 << 16, 1, &c);
    CHECK(glyd_getFrameContentSize(frame, c) == GLYD_CONTENTSIZE_UNKNOWN);
    CHECK(glyd_getFrameInfo(&fi, frame, c) == c);
    CHECK(fi.contentSize == n);
    CHECK(!fi.hasContentSize);
    CHECK(decodes_to(frame, c, data, n, 0));
    free(frame);
    free(data);
}

TEST(flush_makes_everything_so_far_decodable)
{
    size_t n;
    uint8_t* const text = corpus_file("logs/Spark_2k.log", &n);
    glyd_CCtx* const c = glyd_createCCtx();
    size_t const cap = glyd_compressBound(n) + 4096;
    uint8_t* const out = (uint8_t*)malloc(cap);
    uint8_t* const back = (uint8_t*)malloc(n);
    size_t outPos = 0, inPos = 0;
    int ok = 1;
    if (!text) { free(out); free(back); glyd_freeCCtx(c); return; }
    while (inPos < n && ok) {
        size_t const step = GLYD_MIN((size_t)7777, n - inPos);
        glyd_inBuffer ib = { text + inPos, step, 0 };
        size_t rem;
        do {
            glyd_outBuffer ob = { out + outPos, cap - outPos, 0 };
            rem = glyd_compressStream(c, &ob, &ib, glyd_e_flush);
            if (glyd_isError(rem)) { ok = 0; break; }
            outPos += ob.pos;
        } while (rem != 0);
        inPos += step;
        {   /* what was flushed decodes to exactly the input so far */
            glyd_DCtx* const d = glyd_createDCtx();
            glyd_inBuffer di = { out, outPos, 0 };
            glyd_outBuffer dob = { back, n, 0 };
            size_t const r = glyd_decompressStream(d, &dob, &di);
            if (glyd_isError(r) || di.pos != outPos || dob.pos != inPos || memcmp(back, text, inPos)) ok = 0;
            glyd_freeDCtx(d);
        }
    }
    {
        glyd_inBuffer ib = { NULL, 0, 0 };
        glyd_outBuffer ob = { out + outPos, cap - outPos, 0 };
        CHECK(glyd_compressStream(c, &ob, &ib, glyd_e_end) == 0);
        outPos += ob.pos;
    }
    CHECK(ok);
    CHECK(decodes_to(out, outPos, text, n, 0));
    glyd_freeCCtx(c);
    free(out);
    free(back);
    free(text);
}

TEST(hundred_mib_of_zeros_streamed)
{
    size_t const total = (harness_quick() ? 16u : 100u) << 20;
    size_t const chunk = 1u << 20;
    uint8_t* const zeros = (uint8_t*)calloc(chunk, 1);
    uint8_t* const out = (uint8_t*)malloc(chunk);
    uint8_t* comp = (uint8_t*)malloc(1 << 20);
    glyd_CCtx* const c = glyd_createCCtx();
    glyd_DCtx* const d = glyd_createDCtx();
    size_t fed = 0, compSize = 0, rem = 1, produced = 0, ret = 1;
    int ok = 1;
    while (fed < total || rem != 0) {
        glyd_inBuffer ib = { zeros, fed < total ? chunk : 0, 0 };
        glyd_outBuffer ob = { comp + compSize, (1 << 20) - compSize, 0 };
        rem = glyd_compressStream(c, &ob, &ib, fed + ib.size >= total ? glyd_e_end : glyd_e_continue);
        if (glyd_isError(rem) || ob.pos == ob.size) { ok = 0; break; }
        fed += ib.pos;
        compSize += ob.pos;
        if (fed < total) rem = 1;
    }
    CHECK(ok);
    CHECK(compSize < 64 * 1024); /* run-length blocks: a few bytes per block */
    {
        glyd_inBuffer ib = { comp, compSize, 0 };
        while (ok && (ib.pos < ib.size || ret != 0)) {
            glyd_outBuffer ob = { out, chunk, 0 };
            size_t i;
            ret = glyd_decompressStream(d, &ob, &ib);
            if (glyd_isError(ret)) { ok = 0; break; }
            for (i = 0; i < ob.pos; i++) if (out[i]) { ok = 0; break; }
            produced += ob.pos;
            if (ob.pos == 0 && ib.pos == ib.size && ret != 0) { ok = 0; break; }
        }
    }
    CHECK(ok);
    CHECK(produced == total);
    glyd_freeCCtx(c);
    glyd_freeDCtx(d);
    free(zeros);
    free(out);
    free(comp);
}

/* Counting allocator: tracks live bytes and the peak. Workers allocate
 * from their threads, so the counters are atomic. */
typedef struct { atomic_size_t live, peak, calls; } mem_stats;
static void* count_alloc(void* opaque, size_t size)
{
    mem_stats* const s = (mem_stats*)opaque;
    size_t* const p = (size_t*)malloc(size + 16);
    size_t live, peak;
    if (!p) return NULL;
    p[0] = size;
    live = atomic_fetch_add(&s->live, size) + size;
    atomic_fetch_add(&s->calls, 1);
    peak = atomic_load(&s->peak);
    while (live > peak && !atomic_compare_exchange_weak(&s->peak, &peak, live)) {}
    return (uint8_t*)p + 16;
}
static void count_free(void* opaque, void* address)
{
    mem_stats* const s = (mem_stats*)opaque;
    size_t* const p = (size_t*)((uint8_t*)address - 16);
    atomic_fetch_sub(&s->live, p[0]);
    free(p);
}

/* Generated content for the long stream: compressible, never periodic
 * over short spans, reproducible from a position. */
static void gen_chunk(uint8_t* dst, size_t n, uint64_t pos)
{
    static const char words[] = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu ";
    size_t i;
    for (i = 0; i < n; i += 64) {
        uint64_t x = (pos + i) / 64 * 0x9E3779B97F4A7C15ULL;
        size_t k;
        x ^= x >> 29;
        for (k = 0; k < 64 && i + k < n; k++) {
            dst[i + k] = (uint8_t)words[(x % 61) + (k % 7)];
            if (k % 16 == 15) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        }
    }
}

TEST_SLOW(stream_over_4gib_with_bounded_memory)
{
    /* compressed and decompressed in lockstep, so that nothing near the
     * stream's size is ever held; checked through a hash of the output */
    unsigned long long const total = (4ULL << 30) + 12345;
    size_t const chunk = 1u << 20;
    mem_stats cs = { 0, 0, 0 }, ds = { 0, 0, 0 };
    glyd_customMem const cm = { count_alloc, count_free, &cs };
    glyd_customMem const dm = { count_alloc, count_free, &ds };
    glyd_CCtx* const c = glyd_createCCtx_advanced(cm);
    glyd_DCtx* const d = glyd_createDCtx_advanced(dm);
    uint8_t* const in = (uint8_t*)malloc(chunk);
    uint8_t* const mid = (uint8_t*)malloc(chunk * 2);
    uint8_t* const out = (uint8_t*)malloc(chunk);
    XXH64_state_t hin, hout;
    unsigned long long fed = 0, produced = 0, compressed = 0;
    int ok = 1;
    XXH64_reset(&hin, 0);
    XXH64_reset(&hout, 0);
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, 1));
    while (ok && fed < total) {
        size_t const len = (size_t)GLYD_MIN((unsigned long long)chunk, total - fed);
        glyd_EndDirective const op = fed + len == total ? glyd_e_end : glyd_e_continue;
        glyd_inBuffer ib = { in, len, 0 };
        size_t rem;
        gen_chunk(in, len, fed);
        XXH64_update(&hin, in, len);
        do {
            glyd_outBuffer ob = { mid, chunk * 2, 0 };
            glyd_inBuffer di;
            rem = glyd_compressStream(c, &ob, &ib, op);
            if (glyd_isError(rem)) { ok = 0; break; }
            compressed += ob.pos;
            di.src = mid; di.size = ob.pos; di.pos = 0;
            while (di.pos < di.size) {
                glyd_outBuffer dob = { out, chunk, 0 };
                size_t const r = glyd_decompressStream(d, &dob, &di);
                if (glyd_isError(r)) { ok = 0; break; }
                XXH64_update(&hout, out, dob.pos);
                produced += dob.pos;
            }
            {   /* drain what the decoder still holds */
                glyd_outBuffer dob = { out, chunk, 0 };
                do {
                    dob.pos = 0;
                    if (glyd_isError(glyd_decompressStream(d, &dob, &di))) { ok = 0; break; }
                    XXH64_update(&hout, out, dob.pos);
                    produced += dob.pos;
                } while (dob.pos == dob.size);
            }
        } while (ok && (ib.pos < ib.size || (op == glyd_e_end && rem != 0)));
        fed += len;
    }
    CHECK(ok);
    CHECK(produced == total);
    CHECK(XXH64_digest(&hin) == XXH64_digest(&hout));
    CHECK(compressed < total / 2);
    /* bounded: tens of MiB at most, whatever the stream's length */
    CHECK(cs.peak < (48u << 20));
    CHECK(ds.peak < (48u << 20));
    glyd_freeCCtx(c);
    glyd_freeDCtx(d);
    CHECK(cs.live == 0);
    CHECK(ds.live == 0);
    free(in);
    free(mid);
    free(out);
}

TEST(custom_allocator_sees_every_byte)
{
    mem_stats s = { 0, 0, 0 };
    glyd_customMem const m = { count_alloc, count_free, &s };
    glyd_customMem const half = { count_alloc, NULL, &s };
    size_t n, c;
    uint8_t* const data = corpus_file("text/html", &n);
    uint8_t* const frame = (uint8_t*)malloc(glyd_compressBound(n));
    uint8_t* const back = (uint8_t*)malloc(n);
    glyd_CCtx* const cc = glyd_createCCtx_advanced(m);
    glyd_DCtx* const dc = glyd_createDCtx_advanced(m);
    CHECK(glyd_createCCtx_advanced(half) == NULL);
    CHECK(glyd_createDCtx_advanced(half) == NULL);
    if (data && cc && dc) {
        CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_nbWorkers, 2));
        CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_segmentLog, 16));
        c = glyd_compress2(cc, frame, glyd_compressBound(n), data, n);
        CHECK_OK(c);
        CHECK_OK(glyd_DCtx_setParameter(dc, glyd_d_nbWorkers, 2));
        CHECK(glyd_decompressDCtx(dc, back, n, frame, c) == n);
        CHECK(memcmp(back, data, n) == 0);
    }
    CHECK(s.calls > 0);
    glyd_freeCCtx(cc);
    glyd_freeDCtx(dc);
    CHECK(s.live == 0);
    free(data);
    free(frame);
    free(back);
}

/* ------------------------------------------------------------------------ */
/* Frames, segments, random access                                          */
/* ------------------------------------------------------------------------ */

TEST(concatenated_and_skippable_frames)
{
    size_t n1, n2, c1, c2, pos = 0;
    uint8_t* const a = corpus_file("text/html", &n1);
    uint8_t* const b = corpus_file("text/urls.10K", &n2);
    uint8_t *fa, *fb, *all, *expect, *out;
    uint8_t skip[100];
    if (!a || !b) { free(a); free(b); return; }
    fa = test_compress(a, n1, 1, 0, 0, 0, &c1);
    fb = test_compress(b, n2, 9, 0, 0, 0, &c2);
    all = (uint8_t*)malloc(c1 + c2 + 200);
    memcpy(all, fa, c1); pos = c1;
    CHECK(glyd_writeSkippableFrame(all + pos, 200, "metadata", 8, 3) == 16);
    CHECK(glyd_isSkippableFrame(all + pos, 16));
    pos += 16;
    memcpy(all + pos, fb, c2); pos += c2;
    CHECK_ERR(glyd_writeSkippableFrame(skip, sizeof skip, "x", 1, 14), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_writeSkippableFrame(skip, 4, "x", 1, 1), GLYD_error_dstSize_tooSmall);
    expect = (uint8_t*)malloc(n1 + n2);
    memcpy(expect, a, n1);
    memcpy(expect + n1, b, n2);
    CHECK(decodes_to(all, pos, expect, n1 + n2, 0));
    CHECK(stream_decodes_to(all, pos, expect, n1 + n2, 3000, 5000, 9));
    CHECK(glyd_findDecompressedSize(all, pos) == n1 + n2);
    CHECK(glyd_getFrameContentSize(all + c1, 16) == 0);
    CHECK(glyd_findFrameCompressedSize(all + c1, pos - c1) == 16);
    out = (uint8_t*)malloc(n1 + n2);
    CHECK_ERR(glyd_decompress(out, n1 + n2 - 1, all, pos), GLYD_error_dstSize_tooSmall);
    free(out);
    free(a); free(b); free(fa); free(fb); free(all); free(expect);
}

TEST(frame_queries)
{
    size_t n, c;
    uint8_t* const data = corpus_file("text/lcet10.txt", &n);
    uint8_t* frame;
    glyd_frameInfo fi;
    if (!data) return;
    frame = test_compress(data, n, 3, 0, 0, 0, &c);
    CHECK(glyd_getFrameContentSize(frame, c) == n);
    CHECK(glyd_getFrameContentSize(frame, 5) == GLYD_CONTENTSIZE_ERROR);
    CHECK(glyd_getFrameContentSize("nope-not-a-frame", 16) == GLYD_CONTENTSIZE_ERROR);
    CHECK(glyd_findFrameCompressedSize(frame, c) == c);
    CHECK_ERR(glyd_findFrameCompressedSize(frame, c - 1), GLYD_error_srcSize_truncated);
    CHECK(glyd_getFrameInfo(&fi, frame, c) == c);
    CHECK(fi.contentSize == n && fi.hasContentSize && fi.hasChecksum && !fi.isSkippable);
    CHECK(fi.nbBlocks == (n + (1u << fi.blockLog) - 1) >> fi.blockLog);
    CHECK(fi.windowLog >= 10 && fi.windowLog <= 31);
    CHECK(glyd_versionNumber() == GLYD_VERSION_NUMBER);
    CHECK(strcmp(glyd_versionString(), GLYD_VERSION_STRING) == 0);
    CHECK(glyd_compressBound(100) == GLYD_COMPRESSBOUND(100));
    CHECK(glyd_isError(glyd_compressBound(SIZE_MAX)));
    free(frame);
    free(data);
}

TEST(segments_threads_and_random_access)
{
    size_t n, cST, cMT, c;
    uint8_t* const data = corpus_file("tables/diamonds.csv", &n);
    uint8_t *st, *mt, *out;
    glyd_frameInfo fi;
    glyd_DCtx* d;
    test_rng r = { 31 };
    int i, ok = 1;
    if (!data) return;
    /* one thread or several: the same bytes */
    st = test_compress(data, n, 3, 0, 17, 0, &cST);
    mt = test_compress(data, n, 3, 2, 17, 0, &cMT);
    CHECK(cST == cMT && memcmp(st, mt, cST) == 0);
    c = glyd_findFrameCompressedSize(st, cST);
    CHECK(c < cST); /* a seek table follows the frame */
    CHECK(glyd_getFrameInfo(&fi, st, cST) == c);
    CHECK(fi.segmentLog == 17);
    CHECK(fi.nbSegments == (n + (1u << 17) - 1) >> 17);
    CHECK(decodes_to(st, cST, data, n, 0));
    CHECK(decodes_to(st, cST, data, n, 2));
    CHECK(decodes_to(st, cST, data, n, 7));
    CHECK(stream_decodes_to(st, cST, data, n, 100000, 70000, 1));
    /* random ranges, through the seek table and without it */
    d = glyd_createDCtx();
    out = (uint8_t*)malloc(n);
    for (i = 0; i < 200; i++) {
        unsigned long long const off = rng_next(&r) % (n + 10);
        size_t const len = (size_t)(rng_next(&r) % 300000);
        size_t const expect = off >= n ? 0 : (size_t)GLYD_MIN((unsigned long long)len, n - off);
        size_t const got = glyd_decompressRange(d, out, len, st, (i & 1) ? cST : c, off);
        if (got != expect || (expect && memcmp(out, data + off, expect))) {
            ok = 0;
            fprintf(stderr, "    range %llu+%zu: %s\n", off, len,
                    glyd_isError(got) ? glyd_getErrorName(got) : "wrong bytes");
            break;
        }
    }
    CHECK(ok);
    free(st);
    free(mt);
    /* an unsegmented frame: only from the start */
    st = test_compress(data, n, 1, 0, -1, 0, &cST);
    CHECK(glyd_decompressRange(d, out, 1000, st, cST, 0) == 1000);
    CHECK(memcmp(out, data, 1000) == 0);
    CHECK_ERR(glyd_decompressRange(d, out, 1000, st, cST, 5), GLYD_error_seekTable_missing);
    free(st);
    free(out);
    glyd_freeDCtx(d);
    free(data);
}

TEST(streaming_with_workers_and_flush)
{
    size_t n, c;
    uint8_t* const data = corpus_file("delta/snappy_new.tar", &n);
    glyd_CCtx* const cc = glyd_createCCtx();
    uint8_t* frame;
    size_t outPos = 0, inPos = 0;
    int flushes = 0;
    if (!data) { glyd_freeCCtx(cc); return; }
    frame = (uint8_t*)malloc(glyd_compressBound(n) + 65536);
    CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_nbWorkers, 2));
    CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_segmentLog, 18));
    while (inPos < n) {
        size_t const step = GLYD_MIN((size_t)300000, n - inPos);
        glyd_EndDirective const op = inPos + step == n ? glyd_e_end : (flushes++ % 3 == 0 ? glyd_e_flush : glyd_e_continue);
        glyd_inBuffer ib = { data + inPos, step, 0 };
        size_t rem;
        do {
            glyd_outBuffer ob = { frame + outPos, glyd_compressBound(n) + 65536 - outPos, 0 };
            rem = glyd_compressStream(cc, &ob, &ib, op);
            if (glyd_isError(rem)) { CHECK_OK(rem); break; }
            outPos += ob.pos;
        } while (ib.pos < ib.size || (op != glyd_e_continue && rem != 0));
        inPos += step;
    }
    c = outPos;
    CHECK(decodes_to(frame, c, data, n, 0));
    CHECK(decodes_to(frame, c, data, n, 2));
    glyd_freeCCtx(cc);
    free(frame);
    free(data);
}

/* ------------------------------------------------------------------------ */
/* Parameters                                                               */
/* ------------------------------------------------------------------------ */

TEST(parameters_bounds_and_stages)
{
    glyd_CCtx* const c = glyd_createCCtx();
    glyd_DCtx* const d = glyd_createDCtx();
    glyd_bounds b = glyd_cParam_getBounds(glyd_c_compressionLevel);
    uint8_t out[256];
    int v;
    CHECK(b.error == 0 && b.lowerBound == GLYD_LEVEL_MIN && b.upperBound == GLYD_LEVEL_MAX);
    CHECK(glyd_isError(glyd_cParam_getBounds((glyd_cParameter)999).error));
    CHECK_ERR(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, 23), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_CCtx_setParameter(c, glyd_c_windowLog, 32), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_CCtx_setParameter(c, glyd_c_segmentLog, 10), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_CCtx_setParameter(c, (glyd_cParameter)999, 1), GLYD_error_parameter_unsupported);
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, 0)); /* default */
    CHECK_OK(glyd_CCtx_getParameter(c, glyd_c_compressionLevel, &v));
    CHECK(v == GLYD_LEVEL_DEFAULT);
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_checksumFlag, 0));
    {   /* no parameter changes while a frame streams */
        glyd_inBuffer ib = { "abc", 3, 0 };
        glyd_outBuffer ob = { out, sizeof out, 0 };
        CHECK_OK(glyd_compressStream(c, &ob, &ib, glyd_e_flush));
        CHECK_ERR(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, 5), GLYD_error_stage_wrong);
        CHECK_ERR(glyd_CCtx_setPledgedSrcSize(c, 10), GLYD_error_stage_wrong);
        CHECK_OK(glyd_CCtx_reset(c, glyd_reset_session_only));
        CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, 5));
    }
    CHECK_OK(glyd_CCtx_reset(c, glyd_reset_parameters));
    CHECK_OK(glyd_CCtx_getParameter(c, glyd_c_checksumFlag, &v));
    CHECK(v == 1);
    CHECK_ERR(glyd_DCtx_setParameter(d, glyd_d_windowLogMax, 5), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_DCtx_setParameter(d, glyd_d_nbWorkers, 1000), GLYD_error_parameter_outOfBound);
    CHECK_OK(glyd_DCtx_setParameter(d, glyd_d_windowLogMax, 20));
    glyd_freeCCtx(c);
    glyd_freeDCtx(d);
    CHECK(glyd_freeCCtx(NULL) == 0 && glyd_freeDCtx(NULL) == 0);
}

TEST(pledged_size_is_enforced)
{
    glyd_CCtx* const c = glyd_createCCtx();
    uint8_t out[1024];
    glyd_inBuffer ib = { "hello world", 11, 0 };
    glyd_outBuffer ob = { out, sizeof out, 0 };
    CHECK_OK(glyd_CCtx_setPledgedSrcSize(c, 5));
    CHECK_ERR(glyd_compressStream(c, &ob, &ib, glyd_e_end), GLYD_error_srcSize_wrong);
    ib.pos = 0; ob.pos = 0;
    CHECK_OK(glyd_CCtx_setPledgedSrcSize(c, 20));
    CHECK_ERR(glyd_compressStream(c, &ob, &ib, glyd_e_end), GLYD_error_srcSize_wrong);
    ib.pos = 0; ob.pos = 0;
    CHECK_OK(glyd_CCtx_setPledgedSrcSize(c, 11));
    CHECK(glyd_compressStream(c, &ob, &ib, glyd_e_end) == 0);
    CHECK(glyd_getFrameContentSize(out, ob.pos) == 11);
    glyd_freeCCtx(c);
}

TEST(window_limit_is_enforced_when_streaming)
{
    size_t n, c;
    uint8_t* const data = corpus_file("bin/libllvm14.part", &n);
    uint8_t *frame, *out;
    glyd_DCtx* const d = glyd_createDCtx();
    if (!data) { glyd_freeDCtx(d); return; }
    frame = stream_compress(data, n, 9, 1 << 20, 1 << 20, 1, &c); /* window 2^22, no content size */
    out = (uint8_t*)malloc(n);
    CHECK_OK(glyd_DCtx_setParameter(d, glyd_d_windowLogMax, 20));
    {
        glyd_inBuffer ib = { frame, c, 0 };
        glyd_outBuffer ob = { out, n, 0 };
        CHECK_ERR(glyd_decompressStream(d, &ob, &ib), GLYD_error_frameParameter_windowTooLarge);
    }
    CHECK_OK(glyd_DCtx_setParameter(d, glyd_d_windowLogMax, 23));
    CHECK(stream_decodes_to(frame, c, data, n, 1 << 20, 1 << 20, 2));
    free(frame);
    free(out);
    free(data);
    glyd_freeDCtx(d);
}

/* ------------------------------------------------------------------------ */
/* Hostile input                                                            */
/* ------------------------------------------------------------------------ */

/* Small frames of every kind: compressed at several levels, segmented,
 * with run-length and raw blocks. */
static uint8_t* hostile_sample(int kind, size_t* n, size_t* c)
{
    static const char text[] =
        "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age "
        "of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season "
        "of Light, it was the season of Darkness, it was the spring of hope, it was the winter of despair.";
    uint8_t* const src = (uint8_t*)malloc(4096);
    uint8_t* frame;
    size_t i;
    for (i = 0; i < 4096; i++) src[i] = (uint8_t)text[(i * 7 / 5) % (sizeof text - 1)];
    switch (kind) {
    case 0: *n = 1500; frame = test_compress(src, *n, 1, 0, 0, 0, c); break;
    case 1: *n = 2500; frame = test_compress(src, *n, 9, 0, 0, 0, c); break;
    case 2: memset(src + 1000, 'z', 3000); *n = 4096; frame = test_compress(src, *n, 3, 0, 0, 0, c); break;
    default: {
        /* segmented with tiny blocks, so that a small frame has many */
        glyd_CCtx* const cc = glyd_createCCtx();
        test_rng r = { 4 };
        *n = 3000;
        rng_fill(&r, src + 2000, 1000);
        glyd_CCtx_setParameter(cc, glyd_c_windowLog, 10);
        glyd_CCtx_setParameter(cc, glyd_c_segmentLog, 16);
        frame = (uint8_t*)malloc(glyd_compressBound(*n));
        *c = glyd_compress2(cc, frame, glyd_compressBound(*n), src, *n);
        glyd_freeCCtx(cc);
        break;
    }
    }
    /* the frame, followed by the content it must decode to */
    {
        uint8_t* const both = (uint8_t*)malloc(*c + *n);
        memcpy(both, frame, *c);
        memcpy(both + *c, src, *n);
        free(frame);
        free(src);
        return both;
    }
}

TEST(truncated_frames_fail_cleanly)
{
    int kind, ok = 1;
    for (kind = 0; kind < 4; kind++) {
        size_t n, c, cut;
        uint8_t* const s = hostile_sample(kind, &n, &c);
        for (cut = 0; cut < c; cut++) {
            uint8_t* const copy = (uint8_t*)malloc(cut + 1);
            uint8_t out[8192];
            memcpy(copy, s, cut);
            if (!glyd_isError(glyd_decompress(out, sizeof out, copy, cut))) ok = 0;
            if (!decode_survives(copy, cut, s + c, n)) ok = 0;
            free(copy);
        }
        free(s);
    }
    CHECK(ok);
}

TEST(every_single_bit_flip_is_caught_or_harmless)
{
    int kind, ok = 1, caught = 0, flips = 0;
    for (kind = 0; kind < 4; kind++) {
        size_t n, c, bit;
        uint8_t* const s = hostile_sample(kind, &n, &c);
        uint8_t* const copy = (uint8_t*)malloc(c);
        for (bit = 0; bit < c * 8; bit++) {
            uint8_t out[8192];
            size_t r;
            memcpy(copy, s, c);
            copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            r = glyd_decompress(out, sizeof out, copy, c);
            flips++;
            if (glyd_isError(r)) caught++;
            else if (r != n || memcmp(out, s + c, n) != 0) ok = 0; /* silent corruption */
            if (!decode_survives(copy, c, s + c, n)) ok = 0;
        }
        free(copy);
        free(s);
    }
    CHECK(ok);
    CHECK(caught > flips * 9 / 10);
}

/* tests/data/alice16k.single-lane.glyd holds the first 16 KiB of
 * alice29.txt at level 3 as encoders wrote it before sequences had two
 * lanes and checksums were XXH3: a block of hundreds of sequences in one
 * lane, and an XXH64 checksum, which decoders still read (and today's
 * encoder no longer writes). */
TEST(single_lane_frames_still_decode)
{
    size_t n, fn, c;
    char path[1024];
    uint8_t *data, *frame, *now;
    snprintf(path, sizeof path, "%s/text/alice29.txt", corpus_dir());
    data = read_file(path, &n);
    frame = read_file("tests/data/alice16k.single-lane.glyd", &fn);
    CHECK(data != NULL && frame != NULL && n >= 16384);
    if (data && frame && n >= 16384) {
        glyd_frameInfo fi;
        uint8_t out[16384];
        CHECK(decodes_to(frame, fn, data, 16384, 0));
        /* its checksum is XXH64, and checked as such */
        CHECK(glyd_getFrameInfo(&fi, frame, fn) == fn && fi.hasChecksum == 1);
        CHECK(glyd_read64(frame + fn - 8) == XXH64(data, 16384, 0));
        frame[fn - 1] ^= 0x20;
        CHECK_ERR(glyd_decompress(out, sizeof out, frame, fn), GLYD_error_checksum_wrong);
        frame[fn - 1] ^= 0x20;
        /* frames written now: two lanes, XXH3 */
        now = test_compress(data, 16384, 3, 0, 0, 0, &c);
        CHECK(c != fn || memcmp(now, frame, c) != 0);
        CHECK(decodes_to(now, c, data, 16384, 0));
        CHECK(glyd_getFrameInfo(&fi, now, c) == c && fi.hasChecksum == 2);
        CHECK(glyd_read64(now + c - 8) == XXH3_64bits(data, 16384));
        free(now);
    }
    free(data);
    free(frame);
}

TEST(wrong_checksum_is_reported)
{
    size_t n, c;
    uint8_t* const s = hostile_sample(1, &n, &c);
    uint8_t out[8192];
    glyd_DCtx* const d = glyd_createDCtx();
    s[c - 1] ^= 0x40; /* last byte of the checksum */
    CHECK_ERR(glyd_decompress(out, sizeof out, s, c), GLYD_error_checksum_wrong);
    {
        glyd_inBuffer ib = { s, c, 0 };
        glyd_outBuffer ob = { out, sizeof out, 0 };
        CHECK_ERR(glyd_decompressStream(d, &ob, &ib), GLYD_error_checksum_wrong);
    }
    CHECK_OK(glyd_DCtx_setParameter(d, glyd_d_checksumCheck, 0));
    CHECK(glyd_decompressDCtx(d, out, sizeof out, s, c) == n);
    glyd_freeDCtx(d);
    free(s);
}

TEST(forged_content_size_is_caught)
{
    size_t n, c;
    uint8_t* const s = hostile_sample(0, &n, &c);
    glyd_frameHeader fh;
    uint8_t out[8192];
    unsigned long long const lies[] = { 0, 1, 1499, 1501, 1ULL << 40, (1ULL << 62) };
    size_t i;
    CHECK_OK(glyd_frameHeaderRead(&fh, s, c));
    CHECK(fh.flags & GLYD_F_CONTENTSIZE);
    for (i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        uint8_t* const copy = (uint8_t*)malloc(c);
        size_t r;
        memcpy(copy, s, c);
        fh.contentSize = lies[i];
        glyd_frameHeaderWrite(copy, GLYD_FRAMEHEADER_MAX, &fh); /* same length: check byte recomputed */
        r = glyd_decompress(out, sizeof out, copy, c);
        CHECK(glyd_isError(r));
        CHECK(decode_survives(copy, c, s + c, n));
        free(copy);
    }
    free(s);
}

/* The checksum's kind is part of what the header promises: the wrong kind,
 * a kind without a checksum, or a reserved flag are all refused. */
TEST(checksum_kind_is_checked)
{
    size_t n, c;
    uint8_t* const s = hostile_sample(0, &n, &c);
    glyd_frameHeader fh;
    uint8_t out[8192];
    unsigned const flags[3] = { GLYD_F_CHECKSUM, GLYD_F_XXH3, GLYD_F_CHECKSUM | GLYD_F_XXH3 | 0x40 };
    size_t const expect[3] = { GLYD_ERROR(checksum_wrong), GLYD_ERROR(corruption_detected),
                               GLYD_ERROR(frameParameter_unsupported) };
    int i;
    CHECK_OK(glyd_frameHeaderRead(&fh, s, c));
    CHECK((fh.flags & (GLYD_F_CHECKSUM | GLYD_F_XXH3)) == (GLYD_F_CHECKSUM | GLYD_F_XXH3));
    for (i = 0; i < 3; i++) {
        uint8_t* const copy = (uint8_t*)malloc(c);
        glyd_frameHeader f = fh;
        memcpy(copy, s, c);
        f.flags = (fh.flags & ~(unsigned)(GLYD_F_CHECKSUM | GLYD_F_XXH3)) | flags[i];
        glyd_frameHeaderWrite(copy, GLYD_FRAMEHEADER_MAX, &f); /* same length: check byte recomputed */
        CHECK(glyd_decompress(out, sizeof out, copy, c) == expect[i]);
        CHECK(decode_survives(copy, c, s + c, n));
        free(copy);
    }
    free(s);
}

/* Decodes any bytes both ways; returns 0 if a result exceeds the room given. */
static int bounded_decode(const uint8_t* bytes, size_t size)
{
    uint8_t out[6000];
    glyd_DCtx* const d = glyd_createDCtx();
    size_t r = glyd_decompressDCtx(d, out, sizeof out, bytes, size);
    int ok = glyd_isError(r) || r <= sizeof out;
    glyd_inBuffer ib = { bytes, size, 0 };
    int steps = 0;
    glyd_DCtx_reset(d, glyd_reset_session_only);
    do {
        glyd_outBuffer ob = { out, 777, 0 };
        r = glyd_decompressStream(d, &ob, &ib);
        if (!glyd_isError(r) && ob.pos > ob.size) ok = 0;
    } while (!glyd_isError(r) && r != 0 && ib.pos < ib.size && ++steps < 10000);
    glyd_freeDCtx(d);
    return ok;
}

TEST(random_bytes_never_crash)
{
    test_rng r = { 555 };
    int i, ok = 1, refused = 0;
    for (i = 0; i < 20000; i++) {
        uint8_t buf[512];
        size_t const n = (size_t)(rng_next(&r) % sizeof buf) + 1;
        uint8_t out[64];
        rng_fill(&r, buf, n);
        if (i & 1) {
            /* a valid header in front of random blocks reaches deeper */
            glyd_frameHeader fh;
            memset(&fh, 0, sizeof fh);
            fh.flags = (unsigned)(rng_next(&r) & 7);
            fh.windowLog = 10 + (unsigned)(rng_next(&r) % 12);
            fh.blockLog = 10 + (unsigned)(rng_next(&r) % 8);
            fh.segmentLog = 16;
            fh.contentSize = rng_next(&r) % 5000;
            if (n > GLYD_FRAMEHEADER_MAX) glyd_frameHeaderWrite(buf, n, &fh);
        } else if (glyd_getErrorCode(glyd_decompress(out, sizeof out, buf, n)) == GLYD_error_prefix_unknown ||
                   n < 4) {
            refused++; /* plain random bytes are not a frame */
        }
        if (!bounded_decode(buf, n)) ok = 0;
    }
    CHECK(ok);
    CHECK(refused > 9900);
    {
        uint8_t out[16];
        CHECK_ERR(glyd_decompress(out, sizeof out, "definitely not glyd", 19), GLYD_error_prefix_unknown);
        CHECK_ERR(glyd_decompress(out, sizeof out, "", 0), GLYD_error_srcSize_truncated);
    }
}

TEST(small_destination_is_refused)
{
    size_t n, c;
    uint8_t* const s = hostile_sample(2, &n, &c);
    uint8_t out[8192];
    uint8_t small[100];
    CHECK_ERR(glyd_decompress(out, n - 1, s, c), GLYD_error_dstSize_tooSmall);
    CHECK(glyd_decompress(out, n, s, c) == n);
    CHECK_ERR(glyd_compress(small, sizeof small, s + c, n, 3), GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_compress(NULL, 10, s + c, n, 3), GLYD_error_dstBuffer_null);
    free(s);
}

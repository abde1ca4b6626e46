/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lz.c: sequence codes, repeat offsets, every match finder, and the
 * block coder, checked against an independent reference decoder. */
#include <stdlib.h>

#include "../../lib/lz/lz.h"
#include "harness.h"

TEST(sequence_code_tables_are_contiguous)
{
    unsigned c;
    uint32_t v;
    int ok = 1;
    for (c = 0; c < GLYD_LL_MAX_CODE; c++)
        if (glyd_llBase[c] + (1u << glyd_llBits[c]) != glyd_llBase[c + 1]) ok = 0;
    for (c = 0; c < GLYD_ML_MAX_CODE; c++)
        if (glyd_mlBase[c] + (1u << glyd_mlBits[c]) != glyd_mlBase[c + 1]) ok = 0;
    CHECK(ok);
    /* the code of every length covers it, up to the largest block */
    for (v = 0; v <= GLYD_BLOCKSIZE_MAX; v += (v < 4096 ? 1 : 97)) {
        unsigned const l = glyd_llCode(v), m = glyd_mlCode(v);
        if (l > GLYD_LL_MAX_CODE || v < glyd_llBase[l] || v - glyd_llBase[l] >= (1u << glyd_llBits[l])) ok = 0;
        if (m > GLYD_ML_MAX_CODE || v < glyd_mlBase[m] || v - glyd_mlBase[m] >= (1u << glyd_mlBits[m])) ok = 0;
    }
    CHECK(ok);
}

TEST(predefined_distributions_are_valid)
{
    int16_t const* norms[3] = { glyd_llDefaultNorm, glyd_ofDefaultNorm, glyd_mlDefaultNorm };
    unsigned const sizes[3] = { GLYD_LL_MAX_CODE + 1, GLYD_OF_MAX_CODE + 1, GLYD_ML_MAX_CODE + 1 };
    unsigned const logs[3] = { GLYD_LL_DEFAULT_LOG, GLYD_OF_DEFAULT_LOG, GLYD_ML_DEFAULT_LOG };
    int k;
    for (k = 0; k < 3; k++) {
        unsigned s;
        int sum = 0;
        for (s = 0; s < sizes[k]; s++) { CHECK(norms[k][s] >= 0); sum += norms[k][s]; }
        CHECK(sum == (1 << logs[k]));
    }
}

/* Reference repeat-offset rule, written out case by case. */
static uint32_t ref_offset(uint32_t rep[3], uint32_t offBase, uint32_t ll)
{
    uint32_t o;
    if (offBase > 3) {
        o = offBase - 3;
        rep[2] = rep[1]; rep[1] = rep[0]; rep[0] = o;
        return o;
    }
    if (ll > 0) {
        if (offBase == 1) return rep[0];
        if (offBase == 2) { o = rep[1]; rep[1] = rep[0]; rep[0] = o; return o; }
        o = rep[2]; rep[2] = rep[1]; rep[1] = rep[0]; rep[0] = o; return o;
    }
    if (offBase == 1) { o = rep[1]; rep[1] = rep[0]; rep[0] = o; return o; }
    if (offBase == 2) { o = rep[2]; rep[2] = rep[1]; rep[1] = rep[0]; rep[0] = o; return o; }
    o = rep[0] - 1; rep[2] = rep[1]; rep[1] = rep[0]; rep[0] = o; return o;
}

TEST(repeat_offsets_follow_the_rule)
{
    test_rng r = { 13 };
    uint32_t a[3] = { 1, 4, 8 }, b[3] = { 1, 4, 8 };
    int i, ok = 1;
    for (i = 0; i < 100000; i++) {
        uint32_t const offBase = (rng_next(&r) & 1) ? (uint32_t)(rng_next(&r) % 3) + 1
                                                     : (uint32_t)(rng_next(&r) % 1000) + 4;
        uint32_t const ll = (uint32_t)(rng_next(&r) % 3);
        uint32_t const x = glyd_resolveOffset(a, offBase, ll == 0);
        uint32_t const y = ref_offset(b, offBase, ll);
        if (x != y || memcmp(a, b, sizeof a)) ok = 0;
        if (a[0] < 2) { a[0] = b[0] = 2; } /* keep rep[0]-1 meaningful */
    }
    CHECK(ok);
    /* the names a finder uses map back to the slot it meant */
    CHECK(glyd_repToOffBase(0, 0) == 1);
    CHECK(glyd_repToOffBase(1, 0) == 2);
    CHECK(glyd_repToOffBase(1, 1) == 1);
    CHECK(glyd_repToOffBase(2, 1) == 2);
}

/* Applies sequences to rebuild a block after `history` bytes of prefix;
 * returns 0 on success. */
static int ref_apply(uint8_t* out, size_t histLen, const glyd_seqStore* ss, size_t lastLits,
                     size_t blockLen, uint32_t rep[3], size_t window)
{
    size_t op = histLen, lit = 0, i;
    for (i = 0; i < ss->nbSeq; i++) {
        const glyd_seq* const s = &ss->seqs[i];
        uint32_t off;
        size_t k;
        if (s->matchLength < GLYD_MINMATCH) return 1;
        memcpy(out + op, ss->lits + lit, s->litLength);
        op += s->litLength;
        lit += s->litLength;
        off = ref_offset(rep, s->offBase, s->litLength);
        if (off == 0 || off > op || off > window) return 2;
        for (k = 0; k < s->matchLength; k++, op++) out[op] = out[op - off];
    }
    memcpy(out + op, ss->lits + lit, lastLits);
    op += lastLits;
    return op == histLen + blockLen ? 0 : 3;
}

static void finder_round_trip(glyd_strategy strat, unsigned minMatch, const uint8_t* data, size_t n,
                              int cutBlocks, int* ok)
{
    glyd_lzParams p;
    glyd_matchState ms;
    glyd_seqStore ss;
    size_t const block = 1 << 17;
    uint8_t* const out = (uint8_t*)malloc(n + 64);
    uint32_t rep[3] = { 1, 4, 8 }, refRep[3] = { 1, 4, 8 };
    size_t pos = 0;
    test_rng r = { 41 };
    glyd_lzFinder const finders[] = { NULL, glyd_lzFindFast, glyd_lzFindDFast, glyd_lzFindGreedy,
                                      glyd_lzFindLazy, glyd_lzFindLazy2, glyd_lzFindBtOpt,
                                      glyd_lzFindBtUltra, glyd_lzFindBtUltra2 };
    int const opt = glyd_lzUsesOpt(strat);
    glyd_lzParamsForLevel(&p, opt ? 19 : 5, 0);
    p.strategy = strat;
    p.minMatch = minMatch;
    p.windowLog = 18;
    p.hashLog = 16;
    p.chainLog = opt ? 17 : 16; /* a binary tree takes two slots per position */
    p.searchLog = 4;
    memset(&ms, 0, sizeof ms);
    memset(&ss, 0, sizeof ss);
    ms.p = p;
    ms.hashTable = (uint32_t*)calloc((size_t)1 << p.hashLog, 4);
    ms.chainTable = (uint32_t*)calloc((size_t)1 << p.chainLog, 4);
    if (opt) ms.opt = glyd_lzCreateOptState(block, glyd_defaultCMem);
    ms.base = data - 1; /* index 0 stays free: tables use it as "empty" */
    ms.lowLimit = ms.nextToUpdate = 1;
    ss.maxSeq = block / 3 + 1;
    ss.seqs = (glyd_seq*)malloc(ss.maxSeq * sizeof(glyd_seq));
    ss.lits = (uint8_t*)malloc(block);
    CHECK(!opt || ms.opt != NULL);
    while ((!opt || ms.opt) && pos < n) {
        /* a block in one call, or (cutBlocks) in three of random sizes */
        size_t const len = GLYD_MIN(block, n - pos);
        size_t const cut1 = cutBlocks ? (size_t)(rng_next(&r) % (len + 1)) : 0;
        size_t const cut2 = cutBlocks ? cut1 + (size_t)(rng_next(&r) % (len - cut1 + 1)) : 0;
        size_t const cuts[4] = { 0, cut1, cut2, len };
        int part;
        for (part = 0; part < 3; part++) {
            size_t const start = pos + cuts[part], plen = cuts[part + 1] - cuts[part];
            size_t last;
            if (plen == 0) continue;
            ss.nbSeq = ss.nbLits = 0;
            ss.srcEnd = data + start + plen; /* as the block coder sets it: literals may be read in 16s before it */
            last = finders[strat](&ms, &ss, rep, data + start, plen);
            memcpy(ss.lits + ss.nbLits, data + start + plen - last, last);
            if (ref_apply(out, start, &ss, last, plen, refRep, (size_t)1 << p.windowLog) != 0 ||
                memcmp(rep, refRep, sizeof rep) != 0) {
                *ok = 0;
                break;
            }
        }
        if (!*ok) break;
        pos += len;
    }
    if (*ok && memcmp(out, data, n) != 0) *ok = 0;
    glyd_lzFreeOptState(ms.opt);
    free(out);
    free(ms.hashTable);
    free(ms.chainTable);
    free(ss.seqs);
    free(ss.lits);
}

TEST(every_finder_rebuilds_its_input)
{
    const char* const files[] = { "text/alice29.txt", "logs/Mac_2k.log", "text/kppkn.gtb", "bin/libllvm14.part" };
    glyd_strategy s;
    size_t f;
    for (f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[1024];
        size_t n;
        uint8_t* data;
        snprintf(path, sizeof path, "%s/%s", corpus_dir(), files[f]);
        data = read_file(path, &n);
        if (!data) continue;
        if (n > (1u << 20)) n = 1u << 20;
        for (s = glyd_fast; s <= glyd_lazy2; s++) {
            unsigned mm;
            for (mm = 4; mm <= 6; mm++) {
                int ok = 1;
                finder_round_trip(s, mm, data, n, 0, &ok);
                if (!ok) fprintf(stderr, "    finder %d minMatch %u fails on %s\n", (int)s, mm, files[f]);
                CHECK(ok);
            }
        }
        free(data);
    }
}

TEST(block_coder_round_trip_with_history)
{
    int level;
    size_t n;
    char path[1024];
    uint8_t* data;
    snprintf(path, sizeof path, "%s/text/lcet10.txt", corpus_dir());
    data = read_file(path, &n);
    if (!data) return;
    for (level = -3; level <= 12; level += 3) {
        glyd_lzParams p;
        glyd_lzCCtx* zc;
        glyd_lzDCtx dz;
        uint8_t* const comp = (uint8_t*)malloc(1 << 18);
        uint8_t* const out = (uint8_t*)malloc(n + 64);
        size_t pos = 0, block = 1 << 16;
        int ok = 1, compressed = 0;
        glyd_lzParamsForLevel(&p, level, 0);
        zc = glyd_lzCreateCCtx(&p, 16, glyd_defaultCMem);
        CHECK(zc != NULL);
        CHECK_OK(glyd_lzDInit(&dz, glyd_defaultCMem));
        glyd_lzStartHistory(zc, data);
        while (zc && pos < n) {
            size_t const len = GLYD_MIN(block, n - pos);
            size_t const c = glyd_lzCompressBlock(zc, comp, 1 << 18, data + pos, len);
            if (glyd_isError(c)) { ok = 0; break; }
            if (c == 0) {
                memcpy(out + pos, data + pos, len); /* stored raw, as a frame would */
            } else {
                size_t const d = glyd_lzDecodeBlock(&dz, out + pos, out + n + 64, out, (size_t)1 << p.windowLog,
                                                    block, comp, c);
                compressed++;
                if (d != len) { ok = 0; break; }
            }
            pos += len;
        }
        CHECK(ok);
        CHECK(compressed > 0);
        CHECK(memcmp(out, data, n) == 0);
        glyd_lzFreeCCtx(zc);
        glyd_lzDFree(&dz);
        free(comp);
        free(out);
    }
    free(data);
}

TEST(block_coder_declines_random_data)
{
    uint8_t src[50000], comp[60000];
    glyd_lzParams p;
    glyd_lzCCtx* zc;
    test_rng r = { 17 };
    rng_fill(&r, src, sizeof src);
    glyd_lzParamsForLevel(&p, 3, 0);
    zc = glyd_lzCreateCCtx(&p, 17, glyd_defaultCMem);
    CHECK(zc != NULL);
    if (!zc) return;
    glyd_lzStartHistory(zc, src);
    CHECK(glyd_lzCompressBlock(zc, comp, sizeof comp, src, sizeof src) == 0);
    glyd_lzFreeCCtx(zc);
}

/* The position of the sequence modes byte in a block payload, or 0 when the
 * block has no sequences: the reading of FORMAT.md, sections 7 to 10. */
static size_t modes_at(const uint8_t* b, size_t size)
{
    uint64_t v;
    size_t pos = 0, r;
    unsigned type;
    r = glyd_readVarint(b, size, &v); /* content size */
    if (r == 0) return 0;
    pos += r;
    type = b[pos++] & 3;
    r = glyd_readVarint(b + pos, size - pos, &v); /* literal count */
    if (r == 0) return 0;
    pos += r;
    if (type == 0) {
        pos += (size_t)v;
    } else if (type == 1) {
        pos += 1;
    } else {
        r = glyd_readVarint(b + pos, size - pos, &v); /* huffman section size */
        if (r == 0) return 0;
        pos += r + (size_t)v;
    }
    r = glyd_readVarint(b + pos, size - pos, &v); /* sequence count */
    if (r == 0 || v == 0) return 0;
    return pos + r;
}

/* Blocks of many sequences alternate them between two lanes of tANS states;
 * short ones keep one lane. Either way a decoder must refuse the other
 * reading and the reserved bit, and never misread a damaged stream. */
TEST(sequence_lanes)
{
    size_t n, sizes[2] = { 4096, 600 };
    char path[1024];
    uint8_t* data;
    int t;
    snprintf(path, sizeof path, "%s/text/alice29.txt", corpus_dir());
    data = read_file(path, &n);
    if (!data) return;
    for (t = 0; t < 2; t++) {
        size_t const len = sizes[t];
        glyd_lzParams p;
        glyd_lzCCtx* zc;
        glyd_lzDCtx dz;
        uint8_t comp[8192], out[8192 + 64];
        size_t c, at, bit;
        int ok = 1, caught = 0;
        glyd_lzParamsForLevel(&p, 3, 0);
        zc = glyd_lzCreateCCtx(&p, 13, glyd_defaultCMem);
        CHECK(zc != NULL);
        if (!zc) break;
        glyd_lzStartHistory(zc, data);
        c = glyd_lzCompressBlock(zc, comp, sizeof comp, data, len);
        CHECK(!glyd_isError(c) && c > 0);
        at = modes_at(comp, c);
        CHECK(at > 0 && at < c);
        /* 4096 bytes of text make hundreds of sequences, 600 a few dozen at most */
        CHECK((comp[at] & GLYD_SEQ_MODES_TWO_LANES) == (t == 0 ? GLYD_SEQ_MODES_TWO_LANES : 0));
        CHECK_OK(glyd_lzDInit(&dz, glyd_defaultCMem));
        CHECK(glyd_lzDecodeBlock(&dz, out, out + sizeof out, out, 1 << 13, 8192, comp, c) == len);
        CHECK(memcmp(out, data, len) == 0);
        for (bit = 0; bit < c * 8 && at > 0; bit++) {
            size_t d;
            comp[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            glyd_lzDStartHistory(&dz);
            d = glyd_lzDecodeBlock(&dz, out, out + sizeof out, out, 1 << 13, 8192, comp, c);
            if (glyd_isError(d)) caught++;
            else if (d > len) ok = 0;
            if (bit / 8 == at && bit % 8 >= 6 && !glyd_isError(d) && memcmp(out, data, len) == 0)
                ok = 0; /* the other lane reading, or the reserved bit, passed unnoticed */
            comp[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        CHECK(ok);
        CHECK(caught > 0);
        glyd_lzDFree(&dz);
        glyd_lzFreeCCtx(zc);
    }
    free(data);
}

/* ------------------------------------------------------------------------ */
/* The binary-tree finder and optimal parser (levels 10-22)                 */
/* ------------------------------------------------------------------------ */

#include "glyd.h"

/* Compresses src at `level` through the public API (window 2^windowLog
 * unless 0), decompresses and compares. Returns the compressed size, or
 * SIZE_MAX if anything failed. */
static size_t opt_frame_round_trip(const uint8_t* src, size_t n, int level, int windowLog)
{
    size_t const cap = glyd_compressBound(n);
    uint8_t* const comp = (uint8_t*)malloc(cap);
    uint8_t* const out = (uint8_t*)malloc(n + 1);
    glyd_CCtx* const c = glyd_createCCtx();
    size_t csize = SIZE_MAX;
    if (comp && out && c && !glyd_isError(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level)) &&
        (windowLog == 0 || !glyd_isError(glyd_CCtx_setParameter(c, glyd_c_windowLog, windowLog)))) {
        size_t const r = glyd_compress2(c, comp, cap, src, n);
        if (!glyd_isError(r)) {
            size_t const d = glyd_decompress(out, n + 1, comp, r);
            if (d == n && memcmp(out, src, n) == 0) csize = r;
        }
    }
    if (csize == SIZE_MAX) fprintf(stderr, "    level %d, %zu bytes, window %d: round trip fails\n", level, n, windowLog);
    glyd_freeCCtx(c);
    free(comp);
    free(out);
    return csize;
}

TEST(opt_levels_round_trip_corpus)
{
    /* small files at every level; larger ones (several blocks, and tables
     * and binaries with long matches) at the levels where settings change */
    const char* const files[] = { "text/alice29.txt", "logs/Mac_2k.log", "tables/diamonds.csv",
                                  "bin/libllvm14.part" };
    static const int someLevels[] = { 10, 15, 16, 19, 22 };
    size_t f;
    for (f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[1024];
        size_t n;
        uint8_t* data;
        int level;
        snprintf(path, sizeof path, "%s/%s", corpus_dir(), files[f]);
        data = read_file(path, &n);
        if (!data) continue;
        if (n > (600u << 10)) n = harness_quick() ? 300u << 10 : 600u << 10;
        for (level = 10; level <= GLYD_LEVEL_MAX; level++) {
            size_t k, wanted = f < 2 && !harness_quick();
            for (k = 0; k < sizeof someLevels / sizeof someLevels[0]; k++) wanted |= someLevels[k] == level;
            if (!wanted) continue;
            {
                size_t const c = opt_frame_round_trip(data, n, level, 0);
                CHECK(c != SIZE_MAX);
                /* alice29.txt: zstd -19 gives 49215 bytes, lazy2 52500 */
                if (f == 0 && level >= 16) CHECK(c < 50200);
            }
        }
        free(data);
    }
}

TEST(opt_levels_round_trip_edge_cases)
{
    static const int levels[] = { 10, 16, 22 };
    size_t const big = 1u << 20;
    uint8_t* const buf = (uint8_t*)malloc(big);
    test_rng r = { 29 };
    size_t k, i;
    if (!buf) return;
    for (k = 0; k < sizeof levels / sizeof levels[0]; k++) {
        int const level = levels[k];
        size_t c;
        /* tiny inputs, around the finder's end margin */
        size_t const tiny[] = { 0, 1, 7, 12, 16, 20, 33 };
        for (i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
            rng_fill(&r, buf, tiny[i]);
            CHECK(opt_frame_round_trip(buf, tiny[i], level, 0) != SIZE_MAX);
        }
        /* zeros over several blocks, with a few marks so that no block is
         * stored as a run: long repetitions, which must neither cost
         * quadratic time nor many bytes */
        memset(buf, 0, big);
        for (i = 0; i < big; i += 50000) buf[i] = (uint8_t)(i >> 4);
        c = opt_frame_round_trip(buf, big, level, 0);
        CHECK(c != SIZE_MAX && c < 1000);
        /* incompressible */
        rng_fill(&r, buf, 200000);
        c = opt_frame_round_trip(buf, 200000, level, 0);
        CHECK(c != SIZE_MAX && c <= 200000 + 64);
        /* a random chunk repeated with one byte changed per copy: long
         * matches, broken where repeat offsets pick them up again */
        rng_fill(&r, buf, 3000);
        for (i = 3000; i < 400000; i++) buf[i] = buf[i - 3000];
        for (i = 3000; i < 400000; i += 3001) buf[i] ^= 0x5A;
        c = opt_frame_round_trip(buf, 400000, level, 0);
        CHECK(c != SIZE_MAX && c < 10000);
        /* a 40 KB chunk seen again 100 KB later: beyond a 64 KB window it
         * must not be used, within the level's window it must */
        rng_fill(&r, buf, 300000);
        memcpy(buf + 140000, buf + 40000, 40000);
        c = opt_frame_round_trip(buf, 300000, level, 16);
        CHECK(c != SIZE_MAX && c > 290000);
        c = opt_frame_round_trip(buf, 300000, level, 0);
        CHECK(c != SIZE_MAX && c < 270000);
    }
    free(buf);
}

/* Runs an optimal finder straight on data, in blocks that are each cut in
 * three calls (as when long-distance matching parses the gaps between its
 * matches), checking every call against the reference decoder. */
TEST(opt_finders_rebuild_their_input)
{
    const char* const files[] = { "text/alice29.txt", "logs/Mac_2k.log", "bin/libllvm14.part", NULL, NULL };
    size_t f;
    for (f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[1024];
        size_t n = 400000, i;
        uint8_t* data;
        glyd_strategy s;
        if (files[f]) {
            snprintf(path, sizeof path, "%s/%s", corpus_dir(), files[f]);
            data = read_file(path, &n);
        } else {
            /* zeros with rare marks, then a period of 3 bytes: runs far
             * longer than targetLength, at offsets 1 and 3 */
            data = (uint8_t*)calloc(n, 1);
            if (!data) continue;
            for (i = 0; i < n; i += 70001) data[i] = 1;
            if (f == 4)
                for (i = 0; i < n; i++) data[i] = (uint8_t)(i % 3 + (i % 100003 == 0));
        }
        if (!data) continue;
        if (n > (700u << 10)) n = 700u << 10; /* past the 256 KB window */
        for (s = glyd_btopt; s <= glyd_btultra2; s++) {
            unsigned mm;
            for (mm = 3; mm <= 6; mm += 3) {
                int ok = 1;
                finder_round_trip(s, mm, data, n, 1, &ok);
                if (!ok) fprintf(stderr, "    finder %d minMatch %u fails on %s\n", (int)s, mm, files[f]);
                CHECK(ok);
            }
        }
        free(data);
    }
}

/* Levels 16 and up may code a block as several where its statistics change:
 * alice29 (152 KB, two 128 KiB blocks) comes out in more blocks, and decodes
 * one-shot, streamed and in segments on two threads. */
TEST(split_blocks_decode_everywhere)
{
    char path[1024];
    size_t n, c, r;
    uint8_t *data, *frame, *back;
    glyd_frameInfo info;
    int level;
    snprintf(path, sizeof path, "%s/text/alice29.txt", corpus_dir());
    data = read_file(path, &n);
    if (!data) return;
    frame = (uint8_t*)malloc(glyd_compressBound(n));
    back = (uint8_t*)malloc(n);
    for (level = 16; level <= 22; level += 3) {
        glyd_CCtx* const cc = glyd_createCCtx();
        glyd_DCtx* const dc = glyd_createDCtx();
        CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_compressionLevel, level));
        c = glyd_compress2(cc, frame, glyd_compressBound(n), data, n);
        CHECK_OK(c);
        CHECK_OK(glyd_getFrameInfo(&info, frame, c));
        CHECK(info.nbBlocks > 2);
        r = glyd_decompress(back, n, frame, c);
        CHECK(r == n && memcmp(back, data, n) == 0);
        {
            glyd_inBuffer in = { frame, c, 0 };
            glyd_outBuffer out = { back, n, 0 };
            memset(back, 0, n);
            CHECK(glyd_decompressStream(dc, &out, &in) == 0 && out.pos == n && memcmp(back, data, n) == 0);
        }
        /* segments of 64 KiB on two workers, each split on its own */
        CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_segmentLog, 16));
        CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_nbWorkers, 2));
        c = glyd_compress2(cc, frame, glyd_compressBound(n), data, n);
        CHECK_OK(c);
        CHECK_OK(glyd_DCtx_setParameter(dc, glyd_d_nbWorkers, 2));
        r = glyd_decompressDCtx(dc, back, n, frame, c);
        CHECK(r == n && memcmp(back, data, n) == 0);
        glyd_freeCCtx(cc);
        glyd_freeDCtx(dc);
    }
    free(frame);
    free(back);
    free(data);
}

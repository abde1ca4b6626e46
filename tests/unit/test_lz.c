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

static void finder_round_trip(glyd_strategy strat, unsigned minMatch, const uint8_t* data, size_t n, int* ok)
{
    glyd_lzParams p;
    glyd_matchState ms;
    glyd_seqStore ss;
    size_t const block = 1 << 17;
    uint8_t* const out = (uint8_t*)malloc(n + 64);
    uint32_t rep[3] = { 1, 4, 8 }, refRep[3] = { 1, 4, 8 };
    size_t pos = 0;
    glyd_lzFinder const finders[] = { NULL, glyd_lzFindFast, glyd_lzFindDFast, glyd_lzFindGreedy,
                                      glyd_lzFindLazy, glyd_lzFindLazy2 };
    glyd_lzParamsForLevel(&p, 5, 0);
    p.strategy = strat;
    p.minMatch = minMatch;
    p.windowLog = 18;
    p.hashLog = 16;
    p.chainLog = 16;
    p.searchLog = 4;
    memset(&ms, 0, sizeof ms);
    ms.p = p;
    ms.hashTable = (uint32_t*)calloc((size_t)1 << p.hashLog, 4);
    ms.chainTable = (uint32_t*)calloc((size_t)1 << p.chainLog, 4);
    ms.base = data - 1; /* index 0 stays free: tables use it as "empty" */
    ms.lowLimit = ms.nextToUpdate = 1;
    ss.maxSeq = block / 3 + 1;
    ss.seqs = (glyd_seq*)malloc(ss.maxSeq * sizeof(glyd_seq));
    ss.lits = (uint8_t*)malloc(block);
    while (pos < n) {
        size_t const len = GLYD_MIN(block, n - pos);
        size_t last;
        ss.nbSeq = ss.nbLits = 0;
        last = finders[strat](&ms, &ss, rep, data + pos, len);
        memcpy(ss.lits + ss.nbLits, data + pos + len - last, last);
        if (ref_apply(out, pos, &ss, last, len, refRep, (size_t)1 << p.windowLog) != 0) { *ok = 0; break; }
        if (memcmp(rep, refRep, sizeof rep) != 0) { *ok = 0; break; }
        pos += len;
    }
    if (*ok && memcmp(out, data, n) != 0) *ok = 0;
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
                finder_round_trip(s, mm, data, n, &ok);
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

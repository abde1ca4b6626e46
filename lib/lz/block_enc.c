/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * block_enc.c: the LZ compression context and block encoder. A block is
 * parsed into sequences by the level's finder, then coded: literals with
 * Huffman (or raw / run-length), sequence codes with tANS tables chosen per
 * field by estimated cost (predefined, run-length, fresh or repeated).
 */
#include "ldm.h"

/* Tables and repeat offsets move forward only when a block is emitted
 * compressed, which is when the decoder sees them too. */
enum { KIND_NONE = 0, KIND_PREDEF, KIND_RLE, KIND_FRESH };
enum { F_LL = 0, F_OF = 1, F_ML = 2 };

typedef struct {
    glyd_fseCTable fresh[2];        /* current slot holds the last fresh table */
    int16_t norm[2][GLYD_ML_MAX_CODE + 1];
    unsigned maxSymbol[2];
    unsigned tableLog[2];
    int cur;
    int kind;                       /* table the decoder would repeat */
    uint8_t rleSymbol;
} fse_field;

typedef struct {
    int kind;                       /* chosen for the block being coded */
    int slot;                       /* KIND_FRESH: slot written */
    uint8_t rleSymbol;
    const glyd_fseCTable* table;    /* NULL for run-length */
} fse_choice;

/* The most blocks that one block's sequences are split into. */
#define GLYD_SPLIT_MAX 8

typedef struct {
    size_t seqEnd, litEnd, contentEnd; /* counted from the block's start */
    uint32_t rep[GLYD_REP_NUM];        /* repeat offsets after the part */
} split_part;

struct glyd_lzCCtx_s {
    glyd_customMem mem;
    glyd_lzParams p;
    size_t blockMax;
    glyd_matchState ms;
    glyd_lzFinder finder;
    glyd_seqStore ss;
    uint8_t* codes;                 /* 3 x maxSeq: LL, OF, ML codes */
    uint32_t rep[GLYD_REP_NUM];     /* as the decoder has them */
    glyd_hufCTable huf[2];
    int hufCur;
    int hufValid;
    fse_field field[3];
    glyd_fseCTable predef[3];
    glyd_ldm* ldm;                  /* long-distance matching, or NULL */
    glyd_ldmMatch* ldmMatches;      /* one block's long matches */
    /* a block coded as several: where each part ends */
    split_part parts[GLYD_SPLIT_MAX];
    size_t nbParts;
    size_t nextPart;                /* the part glyd_lzCompressRest codes; 0: none */
};

static const unsigned kMaxCode[3] = { GLYD_LL_MAX_CODE, GLYD_OF_MAX_CODE, GLYD_ML_MAX_CODE };
static const unsigned kMaxLog[3] = { GLYD_LL_MAX_LOG, GLYD_OF_MAX_LOG, GLYD_ML_MAX_LOG };

static const int16_t* default_norm(unsigned k)
{
    return k == F_LL ? glyd_llDefaultNorm : k == F_OF ? glyd_ofDefaultNorm : glyd_mlDefaultNorm;
}
static unsigned default_log(unsigned k)
{
    return k == F_LL ? GLYD_LL_DEFAULT_LOG : k == F_OF ? GLYD_OF_DEFAULT_LOG : GLYD_ML_DEFAULT_LOG;
}

static glyd_lzFinder finder_for(glyd_strategy s)
{
    switch (s) {
    case glyd_fast: return glyd_lzFindFast;
    case glyd_dfast: return glyd_lzFindDFast;
    case glyd_greedy: return glyd_lzFindGreedy;
    case glyd_lazy: return glyd_lzFindLazy;
    case glyd_btopt: return glyd_lzFindBtOpt;
    case glyd_btultra: return glyd_lzFindBtUltra;
    case glyd_btultra2: return glyd_lzFindBtUltra2;
    case glyd_lazy2:
    default: return glyd_lzFindLazy2;
    }
}

glyd_lzCCtx* glyd_lzCreateCCtx(const glyd_lzParams* p, unsigned blockLog, glyd_customMem mem)
{
    glyd_lzCCtx* zc = (glyd_lzCCtx*)glyd_calloc(sizeof(*zc), mem);
    unsigned k;
    if (!zc) return NULL;
    zc->mem = mem;
    zc->p = *p;
    zc->blockMax = (size_t)1 << blockLog;
    zc->finder = finder_for(p->strategy);
    zc->ms.p = *p;
    zc->ms.hashTable = (uint32_t*)glyd_calloc(sizeof(uint32_t) << p->hashLog, mem);
    zc->ms.chainTable = (uint32_t*)glyd_calloc(sizeof(uint32_t) << p->chainLog, mem);
    zc->ss.maxSeq = zc->blockMax / GLYD_MINMATCH + 1;
    zc->ss.seqs = (glyd_seq*)glyd_malloc(zc->ss.maxSeq * sizeof(glyd_seq), mem);
    zc->ss.lits = (uint8_t*)glyd_malloc(zc->blockMax + GLYD_WILDCOPY_OVERLENGTH, mem);
    zc->codes = (uint8_t*)glyd_malloc(3 * zc->ss.maxSeq, mem);
    if (glyd_lzUsesOpt(p->strategy)) zc->ms.opt = glyd_lzCreateOptState(zc->blockMax, mem);
    if (!zc->ms.hashTable || !zc->ms.chainTable || !zc->ss.seqs || !zc->ss.lits || !zc->codes ||
        (glyd_lzUsesOpt(p->strategy) && !zc->ms.opt)) {
        glyd_lzFreeCCtx(zc);
        return NULL;
    }
    for (k = 0; k < 3; k++)
        glyd_fseBuildCTable(&zc->predef[k], default_norm(k), kMaxCode[k], default_log(k));
    zc->ms.nextIndex = 1;
    return zc;
}

void glyd_lzFreeCCtx(glyd_lzCCtx* zc)
{
    if (!zc) return;
    glyd_free(zc->ms.hashTable, zc->mem);
    glyd_free(zc->ms.chainTable, zc->mem);
    glyd_free(zc->ss.seqs, zc->mem);
    glyd_free(zc->ss.lits, zc->mem);
    glyd_free(zc->codes, zc->mem);
    glyd_lzFreeOptState(zc->ms.opt);
    glyd_ldmFree(zc->ldm);
    glyd_free(zc->ldmMatches, zc->mem);
    glyd_free(zc, zc->mem);
}

void glyd_lzStartHistory(glyd_lzCCtx* zc, const uint8_t* start)
{
    glyd_matchState* const ms = &zc->ms;
    unsigned k;
    /* Indices keep growing across histories so that old table entries fall
     * below the new lowLimit and need no clearing; only once they grow
     * large are the tables wiped and the count restarted. */
    if (ms->nextIndex > (1u << 30)) {
        memset(ms->hashTable, 0, sizeof(uint32_t) << ms->p.hashLog);
        memset(ms->chainTable, 0, sizeof(uint32_t) << ms->p.chainLog);
        if (zc->ldm) glyd_ldmReset(zc->ldm);
        ms->nextIndex = 1;
    }
    ms->base = start - ms->nextIndex;
    ms->lowLimit = ms->nextIndex;
    ms->nextToUpdate = ms->nextIndex;
    zc->rep[0] = 1;
    zc->rep[1] = 4;
    zc->rep[2] = 8;
    zc->hufValid = 0;
    for (k = 0; k < 3; k++) zc->field[k].kind = KIND_NONE;
}

void glyd_lzRebase(glyd_lzCCtx* zc, size_t shift)
{
    zc->ms.base -= shift;
}

/* Keeps indices below 2^32 in a history longer than 3 GiB: slides every
 * index down by a multiple of the chain size (chain slots stay put). */
static void correct_indices(glyd_lzCCtx* zc, const uint8_t* src)
{
    glyd_matchState* const ms = &zc->ms;
    uint32_t const cur = (uint32_t)(src - ms->base);
    uint32_t const windowSize = 1u << ms->p.windowLog;
    uint32_t const cycleMask = (1u << ms->p.chainLog) - 1;
    uint32_t const corr = (cur - windowSize - 1) & ~cycleMask;
    size_t const hsize = (size_t)1 << ms->p.hashLog;
    size_t const csize = (size_t)1 << ms->p.chainLog;
    size_t i;
    for (i = 0; i < hsize; i++) ms->hashTable[i] = ms->hashTable[i] > corr ? ms->hashTable[i] - corr : 0;
    for (i = 0; i < csize; i++) ms->chainTable[i] = ms->chainTable[i] > corr ? ms->chainTable[i] - corr : 0;
    ms->base += corr;
    ms->lowLimit = ms->lowLimit > corr ? ms->lowLimit - corr : 1;
    ms->nextToUpdate = ms->nextToUpdate > corr ? ms->nextToUpdate - corr : ms->lowLimit;
    if (zc->ldm) glyd_ldmCorrectIndices(zc->ldm, corr);
}

/* ------------------------------------------------------------------------ */
/* Literals                                                                 */
/* ------------------------------------------------------------------------ */

/* How many more bytes (or bits) than `size` a repeated table may cost and
 * still be preferred to a fresh one. */
static size_t slack(size_t size, unsigned repeatSlack)
{
    return repeatSlack && size != SIZE_MAX ? size >> repeatSlack : 0;
}

/* Writes the literals section; *newTable is set when a fresh Huffman table
 * was written into the spare slot. Returns its size, or 0 if cap is short. */
static size_t encode_literals(glyd_lzCCtx* zc, uint8_t* dst, size_t cap,
                              const uint8_t* lits, size_t n, int* newTable)
{
    unsigned count[256], maxSymbol, maxCount;
    size_t const hdr = 1 + glyd_varintSize(n);
    *newTable = 0;
    if (cap < hdr + 1) return 0;
    maxCount = n ? glyd_histBytes(count, &maxSymbol, lits, n) : 0;

    if (n > 1 && maxCount == n) {  /* one byte repeated */
        dst[0] = 1;
        glyd_writeVarint(dst + 1, cap - 1, n);
        dst[hdr] = lits[0];
        return hdr + 1;
    }
    if (n >= 32) {
        glyd_hufCTable* const fresh = &zc->huf[zc->hufCur ^ 1];
        unsigned const nbStreams = n >= 1024 ? 4 : 1;
        size_t const streamOverhead = nbStreams == 4 ? 9 + 4 : 1;
        uint8_t desc[160];
        size_t descSize = 0, freshBytes = SIZE_MAX, repeatBytes = SIZE_MAX, best;
        size_t const maxBits = glyd_hufBuildCTable(fresh, count, maxSymbol, GLYD_HUF_MAX_BITS);
        if (!GLYD_IS_ERROR(maxBits)) {
            descSize = glyd_hufWriteCTable(desc, sizeof(desc), fresh);
            if (!GLYD_IS_ERROR(descSize))
                freshBytes = descSize + (glyd_hufCost(fresh, count, maxSymbol) + 7) / 8 + streamOverhead;
        }
        if (zc->hufValid) {
            size_t const bits = glyd_hufCost(&zc->huf[zc->hufCur], count, maxSymbol);
            if (bits != SIZE_MAX) repeatBytes = (bits + 7) / 8 + streamOverhead;
        }
        best = GLYD_MIN(freshBytes, repeatBytes);
        /* Huffman must save a little to be worth its slower decoding */
        if (best < n - (n >> 6) - 2) {
            int const useFresh = repeatBytes == SIZE_MAX ||
                                 freshBytes + slack(freshBytes, zc->p.repeatSlack) < repeatBytes;
            const glyd_hufCTable* const ct = useFresh ? fresh : &zc->huf[zc->hufCur];
            size_t pos = hdr + 3; /* room for the compressed size's varint */
            size_t written, csize, vs;
            if (useFresh) {
                if (cap < pos + descSize) return 0;
                memcpy(dst + pos, desc, descSize);
                pos += descSize;
            }
            written = glyd_hufCompress(dst + pos, cap - pos, lits, n, ct, nbStreams);
            if (GLYD_IS_ERROR(written) || written == 0) return 0;
            csize = (useFresh ? descSize : 0) + written;
            dst[0] = (uint8_t)((useFresh ? 2 : 3) | (nbStreams == 4 ? 4 : 0));
            glyd_writeVarint(dst + 1, cap - 1, n);
            vs = glyd_writeVarint(dst + hdr, 3, csize);
            if (vs == 0) return 0;
            if (vs < 3) memmove(dst + hdr + vs, dst + hdr + 3, csize);
            *newTable = useFresh;
            return hdr + vs + csize;
        }
    }
    /* raw */
    if (cap < hdr + n) return 0;
    dst[0] = 0;
    glyd_writeVarint(dst + 1, cap - 1, n);
    memcpy(dst + hdr, lits, n);
    return hdr + n;
}

/* ------------------------------------------------------------------------ */
/* Sequences                                                                */
/* ------------------------------------------------------------------------ */

/* Picks the cheapest table for one field (estimated bits, descriptions
 * included), writes its description at dst and returns the mode (0
 * predefined, 1 run-length, 2 fresh, 3 repeat); *descSize receives the
 * description's size. A fresh table goes into the field's spare slot. */
static unsigned choose_table(glyd_lzCCtx* zc, unsigned k, fse_choice* ch, uint8_t* dst, size_t cap,
                             const uint8_t* codes, size_t nbSeq, size_t* descSize)
{
    fse_field* const f = &zc->field[k];
    int const spare = f->cur ^ 1;
    unsigned count[GLYD_ML_MAX_CODE + 1];
    unsigned maxSymbol = kMaxCode[k];
    unsigned const maxCount = glyd_histSmall(count, &maxSymbol, codes, nbSeq);
    size_t predefBits, repeatBits = SIZE_MAX, freshBits = SIZE_MAX, freshDesc = 0;
    unsigned freshLog = 0;

    *descSize = 0;
    if (maxCount == nbSeq) {
        ch->kind = KIND_RLE;
        ch->rleSymbol = codes[0];
        ch->table = NULL;
        if (f->kind == KIND_RLE && f->rleSymbol == codes[0]) return 3;
        if (cap < 1) return 1; /* the caller notices the overflow */
        dst[0] = codes[0];
        *descSize = 1;
        return 1;
    }
    predefBits = glyd_fseCost(count, maxSymbol, default_norm(k), kMaxCode[k], default_log(k));
    if (f->kind == KIND_PREDEF) {
        repeatBits = predefBits;
    } else if (f->kind == KIND_FRESH) {
        repeatBits = glyd_fseCost(count, maxSymbol, f->norm[f->cur], f->maxSymbol[f->cur],
                                  f->tableLog[f->cur]);
    }
    freshLog = glyd_fseOptimalTableLog(kMaxLog[k], nbSeq, maxSymbol);
    if (!GLYD_IS_ERROR(glyd_fseNormalize(f->norm[spare], freshLog, count, nbSeq, maxSymbol))) {
        freshDesc = glyd_fseWriteNCount(dst, cap, f->norm[spare], maxSymbol, freshLog);
        if (!GLYD_IS_ERROR(freshDesc))
            freshBits = glyd_fseCost(count, maxSymbol, f->norm[spare], maxSymbol, freshLog) + 8 * freshDesc;
    }
    if (repeatBits != SIZE_MAX && repeatBits <= predefBits &&
        repeatBits <= freshBits + slack(freshBits, zc->p.repeatSlack)) {
        ch->kind = f->kind;
        ch->slot = f->cur;
        ch->table = f->kind == KIND_PREDEF ? &zc->predef[k] : &f->fresh[f->cur];
        return 3;
    }
    if (predefBits != SIZE_MAX && predefBits <= freshBits) {
        ch->kind = KIND_PREDEF;
        ch->table = &zc->predef[k];
        return 0;
    }
    if (freshBits == SIZE_MAX) {
        /* no table fits (not expected for a valid histogram): the caller
         * stores the block raw */
        ch->table = NULL;
        ch->kind = KIND_NONE;
        return 4;
    }
    glyd_fseBuildCTable(&f->fresh[spare], f->norm[spare], maxSymbol, freshLog);
    f->maxSymbol[spare] = maxSymbol;
    f->tableLog[spare] = freshLog;
    ch->kind = KIND_FRESH;
    ch->slot = spare;
    ch->table = &f->fresh[spare];
    *descSize = freshDesc;
    return 2;
}

GLYD_FORCE_INLINE void write_extras(glyd_bitWriter* bw, const glyd_seq* s, unsigned llc,
                                    unsigned ofc, unsigned mlc)
{
    glyd_bitWrite(bw, s->litLength - glyd_llBase[llc], glyd_llBits[llc]);
    glyd_bitWrite(bw, s->matchLength - GLYD_MINMATCH - glyd_mlBase[mlc], glyd_mlBits[mlc]);
    glyd_bitFlush(bw);
    glyd_bitWrite(bw, s->offBase - (1u << ofc), ofc);
    glyd_bitFlush(bw);
}

/* Sequence i's state transitions (OF, ML, LL) in its lane's states s, then
 * its extra bits (LL, ML, OF). */
GLYD_FORCE_INLINE void encode_seq(glyd_bitWriter* bw, glyd_fseCState s[3], const fse_choice ch[3],
                                  const glyd_seq* seqs, const uint8_t* llc, const uint8_t* ofc,
                                  const uint8_t* mlc, size_t i)
{
    /* at most 8 + 9 + 9 + 20 bits, then 20 + 31, between flushes */
    if (ch[F_OF].table) glyd_fseEncode(bw, &s[F_OF], ofc[i]);
    if (ch[F_ML].table) glyd_fseEncode(bw, &s[F_ML], mlc[i]);
    if (ch[F_LL].table) glyd_fseEncode(bw, &s[F_LL], llc[i]);
    write_extras(bw, &seqs[i], llc[i], ofc[i], mlc[i]);
}

/* The last sequence of a lane starts its states, and has only extra bits. */
GLYD_FORCE_INLINE void start_lane(glyd_bitWriter* bw, glyd_fseCState s[3], const fse_choice ch[3],
                                  const glyd_seq* seqs, const uint8_t* llc, const uint8_t* ofc,
                                  const uint8_t* mlc, size_t i)
{
    if (ch[F_LL].table) glyd_fseInitCState(&s[F_LL], ch[F_LL].table, llc[i]);
    if (ch[F_OF].table) glyd_fseInitCState(&s[F_OF], ch[F_OF].table, ofc[i]);
    if (ch[F_ML].table) glyd_fseInitCState(&s[F_ML], ch[F_ML].table, mlc[i]);
    write_extras(bw, &seqs[i], llc[i], ofc[i], mlc[i]);
}

GLYD_FORCE_INLINE void flush_lane(glyd_bitWriter* bw, const glyd_fseCState s[3], const fse_choice ch[3])
{
    if (ch[F_ML].table) glyd_fseFlushCState(bw, &s[F_ML]);
    if (ch[F_OF].table) glyd_fseFlushCState(bw, &s[F_OF]);
    if (ch[F_LL].table) glyd_fseFlushCState(bw, &s[F_LL]);
}

/* The sequence bit stream, in the reverse of the decoder's reading order
 * (FORMAT.md, section 10.5): sequences from the last to the first, then the
 * lanes' states, the second lane's first. With two lanes, even sequences
 * use the first lane's states and odd ones the second's; each lane's states
 * are their own variables, so that they stay in registers. Returns the
 * stream's size, or 0 if cap is short. */
static size_t encode_seq_stream(uint8_t* dst, size_t cap, const glyd_seq* seqs,
                                const uint8_t* llc, const uint8_t* ofc, const uint8_t* mlc,
                                size_t nbSeq, const fse_choice ch[3], unsigned lanes)
{
    glyd_bitWriter bw;
    glyd_fseCState even[3], odd[3];
    size_t i = nbSeq - 1;
    if (cap < 8) return 0;
    memset(even, 0, sizeof(even));
    memset(odd, 0, sizeof(odd));
    glyd_bitWriterInit(&bw, dst, cap);
    if (lanes == 1) {
        start_lane(&bw, even, ch, seqs, llc, ofc, mlc, i);
        while (i-- > 0) encode_seq(&bw, even, ch, seqs, llc, ofc, mlc, i);
        flush_lane(&bw, even, ch);
        return glyd_bitWriterClose(&bw);
    }
    assert(nbSeq >= 2);
    start_lane(&bw, (i & 1) ? odd : even, ch, seqs, llc, ofc, mlc, i);
    i--;
    start_lane(&bw, (i & 1) ? odd : even, ch, seqs, llc, ofc, mlc, i);
    /* the rest in pairs, odd then even; an even one left over first */
    if (i > 0 && !((i - 1) & 1)) {
        i--;
        encode_seq(&bw, even, ch, seqs, llc, ofc, mlc, i);
    }
    while (i >= 2) {
        encode_seq(&bw, odd, ch, seqs, llc, ofc, mlc, i - 1);
        encode_seq(&bw, even, ch, seqs, llc, ofc, mlc, i - 2);
        i -= 2;
    }
    flush_lane(&bw, odd, ch);
    flush_lane(&bw, even, ch);
    return glyd_bitWriterClose(&bw);
}

/* ------------------------------------------------------------------------ */
/* Block                                                                    */
/* ------------------------------------------------------------------------ */

size_t glyd_lzSetLongMatching(glyd_lzCCtx* zc, int enable)
{
    if (!enable) {
        glyd_ldmFree(zc->ldm);
        glyd_free(zc->ldmMatches, zc->mem);
        zc->ldm = NULL;
        zc->ldmMatches = NULL;
        return 0;
    }
    if (zc->ldm) return 0;
    zc->ldm = glyd_ldmCreate(zc->p.windowLog, zc->mem);
    zc->ldmMatches = (glyd_ldmMatch*)glyd_malloc(
        (zc->blockMax / GLYD_LDM_MIN_MATCH + 1) * sizeof(glyd_ldmMatch), zc->mem);
    if (!zc->ldm || !zc->ldmMatches) {
        glyd_lzSetLongMatching(zc, 0);
        return GLYD_ERROR(memory_allocation);
    }
    return 0;
}

void glyd_lzLoadHistory(glyd_lzCCtx* zc, const uint8_t* src, size_t size)
{
    size_t pos = 0;
    /* Positions are indexed, not parsed: a parse would cost as much as
     * compressing the content, for every frame made with it. */
    if (glyd_lzUsesOpt(zc->p.strategy)) glyd_lzIndexBt(&zc->ms, src, size);
    else if (zc->p.strategy >= glyd_greedy) glyd_lzIndexChain(&zc->ms, src, size);
    else glyd_lzIndexFast(&zc->ms, src, size);
    while (zc->ldm && pos < size) {
        size_t const n = GLYD_MIN(zc->blockMax, size - pos);
        glyd_ldmFind(zc->ldm, &zc->ms, src + pos, n, NULL, 0);
        pos += n;
    }
    zc->ms.nextIndex = (uint32_t)(src + size - zc->ms.base);
}

static size_t parse_block(glyd_lzCCtx* zc, uint32_t rep[GLYD_REP_NUM], const uint8_t* src, size_t srcSize);

void glyd_lzCountCodes(glyd_lzCCtx* zc, const uint8_t* src, size_t srcSize, glyd_lzCodeCounts* c)
{
    glyd_seqStore* const ss = &zc->ss;
    uint32_t rep[GLYD_REP_NUM];
    size_t lastLits, i;
    memcpy(rep, zc->rep, sizeof(rep));
    ss->nbSeq = 0;
    ss->nbLits = 0;
    ss->srcEnd = src + srcSize;
    lastLits = parse_block(zc, rep, src, srcSize);
    memcpy(ss->lits + ss->nbLits, src + srcSize - lastLits, lastLits);
    ss->nbLits += lastLits;
    zc->ms.nextIndex = (uint32_t)(src + srcSize - zc->ms.base);
    for (i = 0; i < ss->nbLits; i++) c->lit[ss->lits[i]]++;
    for (i = 0; i < ss->nbSeq; i++) {
        const glyd_seq* const sq = &ss->seqs[i];
        c->ll[glyd_llCode(sq->litLength)]++;
        c->of[glyd_highbit32(sq->offBase)]++;
        c->ml[glyd_mlCode(sq->matchLength - GLYD_MINMATCH)]++;
    }
}

size_t glyd_lzLoadTables(glyd_lzCCtx* zc, const void* src, size_t size)
{
    const uint8_t* ip = (const uint8_t*)src;
    const uint8_t* const iend = ip + size;
    glyd_hufDTable dt;
    unsigned k;
    size_t r = glyd_hufReadDTable(&dt, ip, size);
    FORWARD_IF_ERROR(r);
    glyd_hufCTableFromDTable(&zc->huf[zc->hufCur], &dt);
    zc->hufValid = 1;
    ip += r;
    for (k = 0; k < 3; k++) {
        fse_field* const f = &zc->field[k];
        unsigned maxSymbol = kMaxCode[k], tableLog;
        r = glyd_fseReadNCount(f->norm[f->cur], &maxSymbol, &tableLog, kMaxLog[k], ip, (size_t)(iend - ip));
        FORWARD_IF_ERROR(r);
        glyd_fseBuildCTable(&f->fresh[f->cur], f->norm[f->cur], maxSymbol, tableLog);
        f->maxSymbol[f->cur] = maxSymbol;
        f->tableLog[f->cur] = tableLog;
        f->kind = KIND_FRESH;
        ip += r;
    }
    RETURN_ERROR_IF(ip != iend, dictionary_corrupted, "bytes after the dictionary's tables");
    return 0;
}

/* Sequences for a block: the long matches, if any, with the level's finder
 * parsing the gaps between them. Returns the number of trailing literals. */
static size_t parse_block(glyd_lzCCtx* zc, uint32_t rep[GLYD_REP_NUM], const uint8_t* src, size_t srcSize)
{
    /* shorter gaps are not worth a finder's setting up */
    size_t const minParse = 16;
    const uint8_t* ip = src;
    size_t n, i, rest;
    if (!zc->ldm) return srcSize >= minParse ? zc->finder(&zc->ms, &zc->ss, rep, src, srcSize) : srcSize;
    n = glyd_ldmFind(zc->ldm, &zc->ms, src, srcSize, zc->ldmMatches, zc->blockMax / GLYD_LDM_MIN_MATCH + 1);
    for (i = 0; i < n; i++) {
        const uint8_t* const start = src + zc->ldmMatches[i].start;
        size_t const gap = (size_t)(start - ip);
        size_t const lits = gap >= minParse ? zc->finder(&zc->ms, &zc->ss, rep, ip, gap) : gap;
        glyd_lzStoreMatch(&zc->ss, rep, start - lits, lits, GLYD_OFFSET_TO_OFFBASE(zc->ldmMatches[i].offset),
                          zc->ldmMatches[i].length);
        ip = start + zc->ldmMatches[i].length;
    }
    rest = (size_t)(src + srcSize - ip);
    return rest >= minParse ? zc->finder(&zc->ms, &zc->ss, rep, ip, rest) : rest;
}

/* The entropy coder's state that a block moves forward, saved while trial
 * encodings run. */
typedef struct {
    uint32_t rep[GLYD_REP_NUM];
    glyd_hufCTable huf[2];
    int hufCur, hufValid;
    fse_field field[3];
} enc_state;

static void state_save(const glyd_lzCCtx* zc, enc_state* st)
{
    memcpy(st->rep, zc->rep, sizeof(st->rep));
    memcpy(st->huf, zc->huf, sizeof(st->huf));
    st->hufCur = zc->hufCur;
    st->hufValid = zc->hufValid;
    memcpy(st->field, zc->field, sizeof(st->field));
}

static void state_load(glyd_lzCCtx* zc, const enc_state* st)
{
    memcpy(zc->rep, st->rep, sizeof(st->rep));
    memcpy(zc->huf, st->huf, sizeof(st->huf));
    zc->hufCur = st->hufCur;
    zc->hufValid = st->hufValid;
    memcpy(zc->field, st->field, sizeof(st->field));
}

/* Two lanes of tANS states let a decoder work on two sequences at once, for
 * the cost of three more initial states (about 3 bytes): worth it from a few
 * dozen sequences. */
#define SEQ_TWO_LANES_MIN 32

/* Codes nbSeq sequences from seqs and nbLits literals as one block payload
 * of `content` bytes; repAfter: the repeat offsets after them. On success
 * the coder's state moves on as the decoder's will (the caller emits the
 * payload); returns its size, or 0 when it does not fit in cap or is not
 * smaller than the content (state unchanged). */
static size_t encode_payload(glyd_lzCCtx* zc, uint8_t* dst, size_t cap, const glyd_seq* seqs,
                             size_t nbSeq, const uint8_t* lits, size_t nbLits, size_t content,
                             const uint32_t repAfter[GLYD_REP_NUM])
{
    uint8_t* const ostart = dst;
    uint8_t* const oend = ostart + cap;
    uint8_t* op = ostart;
    fse_choice ch[3];
    int newHuf = 0;
    size_t r;

    r = glyd_writeVarint(op, cap, content);
    if (r == 0) return 0;
    op += r;
    r = encode_literals(zc, op, (size_t)(oend - op), lits, nbLits, &newHuf);
    if (r == 0) return 0;
    op += r;
    r = glyd_writeVarint(op, (size_t)(oend - op), nbSeq);
    if (r == 0) return 0;
    op += r;
    if (nbSeq > 0) {
        uint8_t* const llc = zc->codes;
        uint8_t* const ofc = zc->codes + zc->ss.maxSeq;
        uint8_t* const mlc = zc->codes + 2 * zc->ss.maxSeq;
        const uint8_t* const fieldCodes[3] = { llc, ofc, mlc };
        uint8_t* const modesPos = op;
        unsigned modes = 0, k;
        size_t i;
        for (i = 0; i < nbSeq; i++) {
            const glyd_seq* const sq = &seqs[i];
            llc[i] = (uint8_t)glyd_llCode(sq->litLength);
            ofc[i] = (uint8_t)glyd_highbit32(sq->offBase);
            mlc[i] = (uint8_t)glyd_mlCode(sq->matchLength - GLYD_MINMATCH);
        }
        if (op >= oend) return 0;
        op++;
        for (k = 0; k < 3; k++) {
            size_t descSize;
            unsigned const mode = choose_table(zc, k, &ch[k], op, (size_t)(oend - op),
                                               fieldCodes[k], nbSeq, &descSize);
            if (mode > 3 || descSize > (size_t)(oend - op)) return 0;
            modes |= mode << (2 * k);
            op += descSize;
        }
        if (nbSeq >= SEQ_TWO_LANES_MIN) modes |= GLYD_SEQ_MODES_TWO_LANES;
        *modesPos = (uint8_t)modes;
        r = encode_seq_stream(op, (size_t)(oend - op), seqs, llc, ofc, mlc, nbSeq, ch,
                              (modes & GLYD_SEQ_MODES_TWO_LANES) ? 2 : 1);
        if (r == 0) return 0;
        op += r;
    }
    if ((size_t)(op - ostart) >= content) return 0;

    /* the block will be emitted: the decoder's state moves, so does ours */
    memcpy(zc->rep, repAfter, sizeof(zc->rep));
    if (newHuf) {
        zc->hufCur ^= 1;
        zc->hufValid = 1;
    }
    if (nbSeq > 0) {
        unsigned k;
        for (k = 0; k < 3; k++) {
            fse_field* const f = &zc->field[k];
            f->kind = ch[k].kind;
            if (ch[k].kind == KIND_RLE) f->rleSymbol = ch[k].rleSymbol;
            if (ch[k].kind == KIND_FRESH) f->cur = ch[k].slot;
        }
    }
    return (size_t)(op - ostart);
}

/* Splitting a block where its statistics change pays for another set of
 * tables: about 0.2% on text at the strongest levels. Greedily, from the
 * block's start: the rest of the block is tried whole and cut at each
 * eighth of its sequences, and the best cut, when smaller, makes a part. */
#define SPLIT_TRIES 8

/* The best cut of sequences [s, e) (literals from lit, content from cont):
 * 0 when coding them whole is smallest; else the cut, with the part's end
 * (literals, content and repeat offsets after it). State unchanged. */
static size_t best_cut(glyd_lzCCtx* zc, size_t s, size_t e, size_t lit, size_t cont, size_t srcSize,
                       uint8_t* scratch, size_t cap, split_part* part)
{
    const glyd_seqStore* const ss = &zc->ss;
    enc_state st;
    uint32_t rep[GLYD_REP_NUM];
    size_t bestSize, whole, i, lits = lit, content = cont, q = 1, best = 0;
    if (e - s < 64) return 0;
    state_save(zc, &st);
    /* (the repeat offsets given do not change a trial's size) */
    whole = encode_payload(zc, scratch, cap, ss->seqs + s, e - s, ss->lits + lit, ss->nbLits - lit,
                           srcSize - cont, zc->rep);
    state_load(zc, &st);
    if (whole == 0) return 0;
    bestSize = whole;
    memcpy(rep, zc->rep, sizeof(rep));
    for (i = s; i < e; i++) {
        const glyd_seq* const sq = &ss->seqs[i];
        glyd_resolveOffset(rep, sq->offBase, sq->litLength == 0);
        lits += sq->litLength;
        content += sq->litLength + sq->matchLength;
        if (q < SPLIT_TRIES && i + 1 - s >= (e - s) * q / SPLIT_TRIES) {
            size_t a, b = 0;
            q++;
            a = encode_payload(zc, scratch, cap, ss->seqs + s, i + 1 - s, ss->lits + lit, lits - lit,
                               content - cont, rep);
            if (a) b = encode_payload(zc, scratch, cap, ss->seqs + i + 1, e - i - 1, ss->lits + lits,
                                      ss->nbLits - lits, srcSize - content, rep);
            state_load(zc, &st);
            if (a && b && a + b + 4 < bestSize) { /* + the second block header */
                bestSize = a + b + 4;
                best = i + 1;
                part->seqEnd = i + 1;
                part->litEnd = lits;
                part->contentEnd = content;
                memcpy(part->rep, rep, sizeof(rep));
            }
        }
    }
    return best;
}

/* Chooses the parts of the parsed block (zc->parts); the state is as before. */
static void plan_parts(glyd_lzCCtx* zc, size_t srcSize, const uint32_t repEnd[GLYD_REP_NUM],
                       uint8_t* scratch, size_t cap)
{
    const glyd_seqStore* const ss = &zc->ss;
    enc_state st;
    size_t s = 0, lit = 0, cont = 0;
    state_save(zc, &st);
    zc->nbParts = 0;
    while (zc->nbParts < GLYD_SPLIT_MAX - 1) {
        split_part* const part = &zc->parts[zc->nbParts];
        if (!best_cut(zc, s, ss->nbSeq, lit, cont, srcSize, scratch, cap, part)) break;
        /* the part is coded for real: the next trials start from its state */
        encode_payload(zc, scratch, cap, ss->seqs + s, part->seqEnd - s, ss->lits + lit, part->litEnd - lit,
                       part->contentEnd - cont, part->rep);
        s = part->seqEnd;
        lit = part->litEnd;
        cont = part->contentEnd;
        zc->nbParts++;
    }
    zc->parts[zc->nbParts].seqEnd = ss->nbSeq;
    zc->parts[zc->nbParts].litEnd = ss->nbLits;
    zc->parts[zc->nbParts].contentEnd = srcSize;
    memcpy(zc->parts[zc->nbParts].rep, repEnd, sizeof(zc->parts[0].rep));
    zc->nbParts++;
    state_load(zc, &st);
}

/* Codes part k of the planned parts. */
static size_t encode_part(glyd_lzCCtx* zc, size_t k, uint8_t* dst, size_t cap)
{
    const glyd_seqStore* const ss = &zc->ss;
    size_t const s = k ? zc->parts[k - 1].seqEnd : 0;
    size_t const lit = k ? zc->parts[k - 1].litEnd : 0;
    size_t const cont = k ? zc->parts[k - 1].contentEnd : 0;
    const split_part* const p = &zc->parts[k];
    return encode_payload(zc, dst, cap, ss->seqs + s, p->seqEnd - s, ss->lits + lit, p->litEnd - lit,
                          p->contentEnd - cont, p->rep);
}

size_t glyd_lzCompressBlock(glyd_lzCCtx* zc, void* dst, size_t cap,
                            const uint8_t* src, size_t srcSize)
{
    glyd_seqStore* const ss = &zc->ss;
    uint32_t rep[GLYD_REP_NUM];
    size_t lastLits;

    assert(srcSize > 0 && srcSize <= zc->blockMax);
    assert(srcSize <= ((size_t)1 << zc->p.windowLog));
    memcpy(rep, zc->rep, sizeof(rep));
    ss->nbSeq = 0;
    ss->nbLits = 0;
    ss->srcEnd = src + srcSize;
    zc->nbParts = 0;
    zc->nextPart = 0;
    if ((size_t)(src + srcSize - zc->ms.base) > (3u << 30)) correct_indices(zc, src);
    lastLits = parse_block(zc, rep, src, srcSize);
    memcpy(ss->lits + ss->nbLits, src + srcSize - lastLits, lastLits);
    ss->nbLits += lastLits;
    zc->ms.nextIndex = (uint32_t)(src + srcSize - zc->ms.base);

    if (zc->p.strategy >= glyd_btultra) {
        plan_parts(zc, srcSize, rep, (uint8_t*)dst, cap);
        if (zc->nbParts > 1) {
            size_t const r = encode_part(zc, 0, (uint8_t*)dst, cap);
            if (r) {
                zc->nextPart = 1;
                return r;
            }
        }
        zc->nbParts = 0;
    }
    return encode_payload(zc, (uint8_t*)dst, cap, ss->seqs, ss->nbSeq, ss->lits, ss->nbLits, srcSize, rep);
}

size_t glyd_lzBlockCovered(const glyd_lzCCtx* zc, size_t srcSize)
{
    return zc->nextPart ? zc->parts[0].contentEnd : srcSize;
}

size_t glyd_lzCompressRest(glyd_lzCCtx* zc, void* dst, size_t cap, size_t* content)
{
    size_t const k = zc->nextPart;
    size_t r;
    RETURN_ERROR_IF(k == 0 || k >= zc->nbParts, GENERIC, "no part pending");
    r = encode_part(zc, k, (uint8_t*)dst, cap);
    RETURN_ERROR_IF(r == 0, dstSize_tooSmall, "part of a split block");
    *content = zc->parts[k].contentEnd - zc->parts[k - 1].contentEnd;
    zc->nextPart = k + 1 < zc->nbParts ? k + 1 : 0;
    return r;
}

int glyd_lzCCtxFits(const glyd_lzCCtx* zc, const glyd_lzParams* p, unsigned blockLog)
{
    return zc != NULL && memcmp(&zc->p, p, sizeof(*p)) == 0 &&
           zc->blockMax == ((size_t)1 << blockLog);
}

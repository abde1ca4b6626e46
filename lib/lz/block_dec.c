/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * block_dec.c: decoding of a compressed block: literals section, sequence
 * tables, and the loop that decodes sequences and executes them. Every
 * length and offset is checked against the buffers before it is used.
 */
#include "lz.h"

size_t glyd_lzDInit(glyd_lzDCtx* dz, glyd_customMem mem)
{
    memset(dz, 0, sizeof(*dz));
    dz->mem = mem;
    glyd_lzBuildSeqTable(&dz->predef, 0, glyd_llDefaultNorm, GLYD_LL_MAX_CODE, GLYD_LL_DEFAULT_LOG);
    glyd_lzBuildSeqTable(&dz->predef, 1, glyd_ofDefaultNorm, GLYD_OF_MAX_CODE, GLYD_OF_DEFAULT_LOG);
    glyd_lzBuildSeqTable(&dz->predef, 2, glyd_mlDefaultNorm, GLYD_ML_MAX_CODE, GLYD_ML_DEFAULT_LOG);
    glyd_lzDStartHistory(dz);
    return 0;
}

void glyd_lzDFree(glyd_lzDCtx* dz)
{
    glyd_free(dz->litBuf, dz->mem);
    dz->litBuf = NULL;
    dz->litCap = 0;
}

void glyd_lzDStartHistory(glyd_lzDCtx* dz)
{
    dz->hufValid = 0;
    dz->hufPairsValid = 0;
    dz->seq.valid[0] = dz->seq.valid[1] = dz->seq.valid[2] = 0;
    dz->rep[0] = 1;
    dz->rep[1] = 4;
    dz->rep[2] = 8;
}

size_t glyd_lzBlockContentSize(const uint8_t* src, size_t srcSize)
{
    uint64_t v;
    size_t const r = glyd_readVarint(src, srcSize, &v);
    RETURN_ERROR_IF(r == 0, corruption_detected, "block content size");
    RETURN_ERROR_IF(v == 0 || v > GLYD_BLOCKSIZE_MAX, corruption_detected, "block content size");
    return (size_t)v;
}

/* ------------------------------------------------------------------------ */
/* Literals                                                                 */
/* ------------------------------------------------------------------------ */

/* Literal sections from this many symbols decode two symbols per lookup
 * where both codes fit in the table's window: below, building the pair
 * table costs more than it saves. */
#define HUF_PAIRS_MIN 8192

/* The block's literals. Wide copies may read GLYD_WILDCOPY_OVERLENGTH bytes
 * past `end`: raw literals too close to the end of the input are copied to
 * the literal buffer, which has that margin. */
typedef struct {
    const uint8_t* ptr;
    const uint8_t* end;
} lit_view;

static size_t decode_literals(glyd_lzDCtx* dz, lit_view* lv, size_t maxLits,
                              const uint8_t* src, size_t srcSize, const uint8_t* blockEnd)
{
    const uint8_t* ip = src;
    const uint8_t* const iend = src + srcSize;
    unsigned type, nbStreams;
    uint64_t litSize;
    size_t r;
    RETURN_ERROR_IF(srcSize < 2, corruption_detected, "literals header");
    type = ip[0] & 3;
    nbStreams = (ip[0] & 4) ? 4 : 1;
    RETURN_ERROR_IF(ip[0] & 0xF8, corruption_detected, "reserved literal flags");
    RETURN_ERROR_IF(nbStreams == 4 && type < 2, corruption_detected, "streams without huffman");
    ip++;
    r = glyd_readVarint(ip, (size_t)(iend - ip), &litSize);
    RETURN_ERROR_IF(r == 0 || litSize > maxLits, corruption_detected, "literal count");
    ip += r;
    switch (type) {
    case 0: /* raw */
        RETURN_ERROR_IF(litSize > (size_t)(iend - ip), corruption_detected, "raw literals");
        if ((size_t)(blockEnd - ip) - litSize >= GLYD_WILDCOPY_OVERLENGTH) {
            lv->ptr = ip;
        } else {
            memcpy(dz->litBuf, ip, (size_t)litSize);
            lv->ptr = dz->litBuf;
        }
        lv->end = lv->ptr + litSize;
        return (size_t)(ip - src) + (size_t)litSize;
    case 1: /* rle */
        RETURN_ERROR_IF(ip >= iend, corruption_detected, "rle literal");
        memset(dz->litBuf, *ip, (size_t)litSize);
        lv->ptr = dz->litBuf;
        lv->end = dz->litBuf + litSize;
        return (size_t)(ip - src) + 1;
    default: { /* huffman, with a fresh or the previous table */
        uint64_t csize;
        const uint8_t* streams;
        r = glyd_readVarint(ip, (size_t)(iend - ip), &csize);
        RETURN_ERROR_IF(r == 0 || csize > (size_t)(iend - ip - r), corruption_detected,
                        "huffman literals size");
        ip += r;
        streams = ip;
        if (type == 2) {
            size_t const t = glyd_hufReadDTable(&dz->huf, ip, (size_t)csize);
            FORWARD_IF_ERROR(t);
            dz->hufValid = 1;
            dz->hufPairsValid = 0;
            streams += t;
        } else {
            RETURN_ERROR_IF(!dz->hufValid, corruption_detected, "no huffman table to repeat");
        }
        RETURN_ERROR_IF(streams >= ip + csize, corruption_detected, "empty huffman streams");
        {
            int const pairs = nbStreams == 4 && litSize >= HUF_PAIRS_MIN;
            if (pairs && !dz->hufPairsValid) {
                glyd_hufBuildPairs(&dz->hufPairs, &dz->huf);
                dz->hufPairsValid = 1;
            }
            FORWARD_IF_ERROR(glyd_hufDecompress(dz->litBuf, (size_t)litSize, streams,
                                                (size_t)(ip + csize - streams), &dz->huf,
                                                pairs ? &dz->hufPairs : NULL, nbStreams));
        }
        lv->ptr = dz->litBuf;
        lv->end = dz->litBuf + litSize;
        return (size_t)(ip - src) + (size_t)csize;
    }
    }
}

/* ------------------------------------------------------------------------ */
/* Sequence tables                                                          */
/* ------------------------------------------------------------------------ */

/* The value of code c of field k is base + (nbExtra extra bits). */
static void code_value(unsigned k, unsigned c, uint32_t* base, uint8_t* nbExtra)
{
    switch (k) {
    case 0: *base = glyd_llBase[c]; *nbExtra = glyd_llBits[c]; break;
    case 1: *base = 1u << c; *nbExtra = (uint8_t)c; break;
    default: *base = glyd_mlBase[c] + GLYD_MINMATCH; *nbExtra = glyd_mlBits[c]; break;
    }
}

static const unsigned kFieldAt[3] = { GLYD_SEQ_LL_AT, GLYD_SEQ_OF_AT, GLYD_SEQ_ML_AT };

void glyd_lzBuildSeqTable(glyd_seqDTables* t, unsigned k, const int16_t* norm, unsigned maxSymbol,
                          unsigned tableLog)
{
    /* glyd_fseBuildDTable's states, written straight into the field's
     * entries with each code's value resolved once per code */
    uint32_t const size = 1u << tableLog;
    uint8_t tableSymbol[1 << GLYD_FSE_MAX_TABLELOG];
    uint32_t next[GLYD_ML_MAX_CODE + 1], base[GLYD_ML_MAX_CODE + 1];
    uint8_t nbExtra[GLYD_ML_MAX_CODE + 1];
    glyd_seqDEntry* const e = t->entry + kFieldAt[k];
    uint32_t u;
    unsigned s;
    assert(maxSymbol <= GLYD_ML_MAX_CODE);
    glyd_fseSpread(tableSymbol, norm, maxSymbol, tableLog);
    for (s = 0; s <= maxSymbol; s++) {
        next[s] = (uint32_t)norm[s];
        code_value(k, s, &base[s], &nbExtra[s]);
    }
    for (u = 0; u < size; u++) {
        unsigned const sym = tableSymbol[u];
        uint32_t const x = next[sym]++;
        unsigned const nbBits = tableLog - glyd_highbit32(x);
        e[u].next = (int16_t)((int)((x << nbBits) - size) - (int)u);
        e[u].nbBits = (uint8_t)nbBits;
        e[u].nbExtra = nbExtra[sym];
        e[u].base = base[sym];
    }
    t->tableLog[k] = tableLog;
    t->valid[k] = 1;
}

static size_t read_table(glyd_lzDCtx* dz, unsigned k, unsigned mode, unsigned maxCode,
                         unsigned maxLog, const uint8_t* src, size_t srcSize)
{
    glyd_seqDTables* const t = &dz->seq;
    switch (mode) {
    case 0: /* predefined: copied in, a few hundred bytes */
        memcpy(t->entry + kFieldAt[k], dz->predef.entry + kFieldAt[k],
               sizeof(glyd_seqDEntry) << dz->predef.tableLog[k]);
        t->tableLog[k] = dz->predef.tableLog[k];
        t->valid[k] = 1;
        return 0;
    case 1: {
        glyd_seqDEntry* const e = t->entry + kFieldAt[k];
        RETURN_ERROR_IF(srcSize < 1, corruption_detected, "rle table");
        RETURN_ERROR_IF(src[0] > maxCode, corruption_detected, "rle code out of range");
        e->next = 0;
        e->nbBits = 0;
        code_value(k, src[0], &e->base, &e->nbExtra);
        t->tableLog[k] = 0;
        t->valid[k] = 1;
        return 1;
    }
    case 2: {
        int16_t norm[GLYD_ML_MAX_CODE + 1];
        unsigned maxSymbol = maxCode, tableLog;
        size_t const r = glyd_fseReadNCount(norm, &maxSymbol, &tableLog, maxLog, src, srcSize);
        FORWARD_IF_ERROR(r);
        glyd_lzBuildSeqTable(t, k, norm, maxSymbol, tableLog);
        return r;
    }
    default:
        RETURN_ERROR_IF(!t->valid[k], corruption_detected, "no table to repeat");
        return 0;
    }
}

size_t glyd_lzDLoadTables(glyd_lzDCtx* dz, const void* src, size_t size)
{
    const uint8_t* ip = (const uint8_t*)src;
    const uint8_t* const iend = ip + size;
    static const unsigned maxCode[3] = { GLYD_LL_MAX_CODE, GLYD_OF_MAX_CODE, GLYD_ML_MAX_CODE };
    static const unsigned maxLog[3] = { GLYD_LL_MAX_LOG, GLYD_OF_MAX_LOG, GLYD_ML_MAX_LOG };
    unsigned k;
    size_t r = glyd_hufReadDTable(&dz->huf, ip, size);
    FORWARD_IF_ERROR(r);
    dz->hufValid = 1;
    dz->hufPairsValid = 0;
    ip += r;
    for (k = 0; k < 3; k++) {
        r = read_table(dz, k, 2, maxCode[k], maxLog[k], ip, (size_t)(iend - ip));
        FORWARD_IF_ERROR(r);
        ip += r;
    }
    RETURN_ERROR_IF(ip != iend, dictionary_corrupted, "bytes after the dictionary's tables");
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Sequence execution                                                       */
/* ------------------------------------------------------------------------ */

/* Executes one sequence at op, when the caller has checked that
 * op + ll + ml + 32 <= oLimit and lits + ll + 32 <= the literal read limit. */
GLYD_FORCE_INLINE void exec_fast(uint8_t* op, const uint8_t* lits, size_t ll, size_t ml, size_t offset)
{
    uint8_t* const mop = op + ll;
    glyd_copy16(op, lits);
    if (GLYD_UNLIKELY(ll > 16)) glyd_wildcopy32(op + 16, lits + 16, ll - 16);
    if (GLYD_LIKELY(offset >= 16)) glyd_wildcopy32(mop, mop - offset, ml);
    else glyd_copyShortOffset(mop, offset, ml);
}

/* Checks one sequence against every buffer, then executes it: the path of
 * the block's last bytes, where wide copies would overrun. */
static size_t exec_checked(uint8_t** opPtr, uint8_t* oend, uint8_t* oLimit, lit_view* lv,
                           const uint8_t* prefixStart, size_t windowSize, size_t offset,
                           size_t litLength, size_t matchLength)
{
    uint8_t* const op = *opPtr;
    RETURN_ERROR_IF(litLength > (size_t)(lv->end - lv->ptr), corruption_detected,
                    "literal run beyond the literals");
    RETURN_ERROR_IF(litLength + matchLength > (size_t)(oend - op), corruption_detected,
                    "sequence beyond the block");
    RETURN_ERROR_IF(offset - 1 >= GLYD_MIN(windowSize, (size_t)(op + litLength - prefixStart)),
                    corruption_detected, "match offset beyond the history");
    if ((size_t)(oLimit - op) >= litLength + matchLength + 32) {
        exec_fast(op, lv->ptr, litLength, matchLength, offset);
    } else {
        memcpy(op, lv->ptr, litLength);
        glyd_copyMatchExact(op + litLength, offset, matchLength);
    }
    *opPtr = op + litLength + matchLength;
    lv->ptr += litLength;
    return 0;
}

/* One lane's three tANS states. */
typedef struct {
    const glyd_seqDEntry *ll, *of, *ml;
} seq_lane;

/* The sequence decoder's state between its loops. */
typedef struct {
    glyd_bitReader br;
    seq_lane lane[2]; /* lane[0] decodes the next sequence; lane[1] the one after, with two lanes */
    uint32_t rep[GLYD_REP_NUM];
    uint8_t* op;
    const uint8_t* lits;
    /* a decoded sequence that the fast loop left to the checked path */
    int pending;
    size_t pendLL, pendML, pendOffset;
} seq_cursor;

/* A sequence reads at most 31 + 16 + 16 extra bits and 9 + 9 + 8 transition
 * bits: 89 bits, so its reloads move the stream pointer back 12 bytes at
 * most. */
#define SEQ_MAX_BYTES 12

/* The fast loop's bounds, fixed for a run. */
typedef struct {
    const uint8_t* oFastEnd;
    const uint8_t* litEnd;
    const uint8_t* prefixStart;
    size_t windowSize;
} run_bounds;

/* Decodes one sequence with the states of lane s and moves them on, when
 * the stream is known to hold SEQ_MAX_BYTES bytes before the pointer: the
 * reload then brings 57 fresh bits, and no read needs a check. Fields that
 * follow each other in the stream are read together and split: the offset's
 * and the match length's extra bits (<= 47 bits), then the literal length's
 * extra bits and the three transitions (<= 42); a second reload is needed
 * only when the extra bits pass 31.
 * The sequence is executed with wide copies when it ends 32 bytes or more
 * before oFastEnd, reads no literal past litEnd and has an offset inside the
 * history; otherwise it is left pending in the cursor and 1 is returned.
 * `windowed` is false when the whole block lies within the window of the
 * history's start: an offset need then only stay inside the history. */
GLYD_FORCE_INLINE int seq_step(uint64_t* bitsPtr, unsigned* consumedPtr, const uint8_t** ipPtr,
                               seq_lane* s, uint32_t rep[GLYD_REP_NUM + 1], uint8_t** opPtr,
                               const uint8_t** litsPtr, seq_cursor* c, const run_bounds* b,
                               int windowed)
{
    uint64_t bits = *bitsPtr;
    unsigned consumed = *consumedPtr;
    const uint8_t* ip = *ipPtr;
    uint8_t* const op = *opPtr;
    const uint8_t* const lits = *litsPtr;
    glyd_seqDEntry const eLL = *s->ll;
    glyd_seqDEntry const eOF = *s->of;
    glyd_seqDEntry const eML = *s->ml;
    uint64_t const x = glyd_bitsTop(bits, consumed, (unsigned)eOF.nbExtra + eML.nbExtra);
    uint32_t const offBase = eOF.base + (uint32_t)(x >> eML.nbExtra);
    size_t const matchLength = eML.base + (size_t)glyd_lowBits(x, eML.nbExtra);
    unsigned const mlAt = eOF.nbBits, llAt = mlAt + eML.nbBits, xAt = llAt + eLL.nbBits;
    uint64_t y;
    size_t litLength, offset, history;
    consumed += (unsigned)eOF.nbExtra + eML.nbExtra;
    if (GLYD_UNLIKELY((unsigned)eOF.nbExtra + eML.nbExtra + eLL.nbExtra > 31)) {
        ip -= consumed >> 3;
        consumed &= 7;
        bits = glyd_read64(ip);
    }
    y = glyd_bitsTop(bits, consumed, xAt + eLL.nbExtra);
    consumed += xAt + eLL.nbExtra;
    litLength = eLL.base + (size_t)(y >> xAt);
    s->ll += eLL.next + (ptrdiff_t)glyd_lowBits(y >> llAt, eLL.nbBits);
    s->ml += eML.next + (ptrdiff_t)glyd_lowBits(y >> mlAt, eML.nbBits);
    s->of += eOF.next + (ptrdiff_t)glyd_lowBits(y, eOF.nbBits);
    ip -= consumed >> 3;
    consumed &= 7;
    *bitsPtr = glyd_read64(ip);
    *consumedPtr = consumed;
    *ipPtr = ip;
    {   /* glyd_resolveOffset's rule with rep[] in memory and rep[3] = r0 - 1:
         * a repeat is one load by index, and the loop's registers go to
         * the states (measured: 8% faster than rep[] in registers) */
        uint32_t const r0 = rep[0], r1 = rep[1];
        unsigned const idx = (offBase - 1 + (litLength == 0)) & 3;
        int const isNew = offBase > GLYD_REP_NUM;
        rep[3] = r0 - 1;
        offset = isNew ? offBase - GLYD_REP_NUM : rep[idx];
        rep[2] = (isNew | (idx >= 2)) ? r1 : rep[2];
        rep[1] = (isNew | (idx != 0)) ? r0 : r1;
        rep[0] = (uint32_t)offset;
    }
    history = (size_t)(op + litLength - b->prefixStart);
    if (GLYD_UNLIKELY((ptrdiff_t)(litLength + matchLength) > b->oFastEnd - op ||
                      (ptrdiff_t)litLength > b->litEnd - lits ||
                      offset - 1 >= (windowed ? GLYD_MIN(b->windowSize, history) : history))) {
        c->pending = 1;
        c->pendLL = litLength;
        c->pendML = matchLength;
        c->pendOffset = offset;
        return 1;
    }
    exec_fast(op, lits, litLength, matchLength, offset);
    *opPtr = op + litLength + matchLength;
    *litsPtr = lits + litLength;
    return 0;
}

/* Decodes up to n sequences (n even with two lanes), each with room in the
 * stream as seq_step needs, and none of them the last of its lane. Stops
 * after a sequence left pending. Returns the number decoded, the pending
 * one included. With two lanes the two sequences of each step use
 * independent states, so that their table lookups overlap. */
GLYD_FORCE_INLINE size_t decode_run(seq_cursor* c, size_t n, const run_bounds* bounds, int lanes,
                                    int windowed)
{
    uint64_t bits = c->br.bits;
    unsigned consumed = c->br.consumed;
    const uint8_t* ip = c->br.ptr;
    seq_lane a = c->lane[0], b = c->lane[1];
    run_bounds const bd = *bounds;
    uint32_t rep[GLYD_REP_NUM + 1];
    uint8_t* op = c->op;
    const uint8_t* lits = c->lits;
    size_t done = 0;
    memcpy(rep, c->rep, sizeof(c->rep));
    if (lanes == 1) {
        do {
            done++;
            if (seq_step(&bits, &consumed, &ip, &a, rep, &op, &lits, c, &bd, windowed)) break;
        } while (done < n);
    } else {
        do {
            done++;
            if (seq_step(&bits, &consumed, &ip, &a, rep, &op, &lits, c, &bd, windowed)) {
                seq_lane const t = a; /* the next sequence is b's */
                a = b;
                b = t;
                break;
            }
            done++;
            if (seq_step(&bits, &consumed, &ip, &b, rep, &op, &lits, c, &bd, windowed)) break;
        } while (done < n);
    }
    c->br.bits = bits;
    c->br.consumed = consumed;
    c->br.ptr = ip;
    c->lane[0] = a;
    c->lane[1] = b;
    memcpy(c->rep, rep, sizeof(c->rep));
    c->op = op;
    c->lits = lits;
    return done;
}

#define DEFINE_DECODE_RUN(name, attr, lanes, windowed)                                 \
    attr static GLYD_NOINLINE size_t name(seq_cursor* c, size_t n, const run_bounds* b) \
    {                                                                                  \
        return decode_run(c, n, b, lanes, windowed);                                   \
    }
DEFINE_DECODE_RUN(decode_run_1, , 1, 0)
DEFINE_DECODE_RUN(decode_run_1w, , 1, 1)
DEFINE_DECODE_RUN(decode_run_2, , 2, 0)
DEFINE_DECODE_RUN(decode_run_2w, , 2, 1)
#if GLYD_DYNAMIC_BMI2
DEFINE_DECODE_RUN(decode_run_1_bmi2, GLYD_TARGET_BMI2, 1, 0)
DEFINE_DECODE_RUN(decode_run_1w_bmi2, GLYD_TARGET_BMI2, 1, 1)
DEFINE_DECODE_RUN(decode_run_2_bmi2, GLYD_TARGET_BMI2, 2, 0)
DEFINE_DECODE_RUN(decode_run_2w_bmi2, GLYD_TARGET_BMI2, 2, 1)
#endif

typedef size_t (*decode_run_fn)(seq_cursor*, size_t, const run_bounds*);

/* The run for a block: [bmi2][two lanes][windowed]. */
static decode_run_fn pick_run(int bmi2, int twoLanes, int windowed)
{
    static const decode_run_fn plain[2][2] = { { decode_run_1, decode_run_1w },
                                               { decode_run_2, decode_run_2w } };
#if GLYD_DYNAMIC_BMI2
    static const decode_run_fn fast[2][2] = { { decode_run_1_bmi2, decode_run_1w_bmi2 },
                                              { decode_run_2_bmi2, decode_run_2w_bmi2 } };
    if (bmi2) return fast[twoLanes][windowed];
#endif
    (void)bmi2;
    return plain[twoLanes][windowed];
}

/* ------------------------------------------------------------------------ */
/* Block                                                                    */
/* ------------------------------------------------------------------------ */

GLYD_FORCE_INLINE size_t decode_block_body(glyd_lzDCtx* dz, uint8_t* op, uint8_t* oLimit,
                                           const uint8_t* prefixStart, size_t windowSize, size_t blockMax,
                                           const uint8_t* src, size_t srcSize, int bmi2)
{
    const uint8_t* ip = src;
    const uint8_t* const iend = src + srcSize;
    uint8_t* const ostart = op;
    uint8_t* oend;
    uint64_t regen, nbSeq;
    lit_view lv;
    size_t r;

    memset(&lv, 0, sizeof(lv));
    if (dz->litCap < blockMax) {
        /* literals never outnumber the block's bytes: sized to the frame */
        glyd_free(dz->litBuf, dz->mem);
        dz->litBuf = (uint8_t*)glyd_calloc(blockMax + GLYD_WILDCOPY_OVERLENGTH, dz->mem);
        dz->litCap = dz->litBuf ? blockMax : 0;
        RETURN_ERROR_IF(dz->litBuf == NULL, memory_allocation, "literal buffer");
    }
    r = glyd_readVarint(ip, srcSize, &regen);
    RETURN_ERROR_IF(r == 0 || regen == 0, corruption_detected, "block content size");
    RETURN_ERROR_IF(regen > blockMax, corruption_detected, "block larger than the frame allows");
    RETURN_ERROR_IF(regen > (size_t)(oLimit - op), dstSize_tooSmall, "block does not fit");
    ip += r;
    oend = op + regen;

    r = decode_literals(dz, &lv, (size_t)regen, ip, (size_t)(iend - ip), iend);
    FORWARD_IF_ERROR(r);
    ip += r;

    r = glyd_readVarint(ip, (size_t)(iend - ip), &nbSeq);
    RETURN_ERROR_IF(r == 0, corruption_detected, "sequence count");
    RETURN_ERROR_IF(nbSeq > regen / GLYD_MINMATCH, corruption_detected, "too many sequences");
    ip += r;

    if (nbSeq > 0) {
        unsigned modes;
        glyd_bitReader br;
        seq_lane lane[2];
        unsigned lanes, l;
        uint32_t rep[GLYD_REP_NUM];
        size_t i = 0;
        RETURN_ERROR_IF(ip >= iend, corruption_detected, "sequence modes");
        modes = *ip++;
        RETURN_ERROR_IF(modes & 0x80, corruption_detected, "reserved mode bits");
        lanes = (modes & GLYD_SEQ_MODES_TWO_LANES) ? 2 : 1;
        RETURN_ERROR_IF(nbSeq < lanes, corruption_detected, "two lanes need two sequences");
        r = read_table(dz, 0, modes & 3, GLYD_LL_MAX_CODE, GLYD_LL_MAX_LOG, ip, (size_t)(iend - ip));
        FORWARD_IF_ERROR(r);
        ip += r;
        r = read_table(dz, 1, (modes >> 2) & 3, GLYD_OF_MAX_CODE, GLYD_OF_MAX_LOG, ip, (size_t)(iend - ip));
        FORWARD_IF_ERROR(r);
        ip += r;
        r = read_table(dz, 2, (modes >> 4) & 3, GLYD_ML_MAX_CODE, GLYD_ML_MAX_LOG, ip, (size_t)(iend - ip));
        FORWARD_IF_ERROR(r);
        ip += r;

        {   /* a local copy whose address never escapes stays in registers */
            glyd_bitReader br0;
            FORWARD_IF_ERROR(glyd_bitReaderInit(&br0, ip, (size_t)(iend - ip)));
            br = br0;
        }
        for (l = 0; l < lanes; l++) {
            lane[l].ll = dz->seq.entry + GLYD_SEQ_LL_AT + glyd_bitRead(&br, dz->seq.tableLog[0]);
            lane[l].of = dz->seq.entry + GLYD_SEQ_OF_AT + glyd_bitRead(&br, dz->seq.tableLog[1]);
            lane[l].ml = dz->seq.entry + GLYD_SEQ_ML_AT + glyd_bitRead(&br, dz->seq.tableLog[2]);
            glyd_bitReload(&br);
        }
        if (lanes == 1) lane[1] = lane[0];
        memcpy(rep, dz->rep, sizeof(rep));

        /* The fast loop, in runs of sequences whose stream is sure to hold
         * 8 bytes before every reload (see seq_step); every sequence but the
         * last of each lane, which have no state transitions. */
        {
            decode_run_fn const run = pick_run(bmi2, lanes == 2, (size_t)(oend - prefixStart) > windowSize);
            run_bounds bounds;
            seq_cursor cur;
            /* wide copies may write up to 32 bytes past a sequence's end */
            bounds.oFastEnd = (size_t)(oLimit - oend) >= 32 ? oend
                              : (size_t)(oLimit - op) >= 32 ? oLimit - 32 : op;
            bounds.litEnd = lv.end;
            bounds.prefixStart = prefixStart;
            bounds.windowSize = windowSize;
            cur.br = br;
            cur.lane[0] = lane[0];
            cur.lane[1] = lane[1];
            memcpy(cur.rep, rep, sizeof(rep));
            cur.op = op;
            cur.lits = lv.ptr;
            cur.pending = 0;
            while (i + lanes < nbSeq) {
                size_t n = GLYD_MIN(nbSeq - lanes - i, (size_t)(cur.br.ptr - cur.br.start) / SEQ_MAX_BYTES);
                /* two lanes take sequences in pairs, the first in lane[0] */
                if (lanes == 2) n &= ~(size_t)1;
                if (n == 0) break;
                i += run(&cur, n, &bounds);
                if (cur.pending) {
                    lv.ptr = cur.lits;
                    FORWARD_IF_ERROR(exec_checked(&cur.op, oend, oLimit, &lv, prefixStart, windowSize,
                                                  cur.pendOffset, cur.pendLL, cur.pendML));
                    cur.lits = lv.ptr;
                    cur.pending = 0;
                }
            }
            br = cur.br;
            lane[0] = cur.lane[0];
            lane[1] = cur.lane[1];
            memcpy(rep, cur.rep, sizeof(rep));
            op = cur.op;
            lv.ptr = cur.lits;
        }
        /* the stream's last bytes: every read checked */
        for (; i < nbSeq; i++) {
            seq_lane* const s = &lane[0];
            glyd_seqDEntry const eLL = *s->ll;
            glyd_seqDEntry const eOF = *s->of;
            glyd_seqDEntry const eML = *s->ml;
            uint32_t const offBase = eOF.base + (uint32_t)glyd_bitRead(&br, eOF.nbExtra);
            size_t const matchLength = eML.base + (size_t)glyd_bitRead(&br, eML.nbExtra);
            size_t litLength, er;
            glyd_bitReload(&br);
            litLength = eLL.base + (size_t)glyd_bitRead(&br, eLL.nbExtra);
            if (i + lanes < nbSeq) {
                s->ll += eLL.next + (ptrdiff_t)glyd_bitRead(&br, eLL.nbBits);
                s->ml += eML.next + (ptrdiff_t)glyd_bitRead(&br, eML.nbBits);
                s->of += eOF.next + (ptrdiff_t)glyd_bitRead(&br, eOF.nbBits);
            }
            if (lanes == 2) {
                seq_lane const t = lane[0];
                lane[0] = lane[1];
                lane[1] = t;
            }
            RETURN_ERROR_IF(glyd_bitReload(&br) == glyd_bit_overflow, corruption_detected,
                            "sequence stream overread");
            er = exec_checked(&op, oend, oLimit, &lv, prefixStart, windowSize,
                              glyd_resolveOffset(rep, offBase, litLength == 0), litLength, matchLength);
            FORWARD_IF_ERROR(er);
        }
        RETURN_ERROR_IF(!glyd_bitFinished(&br), corruption_detected, "sequence stream size mismatch");
        memcpy(dz->rep, rep, sizeof(rep));
    } else {
        RETURN_ERROR_IF(ip != iend, corruption_detected, "bytes after the last section");
    }

    {   /* last literals */
        size_t const lastLits = (size_t)(lv.end - lv.ptr);
        RETURN_ERROR_IF(lastLits != (size_t)(oend - op), corruption_detected,
                        "block content size mismatch");
        memcpy(op, lv.ptr, lastLits);
        op += lastLits;
    }
    return (size_t)(op - ostart);
}

static size_t decode_block_default(glyd_lzDCtx* dz, uint8_t* op, uint8_t* oLimit, const uint8_t* prefixStart,
                                   size_t windowSize, size_t blockMax, const uint8_t* src, size_t srcSize)
{
    return decode_block_body(dz, op, oLimit, prefixStart, windowSize, blockMax, src, srcSize, 0);
}

#if GLYD_DYNAMIC_BMI2
GLYD_TARGET_BMI2 static size_t decode_block_bmi2(glyd_lzDCtx* dz, uint8_t* op, uint8_t* oLimit,
                                                 const uint8_t* prefixStart, size_t windowSize,
                                                 size_t blockMax, const uint8_t* src, size_t srcSize)
{
    return decode_block_body(dz, op, oLimit, prefixStart, windowSize, blockMax, src, srcSize, 1);
}
#endif

size_t glyd_lzDecodeBlock(glyd_lzDCtx* dz, uint8_t* op, uint8_t* oLimit,
                          const uint8_t* prefixStart, size_t windowSize, size_t blockMax,
                          const uint8_t* src, size_t srcSize)
{
#if GLYD_DYNAMIC_BMI2
    if (glyd_cpuHasBmi2())
        return decode_block_bmi2(dz, op, oLimit, prefixStart, windowSize, blockMax, src, srcSize);
#endif
    return decode_block_default(dz, op, oLimit, prefixStart, windowSize, blockMax, src, srcSize);
}

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
            streams += t;
        } else {
            RETURN_ERROR_IF(!dz->hufValid, corruption_detected, "no huffman table to repeat");
        }
        RETURN_ERROR_IF(streams >= ip + csize, corruption_detected, "empty huffman streams");
        FORWARD_IF_ERROR(glyd_hufDecompress(dz->litBuf, (size_t)litSize, streams,
                                            (size_t)(ip + csize - streams), &dz->huf, nbStreams));
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
    glyd_fseDTable dt;
    glyd_seqDEntry* const e = t->entry + kFieldAt[k];
    uint32_t u;
    glyd_fseBuildDTable(&dt, norm, maxSymbol, tableLog);
    for (u = 0; u < (1u << tableLog); u++) {
        e[u].newState = (uint16_t)(kFieldAt[k] + dt.table[u].newState);
        e[u].nbBits = dt.table[u].nbBits;
        code_value(k, dt.table[u].symbol, &e[u].base, &e[u].nbExtra);
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
        e->newState = (uint16_t)kFieldAt[k];
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
    if (GLYD_UNLIKELY(ll > 16)) glyd_wildcopy16(op + 16, lits + 16, ll - 16);
    if (GLYD_LIKELY(offset >= 16)) glyd_wildcopy16(mop, mop - offset, ml);
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

/* The sequence decoder's state between its loops. */
typedef struct {
    glyd_bitReader br;
    size_t llState, ofState, mlState;
    uint32_t rep[GLYD_REP_NUM];
    uint8_t* op;
    const uint8_t* lits;
} seq_cursor;

/* A sequence reads at most 31 + 16 + 16 extra bits and 9 + 9 + 8 transition
 * bits: 89 bits, so its reloads move the stream pointer back 12 bytes at
 * most. */
#define SEQ_MAX_BYTES 12

/* Decodes and executes n sequences, none of them the block's last, when the
 * stream holds at least n * SEQ_MAX_BYTES bytes before the pointer: every
 * reload then brings 57 fresh bits, and no read needs a check. The loop lives
 * in its own function so that its dozen running values get the registers.
 * Fields that follow each other in the stream are read together and split:
 * the offset's and the match length's extra bits (<= 47 bits), then the
 * literal length's extra bits and the three transitions (<= 42); a second
 * reload is needed only when the extra bits pass 31. A sequence that would
 * come within 32 bytes of the end of the buffer, or read past the literals,
 * takes the checked path. */
GLYD_FORCE_INLINE size_t decode_run(seq_cursor* c, size_t n, const glyd_seqDEntry* seqT, uint8_t* oend,
                                    uint8_t* oLimit, const uint8_t* litEnd, const uint8_t* prefixStart,
                                    size_t windowSize)
{
    glyd_bitReader br = c->br;
    size_t llState = c->llState, ofState = c->ofState, mlState = c->mlState;
    uint32_t rep[GLYD_REP_NUM];
    uint8_t* op = c->op;
    const uint8_t* lits = c->lits;
    memcpy(rep, c->rep, sizeof(rep));
    /* wide copies may write up to 32 bytes past a sequence's end */
    uint8_t* const oFastEnd = (size_t)(oLimit - oend) >= 32 ? oend
                              : (size_t)(oLimit - op) >= 32 ? oLimit - 32 : op;
    do {
        glyd_seqDEntry const eLL = seqT[llState];
        glyd_seqDEntry const eOF = seqT[ofState];
        glyd_seqDEntry const eML = seqT[mlState];
        uint64_t const x = glyd_bitReadFast(&br, eOF.nbExtra + eML.nbExtra);
        uint32_t const offBase = eOF.base + (uint32_t)(x >> eML.nbExtra);
        size_t const matchLength = eML.base + (size_t)glyd_lowBits(x, eML.nbExtra);
        unsigned const mlAt = eOF.nbBits, llAt = mlAt + eML.nbBits, xAt = llAt + eLL.nbBits;
        uint64_t y;
        size_t litLength, offset;
        if (GLYD_UNLIKELY(eOF.nbExtra + eML.nbExtra + eLL.nbExtra > 31)) {
            br.ptr -= br.consumed >> 3;
            br.consumed &= 7;
            br.bits = glyd_read64(br.ptr);
        }
        y = glyd_bitReadFast(&br, xAt + eLL.nbExtra);
        litLength = eLL.base + (size_t)(y >> xAt);
        llState = eLL.newState + (size_t)glyd_lowBits(y >> llAt, eLL.nbBits);
        mlState = eML.newState + (size_t)glyd_lowBits(y >> mlAt, eML.nbBits);
        ofState = eOF.newState + (size_t)glyd_lowBits(y, eOF.nbBits);
        br.ptr -= br.consumed >> 3;
        br.consumed &= 7;
        br.bits = glyd_read64(br.ptr);
        offset = glyd_resolveOffset(rep, offBase, litLength == 0);
        if (GLYD_LIKELY((ptrdiff_t)(litLength + matchLength) <= oFastEnd - op &&
                        (ptrdiff_t)litLength <= litEnd - lits)) {
            RETURN_ERROR_IF(offset - 1 >= GLYD_MIN(windowSize, (size_t)(op + litLength - prefixStart)),
                            corruption_detected, "match offset beyond the history");
            exec_fast(op, lits, litLength, matchLength, offset);
            op += litLength + matchLength;
            lits += litLength;
        } else {
            lit_view lv;
            lv.ptr = lits;
            lv.end = litEnd;
            FORWARD_IF_ERROR(exec_checked(&op, oend, oLimit, &lv, prefixStart, windowSize, offset,
                                          litLength, matchLength));
            lits = lv.ptr;
        }
    } while (--n);
    c->br = br;
    c->llState = llState;
    c->ofState = ofState;
    c->mlState = mlState;
    memcpy(c->rep, rep, sizeof(rep));
    c->op = op;
    c->lits = lits;
    return 0;
}

static GLYD_NOINLINE size_t decode_run_default(seq_cursor* c, size_t n, const glyd_seqDEntry* seqT,
                                               uint8_t* oend, uint8_t* oLimit, const uint8_t* litEnd,
                                               const uint8_t* prefixStart, size_t windowSize)
{
    return decode_run(c, n, seqT, oend, oLimit, litEnd, prefixStart, windowSize);
}

#if GLYD_DYNAMIC_BMI2
GLYD_TARGET_BMI2 static GLYD_NOINLINE size_t decode_run_bmi2(seq_cursor* c, size_t n, const glyd_seqDEntry* seqT,
                                                            uint8_t* oend, uint8_t* oLimit, const uint8_t* litEnd,
                                                            const uint8_t* prefixStart, size_t windowSize)
{
    return decode_run(c, n, seqT, oend, oLimit, litEnd, prefixStart, windowSize);
}
#else
#  define decode_run_bmi2 decode_run_default
#endif

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
        const glyd_seqDEntry* seqT;
        size_t llState, ofState, mlState;
        uint32_t rep[GLYD_REP_NUM];
        size_t i = 0;
        RETURN_ERROR_IF(ip >= iend, corruption_detected, "sequence modes");
        modes = *ip++;
        RETURN_ERROR_IF(modes & 0xC0, corruption_detected, "reserved mode bits");
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
        seqT = dz->seq.entry;
        llState = GLYD_SEQ_LL_AT + (size_t)glyd_bitRead(&br, dz->seq.tableLog[0]);
        ofState = GLYD_SEQ_OF_AT + (size_t)glyd_bitRead(&br, dz->seq.tableLog[1]);
        mlState = GLYD_SEQ_ML_AT + (size_t)glyd_bitRead(&br, dz->seq.tableLog[2]);
        glyd_bitReload(&br);
        memcpy(rep, dz->rep, sizeof(rep));

        /* The fast loop, in runs of sequences whose stream is sure to hold
         * 8 bytes before every reload (see decode_run); every sequence but
         * the last, which has no state transitions. */
        {
            seq_cursor cur;
            cur.br = br;
            cur.llState = llState;
            cur.ofState = ofState;
            cur.mlState = mlState;
            memcpy(cur.rep, rep, sizeof(rep));
            cur.op = op;
            cur.lits = lv.ptr;
            while (i + 1 < nbSeq) {
                size_t const n = GLYD_MIN(nbSeq - 1 - i, (size_t)(cur.br.ptr - cur.br.start) / SEQ_MAX_BYTES);
                if (n == 0) break;
                FORWARD_IF_ERROR((bmi2 ? decode_run_bmi2 : decode_run_default)(&cur, n, dz->seq.entry, oend, oLimit,
                                                                             lv.end, prefixStart, windowSize));
                i += n;
            }
            br = cur.br;
            llState = cur.llState;
            ofState = cur.ofState;
            mlState = cur.mlState;
            memcpy(rep, cur.rep, sizeof(rep));
            op = cur.op;
            lv.ptr = cur.lits;
        }
        /* the stream's last bytes: every read checked */
        for (; i < nbSeq; i++) {
            glyd_seqDEntry const eLL = seqT[llState];
            glyd_seqDEntry const eOF = seqT[ofState];
            glyd_seqDEntry const eML = seqT[mlState];
            uint32_t const offBase = eOF.base + (uint32_t)glyd_bitRead(&br, eOF.nbExtra);
            size_t const matchLength = eML.base + (size_t)glyd_bitRead(&br, eML.nbExtra);
            size_t litLength, er;
            glyd_bitReload(&br);
            litLength = eLL.base + (size_t)glyd_bitRead(&br, eLL.nbExtra);
            if (i + 1 < nbSeq) {
                llState = eLL.newState + (size_t)glyd_bitRead(&br, eLL.nbBits);
                mlState = eML.newState + (size_t)glyd_bitRead(&br, eML.nbBits);
                ofState = eOF.newState + (size_t)glyd_bitRead(&br, eOF.nbBits);
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

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastblock.c: the fast block (docs/FORMAT.md, section 16), encoder and
 * decoder. No entropy coding: a block is four byte streams, literals,
 * tokens, offsets and extra lengths, so that the decoder reads them through
 * independent pointers (a token's address does not wait on the previous
 * literal run's length, as it would in one interleaved stream) and copies
 * with wide moves.
 */
#include "fastblock.h"

/* ------------------------------------------------------------------------ */
/* Encoder                                                                  */
/* ------------------------------------------------------------------------ */

/* A search starts no closer than this to the block's end: matches and
 * literal runs are then copied with 16-byte moves that stay in the input. */
#define FAST_TAIL 16
/* Misses in a row, in log2, before the search step grows by one. Smaller
 * than the entropy coder's: without entropy coding, a stretch that yields no
 * matches costs its full size whatever we do, so it pays to skip it fast. */
#define FAST_SKIP_LOG 6
/* Bytes hashed: matches shorter than 6 bytes save at most 3 bytes each and
 * cost the decoder a sequence each; they are found only by chance. */
#define FAST_HASH_BYTES 6
/* A match further than 2-byte offsets reach costs 5 offset bytes, and
 * reading far back is slower (the cache): only long ones are worth it. */
#define FAST_LONG_MINMATCH 32

struct glyd_fastCCtx_s {
    glyd_customMem mem;
    glyd_lzParams p;            /* as created, for glyd_fastCCtxFits */
    size_t blockMax;
    unsigned hashLog;
    unsigned accel;             /* search step at the start of a stretch */
    uint32_t maxOffset;         /* the window, or the format's limit */
    uint32_t* table;            /* 2^hashLog positions (indices from base) */
    const uint8_t* base;        /* address of index 0 */
    uint32_t lowLimit;          /* the history's first index */
    uint32_t nextIndex;         /* where the next history starts */
    /* the block's streams as they are written, each with room for wide
     * stores: literals (blockMax), tokens (blockMax/4), offsets (5 bytes per
     * token at most), extra lengths (at most 1 byte per 15 content bytes) */
    uint8_t* lits;
    uint8_t* toks;
    uint8_t* offs;
    uint8_t* exts;
};

glyd_fastCCtx* glyd_fastCreateCCtx(const glyd_lzParams* p, unsigned blockLog, glyd_customMem mem)
{
    glyd_fastCCtx* const fc = (glyd_fastCCtx*)glyd_calloc(sizeof(*fc), mem);
    size_t const blockMax = (size_t)1 << blockLog;
    size_t const maxSeq = blockMax / GLYD_FAST_MINMATCH + 1;
    if (!fc) return NULL;
    fc->mem = mem;
    fc->p = *p;
    fc->blockMax = blockMax;
    /* Half the level's table, and at most 32 KiB: a table that stays in the
     * L1 cache keeps probes cheap. Measured on the corpus, 2^14 entries code
     * 3% smaller but 10-15% slower both ways (more, shorter sequences). */
    fc->hashLog = GLYD_MAX(10u, GLYD_MIN(p->hashLog - 1, 13u));
    fc->accel = p->acceleration > 1 ? p->acceleration - 1 : 1;
    fc->maxOffset = (uint32_t)GLYD_MIN((size_t)1 << p->windowLog, (size_t)GLYD_FAST_OFF_MAX);
    fc->table = (uint32_t*)glyd_calloc(sizeof(uint32_t) << fc->hashLog, mem);
    fc->lits = (uint8_t*)glyd_malloc(blockMax + 32, mem);
    fc->toks = (uint8_t*)glyd_malloc(maxSeq + 32, mem);
    fc->offs = (uint8_t*)glyd_malloc(5 * maxSeq + 32, mem);
    fc->exts = (uint8_t*)glyd_malloc(blockMax / 2 + 32, mem);
    if (!fc->table || !fc->lits || !fc->toks || !fc->offs || !fc->exts) {
        glyd_fastFreeCCtx(fc);
        return NULL;
    }
    fc->nextIndex = 1; /* index 0 (a zeroed table entry) is never valid */
    return fc;
}

void glyd_fastFreeCCtx(glyd_fastCCtx* fc)
{
    if (!fc) return;
    glyd_free(fc->table, fc->mem);
    glyd_free(fc->lits, fc->mem);
    glyd_free(fc->toks, fc->mem);
    glyd_free(fc->offs, fc->mem);
    glyd_free(fc->exts, fc->mem);
    glyd_free(fc, fc->mem);
}

int glyd_fastCCtxFits(const glyd_fastCCtx* fc, const glyd_lzParams* p, unsigned blockLog)
{
    return fc != NULL && memcmp(&fc->p, p, sizeof(*p)) == 0 && fc->blockMax == ((size_t)1 << blockLog);
}

void glyd_fastStartHistory(glyd_fastCCtx* fc, const uint8_t* start)
{
    /* Indices keep growing across histories, so that entries of earlier
     * ones fall below lowLimit and need no clearing; the table is wiped
     * only when the count grows large. */
    if (fc->nextIndex > (1u << 30)) {
        memset(fc->table, 0, sizeof(uint32_t) << fc->hashLog);
        fc->nextIndex = 1;
    }
    fc->base = start - fc->nextIndex;
    fc->lowLimit = fc->nextIndex;
}

void glyd_fastRebase(glyd_fastCCtx* fc, size_t shift)
{
    fc->base -= shift;
}

/* Keeps indices below 2^32 in a history longer than 3 GiB: slides them all
 * down, keeping those the window still reaches. */
static void reduce_indices(glyd_fastCCtx* fc, const uint8_t* src)
{
    uint32_t const cur = (uint32_t)(src - fc->base);
    uint32_t const corr = cur - fc->maxOffset - 16;
    size_t const n = (size_t)1 << fc->hashLog;
    size_t i;
    for (i = 0; i < n; i++) fc->table[i] = fc->table[i] > corr ? fc->table[i] - corr : 0;
    fc->base += corr;
    fc->lowLimit = fc->lowLimit > corr ? fc->lowLimit - corr : 1;
}

GLYD_FORCE_INLINE size_t hash_at(const uint8_t* p, unsigned hlog)
{
    return glyd_hashPtr(p, hlog, FAST_HASH_BYTES);
}

void glyd_fastLoadHistory(glyd_fastCCtx* fc, const uint8_t* src, size_t size)
{
    const uint8_t* p;
    /* every position, the latest winning its slot: the dictionary's end,
     * nearest to the data, is what the small table keeps */
    if (size >= 8)
        for (p = src; p + 8 <= src + size; p++) fc->table[hash_at(p, fc->hashLog)] = (uint32_t)(p - fc->base);
    fc->nextIndex = (uint32_t)(src + size - fc->base);
}

/* An extra length: one byte below 255, else 255 and a u24 of v - 255. */
GLYD_FORCE_INLINE uint8_t* put_ext(uint8_t* xp, size_t v)
{
    if (GLYD_LIKELY(v < GLYD_FAST_EXT_BIG)) {
        *xp = (uint8_t)v;
        return xp + 1;
    }
    xp[0] = GLYD_FAST_EXT_BIG;
    v -= GLYD_FAST_EXT_BIG;
    xp[1] = (uint8_t)v;
    xp[2] = (uint8_t)(v >> 8);
    xp[3] = (uint8_t)(v >> 16);
    return xp + 4;
}

typedef struct {
    uint8_t* lp;
    uint8_t* tp;
    uint8_t* op;
    uint8_t* xp;
} stream_ptrs;

/* Appends one sequence: the literals [anchor, anchor + ll), then a match of
 * ml bytes at `offset`. */
GLYD_FORCE_INLINE void put_seq(stream_ptrs* s, const uint8_t* anchor, size_t ll, size_t ml, uint32_t offset)
{
    unsigned tok;
    size_t const mlField = ml - GLYD_FAST_MINMATCH;
    /* a literal run ends FAST_TAIL bytes or more before the input's end */
    glyd_wildcopy16(s->lp, anchor, ll ? ll : 1);
    s->lp += ll;
    if (GLYD_LIKELY(ll < GLYD_FAST_FIELD_MAX)) {
        tok = (unsigned)ll << 4;
    } else {
        tok = GLYD_FAST_FIELD_MAX << 4;
        s->xp = put_ext(s->xp, ll - GLYD_FAST_FIELD_MAX);
    }
    if (GLYD_LIKELY(mlField < GLYD_FAST_FIELD_MAX)) {
        tok |= (unsigned)mlField;
    } else {
        tok |= GLYD_FAST_FIELD_MAX;
        s->xp = put_ext(s->xp, mlField - GLYD_FAST_FIELD_MAX);
    }
    if (GLYD_LIKELY(offset <= GLYD_FAST_OFF_SHORT)) {
        glyd_write16(s->op, (uint16_t)offset);
        s->op += 2;
    } else {
        uint32_t const v = offset - (GLYD_FAST_OFF_SHORT + 1);
        glyd_write16(s->op, 0);
        s->op[2] = (uint8_t)v;
        s->op[3] = (uint8_t)(v >> 8);
        s->op[4] = (uint8_t)(v >> 16);
        s->op += 5;
    }
    *s->tp++ = (uint8_t)tok;
}

/* Parses src[0..srcSize) greedily into the streams: one hash probe per
 * position, the step growing on misses (from a larger start with a larger
 * acceleration), every match extended both ways and written at once. */
static void parse_block(glyd_fastCCtx* fc, stream_ptrs* s, const uint8_t* src, size_t srcSize)
{
    uint32_t* const table = fc->table;
    unsigned const hlog = fc->hashLog;
    const uint8_t* const base = fc->base;
    const uint8_t* const iend = src + srcSize;
    const uint8_t* const ilimit = iend - FAST_TAIL;
    uint32_t const lowLimit = fc->lowLimit;
    const uint8_t* const lowPtr = base + lowLimit;
    uint32_t const maxOff = fc->maxOffset;
    size_t const accel = fc->accel;
    const uint8_t* ip = src;
    const uint8_t* anchor = src;

    if (srcSize <= FAST_TAIL) goto last;
    for (;;) {
        const uint8_t* match;
        uint32_t offset;
        size_t ml;
        {   /* search: the next position's hash is computed before the
             * current probe resolves, so that the two overlap */
            size_t attempts = accel << FAST_SKIP_LOG;
            size_t h = hash_at(ip, hlog);
            for (;;) {
                uint32_t const cur = (uint32_t)(ip - base);
                uint32_t const matchIdx = table[h];
                const uint8_t* const next = ip + (attempts++ >> FAST_SKIP_LOG);
                size_t hNext;
                table[h] = cur;
                if (matchIdx >= lowLimit && cur - matchIdx <= maxOff &&
                    glyd_read32(base + matchIdx) == glyd_read32(ip)) {
                    offset = cur - matchIdx;
                    match = base + matchIdx;
                    ml = glyd_count(ip + 4, match + 4, iend) + 4;
                    if (GLYD_LIKELY((offset <= GLYD_FAST_OFF_SHORT || ml >= FAST_LONG_MINMATCH))) break;
                }
                if (GLYD_UNLIKELY(next > ilimit)) goto last;
                hNext = hash_at(next, hlog);
                ip = next;
                h = hNext;
            }
        }
        /* the match may start earlier */
        while (ip > anchor && match > lowPtr && ip[-1] == match[-1]) {
            ip--;
            match--;
            ml++;
        }
        put_seq(s, anchor, (size_t)(ip - anchor), ml, offset);
        ip += ml;
        anchor = ip;
        if (ip > ilimit) break;
        /* a position inside the match, cheap to add and often useful */
        table[hash_at(ip - 2, hlog)] = (uint32_t)(ip - 2 - base);
        /* a match straight after the match: no literals, no backward step */
        for (;;) {
            uint32_t const cur = (uint32_t)(ip - base);
            size_t const h = hash_at(ip, hlog);
            uint32_t const matchIdx = table[h];
            table[h] = cur;
            if (matchIdx >= lowLimit && cur - matchIdx <= maxOff &&
                glyd_read32(base + matchIdx) == glyd_read32(ip)) {
                offset = cur - matchIdx;
                ml = glyd_count(ip + 4, base + matchIdx + 4, iend) + 4;
                if ((offset <= GLYD_FAST_OFF_SHORT || ml >= FAST_LONG_MINMATCH)) {
                    put_seq(s, anchor, 0, ml, offset);
                    ip += ml;
                    anchor = ip;
                    if (ip > ilimit) goto last;
                    continue;
                }
            }
            ip++;
            break;
        }
        if (ip > ilimit) break;
    }
last:
    {   /* the block's last literals */
        size_t const n = (size_t)(iend - anchor);
        memcpy(s->lp, anchor, n);
        s->lp += n;
    }
}

size_t glyd_fastCompressBlock(glyd_fastCCtx* fc, void* dst, size_t cap, const uint8_t* src, size_t srcSize)
{
    uint8_t* const out = (uint8_t*)dst;
    stream_ptrs s;
    size_t litSize, nbSeq, offSize, extSize, pos, total;
    assert(srcSize > 0 && srcSize <= fc->blockMax);
    if ((size_t)(src + srcSize - fc->base) > (3u << 30)) reduce_indices(fc, src);
    s.lp = fc->lits;
    s.tp = fc->toks;
    s.op = fc->offs;
    s.xp = fc->exts;
    parse_block(fc, &s, src, srcSize);
    fc->nextIndex = (uint32_t)(src + srcSize - fc->base);

    litSize = (size_t)(s.lp - fc->lits);
    nbSeq = (size_t)(s.tp - fc->toks);
    offSize = (size_t)(s.op - fc->offs);
    extSize = (size_t)(s.xp - fc->exts);
    total = glyd_varintSize(srcSize) + glyd_varintSize(nbSeq) + glyd_varintSize(litSize) +
            glyd_varintSize(offSize) + litSize + nbSeq + offSize + extSize;
    /* a block that saves less than 1/64 is stored raw: copying it is
     * several times faster than decoding it */
    if (total >= srcSize - (srcSize >> 6) || total > cap) return 0;
    pos = glyd_writeVarint(out, cap, srcSize);
    pos += glyd_writeVarint(out + pos, cap - pos, nbSeq);
    pos += glyd_writeVarint(out + pos, cap - pos, litSize);
    pos += glyd_writeVarint(out + pos, cap - pos, offSize);
    memcpy(out + pos, fc->lits, litSize);
    pos += litSize;
    memcpy(out + pos, fc->toks, nbSeq);
    pos += nbSeq;
    memcpy(out + pos, fc->offs, offSize);
    pos += offSize;
    memcpy(out + pos, fc->exts, extSize);
    pos += extSize;
    assert(pos == total);
    return pos;
}

/* ------------------------------------------------------------------------ */
/* Decoder                                                                  */
/* ------------------------------------------------------------------------ */

/* Reads an extra length; returns 0 if the stream ends first. */
GLYD_FORCE_INLINE int get_ext(const uint8_t** xp, const uint8_t* xend, size_t* v)
{
    const uint8_t* const p = *xp;
    if (GLYD_UNLIKELY(p >= xend)) return 0;
    if (GLYD_LIKELY(*p < GLYD_FAST_EXT_BIG)) {
        *v = *p;
        *xp = p + 1;
        return 1;
    }
    if ((size_t)(xend - p) < 4) return 0;
    *v = GLYD_FAST_EXT_BIG + (size_t)glyd_read24(p + 1);
    *xp = p + 4;
    return 1;
}

/* Checks one sequence against the streams and the block, then executes it
 * with exact copies: for sequences too close to the end of a buffer for
 * wide copies. */
GLYD_FORCE_INLINE size_t exec_checked(uint8_t** opPtr, uint8_t* oend, const uint8_t** lpPtr, const uint8_t* lend,
                                      const uint8_t* prefixStart, size_t ll, size_t ml, size_t offset)
{
    uint8_t* op = *opPtr;
    const uint8_t* const lp = *lpPtr;
    /* the fast loop checks pointers only against the buffers: here they
     * may already be past their stream's end (an error) */
    RETURN_ERROR_IF(lp > lend || ll > (size_t)(lend - lp), corruption_detected, "literal run beyond the literals");
    RETURN_ERROR_IF(op > oend || ll + ml > (size_t)(oend - op), corruption_detected, "sequence beyond the block");
    RETURN_ERROR_IF(offset > (size_t)(op + ll - prefixStart), corruption_detected, "offset before the history");
    memcpy(op, lp, ll);
    op += ll;
    glyd_copyMatchExact(op, offset, ml);
    *opPtr = op + ml;
    *lpPtr = lp + ll;
    return 0;
}

/* Reads a sequence's extra lengths and long offset, the rare parts of its
 * coding. *ofp is past the 2-byte offset `raw`; a long offset's 3 bytes
 * must be readable. Returns 0 or an error. */
GLYD_FORCE_INLINE size_t read_rare(unsigned tok, size_t raw, const uint8_t** xp, const uint8_t* xend,
                                   const uint8_t** ofp, size_t windowSize, size_t* ll, size_t* ml, size_t* offset)
{
    size_t e;
    if ((tok >> 4) == GLYD_FAST_FIELD_MAX) {
        RETURN_ERROR_IF(!get_ext(xp, xend, &e), corruption_detected, "extra lengths run out");
        *ll += e;
    }
    if ((tok & 15) == GLYD_FAST_FIELD_MAX) {
        RETURN_ERROR_IF(!get_ext(xp, xend, &e), corruption_detected, "extra lengths run out");
        *ml += e;
    }
    *offset = raw;
    if (raw == 0) {
        *offset = GLYD_FAST_OFF_SHORT + 1 + (size_t)glyd_read24(*ofp);
        *ofp += 3;
    }
    RETURN_ERROR_IF(*offset > windowSize, corruption_detected, "offset beyond the window");
    return 0;
}

/* A sequence of the fast loop's common case moves op by at most 15 + 18
 * bytes and writes at most 15 + 32 bytes past it (the literal copy, then
 * two 16-byte match copies), moves lp by at most 15 and reads 16 bytes past
 * it, and moves ofp by 2 and reads 5 bytes past it (a long offset's 3 more
 * bytes included). Other sequences check their own lengths and recompute
 * the batch. */
#define FAST_SEQ_OUT_LOG 6
#define FAST_SEQ_LIT_LOG 4

/* The end of the next batch of sequences that the fast loop may run
 * without checking pointers (tp when none). */
GLYD_FORCE_INLINE const uint8_t* batch_end(const uint8_t* tp, const uint8_t* tend, const uint8_t* op,
                                           const uint8_t* oLimit, const uint8_t* lp, const uint8_t* ofp,
                                           const uint8_t* iend)
{
    size_t n = (size_t)(tend - tp), k;
    k = (size_t)(oLimit - op) > 64 ? (size_t)(oLimit - op - 64) >> FAST_SEQ_OUT_LOG : 0;
    n = GLYD_MIN(n, k);
    k = (size_t)(iend - lp) > 32 ? (size_t)(iend - lp - 32) >> FAST_SEQ_LIT_LOG : 0;
    n = GLYD_MIN(n, k);
    k = (size_t)(iend - ofp) > 8 ? (size_t)(iend - ofp - 8) >> 1 : 0;
    n = GLYD_MIN(n, k);
    return tp + n;
}

/* Decodes a fast block body. smallWindow: the window is smaller than what
 * 2-byte offsets reach, so that they too are checked against it. */
GLYD_FORCE_INLINE size_t decode_body(uint8_t* op, uint8_t* oLimit, const uint8_t* prefixStart, size_t windowSize,
                                     size_t blockMax, const uint8_t* src, size_t srcSize, int smallWindow)
{
    const uint8_t* ip = src;
    const uint8_t* const iend = src + srcSize;
    uint8_t* const ostart = op;
    uint64_t regen, nbSeq, litSize, offSize;
    size_t r;

    /* header: content size, sequences, literal and offset stream sizes */
    r = glyd_readVarint(ip, srcSize, &regen);
    RETURN_ERROR_IF(r == 0 || regen == 0, corruption_detected, "block content size");
    RETURN_ERROR_IF(regen > blockMax, corruption_detected, "block larger than the frame allows");
    RETURN_ERROR_IF(regen > (size_t)(oLimit - op), dstSize_tooSmall, "block does not fit");
    ip += r;
    r = glyd_readVarint(ip, (size_t)(iend - ip), &nbSeq);
    RETURN_ERROR_IF(r == 0 || nbSeq > regen / GLYD_FAST_MINMATCH, corruption_detected, "sequence count");
    ip += r;
    r = glyd_readVarint(ip, (size_t)(iend - ip), &litSize);
    RETURN_ERROR_IF(r == 0 || litSize > regen, corruption_detected, "literal count");
    ip += r;
    r = glyd_readVarint(ip, (size_t)(iend - ip), &offSize);
    RETURN_ERROR_IF(r == 0 || offSize > 5 * nbSeq, corruption_detected, "offset stream size");
    ip += r;
    RETURN_ERROR_IF(litSize + nbSeq + offSize > (size_t)(iend - ip), corruption_detected,
                    "streams larger than the block");
    {
        const uint8_t* lp = ip;
        const uint8_t* const lend = lp + litSize;
        const uint8_t* tp = lend;
        const uint8_t* const tend = tp + nbSeq;
        const uint8_t* ofp = tend;
        const uint8_t* const ofend = ofp + offSize;
        const uint8_t* xp = ofend;
        const uint8_t* const xend = iend;
        uint8_t* const oend = op + regen;
        size_t offset = 0;

        /* The fast loop runs in batches of sequences that cannot carry a
         * wide read or write past the end of its buffer, whatever their
         * short lengths: inside a batch, the stream pointers need no check.
         * Valid streams never pass their own ends; invalid ones that do
         * (their output is garbage, written in bounds) are caught after the
         * loop. Offsets are checked in full; a sequence with an extra length
         * or a long offset checks its own lengths and shortens the batch. */
        for (;;) {
            const uint8_t* tBatchEnd = batch_end(tp, tend, op, oLimit, lp, ofp, iend);
            if (tBatchEnd == tp) break;
            do {
                unsigned const tok = *tp++;
                size_t ll = tok >> 4;
                size_t ml = (tok & 15) + GLYD_FAST_MINMATCH;
                size_t const raw = glyd_read16(ofp);
                uint8_t* mop;
                const uint8_t* match;
                ofp += 2;
                if (GLYD_UNLIKELY((ll == GLYD_FAST_FIELD_MAX) | ((tok & 15) == GLYD_FAST_FIELD_MAX) | (raw == 0))) {
                    FORWARD_IF_ERROR(read_rare(tok, raw, &xp, xend, &ofp, windowSize, &ll, &ml, &offset));
                    if ((ptrdiff_t)(ll + ml) > oLimit - 32 - op || (ptrdiff_t)ll > iend - 32 - lp) {
                        FORWARD_IF_ERROR(exec_checked(&op, oend, &lp, lend, prefixStart, ll, ml, offset));
                        break;
                    }
                    mop = op + ll;
                    RETURN_ERROR_IF(offset > (size_t)(mop - prefixStart), corruption_detected,
                                    "offset before the history");
                    match = mop - offset;
                    glyd_copy32Until(op, lp, op + ll);
                    lp += ll;
                    if (offset >= 16) glyd_copy32Until(mop, match, mop + ml);
                    else glyd_copyShortOffset(mop, offset, ml);
                    op = mop + ml;
                    /* the batch's bounds assumed short lengths */
                    tBatchEnd = batch_end(tp, tend, op, oLimit, lp, ofp, iend);
                    continue;
                }
                /* the common case: short lengths and offset, wide copies */
                offset = raw;
                glyd_copy16(op, lp);
                mop = op + ll;
                lp += ll;
                RETURN_ERROR_IF(offset > (size_t)(mop - prefixStart) || (smallWindow && offset > windowSize),
                                corruption_detected, "offset outside the history");
                match = mop - offset;
                if (GLYD_LIKELY(offset >= 16)) {
                    glyd_copy16(mop, match);
                    glyd_copy16(mop + 16, match + 16);
                } else {
                    glyd_copyShortOffset(mop, offset, ml);
                }
                op = mop + ml;
            } while (tp < tBatchEnd);
        }
        RETURN_ERROR_IF(lp > lend || ofp > ofend || op > oend, corruption_detected, "streams overrun");

        /* the last sequences, every read checked */
        while (tp < tend) {
            unsigned const tok = *tp++;
            size_t ll = tok >> 4;
            size_t ml = (tok & 15) + GLYD_FAST_MINMATCH;
            size_t raw;
            RETURN_ERROR_IF((size_t)(ofend - ofp) < 2, corruption_detected, "offsets run out");
            raw = glyd_read16(ofp);
            ofp += 2;
            RETURN_ERROR_IF(raw == 0 && (size_t)(ofend - ofp) < 3, corruption_detected, "offsets run out");
            FORWARD_IF_ERROR(read_rare(tok, raw, &xp, xend, &ofp, windowSize, &ll, &ml, &offset));
            FORWARD_IF_ERROR(exec_checked(&op, oend, &lp, lend, prefixStart, ll, ml, offset));
        }
        RETURN_ERROR_IF(ofp != ofend, corruption_detected, "offsets left over");
        RETURN_ERROR_IF(xp != xend, corruption_detected, "extra lengths left over");
        RETURN_ERROR_IF((size_t)(lend - lp) != (size_t)(oend - op), corruption_detected,
                        "block content size mismatch");
        memcpy(op, lp, (size_t)(lend - lp));
        op = oend;
    }
    return (size_t)(op - ostart);
}

static GLYD_NOINLINE size_t decode_wide_window(uint8_t* op, uint8_t* oLimit, const uint8_t* prefixStart,
                                               size_t windowSize, size_t blockMax, const uint8_t* src, size_t srcSize)
{
    return decode_body(op, oLimit, prefixStart, windowSize, blockMax, src, srcSize, 0);
}

static GLYD_NOINLINE size_t decode_small_window(uint8_t* op, uint8_t* oLimit, const uint8_t* prefixStart,
                                                size_t windowSize, size_t blockMax, const uint8_t* src, size_t srcSize)
{
    return decode_body(op, oLimit, prefixStart, windowSize, blockMax, src, srcSize, 1);
}

size_t glyd_fastDecodeBlock(uint8_t* op, uint8_t* oLimit, const uint8_t* prefixStart, size_t windowSize,
                            size_t blockMax, const uint8_t* src, size_t srcSize)
{
    if (windowSize > GLYD_FAST_OFF_SHORT)
        return decode_wide_window(op, oLimit, prefixStart, windowSize, blockMax, src, srcSize);
    return decode_small_window(op, oLimit, prefixStart, windowSize, blockMax, src, srcSize);
}

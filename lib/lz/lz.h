/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lz.h: the LZ77 layer: match finders and parsers that turn bytes into
 * sequences (literal run, match length, offset), and the block coder that
 * entropy-codes sequences and literals (format in docs/FORMAT.md, "Blocks").
 */
#ifndef GLYD_LZ_H
#define GLYD_LZ_H

#include "../entropy/entropy.h"

/* ------------------------------------------------------------------------ */
/* Format constants                                                         */
/* ------------------------------------------------------------------------ */

#define GLYD_MINMATCH        3   /* shortest match a sequence can express */
#define GLYD_BLOCKLOG_MIN    10  /* decoder's range for the frame's block log */
#define GLYD_BLOCKLOG_MAX    20
#define GLYD_BLOCKLOG_DEFAULT 17
#define GLYD_BLOCKSIZE_MAX   (1u << GLYD_BLOCKLOG_MAX)
#define GLYD_WINDOWLOG_MIN   10
#define GLYD_WINDOWLOG_MAX   31
#define GLYD_REP_NUM         3

#define GLYD_LL_MAX_CODE 39
#define GLYD_ML_MAX_CODE 56
#define GLYD_OF_MAX_CODE 31
#define GLYD_LL_MAX_LOG  9
#define GLYD_ML_MAX_LOG  9
#define GLYD_OF_MAX_LOG  8

/* Decoders may copy this far past a literal run or match, inside buffers
 * they own, to use wide moves. */
#define GLYD_WILDCOPY_OVERLENGTH 32

GLYD_FORCE_INLINE void glyd_copy16(void* d, const void* s) { memcpy(d, s, 16); }

/* Copies n > 0 bytes in 16-byte steps; may write up to 15 bytes past d + n
 * and read as far past s + n. Source and destination must be >= 16 apart. */
GLYD_FORCE_INLINE void glyd_wildcopy16(uint8_t* d, const uint8_t* s, size_t n)
{
    uint8_t* const e = d + n;
    do {
        glyd_copy16(d, s);
        d += 16;
        s += 16;
    } while (d < e);
}

/* Copies from s to d in 32-byte steps, each two 16-byte moves in order, so
 * that source and destination need only be 16 apart, until d reaches e
 * (one step at least). May write up to 31 bytes past e and read as far. */
GLYD_FORCE_INLINE void glyd_copy32Until(uint8_t* d, const uint8_t* s, const uint8_t* e)
{
    do {
        glyd_copy16(d, s);
        glyd_copy16(d + 16, s + 16);
        d += 32;
        s += 32;
    } while (d < e);
}

/* Copies n > 0 bytes: 16 first, alone, since most runs end there, then 32
 * at a time, so that a long one takes half the branches of 16-byte steps.
 * Same bounds as glyd_copy32Until. */
GLYD_FORCE_INLINE void glyd_wildcopy32(uint8_t* d, const uint8_t* s, size_t n)
{
    uint8_t* const e = d + n;
    glyd_copy16(d, s);
    if (n <= 16) return;
    glyd_copy32Until(d + 16, s + 16, e);
}

/* A match of ml bytes at offset 1..15, copied with wide moves: the pattern
 * is doubled until the distance reaches 16. Writes up to 15 bytes past
 * op + ml. */
GLYD_FORCE_INLINE void glyd_copyShortOffset(uint8_t* op, size_t offset, size_t ml)
{
    const uint8_t* const match = op - offset;
    uint8_t* d = op;
    uint8_t* const e = op + ml;
    size_t dist = offset;
    if (offset == 1) {
        memset(op, match[0], ml);
        return;
    }
    while (dist < 16 && d < e) {
        memcpy(d, match, dist);
        d += dist;
        dist = (size_t)(d - match);
    }
    if (d < e) glyd_wildcopy16(d, d - dist, (size_t)(e - d));
}

/* An overlapping match copied exactly, for a buffer's last bytes: the
 * output is periodic with period `offset`, so each step may copy all that
 * was written so far, and the span doubles. */
GLYD_FORCE_INLINE void glyd_copyMatchExact(uint8_t* op, size_t offset, size_t ml)
{
    const uint8_t* const match = op - offset;
    size_t done = 0;
    while (done < ml) {
        size_t const step = GLYD_MIN(ml - done, offset + done);
        memcpy(op + done, match, step);
        done += step;
    }
}

extern const uint32_t glyd_llBase[GLYD_LL_MAX_CODE + 1];
extern const uint8_t  glyd_llBits[GLYD_LL_MAX_CODE + 1];
extern const uint32_t glyd_mlBase[GLYD_ML_MAX_CODE + 1]; /* match length - GLYD_MINMATCH */
extern const uint8_t  glyd_mlBits[GLYD_ML_MAX_CODE + 1];

/* Predefined distributions, used when a block is too small to pay for a
 * table description. */
extern const int16_t glyd_llDefaultNorm[GLYD_LL_MAX_CODE + 1];
extern const int16_t glyd_mlDefaultNorm[GLYD_ML_MAX_CODE + 1];
extern const int16_t glyd_ofDefaultNorm[GLYD_OF_MAX_CODE + 1];
#define GLYD_LL_DEFAULT_LOG 6
#define GLYD_ML_DEFAULT_LOG 6
#define GLYD_OF_DEFAULT_LOG 5

GLYD_FORCE_INLINE unsigned glyd_llCode(uint32_t litLength)
{
    static const uint8_t small[64] = {
        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
        16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 20, 20, 21, 21, 21, 21,
        22, 22, 22, 22, 22, 22, 22, 22, 23, 23, 23, 23, 23, 23, 23, 23,
        24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24 };
    return litLength < 64 ? small[litLength] : glyd_highbit32(litLength) + 19;
}

GLYD_FORCE_INLINE unsigned glyd_mlCode(uint32_t mlBase)
{
    static const uint8_t small[128] = {
        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
        16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
        32, 32, 33, 33, 34, 34, 35, 35, 36, 36, 36, 36, 37, 37, 37, 37,
        38, 38, 38, 38, 38, 38, 38, 38, 39, 39, 39, 39, 39, 39, 39, 39,
        40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 40,
        41, 41, 41, 41, 41, 41, 41, 41, 41, 41, 41, 41, 41, 41, 41, 41,
        42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42,
        42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42, 42 };
    return mlBase < 128 ? small[mlBase] : glyd_highbit32(mlBase) + 36;
}

/* ------------------------------------------------------------------------ */
/* Sequences and repeat offsets                                             */
/* ------------------------------------------------------------------------ */

/* offBase: 1..3 name a repeat offset, larger values an offset of
 * offBase - GLYD_REP_NUM. */
#define GLYD_OFFSET_TO_OFFBASE(o) ((uint32_t)(o) + GLYD_REP_NUM)

typedef struct {
    uint32_t litLength;
    uint32_t matchLength;
    uint32_t offBase;
} glyd_seq;

typedef struct {
    glyd_seq* seqs;
    size_t nbSeq;
    size_t maxSeq;
    uint8_t* lits;         /* GLYD_WILDCOPY_OVERLENGTH bytes of slack after the block's */
    size_t nbLits;
    const uint8_t* srcEnd; /* the block's end: literals 16 bytes or more before it
                            * are copied 16 bytes at a time */
} glyd_seqStore;

/* Appends a sequence: litLength literals from `literals`, then a match. */
GLYD_FORCE_INLINE void glyd_storeSeq(glyd_seqStore* ss, size_t litLength, const uint8_t* literals,
                                     uint32_t offBase, size_t matchLength)
{
    assert(ss->nbSeq < ss->maxSeq);
    assert(matchLength >= GLYD_MINMATCH);
    /* most runs are short: one wide move instead of a call */
    if (litLength <= 16 && ss->srcEnd - literals >= 16) glyd_copy16(ss->lits + ss->nbLits, literals);
    else memcpy(ss->lits + ss->nbLits, literals, litLength);
    ss->nbLits += litLength;
    ss->seqs[ss->nbSeq].litLength = (uint32_t)litLength;
    ss->seqs[ss->nbSeq].matchLength = (uint32_t)matchLength;
    ss->seqs[ss->nbSeq].offBase = offBase;
    ss->nbSeq++;
}

/* The repeat-offset rule, shared by encoder and decoder: resolves offBase
 * against rep[] and updates rep[]. With no literals before the match, the
 * repeat names shift by one (rep[0] would have extended the previous match),
 * and name 3 means rep[0] - 1. Returns the offset; 0 means invalid. */
GLYD_FORCE_INLINE uint32_t glyd_resolveOffset(uint32_t rep[GLYD_REP_NUM], uint32_t offBase,
                                              int litLengthIsZero)
{
    /* FORMAT.md, section 11, written as selections on registers (the
     * decoder's fast loop has its own form of it, on memory). */
    uint32_t const r0 = rep[0], r1 = rep[1], r2 = rep[2];
    int const isNew = offBase > GLYD_REP_NUM;
    unsigned const idx = offBase - 1 + (litLengthIsZero ? 1u : 0u); /* for a repeat: 0..3 */
    uint32_t const repOffset = idx == 0 ? r0 : idx == 1 ? r1 : idx == 2 ? r2 : r0 - 1;
    uint32_t const offset = isNew ? offBase - GLYD_REP_NUM : repOffset;
    rep[2] = (isNew | (idx >= 2)) ? r1 : r2;
    rep[1] = (isNew | (idx != 0)) ? r0 : r1;
    rep[0] = offset;
    return offset;
}

/* The offBase that names repeat slot `idx` (0..2) given the literal run. */
GLYD_FORCE_INLINE uint32_t glyd_repToOffBase(unsigned idx, int litLengthIsZero)
{
    assert(!(litLengthIsZero && idx == 0));
    return idx + 1 - (litLengthIsZero ? 1u : 0u);
}

/* Stores a match found by a finder and updates rep[]. A real offset that
 * equals a repeat offset is sent as the (cheaper) repeat name. */
GLYD_FORCE_INLINE void glyd_lzStoreMatch(glyd_seqStore* ss, uint32_t rep[GLYD_REP_NUM],
                                         const uint8_t* anchor, size_t litLength,
                                         uint32_t offBase, size_t matchLength)
{
    int const ll0 = litLength == 0;
    if (offBase > GLYD_REP_NUM) {
        uint32_t const offset = offBase - GLYD_REP_NUM;
        if (!ll0 && offset == rep[0]) offBase = 1;
        else if (offset == rep[1]) offBase = glyd_repToOffBase(1, ll0);
        else if (offset == rep[2]) offBase = glyd_repToOffBase(2, ll0);
        else if (ll0 && offset == rep[0] - 1) offBase = 3;
    }
    glyd_storeSeq(ss, litLength, anchor, offBase, matchLength);
    glyd_resolveOffset(rep, offBase, ll0);
}

/* ------------------------------------------------------------------------ */
/* Parameters                                                               */
/* ------------------------------------------------------------------------ */

typedef enum {
    glyd_fast = 1,   /* one hash probe per position, skipping ahead on misses */
    glyd_dfast,      /* a long and a short hash */
    glyd_greedy,     /* hash chain, first good match taken */
    glyd_lazy,       /* hash chain, one position of lookahead */
    glyd_lazy2,      /* hash chain, two positions of lookahead */
    glyd_btopt,      /* binary tree, price-based optimal parse */
    glyd_btultra,    /* the same, with more price refinement over each block */
    glyd_btultra2    /* the same, refined further (the top levels) */
} glyd_strategy;

typedef struct {
    glyd_strategy strategy;
    unsigned windowLog;
    unsigned hashLog;     /* main table */
    unsigned chainLog;    /* chain table (dfast: the second hash table) */
    unsigned searchLog;   /* chain steps (bt: tree nodes visited): 2^searchLog */
    unsigned minMatch;    /* bytes hashed, and shortest match searched */
    unsigned targetLength;/* a match this long ends the search (bt: and is taken
                           * without looking at the positions it covers) */
    unsigned acceleration;/* fast: step growth on misses (1 = normal) */
    unsigned repeatSlack; /* the previous block's entropy tables are used again
                           * unless fresh ones save more than 1/2^repeatSlack of
                           * their bits (0: whenever they are cheaper): a table
                           * the decoder need not build */
} glyd_lzParams;

/* Parameters for a level (negative = --fast=N). srcSizeHint (0 = unknown)
 * shrinks tables and window for small inputs. */
void glyd_lzParamsForLevel(glyd_lzParams* p, int level, unsigned long long srcSizeHint);

/* ------------------------------------------------------------------------ */
/* Match state                                                              */
/* ------------------------------------------------------------------------ */

/* The optimal parser's workspace (match_opt.c). */
typedef struct glyd_optState_s glyd_optState;

typedef struct {
    const uint8_t* base;  /* address of index 0 */
    uint32_t lowLimit;    /* smallest index a match may start at */
    uint32_t nextToUpdate;/* first index not yet inserted in the tables */
    uint32_t nextIndex;   /* index where the next history starts */
    uint32_t* hashTable;
    uint32_t* chainTable; /* bt: two slots per position, its smaller and larger child */
    glyd_optState* opt;   /* bt strategies only; NULL elsewhere */
    glyd_lzParams p;
} glyd_matchState;

/* A finder parses src[0..srcSize) (inside the state's history) into
 * sequences, updating rep[]. Returns the number of trailing literals. */
typedef size_t (*glyd_lzFinder)(glyd_matchState* ms, glyd_seqStore* ss,
                                uint32_t rep[GLYD_REP_NUM], const uint8_t* src, size_t srcSize);

size_t glyd_lzFindFast(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
size_t glyd_lzFindDFast(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
size_t glyd_lzFindGreedy(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
size_t glyd_lzFindLazy(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
size_t glyd_lzFindLazy2(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
/* The bt finders need ms->opt, made for calls of at most blockMax bytes; an
 * uninitialised (zeroed) tree is valid. Without ms->opt they parse as lazy2. */
size_t glyd_lzFindBtOpt(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
size_t glyd_lzFindBtUltra(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);
size_t glyd_lzFindBtUltra2(glyd_matchState*, glyd_seqStore*, uint32_t*, const uint8_t*, size_t);

/* True for the strategies that need an optimal parser's workspace. */
GLYD_FORCE_INLINE int glyd_lzUsesOpt(glyd_strategy s) { return s >= glyd_btopt && s <= glyd_btultra2; }
/* The workspace for finder calls of at most blockMax bytes; NULL when the
 * allocator fails. Its size is about 80 x blockMax bytes. */
glyd_optState* glyd_lzCreateOptState(size_t blockMax, glyd_customMem mem);
void glyd_lzFreeOptState(glyd_optState* o); /* NULL is fine */

/* Each family of finders indexes positions src[0..size - GLYD_LZ_TAIL]
 * (inside the state's history) without parsing them: a dictionary's
 * content, made ready to be matched. */
void glyd_lzIndexFast(glyd_matchState*, const uint8_t*, size_t);
void glyd_lzIndexChain(glyd_matchState*, const uint8_t*, size_t);
void glyd_lzIndexBt(glyd_matchState*, const uint8_t*, size_t);

/* Finders read 8 bytes at a time near the current position, so they stop
 * this far before the end of a block. */
#define GLYD_LZ_TAIL 8
/* Misses in a row, in log2, before the search step grows by one. */
#define GLYD_LZ_SKIP_LOG 8

/* Smallest index whose bytes a block starting at startIdx may read: the
 * history's start, or one window before the block, whichever is later.
 * (The caller keeps that much history in memory.) */
GLYD_FORCE_INLINE uint32_t glyd_lzLowestIndex(const glyd_matchState* ms, uint32_t startIdx)
{
    uint32_t const windowSize = 1u << ms->p.windowLog;
    uint32_t const windowLow = startIdx > windowSize ? startIdx - windowSize : 0;
    return GLYD_MAX(ms->lowLimit, windowLow);
}

/* True when a match at matchIdx is usable from cur: readable, and no
 * further than the window (the format's limit on offsets). */
GLYD_FORCE_INLINE int glyd_lzInWindow(uint32_t matchIdx, uint32_t cur, uint32_t lowest, uint32_t windowSize)
{
    return matchIdx >= lowest && cur - matchIdx <= windowSize;
}

/* The multiplicative hash of the first mls (4..8) bytes of p, on hbits bits. */
GLYD_FORCE_INLINE size_t glyd_hashPtr(const void* p, unsigned hbits, unsigned mls)
{
    static const uint64_t prime = 0xCF1BBCDCB7A56463ULL;
    if (mls == 4) return (size_t)((glyd_read32(p) * 2654435761U) >> (32 - hbits));
    return (size_t)(((glyd_read64(p) << (64 - 8 * mls)) * prime) >> (64 - hbits));
}

/* ------------------------------------------------------------------------ */
/* Block encoder                                                            */
/* ------------------------------------------------------------------------ */

typedef struct glyd_lzCCtx_s glyd_lzCCtx;

glyd_lzCCtx* glyd_lzCreateCCtx(const glyd_lzParams* p, unsigned blockLog, glyd_customMem mem);
void glyd_lzFreeCCtx(glyd_lzCCtx* zc);
/* True if zc was created for exactly these parameters (so can be reused). */
int glyd_lzCCtxFits(const glyd_lzCCtx* zc, const glyd_lzParams* p, unsigned blockLog);

/* Starts a new independent history whose first byte is at `start`. */
void glyd_lzStartHistory(glyd_lzCCtx* zc, const uint8_t* start);
/* Makes src[0..size), which starts zc's history (glyd_lzStartHistory), a
 * history that later blocks find matches in: a dictionary's content. */
void glyd_lzLoadHistory(glyd_lzCCtx* zc, const uint8_t* src, size_t size);
/* How often each literal byte and each sequence code occurs. */
typedef struct {
    unsigned lit[256];
    unsigned ll[GLYD_LL_MAX_CODE + 1];
    unsigned of[GLYD_OF_MAX_CODE + 1];
    unsigned ml[GLYD_ML_MAX_CODE + 1];
} glyd_lzCodeCounts;
/* Parses src[0..srcSize) (at most a block, following the history) and adds
 * its literals and codes to *c, coding nothing: what a dictionary's tables
 * are trained on. */
void glyd_lzCountCodes(glyd_lzCCtx* zc, const uint8_t* src, size_t srcSize, glyd_lzCodeCounts* c);
/* Makes the entropy tables described in src (a dictionary's: a Huffman
 * description, then LL, OF and ML distributions) the tables that the next
 * block may repeat. Returns 0 or an error. */
size_t glyd_lzLoadTables(glyd_lzCCtx* zc, const void* src, size_t size);
/* The caller moved its history buffer `shift` bytes down in memory. */
void glyd_lzRebase(glyd_lzCCtx* zc, size_t shift);

/* Compresses the block src[0..srcSize), which must follow the history
 * contiguously, into a block payload. Returns its size; 0 when the block is
 * not worth compressing (the caller stores it raw, and the coder forgets the
 * block's entropy state); or an error. */
size_t glyd_lzCompressBlock(glyd_lzCCtx* zc, void* dst, size_t cap,
                            const uint8_t* src, size_t srcSize);
/* The strongest strategies may code a block as several, where that is
 * smaller: after glyd_lzCompressBlock returned a payload, this gives the
 * content bytes it covers (srcSize when the block was not split). When
 * fewer, the caller emits the payload as a block, then calls
 * glyd_lzCompressRest for each next block until the bytes are covered: it
 * returns a payload (or an error when cap is short) and its content size. */
size_t glyd_lzBlockCovered(const glyd_lzCCtx* zc, size_t srcSize);
size_t glyd_lzCompressRest(glyd_lzCCtx* zc, void* dst, size_t cap, size_t* content);

/* ------------------------------------------------------------------------ */
/* Block decoder                                                            */
/* ------------------------------------------------------------------------ */

/* A decoding state of a sequence field: its tANS transition and, resolved
 * in advance through the field's code table, the base value and the number
 * of extra bits of the code it decodes to. The transition is counted from
 * the entry itself (the next state is this + next + nbBits fresh bits), so
 * that a decoder holds its states as pointers and needs no table base. */
typedef struct {
    int16_t next;
    uint8_t nbBits;
    uint8_t nbExtra;
    uint32_t base;
} glyd_seqDEntry;

/* Bit 6 of a block's sequence modes: the sequences alternate between two
 * lanes of tANS states (FORMAT.md, section 10.5). */
#define GLYD_SEQ_MODES_TWO_LANES 0x40u

/* The three fields' tables side by side, each at its place. */
#define GLYD_SEQ_LL_AT    0u
#define GLYD_SEQ_OF_AT    (1u << GLYD_LL_MAX_LOG)
#define GLYD_SEQ_ML_AT    (GLYD_SEQ_OF_AT + (1u << GLYD_OF_MAX_LOG))
#define GLYD_SEQ_ENTRIES  (GLYD_SEQ_ML_AT + (1u << GLYD_ML_MAX_LOG))

typedef struct {
    glyd_seqDEntry entry[GLYD_SEQ_ENTRIES];
    unsigned tableLog[3];
    int valid[3]; /* 0 until the field has a table (repeat mode needs one) */
} glyd_seqDTables;

/* Builds the table of field k (0 LL, 1 OF, 2 ML) from a distribution, at
 * the field's place in t. */
void glyd_lzBuildSeqTable(glyd_seqDTables* t, unsigned k, const int16_t* norm, unsigned maxSymbol,
                          unsigned tableLog);

typedef struct {
    glyd_hufDTable huf;
    int hufValid;
    glyd_hufPairs hufPairs;            /* of huf, built when a block's literals are many */
    int hufPairsValid;
    glyd_seqDTables seq;               /* the tables in use */
    glyd_seqDTables predef;            /* the predefined distributions */
    uint32_t rep[GLYD_REP_NUM];
    uint8_t* litBuf;                   /* litCap + GLYD_WILDCOPY_OVERLENGTH bytes */
    size_t litCap;
    glyd_customMem mem;
} glyd_lzDCtx;

size_t glyd_lzDInit(glyd_lzDCtx* dz, glyd_customMem mem);
void glyd_lzDFree(glyd_lzDCtx* dz);
/* Forgets the entropy tables and repeat offsets (new frame or segment). */
void glyd_lzDStartHistory(glyd_lzDCtx* dz);
/* The decoding side of glyd_lzLoadTables. Returns 0 or an error. */
size_t glyd_lzDLoadTables(glyd_lzDCtx* dz, const void* src, size_t size);

/* Decodes a compressed block payload to op. History (for matches) starts at
 * prefixStart; matches reach at most windowSize back. op may write up to
 * oLimit (wide copies use the slack past the block end when there is some).
 * blockMax bounds the regenerated size. Returns the regenerated size, or an
 * error. */
size_t glyd_lzDecodeBlock(glyd_lzDCtx* dz, uint8_t* op, uint8_t* oLimit,
                          const uint8_t* prefixStart, size_t windowSize, size_t blockMax,
                          const uint8_t* src, size_t srcSize);

/* Reads only the regenerated size at the start of a block payload. */
size_t glyd_lzBlockContentSize(const uint8_t* src, size_t srcSize);

#endif /* GLYD_LZ_H */

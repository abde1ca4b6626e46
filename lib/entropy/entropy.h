/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * entropy.h: histograms, tANS (table-driven asymmetric numeral systems, as
 * in FSE) and length-limited canonical Huffman coding. Shared by every codec
 * of libglyd. Table descriptions and streams are specified in docs/FORMAT.md.
 */
#ifndef GLYD_ENTROPY_H
#define GLYD_ENTROPY_H

#include "../common/common.h"

/* ------------------------------------------------------------------------ */
/* Histograms                                                               */
/* ------------------------------------------------------------------------ */

/* Counts the bytes of src into count[0..255] (all 256 entries written).
 * *maxSymbol receives the largest byte present (0 for empty input).
 * Returns the largest count. */
unsigned glyd_histBytes(unsigned count[256], unsigned* maxSymbol, const uint8_t* src, size_t n);

/* Same for small symbols held in bytes; entries above *maxSymbol on input
 * are not touched, and *maxSymbol is lowered to the largest present. */
unsigned glyd_histSmall(unsigned* count, unsigned* maxSymbol, const uint8_t* src, size_t n);

/* ------------------------------------------------------------------------ */
/* tANS                                                                     */
/* ------------------------------------------------------------------------ */

#define GLYD_FSE_MIN_TABLELOG 5
#define GLYD_FSE_MAX_TABLELOG 12
#define GLYD_FSE_MAX_SYMBOL   255

/* Chooses a table log for a histogram: small for few samples, at most maxLog. */
unsigned glyd_fseOptimalTableLog(unsigned maxLog, size_t total, unsigned maxSymbol);

/* Scales count[0..maxSymbol] (summing to total > 0) to norm[] summing to
 * 2^tableLog; every present symbol gets at least 1. Returns 0 or an error. */
size_t glyd_fseNormalize(int16_t* norm, unsigned tableLog, const unsigned* count,
                         size_t total, unsigned maxSymbol);

/* Writes the description of norm[0..maxSymbol] (forward bit stream).
 * Returns its size or an error. */
size_t glyd_fseWriteNCount(void* dst, size_t cap, const int16_t* norm,
                           unsigned maxSymbol, unsigned tableLog);

/* Reads a description into norm[0..*maxSymbol]; on input *maxSymbol is the
 * largest symbol allowed, maxLog the largest table log allowed. Returns the
 * number of bytes read, or an error. */
size_t glyd_fseReadNCount(int16_t* norm, unsigned* maxSymbol, unsigned* tableLog,
                          unsigned maxLog, const void* src, size_t size);

/* Estimated bits to code count[] with norm[] (returns an upper bound on the
 * payload in bits, excluding the table description); SIZE_MAX if a present
 * symbol has no slot in norm. */
size_t glyd_fseCost(const unsigned* count, unsigned maxSymbol, const int16_t* norm,
                    unsigned normMaxSymbol, unsigned tableLog);

typedef struct {
    int32_t deltaFindState;
    uint32_t deltaNbBits;
} glyd_fseSymbolTT;

typedef struct {
    unsigned tableLog;
    unsigned maxSymbol;
    uint16_t stateTable[1 << GLYD_FSE_MAX_TABLELOG];
    glyd_fseSymbolTT symbolTT[GLYD_FSE_MAX_SYMBOL + 1];
} glyd_fseCTable;

/* Builds an encoding table from a valid normalized distribution. */
void glyd_fseBuildCTable(glyd_fseCTable* ct, const int16_t* norm, unsigned maxSymbol,
                         unsigned tableLog);

typedef struct {
    uint16_t newState;
    uint8_t symbol;
    uint8_t nbBits;
} glyd_fseDEntry;

typedef struct {
    unsigned tableLog;
    glyd_fseDEntry table[1 << GLYD_FSE_MAX_TABLELOG];
} glyd_fseDTable;

/* The symbol at each state of a table (the spread both coders share). */
void glyd_fseSpread(uint8_t* tableSymbol, const int16_t* norm, unsigned maxSymbol, unsigned tableLog);

/* Builds a decoding table; norm must come from glyd_fseReadNCount (or be a
 * known-valid distribution). */
void glyd_fseBuildDTable(glyd_fseDTable* dt, const int16_t* norm, unsigned maxSymbol,
                         unsigned tableLog);
/* A table that always yields `symbol` and reads no bits (run-length mode). */
void glyd_fseBuildDTableRLE(glyd_fseDTable* dt, uint8_t symbol);

/* Encoder state: the value lives in [2^tableLog, 2^(tableLog+1)). */
typedef struct {
    uint32_t value;
    const uint16_t* stateTable;
    const glyd_fseSymbolTT* symbolTT;
    unsigned tableLog;
} glyd_fseCState;

/* Starts in the lowest state that decodes to `symbol` (the cheapest start):
 * maxBitsOut = (deltaNbBits + 2^15) >> 16 and n << maxBitsOut = (maxBitsOut
 * << 16) - deltaNbBits, so the index below is deltaFindState + n, the
 * symbol's first slot of stateTable. */
GLYD_FORCE_INLINE void glyd_fseInitCState(glyd_fseCState* st, const glyd_fseCTable* ct, unsigned symbol)
{
    glyd_fseSymbolTT const tt = ct->symbolTT[symbol];
    uint32_t const maxBitsOut = (tt.deltaNbBits + (1u << 15)) >> 16;
    uint32_t const minStatePlus = (maxBitsOut << 16) - tt.deltaNbBits;
    st->stateTable = ct->stateTable;
    st->symbolTT = ct->symbolTT;
    st->tableLog = ct->tableLog;
    st->value = ct->stateTable[(int32_t)(minStatePlus >> maxBitsOut) + tt.deltaFindState];
}

GLYD_FORCE_INLINE void glyd_fseEncode(glyd_bitWriter* bw, glyd_fseCState* st, unsigned symbol)
{
    glyd_fseSymbolTT const tt = st->symbolTT[symbol];
    uint32_t const nbBitsOut = (st->value + tt.deltaNbBits) >> 16;
    glyd_bitWrite(bw, st->value & ((1u << nbBitsOut) - 1), nbBitsOut);
    st->value = st->stateTable[(int32_t)(st->value >> nbBitsOut) + tt.deltaFindState];
}

/* Writes the final state (the decoder's first read). */
GLYD_FORCE_INLINE void glyd_fseFlushCState(glyd_bitWriter* bw, const glyd_fseCState* st)
{
    glyd_bitWrite(bw, st->value - (1u << st->tableLog), st->tableLog);
}

typedef struct {
    size_t state;
    const glyd_fseDEntry* table;
} glyd_fseDState;

GLYD_FORCE_INLINE void glyd_fseInitDState(glyd_fseDState* st, glyd_bitReader* br, const glyd_fseDTable* dt)
{
    st->state = (size_t)glyd_bitRead(br, dt->tableLog);
    st->table = dt->table;
}
GLYD_FORCE_INLINE unsigned glyd_fsePeekSymbol(const glyd_fseDState* st) { return st->table[st->state].symbol; }
GLYD_FORCE_INLINE void glyd_fseUpdateState(glyd_fseDState* st, glyd_bitReader* br)
{
    glyd_fseDEntry const e = st->table[st->state];
    st->state = e.newState + (size_t)glyd_bitRead(br, e.nbBits);
}

/* Whole-buffer tANS coding of bytes with one state, used for small side
 * streams (Huffman weights). The stream holds its table description.
 * Returns the compressed size, 0 if not compressible enough, or an error. */
size_t glyd_fseCompressBytes(void* dst, size_t cap, const uint8_t* src, size_t n,
                             unsigned maxSymbol, unsigned maxTableLog);
/* Decodes exactly n symbols (each <= maxSymbol) from src. Returns the number
 * of bytes of src used (all of it) or an error. */
size_t glyd_fseDecompressBytes(uint8_t* dst, size_t n, const void* src, size_t size,
                               unsigned maxSymbol, unsigned maxTableLog);

/* ------------------------------------------------------------------------ */
/* Huffman                                                                  */
/* ------------------------------------------------------------------------ */

#define GLYD_HUF_MAX_BITS 11       /* longest code; keeps tables at 2^11 entries */
#define GLYD_HUF_MAX_SYMBOL 255

typedef struct {
    uint16_t code[GLYD_HUF_MAX_SYMBOL + 1];
    uint8_t len[GLYD_HUF_MAX_SYMBOL + 1];  /* 0 = symbol absent */
    unsigned maxSymbol;
    unsigned maxBits;
} glyd_hufCTable;

/* Builds an optimal code with lengths <= maxBits for count[0..maxSymbol]
 * (at least two present symbols). Returns the code's longest length, or an
 * error. */
size_t glyd_hufBuildCTable(glyd_hufCTable* ct, const unsigned* count, unsigned maxSymbol,
                           unsigned maxBits);
/* Writes the table description; returns its size or an error. */
size_t glyd_hufWriteCTable(void* dst, size_t cap, const glyd_hufCTable* ct);
/* Bits needed to code count[] with ct; SIZE_MAX if a present symbol is absent. */
size_t glyd_hufCost(const glyd_hufCTable* ct, const unsigned* count, unsigned maxSymbol);

/* Codes src into one stream (nbStreams 1) or four (nbStreams 4: a jump table
 * of three varint sizes, then the streams). Returns the size, 0 if dst is too
 * small, or an error. */
size_t glyd_hufCompress(void* dst, size_t cap, const uint8_t* src, size_t n,
                        const glyd_hufCTable* ct, unsigned nbStreams);

typedef struct {
    unsigned maxBits;
    uint16_t entry[1 << GLYD_HUF_MAX_BITS]; /* symbol | (length << 8) */
} glyd_hufDTable;

/* Reads a table description into dt. Returns the bytes read or an error. */
size_t glyd_hufReadDTable(glyd_hufDTable* dt, const void* src, size_t size);
/* The encoding table of the code that dt decodes (from a description read
 * with glyd_hufReadDTable). Returns its longest length. */
size_t glyd_hufCTableFromDTable(glyd_hufCTable* ct, const glyd_hufDTable* dt);

/* The same code read two symbols at a time: for each maxBits-bit window,
 * the first code's symbol and, when the second code also fits in the
 * window, its symbol too. Entry: symbols (first in the low byte) | bits
 * used << 16 | symbols given << 24. Worth building for long literal runs. */
typedef struct {
    uint32_t entry[1 << GLYD_HUF_MAX_BITS];
} glyd_hufPairs;

void glyd_hufBuildPairs(glyd_hufPairs* pairs, const glyd_hufDTable* dt);

/* Decodes exactly dstSize symbols from a one- or four-stream payload of
 * exactly srcSize bytes, with the pair table of dt when pairs is not NULL
 * (four streams only). Returns dstSize or an error. */
size_t glyd_hufDecompress(uint8_t* dst, size_t dstSize, const void* src, size_t srcSize,
                          const glyd_hufDTable* dt, const glyd_hufPairs* pairs, unsigned nbStreams);

#endif /* GLYD_ENTROPY_H */

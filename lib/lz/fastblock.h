/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastblock.h: the fast block (docs/FORMAT.md, section 16): a byte-aligned
 * LZ block with no entropy coding, for the --fast levels. Its encoder is a
 * single-probe hash finder that writes the block as it parses; its decoder
 * reads four plain byte streams (literals, tokens, offsets, extra lengths)
 * and is the speed of a memory copy on long matches.
 *
 * The decoder never reads or writes out of bounds, whatever the bytes: it
 * checks every offset against the history and the window, and every length
 * against the block, the streams and the output buffer.
 */
#ifndef GLYD_FASTBLOCK_H
#define GLYD_FASTBLOCK_H

#include "lz.h"

/* Format constants (docs/FORMAT.md, 16.2). A token holds a literal-length
 * field (high 4 bits) and a match-length field (low 4 bits); a field at 15
 * is extended by a value in the extra-lengths stream. */
#define GLYD_FAST_MINMATCH   4
#define GLYD_FAST_FIELD_MAX  15u        /* a length field that is extended */
#define GLYD_FAST_EXT_BIG    255u       /* extra-length byte announcing a u24 */
#define GLYD_FAST_OFF_SHORT  0xFFFFu    /* largest offset written on 2 bytes */
#define GLYD_FAST_OFF_MAX    (0xFFFFFFu + 0x10000u) /* largest offset at all */

typedef struct glyd_fastCCtx_s glyd_fastCCtx;

/* A fast-block encoder for the parameters of a --fast level (p->acceleration
 * is N + 1 for --fast=N) and blocks of at most 2^blockLog bytes. */
glyd_fastCCtx* glyd_fastCreateCCtx(const glyd_lzParams* p, unsigned blockLog, glyd_customMem mem);
void glyd_fastFreeCCtx(glyd_fastCCtx* fc);
/* True if fc was created for exactly these parameters (so can be reused). */
int glyd_fastCCtxFits(const glyd_fastCCtx* fc, const glyd_lzParams* p, unsigned blockLog);

/* Starts a new independent history whose first byte is at `start`. */
void glyd_fastStartHistory(glyd_fastCCtx* fc, const uint8_t* start);
/* The caller moved its history buffer `shift` bytes down in memory. */
void glyd_fastRebase(glyd_fastCCtx* fc, size_t shift);
/* Indexes src[0..size), which starts fc's history: a dictionary's content. */
void glyd_fastLoadHistory(glyd_fastCCtx* fc, const uint8_t* src, size_t size);

/* Compresses src[0..srcSize) (1 <= srcSize <= 2^blockLog, following the
 * history contiguously) into a fast block body. Returns its size; 0 when the
 * block does not pay (the caller stores it raw); or an error. */
size_t glyd_fastCompressBlock(glyd_fastCCtx* fc, void* dst, size_t cap, const uint8_t* src, size_t srcSize);

/* Decodes a fast block body to op, as glyd_lzDecodeBlock does: history
 * starts at prefixStart, matches reach at most windowSize back, op may be
 * written up to oLimit (wide copies use the room past the block's end when
 * there is some), blockMax bounds the regenerated size. Returns the
 * regenerated size, or an error. */
size_t glyd_fastDecodeBlock(uint8_t* op, uint8_t* oLimit, const uint8_t* prefixStart, size_t windowSize,
                            size_t blockMax, const uint8_t* src, size_t srcSize);

#endif /* GLYD_FASTBLOCK_H */

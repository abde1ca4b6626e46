/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ldm.h: long-distance matching (--long). The level's finder sees only as
 * far back as its hash tables remember, a few MiB at most; this finder sees
 * the whole window (up to 2 GiB) by remembering only sampled positions,
 * chosen by the content itself, and looking for long matches only. The block
 * encoder takes its matches and lets the level's finder parse the gaps.
 */
#ifndef GLYD_LDM_H
#define GLYD_LDM_H

#include "lz.h"

/* Shortest long match reported: the hashed span. Shorter repeats are the
 * level finder's business. */
#define GLYD_LDM_MIN_MATCH 64

typedef struct glyd_ldm_s glyd_ldm;

/* A long match: `length` bytes at src + start equal those `offset` back. */
typedef struct {
    uint32_t start;
    uint32_t length;
    uint32_t offset;
} glyd_ldmMatch;

/* A state for windows of 2^windowLog bytes (its table holds about one
 * position per 128 bytes of window). NULL when the allocator fails. */
glyd_ldm* glyd_ldmCreate(unsigned windowLog, glyd_customMem mem);
void glyd_ldmFree(glyd_ldm* ldm);
/* Forgets every position (a new independent history). */
void glyd_ldmReset(glyd_ldm* ldm);
/* The match state's indices moved down by `corr` (see correct_indices). */
void glyd_ldmCorrectIndices(glyd_ldm* ldm, uint32_t corr);

/* Finds long matches in src[0..srcSize), which sits in ms's history, in
 * increasing, non-overlapping order, and records the block's sampled
 * positions for later blocks. Writes at most `cap` matches to out (0: only
 * records positions); returns how many. */
size_t glyd_ldmFind(glyd_ldm* ldm, const glyd_matchState* ms, const uint8_t* src, size_t srcSize,
                    glyd_ldmMatch* out, size_t cap);

/* Turns long-distance matching on or off for the blocks that zc compresses
 * next (block_enc.c). Returns 0 or an error (memory). */
size_t glyd_lzSetLongMatching(glyd_lzCCtx* zc, int enable);

#endif /* GLYD_LDM_H */

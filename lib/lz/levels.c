/* SPDX-License-Identifier: BSD-3-Clause */
/* levels.c: what each compression level means for the match finder. */
#include "lz.h"

/* strategy, windowLog, hashLog, chainLog, searchLog, minMatch, targetLength,
 * acceleration, repeatSlack */
static const glyd_lzParams kLevels[GLYD_LEVEL_MAX + 1] = {
    { glyd_fast,   19, 15, 15, 0, 5, 0, 1, 0 },   /* 0: unused (default level) */
    /* 1: zstd -1's window, but dfast's two tables: a match found on 8
     * bytes first is longer, so blocks hold fewer sequences and decode
     * faster (measured: 6% faster, 3% smaller than one 6-byte table).
     * 1-2 keep the previous block's entropy tables unless fresh ones save
     * over 3% (1/2^5): 2% faster decoding for 0.4% larger output. */
    { glyd_dfast,  19, 16, 14, 0, 7, 0, 1, 5 },
    { glyd_dfast,  20, 17, 16, 0, 5, 0, 1, 5 },   /* 2 */
    { glyd_dfast,  21, 17, 16, 0, 5, 0, 1, 0 },   /* 3: zstd -3's tables: 768 KiB */
    { glyd_greedy, 21, 18, 18, 1, 5, 0, 1, 0 },   /* 4 */
    { glyd_greedy, 21, 18, 19, 3, 5, 0, 1, 0 },   /* 5 */
    { glyd_lazy,   21, 19, 19, 3, 5, 0, 1, 0 },   /* 6 */
    { glyd_lazy,   22, 19, 20, 4, 5, 0, 1, 0 },   /* 7 */
    { glyd_lazy2,  22, 20, 20, 4, 5, 0, 1, 0 },   /* 8 */
    { glyd_lazy2,  22, 20, 21, 5, 5, 0, 1, 0 },   /* 9 */
    /* 10-22: binary tree and optimal parse. A match of targetLength is
     * taken as it is; shorter ones leave the parser every choice, which
     * pays on logs and tables, where long matches have many starts.
     * From 16 on, blocks may be split where their statistics change; 19
     * already runs the most parsing passes (btultra2): on the corpus, 0.05%
     * smaller than btultra, for twice the time. */
    { glyd_btopt,    22, 20, 21, 3, 4, 128, 1, 0 }, /* 10 */
    { glyd_btopt,    22, 21, 22, 3, 4, 128, 1, 0 }, /* 11 */
    { glyd_btopt,    22, 21, 22, 4, 4, 192, 1, 0 }, /* 12 */
    { glyd_btopt,    22, 21, 22, 4, 4, 256, 1, 0 }, /* 13 */
    { glyd_btopt,    22, 22, 22, 5, 4, 256, 1, 0 }, /* 14 */
    { glyd_btopt,    22, 22, 23, 5, 4, 256, 1, 0 }, /* 15 */
    { glyd_btultra,  22, 22, 23, 5, 4, 256, 1, 0 }, /* 16 */
    { glyd_btultra,  23, 22, 23, 5, 3, 256, 1, 0 }, /* 17 */
    { glyd_btultra,  23, 22, 24, 5, 3, 256, 1, 0 }, /* 18 */
    { glyd_btultra2, 23, 22, 24, 6, 3, 256, 1, 0 }, /* 19 */
    { glyd_btultra2, 25, 23, 25, 7, 3, 512, 1, 0 }, /* 20 */
    { glyd_btultra2, 26, 24, 26, 8, 3, 768, 1, 0 }, /* 21 */
    { glyd_btultra2, 27, 25, 27, 9, 3, 999, 1, 0 }, /* 22: --max */
};

void glyd_lzParamsForLevel(glyd_lzParams* p, int level, unsigned long long srcSizeHint)
{
    if (level == 0) level = GLYD_LEVEL_DEFAULT;
    if (level > GLYD_LEVEL_MAX) level = GLYD_LEVEL_MAX;
    if (level < GLYD_LEVEL_MIN) level = GLYD_LEVEL_MIN;
    if (level < 0) {
        /* --fast=N: level 1's finder with a smaller table, stepping faster */
        *p = kLevels[1];
        p->hashLog = 14;
        p->minMatch = 6;
        p->acceleration = (unsigned)(-level) + 1;
    } else {
        *p = kLevels[level];
    }
    if (srcSizeHint > 0 && srcSizeHint < (1ULL << 30)) {
        /* a window past the input only costs the decoder memory, and
         * tables much larger than the input only cost time */
        unsigned need = GLYD_WINDOWLOG_MIN;
        while (need < 30 && (1ULL << need) < srcSizeHint) need++;
        if (p->windowLog > need) p->windowLog = need;
        if (p->hashLog > need + 1) p->hashLog = need + 1;
        if (p->chainLog > need + 1) p->chainLog = need + 1;
    }
}

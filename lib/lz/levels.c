/* levels.c: what each compression level means for the match finder. */
#include "lz.h"

/* strategy, windowLog, hashLog, chainLog, searchLog, minMatch, targetLength */
static const glyd_lzParams kLevels[GLYD_LEVEL_MAX + 1] = {
    { glyd_fast,   19, 15, 15, 0, 5, 0, 1 },   /* 0: unused (default level) */
    { glyd_fast,   19, 16, 16, 0, 5, 0, 1 },   /* 1 */
    { glyd_dfast,  20, 17, 16, 0, 5, 0, 1 },   /* 2 */
    { glyd_dfast,  21, 18, 17, 0, 5, 0, 1 },   /* 3 */
    { glyd_greedy, 21, 18, 18, 1, 5, 0, 1 },   /* 4 */
    { glyd_greedy, 21, 18, 19, 3, 5, 0, 1 },   /* 5 */
    { glyd_lazy,   21, 19, 19, 3, 5, 0, 1 },   /* 6 */
    { glyd_lazy,   22, 19, 20, 4, 5, 0, 1 },   /* 7 */
    { glyd_lazy2,  22, 20, 20, 4, 5, 0, 1 },   /* 8 */
    { glyd_lazy2,  22, 20, 21, 5, 5, 0, 1 },   /* 9 */
    { glyd_lazy2,  22, 21, 21, 5, 5, 0, 1 },   /* 10 */
    { glyd_lazy2,  22, 21, 21, 6, 5, 0, 1 },   /* 11 */
    { glyd_lazy2,  23, 21, 22, 6, 5, 0, 1 },   /* 12 */
    { glyd_lazy2,  23, 22, 22, 7, 4, 0, 1 },   /* 13 */
    { glyd_lazy2,  23, 22, 22, 7, 4, 0, 1 },   /* 14 */
    { glyd_lazy2,  23, 22, 23, 8, 4, 0, 1 },   /* 15 */
    { glyd_lazy2,  23, 22, 23, 8, 4, 0, 1 },   /* 16 */
    { glyd_lazy2,  23, 23, 23, 9, 4, 0, 1 },   /* 17 */
    { glyd_lazy2,  23, 23, 24, 9, 4, 0, 1 },   /* 18 */
    { glyd_lazy2,  23, 23, 24, 10, 4, 0, 1 },  /* 19 */
    { glyd_lazy2,  25, 24, 25, 10, 4, 0, 1 },  /* 20 */
    { glyd_lazy2,  26, 24, 26, 11, 4, 0, 1 },  /* 21 */
    { glyd_lazy2,  27, 25, 27, 12, 4, 0, 1 },  /* 22: --max */
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

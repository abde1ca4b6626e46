/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ldm.c: long-distance matching. A rolling hash runs over the input; where
 * its top bits are all zero (about one position in 2^rateLog, decided by the
 * last GLYD_LDM_MIN_MATCH bytes alone, so that a repeat of those bytes
 * anywhere in the window is sampled at the same place) the position is an
 * anchor: it is looked up in, then added to, a table of earlier anchors with
 * the same hash. A hit that verifies is extended both ways into a long match.
 * Memory is one table entry per anchor kept, about 8 bytes per 128 bytes of
 * window; the cost per input byte is a shift, an add and a compare.
 */
#include "ldm.h"

/* Entries per hash bucket, log2: a few anchors with the same hash survive
 * side by side, the oldest replaced first. */
#define BUCKET_LOG 2
#define BUCKET_SIZE (1u << BUCKET_LOG)

typedef struct {
    uint32_t index; /* match-state index of the hashed span's first byte */
    uint32_t check; /* low bits of the hash: rejects most false candidates */
} ldm_entry;

struct glyd_ldm_s {
    glyd_customMem mem;
    ldm_entry* table;  /* 2^hashLog entries, in buckets */
    uint8_t* nextSlot; /* per bucket: the slot written next */
    unsigned hashLog;
    unsigned rateLog;
    /* The gear hash adds a random word per byte and shifts by one, so after
     * 64 bytes a byte has left the hash: h depends on the last 64 bytes only. */
    uint64_t gear[256];
};

/* A fixed pseudo-random sequence (splitmix64): the same anchors on every
 * run, so that output does not depend on anything but the input. */
static uint64_t splitmix64(uint64_t* s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

glyd_ldm* glyd_ldmCreate(unsigned windowLog, glyd_customMem mem)
{
    glyd_ldm* const ldm = (glyd_ldm*)glyd_calloc(sizeof(*ldm), mem);
    uint64_t seed = 0x676C7964; /* any constant */
    unsigned i;
    if (!ldm) return NULL;
    ldm->mem = mem;
    /* one anchor per 128 bytes of window, on average, fills the table */
    ldm->hashLog = GLYD_MAX(12u, GLYD_MIN(24u, windowLog > 7 ? windowLog - 7 : 0));
    ldm->rateLog = 7;
    ldm->table = (ldm_entry*)glyd_calloc(sizeof(ldm_entry) << ldm->hashLog, mem);
    ldm->nextSlot = (uint8_t*)glyd_calloc((size_t)1 << (ldm->hashLog - BUCKET_LOG), mem);
    if (!ldm->table || !ldm->nextSlot) {
        glyd_ldmFree(ldm);
        return NULL;
    }
    for (i = 0; i < 256; i++) ldm->gear[i] = splitmix64(&seed);
    return ldm;
}

void glyd_ldmFree(glyd_ldm* ldm)
{
    if (!ldm) return;
    glyd_free(ldm->table, ldm->mem);
    glyd_free(ldm->nextSlot, ldm->mem);
    glyd_free(ldm, ldm->mem);
}

void glyd_ldmReset(glyd_ldm* ldm)
{
    memset(ldm->table, 0, sizeof(ldm_entry) << ldm->hashLog);
    memset(ldm->nextSlot, 0, (size_t)1 << (ldm->hashLog - BUCKET_LOG));
}

void glyd_ldmCorrectIndices(glyd_ldm* ldm, uint32_t corr)
{
    size_t const n = (size_t)1 << ldm->hashLog;
    size_t i;
    /* 0 lies below every history's lowLimit: an entry that is never used */
    for (i = 0; i < n; i++) ldm->table[i].index = ldm->table[i].index > corr ? ldm->table[i].index - corr : 0;
}

size_t glyd_ldmFind(glyd_ldm* ldm, const glyd_matchState* ms, const uint8_t* src, size_t srcSize,
                    glyd_ldmMatch* out, size_t cap)
{
    const uint8_t* const base = ms->base;
    const uint8_t* const histStart = base + ms->lowLimit;
    const uint8_t* const iend = src + srcSize;
    uint32_t const windowSize = 1u << ms->p.windowLog;
    uint32_t const lowest = glyd_lzLowestIndex(ms, (uint32_t)(src - base));
    const uint8_t* const lowPtr = base + lowest;
    unsigned const selectShift = 64 - ldm->rateLog;
    /* the bucket number: the hash bits just below those that select anchors */
    unsigned const bucketShift = selectShift - (ldm->hashLog - BUCKET_LOG);
    size_t const bucketMask = ((size_t)1 << (ldm->hashLog - BUCKET_LOG)) - 1;
    const uint8_t* cursor = src; /* matches start at or after it */
    const uint8_t* p;
    uint64_t h = 0;
    size_t n = 0;

    /* the bytes just before the block, so that anchors near its start are
     * the same as if the input had been hashed in one go */
    for (p = src - GLYD_MIN((size_t)(src - histStart), (size_t)GLYD_LDM_MIN_MATCH - 1); p < src; p++)
        h = (h << 1) + ldm->gear[*p];

    for (p = src; p < iend; p++) {
        const uint8_t* s;
        ldm_entry* bucket;
        size_t bi;
        uint32_t cur, check;
        h = (h << 1) + ldm->gear[*p];
        if (GLYD_LIKELY(h >> selectShift)) continue;
        if ((size_t)(p + 1 - histStart) < GLYD_LDM_MIN_MATCH) continue;
        s = p + 1 - GLYD_LDM_MIN_MATCH; /* the span hashed */
        cur = (uint32_t)(s - base);
        check = (uint32_t)h;
        bi = (size_t)(h >> bucketShift) & bucketMask;
        bucket = ldm->table + (bi << BUCKET_LOG);

        if (s >= cursor && n < cap) {
            size_t bestLength = 0, bestBack = 0;
            uint32_t bestIdx = 0;
            unsigned k;
            for (k = 0; k < BUCKET_SIZE; k++) {
                uint32_t const idx = bucket[k].index;
                const uint8_t* m;
                size_t fwd, back = 0;
                if (bucket[k].check != check || idx >= cur) continue;
                if (!glyd_lzInWindow(idx, cur, lowest, windowSize)) continue;
                m = base + idx;
                fwd = glyd_count(s, m, iend);
                if (fwd < GLYD_LDM_MIN_MATCH) continue;
                while (s - back > cursor && m - back > lowPtr && s[-1 - (ptrdiff_t)back] == m[-1 - (ptrdiff_t)back])
                    back++;
                if (fwd + back > bestLength) {
                    bestLength = fwd + back;
                    bestBack = back;
                    bestIdx = idx;
                }
            }
            if (bestLength) {
                out[n].start = (uint32_t)(s - bestBack - src);
                out[n].length = (uint32_t)bestLength;
                out[n].offset = cur - bestIdx;
                n++;
                cursor = s - bestBack + bestLength;
            }
        }
        bucket[ldm->nextSlot[bi]].index = cur;
        bucket[ldm->nextSlot[bi]].check = check;
        ldm->nextSlot[bi] = (uint8_t)((ldm->nextSlot[bi] + 1) & (BUCKET_SIZE - 1));
    }
    return n;
}

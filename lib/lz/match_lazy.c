/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * match_lazy.c: hash-chain finders for the middle levels. Every position is
 * chained to the previous one with the same hash; a search walks the chain
 * for up to 2^searchLog candidates. "greedy" takes the best match at each
 * position; "lazy" and "lazy2" first look one or two positions ahead and
 * defer when a later match is worth more.
 */
#include "lz.h"

/* Inserts every position before ip; returns the chain head for ip. */
GLYD_FORCE_INLINE uint32_t hc_insert(glyd_matchState* ms, const uint8_t* ip, unsigned mls)
{
    uint32_t* const hashTable = ms->hashTable;
    uint32_t* const chain = ms->chainTable;
    uint32_t const chainMask = (1u << ms->p.chainLog) - 1;
    unsigned const hlog = ms->p.hashLog;
    const uint8_t* const base = ms->base;
    uint32_t const target = (uint32_t)(ip - base);
    uint32_t idx = ms->nextToUpdate;
    for (; idx < target; idx++) {
        size_t const h = glyd_hashPtr(base + idx, hlog, mls);
        chain[idx & chainMask] = hashTable[h];
        hashTable[h] = idx;
    }
    ms->nextToUpdate = target;
    return hashTable[glyd_hashPtr(ip, hlog, mls)];
}

/* Longest match for ip among the chain's candidates; 0 if none reaches
 * mls bytes. *offBase receives the match's offset as an offBase. */
GLYD_FORCE_INLINE size_t hc_search(glyd_matchState* ms, const uint8_t* ip, const uint8_t* iend,
                                   uint32_t lowest, unsigned mls, uint32_t* offBase)
{
    uint32_t* const chain = ms->chainTable;
    uint32_t const chainSize = 1u << ms->p.chainLog;
    uint32_t const chainMask = chainSize - 1;
    const uint8_t* const base = ms->base;
    uint32_t const cur = (uint32_t)(ip - base);
    uint32_t const windowSize = 1u << ms->p.windowLog;
    /* links older than one chain length may have been overwritten */
    uint32_t const minChain = cur > chainSize ? cur - chainSize : 0;
    unsigned attempts = 1u << ms->p.searchLog;
    size_t const target = ms->p.targetLength ? ms->p.targetLength : SIZE_MAX;
    size_t best = mls - 1;
    uint32_t matchIdx = hc_insert(ms, ip, mls);

    /* candidates come newest first: the first out of the window ends it */
    if (cur > windowSize && lowest < cur - windowSize) lowest = cur - windowSize;
    while (matchIdx >= lowest && attempts--) {
        const uint8_t* const match = base + matchIdx;
        /* a candidate can only win if it matches at the current best length */
        if (match[best] == ip[best] && glyd_read32(match) == glyd_read32(ip)) {
            size_t const len = glyd_count(ip, match, iend);
            if (len > best) {
                best = len;
                *offBase = GLYD_OFFSET_TO_OFFBASE(cur - matchIdx);
                if (ip + len == iend || len >= target) break;
            }
        }
        if (matchIdx <= minChain) break;
        matchIdx = chain[matchIdx & chainMask];
    }
    return best >= mls ? best : 0;
}

/* Is the repeat offset r usable at ip (inside history, 4 bytes equal)? */
GLYD_FORCE_INLINE int rep_ok(const uint8_t* ip, const uint8_t* base, uint32_t lowest, uint32_t r)
{
    uint32_t const cur = (uint32_t)(ip - base);
    return r <= cur - lowest && glyd_read32(ip - r) == glyd_read32(ip);
}

GLYD_FORCE_INLINE size_t find_lazy(glyd_matchState* ms, glyd_seqStore* ss, uint32_t rep[GLYD_REP_NUM],
                                   const uint8_t* src, size_t srcSize, unsigned mls, int depth)
{
    const uint8_t* const base = ms->base;
    const uint8_t* const iend = src + srcSize;
    const uint8_t* const ilimit = iend - GLYD_LZ_TAIL;
    uint32_t const lowest = glyd_lzLowestIndex(ms, (uint32_t)(src - base));
    const uint8_t* const lowPtr = base + lowest;
    const uint8_t* ip = src;
    const uint8_t* anchor = src;

    if (srcSize < GLYD_LZ_TAIL + 4) return srcSize;
    if (ms->nextToUpdate < lowest) ms->nextToUpdate = lowest;

    while (ip < ilimit) {
        size_t matchLength = 0;
        uint32_t offBase = 0;
        const uint8_t* start = ip + 1;

        /* the last offset one byte on: always a candidate */
        if (rep_ok(ip + 1, base, lowest, rep[0])) {
            matchLength = glyd_count(ip + 5, ip + 5 - rep[0], iend) + 4;
            offBase = 1;
            if (depth == 0) goto store;
        }
        {
            uint32_t found = 0;
            size_t const ml2 = hc_search(ms, ip, iend, lowest, mls, &found);
            if (ml2 > matchLength) { matchLength = ml2; offBase = found; start = ip; }
        }
        if (matchLength < 4) {
            ip += ((size_t)(ip - anchor) >> GLYD_LZ_SKIP_LOG) + 1;
            continue;
        }

        /* Look ahead: a match starting later wins if it is worth more. Worth
         * is length against the bits its offset costs (log2 of offBase). */
        while (depth >= 1 && ip < ilimit) {
            ip++;
            if (offBase && rep_ok(ip, base, lowest, rep[0])) {
                size_t const mlRep = glyd_count(ip + 4, ip + 4 - rep[0], iend) + 4;
                int const gain2 = (int)mlRep * 3;
                int const gain1 = (int)matchLength * 3 - (int)glyd_highbit32(offBase) + 1;
                if (gain2 > gain1) { matchLength = mlRep; offBase = 1; start = ip; }
            }
            {
                uint32_t found = 0;
                size_t const ml2 = hc_search(ms, ip, iend, lowest, mls, &found);
                if (ml2 >= 4) {
                    int const gain2 = (int)ml2 * 4 - (int)glyd_highbit32(found);
                    int const gain1 = (int)matchLength * 4 - (int)glyd_highbit32(offBase) + 4;
                    if (gain2 > gain1) { matchLength = ml2; offBase = found; start = ip; continue; }
                }
            }
            if (depth == 2 && ip < ilimit) {
                ip++;
                if (offBase && rep_ok(ip, base, lowest, rep[0])) {
                    size_t const mlRep = glyd_count(ip + 4, ip + 4 - rep[0], iend) + 4;
                    int const gain2 = (int)mlRep * 4;
                    int const gain1 = (int)matchLength * 4 - (int)glyd_highbit32(offBase) + 1;
                    if (gain2 > gain1) { matchLength = mlRep; offBase = 1; start = ip; }
                }
                {
                    uint32_t found = 0;
                    size_t const ml2 = hc_search(ms, ip, iend, lowest, mls, &found);
                    if (ml2 >= 4) {
                        int const gain2 = (int)ml2 * 4 - (int)glyd_highbit32(found);
                        int const gain1 = (int)matchLength * 4 - (int)glyd_highbit32(offBase) + 7;
                        if (gain2 > gain1) { matchLength = ml2; offBase = found; start = ip; continue; }
                    }
                }
            }
            break;
        }

        /* a real offset may also extend backwards over pending literals */
        if (offBase > GLYD_REP_NUM) {
            const uint8_t* match = start - (offBase - GLYD_REP_NUM);
            while (start > anchor && match > lowPtr && start[-1] == match[-1]) {
                start--;
                match--;
                matchLength++;
            }
        }
    store:
        glyd_lzStoreMatch(ss, rep, anchor, (size_t)(start - anchor), offBase, matchLength);
        ip = start + matchLength;
        anchor = ip;

        /* the second-to-last offset, straight after the match */
        while (ip <= ilimit && rep_ok(ip, base, lowest, rep[1])) {
            size_t const rLength = glyd_count(ip + 4, ip + 4 - rep[1], iend) + 4;
            glyd_lzStoreMatch(ss, rep, anchor, 0, glyd_repToOffBase(1, 1), rLength);
            ip += rLength;
            anchor = ip;
        }
    }
    return (size_t)(iend - anchor);
}

#define LZ_DISPATCH(depth)                                                         \
    switch (ms->p.minMatch) {                                                      \
    case 4: return find_lazy(ms, ss, rep, src, srcSize, 4, depth);                 \
    case 5: return find_lazy(ms, ss, rep, src, srcSize, 5, depth);                 \
    default: return find_lazy(ms, ss, rep, src, srcSize, 6, depth);                \
    }

size_t glyd_lzFindGreedy(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                         const uint8_t* src, size_t srcSize)
{
    LZ_DISPATCH(0)
}

size_t glyd_lzFindLazy(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                       const uint8_t* src, size_t srcSize)
{
    LZ_DISPATCH(1)
}

size_t glyd_lzFindLazy2(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                        const uint8_t* src, size_t srcSize)
{
    LZ_DISPATCH(2)
}

void glyd_lzIndexChain(glyd_matchState* ms, const uint8_t* src, size_t size)
{
    /* the hashed length of LZ_DISPATCH */
    unsigned const mls = ms->p.minMatch == 4 || ms->p.minMatch == 5 ? ms->p.minMatch : 6;
    uint32_t const lowest = glyd_lzLowestIndex(ms, (uint32_t)(src - ms->base));
    if (size < GLYD_LZ_TAIL) return;
    if (ms->nextToUpdate < lowest) ms->nextToUpdate = lowest;
    hc_insert(ms, src + size - GLYD_LZ_TAIL, mls);
}

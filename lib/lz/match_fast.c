/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * match_fast.c: the fastest finders. "fast" probes one hash table once per
 * position and skips ahead faster the longer it finds nothing; "dfast" adds
 * a second table keyed on 8 bytes, which finds longer matches first.
 */
#include "lz.h"

GLYD_FORCE_INLINE size_t find_fast(glyd_matchState* ms, glyd_seqStore* ss, uint32_t rep[GLYD_REP_NUM],
                                   const uint8_t* src, size_t srcSize, unsigned mls)
{
    uint32_t* const table = ms->hashTable;
    unsigned const hlog = ms->p.hashLog;
    size_t const step0 = ms->p.acceleration ? ms->p.acceleration : 1;
    const uint8_t* const base = ms->base;
    const uint8_t* const iend = src + srcSize;
    const uint8_t* const ilimit = iend - GLYD_LZ_TAIL;
    uint32_t const lowest = glyd_lzLowestIndex(ms, (uint32_t)(src - base));
    uint32_t const windowSize = 1u << ms->p.windowLog;
    const uint8_t* const lowPtr = base + lowest;
    const uint8_t* ip = src;
    const uint8_t* anchor = src;

    if (srcSize < GLYD_LZ_TAIL + 4) return srcSize;
    while (ip < ilimit) {
        uint32_t const cur = (uint32_t)(ip - base);
        size_t const h = glyd_hashPtr(ip, hlog, mls);
        uint32_t const matchIdx = table[h];
        const uint8_t* match = base + matchIdx;
        uint32_t const r0 = rep[0];
        size_t mLength;
        table[h] = cur;

        if (r0 <= cur + 1 - lowest && glyd_read32(ip + 1 - r0) == glyd_read32(ip + 1)) {
            /* the last offset again, one byte on: the cheapest match there is */
            mLength = glyd_count(ip + 5, ip + 5 - r0, iend) + 4;
            ip++;
            glyd_lzStoreMatch(ss, rep, anchor, (size_t)(ip - anchor), 1, mLength);
        } else if (glyd_lzInWindow(matchIdx, cur, lowest, windowSize) && glyd_read32(match) == glyd_read32(ip)) {
            uint32_t const offset = cur - matchIdx;
            mLength = glyd_count(ip + 4, match + 4, iend) + 4;
            while (ip > anchor && match > lowPtr && ip[-1] == match[-1]) {
                ip--;
                match--;
                mLength++;
            }
            glyd_lzStoreMatch(ss, rep, anchor, (size_t)(ip - anchor),
                              GLYD_OFFSET_TO_OFFBASE(offset), mLength);
        } else {
            ip += ((size_t)(ip - anchor) >> GLYD_LZ_SKIP_LOG) + step0;
            continue;
        }

        ip += mLength;
        anchor = ip;
        if (ip <= ilimit) {
            /* positions inside the match, cheap to add and often useful */
            table[glyd_hashPtr(base + cur + 2, hlog, mls)] = cur + 2;
            table[glyd_hashPtr(ip - 2, hlog, mls)] = (uint32_t)(ip - 2 - base);
            /* the second-to-last offset, straight after the match */
            while (ip <= ilimit) {
                uint32_t const c = (uint32_t)(ip - base);
                uint32_t const r1 = rep[1];
                if (r1 <= c - lowest && glyd_read32(ip - r1) == glyd_read32(ip)) {
                    size_t const rLength = glyd_count(ip + 4, ip + 4 - r1, iend) + 4;
                    table[glyd_hashPtr(ip, hlog, mls)] = c;
                    glyd_lzStoreMatch(ss, rep, anchor, 0, glyd_repToOffBase(1, 1), rLength);
                    ip += rLength;
                    anchor = ip;
                    continue;
                }
                break;
            }
        }
    }
    return (size_t)(iend - anchor);
}

size_t glyd_lzFindFast(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                       const uint8_t* src, size_t srcSize)
{
    switch (ms->p.minMatch) {
    case 4: return find_fast(ms, ss, rep, src, srcSize, 4);
    case 5: return find_fast(ms, ss, rep, src, srcSize, 5);
    case 6: return find_fast(ms, ss, rep, src, srcSize, 6);
    default: return find_fast(ms, ss, rep, src, srcSize, 7);
    }
}

GLYD_FORCE_INLINE size_t find_dfast(glyd_matchState* ms, glyd_seqStore* ss, uint32_t rep[GLYD_REP_NUM],
                                    const uint8_t* src, size_t srcSize, unsigned mls)
{
    uint32_t* const longTable = ms->hashTable;
    uint32_t* const shortTable = ms->chainTable;
    unsigned const hlogL = ms->p.hashLog;
    unsigned const hlogS = ms->p.chainLog;
    const uint8_t* const base = ms->base;
    const uint8_t* const iend = src + srcSize;
    const uint8_t* const ilimit = iend - GLYD_LZ_TAIL;
    uint32_t const lowest = glyd_lzLowestIndex(ms, (uint32_t)(src - base));
    /* candidates from here on are inside the window of every position of
     * the block: one comparison per probe (matches a little less than a
     * window away from the block's first bytes are given up) */
    uint32_t const lowestAll = glyd_lzLowestIndex(ms, (uint32_t)(iend - base));
    const uint8_t* const lowPtr = base + lowest;
    const uint8_t* ip = src;
    const uint8_t* anchor = src;

    size_t hL, hS;
    if (srcSize < GLYD_LZ_TAIL + 4) return srcSize;
    hL = glyd_hashPtr(ip, hlogL, 8);
    hS = glyd_hashPtr(ip, hlogS, mls);
    while (ip < ilimit) {
        uint32_t const cur = (uint32_t)(ip - base);
        uint32_t const idxL = longTable[hL];
        uint32_t const idxS = shortTable[hS];
        /* the next position's slots, fetched while this one is tried: the
         * tables are larger than the caches, and most positions find
         * nothing (2% faster at level 3) */
        size_t const hL1 = glyd_hashPtr(ip + 1, hlogL, 8);
        size_t const hS1 = glyd_hashPtr(ip + 1, hlogS, mls);
        const uint8_t* matchL = base + idxL;
        const uint8_t* matchS = base + idxS;
        uint32_t const r0 = rep[0];
        uint32_t offset;
        size_t mLength;
        GLYD_PREFETCH(longTable + hL1);
        GLYD_PREFETCH(shortTable + hS1);
        longTable[hL] = shortTable[hS] = cur;

        if (r0 <= cur + 1 - lowest && glyd_read32(ip + 1 - r0) == glyd_read32(ip + 1)) {
            mLength = glyd_count(ip + 5, ip + 5 - r0, iend) + 4;
            ip++;
            glyd_lzStoreMatch(ss, rep, anchor, (size_t)(ip - anchor), 1, mLength);
        } else {
            if (idxL >= lowestAll && glyd_read64(matchL) == glyd_read64(ip)) {
                mLength = glyd_count(ip + 8, matchL + 8, iend) + 8;
                offset = cur - idxL;
                while (ip > anchor && matchL > lowPtr && ip[-1] == matchL[-1]) {
                    ip--; matchL--; mLength++;
                }
            } else if (idxS >= lowestAll && glyd_read32(matchS) == glyd_read32(ip)) {
                /* a short match: a long one may start one byte later */
                uint32_t const idxL1 = longTable[hL1];
                const uint8_t* matchL1 = base + idxL1;
                longTable[hL1] = cur + 1;
                if (idxL1 >= lowestAll &&
                    glyd_read64(matchL1) == glyd_read64(ip + 1)) {
                    mLength = glyd_count(ip + 9, matchL1 + 8, iend) + 8;
                    ip++;
                    offset = cur + 1 - idxL1;
                    while (ip > anchor && matchL1 > lowPtr && ip[-1] == matchL1[-1]) {
                        ip--; matchL1--; mLength++;
                    }
                } else {
                    mLength = glyd_count(ip + 4, matchS + 4, iend) + 4;
                    offset = cur - idxS;
                    while (ip > anchor && matchS > lowPtr && ip[-1] == matchS[-1]) {
                        ip--; matchS--; mLength++;
                    }
                }
            } else {
                size_t const step = ((size_t)(ip - anchor) >> GLYD_LZ_SKIP_LOG) + 1;
                ip += step;
                if (step == 1) {
                    hL = hL1;
                    hS = hS1;
                } else if (ip < ilimit) {
                    hL = glyd_hashPtr(ip, hlogL, 8);
                    hS = glyd_hashPtr(ip, hlogS, mls);
                }
                continue;
            }
            glyd_lzStoreMatch(ss, rep, anchor, (size_t)(ip - anchor),
                              GLYD_OFFSET_TO_OFFBASE(offset), mLength);
        }

        ip += mLength;
        anchor = ip;
        if (ip <= ilimit) {
            uint32_t const i2 = cur + 2;
            uint32_t const iEnd2 = (uint32_t)(ip - 2 - base);
            /* cur + 1 too: long matches often start just after one found
             * (0.4% smaller on large tables and JSON) */
            longTable[hL1] = cur + 1;
            longTable[glyd_hashPtr(base + i2, hlogL, 8)] = i2;
            shortTable[glyd_hashPtr(base + i2, hlogS, mls)] = i2;
            longTable[glyd_hashPtr(ip - 2, hlogL, 8)] = iEnd2;
            shortTable[glyd_hashPtr(ip - 2, hlogS, mls)] = iEnd2;
            while (ip <= ilimit) {
                uint32_t const c = (uint32_t)(ip - base);
                uint32_t const r1 = rep[1];
                if (r1 <= c - lowest && glyd_read32(ip - r1) == glyd_read32(ip)) {
                    size_t const rLength = glyd_count(ip + 4, ip + 4 - r1, iend) + 4;
                    shortTable[glyd_hashPtr(ip, hlogS, mls)] = c;
                    longTable[glyd_hashPtr(ip, hlogL, 8)] = c;
                    glyd_lzStoreMatch(ss, rep, anchor, 0, glyd_repToOffBase(1, 1), rLength);
                    ip += rLength;
                    anchor = ip;
                    continue;
                }
                break;
            }
        }
        if (ip < ilimit) {
            hL = glyd_hashPtr(ip, hlogL, 8);
            hS = glyd_hashPtr(ip, hlogS, mls);
        }
    }
    return (size_t)(iend - anchor);
}

size_t glyd_lzFindDFast(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                        const uint8_t* src, size_t srcSize)
{
    switch (ms->p.minMatch) {
    case 4: return find_dfast(ms, ss, rep, src, srcSize, 4);
    case 5: return find_dfast(ms, ss, rep, src, srcSize, 5);
    case 6: return find_dfast(ms, ss, rep, src, srcSize, 6);
    default: return find_dfast(ms, ss, rep, src, srcSize, 7);
    }
}

void glyd_lzIndexFast(glyd_matchState* ms, const uint8_t* src, size_t size)
{
    /* the hashed lengths of glyd_lzFindFast and glyd_lzFindDFast */
    unsigned const mls = ms->p.minMatch >= 4 && ms->p.minMatch <= 6 ? ms->p.minMatch : 7;
    const uint8_t* p;
    if (size < GLYD_LZ_TAIL) return;
    for (p = src; p <= src + size - GLYD_LZ_TAIL; p++) {
        uint32_t const idx = (uint32_t)(p - ms->base);
        if (ms->p.strategy == glyd_dfast) {
            ms->hashTable[glyd_hashPtr(p, ms->p.hashLog, 8)] = idx;
            ms->chainTable[glyd_hashPtr(p, ms->p.chainLog, mls)] = idx;
        } else {
            ms->hashTable[glyd_hashPtr(p, ms->p.hashLog, mls)] = idx;
        }
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* huf_enc.c: length-limited Huffman codes (package-merge), their compact
 * description, and encoding into one or four backward bit streams. */
#include <stdlib.h>

#include "entropy.h"

typedef struct { unsigned count; unsigned symbol; } huf_leaf;

static int cmp_leaf(const void* a, const void* b)
{
    const huf_leaf* x = (const huf_leaf*)a;
    const huf_leaf* y = (const huf_leaf*)b;
    if (x->count != y->count) return x->count < y->count ? -1 : 1;
    return x->symbol < y->symbol ? -1 : (x->symbol > y->symbol);
}

/* Package-merge: optimal code lengths under a length limit. Level l's list
 * merges the leaves with the pairs ("packages") of level l-1's list; taking
 * the 2n-2 cheapest items of the last level and following packages back down
 * gives each leaf's length as the number of levels that selected it. */
static void package_merge(uint8_t* lengths, const huf_leaf* leaves, unsigned n, unsigned limit)
{
    enum { MAXN = GLYD_HUF_MAX_SYMBOL + 1, MAXITEMS = 2 * MAXN };
    uint64_t weight[2][MAXITEMS];
    uint8_t isLeaf[GLYD_HUF_MAX_BITS][MAXITEMS];
    unsigned len[GLYD_HUF_MAX_BITS];
    unsigned const keep = 2 * n - 2;
    unsigned level, i, cur = 0;

    for (i = 0; i < n && i < keep; i++) { weight[0][i] = leaves[i].count; isLeaf[0][i] = 1; }
    len[0] = GLYD_MIN(n, keep);
    for (level = 1; level < limit; level++) {
        uint64_t* const prev = weight[cur];
        uint64_t* const next = weight[cur ^ 1];
        unsigned const nbPackages = len[level - 1] / 2;
        unsigned li = 0, pi = 0, k = 0;
        while (k < keep && (li < n || pi < nbPackages)) {
            uint64_t const pw = pi < nbPackages ? prev[2 * pi] + prev[2 * pi + 1] : UINT64_MAX;
            if (li < n && leaves[li].count <= pw) {
                next[k] = leaves[li++].count;
                isLeaf[level][k++] = 1;
            } else {
                next[k] = pw;
                pi++;
                isLeaf[level][k++] = 0;
            }
        }
        len[level] = k;
        cur ^= 1;
    }
    memset(lengths, 0, n);
    {
        unsigned take = keep;
        for (level = limit; level-- > 0;) {
            unsigned leavesTaken = 0, packages = 0;
            for (i = 0; i < take && i < len[level]; i++) {
                if (isLeaf[level][i]) leavesTaken++;
                else packages++;
            }
            /* leaves enter each list in ascending order, so the selected
             * leaves are the cheapest ones */
            for (i = 0; i < leavesTaken; i++) lengths[i]++;
            take = 2 * packages;
        }
    }
}

size_t glyd_hufBuildCTable(glyd_hufCTable* ct, const unsigned* count, unsigned maxSymbol,
                           unsigned maxBits)
{
    huf_leaf leaves[GLYD_HUF_MAX_SYMBOL + 1];
    uint8_t lengths[GLYD_HUF_MAX_SYMBOL + 1];
    unsigned n = 0, s, i, longest = 0;
    RETURN_ERROR_IF(maxSymbol > GLYD_HUF_MAX_SYMBOL, parameter_outOfBound, "symbol");
    RETURN_ERROR_IF(maxBits == 0 || maxBits > GLYD_HUF_MAX_BITS, parameter_outOfBound, "bits");
    for (s = 0; s <= maxSymbol; s++)
        if (count[s]) { leaves[n].count = count[s]; leaves[n].symbol = s; n++; }
    RETURN_ERROR_IF(n < 2, GENERIC, "a code needs two symbols");
    RETURN_ERROR_IF(n > (1u << maxBits), parameter_outOfBound, "too many symbols for the limit");
    qsort(leaves, n, sizeof(leaves[0]), cmp_leaf);
    package_merge(lengths, leaves, n, maxBits);

    memset(ct->len, 0, sizeof(ct->len));
    memset(ct->code, 0, sizeof(ct->code));
    for (i = 0; i < n; i++) {
        ct->len[leaves[i].symbol] = lengths[i];
        if (lengths[i] > longest) longest = lengths[i];
    }
    ct->maxSymbol = maxSymbol;
    ct->maxBits = longest;
    /* Canonical assignment in the decoder's fill order: longest codes first,
     * then ascending symbols; each code covers 2^(maxBits - len) entries. */
    {
        uint32_t start = 0;
        unsigned l;
        for (l = longest; l >= 1; l--) {
            for (s = 0; s <= maxSymbol; s++) {
                if (ct->len[s] != l) continue;
                ct->code[s] = (uint16_t)(start >> (longest - l));
                start += 1u << (longest - l);
            }
        }
        assert(start == (1u << longest));
    }
    return longest;
}

size_t glyd_hufCost(const glyd_hufCTable* ct, const unsigned* count, unsigned maxSymbol)
{
    size_t bits = 0;
    unsigned s;
    for (s = 0; s <= maxSymbol; s++) {
        if (!count[s]) continue;
        if (s > ct->maxSymbol || ct->len[s] == 0) return SIZE_MAX;
        bits += (size_t)count[s] * ct->len[s];
    }
    return bits;
}

size_t glyd_hufWriteCTable(void* dst, size_t cap, const glyd_hufCTable* ct)
{
    uint8_t* const out = (uint8_t*)dst;
    uint8_t weights[GLYD_HUF_MAX_SYMBOL + 1];
    unsigned const n = ct->maxSymbol; /* weights sent; the last is implied */
    unsigned s;
    RETURN_ERROR_IF(ct->maxSymbol == 0 || ct->len[ct->maxSymbol] == 0, GENERIC,
                    "the largest symbol must be present");
    for (s = 0; s < n; s++)
        weights[s] = ct->len[s] ? (uint8_t)(ct->maxBits + 1 - ct->len[s]) : 0;
    RETURN_ERROR_IF(cap < 2, dstSize_tooSmall, "huffman description");
    out[0] = (uint8_t)ct->maxSymbol;
    {
        size_t const c = glyd_fseCompressBytes(out + 2, GLYD_MIN(cap - 2, 127), weights, n,
                                               GLYD_HUF_MAX_BITS, 6);
        if (!GLYD_IS_ERROR(c) && c > 0 && c < (n + 1) / 2) {
            out[1] = (uint8_t)c;
            return 2 + c;
        }
    }
    /* raw: two weights per byte, low nibble first */
    RETURN_ERROR_IF(cap < 2 + (n + 1) / 2, dstSize_tooSmall, "huffman description");
    out[1] = 0x80;
    for (s = 0; s < n; s += 2) {
        uint8_t const hi = s + 1 < n ? weights[s + 1] : 0;
        out[2 + s / 2] = (uint8_t)(weights[s] | (hi << 4));
    }
    return 2 + (n + 1) / 2;
}

/* Codes src[0..n) into one stream. */
static size_t huf_compress1(uint8_t* dst, size_t cap, const uint8_t* src, size_t n,
                            const glyd_hufCTable* ct)
{
    glyd_bitWriter bw;
    size_t i = n;
    if (cap < 8) return 0;
    glyd_bitWriterInit(&bw, dst, cap);
    /* symbols go in backwards so that the decoder reads them forwards */
    while (i & 3) {
        i--;
        glyd_bitWrite(&bw, ct->code[src[i]], ct->len[src[i]]);
    }
    glyd_bitFlush(&bw);
    while (i > 0) {
        /* four codes of at most 11 bits, plus up to 7 pending, fit in 64 */
        glyd_bitWrite(&bw, ct->code[src[i - 1]], ct->len[src[i - 1]]);
        glyd_bitWrite(&bw, ct->code[src[i - 2]], ct->len[src[i - 2]]);
        glyd_bitWrite(&bw, ct->code[src[i - 3]], ct->len[src[i - 3]]);
        glyd_bitWrite(&bw, ct->code[src[i - 4]], ct->len[src[i - 4]]);
        glyd_bitFlush(&bw);
        i -= 4;
    }
    return glyd_bitWriterClose(&bw);
}

size_t glyd_hufCompress(void* dst, size_t cap, const uint8_t* src, size_t n,
                        const glyd_hufCTable* ct, unsigned nbStreams)
{
    uint8_t* const out = (uint8_t*)dst;
    if (nbStreams == 1) return huf_compress1(out, cap, src, n, ct);
    assert(nbStreams == 4);
    {
        size_t const seg = (n + 3) / 4;
        size_t sizes[4], pos, jump, k;
        uint8_t tmp[3 * GLYD_VARINT_MAX];
        RETURN_ERROR_IF(3 * seg > n, GENERIC, "too few symbols for four streams");
        /* the jump table's size depends on the stream sizes: code the streams
         * after a worst-case gap, then close the gap */
        jump = 3 * 4; /* each stream of a block fits in 4 varint bytes */
        if (cap < jump) return 0;
        pos = jump;
        for (k = 0; k < 4; k++) {
            size_t const len = k < 3 ? seg : n - 3 * seg;
            sizes[k] = huf_compress1(out + pos, cap - pos, src + k * seg, len, ct);
            if (sizes[k] == 0) return 0;
            pos += sizes[k];
        }
        {
            size_t t = 0;
            for (k = 0; k < 3; k++) {
                size_t const w = glyd_writeVarint(tmp + t, sizeof(tmp) - t, sizes[k]);
                RETURN_ERROR_IF(w == 0 || w > 4, GENERIC, "stream too large for its jump table");
                t += w;
            }
            memmove(out + t, out + jump, pos - jump);
            memcpy(out, tmp, t);
            return pos - jump + t;
        }
    }
}

size_t glyd_hufCTableFromDTable(glyd_hufCTable* ct, const glyd_hufDTable* dt)
{
    uint32_t i = 0;
    unsigned s;
    memset(ct, 0, sizeof(*ct));
    ct->maxBits = dt->maxBits;
    /* Each symbol covers a run of 2^(maxBits - len) entries, and its code is
     * the run's first index shifted right by as much (FORMAT section 8.2). */
    while (i < (1u << dt->maxBits)) {
        unsigned const len = dt->entry[i] >> 8;
        s = dt->entry[i] & 0xFF;
        ct->len[s] = (uint8_t)len;
        ct->code[s] = (uint16_t)(i >> (dt->maxBits - len));
        if (s > ct->maxSymbol) ct->maxSymbol = s;
        i += 1u << (dt->maxBits - len);
    }
    return dt->maxBits;
}

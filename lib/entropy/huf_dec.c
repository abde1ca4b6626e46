/* SPDX-License-Identifier: BSD-3-Clause */
/* huf_dec.c: reading Huffman table descriptions and decoding one or four
 * interleaved streams with a single-lookup table. */
#include "entropy.h"

size_t glyd_hufReadDTable(glyd_hufDTable* dt, const void* src, size_t size)
{
    const uint8_t* const in = (const uint8_t*)src;
    uint8_t weights[GLYD_HUF_MAX_SYMBOL + 1];
    unsigned maxSymbol, n, s, maxBits;
    uint32_t total = 0, rest;
    size_t used;
    RETURN_ERROR_IF(size < 2, corruption_detected, "truncated huffman description");
    maxSymbol = in[0];
    n = maxSymbol;
    RETURN_ERROR_IF(maxSymbol == 0, corruption_detected, "a code needs two symbols");
    if (in[1] < 0x80) {
        size_t const c = in[1];
        RETURN_ERROR_IF(c == 0 || 2 + c > size, corruption_detected, "weights size");
        FORWARD_IF_ERROR(glyd_fseDecompressBytes(weights, n, in + 2, c, GLYD_HUF_MAX_BITS, 6));
        used = 2 + c;
    } else {
        RETURN_ERROR_IF(in[1] != 0x80, corruption_detected, "unknown weights format");
        used = 2 + (n + 1) / 2;
        RETURN_ERROR_IF(used > size, corruption_detected, "truncated weights");
        for (s = 0; s < n; s++) weights[s] = (uint8_t)((in[2 + s / 2] >> (4 * (s & 1))) & 15);
    }
    for (s = 0; s < n; s++) {
        RETURN_ERROR_IF(weights[s] > GLYD_HUF_MAX_BITS, corruption_detected, "weight too large");
        if (weights[s]) total += 1u << (weights[s] - 1);
    }
    RETURN_ERROR_IF(total == 0, corruption_detected, "a code needs two symbols");
    /* the implied last weight completes the code to a power of two */
    maxBits = glyd_highbit32(total) + 1;
    RETURN_ERROR_IF(maxBits > GLYD_HUF_MAX_BITS, corruption_detected, "code too long");
    rest = (1u << maxBits) - total;
    RETURN_ERROR_IF(rest & (rest - 1), corruption_detected, "incomplete code");
    weights[maxSymbol] = (uint8_t)(glyd_highbit32(rest) + 1);

    /* fill: ascending weight (longest code first), then ascending symbol;
     * each weight's run starts where the lighter ones end, so one pass over
     * the symbols places every code */
    dt->maxBits = maxBits;
    {
        uint32_t start[GLYD_HUF_MAX_BITS + 2];
        unsigned w;
        memset(start, 0, sizeof(start));
        for (s = 0; s <= maxSymbol; s++)
            if (weights[s]) start[weights[s] + 1] += 1u << (weights[s] - 1);
        for (w = 2; w <= maxBits + 1; w++) start[w] += start[w - 1];
        assert(start[maxBits + 1] == (1u << maxBits));
        for (s = 0; s <= maxSymbol; s++) {
            unsigned const wt = weights[s];
            uint16_t* d;
            uint32_t span, i;
            uint16_t e;
            if (!wt) continue;
            span = 1u << (wt - 1);
            e = (uint16_t)(s | ((maxBits + 1 - wt) << 8));
            d = dt->entry + start[wt];
            start[wt] += span;
            if (span >= 4) {
                uint64_t const e4 = 0x0001000100010001ULL * e;
                for (i = 0; i < span; i += 4) memcpy(d + i, &e4, 8);
            } else {
                for (i = 0; i < span; i++) d[i] = e;
            }
        }
    }
    return used;
}

void glyd_hufBuildPairs(glyd_hufPairs* pairs, const glyd_hufDTable* dt)
{
    unsigned const maxBits = dt->maxBits;
    uint32_t const size = 1u << maxBits, mask = size - 1;
    uint32_t i;
    for (i = 0; i < size; i++) {
        uint16_t const e1 = dt->entry[i];
        unsigned const l1 = e1 >> 8;
        /* the window's bits after the first code, at the top: the second
         * code is known when it is no longer than they are */
        uint16_t const e2 = dt->entry[(i << l1) & mask];
        unsigned const l2 = e2 >> 8;
        pairs->entry[i] = l1 + l2 <= maxBits
                              ? (uint32_t)(e1 & 0xFF) | (uint32_t)(e2 & 0xFF) << 8 | (l1 + l2) << 16 | 2u << 24
                              : (uint32_t)(e1 & 0xFF) | l1 << 16 | 1u << 24;
    }
}

/* Decodes exactly n symbols from one stream. */
GLYD_FORCE_INLINE size_t huf_decode1(uint8_t* dst, size_t n, const uint8_t* src, size_t size,
                          const glyd_hufDTable* dt)
{
    glyd_bitReader br;
    uint8_t* op = dst;
    uint8_t* const oend = dst + n;
    unsigned const maxBits = dt->maxBits;
    const uint16_t* const table = dt->entry;
    FORWARD_IF_ERROR(glyd_bitReaderInit(&br, src, size));
    /* fast: 5 codes of <= 11 bits per refill of >= 57 bits */
    while (oend - op >= 5 && glyd_bitReload(&br) == glyd_bit_unfinished) {
        int k;
        for (k = 0; k < 5; k++) {
            uint16_t const e = table[glyd_bitPeekFast(&br, maxBits)];
            *op++ = (uint8_t)e;
            glyd_bitSkip(&br, e >> 8);
        }
    }
    while (op < oend) {
        uint16_t e;
        RETURN_ERROR_IF(glyd_bitReload(&br) == glyd_bit_overflow, corruption_detected,
                        "huffman stream overread");
        e = table[glyd_bitPeek(&br, maxBits)];
        *op++ = (uint8_t)e;
        glyd_bitSkip(&br, e >> 8);
    }
    glyd_bitReload(&br);
    RETURN_ERROR_IF(!glyd_bitFinished(&br), corruption_detected, "huffman stream size mismatch");
    return n;
}

/* The four streams' fast loop. Each stream lives in two registers: its
 * read position and a 64-bit window, left-aligned, with a sentinel bit set
 * below the stream's bits when they were loaded. Codes shift the window
 * left, so the bits consumed since the load are the sentinel's position (a
 * trailing-zero count): no count to keep, and a symbol costs a shift, a
 * lookup, a store and a shift. Each round decodes 5 codes of <= 11 bits per
 * stream and reloads: the window loses at most 7 + 55 bits, the sentinel
 * stays in it, and a reload moves back at most 7 bytes. Runs as many rounds
 * as every stream's input and output allow, then hands the streams back to
 * the checked loop in the ordinary reader's form. */
GLYD_FORCE_INLINE void huf_fast4(glyd_bitReader br[4], uint8_t* op[4], uint8_t* const oend[4],
                                 const uint16_t* table, const uint32_t* pairs, unsigned maxBits)
{
    /* a round writes 5 symbols per stream, or up to 10 with pairs */
    size_t const perRound = pairs ? 10 : 5;
    unsigned const shift = 64 - maxBits;
    const uint8_t *ip0, *ip1, *ip2, *ip3;
    uint8_t *o0 = op[0], *o1 = op[1], *o2 = op[2], *o3 = op[3];
    uint64_t b0, b1, b2, b3;
    int k;
    for (k = 0; k < 4; k++) {
        if (br[k].ptr - br[k].start < 8) return; /* a short stream: the checked loop */
        glyd_bitReload(&br[k]);                  /* consumed <= 7 now */
    }
    ip0 = br[0].ptr;
    ip1 = br[1].ptr;
    ip2 = br[2].ptr;
    ip3 = br[3].ptr;
    b0 = (glyd_read64(ip0) | 1) << br[0].consumed;
    b1 = (glyd_read64(ip1) | 1) << br[1].consumed;
    b2 = (glyd_read64(ip2) | 1) << br[2].consumed;
    b3 = (glyd_read64(ip3) | 1) << br[3].consumed;
    for (;;) {
        /* rounds that every stream can take: 7 bytes of input, perRound of output */
        size_t n = (size_t)(ip0 - br[0].start) / 7;
        n = GLYD_MIN(n, (size_t)(ip1 - br[1].start) / 7);
        n = GLYD_MIN(n, (size_t)(ip2 - br[2].start) / 7);
        n = GLYD_MIN(n, (size_t)(ip3 - br[3].start) / 7);
        n = GLYD_MIN(n, (size_t)(oend[0] - o0) / perRound);
        n = GLYD_MIN(n, (size_t)(oend[1] - o1) / perRound);
        n = GLYD_MIN(n, (size_t)(oend[2] - o2) / perRound);
        n = GLYD_MIN(n, (size_t)(oend[3] - o3) / perRound);
        if (n == 0) break;
        do {
#define HUF_CODE(b, o)                                 \
    do {                                               \
        uint16_t const e_ = table[(b) >> shift];       \
        *(o)++ = (uint8_t)e_;                          \
        (b) <<= e_ >> 8;                               \
    } while (0)
#define HUF_RELOAD(b, ip)                              \
    do {                                               \
        unsigned const t_ = glyd_lowbit64(b);          \
        (ip) -= t_ >> 3;                               \
        (b) = (glyd_read64(ip) | 1) << (t_ & 7);       \
    } while (0)
#define HUF_PAIR(b, o)                                 \
    do {                                               \
        uint32_t const e_ = pairs[(b) >> shift];       \
        glyd_writeLE16(o, (uint16_t)e_);               \
        (o) += e_ >> 24;                               \
        (b) <<= (e_ >> 16) & 0xFF;                     \
    } while (0)
            int i;
            if (pairs) {
                for (i = 0; i < 5; i++) {
                    HUF_PAIR(b0, o0);
                    HUF_PAIR(b1, o1);
                    HUF_PAIR(b2, o2);
                    HUF_PAIR(b3, o3);
                }
            } else {
                for (i = 0; i < 5; i++) {
                    HUF_CODE(b0, o0);
                    HUF_CODE(b1, o1);
                    HUF_CODE(b2, o2);
                    HUF_CODE(b3, o3);
                }
            }
            HUF_RELOAD(b0, ip0);
            HUF_RELOAD(b1, ip1);
            HUF_RELOAD(b2, ip2);
            HUF_RELOAD(b3, ip3);
#undef HUF_CODE
#undef HUF_PAIR
#undef HUF_RELOAD
        } while (--n);
    }
    {
        const uint8_t* const ips[4] = { ip0, ip1, ip2, ip3 };
        uint64_t const bs[4] = { b0, b1, b2, b3 };
        uint8_t* const os[4] = { o0, o1, o2, o3 };
        for (k = 0; k < 4; k++) {
            /* the window's bits, as the ordinary reader holds them */
            br[k].ptr = ips[k];
            br[k].consumed = glyd_lowbit64(bs[k]);
            br[k].bits = glyd_read64(ips[k]);
            op[k] = os[k];
        }
    }
}

GLYD_FORCE_INLINE size_t huf_decompress_body(uint8_t* dst, size_t dstSize, const void* src, size_t srcSize,
                                              const glyd_hufDTable* dt, const glyd_hufPairs* pairs,
                                              unsigned nbStreams)
{
    const uint8_t* const in = (const uint8_t*)src;
    if (nbStreams == 1) return huf_decode1(dst, dstSize, in, srcSize, dt);
    RETURN_ERROR_IF(nbStreams != 4, corruption_detected, "stream count");
    {
        size_t const seg = (dstSize + 3) / 4;
        size_t sizes[4], pos = 0, k;
        const uint8_t* start[4];
        glyd_bitReader br[4];
        uint8_t* op[4];
        uint8_t* oend[4];
        unsigned const maxBits = dt->maxBits;
        const uint16_t* const table = dt->entry;
        RETURN_ERROR_IF(3 * seg > dstSize, corruption_detected, "too few symbols for four streams");
        for (k = 0; k < 3; k++) {
            uint64_t v;
            size_t const r = glyd_readVarint(in + pos, srcSize - pos, &v);
            RETURN_ERROR_IF(r == 0 || r > 4, corruption_detected, "jump table");
            sizes[k] = (size_t)v;
            pos += r;
        }
        for (k = 0; k < 3; k++) {
            RETURN_ERROR_IF(sizes[k] > srcSize - pos, corruption_detected, "stream sizes");
            start[k] = in + pos;
            pos += sizes[k];
        }
        RETURN_ERROR_IF(pos >= srcSize, corruption_detected, "no last stream");
        start[3] = in + pos;
        sizes[3] = srcSize - pos;
        for (k = 0; k < 4; k++) {
            FORWARD_IF_ERROR(glyd_bitReaderInit(&br[k], start[k], sizes[k]));
            op[k] = dst + k * seg;
            oend[k] = k < 3 ? op[k] + seg : dst + dstSize;
        }
        /* interleaved: four independent dependency chains keep the core busy */
        huf_fast4(br, op, oend, table, pairs ? pairs->entry : NULL, maxBits);
        for (k = 0; k < 4; k++) {
            while (op[k] < oend[k]) {
                uint16_t e;
                RETURN_ERROR_IF(glyd_bitReload(&br[k]) == glyd_bit_overflow, corruption_detected,
                                "huffman stream overread");
                e = table[glyd_bitPeek(&br[k], maxBits)];
                *op[k]++ = (uint8_t)e;
                glyd_bitSkip(&br[k], e >> 8);
            }
            glyd_bitReload(&br[k]);
            RETURN_ERROR_IF(!glyd_bitFinished(&br[k]), corruption_detected,
                            "huffman stream size mismatch");
        }
        return dstSize;
    }
}

static size_t huf_decompress_default(uint8_t* dst, size_t dstSize, const void* src, size_t srcSize,
                                     const glyd_hufDTable* dt, const glyd_hufPairs* pairs, unsigned nbStreams)
{
    return huf_decompress_body(dst, dstSize, src, srcSize, dt, pairs, nbStreams);
}

#if GLYD_DYNAMIC_BMI2
GLYD_TARGET_BMI2 static size_t huf_decompress_bmi2(uint8_t* dst, size_t dstSize, const void* src,
                                                   size_t srcSize, const glyd_hufDTable* dt,
                                                   const glyd_hufPairs* pairs, unsigned nbStreams)
{
    return huf_decompress_body(dst, dstSize, src, srcSize, dt, pairs, nbStreams);
}
#endif

size_t glyd_hufDecompress(uint8_t* dst, size_t dstSize, const void* src, size_t srcSize,
                          const glyd_hufDTable* dt, const glyd_hufPairs* pairs, unsigned nbStreams)
{
#if GLYD_DYNAMIC_BMI2
    if (glyd_cpuHasBmi2()) return huf_decompress_bmi2(dst, dstSize, src, srcSize, dt, pairs, nbStreams);
#endif
    return huf_decompress_default(dst, dstSize, src, srcSize, dt, pairs, nbStreams);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_kernels.h: the work of one GPU thread decoding a bf16 tensor blob
 * (docs/FORMAT.md, "Tensor blobs"), written once for the CUDA kernels
 * (gpu/decode.cu) and for their emulation on the CPU (tests/unit/test_cuda.c):
 * the same unit boundaries, the same table lookups, the same offsets.
 *
 * The host parses and checks a blob (glyd_tensorOpen) before a kernel sees
 * it; whatever the contents then, every read stays inside the blob. A
 * kernel does not diagnose corrupt streams: the blob's checksum does.
 */
#ifndef GLYD_TENSOR_KERNELS_H
#define GLYD_TENSOR_KERNELS_H

#include <stdint.h>
#ifndef __CUDACC__
#  include <assert.h>
#  include <math.h>
#  include <string.h>
#endif

#ifdef __CUDACC__
#  define GK_FN __host__ __device__ __forceinline__
#else
#  define GK_FN static inline
#endif

#define GK_LAYOUT_STORED  0  /* plain bf16: the GPU engine's uncoded weights */
#define GK_LAYOUT_HUFFMAN 2
#define GK_LAYOUT_FAST    3
#define GK_SPLIT_JOINT    1
#define GK_HUF_MAX_BITS   11
#define GK_STREAM_PAD     8  /* zero bytes after a Huffman blob's streams */

/* What a kernel needs of a bf16 blob: sizes, small tables, and where each
 * part lies (byte offsets from the blob's start). */
typedef struct gk_tensor_s {
    uint64_t nbElements, nbUnits;
    uint32_t unitSize;
    uint32_t layout, split;
    uint32_t maxBits;               /* Huffman: the longest code */
    uint32_t symBase;               /* joint split: the smallest exponent */
    uint8_t fastSymbols[8];         /* fast: code -> exponent; code 7 (escape) -> 0 */
    uint32_t codeForm;              /* fast: GK_CODES_PLANES as coded, or GK_CODES_NIBBLES */
    uint64_t planes;                /* sign and mantissa: bytes, or 7-bit fields (joint) */
    uint64_t ends;                  /* u32 per unit: stream ends (Huffman), escapes so far (fast) */
    uint64_t streams, streamBytes;  /* Huffman */
    uint64_t codePlanes, escapes;   /* fast */
    uint64_t blobSize;
} gk_tensor;

GK_FN unsigned gk_popc(uint32_t m)
{
#ifdef __CUDA_ARCH__
    return (unsigned)__popc(m);
#else
    return (unsigned)__builtin_popcount(m);
#endif
}

GK_FN float gk_bits_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

GK_FN uint32_t gk_read16(const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
GK_FN uint32_t gk_read32(const uint8_t* p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#ifndef __CUDACC__
/* A warp's shuffle butterfly (xor 16, 8, 4, 2, 1), for the emulations:
 * every lane ends with the same sum, added in the same order. */
static inline float gk_butterfly_emulated(float lane[32])
{
    float next[32];
    unsigned m, j;
    for (m = 16; m; m >>= 1) {
        for (j = 0; j < 32; j++) next[j] = lane[j] + lane[j ^ m];
        memcpy(lane, next, sizeof next);
    }
    return lane[0];
}
#endif

/* The end of unit u's elements (the last unit may be short). */
GK_FN uint64_t gk_unit_end(const gk_tensor* t, uint64_t u)
{
    uint64_t const b = (u + 1) * t->unitSize;
    return b < t->nbElements ? b : t->nbElements;
}

/* Escapes before unit u (the fast layout), or where its stream starts. */
GK_FN uint64_t gk_unit_start(const uint8_t* blob, const gk_tensor* t, uint64_t u)
{
    return u ? gk_read32(blob + t->ends + 4 * (u - 1)) : 0;
}

/* ------------------------------------------------------------------------ */
/* The codes' two forms                                                      */
/* ------------------------------------------------------------------------ */
/*
 * A fast-layout blob holds each group's 3-bit codes as three bit planes
 * (bit j of word b: bit b of element j's code), which SIMD lanes read one
 * element each. A GPU thread that rebuilds a whole group wants them as
 * nibbles, the selectors of a byte permutation, so the GPU backend rewrites
 * the codes of a blob it uploads into a second form of the same 12 bytes
 * (gk_nibble_group, once, in place):
 *   word 0, nibble i: the code of element i, and bit 0 of element 24 + i's;
 *   word 1, nibble i: the code of element 8 + i, and bit 1 of 24 + i's;
 *   word 2, nibble i: the code of element 16 + i, and bit 2 of 24 + i's
 * (each code in the nibble's low 3 bits, the borrowed bit in its top bit).
 * A group's escapes are then ranked in the order of its escape mask's bits,
 * bit 4i + k for element 8k + i, and their bytes are reordered to match.
 * Both forms are read by every kernel here; the nibble form needs units of
 * whole groups, and ranges [a, b) that cut no group.
 */
#define GK_CODES_PLANES  0
#define GK_CODES_NIBBLES 1

/* The bit of element j in a nibble-form escape mask, and back. */
GK_FN unsigned gk_nibble_bit(unsigned j) { return 4 * (j & 7) + (j >> 3); }
GK_FN unsigned gk_nibble_element(unsigned b) { return 8 * (b & 3) + (b >> 2); }

/* Bit i of a byte at bit 4i: one byte of a code plane, as the nibbles of 8
 * elements. */
GK_FN uint32_t gk_nibbles(uint32_t b)
{
    b = (b | b << 12) & 0x000F000Fu;
    b = (b | b << 6) & 0x03030303u;
    return (b | b << 3) & 0x11111111u;
}

/* A group's code words in the nibble form as selectors: sel[k] holds the
 * codes of elements 8k .. 8k + 7, one a nibble. */
GK_FN void gk_nibble_selectors(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t sel[4])
{
    sel[0] = w0 & 0x77777777u;
    sel[1] = w1 & 0x77777777u;
    sel[2] = w2 & 0x77777777u;
    sel[3] = ((w0 >> 3) & 0x11111111u) | ((w1 >> 2) & 0x22222222u) | ((w2 >> 1) & 0x44444444u);
}

/* The escapes (code 7) of a group, from its code words in the nibble form:
 * bit 4i + k for element 8k + i, where the code's three bits are set
 * (from the words themselves, each bit lined up where the mask wants it:
 * some 14 instructions on the GPU, where through the selectors, shifted
 * back into place, the compiler made 30). */
GK_FN uint32_t gk_nibble_escapes(uint32_t w0, uint32_t w1, uint32_t w2)
{
    return (w0 & w0 >> 1 & w0 >> 2 & 0x11111111u) | (w1 << 1 & w1 & w1 >> 1 & 0x22222222u) |
           (w2 << 2 & w2 << 1 & w2 & 0x44444444u) | (w0 & w1 & w2 & 0x88888888u);
}

/* Element j's code from a group's three code words, in either form. */
GK_FN unsigned gk_code(const gk_tensor* t, uint32_t w0, uint32_t w1, uint32_t w2, unsigned j)
{
    if (t->codeForm == GK_CODES_NIBBLES) {
        unsigned const at = 4 * (j & 7);
        if (j < 24) return ((j < 8 ? w0 : j < 16 ? w1 : w2) >> at) & 7;
        return ((w0 >> (at + 3)) & 1) | ((w1 >> (at + 3)) & 1) << 1 | ((w2 >> (at + 3)) & 1) << 2;
    }
    return ((w0 >> j) & 1) | ((w1 >> j) & 1) << 1 | ((w2 >> j) & 1) << 2;
}

/* The bit of element j in a group's escape mask, in either form. */
GK_FN unsigned gk_code_bit(const gk_tensor* t, unsigned j)
{
    return t->codeForm == GK_CODES_NIBBLES ? gk_nibble_bit(j) : j;
}

/* A mask of elements (bit j for element j) in the order of the form's
 * escape masks. */
GK_FN uint32_t gk_form_mask(const gk_tensor* t, uint32_t lanes)
{
    uint32_t r = 0;
    unsigned j;
    if (t->codeForm != GK_CODES_NIBBLES || lanes == 0xFFFFFFFFu || lanes == 0) return lanes;
    for (j = 0; j < 32; j++) r |= ((lanes >> j) & 1) << gk_nibble_bit(j);
    return r;
}

/* Group g rewritten from bit planes into the nibble form, in place, its
 * escapes (numbers esc on, all before nbEsc, or left as they are: a
 * corrupt count) reordered to match. */
GK_FN void gk_nibble_group(uint8_t* blob, const gk_tensor* t, uint64_t g, uint64_t esc, uint64_t nbEsc)
{
    uint8_t* const p = blob + t->codePlanes + 12 * g;
    uint32_t const w0 = gk_read32(p), w1 = gk_read32(p + 4), w2 = gk_read32(p + 8);
    uint32_t const m = w0 & w1 & w2;
    uint32_t n[4], out[3], s = 0;
    unsigned k, j;
    for (k = 0; k < 4; k++)
        n[k] = gk_nibbles((w0 >> 8 * k) & 0xFF) | gk_nibbles((w1 >> 8 * k) & 0xFF) << 1 |
               gk_nibbles((w2 >> 8 * k) & 0xFF) << 2;
    out[0] = n[0] | (n[3] & 0x11111111u) << 3;
    out[1] = n[1] | (n[3] & 0x22222222u) << 2;
    out[2] = n[2] | (n[3] & 0x44444444u) << 1;
    for (k = 0; k < 12; k++) p[k] = (uint8_t)(out[k >> 2] >> 8 * (k & 3));
    for (j = 0; j < 32; j++) s |= ((m >> j) & 1) << gk_nibble_bit(j);
    if (m && esc + gk_popc(m) <= nbEsc) {
        uint8_t old[32];
        unsigned const c = gk_popc(m);
        for (k = 0; k < c; k++) old[k] = blob[t->escapes + esc + k];
        for (j = 0; j < 32; j++)
            if ((m >> j) & 1)
                blob[t->escapes + esc + gk_popc(s & ((1u << gk_nibble_bit(j)) - 1))] =
                    old[gk_popc(m & ((1u << j) - 1))];
    }
}

/* ------------------------------------------------------------------------ */
/* The fast layout: one thread per group of 32 elements                     */
/* ------------------------------------------------------------------------ */

/* The lanes of group g that lie in elements [a, b). */
GK_FN uint32_t gk_lanes(uint64_t g, uint64_t a, uint64_t b)
{
    uint64_t const lo = a > 32 * g ? a - 32 * g : 0;
    uint64_t const hi = b < 32 * g + 32 ? b - 32 * g : 32;
    uint32_t const upto = hi >= 32 ? 0xFFFFFFFFu : (1u << hi) - 1;
    return lo >= hi ? 0 : upto & ~((1u << lo) - 1);
}

/* A group's code words, read once for all its elements. */
typedef struct {
    uint32_t w0, w1, w2;
    uint32_t escapes;   /* those within the range asked for, in the form's order */
} gk_group_codes;

/* Group g's code words, and its escapes within [a, b). */
GK_FN gk_group_codes gk_fast_codes(const uint8_t* blob, const gk_tensor* t, uint64_t g, uint64_t a, uint64_t b)
{
    const uint8_t* const p = blob + t->codePlanes + 12 * g;
    gk_group_codes c;
    c.w0 = gk_read32(p);
    c.w1 = gk_read32(p + 4);
    c.w2 = gk_read32(p + 8);
    c.escapes = t->codeForm == GK_CODES_NIBBLES ? gk_nibble_escapes(c.w0, c.w1, c.w2) : c.w0 & c.w1 & c.w2;
    c.escapes &= gk_form_mask(t, gk_lanes(g, a, b));
    return c;
}

/* The escapes of group g within [a, b), as a mask in the form's order: a
 * thread's count for the block's prefix sum. */
GK_FN uint32_t gk_fast_escapes(const uint8_t* blob, const gk_tensor* t, uint64_t g, uint64_t a, uint64_t b)
{
    return gk_fast_codes(blob, t, g, a, b).escapes;
}

/* Element j of group g (codes c) as bf16 bits: esc is the escape number of
 * the group's first escape in the range c was read for. */
GK_FN uint32_t gk_fast_element(const uint8_t* blob, const gk_tensor* t, uint64_t g, const gk_group_codes* c,
                               unsigned j, uint64_t esc, uint64_t nbEsc)
{
    unsigned const code = gk_code(t, c->w0, c->w1, c->w2, j);
    unsigned const r = blob[t->planes + 32 * g + j];
    unsigned e = t->fastSymbols[code];
    if (code == 7) {
        /* the escapes ranked before j's come first */
        esc += gk_popc(c->escapes & ((1u << gk_code_bit(t, j)) - 1));
        e = esc < nbEsc ? blob[t->escapes + esc] : 0;
    }
    return (r & 0x80) << 8 | e << 7 | (r & 0x7F);
}

/* Group g's elements within [a, b) into out (element i at out[i - origin]),
 * its escapes from escape number esc on (never past nbEsc). */
GK_FN void gk_fast_group(const uint8_t* blob, const gk_tensor* t, uint64_t g, uint64_t a, uint64_t b,
                         uint64_t esc, uint64_t nbEsc, uint16_t* out, uint64_t origin)
{
    gk_group_codes const c = gk_fast_codes(blob, t, g, a, b);
    uint32_t const lanes = gk_lanes(g, a, b);
    unsigned j;
    for (j = 0; j < 32; j++)
        if ((lanes >> j) & 1) out[32 * g + j - origin] = (uint16_t)gk_fast_element(blob, t, g, &c, j, esc, nbEsc);
}

/* The escapes of elements [a, b) (whole groups or parts), counted. */
GK_FN uint64_t gk_fast_count(const uint8_t* blob, const gk_tensor* t, uint64_t a, uint64_t b)
{
    uint64_t g, n = 0;
    if (a >= b) return 0;
    for (g = a >> 5; g <= (b - 1) >> 5; g++) n += gk_popc(gk_fast_escapes(blob, t, g, a, b));
    return n;
}

/* Lane j's element of group g (element 32g + j, within [a, b)) as a float's
 * bits, in a warp that reads the group together: esc is the escape number
 * of the group's first escape in [a, b). 0 for a lane outside. */
GK_FN uint32_t gk_fast_lane(const uint8_t* blob, const gk_tensor* t, uint64_t g, unsigned j, uint64_t a,
                            uint64_t b, uint64_t esc, uint64_t nbEsc)
{
    gk_group_codes c;
    if (!((gk_lanes(g, a, b) >> j) & 1)) return 0;
    c = gk_fast_codes(blob, t, g, a, b);
    return gk_fast_element(blob, t, g, &c, j, esc, nbEsc) << 16;
}

/* The same for a matrix read by products, coded in the fast layout or
 * plain (stored: bf16 values, no escapes), so that one kernel multiplies
 * both in the same order. */
GK_FN uint32_t gk_escapes(const uint8_t* blob, const gk_tensor* t, uint64_t g, uint64_t a, uint64_t b)
{
    return t->layout == GK_LAYOUT_STORED ? 0 : gk_fast_escapes(blob, t, g, a, b);
}

GK_FN uint32_t gk_lane(const uint8_t* blob, const gk_tensor* t, uint64_t g, unsigned j, uint64_t a, uint64_t b,
                       uint64_t esc, uint64_t nbEsc)
{
    if (t->layout != GK_LAYOUT_STORED) return gk_fast_lane(blob, t, g, j, a, b, esc, nbEsc);
    if (!((gk_lanes(g, a, b) >> j) & 1)) return 0;
#ifdef __CUDA_ARCH__
    /* device memory is aligned and little-endian: one 16-bit load, as any
     * bf16 kernel makes, so that plain weights are not slowed down */
    return (uint32_t)((const uint16_t*)(const void*)blob)[32 * g + j] << 16;
#else
    return gk_read16(blob + 2 * (32 * g + j)) << 16;
#endif
}

/* Escapes before unit u (0 for plain data). */
GK_FN uint64_t gk_escapes_before(const uint8_t* blob, const gk_tensor* t, uint64_t u)
{
    return t->layout == GK_LAYOUT_STORED ? 0 : gk_unit_start(blob, t, u);
}

/* ------------------------------------------------------------------------ */
/* The fast layout's product: a block per unit, items for its warps          */
/* ------------------------------------------------------------------------ */

#define GK_GEMV_MAX_ITEMS 512 /* (segment, chunk) items of one unit */

/* A unit's plan: its segments (whole rows, or the unit as a part of a long
 * row), each cut into `chunks` runs of groups so that a unit with fewer
 * segments than warps still keeps them all busy. */
typedef struct {
    uint64_t a, b;          /* the unit's elements */
    uint64_t nbSeg, chunks, nbItems;
    uint64_t firstRow;      /* whole rows: the unit's first row */
    uint64_t segLen;        /* elements per segment */
    int whole;
} gk_gemv_unit;

/* Units of whole rows, few enough per unit, or even parts of rows. */
GK_FN int gk_gemv_fits(const gk_tensor* t, uint64_t cols)
{
    if (cols == 0 || t->unitSize == 0) return 0;
    if (t->unitSize >= cols) return t->unitSize % cols == 0 && t->unitSize / cols <= GK_GEMV_MAX_ITEMS;
    return cols % t->unitSize == 0;
}

GK_FN gk_gemv_unit gk_gemv_plan(const gk_tensor* t, uint64_t u, uint64_t cols, unsigned warps)
{
    gk_gemv_unit g;
    g.a = u * t->unitSize;
    g.b = gk_unit_end(t, u);
    g.whole = t->unitSize >= cols;
    g.segLen = g.whole ? cols : g.b - g.a;
    g.nbSeg = g.whole ? (g.b - g.a) / cols : 1;
    g.firstRow = g.a / cols;
    g.chunks = g.nbSeg >= warps ? 1 : warps / g.nbSeg;
    g.nbItems = g.nbSeg * g.chunks;
    return g;
}

/* Item it's elements [*ia, *ib): chunk c of segment s, a run of whole
 * groups of the segment (the first and last cut by the segment's ends). */
GK_FN void gk_gemv_item(const gk_gemv_unit* g, uint64_t it, uint64_t* ia, uint64_t* ib)
{
    uint64_t const s = it / g->chunks, c = it % g->chunks;
    uint64_t const sa = g->a + s * g->segLen, sb = sa + g->segLen;
    uint64_t const g0 = sa >> 5, nbGroups = ((sb - 1) >> 5) - g0 + 1;
    uint64_t const c0 = g0 + nbGroups * c / g->chunks, c1 = g0 + nbGroups * (c + 1) / g->chunks;
    *ia = 32 * c0 > sa ? 32 * c0 : sa;
    *ib = 32 * c1 < sb ? 32 * c1 : sb;
    if (*ib < *ia) *ib = *ia;
}

/* ------------------------------------------------------------------------ */
/* The Huffman layout: one thread per unit                                  */
/* ------------------------------------------------------------------------ */

/* A stream's bits, most significant first, from a 64-bit register that
 * takes 32 more whenever fewer are left: a read of memory per 32 bits,
 * rather than one per symbol that waits on the symbol before; and the word
 * it takes is read one refill ahead, so that its wait overlaps the symbols
 * decoded meanwhile. Words are read at multiples of 4 bytes from the
 * blob's start (aligned on the device, whose allocations are), the first
 * from before the bit asked for; a word wholly past the region's zero
 * padding reads 0, so that every read stays inside the blob whatever a
 * corrupt stream says. */
typedef struct {
    uint64_t buf;   /* the next bits, from bit 63 down */
    uint64_t next;  /* the blob offset of the word after `ahead` */
    uint32_t ahead; /* the word the next refill takes */
    unsigned avail; /* bits of buf still to take: 32 or more between symbols */
} gk_bits;

/* The 32 bits at blob offset at (a multiple of 4), first byte highest. On
 * the device, one aligned load: the launchers take Huffman blobs only at
 * 4-byte aligned addresses (device allocations are; gk_huf_blob_aligned),
 * as testing the address on every refill, and reading byte by byte where
 * it fails, cost a third of a refill (predicated, a warp's lanes refilling
 * at different lookups). */
#define gk_huf_blob_aligned(blob) (((uintptr_t)(blob) & 3) == 0)
GK_FN uint32_t gk_word_be(const uint8_t* p)
{
#ifdef __CUDA_ARCH__
    return __byte_perm(__ldg((const uint32_t*)(const void*)p), 0, 0x0123);
#else
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
#endif
}

/* The end of the stream region and its padding. */
GK_FN uint64_t gk_stream_limit(const gk_tensor* t) { return t->streams + t->streamBytes + GK_STREAM_PAD; }

GK_FN uint32_t gk_stream_word(const uint8_t* blob, const gk_tensor* t, uint64_t at)
{
    return at + 4 <= gk_stream_limit(t) ? gk_word_be(blob + at) : 0;
}

/* The stream region's bits from bit `bit` on. */
GK_FN gk_bits gk_bits_at(const uint8_t* blob, const gk_tensor* t, uint64_t bit)
{
    uint64_t const byte = t->streams + (bit >> 3), at = byte & ~(uint64_t)3;
    unsigned const skip = (unsigned)(8 * (byte - at) + (bit & 7));
    gk_bits r;
    r.buf = ((uint64_t)gk_stream_word(blob, t, at) << 32 | gk_stream_word(blob, t, at + 4)) << skip;
    r.avail = 64 - skip;
    r.ahead = gk_stream_word(blob, t, at + 8);
    r.next = at + 12;
    return r;
}

/* n bits taken (n <= 32). */
GK_FN void gk_bits_skip(gk_bits* r, const uint8_t* blob, const gk_tensor* t, unsigned n)
{
    r->buf <<= n;
    r->avail -= n;
    if (r->avail < 32) {
        r->buf |= (uint64_t)r->ahead << (32 - r->avail);
        r->avail += 32;
        r->ahead = gk_stream_word(blob, t, r->next);
        r->next += 4;
    }
}

/* The stream region's bit where r's next bit is. */
GK_FN uint64_t gk_bits_position(const gk_bits* r, const gk_tensor* t)
{
    return 8 * (r->next - 4 - t->streams) - r->avail;
}

/* Element i's bits kept beside its symbol: sign and mantissa (plain), or
 * sign and 6 low mantissa bits (joint split). */
GK_FN unsigned gk_huffman_field(const uint8_t* blob, const gk_tensor* t, uint64_t i)
{
    uint64_t const fb = 7 * i;
    if (t->split == GK_SPLIT_JOINT) return (gk_read16(blob + t->planes + (fb >> 3)) >> (fb & 7)) & 0x7F;
    return blob[t->planes + i];
}

/* An element from its symbol and field. */
GK_FN uint16_t gk_huffman_element(const gk_tensor* t, unsigned s, unsigned f)
{
    if (t->split == GK_SPLIT_JOINT) {
        /* symbol: exponent - base, top mantissa bit; field: sign, 6 low mantissa bits */
        unsigned const e = (t->symBase + (s >> 1)) & 0xFF;
        return (uint16_t)((f >> 6) << 15 | e << 7 | (s & 1) << 6 | (f & 0x3F));
    }
    return (uint16_t)((f & 0x80) << 8 | s << 7 | (f & 0x7F));
}

/* The next symbol, through the one-symbol decoding table (symbol | length
 * << 8, indexed by the next maxBits bits). */
GK_FN unsigned gk_huffman_next(gk_bits* r, const uint8_t* blob, const gk_tensor* t, const uint16_t* table)
{
    uint32_t const d = table[r->buf >> (64 - t->maxBits)];
    unsigned const len = d >> 8;
    gk_bits_skip(r, blob, t, len ? len : 1); /* a hole in a corrupt table still moves on */
    return d & 0xFF;
}

/* Elements [i0, i1) of a stream whose first symbol starts at bit `bit`:
 * those in [lo, hi) into out[i - origin]. Returns the bit after the last
 * symbol. */
GK_FN uint64_t gk_huffman_run(const uint8_t* blob, const gk_tensor* t, const uint16_t* table, uint64_t bit,
                              uint64_t i0, uint64_t i1, uint64_t lo, uint64_t hi, uint16_t* out, uint64_t origin)
{
    gk_bits r = gk_bits_at(blob, t, bit);
    int const keep = lo < hi && i0 < i1;
    unsigned next = keep ? gk_huffman_field(blob, t, i0) : 0;
    uint64_t i;
    for (i = i0; i < i1; i++) {
        unsigned const f = next, s = gk_huffman_next(&r, blob, t, table);
        /* the next element's field read a symbol ahead, so that its wait
         * overlaps the next decoding */
        if (keep && i + 1 < i1) next = gk_huffman_field(blob, t, i + 1);
        if (i >= lo && i < hi) out[i - origin] = gk_huffman_element(t, s, f);
    }
    return gk_bits_position(&r, t);
}

/* The products' decoding table: up to 3 symbols a lookup. Entry v (the
 * next maxBits bits) holds the codes that lie wholly within v, in order,
 * as the one-symbol table decodes them one after another (a hole in a
 * corrupt table, which moves on 1 bit, only as an entry's first code, and
 * last): symbols in bits 0-23, their count in bits 24-25, their bits in
 * bits 26-29. */
#define GK_HUF_MULTI 3
GK_FN uint32_t gk_huf_multi_entry(const uint16_t* table, unsigned maxBits, uint32_t v)
{
    uint32_t const mask = (1u << maxBits) - 1;
    uint32_t e = 0;
    unsigned n = 0, used = 0;
    while (n < GK_HUF_MULTI) {
        uint32_t const d = table[(v << used) & mask];
        unsigned const len = d >> 8;
        if (n && (!len || used + len > maxBits)) break;
        e |= (d & 0xFF) << 8 * n++;
        used += len ? len : 1;
        if (!len) break;
    }
    return e | (uint32_t)n << 24 | (uint32_t)used << 26;
}

/* The Huffman layout's decoding tables as the kernels take them, both
 * built once on the host (glyd_tensorDescribe) and kept beside the blob:
 * the multi-symbol table of the products and the bulk decode, and the
 * one-symbol table of the element-by-element paths. The one-symbol
 * table's first 2^maxBits entries are used; the multi-symbol table is
 * indexed by the next GK_HUF_MAX_BITS bits whatever maxBits (shorter codes
 * decode alike from a longer window), so that its lookups shift by a
 * constant, and all of it is used. Built by each block instead, the
 * multi-symbol table took about 65 instructions an entry (sm_90 SASS),
 * 2048 entries a block, before every product could start: some 2 us of
 * each multiprocessor at 4 blocks, against a product of 5 to 10 us. Kept,
 * it costs 8 KiB a matrix (about 2 MiB for an 8B model's 225, 0.0001 of
 * its bf16 weights). */
typedef struct gk_huf_tables_s {
    uint32_t multi[1 << GK_HUF_MAX_BITS];
    uint16_t one[1 << GK_HUF_MAX_BITS];
} gk_huf_tables;

/* Symbols only, for the products (which add the planes a group at a
 * time): those of elements [i0, i1) (a run: GK_HUF_RUN at most) into
 * out[i - origin], a byte each, through the multi-symbol table (the same
 * symbols as one at a time). The stream's next 64 bits are held whole, a
 * word more read ahead, and each lookup takes its bits at a position in
 * them, under 32 before a pair of lookups: two lookups, 22 bits at most,
 * go to each test for a refill (its test and branch were half the loop
 * with one), and a refill moves words where a reader of the next bits
 * shifts all 64. The symbols are gathered in a register and stored a
 * 32-bit word at a time (out + (i0 - origin) at a multiple of 4): stored
 * a byte at a time, 3 bytes a lookup whatever its count, the lanes of a
 * warp, each at its own place in its own run, wrote to the same banks of
 * shared memory some 3 times a store, and the decoding waited on shared
 * memory twice as long as on its instructions. The second lookup of a
 * pair is made even when the first ended the run, and the last word is
 * stored whole: bytes past the run's end fall in the GK_HUF_SYMBOLS_SLACK
 * bytes after it that out must have room for. */
#define GK_HUF_SYMBOLS_SLACK (2 * GK_HUF_MULTI - 1 + 3)

/* The bits of v << n (n < 32) past the low 32. */
GK_FN uint32_t gk_shifted_out(uint32_t v, unsigned n)
{
#ifdef __CUDA_ARCH__
    return __funnelshift_l(v, 0, n);
#else
    return n ? v >> (32 - n) : 0;
#endif
}

GK_FN void gk_store32(uint8_t* p, uint32_t v)
{
#ifdef __CUDA_ARCH__
    *(uint32_t*)(void*)p = v; /* little-endian, aligned */
#else
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
#endif
}

/* A lookup's symbols (entry e) after the `fill` bits of symbols held in
 * *word: a whole word stored at *o once there is one. Returns their bits. */
GK_FN unsigned gk_symbols_append(uint32_t e, uint32_t* word, unsigned* fill, uint8_t** o)
{
    uint32_t const s = e & 0xFFFFFFu;
    uint32_t const over = gk_shifted_out(s, *fill);
    unsigned const bits = (e >> 21) & 0x18; /* 8 a symbol */
    *word |= s << *fill;
    *fill += bits;
    if (*fill >= 32) {
        gk_store32(*o, *word);
        *o += 4;
        *word = over;
        *fill -= 32;
    }
    return bits;
}

GK_FN void gk_huffman_symbols(const uint8_t* blob, const gk_tensor* t, const uint32_t* multi, uint64_t bit,
                              uint64_t i0, uint64_t i1, uint8_t* out, uint64_t origin)
{
    uint64_t const byte = t->streams + (bit >> 3), at = byte & ~(uint64_t)3, limit = gk_stream_limit(t);
    uint64_t win = (uint64_t)gk_stream_word(blob, t, at) << 32 | gk_stream_word(blob, t, at + 4);
    uint32_t ahead = gk_stream_word(blob, t, at + 8);
    /* the next word's place, and how many whole words the region has from
     * there on: counted down (a run takes far fewer than 2^30) rather than
     * each place tested against the region's end, a 64-bit compare */
    const uint8_t* next = blob + at + 12;
    uint64_t const room = at + 16 <= limit ? (limit - at - 12) / 4 : 0;
    int words = room < 0x40000000u ? (int)room : 0x40000000;
    unsigned pos = (unsigned)(8 * (byte - at) + (bit & 7)); /* under 32 between lookup pairs */
    uint8_t* o = out + (i0 - origin);
    int left = 8 * (int)(i1 - i0); /* bits of symbols still to decode */
#ifndef __CUDACC__
    /* what the device's word stores need, held on the CPU too, where
     * bytes are stored one by one and would not show it; and a count that
     * `left` holds */
    assert(((uintptr_t)o & 3) == 0 && i1 - i0 < (1u << 27));
#endif
    unsigned const shift = 32 - GK_HUF_MAX_BITS;
    uint32_t word = 0;
    unsigned fill = 0; /* bits of word that hold symbols: fewer than 32 */
    while (left > 0) {
        /* GK_HUF_MAX_BITS bits at pos, then after the first lookup's (an
         * entry's bits are 11 at most: 31 + 11 + 11 < 64) */
        uint32_t const e0 = multi[(uint32_t)((win << pos) >> 32) >> shift];
        unsigned const p1 = pos + (e0 >> 26);
        uint32_t const e1 = multi[(uint32_t)((win << p1) >> 32) >> shift];
        left -= (int)gk_symbols_append(e0, &word, &fill, &o);
        left -= (int)gk_symbols_append(e1, &word, &fill, &o);
        pos = p1 + (e1 >> 26);
        if (pos >= 32) {
            win = win << 32 | ahead;
            ahead = words-- > 0 ? gk_word_be(next) : 0;
            next += 4;
            pos -= 32;
        }
    }
    if (fill) gk_store32(o, word);
}

/* Unit u into out (indexed by element). */
GK_FN void gk_huffman_unit(const uint8_t* blob, const gk_tensor* t, const uint16_t* table, uint64_t u,
                           uint16_t* out)
{
    uint64_t const a = u * t->unitSize;
    uint64_t const b = gk_unit_end(t, u);
    gk_huffman_run(blob, t, table, 8 * gk_unit_start(blob, t, u), a, b, a, b, out, 0);
}

/* ------------------------------------------------------------------------ */
/* The Huffman layout in products: runs that threads decode side by side    */
/* ------------------------------------------------------------------------ */
/*
 * For products, a unit is decoded into shared memory by many threads at
 * once: each takes a run of GK_HUF_RUN elements, which starts at the bit
 * that an index built at upload gives (glyd_tensorHuffmanRuns: a u16 per
 * run but a unit's first, bits from the unit's start; at most 16 bits per
 * GK_HUF_RUN elements, 1/16 bit a weight). The rows kernel decodes the
 * symbols only and adds the planes a group at a time; the general kernel
 * decodes whole elements and reads them in the fast layout's order: every
 * layout sums alike.
 */
#define GK_HUF_RUN      256
#define GK_HUF_UNIT_MAX 8192   /* elements of a unit the products decode whole */

GK_FN uint64_t gk_huf_runs_per_unit(const gk_tensor* t) { return (t->unitSize + GK_HUF_RUN - 1) / GK_HUF_RUN; }

/* A unit's symbols as the rows kernel holds them in shared memory: run k
 * from byte k * GK_HUF_SLOT. Lanes write their runs side by side; 256
 * bytes apart, every lane's byte would fall in the same bank, and the
 * writes go one lane at a time; 16 more keep them in 8 banks, and groups
 * 16-byte aligned (and give gk_huffman_symbols its slack). */
#define GK_HUF_SLOT (GK_HUF_RUN + 16)
typedef char gk_huf_slot_has_slack[GK_HUF_SLOT - GK_HUF_RUN >= GK_HUF_SYMBOLS_SLACK ? 1 : -1];
/* and slots stay 16-byte aligned: gk_huffman_symbols stores whole words,
 * and the products read a group's symbols in 16-byte loads */
typedef char gk_huf_slot_is_aligned[GK_HUF_SLOT % 16 == 0 ? 1 : -1];

GK_FN uint64_t gk_huf_unit_bytes(const gk_tensor* t) { return gk_huf_runs_per_unit(t) * GK_HUF_SLOT; }

/* Where the symbol of a unit's element o lies in its slots. */
GK_FN uint64_t gk_huf_slot_offset(uint64_t o) { return o / GK_HUF_RUN * GK_HUF_SLOT + o % GK_HUF_RUN; }

/* Units the rows kernel's warp decodes at once, so that each of its 32
 * lanes has a run where units have fewer: 32 runs at most. */
GK_FN unsigned gk_huf_units_together(const gk_tensor* t)
{
    uint64_t const rpu = gk_huf_runs_per_unit(t);
    return rpu >= 32 ? 1 : (unsigned)(32 / rpu);
}

/* Entries of the run index: every run of every unit but the first, which
 * starts with the unit. */
GK_FN uint64_t gk_huf_index_size(const gk_tensor* t) { return t->nbUnits * (gk_huf_runs_per_unit(t) - 1); }

/* Whether the products take a Huffman blob: each unit decoded whole into
 * shared memory, a run a lane, through the run index (hasRuns) wherever a
 * unit has more than one run. */
GK_FN int gk_huf_products_fit(const gk_tensor* t, int hasRuns)
{
    return t->unitSize <= GK_HUF_UNIT_MAX && (hasRuns || gk_huf_index_size(t) == 0);
}

/* The elements [i0, i1) of run k of unit u. */
GK_FN void gk_huf_run_span(const gk_tensor* t, uint64_t u, uint64_t k, uint64_t* i0, uint64_t* i1)
{
    uint64_t const a = u * t->unitSize;
    uint64_t const b = gk_unit_end(t, u);
    *i0 = a + k * GK_HUF_RUN < b ? a + k * GK_HUF_RUN : b;
    *i1 = *i0 + GK_HUF_RUN < b ? *i0 + GK_HUF_RUN : b;
}

/* The bit where run k of unit u starts. */
GK_FN uint64_t gk_huf_run_bit(const uint8_t* blob, const gk_tensor* t, const uint16_t* runs, uint64_t u, uint64_t k)
{
    return 8 * gk_unit_start(blob, t, u) + (k ? runs[u * (gk_huf_runs_per_unit(t) - 1) + k - 1] : 0);
}

/* Where run k of unit u starts: its elements [i0, i1), its first bit. */
GK_FN uint64_t gk_huf_run_at(const uint8_t* blob, const gk_tensor* t, const uint16_t* runs, uint64_t u, uint64_t k,
                             uint64_t* i0, uint64_t* i1)
{
    gk_huf_run_span(t, u, k, i0, i1);
    return gk_huf_run_bit(blob, t, runs, u, k);
}

/* Run k of unit u (elements [u * unitSize + k * GK_HUF_RUN, ...)) into
 * out[i - origin]; those in [lo, hi) only. */
GK_FN void gk_huf_unit_run(const uint8_t* blob, const gk_tensor* t, const uint16_t* table, const uint16_t* runs,
                           uint64_t u, uint64_t k, uint64_t lo, uint64_t hi, uint16_t* out, uint64_t origin)
{
    uint64_t i0, i1;
    uint64_t const bit = gk_huf_run_at(blob, t, runs, u, k, &i0, &i1);
    if (i0 < i1) gk_huffman_run(blob, t, table, bit, i0, i1, lo, hi, out, origin);
}

/* Run k of unit u's symbols, its stream from bit `bit` (gk_huf_run_bit),
 * into its slot of the unit's (slots from unit[0]), a byte each, through
 * the multi-symbol table. */
GK_FN void gk_huf_unit_symbols(const uint8_t* blob, const gk_tensor* t, const uint32_t* multi, uint64_t bit,
                               uint64_t u, uint64_t k, uint8_t* unit)
{
    uint64_t i0, i1;
    gk_huf_run_span(t, u, k, &i0, &i1);
    if (i0 < i1) gk_huffman_symbols(blob, t, multi, bit, i0, i1, unit + k * GK_HUF_SLOT, i0);
}

/* Whether units [u0, u1) are decoded run by run to symbols and assembled a
 * group at a time (every group whole), rather than element by element. */
GK_FN int gk_huf_by_groups(const gk_tensor* t) { return t->unitSize % 32 == 0 && t->nbElements % 32 == 0; }

/* ------------------------------------------------------------------------ */
/* Products over rows of whole groups: a thread per group                   */
/* ------------------------------------------------------------------------ */
/*
 * Where each row (or each part of a long row) is whole groups of 32
 * elements, as in every real model, a product gives each thread whole
 * groups: it rebuilds a group's 32 weights in registers, a few
 * instructions a weight, and multiplies them there. A warp takes a unit,
 * row by row; lane k takes groups k, k + 32, ... of the row, element j of
 * each into sum j % 4 (four chains for the multiplier's latency); the lane
 * then adds (s0 + s1) + (s2 + s3), and the warp's butterfly sums the lanes.
 * Every layout (fast, plain, Huffman) is summed in that order: all three
 * give the same bits.
 *
 * The fast layout's codes, in the nibble form, select each element's
 * exponent from the 8-byte table of code -> symbol in one byte permutation
 * (CUDA's PRMT) for 4 elements. Escapes (code 7) come out as 0 and are
 * patched from the escape bytes; the sign-and-mantissa bytes are merged in
 * and the bf16 values paired, two to a 32-bit word, in three more
 * permutations and masks per 4 elements. A Huffman unit is first decoded
 * by its warp to symbols in shared memory, a byte an element; a thread
 * then takes its group's 32 symbols as exponents (or, for the joint split,
 * exponents and top mantissa bits) and its planes from memory, and builds
 * the weights the same way (gk_huffman_pairs).
 */
#define GK_ROWS_SMEM     (96 * 1024)  /* bytes of x a block stages, at most */
#define GK_ROWS_MAX_BATCH 8

/* The bytes of a and b (b's as bytes 4-7) picked by the low 3 bits of the
 * 4 low nibbles of s, as CUDA's __byte_perm (selectors here never set a
 * nibble's high bit). */
GK_FN uint32_t gk_prmt(uint32_t a, uint32_t b, uint32_t s)
{
#ifdef __CUDA_ARCH__
    return __byte_perm(a, b, s);
#else
    uint64_t const v = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    unsigned n;
    for (n = 0; n < 4; n++) r |= (uint32_t)(v >> (8 * ((s >> (4 * n)) & 7)) & 0xFF) << (8 * n);
    return r;
#endif
}

/* gk_prmt for selectors whose nibbles may have their high bit set (or bits
 * past the low 16) where the byte they pick is not used: one PRMT on the
 * GPU, where __byte_perm first masks the selector to its 3-bit fields (the
 * device's own permutation replicates a byte's sign bit where a nibble's
 * high bit is set). */
GK_FN uint32_t gk_prmt_any(uint32_t a, uint32_t b, uint32_t s)
{
#if defined(__CUDA_ARCH__) && !defined(GLYD_CUDACPU) /* cudacpu: device code on the CPU, no PTX */
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));
    return r;
#else
    return gk_prmt(a, b, s);
#endif
}

/* The bits of a where m is set, of b elsewhere: one LOP3 on the GPU, which
 * the compiler does not always find by itself. */
GK_FN uint32_t gk_select(uint32_t m, uint32_t a, uint32_t b)
{
#if defined(__CUDA_ARCH__) && !defined(GLYD_CUDACPU) /* cudacpu: device code on the CPU, no PTX */
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(r) : "r"(a), "r"(b), "r"(m));
    return r;
#else
    return (a & m) | (b & ~m);
#endif
}

/* Elements per row segment: the row, or the unit where units cut rows. */
GK_FN uint64_t gk_rows_span(const gk_tensor* t, uint64_t cols) { return t->unitSize < cols ? t->unitSize : cols; }

/* x as a block stages it: 4 floats of padding after every 32, so that the
 * lanes of a warp, each reading its own group's 32 values, hit distinct
 * banks. */
GK_FN uint64_t gk_rows_stride(uint64_t span) { return span + span / 8; }

/* Vectors a block stages at once (0: the span is too long). */
GK_FN unsigned gk_rows_vectors(const gk_tensor* t, uint64_t cols)
{
    uint64_t const v = GK_ROWS_SMEM / (4 * gk_rows_stride(gk_rows_span(t, cols)));
    return (unsigned)(v < GK_ROWS_MAX_BATCH ? v : GK_ROWS_MAX_BATCH);
}

/* Whether a matrix of this shape is multiplied by rows of whole groups
 * (else by the general kernel, every layout alike): the GPU backend then
 * rewrites its fast-layout codes in the nibble form, which the rows kernel
 * reads. */
GK_FN int gk_rows_shape(const gk_tensor* t, uint64_t cols)
{
    return gk_gemv_fits(t, cols) && cols % 32 == 0 && gk_rows_span(t, cols) % 32 == 0 && gk_rows_vectors(t, cols) > 0 &&
           (t->layout != GK_LAYOUT_HUFFMAN || t->unitSize <= GK_HUF_UNIT_MAX);
}

/* Whether a product runs by rows of whole groups. */
GK_FN int gk_rows_fits(const gk_tensor* t, uint64_t cols)
{
    return gk_rows_shape(t, cols) && (t->layout != GK_LAYOUT_FAST || t->codeForm == GK_CODES_NIBBLES);
}

/* Rows of unit u (1 where units cut rows). */
GK_FN uint64_t gk_rows_in_unit(const gk_tensor* t, uint64_t cols, uint64_t u)
{
    uint64_t const a = u * t->unitSize;
    uint64_t const b = gk_unit_end(t, u);
    return t->unitSize < cols ? 1 : (b - a) / cols;
}

/* A fast-layout group's exponents from its selectors (nibble form): ex[k]
 * holds those of elements 4k .. 4k + 3, a byte each (an escape's as 0). */
GK_FN void gk_group_exponents(const uint32_t sel[4], uint32_t symLo, uint32_t symHi, uint32_t ex[8])
{
    unsigned k;
    for (k = 0; k < 4; k++) {
        ex[2 * k] = gk_prmt_any(symLo, symHi, sel[k]); /* nibbles under 8: no mask needed */
        ex[2 * k + 1] = gk_prmt_any(symLo, symHi, sel[k] >> 16);
    }
}

/* ------------------------------------------------------------------------ */
/* Escape windows                                                           */
/* ------------------------------------------------------------------------ */
/*
 * The escapes that a step's groups take (a warp's 32 groups in the rows
 * kernel, a block's in bulk decoding) follow one another in the blob, from
 * the step's first escape on. Read one at a time as a thread patches its
 * group, each would cost a trip to memory after the one before, and a warp
 * waits for its lane with the most. So the threads read a window of them at
 * the start of the step, a 32-bit word each, beside their code words and
 * planes (one trip for all), and patch from it; a step with more escapes
 * than its window holds reads the rest one by one. A window starts at a
 * multiple of 4 escapes: its words are aligned where the escapes are, and
 * the escapes follow the code planes, whose alignment the word loads of the
 * nibble form check.
 */

/* The first escape of the window for a step whose first escape is esc. */
GK_FN uint64_t gk_window_first(uint64_t esc) { return esc & ~(uint64_t)3; }

/* Word k of the window from escape first on: escapes first + 4k .. + 3,
 * the first in the low byte; bytes past the blob read 0. */
GK_FN uint32_t gk_window_word(const uint8_t* blob, const gk_tensor* t, uint64_t first, unsigned k)
{
    uint64_t const at = t->escapes + first + 4 * (uint64_t)k;
    uint32_t w = 0;
    unsigned i;
    if (at + 4 <= t->blobSize) {
#ifdef __CUDA_ARCH__
        return __ldg((const uint32_t*)(blob + at));
#else
        return gk_read32(blob + at);
#endif
    }
    for (i = 0; i < 4 && at + i < t->blobSize; i++) w |= (uint32_t)blob[at + i] << 8 * i;
    return w;
}

/* A thread's escapes, from number esc on, as it takes them in turn: at
 * most `left` of them (what its unit has left, at most 32: past them a
 * corrupt count reads 0s); the first `inWindow` from the step's window
 * (words of it, from escape first on), from its byte `off` on; the others
 * from the blob at `at`. */
typedef struct {
    uint64_t at;
    uint32_t off, inWindow, left;
} gk_escape_cursor;

GK_FN gk_escape_cursor gk_escapes_from(const gk_tensor* t, uint64_t esc, uint64_t nbEsc, uint64_t first,
                                       unsigned words)
{
    gk_escape_cursor c;
    uint64_t const off = esc - first; /* esc >= first: a step's threads start at or after its first escape */
    c.at = t->escapes + esc;
    c.left = esc < nbEsc ? (uint32_t)(nbEsc - esc < 32 ? nbEsc - esc : 32) : 0;
    c.off = (uint32_t)(off < 4 * (uint64_t)words ? off : 0);
    c.inWindow = off < 4 * (uint64_t)words ? (uint32_t)(4 * (uint64_t)words - off) : 0;
    return c;
}

/* The index of m's lowest set bit (m != 0). */
GK_FN unsigned gk_lowest(uint32_t m)
{
#ifdef __CUDA_ARCH__
    return (unsigned)__ffs(m) - 1;
#else
    return (unsigned)__builtin_ctz(m);
#endif
}

/* Byte o of a step's escape window (words as gk_window_word reads them). */
GK_FN uint32_t gk_window_byte(const uint32_t* window, uint32_t o)
{
#ifdef __CUDA_ARCH__
    return ((const uint8_t*)window)[o]; /* little-endian, as the words */
#else
    return window[o >> 2] >> 8 * (o & 3) & 0xFFu;
#endif
}

/* A thread's slot of shared memory for gk_patch_escapes (the fast
 * layout's kernels): 8 words, and one more so that the slots of a warp's
 * 32 threads, side by side, start in 32 different banks. 8 words apart, 8
 * threads' slots shared each bank: a warp's 16 accesses of its slots took
 * some 7 times as long as their instructions (118 of the 164 shared-memory
 * wavefronts of a product's step over a 4096-column matrix, as
 * bench/gpu_model counts them), and the step waited on shared memory more
 * than on its instructions. */
#define GK_PATCH_SLOT_WORDS 9

/* The escaped elements (mask m, nibble form) patched into a group's
 * exponents, a byte an element (element j at ex[j]: in the kernels a
 * thread's slot of shared memory, as registers cannot be indexed), from
 * the thread's cursor on, in the mask's order: those the step's window
 * holds from it, the rest from the blob, none past the unit's last (0).
 * The window's share is counted first, so that its loop, nearly all the
 * escapes there are, tests nothing else: on the device it took about 28
 * instructions an escape with each one's tests, and a warp loops as many
 * times as its lane with the most (4 or 5 of a group's 32 elements at a
 * 5% escape rate). */
GK_FN void gk_patch_escapes(const uint8_t* blob, const gk_escape_cursor* c, const uint32_t* window, uint32_t m,
                            uint8_t* ex)
{
    uint32_t const n = gk_popc(m), most = c->inWindow < c->left ? c->inWindow : c->left;
    uint32_t const fromWindow = n < most ? n : most;
    uint32_t k;
#ifdef __CUDA_ARCH__
    /* not unrolled: a warp runs an unrolled loop's remainder as far as its
     * lane with the longest, and then the loop itself */
#pragma unroll 1
#endif
    for (k = 0; k < fromWindow; k++, m &= m - 1)
        ex[gk_nibble_element(gk_lowest(m))] = (uint8_t)gk_window_byte(window, c->off + k);
    for (; m; k++, m &= m - 1) ex[gk_nibble_element(gk_lowest(m))] = k < c->left ? blob[c->at + k] : 0;
}

/* Bits [s, s + 32) of hi:lo (s < 32). */
GK_FN uint32_t gk_funnel(uint32_t lo, uint32_t hi, uint32_t s)
{
#ifdef __CUDA_ARCH__
    return __funnelshift_r(lo, hi, s);
#else
    return (uint32_t)(((uint64_t)hi << 32 | lo) >> s);
#endif
}

/* Whether a group's n escapes (n > 0: a group without any has nothing to
 * patch, and may start where the window ends), from number esc on, are
 * few enough for gk_patch_escapes8: at most 8, all in the step's window
 * (words of it, from escape first on: esc - first is under 4 a step's
 * group), and in the unit (before nbEsc). Nearly every group: 1.3 escapes
 * on average at a 4% escape rate, and a window of 128 for a warp's 32
 * groups. */
GK_FN int gk_escapes8_fit(uint64_t esc, uint64_t first, uint64_t nbEsc, unsigned words, uint32_t n)
{
    return n <= 8 && (uint32_t)(esc - first) + n <= 4 * words && esc + n <= nbEsc;
}

/* Bytes o .. o + 7 of a step's window of `words` words (o inside it, as
 * gk_escapes8_fit makes sure), in e0 then e1, the first in e0's low byte;
 * past the window, its last word again (bytes that gk_escapes8_fit keeps
 * unused). */
GK_FN void gk_window_bytes8(const uint32_t* window, unsigned words, uint32_t o, uint32_t* e0, uint32_t* e1)
{
    uint32_t const a = o >> 2, s = 8 * (o & 3);
    uint32_t const w0 = window[a], w1 = window[a + 1 < words ? a + 1 : words - 1];
    uint32_t const w2 = window[a + 2 < words ? a + 2 : words - 1];
    *e0 = gk_funnel(w0, w1, s);
    *e1 = gk_funnel(w1, w2, s);
}

/* The escaped elements (mask m, nibble form, at most 8) patched into a
 * group's exponents ex (gk_group_exponents) in registers, from its escapes
 * e0, e1 (in the mask's order, the first in e0's low byte): no loop, no
 * shared memory. The escape of mask bit 4i + k (element 8k + i) is the
 * one numbered by the mask's bits below it: those of nibbles 0 .. i - 1,
 * then bits 0 .. k - 1 of nibble i. With f[k] the mask's bit k of every
 * nibble (at the nibble's bit 0), r = (f[0] + .. + f[3]) * 0x11111110 +
 * f[0] + .. + f[k - 1] holds those numbers a nibble each (none over 8:
 * no carries), which select the escapes of elements 8k .. 8k + 7 out of
 * e0:e1 a byte each (a byte permutation: nibbles 0-3 for ex[2k], 4-7 for
 * ex[2k + 1]); a second permutation takes them where f[k] says. About 40
 * instructions on the device for any number of escapes, where a loop over
 * them through a slot of shared memory took some 90 at a warp's usual 4
 * or 5 passes, each waiting on shared memory. */
GK_FN void gk_patch_escapes8(uint32_t m, uint32_t e0, uint32_t e1, uint32_t ex[8])
{
    uint32_t f[4], r;
    unsigned k;
    for (k = 0; k < 4; k++) f[k] = m >> k & 0x11111111u;
    r = (f[0] + f[1] + f[2] + f[3]) * 0x11111110u;
    for (k = 0; k < 4; k++) {
        /* selectors: nibble t picks byte t of ex, or with 4 added (where
         * element t escapes), byte t of the escapes' permutation */
        ex[2 * k] = gk_prmt_any(ex[2 * k], gk_prmt_any(e0, e1, r), f[k] * 4 + 0x3210u);
        ex[2 * k + 1] = gk_prmt_any(ex[2 * k + 1], gk_prmt_any(e0, e1, r >> 16), (f[k] >> 16) * 4 + 0x3210u);
        r += f[k];
    }
}

/* A group's exponents (ex, as gk_group_exponents gives them) into a
 * thread's slot a byte an element, element j at byte j, and back: on the
 * device, little-endian, the words as they are. */
GK_FN void gk_slot_store(uint32_t slot[8], const uint32_t ex[8])
{
    unsigned j;
#ifdef __CUDA_ARCH__
#pragma unroll
    for (j = 0; j < 8; j++) slot[j] = ex[j];
#else
    for (j = 0; j < 32; j++) ((uint8_t*)slot)[j] = (uint8_t)(ex[j >> 2] >> 8 * (j & 3));
#endif
}

GK_FN void gk_slot_load(uint32_t ex[8], const uint32_t slot[8])
{
    unsigned j;
#ifdef __CUDA_ARCH__
#pragma unroll
    for (j = 0; j < 8; j++) ex[j] = slot[j];
#else
    const uint8_t* const b = (const uint8_t*)slot;
    for (j = 0; j < 8; j++)
        ex[j] = b[4 * j] | (uint32_t)b[4 * j + 1] << 8 | (uint32_t)b[4 * j + 2] << 16 | (uint32_t)b[4 * j + 3] << 24;
#endif
}

/* The escaped elements (mask s, nibble form) patched into a group's
 * exponents ex, from escape number esc on, in the mask's order, through
 * the step's window (words of it, from escape first on): in registers
 * where gk_escapes8_fit says they fit (nearly always), else byte by byte
 * through the thread's slot (GK_PATCH_SLOT_WORDS words: in the kernels,
 * shared memory, as registers cannot be indexed). The kernels' way and
 * their emulation's. */
GK_FN void gk_group_patch(const uint8_t* blob, const gk_tensor* t, uint32_t s, uint64_t esc, uint64_t nbEsc,
                          const uint32_t* window, unsigned words, uint64_t first, uint32_t ex[8], uint32_t* slot)
{
    gk_escape_cursor c;
    if (!s) return; /* no escapes (gk_escapes8_fit's n > 0) */
    if (gk_escapes8_fit(esc, first, nbEsc, words, gk_popc(s))) {
        uint32_t e0, e1;
        gk_window_bytes8(window, words, (uint32_t)(esc - first), &e0, &e1);
        gk_patch_escapes8(s, e0, e1, ex);
        return;
    }
    c = gk_escapes_from(t, esc, nbEsc, first, words);
    gk_slot_store(slot, ex);
    gk_patch_escapes(blob, &c, window, s, (uint8_t*)slot);
    gk_slot_load(ex, slot);
}

/* The group's bf16 weights, two to a word (element 2i in the low half of
 * pairs[i]), from its exponents and its sign-and-mantissa bytes (raw[k]:
 * elements 4k .. 4k + 3). */
GK_FN void gk_group_pairs(const uint32_t ex[8], const uint32_t raw[8], uint32_t pairs[16])
{
    unsigned k;
    for (k = 0; k < 8; k++) {
        uint32_t const hi = gk_select(0x80808080u, raw[k], ex[k] >> 1);
        uint32_t const lo = gk_select(0x7F7F7F7Fu, raw[k], ex[k] << 7);
        pairs[2 * k] = gk_prmt(lo, hi, 0x5140);
        pairs[2 * k + 1] = gk_prmt(lo, hi, 0x7362);
    }
}

/* The joint split's group as pairs of bf16 (as gk_group_pairs gives
 * them), straight from its symbols (sym[k]: elements 4k .. 4k + 3, each
 * exponent - base then the top mantissa bit) and its 7-bit fields (f: the
 * group's 224 bits, element j's from bit 7j: sign, then the 6 low mantissa
 * bits), a pair of elements at a time in the two halves of a word:
 *   - the pair's symbols spread into the halves, then times 64 plus base
 *     at bit 7 of each half: exponent and top bit in bits 6-14 (the sum
 *     stays under 2^16, so nothing reaches the other half; an exponent past
 *     255, only in a corrupt blob, wraps there as a byte would);
 *   - the pair's 14 bits of fields, w: the even element's low bits are
 *     w's bits 0-5 where they stand, its sign and the odd element's low
 *     bits are w << 9's bits 15-21, the odd element's sign w << 18's 31.
 * Eight instructions a pair on the GPU; through the bytes the fast layout
 * has (exponents, sign-and-mantissa bytes, then gk_group_pairs), 13. */
GK_FN void gk_joint_pairs(const uint32_t f[7], const uint32_t sym[8], uint32_t base, uint32_t pairs[16])
{
    uint32_t const add = (base & 0xFFu) << 7 | (base & 0xFFu) << 23;
    unsigned i;
    for (i = 0; i < 16; i++) {
        unsigned const o = 14 * i, k = o >> 5, sh = o & 31;
        uint32_t const w = sh + 14 <= 32 ? f[k] >> sh : f[k] >> sh | f[k + 1] << (32 - sh);
        uint32_t const q = gk_prmt(sym[i >> 1], 0, i & 1 ? 0x4342 : 0x4140) * 64 + add;
        uint32_t const p = gk_select(0x003F8000u, w << 9, gk_select(0x7FC07FC0u, q, w));
        pairs[i] = gk_select(0x80000000u, w << 18, p);
    }
}

/* Group q of a Huffman blob as pairs of bf16, from its symbols (sym[k]:
 * elements 4k .. 4k + 3, a byte each) and its planes read a group at a
 * time: the joint split's 7-bit fields of a group are 28 bytes from byte
 * 28q (gk_joint_pairs); otherwise each element's exponent and
 * sign-and-mantissa byte are as the fast layout has them, and so is their
 * assembly (gk_group_pairs). The products decode units to symbols only, a
 * byte an element, and add the planes here: read by gk_huffman_planes (a
 * step ahead, in the rows kernel), then joined by gk_huffman_join.
 *
 * The planes follow the blob's table, at any alignment: on the device
 * they are read as the aligned words around them, and shifted into place
 * only where they are used, so that a read made ahead is not waited on
 * where it is made. */
typedef struct {
    uint32_t w[9];  /* device: the aligned words from the planes' first on; CPU: the words */
    uint32_t shift; /* device: the bits to shift them by */
} gk_planes;

/* Bytes of a group's planes: the joint split's 7-bit fields, or a byte an element. */
GK_FN uint64_t gk_huf_group_planes(const gk_tensor* t) { return t->split == GK_SPLIT_JOINT ? 28 : 32; }

/* The planes of the group whose first plane byte is at `at`. */
GK_FN void gk_huffman_planes_at(const gk_tensor* t, const uint8_t* at, gk_planes* p)
{
    int const joint = t->split == GK_SPLIT_JOINT;
    unsigned k;
#ifdef __CUDA_ARCH__
    /* up to 4 bytes past the planes: the blob has more after them */
    const uint32_t* const a = (const uint32_t*)((uintptr_t)at & ~(uintptr_t)3);
    p->shift = 8 * (uint32_t)((uintptr_t)at & 3);
    for (k = 0; k < 9; k++) p->w[k] = k < (joint ? 8u : 9u) ? __ldg(a + k) : 0;
#else
    p->shift = 0;
    for (k = 0; k < 9; k++) p->w[k] = k < (joint ? 7u : 8u) ? gk_read32(at + 4 * k) : 0;
#endif
}

GK_FN void gk_huffman_planes(const uint8_t* blob, const gk_tensor* t, uint64_t q, gk_planes* p)
{
    gk_huffman_planes_at(t, blob + t->planes + gk_huf_group_planes(t) * q, p);
}

GK_FN void gk_huffman_join(const gk_tensor* t, const gk_planes* p, const uint32_t sym[8], uint32_t pairs[16])
{
    uint32_t raw[8];
    unsigned k;
    for (k = 0; k < 8; k++) {
#ifdef __CUDA_ARCH__
        raw[k] = __funnelshift_r(p->w[k], p->w[k + 1], p->shift);
#else
        raw[k] = p->w[k];
#endif
    }
    if (t->split == GK_SPLIT_JOINT) gk_joint_pairs(raw, sym, t->symBase, pairs);
    else gk_group_pairs(sym, raw, pairs);
}

GK_FN void gk_huffman_pairs(const uint8_t* blob, const gk_tensor* t, uint64_t q, const uint32_t sym[8],
                            uint32_t pairs[16])
{
    gk_planes p;
    gk_huffman_planes(blob, t, q, &p);
    gk_huffman_join(t, &p, sym, pairs);
}

/* The group's products with its 32 values of x, element j into acc[j % 4]. */
GK_FN void gk_group_fma(const uint32_t pairs[16], const float* x, float acc[4])
{
    unsigned i;
    for (i = 0; i < 16; i++) {
        acc[(2 * i) & 3] = fmaf(gk_bits_float(pairs[i] << 16), x[2 * i], acc[(2 * i) & 3]);
        acc[(2 * i + 1) & 3] = fmaf(gk_bits_float(pairs[i] & 0xFFFF0000u), x[2 * i + 1], acc[(2 * i + 1) & 3]);
    }
}

/* ------------------------------------------------------------------------ */
/* Launching products by rows                                               */
/* ------------------------------------------------------------------------ */
/* What the launcher (gpu/products.cu) and the model of its launch
 * (bench/gpu_model.c) both compute, so that the two cannot drift apart. */

#define GK_ROWS_WARPS       8 /* warps of a rows block, or fewer where shared memory is short */
#define GK_ROWS_FAST_BLOCKS 4 /* blocks a multiprocessor a fast product at batch 1 is built for (64 registers) */

/* A rows block's shared memory, by layout:
 *   Huffman: the multi-symbol decoding table first (its lookups are most
 *     of the product's work, and its address is then a constant), x, then
 *     the symbols of the units each warp decodes at once, a byte an
 *     element;
 *   fast: x, a patch slot of GK_PATCH_SLOT_WORDS words a thread, an escape
 *     window of 32 words a warp, then two escape counts a warp;
 *   plain bf16: x alone.
 * x is `vectors` of `stride` floats (gk_rows_stride). Each region's place
 * is written once, below, in the form the kernel takes its address in;
 * gk_rows_smem_plan adds them up for the launcher and the model of the
 * launch, so that the three cannot drift apart. */
#define GK_ROWS_HUF_TABLE_BYTES (sizeof(uint32_t) << GK_HUF_MAX_BITS)

/* x, in bytes from the block's start */
GK_FN size_t gk_rows_x_at(int layout) { return layout == GK_LAYOUT_HUFFMAN ? GK_ROWS_HUF_TABLE_BYTES : 0; }
/* what follows x (Huffman's units, fast's slots), in bytes from x */
GK_FN size_t gk_rows_after_x(unsigned vectors, uint64_t stride) { return sizeof(float) * vectors * stride; }
/* fast, from the slots: the warps' windows, in words; their counts, in bytes */
GK_FN unsigned gk_rows_windows_at(unsigned threads) { return GK_PATCH_SLOT_WORDS * threads; }
GK_FN size_t gk_rows_counts_at(unsigned threads) { return sizeof(uint32_t) * (GK_PATCH_SLOT_WORDS + 1) * threads; }

/* Each region's start in bytes from the block's, and the whole. */
typedef struct {
    uint64_t x;       /* x; the Huffman table at 0 */
    uint64_t units;   /* Huffman: warp w's units from units + w * together * gk_huf_unit_bytes */
    uint64_t slots;   /* fast: thread k's slot from slots + 4 * GK_PATCH_SLOT_WORDS * k */
    uint64_t windows; /* fast: warp w's window from windows + 4 * 32 * w */
    uint64_t counts;  /* fast: warp w's two counts from counts + 4 * 2 * w */
    uint64_t bytes;   /* the whole */
} gk_rows_smem;

/* threads: the block's (32 a warp). */
GK_FN gk_rows_smem gk_rows_smem_plan(int layout, const gk_tensor* t, uint64_t cols, unsigned vectors,
                                     unsigned threads)
{
    gk_rows_smem p;
    p.x = gk_rows_x_at(layout);
    p.units = p.slots = p.x + gk_rows_after_x(vectors, gk_rows_stride(gk_rows_span(t, cols)));
    p.windows = p.slots + sizeof(uint32_t) * gk_rows_windows_at(threads);
    p.counts = p.slots + gk_rows_counts_at(threads);
    if (layout == GK_LAYOUT_FAST) p.bytes = p.counts + sizeof(uint32_t) * 2 * (threads / 32);
    else if (layout == GK_LAYOUT_HUFFMAN)
        p.bytes = p.units + (uint64_t)(threads / 32) * gk_huf_units_together(t) * gk_huf_unit_bytes(t);
    else p.bytes = p.slots;
    return p;
}

/* A rows launch's grid: its items (units, or rows where units cut rows,
 * each row's parts then the grid's y), and enough blocks of `warps` warps
 * for each warp to take perWarp items at once, at most `full` (what the
 * device holds at once), the blocks looping over the rest. */
typedef struct {
    uint64_t items, perRow, blocks;
} gk_rows_grid;

GK_FN gk_rows_grid gk_rows_launch_grid(const gk_tensor* t, uint64_t rows, uint64_t cols, unsigned warps,
                                       uint64_t perWarp, uint64_t full)
{
    gk_rows_grid g;
    g.perRow = cols / gk_rows_span(t, cols);
    g.items = g.perRow > 1 ? rows : t->nbUnits;
    g.blocks = (g.items + warps * perWarp - 1) / (warps * perWarp);
    if (g.blocks > full) g.blocks = full;
    return g;
}

#endif /* GLYD_TENSOR_KERNELS_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_dec.c: parsing and decoding of tensor blobs. Every size and offset
 * of a blob is checked against the blob before use, so that hostile blobs
 * fail cleanly. Huffman units decode through a table that yields up to four
 * symbols per lookup (exponents average under 3 bits, so an 11-bit window
 * usually holds three or four of them).
 */
#include <stdlib.h>

#include "tensor.h"

/* ------------------------------------------------------------------------ */
/* Parsing                                                                  */
/* ------------------------------------------------------------------------ */

size_t glyd_tensorOpen(glyd_tensorView* v, const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    size_t pos = GLYD_TENSOR_HEADER, planeBytes;
    unsigned k;
    memset(v, 0, sizeof(*v));
    RETURN_ERROR_IF(srcSize < GLYD_TENSOR_HEADER, srcSize_truncated, "tensor header");
    RETURN_ERROR_IF(glyd_read32(in) != GLYD_TENSOR_MAGIC, prefix_unknown, "not a tensor blob");
    RETURN_ERROR_IF(in[4] != GLYD_TENSOR_VERSION, version_unsupported, "tensor blob version");
    v->dtype = in[5];
    v->layout = in[6];
    v->split = in[7];
    RETURN_ERROR_IF(v->split > GLYD_TSPLIT_JOINT, frameParameter_unsupported, "symbol split");
    RETURN_ERROR_IF(v->split == GLYD_TSPLIT_JOINT &&
                    (v->dtype != GLYD_DTYPE_BF16 || v->layout != GLYD_TLAYOUT_HUFFMAN),
                    frameParameter_unsupported, "joint split outside bf16 huffman");
    RETURN_ERROR_IF(!glyd_dtypeShapeOf(v->dtype, &v->shape), frameParameter_unsupported, "dtype");
    RETURN_ERROR_IF(v->layout > GLYD_TLAYOUT_FAST, frameParameter_unsupported, "layout");
    v->nbElements = glyd_read64(in + 8);
    v->unitSize = glyd_read32(in + 16);
    v->rowLength = glyd_read32(in + 20);
    v->checksum = glyd_read64(in + 24);
    RETURN_ERROR_IF(v->nbElements > (SIZE_MAX >> 3), frameParameter_unsupported, "element count");
    RETURN_ERROR_IF(v->unitSize == 0 || v->unitSize > GLYD_TENSOR_UNIT_MAX, corruption_detected, "unit size");
    v->nbUnits = (v->nbElements + v->unitSize - 1) / v->unitSize;

    if (v->layout == GLYD_TLAYOUT_STORED) {
        size_t const bytes = (size_t)v->nbElements * v->shape.elemSize;
        RETURN_ERROR_IF(srcSize - pos < bytes, srcSize_truncated, "stored tensor");
        v->stored = in + pos;
        v->blobSize = pos + bytes;
        return v->blobSize;
    }
    RETURN_ERROR_IF(v->nbElements == 0, corruption_detected, "coded layout of an empty tensor");

    switch (v->layout) {
    case GLYD_TLAYOUT_CONSTANT:
        RETURN_ERROR_IF(srcSize - pos < 1, srcSize_truncated, "constant symbol");
        v->constSymbol = in[pos++];
        break;
    case GLYD_TLAYOUT_HUFFMAN: {
        size_t t;
        if (v->split == GLYD_TSPLIT_JOINT) {
            RETURN_ERROR_IF(srcSize - pos < 1, srcSize_truncated, "symbol base");
            v->symBase = in[pos++];
        }
        t = glyd_hufReadDTable(&v->huf, in + pos, srcSize - pos);
        FORWARD_IF_ERROR(t);
        pos += t;
        break;
    }
    default: /* fast: 3-bit codes, or 4-bit ones for bf16 */
        RETURN_ERROR_IF(srcSize - pos < 1, srcSize_truncated, "fast codes");
        v->fastCodes = in[pos];
        RETURN_ERROR_IF(v->fastCodes != GLYD_TENSOR_FAST_CODES &&
                        (v->fastCodes != GLYD_TENSOR_NIBBLE_CODES || v->dtype != GLYD_DTYPE_BF16),
                        corruption_detected, "fast code count");
        RETURN_ERROR_IF(srcSize - pos - 1 < v->fastCodes, srcSize_truncated, "fast codes");
        memcpy(v->fastSymbols, in + pos + 1, v->fastCodes);
        pos += 1 + v->fastCodes;
        break;
    }

    /* the joint split packs its one plane at 7 bits per element */
    planeBytes = v->split == GLYD_TSPLIT_JOINT ? (size_t)((v->nbElements * 7 + 7) / 8)
                                               : (size_t)v->nbElements * v->shape.nbPlanes;
    RETURN_ERROR_IF(srcSize - pos < planeBytes, srcSize_truncated, "planes");
    for (k = 0; k < v->shape.nbPlanes; k++) v->planes[k] = in + pos + k * (size_t)v->nbElements;
    pos += planeBytes;
    if (v->layout == GLYD_TLAYOUT_CONSTANT) {
        v->blobSize = pos;
        return pos;
    }

    RETURN_ERROR_IF((srcSize - pos) / 4 < v->nbUnits, srcSize_truncated, "unit table");
    {
        const uint8_t* const ends = in + pos;
        uint32_t prev = 0;
        uint64_t u;
        pos += 4 * (size_t)v->nbUnits;
        for (u = 0; u < v->nbUnits; u++) {
            uint32_t const e = glyd_read32(ends + 4 * u);
            uint64_t const len = GLYD_MIN((uint64_t)v->unitSize, v->nbElements - u * v->unitSize);
            RETURN_ERROR_IF(e < prev, corruption_detected, "unit table not increasing");
            if (v->layout == GLYD_TLAYOUT_HUFFMAN) {
                /* codes are 1 to 11 bits long */
                RETURN_ERROR_IF(e - prev < (len + 7) / 8 || e - prev > (len * GLYD_HUF_MAX_BITS + 7) / 8,
                                corruption_detected, "unit size impossible for its symbols");
            } else {
                RETURN_ERROR_IF(e - prev > len, corruption_detected, "more escapes than symbols");
            }
            prev = e;
        }
        if (v->layout == GLYD_TLAYOUT_HUFFMAN) {
            v->unitEnds = ends;
            v->streamBytes = prev;
            RETURN_ERROR_IF(srcSize - pos < v->streamBytes + GLYD_TENSOR_PAD, srcSize_truncated, "streams");
            v->streams = in + pos;
            pos += (size_t)v->streamBytes + GLYD_TENSOR_PAD;
        } else {
            size_t const codeBytes = glyd_fastGroupBytes(v->fastCodes) * (size_t)((v->nbElements + 31) / 32);
            v->escapeEnds = ends;
            RETURN_ERROR_IF(srcSize - pos < codeBytes, srcSize_truncated, "code planes");
            v->codePlanes = in + pos;
            pos += codeBytes;
            RETURN_ERROR_IF(srcSize - pos < prev, srcSize_truncated, "escapes");
            v->escapes = in + pos;
            pos += prev;
        }
    }
    v->blobSize = pos;
    return pos;
}

/* The public name of a blob's layout byte (docs/FORMAT.md). */
static glyd_tensorLayout glyd_tensorLayoutOf(unsigned layoutByte)
{
    switch (layoutByte) {
    case GLYD_TLAYOUT_CONSTANT: return glyd_tensor_constant;
    case GLYD_TLAYOUT_HUFFMAN: return glyd_tensor_entropy;
    case GLYD_TLAYOUT_FAST: return glyd_tensor_fast;
    default: return glyd_tensor_stored;
    }
}

size_t glyd_getTensorInfo(glyd_tensorInfo* info, const void* src, size_t srcSize)
{
    glyd_tensorView v;
    size_t const r = glyd_tensorOpen(&v, src, srcSize);
    memset(info, 0, sizeof(*info));
    FORWARD_IF_ERROR(r);
    info->dtype = (glyd_dtype)v.dtype;
    info->layout = glyd_tensorLayoutOf(v.layout);
    info->nbElements = v.nbElements;
    info->nbUnits = v.nbUnits;
    info->unitSize = v.unitSize;
    info->rowLength = v.rowLength;
    info->contentSize = v.nbElements * v.shape.elemSize;
    info->blobSize = r;
    return r;
}

/* ------------------------------------------------------------------------ */
/* Symbols                                                                  */
/* ------------------------------------------------------------------------ */

void glyd_tensorBuildDTable(glyd_tensorDTable* t, const glyd_hufDTable* huf)
{
    unsigned const mb = huf->maxBits;
    uint32_t const mask = (1u << mb) - 1;
    uint32_t idx;
    t->maxBits = mb;
    for (idx = 0; idx <= mask; idx++) {
        uint64_t e = 0;
        unsigned used = 0, count = 0;
        while (count < 4) {
            /* the codes that start later lie wholly inside the window, or
             * are left for the next lookup */
            uint16_t const d = huf->entry[(idx << used) & mask];
            unsigned const len = d >> 8;
            if (used + len > mb) break;
            e |= (uint64_t)(d & 0xFF) << (8 * count);
            count++;
            used += len;
        }
        t->entry[idx] = e | ((uint64_t)count << 32) | ((uint64_t)used << 40);
    }
}

GLYD_FORCE_INLINE uint64_t read_be64(const uint8_t* p) { return __builtin_bswap64(glyd_read64(p)); }

/* A unit's stream being decoded: its next bit, and where symbols go. */
typedef struct {
    const uint8_t* src;
    uint64_t bit;
    uint64_t endBits;
    size_t len;
    uint8_t* op;
    uint8_t* oend;
} unit_state;

/* One load feeds five lookups (5 x 11 bits <= the 57 bits a shifted load
 * guarantees), each writing up to four symbols: the loads leave the
 * dependency chain, which is then shift, lookup, shift. Requires 20 free
 * symbol slots, so that every symbol decoded belongs to the unit. */
GLYD_FORCE_INLINE void unit_step5(unit_state* s, const glyd_tensorDTable* t)
{
    unsigned const mb = t->maxBits;
    uint64_t w = read_be64(s->src + (s->bit >> 3)) << (s->bit & 7);
    unsigned used = 0, k;
    for (k = 0; k < 5; k++) {
        uint64_t const e = t->entry[w >> (64 - mb)];
        unsigned const b = (unsigned)(e >> 40) & 0xFF;
        glyd_write32(s->op, (uint32_t)e);
        s->op += (e >> 32) & 0xFF;
        w <<= b;
        used += b;
    }
    s->bit += used;
}

GLYD_FORCE_INLINE int unit_room(const unit_state* s)
{
    return s->oend - s->op >= 20 && s->bit < s->endBits;
}

/* Finishes a unit one lookup at a time; checks it used its stream exactly. */
static size_t unit_finish(unit_state* s, const glyd_tensorDTable* t, const glyd_hufDTable* h)
{
    unsigned const mb = t->maxBits;
    while (unit_room(s)) unit_step5(s, t);
    while (s->oend - s->op >= 4 && s->bit < s->endBits) {
        uint64_t const w = read_be64(s->src + (s->bit >> 3)) << (s->bit & 7);
        uint64_t const e = t->entry[w >> (64 - mb)];
        glyd_write32(s->op, (uint32_t)e);
        s->op += (e >> 32) & 0xFF;
        s->bit += (e >> 40) & 0xFF;
    }
    while (s->op < s->oend && s->bit < s->endBits) {
        uint64_t const w = read_be64(s->src + (s->bit >> 3)) << (s->bit & 7);
        uint16_t const d = h->entry[w >> (64 - mb)];
        *s->op++ = (uint8_t)d;
        s->bit += d >> 8;
    }
    RETURN_ERROR_IF(s->op != s->oend || (s->bit + 7) / 8 != s->len, corruption_detected,
                    "unit stream size mismatch");
    return 0;
}

/* Unit u's stream; its bytes are followed by at least 8 readable ones. */
static void unit_start(unit_state* s, const glyd_tensorView* v, uint64_t u, uint8_t* out)
{
    uint32_t const start = u ? glyd_read32(v->unitEnds + 4 * (u - 1)) : 0;
    uint32_t const end = glyd_read32(v->unitEnds + 4 * u);
    uint64_t const a = u * v->unitSize;
    s->src = v->streams + start;
    s->len = end - start;
    s->bit = 0;
    s->endBits = (uint64_t)s->len * 8;
    s->op = out;
    s->oend = out + GLYD_MIN((uint64_t)v->unitSize, v->nbElements - a);
}

/* ------------------------------------------------------------------------ */
/* The fast layout                                                          */
/* ------------------------------------------------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include "fast_simd.h"
#  define TENSOR_FAST_AVX2 1
#else
#  define TENSOR_FAST_AVX2 0
#endif

/* The widest instructions decoders may use (glyd_tensorSimdLimit). */
static int g_simdLimit = GLYD_SIMD_BEST;

void glyd_tensorSimdLimit(int level) { g_simdLimit = level; }
int glyd_tensorSimdLimitGet(void) { return g_simdLimit; }

/* Element i's symbol: its code's, or the unit's next escape. Returns 0 when
 * the unit's escapes run out. */
GLYD_FORCE_INLINE int fast_symbol_at(const glyd_tensorView* v, uint64_t i, uint64_t* esc, uint64_t escEnd,
                                     unsigned* symbol)
{
    unsigned const bit = (unsigned)(i & 31);
    unsigned c;
    if (v->fastCodes == GLYD_TENSOR_NIBBLE_CODES) {
        c = (v->codePlanes[(i >> 5) * 16 + glyd_nibbleByte(bit)] >> glyd_nibbleShift(bit)) & 15;
    } else {
        const uint8_t* const g = v->codePlanes + (i >> 5) * 12;
        c = ((glyd_read32(g) >> bit) & 1) | (((glyd_read32(g + 4) >> bit) & 1) << 1) |
            (((glyd_read32(g + 8) >> bit) & 1) << 2);
    }
    if (c < v->fastCodes) {
        *symbol = v->fastSymbols[c];
        return 1;
    }
    if (*esc >= escEnd) return 0;
    *symbol = v->escapes[(*esc)++];
    return 1;
}

/* Symbols of elements [a, b), one at a time: out[0] is element a. */
static int fast_one_by_one(const glyd_tensorView* v, uint64_t a, uint64_t b, uint64_t* esc, uint64_t escEnd,
                           uint8_t* out)
{
    uint64_t i;
    for (i = a; i < b; i++) {
        unsigned s;
        if (!fast_symbol_at(v, i, esc, escEnd, &s)) return 0;
        out[i - a] = (uint8_t)s;
    }
    return 1;
}

/* One bf16 element: its exponent joined with its sign and mantissa byte. */
GLYD_FORCE_INLINE int fast_bf16_one(const glyd_tensorView* v, uint64_t i, uint64_t* esc, uint64_t escEnd,
                                    uint8_t* out)
{
    unsigned const raw = v->planes[0][i];
    unsigned e;
    if (!fast_symbol_at(v, i, esc, escEnd, &e)) return 0;
    glyd_write16(out, (uint16_t)(((raw & 0x80) << 8) | (e << 7) | (raw & 0x7F)));
    return 1;
}

/* The fast decoder reads a unit's planes from memory faster than the
 * hardware prefetcher brings them: the sign-and-mantissa plane is fetched
 * this far ahead, the code planes as far in elements. */
#define FAST_PREFETCH 2048

#if TENSOR_FAST_AVX2
/* 32 bf16 elements from their exponents and their sign-and-mantissa bytes,
 * in element order. */
__attribute__((target("avx2")))
static void fast_join32_avx2(uint8_t* out, __m256i e, __m256i raw)
{
    __m256i first, last;
    fast_bf16_avx2(e, raw, _mm256_set1_epi8((char)0x80), &first, &last);
    _mm256_storeu_si256((__m256i*)(void*)out, first);
    _mm256_storeu_si256((__m256i*)(void*)(out + 32), last);
}

/* The symbols of groups [g0, g1), escapes patched in order (the symbol
 * path: fp16, fp32 and fp8 in the fast layout). Returns 0 when the escapes
 * run out. */
__attribute__((target("avx2")))
static int fast_symbol_groups_avx2(const glyd_tensorView* v, uint64_t g0, uint64_t g1, uint64_t* esc,
                                   uint64_t escEnd, uint8_t* out)
{
    __m256i const lut = fast_lut_avx2(v);
    __m256i const escCode = _mm256_set1_epi8((char)v->fastCodes);
    uint64_t g;
    for (g = g0; g < g1; g++, out += 32) {
        __m256i const c = fast_group_codes_avx2(v, g);
        uint32_t escMask = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, escCode));
        _mm256_storeu_si256((__m256i*)(void*)out, _mm256_shuffle_epi8(lut, c));
        if ((uint64_t)__builtin_popcount(escMask) > escEnd - *esc) return 0;
        while (escMask) {
            out[__builtin_ctz(escMask)] = v->escapes[(*esc)++];
            escMask &= escMask - 1;
        }
    }
    return 1;
}

/* Groups [g0, g1) of 32 elements; escapes patched in order. Returns 0 when
 * the unit's escapes run out.
 *
 * Escaped lanes join with exponent 0 (the table's entry for code 7); their
 * own exponent goes in afterwards with an OR. Where the escapes fall varies
 * from group to group, so branching on it would mispredict every other
 * group: instead each group writes its first three escape positions
 * whether it has them or not (the list advancing by its true count; more
 * than three is rare), and a chunk of groups at a time is patched from the
 * list in one loop of known length. */
#define FAST_CHUNK 64 /* groups per patched chunk */

__attribute__((target("avx2,bmi")))
static int fast_bf16_groups_avx2(const glyd_tensorView* v, uint64_t g0, uint64_t g1, uint64_t* escp,
                                 uint64_t escEnd, uint8_t* out)
{
    const uint8_t* const codePlanes = v->codePlanes;
    const uint8_t* const raw = v->planes[0];
    const uint8_t* const escapes = v->escapes;
    __m256i const lut = fast_lut_avx2(v);
    __m256i const escCode = _mm256_set1_epi8((char)v->fastCodes);
    size_t const groupBytes = glyd_fastGroupBytes(v->fastCodes);
    uint16_t pos[FAST_CHUNK * 32 + 3];
    uint64_t gc, esc = *escp;
    for (gc = g0; gc < g1; gc += FAST_CHUNK) {
        uint64_t const ge = GLYD_MIN(gc + FAST_CHUNK, g1);
        uint8_t* const chunk = out + (gc - g0) * 64;
        size_t n = 0, k;
        uint64_t g;
        for (g = gc; g < ge; g++) {
            __m256i const c = fast_group_codes_avx2(v, g);
            uint32_t m = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, escCode));
            unsigned const base = (unsigned)(g - gc) * 32, cnt = (unsigned)__builtin_popcount(m);
            _mm_prefetch((const char*)(raw + g * 32) + FAST_PREFETCH, _MM_HINT_T0);
            _mm_prefetch((const char*)(codePlanes + g * groupBytes) + FAST_PREFETCH * groupBytes / 32, _MM_HINT_T0);
            fast_join32_avx2(chunk + (g - gc) * 64, _mm256_shuffle_epi8(lut, c),
                             _mm256_loadu_si256((const __m256i*)(const void*)(raw + g * 32)));
            pos[n] = (uint16_t)(base + _tzcnt_u32(m));
            m &= m - 1;
            pos[n + 1] = (uint16_t)(base + _tzcnt_u32(m));
            m &= m - 1;
            pos[n + 2] = (uint16_t)(base + _tzcnt_u32(m));
            m &= m - 1;
            for (k = 3; m; k++, m &= m - 1) pos[n + k] = (uint16_t)(base + _tzcnt_u32(m));
            n += cnt;
        }
        if (n > escEnd - esc) return 0;
        for (k = 0; k < n; k++) {
            uint8_t* const at = chunk + 2 * (size_t)pos[k];
            glyd_write16(at, (uint16_t)(glyd_read16(at) | (unsigned)escapes[esc + k] << 7));
        }
        esc += n;
    }
    *escp = esc;
    return 1;
}

/* The same with AVX-512: each group's escapes land in their lanes with one
 * expanding load, so that no branch depends on where they fall. */
__attribute__((target("avx2,bmi2,avx512f,avx512vl,avx512bw,avx512vbmi2")))
static int fast_bf16_groups_avx512(const glyd_tensorView* v, uint64_t g0, uint64_t g1, uint64_t* escp,
                                   uint64_t escEnd, uint8_t* out)
{
    const uint8_t* const codePlanes = v->codePlanes;
    const uint8_t* const raw = v->planes[0];
    const uint8_t* const escapes = v->escapes;
    __m256i const lut = fast_lut_avx2(v);
    __m256i const one = _mm256_set1_epi8(1), two = _mm256_set1_epi8(2), four = _mm256_set1_epi8(4);
    uint64_t g, esc = *escp;
    for (g = g0; g < g1; g++, out += 64) {
        const uint8_t* const planes = codePlanes + g * 12;
        __mmask32 k0;
        _mm_prefetch((const char*)(raw + g * 32) + FAST_PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char*)planes + FAST_PREFETCH * 3 / 8, _MM_HINT_T0);
        k0 = _cvtu32_mask32(glyd_read32(planes));
        __mmask32 const k1 = _cvtu32_mask32(glyd_read32(planes + 4));
        __mmask32 const k2 = _cvtu32_mask32(glyd_read32(planes + 8));
        __mmask32 const kEsc = _kand_mask32(_kand_mask32(k0, k1), k2);
        unsigned const nbEsc = (unsigned)__builtin_popcount(_cvtmask32_u32(kEsc));
        __m256i c = _mm256_maskz_mov_epi8(k0, one);
        __m256i e;
        c = _mm256_mask_add_epi8(c, k1, c, two);
        c = _mm256_mask_add_epi8(c, k2, c, four);
        if (nbEsc > escEnd - esc) return 0;
        /* a masked load, then an expansion between registers: the expanding
         * load from memory is several times slower on some cores */
        e = _mm256_mask_expand_epi8(_mm256_shuffle_epi8(lut, c), kEsc,
                                    _mm256_maskz_loadu_epi8(_cvtu32_mask32(_bzhi_u32(~0u, nbEsc)), escapes + esc));
        esc += nbEsc;
        fast_join32_avx2(out, e, _mm256_loadu_si256((const __m256i*)(const void*)(raw + g * 32)));
    }
    *escp = esc;
    return 1;
}
#endif

/* The symbols of elements [a, b) of one unit (its escapes [escStart, escEnd)). */
static size_t decode_fast_range(const glyd_tensorView* v, uint64_t a, uint64_t b, uint64_t escStart,
                                uint64_t escEnd, uint8_t* out)
{
    uint64_t const origin = a;
    uint64_t esc = escStart;
#if TENSOR_FAST_AVX2
    if (g_simdLimit >= GLYD_SIMD_AVX2 && __builtin_cpu_supports("avx2")) {
        uint64_t const lead = GLYD_MIN(b, (a + 31) & ~(uint64_t)31);
        /* the unit's first elements, up to a group boundary, one by one */
        RETURN_ERROR_IF(!fast_one_by_one(v, a, lead, &esc, escEnd, out), corruption_detected,
                        "escape beyond the unit's escapes");
        if (b - lead >= 32)
            RETURN_ERROR_IF(!fast_symbol_groups_avx2(v, lead >> 5, b >> 5, &esc, escEnd, out + (lead - origin)),
                            corruption_detected, "escape beyond the unit's escapes");
        a = b - lead >= 32 ? b & ~(uint64_t)31 : lead; /* the rest, below, one by one */
    }
#endif
    RETURN_ERROR_IF(!fast_one_by_one(v, a, b, &esc, escEnd, out + (a - origin)), corruption_detected,
                    "escape beyond the unit's escapes");
    RETURN_ERROR_IF(esc != escEnd, corruption_detected, "unit's escapes not all used");
    return (size_t)(b - origin);
}

/* Unit u of a bf16 tensor in the fast layout, straight to its elements. */
static size_t decode_fast_bf16_unit(const glyd_tensorView* v, uint64_t u, uint8_t* out)
{
    uint64_t const a = u * v->unitSize;
    uint64_t const b = GLYD_MIN(a + v->unitSize, v->nbElements);
    uint64_t esc = u ? glyd_read32(v->escapeEnds + 4 * (u - 1)) : 0;
    uint64_t const escEnd = glyd_read32(v->escapeEnds + 4 * u);
    uint64_t i = a;
#if TENSOR_FAST_AVX2
    if (g_simdLimit >= GLYD_SIMD_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi")) {
        /* the first elements one by one, up to a group boundary */
        uint64_t const lead = GLYD_MIN(b, (a + 31) & ~(uint64_t)31);
        int ok = 1;
        for (; i < lead; i++)
            RETURN_ERROR_IF(!fast_bf16_one(v, i, &esc, escEnd, out + 2 * (i - a)), corruption_detected,
                            "escape beyond the unit's escapes");
        if (b - i >= 32) {
            uint64_t const g0 = i >> 5, g1 = b >> 5;
            if (v->fastCodes == GLYD_TENSOR_FAST_CODES && g_simdLimit >= GLYD_SIMD_AVX512 &&
                __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi2"))
                ok = fast_bf16_groups_avx512(v, g0, g1, &esc, escEnd, out + 2 * (i - a));
            else
                ok = fast_bf16_groups_avx2(v, g0, g1, &esc, escEnd, out + 2 * (i - a));
            RETURN_ERROR_IF(!ok, corruption_detected, "escape beyond the unit's escapes");
            i = g1 << 5;
        }
    }
#endif
    for (; i < b; i++)
        RETURN_ERROR_IF(!fast_bf16_one(v, i, &esc, escEnd, out + 2 * (i - a)), corruption_detected,
                        "escape beyond the unit's escapes");
    RETURN_ERROR_IF(esc != escEnd, corruption_detected, "unit's escapes not all used");
    return (size_t)(b - a) * 2;
}

size_t glyd_tensorDecodeSymbols(const glyd_tensorView* v, const glyd_tensorDTable* t, uint64_t first,
                                uint64_t count, uint8_t* symbols)
{
    uint64_t u;
    uint8_t* op = symbols;
    RETURN_ERROR_IF(first > v->nbUnits || count > v->nbUnits - first, parameter_outOfBound, "units");
    for (u = first; u < first + count;) {
        uint64_t const a = u * v->unitSize;
        size_t const n = (size_t)GLYD_MIN((uint64_t)v->unitSize, v->nbElements - a);
        switch (v->layout) {
        case GLYD_TLAYOUT_CONSTANT:
            memset(op, v->constSymbol, n);
            break;
        case GLYD_TLAYOUT_HUFFMAN: {
            /* up to four units in lockstep: four independent dependency
             * chains of shift and lookup keep the core's units busy */
            unit_state st[4];
            unsigned const k = (unsigned)GLYD_MIN((uint64_t)4, first + count - u);
            unsigned i;
            uint8_t* next = op;
            for (i = 0; i < k; i++) {
                unit_start(&st[i], v, u + i, next);
                next = st[i].oend;
            }
            if (k == 4) {
                while (unit_room(&st[0]) && unit_room(&st[1]) && unit_room(&st[2]) && unit_room(&st[3])) {
                    unit_step5(&st[0], t);
                    unit_step5(&st[1], t);
                    unit_step5(&st[2], t);
                    unit_step5(&st[3], t);
                }
            } else if (k >= 2) {
                while (unit_room(&st[0]) && unit_room(&st[1])) {
                    unit_step5(&st[0], t);
                    unit_step5(&st[1], t);
                }
            }
            for (i = 0; i < k; i++) FORWARD_IF_ERROR(unit_finish(&st[i], t, &v->huf));
            op = next;
            u += k;
            continue;
        }
        case GLYD_TLAYOUT_FAST: {
            uint32_t const start = u ? glyd_read32(v->escapeEnds + 4 * (u - 1)) : 0;
            uint32_t const end = glyd_read32(v->escapeEnds + 4 * u);
            FORWARD_IF_ERROR(decode_fast_range(v, a, a + n, start, end, op));
            break;
        }
        default:
            RETURN_ERROR(GENERIC, "stored tensors have no symbols");
        }
        op += n;
        u++;
    }
    return (size_t)(op - symbols);
}

size_t glyd_tensorScratchSize(const glyd_tensorView* v)
{
    /* four units' symbols, and the slack of 4-byte stores */
    return 4 * (size_t)GLYD_MIN((uint64_t)v->unitSize, GLYD_MAX(v->nbElements, (uint64_t)1)) + 8;
}

size_t glyd_tensorDecodeUnits(const glyd_tensorView* v, const glyd_tensorDTable* t, uint64_t first,
                              uint64_t count, void* dst, uint8_t* scratch)
{
    uint8_t* const out = (uint8_t*)dst;
    uint64_t u;
    RETURN_ERROR_IF(first > v->nbUnits || count > v->nbUnits - first, parameter_outOfBound, "units");
    if (v->layout == GLYD_TLAYOUT_STORED) {
        uint64_t const a = first * v->unitSize;
        uint64_t const b = GLYD_MIN((first + count) * v->unitSize, v->nbElements);
        memcpy(out, v->stored + a * v->shape.elemSize, (size_t)(b - a) * v->shape.elemSize);
        return (size_t)(b - a) * v->shape.elemSize;
    }
    if (v->layout == GLYD_TLAYOUT_FAST && v->dtype == GLYD_DTYPE_BF16) {
        /* one pass from codes, planes and escapes to elements */
        for (u = first; u < first + count; u++)
            FORWARD_IF_ERROR(decode_fast_bf16_unit(v, u, out + (u - first) * v->unitSize * 2));
        return (size_t)(GLYD_MIN((first + count) * v->unitSize, v->nbElements) - first * v->unitSize) * 2;
    }
    for (u = first; u < first + count; u += 4) {
        /* four units at a time, as glyd_tensorDecodeSymbols decodes best */
        uint64_t const nbu = GLYD_MIN((uint64_t)4, first + count - u);
        uint64_t const a = u * v->unitSize;
        size_t const n = (size_t)(GLYD_MIN((u + nbu) * v->unitSize, v->nbElements) - a);
        const uint8_t* planes[3];
        unsigned k;
        FORWARD_IF_ERROR(glyd_tensorDecodeSymbols(v, t, u, nbu, scratch));
        if (v->split == GLYD_TSPLIT_JOINT) {
            glyd_tensorJoinJoint(out + (a - first * v->unitSize) * 2, n, scratch, v->planes[0], a, v->symBase);
            continue;
        }
        for (k = 0; k < v->shape.nbPlanes; k++) planes[k] = v->planes[k] + a;
        glyd_tensorJoin(v->dtype, out + (a - first * v->unitSize) * v->shape.elemSize, n, scratch, planes);
    }
    return (size_t)(GLYD_MIN((first + count) * v->unitSize, v->nbElements) - first * v->unitSize) *
           v->shape.elemSize;
}

/* ------------------------------------------------------------------------ */
/* Whole tensor                                                             */
/* ------------------------------------------------------------------------ */

typedef struct {
    const glyd_tensorView* v;
    const glyd_tensorDTable* t;
    uint8_t* dst;
    uint64_t first, count;
    size_t result;
} dec_job;

static void dec_job_run(void* arg)
{
    dec_job* const j = (dec_job*)arg;
    uint8_t* const scratch = (uint8_t*)malloc(glyd_tensorScratchSize(j->v));
    if (!scratch) { j->result = GLYD_ERROR(memory_allocation); return; }
    j->result = glyd_tensorDecodeUnits(j->v, j->t, j->first, j->count,
                                       j->dst + j->first * j->v->unitSize * j->v->shape.elemSize, scratch);
    free(scratch);
}

size_t glyd_tensorDecompress(void* dst, size_t dstCapacity, const void* src, size_t srcSize,
                             unsigned nbThreads)
{
    glyd_tensorView v;
    glyd_tensorDTable* t = NULL;
    size_t bytes, r = 0;
    unsigned nbJobs, k;
    dec_job* jobs;
    RETURN_ERROR_IF(src == NULL, GENERIC, "src is NULL");
    FORWARD_IF_ERROR(glyd_tensorOpen(&v, src, srcSize));
    RETURN_ERROR_IF(v.blobSize != srcSize, corruption_detected, "bytes after the blob");
    bytes = (size_t)v.nbElements * v.shape.elemSize;
    RETURN_ERROR_IF(bytes > dstCapacity, dstSize_tooSmall, "destination");
    RETURN_ERROR_IF(dst == NULL && bytes > 0, dstBuffer_null, "dst");
    if (v.layout == GLYD_TLAYOUT_HUFFMAN) {
        t = (glyd_tensorDTable*)malloc(sizeof(*t));
        RETURN_ERROR_IF(t == NULL, memory_allocation, "decoding table");
        glyd_tensorBuildDTable(t, &v.huf);
    }
    if (v.nbElements < GLYD_TENSOR_MT_MIN) nbThreads = 1;
    nbJobs = nbThreads > 1 ? (unsigned)GLYD_MIN((uint64_t)nbThreads * 4, GLYD_MAX(v.nbUnits, (uint64_t)1)) : 1;
    jobs = (dec_job*)calloc(nbJobs, sizeof(dec_job));
    if (!jobs) { free(t); RETURN_ERROR(memory_allocation, "jobs"); }
    for (k = 0; k < nbJobs; k++) {
        jobs[k].v = &v;
        jobs[k].t = t;
        jobs[k].dst = (uint8_t*)dst;
        jobs[k].first = v.nbUnits * k / nbJobs;
        jobs[k].count = v.nbUnits * (k + 1) / nbJobs - jobs[k].first;
    }
    if (nbJobs > 1) {
        glyd_pool* const pool = glyd_poolCreate(GLYD_MIN(nbThreads, nbJobs), glyd_defaultCMem);
        if (!pool) {
            r = GLYD_ERROR(threads_unavailable);
        } else {
            for (k = 0; k < nbJobs; k++) glyd_poolAdd(pool, dec_job_run, &jobs[k]);
            glyd_poolFree(pool); /* waits for every job */
        }
    } else {
        dec_job_run(&jobs[0]);
    }
    for (k = 0; k < nbJobs && !GLYD_IS_ERROR(r); k++)
        if (GLYD_IS_ERROR(jobs[k].result)) r = jobs[k].result;
    free(jobs);
    free(t);
    FORWARD_IF_ERROR(r);
    RETURN_ERROR_IF(XXH3_64bits(dst, bytes) != v.checksum, checksum_wrong, "tensor checksum");
    return bytes;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_split.c: how each dtype splits into an entropy-coded symbol and raw
 * planes, and back. Joining runs on every decode, so it has an AVX2 path,
 * chosen at run time; the portable path is the reference.
 *
 *   bf16  s eeeeeeee mmmmmmm   symbol: e (8 bits)       plane 0: s mmmmmmm
 *   fp16  s eeeee mmmmmmmmmm   symbol: high byte        plane 0: low byte
 *   fp32  s e(8) m(23)         symbol: e (8 bits)       planes: m[0:8], m[8:16], s m[16:23]
 *   fp8   one byte             symbol: the byte         no plane
 */
#include "tensor.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define TENSOR_HAVE_AVX2 1
#else
#  define TENSOR_HAVE_AVX2 0
#endif

int glyd_dtypeShapeOf(unsigned dtype, glyd_dtypeShape* shape)
{
    switch (dtype) {
    case GLYD_DTYPE_BF16: shape->elemSize = 2; shape->nbPlanes = 1; return 1;
    case GLYD_DTYPE_F16: shape->elemSize = 2; shape->nbPlanes = 1; return 1;
    case GLYD_DTYPE_F32: shape->elemSize = 4; shape->nbPlanes = 3; return 1;
    case GLYD_DTYPE_F8_E4M3:
    case GLYD_DTYPE_F8_E5M2: shape->elemSize = 1; shape->nbPlanes = 0; return 1;
    default: return 0;
    }
}

void glyd_tensorSplit(unsigned dtype, const void* src, size_t n, uint8_t* symbols, uint8_t* const* planes)
{
    const uint8_t* const in = (const uint8_t*)src;
    size_t i;
    switch (dtype) {
    case GLYD_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            uint16_t const v = glyd_read16(in + 2 * i);
            symbols[i] = (uint8_t)(v >> 7);
            planes[0][i] = (uint8_t)(((v >> 8) & 0x80) | (v & 0x7F));
        }
        break;
    case GLYD_DTYPE_F16:
        for (i = 0; i < n; i++) {
            planes[0][i] = in[2 * i];
            symbols[i] = in[2 * i + 1];
        }
        break;
    case GLYD_DTYPE_F32:
        for (i = 0; i < n; i++) {
            uint32_t const v = glyd_read32(in + 4 * i);
            symbols[i] = (uint8_t)(v >> 23);
            planes[0][i] = (uint8_t)v;
            planes[1][i] = (uint8_t)(v >> 8);
            planes[2][i] = (uint8_t)(((v >> 24) & 0x80) | ((v >> 16) & 0x7F));
        }
        break;
    default:
        memcpy(symbols, in, n);
        break;
    }
}

static void join_bf16_portable(uint8_t* out, size_t n, const uint8_t* sym, const uint8_t* raw)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint16_t const v = (uint16_t)(((raw[i] & 0x80) << 8) | (sym[i] << 7) | (raw[i] & 0x7F));
        glyd_write16(out + 2 * i, v);
    }
}

#if TENSOR_HAVE_AVX2
__attribute__((target("avx2")))
static void join_bf16_avx2(uint8_t* out, size_t n, const uint8_t* sym, const uint8_t* raw)
{
    __m256i const m80 = _mm256_set1_epi8((char)0x80);
    __m256i const m7F = _mm256_set1_epi8(0x7F);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i const e = _mm256_loadu_si256((const __m256i*)(sym + i));
        __m256i const r = _mm256_loadu_si256((const __m256i*)(raw + i));
        /* high byte: s eeeeeee; low byte: e mmmmmmm (16-bit shifts, masked
         * back to bytes) */
        __m256i const hi = _mm256_or_si256(_mm256_and_si256(r, m80),
                                           _mm256_and_si256(_mm256_srli_epi16(e, 1), m7F));
        __m256i const lo = _mm256_or_si256(_mm256_and_si256(r, m7F),
                                           _mm256_and_si256(_mm256_slli_epi16(e, 7), m80));
        __m256i const a = _mm256_unpacklo_epi8(lo, hi); /* elements 0-7 | 16-23 */
        __m256i const b = _mm256_unpackhi_epi8(lo, hi); /* elements 8-15 | 24-31 */
        _mm256_storeu_si256((__m256i*)(out + 2 * i), _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i*)(out + 2 * i + 32), _mm256_permute2x128_si256(a, b, 0x31));
    }
    join_bf16_portable(out + 2 * i, n - i, sym + i, raw + i);
}

__attribute__((target("avx2")))
static void join_f16_avx2(uint8_t* out, size_t n, const uint8_t* sym, const uint8_t* raw)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i const e = _mm256_loadu_si256((const __m256i*)(sym + i));
        __m256i const r = _mm256_loadu_si256((const __m256i*)(raw + i));
        __m256i const a = _mm256_unpacklo_epi8(r, e);
        __m256i const b = _mm256_unpackhi_epi8(r, e);
        _mm256_storeu_si256((__m256i*)(out + 2 * i), _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i*)(out + 2 * i + 32), _mm256_permute2x128_si256(a, b, 0x31));
    }
    for (; i < n; i++) {
        out[2 * i] = raw[i];
        out[2 * i + 1] = sym[i];
    }
}

static int have_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}
#endif

/* ------------------------------------------------------------------------ */
/* Joint split (bf16)                                                       */
/*                                                                          */
/* The top mantissa bit goes with the exponent: it correlates with it, and  */
/* splitting the most frequent exponent in two lets a Huffman code come     */
/* closer to the entropy. symbol = (e - base) << 1 | m6; field = s m5..m0.  */
/* ------------------------------------------------------------------------ */

void glyd_tensorSplitJoint(const void* src, size_t n, uint8_t base, uint8_t* symbols, uint8_t* fields)
{
    const uint8_t* const in = (const uint8_t*)src;
    size_t i;
    for (i = 0; i < n; i++) {
        uint16_t const v = glyd_read16(in + 2 * i);
        symbols[i] = (uint8_t)(((((v >> 7) & 0xFF) - base) << 1) | ((v >> 6) & 1));
        fields[i] = (uint8_t)(((v >> 15) << 6) | (v & 0x3F));
    }
}

void glyd_tensorPack7(uint8_t* dst, const uint8_t* fields, size_t n)
{
    size_t i, out = 0;
    uint64_t acc = 0;
    unsigned nb = 0;
    for (i = 0; i < n; i++) {
        acc |= (uint64_t)(fields[i] & 0x7F) << nb;
        nb += 7;
        if (nb >= 8) {
            dst[out++] = (uint8_t)acc;
            acc >>= 8;
            nb -= 8;
        }
    }
    if (nb) dst[out++] = (uint8_t)acc;
}

/* The packed field of element e. Reads two bytes: the second may lie just
 * past the plane, which blobs always follow with more bytes. */
GLYD_FORCE_INLINE unsigned field7(const uint8_t* packed, uint64_t e)
{
    uint64_t const bit = e * 7;
    return (unsigned)((glyd_read16(packed + (bit >> 3)) >> (bit & 7)) & 0x7F);
}

static void join_joint_portable(uint8_t* out, size_t n, const uint8_t* sym, const uint8_t* packed,
                                uint64_t first, uint8_t base)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned const f = field7(packed, first + i);
        unsigned const e = (uint8_t)(base + (sym[i] >> 1));
        glyd_write16(out + 2 * i, (uint16_t)(((f >> 6) << 15) | (e << 7) | ((sym[i] & 1u) << 6) | (f & 0x3F)));
    }
}

#if TENSOR_HAVE_AVX2
__attribute__((target("avx2,bmi2")))
static void join_joint_avx2(uint8_t* out, size_t n, const uint8_t* sym, const uint8_t* packed,
                            uint64_t first, uint8_t base)
{
    __m256i const m80 = _mm256_set1_epi8((char)0x80);
    __m256i const m7F = _mm256_set1_epi8(0x7F);
    __m256i const m40 = _mm256_set1_epi8(0x40);
    __m256i const m3F = _mm256_set1_epi8(0x3F);
    __m256i const vbase = _mm256_set1_epi8((char)base);
    size_t i = 0;
    /* up to a group of 8 elements, whose fields start on a byte */
    size_t const lead = (size_t)GLYD_MIN((uint64_t)n, (8 - (first & 7)) & 7);
    join_joint_portable(out, lead, sym, packed, first, base);
    for (i = lead; i + 32 <= n; i += 32) {
        const uint8_t* const g = packed + (first + i) / 8 * 7;
        /* each 7 bytes spread into 8 fields of 7 bits; the last load
         * reads one byte past its group, inside the blob */
        uint64_t f[4];
        __m256i fs, e, s, hi, lo, a, b;
        f[0] = _pdep_u64(glyd_read64(g), 0x7F7F7F7F7F7F7F7FULL);
        f[1] = _pdep_u64(glyd_read64(g + 7), 0x7F7F7F7F7F7F7F7FULL);
        f[2] = _pdep_u64(glyd_read64(g + 14), 0x7F7F7F7F7F7F7F7FULL);
        f[3] = _pdep_u64(glyd_read64(g + 21), 0x7F7F7F7F7F7F7F7FULL);
        fs = _mm256_loadu_si256((const __m256i*)f);
        s = _mm256_loadu_si256((const __m256i*)(sym + i));
        e = _mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(s, 1), m7F), vbase);
        hi = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(fs, 1), m80),
                             _mm256_and_si256(_mm256_srli_epi16(e, 1), m7F));
        lo = _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(e, 7), m80),
                                             _mm256_and_si256(_mm256_slli_epi16(s, 6), m40)),
                             _mm256_and_si256(fs, m3F));
        a = _mm256_unpacklo_epi8(lo, hi);
        b = _mm256_unpackhi_epi8(lo, hi);
        _mm256_storeu_si256((__m256i*)(out + 2 * i), _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i*)(out + 2 * i + 32), _mm256_permute2x128_si256(a, b, 0x31));
    }
    join_joint_portable(out + 2 * i, n - i, sym + i, packed, first + i, base);
}
#endif

void glyd_tensorJoinJoint(void* dst, size_t n, const uint8_t* symbols, const uint8_t* packed,
                          uint64_t firstElement, uint8_t base)
{
#if TENSOR_HAVE_AVX2
    if (have_avx2() && __builtin_cpu_supports("bmi2")) {
        join_joint_avx2((uint8_t*)dst, n, symbols, packed, firstElement, base);
        return;
    }
#endif
    join_joint_portable((uint8_t*)dst, n, symbols, packed, firstElement, base);
}

void glyd_tensorJoin(unsigned dtype, void* dst, size_t n, const uint8_t* symbols, const uint8_t* const* planes)
{
    uint8_t* const out = (uint8_t*)dst;
    size_t i;
    switch (dtype) {
    case GLYD_DTYPE_BF16:
#if TENSOR_HAVE_AVX2
        if (have_avx2()) { join_bf16_avx2(out, n, symbols, planes[0]); break; }
#endif
        join_bf16_portable(out, n, symbols, planes[0]);
        break;
    case GLYD_DTYPE_F16:
#if TENSOR_HAVE_AVX2
        if (have_avx2()) { join_f16_avx2(out, n, symbols, planes[0]); break; }
#endif
        for (i = 0; i < n; i++) {
            out[2 * i] = planes[0][i];
            out[2 * i + 1] = symbols[i];
        }
        break;
    case GLYD_DTYPE_F32:
        for (i = 0; i < n; i++) {
            uint32_t const p2 = planes[2][i];
            uint32_t const v = ((p2 & 0x80) << 24) | ((uint32_t)symbols[i] << 23) | ((p2 & 0x7F) << 16) |
                               ((uint32_t)planes[1][i] << 8) | planes[0][i];
            glyd_write32(out + 4 * i, v);
        }
        break;
    default:
        memcpy(out, symbols, n);
        break;
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.h: the base layer shared by every part of libglyd: error plumbing,
 * allocation, little-endian memory access, bit streams and a thread pool.
 * It depends on nothing but the C library, pthreads and the public header.
 */
#ifndef GLYD_COMMON_H
#define GLYD_COMMON_H

#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "glyd.h"

/* ------------------------------------------------------------------------ */
/* Compiler helpers                                                         */
/* ------------------------------------------------------------------------ */

#if defined(__GNUC__)
#  define GLYD_LIKELY(x)   __builtin_expect(!!(x), 1)
#  define GLYD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define GLYD_FORCE_INLINE static inline __attribute__((always_inline))
#  define GLYD_NOINLINE __attribute__((noinline))
#  define GLYD_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 3)
#else
#  define GLYD_LIKELY(x)   (x)
#  define GLYD_UNLIKELY(x) (x)
#  define GLYD_FORCE_INLINE static inline
#  define GLYD_NOINLINE
#  define GLYD_PREFETCH(p) ((void)(p))
#endif

/* Hot decoding loops are compiled a second time for BMI2, whose shifts by a
 * register amount (the bit readers' daily bread) are single instructions
 * that leave the flags alone; the CPU is asked at run time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  define GLYD_DYNAMIC_BMI2 1
#  define GLYD_TARGET_BMI2 __attribute__((target("bmi,bmi2")))
GLYD_FORCE_INLINE int glyd_cpuHasBmi2(void) { return __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"); }
#else
#  define GLYD_DYNAMIC_BMI2 0
#  define GLYD_TARGET_BMI2
GLYD_FORCE_INLINE int glyd_cpuHasBmi2(void) { return 0; }
#endif

#define GLYD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GLYD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GLYD_KB (1u << 10)
#define GLYD_MB (1u << 20)

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

#define GLYD_ERROR(name) ((size_t)-(int)GLYD_error_##name)

/* Inside the library: bail out with an error when `cond` holds. The message
 * documents the reason at the call site; it is not stored. */
#define RETURN_ERROR_IF(cond, err, why) \
    do { if (GLYD_UNLIKELY(cond)) { (void)(why); return GLYD_ERROR(err); } } while (0)
#define RETURN_ERROR(err, why) \
    do { (void)(why); return GLYD_ERROR(err); } while (0)
/* glyd_isError() for inside the library, where a call would cost. */
#define GLYD_IS_ERROR(code) ((size_t)(code) > GLYD_ERROR(maxCode))

/* Propagates an error result of an inner call. */
#define FORWARD_IF_ERROR(expr)                                  \
    do { size_t const fwd_e_ = (expr);                          \
         if (GLYD_UNLIKELY(GLYD_IS_ERROR(fwd_e_))) return fwd_e_; } while (0)

/* ------------------------------------------------------------------------ */
/* Allocation                                                               */
/* ------------------------------------------------------------------------ */

void* glyd_malloc(size_t size, glyd_customMem mem);
void* glyd_calloc(size_t size, glyd_customMem mem);
void  glyd_free(void* ptr, glyd_customMem mem);

/* A scratch buffer that keeps its memory between uses. */
typedef struct {
    uint8_t* buf;
    size_t cap;
} glyd_buffer;
/* At least `need` bytes in b (its contents not kept); 0 or memory_allocation. */
size_t glyd_bufferReserve(glyd_buffer* b, size_t need, glyd_customMem mem);
void glyd_bufferFree(glyd_buffer* b, glyd_customMem mem);
/* A custom allocator must set both functions or neither. */
int   glyd_customMemValid(glyd_customMem mem);

/* ------------------------------------------------------------------------ */
/* Little-endian memory access (unaligned-safe; memcpy compiles to a move)  */
/* ------------------------------------------------------------------------ */

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "libglyd currently assumes a little-endian target"
#endif

GLYD_FORCE_INLINE uint16_t glyd_read16(const void* p) { uint16_t v; memcpy(&v, p, 2); return v; }
GLYD_FORCE_INLINE uint32_t glyd_read32(const void* p) { uint32_t v; memcpy(&v, p, 4); return v; }
GLYD_FORCE_INLINE uint64_t glyd_read64(const void* p) { uint64_t v; memcpy(&v, p, 8); return v; }
GLYD_FORCE_INLINE size_t   glyd_readST(const void* p) { size_t v; memcpy(&v, p, sizeof v); return v; }
GLYD_FORCE_INLINE void glyd_write16(void* p, uint16_t v) { memcpy(p, &v, 2); }
/* Two bytes, the low one first, whatever the host's byte order. */
GLYD_FORCE_INLINE void glyd_writeLE16(void* p, uint16_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 2);
#else
    ((uint8_t*)p)[0] = (uint8_t)v;
    ((uint8_t*)p)[1] = (uint8_t)(v >> 8);
#endif
}
GLYD_FORCE_INLINE void glyd_write32(void* p, uint32_t v) { memcpy(p, &v, 4); }
GLYD_FORCE_INLINE void glyd_write64(void* p, uint64_t v) { memcpy(p, &v, 8); }

GLYD_FORCE_INLINE uint32_t glyd_read24(const void* p)
{
    const uint8_t* b = (const uint8_t*)p;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16);
}

/* Index of the highest set bit; v must be non-zero. */
GLYD_FORCE_INLINE unsigned glyd_highbit32(uint32_t v)
{
    assert(v != 0);
    return 31u - (unsigned)__builtin_clz(v);
}
GLYD_FORCE_INLINE unsigned glyd_highbit64(uint64_t v)
{
    assert(v != 0);
    return 63u - (unsigned)__builtin_clzll(v);
}
/* Index of the lowest set bit; v must be non-zero. */
GLYD_FORCE_INLINE unsigned glyd_lowbit64(uint64_t v)
{
    assert(v != 0);
    return (unsigned)__builtin_ctzll((unsigned long long)v);
}
/* Number of equal low-order bytes implied by a non-zero xor of two words. */
GLYD_FORCE_INLINE unsigned glyd_nbCommonBytes(size_t diff)
{
    assert(diff != 0);
    return (unsigned)__builtin_ctzll((unsigned long long)diff) >> 3;
}

/* Length of the common prefix of ip and match, reading ip no further than
 * iLimit (match may be anywhere readable for that many bytes). */
GLYD_FORCE_INLINE size_t glyd_count(const uint8_t* ip, const uint8_t* match, const uint8_t* iLimit)
{
    const uint8_t* const start = ip;
    const uint8_t* const iLimitW = iLimit - (sizeof(size_t) - 1);
    while (ip < iLimitW) {
        size_t const diff = glyd_readST(match) ^ glyd_readST(ip);
        if (diff) return (size_t)(ip - start) + glyd_nbCommonBytes(diff);
        ip += sizeof(size_t);
        match += sizeof(size_t);
    }
    while (ip < iLimit && *match == *ip) { ip++; match++; }
    return (size_t)(ip - start);
}

/* ------------------------------------------------------------------------ */
/* Variable-length integers (LEB128, little-endian groups of 7 bits)        */
/* ------------------------------------------------------------------------ */

#define GLYD_VARINT_MAX 10

/* Writes v at dst; returns the number of bytes written, or 0 if cap is short. */
size_t glyd_writeVarint(uint8_t* dst, size_t cap, uint64_t v);
/* Reads a varint into *v; returns bytes read, or 0 if src is truncated or
 * the encoding is longer than needed to hold a 64-bit value. */
size_t glyd_readVarint(const uint8_t* src, size_t size, uint64_t* v);
size_t glyd_varintSize(uint64_t v);

/* ------------------------------------------------------------------------ */
/* Backward bit stream: the entropy coders' transport                       */
/*                                                                          */
/* The writer appends fields low bits first; closing adds a 1 bit that marks */
/* the end. The reader starts at that marker and reads fields in the reverse */
/* order, most recent first, so that a coder that must decode in the reverse */
/* order of encoding (ANS) and one that need not (Huffman) share one stream. */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint64_t acc;       /* pending bits, low bits first */
    unsigned nbBits;    /* number of pending bits, < 64 */
    uint8_t* start;
    uint8_t* ptr;       /* next byte to store */
    uint8_t* end;       /* last position a full 8-byte store may start */
    int overflow;       /* set when the output buffer ran out */
} glyd_bitWriter;

/* The caller guarantees cap >= 8 (stores are whole 8-byte words). */
GLYD_FORCE_INLINE void glyd_bitWriterInit(glyd_bitWriter* bw, void* dst, size_t cap)
{
    assert(cap >= 8);
    bw->acc = 0;
    bw->nbBits = 0;
    bw->start = (uint8_t*)dst;
    bw->ptr = bw->start;
    bw->end = bw->start + cap - 8;
    bw->overflow = 0;
}

/* Adds the low nb bits of v (v must fit in nb bits). At most 63 bits may be
 * pending, so up to 56 bits fit after a flush. */
GLYD_FORCE_INLINE void glyd_bitWrite(glyd_bitWriter* bw, uint64_t v, unsigned nb)
{
    assert(nb <= 56);
    assert(nb == 64 || (v >> nb) == 0);
    assert(bw->nbBits + nb < 64);
    bw->acc |= v << bw->nbBits;
    bw->nbBits += nb;
}

/* Stores whole pending bytes; leaves at most 7 bits pending. */
GLYD_FORCE_INLINE void glyd_bitFlush(glyd_bitWriter* bw)
{
    size_t const nbBytes = bw->nbBits >> 3;
    glyd_write64(bw->ptr, bw->acc);
    bw->ptr += nbBytes;
    if (GLYD_UNLIKELY(bw->ptr > bw->end)) { bw->ptr = bw->end; bw->overflow = 1; }
    bw->nbBits &= 7;
    bw->acc >>= nbBytes * 8;
}

/* Adds the end marker and stores everything. Returns the stream size, or 0
 * if the destination was too small. */
GLYD_FORCE_INLINE size_t glyd_bitWriterClose(glyd_bitWriter* bw)
{
    glyd_bitWrite(bw, 1, 1);
    glyd_bitFlush(bw);
    if (bw->overflow) return 0;
    return (size_t)(bw->ptr - bw->start) + (bw->nbBits > 0);
}

typedef struct {
    uint64_t bits;        /* 8 bytes of the stream; consumed from the top */
    unsigned consumed;    /* bits of `bits` already read; > 64 means overread */
    const uint8_t* ptr;   /* where `bits` was loaded from */
    const uint8_t* start;
} glyd_bitReader;

typedef enum {
    glyd_bit_unfinished = 0, /* at least 57 fresh bits are loaded */
    glyd_bit_endOfBuffer,    /* fewer remain, all loaded */
    glyd_bit_completed,      /* exactly every bit was read */
    glyd_bit_overflow        /* more bits were read than the stream holds */
} glyd_bitStatus;

/* Returns 0 on success, or an error if the stream is empty or its last byte
 * lacks the end marker. */
size_t glyd_bitReaderInit(glyd_bitReader* br, const void* src, size_t size);

/* Peeks the next nb bits (1..57) without consuming them. Shifts are masked
 * so that an overread stays defined behaviour; glyd_bitReload reports it. */
GLYD_FORCE_INLINE uint64_t glyd_bitPeek(const glyd_bitReader* br, unsigned nb)
{
    assert(nb >= 1 && nb <= 57);
    return ((br->bits << (br->consumed & 63)) >> 1) >> ((63 - nb) & 63);
}
/* Variant for nb known to be >= 1 and a stream known not to be overread. */
GLYD_FORCE_INLINE uint64_t glyd_bitPeekFast(const glyd_bitReader* br, unsigned nb)
{
    return (br->bits << (br->consumed & 63)) >> (64 - nb);
}
GLYD_FORCE_INLINE void glyd_bitSkip(glyd_bitReader* br, unsigned nb) { br->consumed += nb; }

/* The nb (0..63) bits that follow the first `consumed` bits of a 64-bit
 * container read from the top, when consumed + nb <= 64: no branch, no
 * masking, and on values a loop holds in registers. */
GLYD_FORCE_INLINE uint64_t glyd_bitsTop(uint64_t bits, unsigned consumed, unsigned nb)
{
    assert(consumed + nb <= 64);
    return ((bits << consumed) >> 1) >> (63 - nb);
}

/* The low n bits of v, n < 64 (one BZHI where the CPU has BMI2). */
GLYD_FORCE_INLINE uint64_t glyd_lowBits(uint64_t v, unsigned n) { return v & ((1ULL << n) - 1); }

/* Reads nb bits (0..57). */
GLYD_FORCE_INLINE uint64_t glyd_bitRead(glyd_bitReader* br, unsigned nb)
{
    uint64_t v;
    if (nb == 0) return 0;
    v = glyd_bitPeek(br, nb);
    br->consumed += nb;
    return v;
}

/* Refills `bits`; afterwards at least 57 unread bits are loaded unless the
 * stream is near its start. */
GLYD_FORCE_INLINE glyd_bitStatus glyd_bitReload(glyd_bitReader* br)
{
    size_t nbBytes;
    glyd_bitStatus status = glyd_bit_unfinished;
    if (GLYD_UNLIKELY(br->consumed > 64)) return glyd_bit_overflow;
    if (GLYD_LIKELY(br->ptr >= br->start + 8)) {
        /* moving back at most 8 bytes stays inside the stream */
        br->ptr -= br->consumed >> 3;
        br->consumed &= 7;
        br->bits = glyd_read64(br->ptr);
        return glyd_bit_unfinished;
    }
    if (br->ptr == br->start)
        return br->consumed == 64 ? glyd_bit_completed : glyd_bit_endOfBuffer;
    nbBytes = br->consumed >> 3;
    if ((size_t)(br->ptr - br->start) < nbBytes) {
        nbBytes = (size_t)(br->ptr - br->start);
        status = glyd_bit_endOfBuffer;
    }
    br->ptr -= nbBytes;
    br->consumed -= (unsigned)(nbBytes * 8);
    br->bits = glyd_read64(br->ptr);
    return status;
}

/* True once every bit of the stream has been read, no more and no less. */
GLYD_FORCE_INLINE int glyd_bitFinished(const glyd_bitReader* br)
{
    return br->ptr == br->start && br->consumed == 64;
}

/* ------------------------------------------------------------------------ */
/* Forward bit stream, for small headers (table descriptions)               */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint8_t* dst;
    size_t cap;
    size_t pos;      /* bytes completed */
    uint32_t acc;
    unsigned nbBits;
    int overflow;
} glyd_fwdWriter;

void glyd_fwdWriterInit(glyd_fwdWriter* w, void* dst, size_t cap);
void glyd_fwdWrite(glyd_fwdWriter* w, uint32_t v, unsigned nb); /* nb <= 24 */
/* Pads to a byte boundary; returns bytes written or 0 on overflow. */
size_t glyd_fwdWriterClose(glyd_fwdWriter* w);

typedef struct {
    const uint8_t* src;
    size_t size;
    size_t bitPos;
} glyd_fwdReader;

void glyd_fwdReaderInit(glyd_fwdReader* r, const void* src, size_t size);
/* Reads nb bits (<= 24); bits past the end read as 0 and set bitPos past
 * size*8, which glyd_fwdReaderOverrun() reports. */
uint32_t glyd_fwdRead(glyd_fwdReader* r, unsigned nb);
GLYD_FORCE_INLINE int glyd_fwdReaderOverrun(const glyd_fwdReader* r) { return r->bitPos > r->size * 8; }
GLYD_FORCE_INLINE size_t glyd_fwdReaderBytes(const glyd_fwdReader* r) { return (r->bitPos + 7) / 8; }

/* ------------------------------------------------------------------------ */
/* Checksums (libxxhash)                                                    */
/* ------------------------------------------------------------------------ */

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

/* A frame's content checksum: XXH3-64 (seed 0) in frames that say so,
 * XXH64 (seed 0) in the others. XXH3 runs about three times as fast where
 * the CPU has AVX2, which the library uses when it finds it. */
typedef enum { glyd_csum_xxh64 = 0, glyd_csum_xxh3 = 1 } glyd_csumKind;

typedef struct {
    glyd_csumKind kind;
    XXH64_state_t x64;
    /* an XXH3 state, placed at a 64-byte boundary inside: XXH3 wants that
     * alignment, which allocators do not give. So a glyd_csum must not be
     * copied once reset. */
    unsigned char x3[sizeof(XXH3_state_t) + 64];
} glyd_csum;

void glyd_csumReset(glyd_csum* c, glyd_csumKind kind);
void glyd_csumUpdate(glyd_csum* c, const void* src, size_t size);
uint64_t glyd_csumDigest(glyd_csum* c);
uint64_t glyd_csumOnce(glyd_csumKind kind, const void* src, size_t size);

/* checksum_avx2.c: XXH3 compiled for AVX2 where the build allows it
 * (glyd_xxh3Avx2Built() says whether it did). The state is an aligned
 * XXH3_state_t. */
int glyd_xxh3Avx2Built(void);
uint64_t glyd_xxh3Avx2(const void* src, size_t size);
void glyd_xxh3Avx2Reset(void* state);
void glyd_xxh3Avx2Update(void* state, const void* src, size_t size);
uint64_t glyd_xxh3Avx2Digest(const void* state);

/* ------------------------------------------------------------------------ */
/* Thread pool                                                              */
/* ------------------------------------------------------------------------ */

typedef struct glyd_pool_s glyd_pool;
typedef void (*glyd_poolJob)(void* arg);

/* Starts nbThreads workers; returns NULL on failure. */
glyd_pool* glyd_poolCreate(unsigned nbThreads, glyd_customMem mem);
/* Waits for every queued job, then stops and frees the pool; NULL is fine. */
void glyd_poolFree(glyd_pool* pool);
/* Queues a job; blocks while the queue is full. */
void glyd_poolAdd(glyd_pool* pool, glyd_poolJob job, void* arg);
/* Waits until every job queued so far has finished. */
void glyd_poolWait(glyd_pool* pool);
unsigned glyd_poolSize(const glyd_pool* pool);

/* Number of online processors, at least 1. */
unsigned glyd_nbCores(void);

#endif /* GLYD_COMMON_H */

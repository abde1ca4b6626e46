/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor.h: lossless codecs for floating-point tensors (docs/FORMAT.md,
 * "Tensor blobs"). Each element splits into an 8-bit symbol that carries
 * most of the redundancy (the exponent, for bf16) and raw bytes that carry
 * almost none (sign and mantissa). Symbols are entropy-coded in units of
 * whole matrix rows, so that a unit can be decoded alone, by one thread, just
 * before the rows it holds are used.
 */
#ifndef GLYD_TENSOR_H
#define GLYD_TENSOR_H

#include "glyd_tensor.h"
#include "../entropy/entropy.h"

#define GLYD_TENSOR_MAGIC      0x54594C47U /* "GLYT" */
#define GLYD_TENSOR_VERSION    1
#define GLYD_TENSOR_HEADER     32
#define GLYD_TENSOR_PAD        8          /* zero bytes after the symbol streams */
#define GLYD_TENSOR_UNIT_MAX   (1u << 20) /* elements in one unit, at most */
#define GLYD_TENSOR_FAST_CODES 7          /* the fast layout's direct codes; code 7 escapes */
#define GLYD_TENSOR_NIBBLE_CODES 15       /* its 4-bit form (bf16): code 15 escapes */
/* Tensors smaller than this are coded in the calling thread: starting
 * workers would cost more than they save. */
#define GLYD_TENSOR_MT_MIN     (1u << 20)

/* A blob's layout byte (docs/FORMAT.md); glyd_getTensorInfo reports it as
 * a glyd_tensorLayout, the kernels read it as GK_LAYOUT_*. */
enum {
    GLYD_TLAYOUT_STORED = 0,   /* the tensor's bytes as they are */
    GLYD_TLAYOUT_CONSTANT = 1, /* every symbol equal: only raw planes */
    GLYD_TLAYOUT_HUFFMAN = 2,  /* symbols Huffman-coded in units */
    GLYD_TLAYOUT_FAST = 3      /* symbols in 3-bit (or 4-bit) codes with escapes */
};

/* A KV page's first byte (kv_page.c). */
enum {
    GLYD_KV_STORED = 0, /* the values as they are, two bytes each, low first */
    GLYD_KV_TIERED = 1  /* signs and mantissas, 2-bit codes, 3-bit escapes, raw exponents */
};

/* How symbols are cut from elements (header byte 7). */
enum {
    GLYD_TSPLIT_PLAIN = 0, /* the dtype's rule below; planes of whole bytes */
    GLYD_TSPLIT_JOINT = 1  /* bf16: symbol = (exponent - base) and the top
                            * mantissa bit; sign and 6 mantissa bits packed
                            * 7 bits per element */
};

/* How a dtype splits: bytes per element, and raw planes beside the symbol. */
typedef struct {
    unsigned elemSize;
    unsigned nbPlanes;
} glyd_dtypeShape;

int glyd_dtypeShapeOf(unsigned dtype, glyd_dtypeShape* shape);

/* Splits n elements into symbols and raw planes (planes[k] has n bytes). */
void glyd_tensorSplit(unsigned dtype, const void* src, size_t n, uint8_t* symbols, uint8_t* const* planes);
/* The inverse: joins symbols and planes back into elements. */
void glyd_tensorJoin(unsigned dtype, void* dst, size_t n, const uint8_t* symbols, const uint8_t* const* planes);

/* The joint split (bf16): symbols and 7-bit fields (sign << 6 | low 6
 * mantissa bits), one byte each; and their inverse into elements, reading
 * the fields packed (element e at bits 7e..7e+6, low bits first). */
void glyd_tensorSplitJoint(const void* src, size_t n, uint8_t base, uint8_t* symbols, uint8_t* fields);
void glyd_tensorPack7(uint8_t* dst, const uint8_t* fields, size_t n);
void glyd_tensorJoinJoint(void* dst, size_t n, const uint8_t* symbols, const uint8_t* packed,
                          uint64_t firstElement, uint8_t base);

/* A parsed, validated blob; pointers refer into the blob's memory. */
typedef struct {
    unsigned dtype;
    unsigned layout;
    unsigned split;            /* GLYD_TSPLIT_* */
    uint8_t symBase;           /* joint split: the smallest exponent */
    glyd_dtypeShape shape;
    uint64_t nbElements;
    uint32_t unitSize;
    uint32_t rowLength;
    uint64_t nbUnits;
    uint64_t checksum;
    /* huffman */
    glyd_hufDTable huf;
    const uint8_t* unitEnds;   /* nbUnits little-endian u32: end of each unit's stream */
    const uint8_t* streams;
    uint64_t streamBytes;
    /* constant */
    uint8_t constSymbol;
    /* fast */
    unsigned fastCodes;        /* direct codes: GLYD_TENSOR_FAST_CODES or _NIBBLE_CODES */
    uint8_t fastSymbols[GLYD_TENSOR_NIBBLE_CODES];
    const uint8_t* escapeEnds; /* nbUnits little-endian u32: escapes up to each unit's end */
    const uint8_t* codePlanes; /* per group of 32 elements: 3 x u32 bit planes, or 16 bytes of
                                * nibbles (glyd_nibbleByte) */
    const uint8_t* escapes;
    /* stored */
    const uint8_t* stored;
    const uint8_t* planes[3];
    size_t blobSize;
} glyd_tensorView;

/* Parses and checks a blob's structure (not its checksum). */
size_t glyd_tensorOpen(glyd_tensorView* v, const void* src, size_t srcSize);

/* Multi-symbol decoding table of a Huffman layout: each entry decodes up to
 * four symbols from the next maxBits bits. */
typedef struct {
    unsigned maxBits;
    uint64_t entry[1 << GLYD_HUF_MAX_BITS]; /* symbols in bytes 0-3, count byte 4, bits byte 5 */
} glyd_tensorDTable;

void glyd_tensorBuildDTable(glyd_tensorDTable* t, const glyd_hufDTable* huf);

/* Decodes the symbols of units [first, first + count) into symbols[]
 * (the units' elements, with 4 bytes of slack after them). */
size_t glyd_tensorDecodeSymbols(const glyd_tensorView* v, const glyd_tensorDTable* t, uint64_t first,
                                uint64_t count, uint8_t* symbols);

/* Decodes units [first, first + count) into elements at dst. scratch holds
 * four units of symbols plus slack (glyd_tensorScratchSize). */
size_t glyd_tensorDecodeUnits(const glyd_tensorView* v, const glyd_tensorDTable* t, uint64_t first,
                              uint64_t count, void* dst, uint8_t* scratch);
size_t glyd_tensorScratchSize(const glyd_tensorView* v);

/* Where element j (0-31) of a group has its 4-bit code: in byte
 * glyd_nibbleByte(j) of the group's 16, shifted up by glyd_nibbleShift(j).
 * Bytes 0-7 hold elements 0-7 in their low halves and 8-15 in their high
 * ones, bytes 8-15 elements 16-23 and 24-31: so that one 16-byte load,
 * shifted and masked, gives the codes in the order AVX2 joins elements
 * from (elements 0-7, 16-23 in the low 128-bit lane, 8-15, 24-31 in the
 * high one). */
static inline unsigned glyd_nibbleByte(unsigned j) { return (j & 7) | (j >> 4) << 3; }
static inline unsigned glyd_nibbleShift(unsigned j) { return j & 8 ? 4 : 0; }

/* Bytes of codes per group of 32 elements in a fast-layout blob. */
static inline size_t glyd_fastGroupBytes(unsigned fastCodes)
{
    return fastCodes == GLYD_TENSOR_NIBBLE_CODES ? 16 : 12;
}

/* A bf16 tensor written into the fast layout a piece at a time, at exactly
 * its size: its exponents counted first (glyd_fastCount over every
 * element), then the blob begun, the elements put in order, and ended. No
 * copy of the tensor and nothing per element exists beside the blob.
 * codes: GLYD_TENSOR_FAST_CODES (3-bit codes, the form files hold) or
 * GLYD_TENSOR_NIBBLE_CODES (4-bit codes: 0.5 bit more per element, escapes
 * about a hundred times rarer, and cheaper to read with AVX2). */
typedef struct {
    uint64_t n, done;
    uint32_t unitSize;
    unsigned codes;
    uint64_t nbEscapes, escaped;
    uint8_t code[256];
    uint8_t *raw, *ends, *planes, *escapes;
    uint32_t word[4];       /* the current group's code bits (3-bit codes), or nibbles */
    size_t size;
} glyd_fastWriter;

void glyd_fastCount(uint64_t count[256], const uint16_t* elems, size_t n);
/* The blob's size for these counts (0 for no elements). */
size_t glyd_fastWriterSize(const uint64_t count[256], uint64_t rowLength, unsigned codes);
size_t glyd_fastWriterBegin(glyd_fastWriter* w, void* dst, size_t dstCapacity, const uint64_t count[256],
                            uint64_t rowLength, unsigned codes, uint64_t checksum);
size_t glyd_fastWriterPut(glyd_fastWriter* w, const uint16_t* elems, size_t n);
/* The blob's size, once every counted element was put. */
size_t glyd_fastWriterEnd(const glyd_fastWriter* w);

/* The widest instructions tensor decoders may use, for tests of every path
 * on one machine: GLYD_SIMD_NONE (portable code), GLYD_SIMD_AVX2, or
 * GLYD_SIMD_BEST (the default: whatever the CPU has). */
enum { GLYD_SIMD_NONE = 0, GLYD_SIMD_AVX2 = 1, GLYD_SIMD_AVX512 = 2, GLYD_SIMD_BEST = 2 };
void glyd_tensorSimdLimit(int level);
/* The limit set (GLYD_SIMD_BEST unless changed); the engine's products
 * keep to it too. */
int glyd_tensorSimdLimitGet(void);

/* The unit size the encoder picks: whole rows of about 4096 elements, or an
 * even split of a longer row. */
uint32_t glyd_tensorUnitSize(uint64_t nbElements, uint64_t rowLength);

#endif /* GLYD_TENSOR_H */

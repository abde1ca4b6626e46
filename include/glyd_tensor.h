/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glyd_tensor.h: floating-point tensors in Glyd's tensor codec, and packed
 * models (a model folder in one file, every tensor in the tensor codec).
 *
 * The tensor codec is part of libglyd, beside the general codec of glyd.h,
 * whose conventions it follows (size_t results, glyd_isError). Packed models
 * are read and written by libglyd-llm, since their index is JSON: link
 * -lglyd-llm (pkg-config glyd-llm) to use them.
 *
 * The formats are specified in docs/FORMAT.md, "Tensor blobs" and "Packed
 * models".
 */
#ifndef GLYD_TENSOR_API_H
#define GLYD_TENSOR_API_H

#include "glyd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Tensor codec                                                             */
/* ------------------------------------------------------------------------ */

/* Floating-point tensors, lossless: every bit of every element comes back,
 * NaN payloads, infinities, subnormals and negative zeros included. An
 * element's exponent (for bf16 and fp32; the high byte for fp16; the whole
 * byte for fp8) is entropy-coded, the rest is stored as is. The blob format
 * is specified in docs/FORMAT.md, "Tensor blobs". */
typedef enum {
    GLYD_DTYPE_BF16    = 1,
    GLYD_DTYPE_F16     = 2,
    GLYD_DTYPE_F32     = 3,
    GLYD_DTYPE_F8_E4M3 = 4,
    GLYD_DTYPE_F8_E5M2 = 5
} glyd_dtype;

typedef enum {
    /* The entropy-coded layout, or the tensor stored as is if that is
     * smaller (as for random bits). */
    glyd_tensor_auto    = 0,
    /* Huffman-coded symbols in units of whole rows: the smallest, for
     * storage and transfer. */
    glyd_tensor_entropy = 1,
    /* 3-bit codes for the 7 most frequent symbols, escapes for the rest: a
     * few tenths of a bit larger, decoded with SIMD shuffles, for weights
     * held in memory while a model runs. */
    glyd_tensor_fast    = 2,
    /* How a blob may also be laid out, as glyd_getTensorInfo reports it;
     * not asked of glyd_tensorCompress. The tensor's bytes as they are
     * (what auto writes where coding would not pay): */
    glyd_tensor_stored  = 3,
    /* Every exponent the same: only the raw sign and mantissa bits. */
    glyd_tensor_constant = 4
} glyd_tensorLayout;

/** Largest blob that nbElements of dtype can produce (0 if dtype is unknown). */
GLYD_API size_t glyd_tensorCompressBound(size_t nbElements, glyd_dtype dtype);

/** Compresses a tensor of nbElements elements of dtype (little-endian
 *  values). rowLength: elements per row for a matrix (units of the blob then
 *  hold whole rows), 0 for a vector or unknown. layout: auto, entropy or
 *  fast. nbThreads: 0 or 1 = the calling thread, at most GLYD_THREADS_MAX.
 *  Returns the blob's size, or an error. */
GLYD_API size_t glyd_tensorCompress(void* dst, size_t dstCapacity, const void* src, size_t nbElements,
                                    glyd_dtype dtype, size_t rowLength, glyd_tensorLayout layout,
                                    unsigned nbThreads);

/** Decompresses a blob into dst and verifies its checksum. Returns the
 *  number of bytes written (elements x element size), or an error. The
 *  decoder never reads or writes out of bounds, whatever the blob. */
GLYD_API size_t glyd_tensorDecompress(void* dst, size_t dstCapacity, const void* src, size_t srcSize,
                                      unsigned nbThreads);

typedef struct {
    glyd_dtype dtype;
    glyd_tensorLayout layout;        /* entropy, fast, stored or constant: never auto */
    unsigned long long nbElements;
    unsigned long long nbUnits;
    unsigned unitSize;               /* elements per unit */
    unsigned rowLength;
    unsigned long long contentSize;  /* bytes once decompressed */
    unsigned long long blobSize;
} glyd_tensorInfo;

/** Reads a blob's header into *info (structure checked, not the checksum).
 *  Returns the blob's size or an error. */
GLYD_API size_t glyd_getTensorInfo(glyd_tensorInfo* info, const void* src, size_t srcSize);

/* ------------------------------------------------------------------------ */
/* KV pages                                                                 */
/* ------------------------------------------------------------------------ */

/* A bf16 KV cache's keys or values, a page at a time: the values of a run
 * of positions of one layer and KV head, in any order the caller keeps
 * (position-major, say, headDim values a position). Every value comes back
 * exactly. A value's sign and mantissa take a byte; its exponent a 2-bit
 * code if it is one of the table's first three, 3 bits more if one of its
 * next seven, 8 more otherwise (docs/FORMAT.md, "KV pages"). The table is
 * the caller's to keep beside the pages it codes: fitted on a stream's
 * first pages (glyd_kvTableFit), refitted when glyd_kvPageSize says a new
 * one would pay. A page that coding does not shrink is stored. */
#define GLYD_KV_PAGE_MAX   65536 /* values in a page, at most */
#define GLYD_KV_TABLE_SIZE 10
typedef struct {
    unsigned char exponent[GLYD_KV_TABLE_SIZE]; /* the most frequent first */
} glyd_kvTable;

/** The table of values[0..n): their ten most frequent exponents (exponents
 *  no value has complete it, so that all ten differ). */
GLYD_API void glyd_kvTableFit(glyd_kvTable* table, const unsigned short* values, size_t n);
/** Largest page of n values: 1 + 2n. */
GLYD_API size_t glyd_kvPageBound(size_t n);
/** Bytes glyd_kvPageEncode would write, computed without writing them. */
GLYD_API size_t glyd_kvPageSize(const unsigned short* values, size_t n, const glyd_kvTable* table);
/** Codes n bf16 values (1..GLYD_KV_PAGE_MAX) under table. Returns the
 *  page's size or an error. */
GLYD_API size_t glyd_kvPageEncode(void* dst, size_t dstCapacity, const unsigned short* values, size_t n,
                                  const glyd_kvTable* table);
/** The n values of a page of exactly srcSize bytes, coded under table.
 *  Returns n or an error (corruption_detected); never reads or writes out
 *  of bounds, whatever the page holds. */
GLYD_API size_t glyd_kvPageDecode(unsigned short* dst, size_t n, const void* src, size_t srcSize,
                                  const glyd_kvTable* table);

/* ------------------------------------------------------------------------ */
/* Packed models (libglyd-llm)                                              */
/* ------------------------------------------------------------------------ */

/* A packed model is one file holding a model folder: its safetensors files
 * with every floating-point tensor in the tensor codec, and every other
 * file (config, tokenizer) in the general codec, with an index. Unpacking
 * gives back each original file byte for byte. Format: docs/FORMAT.md,
 * "Packed models". */

typedef struct {
    unsigned nbThreads;          /* 0 or 1: the calling thread */
    int level;                   /* general-codec level for other files; 0 = 9 */
    glyd_tensorLayout layout;    /* auto = the entropy layout where it pays */
    /* progress: bytes of input done out of total; may be NULL */
    void (*progress)(void* opaque, unsigned long long done, unsigned long long total);
    void* opaque;
    /* when not NULL: receives a one-line reason on error (file, cause) */
    char* message;
    size_t messageCapacity;
} glyd_packParams;

/** Packs the files of modelDir (searched recursively; a single file is packed
 *  alone) into outPath. A regular file (new or replaced) is written under a
 *  temporary name beside it, synced and renamed when complete; a device or
 *  FIFO is written in place, never replaced; a symbolic link is followed to
 *  the file it names (a link to nothing is refused). params may be NULL.
 *  Returns the packed file's size or an error. */
GLYD_API size_t glyd_packModel(const char* modelDir, const char* outPath, const glyd_packParams* params);

/** True (1) when the file at path starts like a packed model. */
GLYD_API unsigned glyd_isPackedModel(const char* path);

typedef struct glyd_model_s glyd_model;

/** Opens a packed model (mapped read-only) after checking its index.
 *  Returns NULL on failure, with *error set (and params->message, if any). */
GLYD_API glyd_model* glyd_modelOpen(const char* path, const glyd_packParams* params, size_t* error);
GLYD_API void glyd_modelClose(glyd_model* model);

typedef struct {
    const char* path;                /* relative, '/'-separated */
    unsigned long long size;         /* original bytes */
    unsigned long long packedSize;   /* bytes in the packed file */
    unsigned long long checksum;     /* XXH3-64 of the original bytes */
    unsigned isSafetensors;
    size_t nbTensors;
} glyd_modelFileInfo;

typedef struct {
    const char* name;
    const char* dtype;               /* as safetensors spells it: "BF16", ... */
    unsigned ndim;
    unsigned long long shape[16];
    unsigned long long nbElements;
    unsigned long long size;         /* original bytes */
    unsigned long long packedSize;
    unsigned long long offset;       /* in the original file */
    const char* codec;               /* "tensor", "frame" or "raw" */
    unsigned long long checksum;     /* XXH3-64 of the original bytes */
    unsigned long long storedChecksum; /* XXH3-64 of the stored blob, where hasStoredChecksum */
    unsigned hasStoredChecksum;      /* 0 in packs written before the index carried it */
} glyd_modelTensorInfo;

GLYD_API size_t glyd_modelNbFiles(const glyd_model* model);
/** Total size of the packed file (index and padding included). */
GLYD_API unsigned long long glyd_modelPackedSize(const glyd_model* model);
GLYD_API size_t glyd_modelGetFile(const glyd_model* model, size_t file, glyd_modelFileInfo* info);
/** Tensors of a safetensors file, in the order of their bytes in it. */
GLYD_API size_t glyd_modelGetTensor(const glyd_model* model, size_t file, size_t tensor,
                                    glyd_modelTensorInfo* info);
/** Decodes one tensor's original bytes into dst and checks them against the
 *  index's checksum. Returns the size or an error (checksum_wrong when the
 *  tensor is damaged). */
GLYD_API size_t glyd_modelReadTensor(const glyd_model* model, size_t file, size_t tensor, void* dst,
                                     size_t dstCapacity, unsigned nbThreads);
/** Checks one tensor before its stored bytes are used where they lie: the
 *  checksum of its stored blob against the index (one pass over the bytes,
 *  no decoding), or, in a pack whose index lacks it, its decoded bytes
 *  against the checksum of the original. Returns 0, or checksum_wrong (or
 *  the decoder's error) when the tensor is damaged. */
GLYD_API size_t glyd_modelVerifyTensor(const glyd_model* model, size_t file, size_t tensor,
                                       unsigned nbThreads);

/* Receives consecutive pieces of a file; returns 0, or an error to stop. */
typedef size_t (*glyd_writeFunction)(void* opaque, const void* data, size_t size);

/** Decodes a whole original file, in order, through write, checking every
 *  checksum on the way. Returns the file's size or an error. */
GLYD_API size_t glyd_modelExtractFile(const glyd_model* model, size_t file, glyd_writeFunction write,
                                      void* opaque, unsigned nbThreads);

#ifdef __cplusplus
}
#endif
#endif /* GLYD_TENSOR_API_H */

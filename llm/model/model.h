/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model.h: model files: the safetensors format (strictly checked), sharded
 * models, and the packed model that holds a whole model folder with every
 * tensor in the tensor codec (docs/FORMAT.md, "Packed models").
 */
#ifndef GLYD_MODEL_H
#define GLYD_MODEL_H

#include <jansson.h>

#include "glyd_llm.h"

#include "../../lib/frame/frame.h"
#include "../../lib/tensor/tensor.h"

/* ------------------------------------------------------------------------ */
/* safetensors                                                              */
/* ------------------------------------------------------------------------ */

#define GLYD_ST_HEADER_MAX (100u << 20) /* larger JSON headers are refused */
#define GLYD_ST_MAX_DIMS   16

typedef enum {
    GLYD_ST_BOOL, GLYD_ST_U8, GLYD_ST_I8, GLYD_ST_I16, GLYD_ST_U16, GLYD_ST_F16, GLYD_ST_BF16,
    GLYD_ST_I32, GLYD_ST_U32, GLYD_ST_F32, GLYD_ST_F64, GLYD_ST_I64, GLYD_ST_U64,
    GLYD_ST_F8_E4M3, GLYD_ST_F8_E5M2, GLYD_ST_NB_DTYPES
} glyd_stDtype;

const char* glyd_stDtypeName(glyd_stDtype d);
unsigned glyd_stDtypeSize(glyd_stDtype d);
/* The tensor codec's dtype for a safetensors dtype, or 0 if it has none. */
unsigned glyd_stTensorCodecDtype(glyd_stDtype d);

typedef struct {
    char* name;
    glyd_stDtype dtype;
    unsigned ndim;
    uint64_t shape[GLYD_ST_MAX_DIMS];
    uint64_t nbElements;
    uint64_t begin, end;   /* within the data region */
} glyd_stTensor;

typedef struct {
    const uint8_t* base;   /* the whole file */
    size_t size;
    uint64_t headerSize;   /* JSON bytes after the 8-byte length */
    size_t dataStart;      /* 8 + headerSize */
    glyd_stTensor* tensors;/* in data order */
    size_t nbTensors;
} glyd_safetensors;

/* Parses a safetensors file held in memory. Checks: header size limit,
 * valid JSON without duplicate keys, known dtypes, shapes that match their
 * byte ranges, ranges inside the file that cover the data exactly (no
 * overlap, no gap, nothing after). Returns 0 or an error; on success the
 * caller frees with glyd_stFree. *why receives a static reason on error. */
size_t glyd_stParse(glyd_safetensors* st, const void* data, size_t size, const char** why);
void glyd_stFree(glyd_safetensors* st);

/* A header for tensors laid out in order (data offsets computed): 8-byte
 * size, compact JSON padded with spaces to 8 bytes. metadataJson: a JSON
 * object of strings, or NULL. The caller frees *header. */
size_t glyd_stWriteHeader(uint8_t** header, size_t* size, const glyd_stTensor* tensors, size_t nb,
                          const char* metadataJson);

/* ------------------------------------------------------------------------ */
/* Hugging Face folders                                                     */
/* ------------------------------------------------------------------------ */

/* model.safetensors.index.json: which shard holds each tensor. */
typedef struct {
    char** names;
    char** files;
    size_t nbEntries;
} glyd_shardIndex;

size_t glyd_shardIndexParse(glyd_shardIndex* x, const char* text, size_t size, const char** why);
const char* glyd_shardIndexFind(const glyd_shardIndex* x, const char* tensor);
void glyd_shardIndexFree(glyd_shardIndex* x);

/* ------------------------------------------------------------------------ */
/* Files                                                                    */
/* ------------------------------------------------------------------------ */

/* A read-only file mapped in memory (or read, for non-regular files). */
typedef struct {
    uint8_t* data;
    size_t size;
    int mapped;
} glyd_mappedFile;

size_t glyd_mapFile(glyd_mappedFile* f, const char* path);
void glyd_unmapFile(glyd_mappedFile* f);
/* Lets go of the pages of a mapped file under [p, p + n), read for good:
 * they leave the process's resident memory (nothing if f was read, not
 * mapped, or p is not inside it). */
void glyd_mappedRelease(const glyd_mappedFile* f, const void* p, size_t n);
/* A whole (small) file, NUL-terminated, in *data (the caller frees it). */
size_t glyd_readFile(const char* path, char** data, size_t* size);

/* ------------------------------------------------------------------------ */
/* Packed models                                                            */
/* ------------------------------------------------------------------------ */

#define GLYD_PACK_MAGIC   "\xF8GLYPACK"  /* 8 bytes, at the start and the very end */
#define GLYD_PACK_VERSION 1
#define GLYD_PACK_HEADER  64
#define GLYD_PACK_TRAILER 32
#define GLYD_PACK_ALIGN   64              /* every blob starts on such a boundary */

/* glyd_modelOpen over bytes in memory (which outlive the model). */
glyd_model* glyd_modelOpenBytes(const void* data, size_t size, const glyd_packParams* params, size_t* error);

/* A tensor's bytes as stored in the packed file (*blob points into the
 * mapping): returns its codec, 0 raw (the original bytes), 1 a frame, 2 a
 * tensor blob; -1 for an index out of range. */
int glyd_modelTensorStored(const glyd_model* model, size_t file, size_t tensor, const uint8_t** blob,
                           size_t* size);
/* glyd_mappedRelease for the packed file's mapping. */
void glyd_modelRelease(const glyd_model* model, const void* p, size_t n);

/* One file of the packed model (config.json, tokenizer.json, ...), whole,
 * checked and NUL-terminated in *data (the caller frees it). io_failed
 * when the model has no file at path. */
size_t glyd_modelReadFile(const glyd_model* model, const char* path, char** data, size_t* size);

/* Formats the one-line reason of a failure into params->message. */
void glyd_packMessage(const glyd_packParams* p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* GLYD_MODEL_H */

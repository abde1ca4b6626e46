/*
 * glyd.h: the public C API of libglyd, a general lossless compressor.
 *
 * Conventions, as in zstd:
 * - Functions that can fail return a size_t. A failure is a value for which
 *   glyd_isError() is true; glyd_getErrorName() turns it into a message and
 *   glyd_getErrorCode() into a stable glyd_ErrorCode.
 * - Contexts are created and freed in pairs (glyd_createCCtx / glyd_freeCCtx).
 *   A context may be reused for any number of frames; it is not thread-safe,
 *   but distinct contexts may be used from distinct threads.
 * - No function keeps a pointer to caller memory past its return.
 *
 * Safety: the decoder never reads outside [src, src+srcSize) nor writes outside
 * [dst, dst+dstCapacity), whatever the input bytes. Malformed, truncated or
 * hostile input yields an error code, never a crash or a hang.
 *
 * The frame format is specified in docs/FORMAT.md.
 */
#ifndef GLYD_H
#define GLYD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#  define GLYD_API __attribute__((visibility("default")))
#else
#  define GLYD_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define GLYD_VERSION_MAJOR 0
#define GLYD_VERSION_MINOR 1
#define GLYD_VERSION_PATCH 0
#define GLYD_VERSION_NUMBER \
    (GLYD_VERSION_MAJOR * 10000 + GLYD_VERSION_MINOR * 100 + GLYD_VERSION_PATCH)
#define GLYD_VERSION_STRING "0.1.0"

/** Returns GLYD_VERSION_NUMBER of the library actually linked. */
GLYD_API unsigned glyd_versionNumber(void);
/** Returns GLYD_VERSION_STRING of the library actually linked. */
GLYD_API const char* glyd_versionString(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* Values are pinned: they never change between versions, new ones are added. */
typedef enum {
    GLYD_error_no_error                      = 0,
    GLYD_error_GENERIC                       = 1,
    GLYD_error_prefix_unknown                = 10, /* not a glyd frame */
    GLYD_error_version_unsupported           = 12,
    GLYD_error_frameParameter_unsupported    = 14,
    GLYD_error_frameParameter_windowTooLarge = 16,
    GLYD_error_corruption_detected           = 20,
    GLYD_error_checksum_wrong                = 22,
    GLYD_error_contentSize_wrong             = 24,
    GLYD_error_srcSize_truncated             = 26, /* input ended inside a frame */
    GLYD_error_dictionary_corrupted          = 30,
    GLYD_error_dictionary_wrong              = 32,
    GLYD_error_parameter_unsupported         = 40,
    GLYD_error_parameter_outOfBound          = 42,
    GLYD_error_stage_wrong                   = 60,
    GLYD_error_memory_allocation             = 64,
    GLYD_error_dstSize_tooSmall              = 70,
    GLYD_error_srcSize_wrong                 = 72, /* pledged size not honoured */
    GLYD_error_dstBuffer_null                = 74,
    GLYD_error_seekTable_missing             = 76,
    GLYD_error_threads_unavailable           = 80,
    GLYD_error_io_failed                     = 90, /* a file could not be read or written */
    GLYD_error_safetensors_invalid           = 92,
    GLYD_error_pack_invalid                  = 94, /* not a packed model, or a damaged one */
    GLYD_error_content_mismatch              = 96, /* verification found a difference */
    GLYD_error_model_unsupported             = 98, /* an architecture or setting the engine lacks */
    GLYD_error_model_invalid                 = 100,/* a tensor missing or of the wrong shape */
    GLYD_error_maxCode                       = 120
} glyd_ErrorCode;

/** Returns non-zero when `code` (a size_t result) is an error. */
GLYD_API unsigned glyd_isError(size_t code);
/** Returns a static, human-readable name for the result `code`. */
GLYD_API const char* glyd_getErrorName(size_t code);
/** Returns the glyd_ErrorCode of result `code` (GLYD_error_no_error when none). */
GLYD_API glyd_ErrorCode glyd_getErrorCode(size_t code);
/** Returns a static string describing `code`. */
GLYD_API const char* glyd_getErrorString(glyd_ErrorCode code);

/* ------------------------------------------------------------------------ */
/* Levels and bounds                                                        */
/* ------------------------------------------------------------------------ */

/* Levels 1..19 trade speed for size; negative levels are the --fast=N modes
 * (level -N), faster and larger; GLYD_LEVEL_MAX is --max. 0 means default. */
#define GLYD_LEVEL_DEFAULT 3
#define GLYD_LEVEL_MAX     22
#define GLYD_LEVEL_MIN     (-64)

GLYD_API int glyd_minCLevel(void);     /* GLYD_LEVEL_MIN */
GLYD_API int glyd_maxCLevel(void);     /* GLYD_LEVEL_MAX */
GLYD_API int glyd_defaultCLevel(void); /* GLYD_LEVEL_DEFAULT */

/* Worst-case size of a one-shot compressed frame of `srcSize` bytes: usable
 * at compile time to size static buffers. (Streaming with explicit flushes
 * may produce more blocks, hence more bytes.) */
#define GLYD_COMPRESSBOUND(srcSize) ((srcSize) + ((srcSize) >> 7) + 64)
/** Same as GLYD_COMPRESSBOUND(); returns an error if srcSize is too large. */
GLYD_API size_t glyd_compressBound(size_t srcSize);

/* ------------------------------------------------------------------------ */
/* One-shot                                                                 */
/* ------------------------------------------------------------------------ */

/** Compresses src into one frame in dst, with a content checksum.
 *  Returns the frame size written, or an error (dstSize_tooSmall when dst is
 *  smaller than needed; glyd_compressBound(srcSize) is always enough). */
GLYD_API size_t glyd_compress(void* dst, size_t dstCapacity,
                              const void* src, size_t srcSize, int level);

/** Decompresses every frame in src (concatenated frames decode as one
 *  stream; skippable frames are skipped). Returns the decompressed size, or an
 *  error. Checksums present in the frames are verified. */
GLYD_API size_t glyd_decompress(void* dst, size_t dstCapacity,
                                const void* src, size_t srcSize);

#define GLYD_CONTENTSIZE_UNKNOWN (0ULL - 1)
#define GLYD_CONTENTSIZE_ERROR   (0ULL - 2)
/** Returns the content size declared by the frame header at the start of src:
 *  GLYD_CONTENTSIZE_UNKNOWN when the header does not record it,
 *  GLYD_CONTENTSIZE_ERROR when src does not start with a valid glyd frame.
 *  A skippable frame has content size 0. */
GLYD_API unsigned long long glyd_getFrameContentSize(const void* src, size_t srcSize);

/** Returns the compressed size of the first frame in src (glyd or skippable),
 *  found by walking its block headers without decoding, or an error. */
GLYD_API size_t glyd_findFrameCompressedSize(const void* src, size_t srcSize);

/** Returns the sum of the declared content sizes of every frame in src, or
 *  GLYD_CONTENTSIZE_UNKNOWN if one frame does not declare it, or
 *  GLYD_CONTENTSIZE_ERROR if src is malformed. */
GLYD_API unsigned long long glyd_findDecompressedSize(const void* src, size_t srcSize);

/** Facts about one frame, for listing tools. */
typedef struct {
    unsigned long long contentSize;    /* counted over the blocks */
    unsigned long long compressedSize; /* whole frame, seek table excluded */
    unsigned long long nbBlocks;
    unsigned long long nbSegments;     /* independent segments (1 if not segmented) */
    unsigned windowLog;
    unsigned blockLog;
    unsigned segmentLog;               /* 0 if the frame is not segmented */
    unsigned headerSize;
    unsigned version;
    unsigned hasChecksum;              /* 0 none, 1 XXH64, 2 XXH3-64 */
    unsigned hasContentSize;           /* the header declares the content size */
    unsigned dictID;                   /* 0 if none */
    unsigned isSkippable;              /* then only compressedSize is meaningful */
} glyd_frameInfo;

/** Fills *info for the first frame in src (walking its block headers).
 *  Returns that frame's compressed size, or an error. */
GLYD_API size_t glyd_getFrameInfo(glyd_frameInfo* info, const void* src, size_t srcSize);

/* ------------------------------------------------------------------------ */
/* Memory management                                                        */
/* ------------------------------------------------------------------------ */

typedef void* (*glyd_allocFunction)(void* opaque, size_t size);
typedef void  (*glyd_freeFunction)(void* opaque, void* address);
/** Custom allocator. Both functions NULL means malloc/free. With worker
 *  threads (glyd_c_nbWorkers, glyd_d_nbWorkers > 0) the functions are called
 *  from those threads too, so they must be thread-safe. */
typedef struct {
    glyd_allocFunction customAlloc;
    glyd_freeFunction  customFree;
    void*              opaque;
} glyd_customMem;
static const glyd_customMem glyd_defaultCMem = { NULL, NULL, NULL };

/* ------------------------------------------------------------------------ */
/* Compression context and parameters                                       */
/* ------------------------------------------------------------------------ */

typedef struct glyd_CCtx_s glyd_CCtx;

GLYD_API glyd_CCtx* glyd_createCCtx(void);
/** Returns NULL if the allocator fails or only one of its functions is set. */
GLYD_API glyd_CCtx* glyd_createCCtx_advanced(glyd_customMem customMem);
/** Frees cctx and everything it holds; NULL is accepted. Returns 0. */
GLYD_API size_t glyd_freeCCtx(glyd_CCtx* cctx);

typedef enum {
    /* Level, as in glyd_compress(). Resets the parameters below that derive
     * from the level (windowLog) unless they were set explicitly. Default 3. */
    glyd_c_compressionLevel = 100,
    /* Log2 of the largest match distance, 10..31. 0 = from the level. Larger
     * windows find older repeats and need more memory to decode. */
    glyd_c_windowLog        = 101,
    /* Long-distance matching (1) or not (0, default): also finds repeats
     * as far back as the window reaches, however large, at the cost of about
     * 8 bytes of memory per 128 bytes of window. With windowLog left at 0 the
     * window becomes 2^27 (128 MiB), or less for a smaller input. Useful for
     * large inputs with distant repeats (archives, disk images, datasets). */
    glyd_c_longMatching     = 102,
    /* Emit a content checksum, XXH3-64 (1, default), or not (0). */
    glyd_c_checksumFlag     = 200,
    /* Record the content size in the frame header when known (1, default). */
    glyd_c_contentSizeFlag  = 201,
    /* Worker threads. 0 (default): compress in the calling thread.
     * N >= 1: compress independent segments on N threads. */
    glyd_c_nbWorkers        = 400,
    /* Independent segments: history restarts every 2^segmentLog bytes of
     * content, so that segments can be decoded in parallel and reached at
     * random through a seek table. 0 (default) = automatic (on, sized from the
     * window); -1 = off (one continuous history); 16..40 = explicit size. */
    glyd_c_segmentLog       = 401,
    /* Log2 of the largest block, 12..20. 0 = default (17, 128 KiB). */
    glyd_c_blockLog         = 402
} glyd_cParameter;

typedef struct {
    size_t error; /* 0 when the query succeeded, an error code otherwise */
    int lowerBound;
    int upperBound;
} glyd_bounds;

/** Returns the range of values that `param` accepts. */
GLYD_API glyd_bounds glyd_cParam_getBounds(glyd_cParameter param);

/** Sets one parameter for the next frames. Returns 0 or an error
 *  (parameter_unsupported, parameter_outOfBound, stage_wrong if a frame is
 *  being streamed: finish it or reset the session first). */
GLYD_API size_t glyd_CCtx_setParameter(glyd_CCtx* cctx, glyd_cParameter param, int value);
/** Reads a parameter's current value into *value. Returns 0 or an error. */
GLYD_API size_t glyd_CCtx_getParameter(const glyd_CCtx* cctx, glyd_cParameter param, int* value);

/** Declares the exact size of the next streamed frame, so that it is written
 *  in the header. GLYD_CONTENTSIZE_UNKNOWN (the default) = not declared.
 *  Compression fails with srcSize_wrong if the input differs. */
GLYD_API size_t glyd_CCtx_setPledgedSrcSize(glyd_CCtx* cctx, unsigned long long pledgedSrcSize);

typedef enum {
    glyd_reset_session_only           = 1, /* abandon the frame in progress */
    glyd_reset_parameters             = 2, /* back to defaults; no frame in progress */
    glyd_reset_session_and_parameters = 3
} glyd_ResetDirective;
GLYD_API size_t glyd_CCtx_reset(glyd_CCtx* cctx, glyd_ResetDirective reset);

/** One-shot compression with the parameters set on cctx. */
GLYD_API size_t glyd_compress2(glyd_CCtx* cctx, void* dst, size_t dstCapacity,
                               const void* src, size_t srcSize);

/* ------------------------------------------------------------------------ */
/* Streaming                                                                */
/* ------------------------------------------------------------------------ */

typedef struct {
    const void* src; /* start of input */
    size_t size;     /* size of input */
    size_t pos;      /* bytes already consumed; updated by the call */
} glyd_inBuffer;

typedef struct {
    void* dst;   /* start of output */
    size_t size; /* capacity of output */
    size_t pos;  /* bytes already written; updated by the call */
} glyd_outBuffer;

typedef enum {
    glyd_e_continue = 0, /* take input, emit whatever is ready */
    glyd_e_flush    = 1, /* emit a block boundary: all input so far becomes decodable */
    glyd_e_end      = 2  /* finish the frame; next call starts a new one */
} glyd_EndDirective;

/** Consumes input and produces compressed output, as much as the buffers
 *  allow. Returns the minimum number of bytes still to be flushed (0 when the
 *  requested flush or end is complete; with glyd_e_continue, a hint), or an
 *  error. Call again with more output space while the result is non-zero.
 *  After an error the frame is abandoned; glyd_CCtx_reset(session_only)
 *  starts afresh. */
GLYD_API size_t glyd_compressStream(glyd_CCtx* cctx, glyd_outBuffer* output,
                                    glyd_inBuffer* input, glyd_EndDirective endOp);

/** Recommended buffer sizes for streaming compression (any size works). */
GLYD_API size_t glyd_CStreamInSize(void);
GLYD_API size_t glyd_CStreamOutSize(void);

/* ------------------------------------------------------------------------ */
/* Decompression                                                            */
/* ------------------------------------------------------------------------ */

typedef struct glyd_DCtx_s glyd_DCtx;

GLYD_API glyd_DCtx* glyd_createDCtx(void);
GLYD_API glyd_DCtx* glyd_createDCtx_advanced(glyd_customMem customMem);
GLYD_API size_t glyd_freeDCtx(glyd_DCtx* dctx);

typedef enum {
    /* Refuse frames whose window exceeds 2^windowLogMax bytes (the memory a
     * streaming decode needs). Default 27 (128 MiB); 10..31. */
    glyd_d_windowLogMax = 100,
    /* Worker threads for segmented frames. 0 (default) = calling thread. */
    glyd_d_nbWorkers    = 400,
    /* Verify content checksums (1, default) or skip the verification (0). */
    glyd_d_checksumCheck = 401
} glyd_dParameter;

GLYD_API glyd_bounds glyd_dParam_getBounds(glyd_dParameter param);
GLYD_API size_t glyd_DCtx_setParameter(glyd_DCtx* dctx, glyd_dParameter param, int value);
GLYD_API size_t glyd_DCtx_reset(glyd_DCtx* dctx, glyd_ResetDirective reset);

/** One-shot decompression with the parameters set on dctx (threads,
 *  window limit). Same contract as glyd_decompress(). */
GLYD_API size_t glyd_decompressDCtx(glyd_DCtx* dctx, void* dst, size_t dstCapacity,
                                    const void* src, size_t srcSize);

/** Consumes compressed input and produces decompressed output, as much as
 *  the buffers allow. Returns 0 when a frame has been completely decoded and
 *  flushed (the next call starts the next frame), a positive hint of the
 *  input still needed otherwise, or an error. Checksums are verified when
 *  the frame ends; data already written before a corruption is detected is
 *  not retracted, so callers writing files must discard output on error. */
GLYD_API size_t glyd_decompressStream(glyd_DCtx* dctx, glyd_outBuffer* output,
                                      glyd_inBuffer* input);

GLYD_API size_t glyd_DStreamInSize(void);
GLYD_API size_t glyd_DStreamOutSize(void);

/* ------------------------------------------------------------------------ */
/* Dictionaries                                                             */
/* ------------------------------------------------------------------------ */

/* Many small inputs of one kind (records, messages, small files) compress
 * poorly alone: each starts with no history. A dictionary is content that
 * every frame made with it may refer to as if it came just before the
 * frame's first byte; the same dictionary must be loaded to decompress. A
 * dictionary file is "\xF7GLD", a 4-byte ID, then the content; any other
 * bytes are taken as raw content, with no ID. A frame made with an ID'd
 * dictionary records the ID, and decoders refuse it without that one. Frames
 * made with a dictionary are not split into segments (one thread each way). */

/** Trains a dictionary of at most dictCapacity bytes (a few dozen KiB is
 *  typical; about 100x less than the samples) from nbSamples samples laid
 *  end to end in `samples`. Returns its size, or an error (srcSize_wrong:
 *  too few samples, or nothing they share). */
GLYD_API size_t glyd_trainDictionary(void* dictBuffer, size_t dictCapacity, const void* samples,
                                     const size_t* sampleSizes, unsigned nbSamples);
/** The dictionary's ID; 0 for raw content or bytes that are not one. */
GLYD_API unsigned glyd_getDictID(const void* dict, size_t dictSize);
/** The dictionary ID a frame needs, 0 if none (or not a frame). */
GLYD_API unsigned glyd_getDictIDFromFrame(const void* src, size_t srcSize);
/** Uses a copy of dict for the next frames (NULL or size 0: none). Returns
 *  0 or an error (stage_wrong while a frame is streamed, dictionary_corrupted,
 *  memory_allocation). Survives glyd_CCtx_reset(session_only). */
GLYD_API size_t glyd_CCtx_loadDictionary(glyd_CCtx* cctx, const void* dict, size_t dictSize);
/** The same for decompression. */
GLYD_API size_t glyd_DCtx_loadDictionary(glyd_DCtx* dctx, const void* dict, size_t dictSize);

/* ------------------------------------------------------------------------ */
/* Random access                                                            */
/* ------------------------------------------------------------------------ */

/** Decompresses the content bytes [offset, offset + dstCapacity) of the
 *  single segmented frame in src, decoding only the segments that overlap the
 *  range. Uses the seek table when present, else walks the block headers.
 *  Returns the number of bytes written (less than dstCapacity only at the end
 *  of the content), or an error (seekTable_missing if the frame is not
 *  segmented and offset is not 0). Checksums are not verified, since only
 *  part of the content is decoded; block structure still is. */
GLYD_API size_t glyd_decompressRange(glyd_DCtx* dctx, void* dst, size_t dstCapacity,
                                     const void* src, size_t srcSize,
                                     unsigned long long offset);

/* ------------------------------------------------------------------------ */
/* Skippable frames                                                         */
/* ------------------------------------------------------------------------ */

/* The magic numbers 0x184D2A50..0x184D2A5F, shared with zstd and LZ4. The
 * variant 0xE is reserved by glyd for its seek tables. */
#define GLYD_MAGIC_SKIPPABLE_START 0x184D2A50U
#define GLYD_MAGIC_SKIPPABLE_MASK  0xFFFFFFF0U

/** Writes a skippable frame holding src, tagged by variant (0..15, but not
 *  14). Returns its size (srcSize + 8) or an error. */
GLYD_API size_t glyd_writeSkippableFrame(void* dst, size_t dstCapacity,
                                         const void* src, size_t srcSize,
                                         unsigned variant);
/** Returns non-zero when src starts with a skippable frame's magic number. */
GLYD_API unsigned glyd_isSkippableFrame(const void* src, size_t srcSize);

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
    glyd_tensor_fast    = 2
} glyd_tensorLayout;

/** Largest blob that nbElements of dtype can produce (0 if dtype is unknown). */
GLYD_API size_t glyd_tensorCompressBound(size_t nbElements, glyd_dtype dtype);

/** Compresses a tensor of nbElements elements of dtype (little-endian
 *  values). rowLength: elements per row for a matrix (units of the blob then
 *  hold whole rows), 0 for a vector or unknown. nbThreads: 0 or 1 = the
 *  calling thread. Returns the blob's size, or an error. */
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
    unsigned layout;                 /* 0 stored, 1 constant, 2 entropy-coded, 3 fast */
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
/* Packed models                                                            */
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

/* ------------------------------------------------------------------------ */
/* The engine                                                               */
/* ------------------------------------------------------------------------ */

/* Dense decoder models as Hugging Face defines them (LlamaForCausalLM,
 * Qwen2ForCausalLM, Qwen3ForCausalLM), run on the CPU or a CUDA GPU with
 * their bf16 weights kept in the tensor codec: each matrix is decoded a few
 * rows at a time, just before those rows are multiplied (on the GPU, inside
 * the product's kernel). Sums are in fp32. The logits are bit-identical to
 * those of the same engine, on the same backend, on the plain bf16 weights
 * (glyd_llmParams.plainWeights), since both sum in the same order. */

typedef struct glyd_llm_s glyd_llm;

#define GLYD_GPU_NONE     0
#define GLYD_GPU_CUDA     1
#define GLYD_GPU_EMULATED 2

typedef struct {
    unsigned nbThreads;              /* 0: every core */
    unsigned long long contextLength;/* positions the KV cache holds; 0: the model's own, or
                                      * less when the cache would take over a quarter of the
                                      * memory available */
    int kvF32;                       /* 1: keys and values cached in fp32; 0: bf16 */
    /* A Hugging Face folder's weights: 0 = coded in memory at load (packed
     * on the fly), 1 = used as they are (bf16, mapped). Packed models are
     * always coded. */
    int plainWeights;
    /* The layout of coded weights in memory. 0: the fast layout (3-bit
     * exponent codes, about 0.71 of bf16), which decodes several times
     * faster than the entropy layout: a folder is coded into it at load, a
     * model packed with --fast-layout is used as it is, and a model packed
     * with the entropy layout is recoded into it at load. 1: the entropy
     * layout (about 0.67 of bf16, a packed model's used as it is), for the
     * least memory at the cost of speed. */
    int compactWeights;
    /* A packed model's tensors are checked against its index's checksums
     * as they load (one pass over their stored bytes, or over the values
     * where they are decoded at load anyway): a damaged tensor stops the
     * open, named. 1 skips the check, for a pack just verified. */
    int skipWeightChecks;
    /* Where the forward pass runs: GLYD_GPU_NONE (0), the CPU;
     * GLYD_GPU_CUDA, a CUDA GPU through libglyd_cuda.so (`make cuda`),
     * its weights (fast layout or plain bf16) and KV cache in GPU memory;
     * GLYD_GPU_EMULATED, the GPU backend's kernels emulated on the CPU,
     * thread by thread (slow: it is there to test the backend). */
    int gpu;
    /* progress of coding the weights at load; may be NULL */
    void (*progress)(void* opaque, unsigned long long done, unsigned long long total);
    void* opaque;
    /* when not NULL: receives a one-line reason on error */
    char* message;
    size_t messageCapacity;
} glyd_llmParams;

typedef struct {
    const char* architecture;        /* "LlamaForCausalLM", ... */
    unsigned vocabSize, nbLayers, hiddenSize, nbHeads, nbKvHeads, headDim;
    unsigned long long contextLength;/* the cache's */
    unsigned long long maxPositions; /* the model's */
    unsigned long long weightBytes;  /* weights as held in memory */
    unsigned long long weightBytesBf16; /* the same weights in bf16 */
    unsigned long long kvBytes;      /* the KV cache */
    long long bosToken, eosToken;    /* -1 when the config has none */
    const char* backend;             /* where the forward pass runs: "cpu", "cuda", "emulated" */
    unsigned long long deviceWeightBytes; /* weights in GPU memory (0 on the CPU) */
} glyd_llmInfo;

/** Opens a model: a Hugging Face folder (config.json and safetensors
 *  files) or a packed model. params may be NULL. Returns NULL on failure,
 *  with *error set (and params->message, if any). */
GLYD_API glyd_llm* glyd_llmOpen(const char* path, const glyd_llmParams* params, size_t* error);
GLYD_API void glyd_llmClose(glyd_llm* llm);
GLYD_API size_t glyd_llmGetInfo(const glyd_llm* llm, glyd_llmInfo* info);

/** Runs tokens[0..n) at positions pos..pos+n-1, after the pos tokens the
 *  cache already holds (pos = 0 starts afresh). Writes the last token's
 *  logits to logits (vocabSize floats), or every token's when allLogits is
 *  1 (n x vocabSize). Returns 0 or an error. */
GLYD_API size_t glyd_llmForward(glyd_llm* llm, const int* tokens, size_t n, size_t pos, float* logits,
                                int allLogits);

/** Runs tokens as glyd_llmForward does, and gives the token of the largest
 *  logit after the last one (the first of equals) without the logits
 *  leaving the backend: greedy decoding. */
GLYD_API size_t glyd_llmGreedy(glyd_llm* llm, const int* tokens, size_t n, size_t pos, int* next);

/* A model's tokenizer: byte-level BPE from Hugging Face's tokenizer.json
 * (the GPT-2 family: Qwen, Llama 3): NFC, the pre-tokenizer's regex,
 * merges by rank; added and special tokens written in the text are
 * matched as single tokens. */
typedef struct glyd_tokenizer_s glyd_tokenizer;

/** Opens the tokenizer of a model folder, of a packed model, or a
 *  tokenizer.json file. Returns NULL on failure, with *error set and a
 *  one-line reason in message (when not NULL). */
GLYD_API glyd_tokenizer* glyd_tokenizerOpen(const char* path, char* message, size_t messageCapacity,
                                            size_t* error);
GLYD_API void glyd_tokenizerFree(glyd_tokenizer* tok);
/** The ids of UTF-8 text (no token added around it): *ids is allocated
 *  with malloc, the caller frees it. Returns 0 or an error. */
GLYD_API size_t glyd_tokenizerEncode(const glyd_tokenizer* tok, const char* text, size_t size, int** ids,
                                     size_t* nbIds);
/** The bytes a token stands for (part of a UTF-8 character, at times). */
GLYD_API size_t glyd_tokenizerBytes(const glyd_tokenizer* tok, int id, const unsigned char** bytes,
                                    size_t* size);
/** The id of a token written as the vocabulary writes it ("<|im_end|>"), or -1. */
GLYD_API int glyd_tokenizerFind(const glyd_tokenizer* tok, const char* token);
GLYD_API size_t glyd_tokenizerVocabSize(const glyd_tokenizer* tok);

/** ChatML history as Qwen's chat templates write it: an assistant reply
 *  goes back into the conversation without its thinking, from after its
 *  last "</think>" and the newlines that follow. Returns where in the
 *  reply's text (size bytes) that answer starts: 0 when the reply has no
 *  "</think>" (it goes back whole). */
GLYD_API size_t glyd_chatAnswerStart(const char* reply, size_t size);

/* Picking the next token, as transformers' generate() does: repetition
 * penalty, then greedy (temperature 0) or temperature, top-k, top-p, min-p
 * and a draw with a seeded generator (the same seed, the same draws). */
typedef struct {
    float temperature;        /* 0: greedy */
    int topK;                 /* 0: off */
    float topP;               /* 0 or 1: off */
    float minP;               /* 0: off */
    float repetitionPenalty;  /* 1 (or 0): off */
    unsigned long long seed;
} glyd_samplerParams;

typedef struct glyd_sampler_s glyd_sampler;

/** NULL on allocation failure. */
GLYD_API glyd_sampler* glyd_samplerCreate(const glyd_samplerParams* params, size_t vocabSize);
GLYD_API void glyd_samplerFree(glyd_sampler* s);
/** The next token; logits (vocabSize floats) are changed in place. history:
 *  the tokens the repetition penalty applies to. */
GLYD_API int glyd_samplerSample(glyd_sampler* s, float* logits, const int* history, size_t nbHistory);
/** Runs tokens as glyd_llmForward does, then draws the next token with the
 *  sampler, as glyd_samplerSample would from the last token's logits
 *  (history: the tokens the repetition penalty applies to). On the GPU the
 *  penalty, the temperature and the top-k selection run on the device when
 *  the sampler is greedy or its top-k is at most 256: only the candidates
 *  leave it. */
GLYD_API size_t glyd_llmSample(glyd_llm* llm, const int* tokens, size_t n, size_t pos, glyd_sampler* sampler,
                               const int* history, size_t nbHistory, int* next);

#ifdef __cplusplus
}
#endif
#endif /* GLYD_H */

/* SPDX-License-Identifier: BSD-3-Clause */
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
 * The frame format is specified in docs/FORMAT.md. Tensor blobs and packed
 * models are in glyd_tensor.h; the inference engine in glyd_llm.h.
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

/* Threads any call takes, at most (glyd_c_nbWorkers, glyd_d_nbWorkers, and
 * the nbThreads of glyd_tensor.h and glyd_llm.h). */
#define GLYD_THREADS_MAX 256

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
    unsigned isRecords;                /* a records frame (glyd_c_records): nbBlocks counts its row groups */
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
    glyd_c_blockLog         = 402,
    /* Records (1) or not (0, default): text of records (logs, tables) in
     * row groups, each coded as typed columns where that takes less than
     * the text itself (docs/RECORDS.md). A row group holds at most
     * 2^segmentLog bytes (default 2^24, at most 2^30), cut at a line's end;
     * decoding one takes about four times that in memory (up to seven
     * for text of one-digit numbers), which a DCtx keeps for the next row
     * group until it is freed. From level 20
     * each row group is also tried through a context-mixing coder (far
     * smaller on logs, tables and prose; 0.2-0.4 MB/s compressing and
     * 0.5-4 MB/s decoding in bench/bench_records.c), whose groups take
     * up to about 120 MB more to decode. In the calling
     * thread; decoding with glyd_d_nbWorkers takes row groups in parallel.
     * No dictionary. Decoders need no flag. */
    glyd_c_records          = 403
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

#ifdef __cplusplus
}
#endif
#endif /* GLYD_H */

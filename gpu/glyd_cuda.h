/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glyd_cuda.h: Glyd on the GPU, a C ABI over CUDA kernels (cuda/, built by
 * `make cuda` into build/cuda/libglyd_cuda.a, to link with libglyd.a and
 * the CUDA runtime). Tensor blobs (bf16, Huffman or fast layout) live in
 * device memory as they are and are decoded there:
 *   - glyd_cudaDecode: a whole tensor into bf16;
 *   - glyd_cudaGemv: y = W x for 1 to 8 vectors, each weight decoded into
 *     a register and multiplied there (never written to device memory);
 *   - glyd_cudaTune: the product's settings timed on the device, the
 *     fastest kept for the shape.
 * Errors are glyd's (glyd_isError, glyd_getErrorName); a failed CUDA call
 * returns GLYD_error_GENERIC and its reason through glyd_cudaLastError.
 */
#ifndef GLYD_CUDA_H
#define GLYD_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct glyd_cudaTensor_s glyd_cudaTensor;

/** Checks a tensor blob on the host, then copies it and its decoding tables
 *  to the device. NULL on failure, with *error set. */
glyd_cudaTensor* glyd_cudaTensorUpload(const void* blob, size_t size, size_t* error);
void glyd_cudaTensorFree(glyd_cudaTensor* t);
uint64_t glyd_cudaTensorElements(const glyd_cudaTensor* t);
/** Bytes the tensor takes on the device (blob, tables, run index). */
size_t glyd_cudaTensorBytes(const glyd_cudaTensor* t);

/** Rewrites a fast-layout tensor's codes on the device in the nibble form
 *  that products by rows of whole groups read (lib/tensor/tensor_kernels.h;
 *  units of whole groups only), as the engine's GPU backend does at upload.
 *  Decoding gives the same elements after. */
size_t glyd_cudaTensorNibbles(glyd_cudaTensor* t);

/** Decodes the whole tensor into dst (device memory, glyd_cudaTensorElements
 *  bf16 values) on stream (a cudaStream_t; NULL for the default stream).
 *  Asynchronous: returns once the work is queued. */
size_t glyd_cudaDecode(const glyd_cudaTensor* t, uint16_t* dst, void* stream);

/** y[v][r] = sum over c of W[r][c] * x[v][c], for the batch (1 to 8) of
 *  vectors in x (batch x cols floats) into y (batch x rows floats), W the
 *  tensor as a rows x cols matrix (fast layout, or Huffman in units of at
 *  most 8192 elements). Device pointers; asynchronous. Each row sums in
 *  one fixed order, the same in every layout: the same bits every run. */
size_t glyd_cudaGemv(const glyd_cudaTensor* w, uint64_t rows, uint64_t cols, const float* x, unsigned batch,
                     float* y, void* stream);

/* The fast layout's products by rows have two settings, each of which
 * brings a warp's next steps nearer before it needs them: steps held ahead
 * (the next one in registers, or a few copied into shared memory by the
 * copy engine, sm_90 on) and steps asked of L2 ahead. Their results are
 * the same bits; their speed depends on the device and the shape, so
 * glyd_cudaTune times them and keeps the fastest for each shape, which
 * products use where neither setting is set. */
#define GLYD_CUDA_TUNED 0xFFFFFFFFu /* a setting left to the tuned shapes */

/** Products by rows on the fast layout: the steps each warp holds ahead of
 *  the one it works on, 0 to 4 (0: each step loaded as it is used; 1: the
 *  next one, loaded into registers; 2 to 4: a ring of that many copied
 *  into shared memory by the copy engine, sm_90 on, elsewhere none), or
 *  GLYD_CUDA_TUNED. Unset, the GLYD_CUDA_STAGES environment variable's,
 *  read at the first product, else GLYD_CUDA_TUNED. Returns the setting
 *  before; for all threads, set between launches. */
unsigned glyd_cudaSetRowsStages(unsigned stages);

/** Products by rows on the fast layout, where they hold no steps ahead:
 *  the steps each warp asks of L2 ahead of the one it works on, 0 to 8 (0:
 *  none), or GLYD_CUDA_TUNED. Unset, the GLYD_CUDA_PREFETCH environment
 *  variable's, read at the first product, else GLYD_CUDA_TUNED. Returns the
 *  setting before; for all threads, set between launches. */
unsigned glyd_cudaSetRowsPrefetch(unsigned steps);

/** Times the product y = W x (rows x cols, batch vectors) at each setting
 *  of the steps ahead, going round the count tensors w (64 at most, of that
 *  shape and layout: as the products of a model's layers do, so that they
 *  read from memory, not from L2, where they pass it), and keeps the
 *  fastest for the current device, shape and batch (plain steps unless
 *  another is at least 3% faster). Each setting's result must be the plain
 *  one's bit for bit: where it is not, the error is GLYD_error_GENERIC,
 *  with the setting in glyd_cudaLastError. x and y: device memory,
 *  batch x cols and batch x rows floats, y overwritten. Synchronous.
 *  Tensors of another layout, or whose rows cut groups, have no settings,
 *  and where either setting is set by hand (glyd_cudaSetRows*, their
 *  environment variables) products use those: then nothing is timed or
 *  kept. stages and prefetch (either may be NULL): the setting that
 *  products of the shape use. */
size_t glyd_cudaTune(const glyd_cudaTensor* const* w, unsigned count, uint64_t rows, uint64_t cols, unsigned batch,
                     const float* x, float* y, void* stream, unsigned* stages, unsigned* prefetch);

/** The setting kept for products of this shape and batch on the current
 *  device (by glyd_cudaTune or glyd_cudaSetTuned): 1, or 0 where none is.
 *  Settings are kept for 64 shapes: past that, a new one takes the place
 *  of the oldest. */
int glyd_cudaTuned(uint64_t rows, uint64_t cols, unsigned batch, unsigned* stages, unsigned* prefetch);

/** Keeps a setting for products of this shape and batch on the current
 *  device, as glyd_cudaTune would (to restore one timed before). Returns 0,
 *  or an error where a value is out of range. */
size_t glyd_cudaSetTuned(uint64_t rows, uint64_t cols, unsigned batch, unsigned stages, unsigned prefetch);

/** The reason of the last failed CUDA call in this thread ("" if none). */
const char* glyd_cudaLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* GLYD_CUDA_H */

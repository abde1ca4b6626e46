/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glyd_cuda.h: Glyd on the GPU, a C ABI over CUDA kernels (gpu/, built by
 * `make cuda` into build/cuda/libglyd_cuda.a, to link with libglyd-llm.a,
 * libglyd.a and the CUDA runtime). Tensor blobs (bf16, Huffman or fast
 * layout) live in device memory as they are and are decoded there:
 *   - glyd_cudaDecode: a whole tensor into bf16;
 *   - glyd_cudaGemv: y = W x for 1 to 8 vectors, each weight decoded into
 *     a register and multiplied there (never written to device memory).
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
 *  that products by rows of whole groups read (gpu/tensor_kernels.h;
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

/** The reason of the last failed CUDA call in this thread ("" if none). */
const char* glyd_cudaLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* GLYD_CUDA_H */

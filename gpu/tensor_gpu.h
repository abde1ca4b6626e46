/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_gpu.h: tensor blobs prepared for the GPU kernels (tensor_kernels.h)
 * on the host, and the kernels' launches emulated on the CPU, thread by
 * thread in the kernels' order: what the GPU backend uploads, and what the
 * tests check the kernels' logic against.
 */
#ifndef GLYD_TENSOR_GPU_H
#define GLYD_TENSOR_GPU_H

#include "../lib/tensor/tensor.h"
#include "tensor_kernels.h"

/* A checked bf16 blob (Huffman or fast layout) described for the GPU
 * kernels (tensor_kernels.h): t and, for the Huffman layout, its decoding
 * tables (gk_huf_tables: multi- and one-symbol; left as they are for the
 * fast layout). */
size_t glyd_tensorDescribe(const glyd_tensorView* v, const void* blob, gk_tensor* t,
                           gk_huf_tables* tables);

/* The GPU kernels (gpu/decode.cu) run on the CPU in their order, thread
 * by thread: a described blob decoded whole into out; units [u0, u1) of
 * the fast layout or plain data (GK_LAYOUT_STORED) into out (from the
 * first unit's first element); or y = W x for 1 to 8 vectors (fast layout
 * or plain; the kernel's summation order, FMA and all). */
void glyd_tensorEmulateDecode(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                              uint16_t* out);
void glyd_tensorEmulateDecodeUnits(const void* blob, const gk_tensor* t, uint64_t u0, uint64_t u1,
                                   uint16_t* out);
size_t glyd_tensorEmulateGemv(const void* blob, const gk_tensor* t, uint64_t rows, uint64_t cols,
                              const float* x, unsigned batch, float* y);

/* The GPU backend's rewrite of a fast-layout blob's codes into the nibble
 * form (tensor_kernels.h), in place, as its kernel does: the emulation's
 * side of it. t: the blob's description, marked GK_CODES_NIBBLES after.
 * Units must be whole groups. */
size_t glyd_tensorNibbleForm(void* blob, gk_tensor* t);

/* The Huffman layout in products (tensor_kernels.h): where each run of
 * GK_HUF_RUN elements of each unit but the first starts, gk_huf_index_size
 * offsets in bits from the unit's start (an error when one is over 65535); and the kernels'
 * emulation over it: y = W x, and units [u0, u1) decoded run by run into
 * out (from the first unit's first element). */
size_t glyd_tensorHuffmanRuns(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                              uint16_t* runs);
size_t glyd_tensorEmulateGemvHuffman(const void* blob, const gk_tensor* t,
                                     const gk_huf_tables* tables, const uint16_t* runs, uint64_t rows,
                                     uint64_t cols, const float* x, unsigned batch, float* y);
void glyd_tensorEmulateDecodeRuns(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                  const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* out);

#endif /* GLYD_TENSOR_GPU_H */

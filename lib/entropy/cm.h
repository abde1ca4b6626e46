/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm.h: a context-mixing coder, the slowest and strongest of libglyd's
 * back ends (docs/FORMAT.md, "Context-mixing streams"). Each bit of the
 * input is predicted by counters in the contexts of the bytes before it
 * (orders 0 to 6, the current word, the longest earlier match), the
 * predictions mixed by a small online-trained network and refined, then
 * coded by a binary arithmetic coder. No tables are stored: the decoder
 * learns what the encoder learnt, bit by bit. It codes a few MB/s each way;
 * records frames use it at the highest levels, where free text (a JSON
 * field's prose) and the columns of logs gain most.
 */
#ifndef GLYD_CM_H
#define GLYD_CM_H

#include "../common/common.h"

/* src[0..srcSize) coded into dst. Returns the stream's size, or an error
 * (dstSize_tooSmall, memory_allocation). The decoder needs srcSize. */
size_t glyd_cmCompress(void* dst, size_t dstCapacity, const void* src, size_t srcSize);

/* The dstSize bytes that stream src[0..srcSize) codes, into dst. Returns
 * dstSize, or an error (corruption_detected where the stream runs out or
 * was not all used, memory_allocation). Never reads or writes out of
 * bounds, whatever the input. */
size_t glyd_cmDecompress(void* dst, size_t dstSize, const void* src, size_t srcSize);

/* Memory the coder takes for an input of srcSize bytes, either way. */
size_t glyd_cmMemory(size_t srcSize);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bf16_dot.h: products of bf16 rows and bf16 vectors with fp32 sums, on
 * the AVX-512 BF16 dot-product instruction. A torch model's activations are
 * bf16 already, so they go in as they are; the engine's kernel
 * (glyd_matmulRows) takes fp32 vectors and widens each weight first.
 */
#ifndef GLYD_PY_BF16_DOT_H
#define GLYD_PY_BF16_DOT_H

#include <stddef.h>
#include <stdint.h>

/* 1 when this CPU has the instruction (AVX512_BF16 with AVX512F/BW/VL). */
int bf16_dot_available(void);

/* y[t * yStride + r] = sum over c of w[r * cols + c] * x[t * cols + c], for
 * the nbRows rows of w and nbVec vectors of x; each sum in fp32, in one
 * order whatever the rows and vectors around it. Only where
 * bf16_dot_available(). */
void bf16_rows_times_vectors(const uint16_t* w, size_t nbRows, size_t cols, const uint16_t* x, size_t nbVec,
                             float* y, size_t yStride);

#endif /* GLYD_PY_BF16_DOT_H */

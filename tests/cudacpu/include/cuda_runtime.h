/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_runtime.h of cudacpu: the runtime API, and in C++ the language of
 * kernels (cudacpu.h), as nvcc gives them to every .cu file.
 */
#ifndef CUDACPU_RUNTIME_H
#define CUDACPU_RUNTIME_H

#include "cuda_runtime_api.h"
#ifdef __cplusplus
#include "../cudacpu.h"
#endif

#endif /* CUDACPU_RUNTIME_H */

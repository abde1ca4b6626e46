/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cublas_v2.h of cudacpu: the cuBLAS calls the project makes, as plain
 * loops on the CPU (fp32 sums in k's order). C and C++.
 */
#ifndef CUDACPU_CUBLAS_V2_H
#define CUDACPU_CUBLAS_V2_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 }
    cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef struct cudacpu_blas* cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
/* column-major C (m, n) = alpha op(A) op(B) + beta C */
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc);
/* the same over fp32 or bf16 operands, fp32 results and sums */
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType at, int lda, const void* b,
                            cudaDataType bt, int ldb, const void* beta, void* c, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo);

#ifdef __cplusplus
}
#endif

#endif /* CUDACPU_CUBLAS_V2_H */

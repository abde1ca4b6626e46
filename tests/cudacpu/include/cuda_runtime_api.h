/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_runtime_api.h of cudacpu: the part of CUDA's runtime API that the
 * project's kernels and their hosts use, carried out on the CPU, so that
 * the CUDA sources themselves (the kernels of gpu/, its device.c,
 * tests/gpu) run and are tested on a machine without a GPU. Device memory
 * is host memory; every call is synchronous; a kernel runs at its launch
 * (cudacpu.h). C and C++.
 */
#ifndef CUDACPU_RUNTIME_API_H
#define CUDACPU_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoDevice = 100,
    cudaErrorMisalignedAddress = 716,
    cudaErrorLaunchFailure = 719
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

#define cudaStreamNonBlocking 0x01

typedef struct cudacpu_stream* cudaStream_t;
typedef struct cudacpu_event* cudaEvent_t;

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    int multiProcessorCount;
    int l2CacheSize;
    int major, minor;
};
#ifndef __cplusplus
typedef struct cudaDeviceProp cudaDeviceProp;
#endif

const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t* avail, size_t* total);
cudaError_t cudaMalloc(void** p, size_t size);
cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t stream);
cudaError_t cudaFree(void* p);
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream);
cudaError_t cudaMemset(void* p, int value, size_t size);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t size, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t size, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
/* the kernel's address stands for the kernel */
cudaError_t cudacpu_funcSetAttribute(const void* kernel, enum cudaFuncAttribute attr, int value);
cudaError_t cudacpu_occupancy(int* blocks, const void* kernel, int blockSize, size_t smem);

#ifdef __cplusplus
}

/* CUDA's C++ forms: a default stream, and kernels of any type */
inline cudaError_t cudaEventRecord(cudaEvent_t event) { return cudaEventRecord(event, nullptr); }
template <class K> cudaError_t cudaFuncSetAttribute(K* kernel, cudaFuncAttribute attr, int value)
{
    return cudacpu_funcSetAttribute((const void*)kernel, attr, value);
}
template <class K>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, K* kernel, int blockSize, size_t smem)
{
    return cudacpu_occupancy(blocks, (const void*)kernel, blockSize, smem);
}
#endif

#endif /* CUDACPU_RUNTIME_API_H */

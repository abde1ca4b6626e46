/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_common.cu: the last CUDA error of each thread, and the device's
 * limits, asked once per device.
 */
#include "cuda_common.cuh"

static __thread char g_lastError[256];

extern "C" const char* glyd_cudaLastError(void) { return g_lastError; }

size_t cuda_failed(cudaError_t e, const char* what)
{
    snprintf(g_lastError, sizeof g_lastError, "%s: %s", what, cudaGetErrorString(e));
    return (size_t)-(int)GLYD_error_GENERIC;
}

cudaError_t device_limits_get(device_limits* out)
{
    static device_limits known[16];
    int device, v;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess) return e;
    if (device < 16 && known[device].sms) {
        *out = known[device];
        return cudaSuccess;
    }
    if ((e = cudaDeviceGetAttribute(&out->sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)) != cudaSuccess)
        return e;
    out->smemMost = (size_t)v;
    out->device = device;
    if (device < 16) known[device] = *out;
    return cudaSuccess;
}

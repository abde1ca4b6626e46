/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device.c: CUDA as a device of the GPU backend (gpu/backend.c): memory,
 * copies and the kernels' launchers (decode.cu, engine.cu) behind the
 * glyd_gpuDevice table, on one stream of its own, with cuBLAS for the
 * prompts' products. Exported from libglyd_cuda.so as glyd_cudaDeviceOpen,
 * which the engine finds with dlopen, so that the engine itself needs no
 * CUDA to build or run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "../llm/infer/infer.h"

int glyd_cudaLaunchDecodeUnits(const uint8_t* blob, const gk_tensor* t, uint64_t u0, uint64_t u1, uint16_t* out,
                               void* stream);
int glyd_cudaLaunchGemv(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                        uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y, float* parts,
                        void* stream);
int glyd_cudaLaunchNibbles(uint8_t* blob, const gk_tensor* t, void* stream);
int glyd_cudaLaunchDecodeRuns(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                              const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* out, void* stream);
int glyd_cudaLaunchEmbed(const uint8_t* blob, const gk_tensor* t, uint64_t cols, const int* tokens, size_t T,
                         float* x, void* stream);
int glyd_cudaLaunchRmsnorm(const gk_rmsnorm* a, void* stream);
int glyd_cudaLaunchRotate(const gk_rotate* a, void* stream);
int glyd_cudaLaunchAttend(const gk_attend* a, void* stream);
int glyd_cudaLaunchAdd(float* x, const float* y, size_t n, void* stream);
int glyd_cudaLaunchSwiglu(float* g, const float* u, size_t n, void* stream);
int glyd_cudaLaunchWiden(const uint16_t* src, uint64_t n, float* out, void* stream);
int glyd_cudaLaunchArgmax(const float* x, size_t n, int* token, void* stream);
int glyd_cudaLaunchPenalize(float* x, const int* ids, size_t n, float penalty, void* stream);
int glyd_cudaLaunchTopk(const float* x, size_t n, float temperature, unsigned k, float* keys, int* ids, void* stream);

__attribute__((visibility("default"))) glyd_gpuDevice* glyd_cudaDeviceOpen(char* why, size_t whyCap);

typedef struct {
    cudaStream_t stream;
    cublasHandle_t blas;
    char error[256];
} cuda_state;

#define STATE(d) ((cuda_state*)(d)->state)
#define FAILED ((size_t)-(int)GLYD_error_GENERIC)

/* A CUDA error kept as the device's reason. */
static size_t check(const glyd_gpuDevice* d, int e, const char* what)
{
    if (e == cudaSuccess) return 0;
    snprintf(STATE(d)->error, sizeof STATE(d)->error, "%s: %s", what, cudaGetErrorString((cudaError_t)e));
    return FAILED;
}

static size_t cu_memory(const glyd_gpuDevice* d, size_t* total, size_t* avail)
{
    return check(d, cudaMemGetInfo(avail, total), "memory");
}

static size_t cu_alloc(const glyd_gpuDevice* d, void** p, size_t size)
{
    *p = NULL;
    return check(d, cudaMalloc(p, size), "allocation");
}

static void cu_free(const glyd_gpuDevice* d, void* p)
{
    (void)d;
    if (p) cudaFree(p); /* waits for the work in flight */
}

static size_t cu_upload(const glyd_gpuDevice* d, void* dst, const void* src, size_t size)
{
    /* the source may be freed or changed once this returns */
    cudaError_t e = cudaMemcpyAsync(dst, src, size, cudaMemcpyHostToDevice, STATE(d)->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(STATE(d)->stream);
    return check(d, e, "upload");
}

static size_t cu_download(const glyd_gpuDevice* d, void* dst, const void* src, size_t size)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToHost, STATE(d)->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(STATE(d)->stream);
    return check(d, e, "download");
}

static size_t cu_copy(const glyd_gpuDevice* d, void* dst, const void* src, size_t size)
{
    return check(d, cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, STATE(d)->stream), "copy");
}

static size_t cu_gemv(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                      const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y,
                      float* parts)
{
    return check(d, glyd_cudaLaunchGemv(blob, t, tables, runs, rows, cols, x, batch, y, parts, STATE(d)->stream),
                 "product");
}

static size_t cu_nibbles(const glyd_gpuDevice* d, uint8_t* blob, const gk_tensor* t)
{
    return check(d, glyd_cudaLaunchNibbles(blob, t, STATE(d)->stream), "nibble form");
}

static size_t cu_widen(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                       const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* bf16, float* out)
{
    uint64_t const first = u0 * t->unitSize;
    uint64_t const n = gk_unit_end(t, u1 - 1) - first;
    const uint16_t* src = (const uint16_t*)(const void*)blob + first;
    if (t->layout == GK_LAYOUT_HUFFMAN) {
        FORWARD_IF_ERROR(check(d, glyd_cudaLaunchDecodeRuns(blob, t, tables, runs, u0, u1, bf16, STATE(d)->stream),
                               "decode"));
        src = bf16;
    } else if (t->layout != GK_LAYOUT_STORED) {
        FORWARD_IF_ERROR(check(d, glyd_cudaLaunchDecodeUnits(blob, t, u0, u1, bf16, STATE(d)->stream), "decode"));
        src = bf16;
    }
    return check(d, glyd_cudaLaunchWiden(src, n, out, STATE(d)->stream), "widen");
}

static size_t cu_gemm(const glyd_gpuDevice* d, const float* w, uint64_t m, uint64_t k, const float* x, uint64_t n,
                      float* y, uint64_t ldy)
{
    /* cuBLAS is column-major: the row-major w (m, k) is a column-major
     * (k, m), taken transposed; the row-major x (n, k) a column-major
     * (k, n); the column-major (m, n) result, columns ldy apart, is y */
    float const one = 1.0f, zero = 0.0f;
    cublasStatus_t const s = cublasSgemm(STATE(d)->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)m, (int)n, (int)k, &one, w,
                                         (int)k, x, (int)k, &zero, y, (int)ldy);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(STATE(d)->error, sizeof STATE(d)->error, "cublasSgemm: status %d", (int)s);
        return FAILED;
    }
    return 0;
}

static size_t cu_embed(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, uint64_t cols,
                       const int* tokens, size_t T, float* x)
{
    return check(d, glyd_cudaLaunchEmbed(blob, t, cols, tokens, T, x, STATE(d)->stream), "embedding");
}

static size_t cu_rmsnorm(const glyd_gpuDevice* d, const gk_rmsnorm* a)
{
    return check(d, glyd_cudaLaunchRmsnorm(a, STATE(d)->stream), "rmsnorm");
}

static size_t cu_rotate(const glyd_gpuDevice* d, const gk_rotate* a)
{
    return check(d, glyd_cudaLaunchRotate(a, STATE(d)->stream), "rotation");
}

static size_t cu_attend(const glyd_gpuDevice* d, const gk_attend* a)
{
    return check(d, glyd_cudaLaunchAttend(a, STATE(d)->stream), "attention");
}

static size_t cu_add(const glyd_gpuDevice* d, float* x, const float* y, size_t n)
{
    return check(d, glyd_cudaLaunchAdd(x, y, n, STATE(d)->stream), "add");
}

static size_t cu_swiglu(const glyd_gpuDevice* d, float* g, const float* u, size_t n)
{
    return check(d, glyd_cudaLaunchSwiglu(g, u, n, STATE(d)->stream), "swiglu");
}

static size_t cu_argmax(const glyd_gpuDevice* d, const float* x, size_t n, int* token)
{
    return check(d, glyd_cudaLaunchArgmax(x, n, token, STATE(d)->stream), "argmax");
}

static size_t cu_penalize(const glyd_gpuDevice* d, float* x, const int* ids, size_t n, float penalty)
{
    return check(d, glyd_cudaLaunchPenalize(x, ids, n, penalty, STATE(d)->stream), "penalty");
}

static size_t cu_topk(const glyd_gpuDevice* d, const float* x, size_t n, float temperature, unsigned k, float* keys,
                      int* ids)
{
    return check(d, glyd_cudaLaunchTopk(x, n, temperature, k, keys, ids, STATE(d)->stream), "top-k");
}

static const char* cu_last_error(const glyd_gpuDevice* d) { return STATE(d)->error; }

static void cu_release(glyd_gpuDevice* d)
{
    cuda_state* const s = STATE(d);
    if (s->blas) cublasDestroy(s->blas);
    if (s->stream) cudaStreamDestroy(s->stream);
    free(s);
    free(d);
}

glyd_gpuDevice* glyd_cudaDeviceOpen(char* why, size_t whyCap)
{
    glyd_gpuDevice* const d = (glyd_gpuDevice*)calloc(1, sizeof(glyd_gpuDevice));
    cuda_state* const s = (cuda_state*)calloc(1, sizeof(cuda_state));
    int count = 0;
    cudaError_t e;
    if (!d || !s) {
        free(d);
        free(s);
        snprintf(why, whyCap, "out of memory");
        return NULL;
    }
    d->state = s;
    e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        snprintf(why, whyCap, "CUDA: %s", cudaGetErrorString(e));
        cu_release(d);
        return NULL;
    }
    if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(s->blas, s->stream) != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, whyCap, "cuBLAS could not start");
        cu_release(d);
        return NULL;
    }
    d->name = "cuda";
    d->memory = cu_memory;
    d->alloc = cu_alloc;
    d->free = cu_free;
    d->upload = cu_upload;
    d->download = cu_download;
    d->copy = cu_copy;
    d->gemv = cu_gemv;
    d->nibbles = cu_nibbles;
    d->widen = cu_widen;
    d->gemm = cu_gemm;
    d->embed = cu_embed;
    d->rmsnorm = cu_rmsnorm;
    d->rotate = cu_rotate;
    d->attend = cu_attend;
    d->add = cu_add;
    d->swiglu = cu_swiglu;
    d->argmax = cu_argmax;
    d->penalize = cu_penalize;
    d->topk = cu_topk;
    d->lastError = cu_last_error;
    d->release = cu_release;
    return d;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * upload.cu: a tensor blob put in GPU memory as the kernels read it: its
 * description and, Huffman, its decoding tables and run index (made on
 * the host: tensor_gpu.c); a fast-layout blob's codes rewritten into the
 * nibble form on the device.
 */
#include <cub/block/block_scan.cuh>

#include "cuda_common.cuh"

extern "C" size_t glyd_cudaDescribeBlob(const void* blob, size_t size, gk_tensor* t, gk_huf_tables* tables);
extern "C" size_t glyd_tensorHuffmanRuns(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                         uint16_t* runs);

/* Units [0, nbUnits) rewritten in the nibble form: a block per unit, a
 * thread per group, each group's escapes where the block's prefix sum
 * says (counted in the planes, before the thread rewrites its own group). */
__global__ void nibble_kernel(uint8_t* __restrict__ blob, gk_tensor t)
{
    typedef cub::BlockScan<uint32_t, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    for (uint64_t u = blockIdx.x; u < t.nbUnits; u += gridDim.x) {
        uint64_t const a = u * t.unitSize;
        uint64_t const b = gk_unit_end(&t, u);
        uint64_t const last = (b - 1) >> 5, nbEsc = gk_unit_start(blob, &t, u + 1);
        uint64_t esc = gk_unit_start(blob, &t, u);
        for (uint64_t g0 = a >> 5; g0 <= last; g0 += BLOCK) {
            uint64_t const g = g0 + threadIdx.x;
            uint32_t const count = g <= last ? gk_popc(gk_fast_escapes(blob, &t, g, 0, t.nbElements)) : 0;
            uint32_t before, total;
            Scan(scan).ExclusiveSum(count, before, total);
            if (g <= last) gk_nibble_group(blob, &t, g, esc + before, nbEsc);
            esc += total;
            __syncthreads(); /* the scan's storage is used again */
        }
    }
}

extern "C" glyd_cudaTensor* glyd_cudaTensorUpload(const void* blob, size_t size, size_t* error)
{
    glyd_cudaTensor* const t = (glyd_cudaTensor*)calloc(1, sizeof(glyd_cudaTensor));
    gk_huf_tables* const tables = (gk_huf_tables*)malloc(sizeof(gk_huf_tables));
    cudaError_t e;
    *error = 0;
    if (!t || !tables) {
        *error = (size_t)-(int)GLYD_error_memory_allocation;
        free(t);
        free(tables);
        return NULL;
    }
    *error = glyd_cudaDescribeBlob(blob, size, &t->t, tables);
    if (glyd_isError(*error)) {
        free(t);
        free(tables);
        return NULL;
    }
    *error = 0;
    t->bytes = size + (t->t.layout == GK_LAYOUT_HUFFMAN ? sizeof(gk_huf_tables) : 0);
    e = cudaMalloc((void**)&t->blob, size);
    if (e == cudaSuccess) e = cudaMemcpy(t->blob, blob, size, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && t->t.layout == GK_LAYOUT_HUFFMAN) {
        e = cudaMalloc((void**)&t->tables, sizeof(gk_huf_tables));
        if (e == cudaSuccess) e = cudaMemcpy(t->tables, tables, sizeof(gk_huf_tables), cudaMemcpyHostToDevice);
    }
    if (e == cudaSuccess && t->t.layout == GK_LAYOUT_HUFFMAN && gk_huf_index_size(&t->t)) {
        /* the run index, for a thread per run rather than per unit; none
         * where a unit's stream is over 65535 bits */
        size_t const runBytes = sizeof(uint16_t) * gk_huf_index_size(&t->t);
        uint16_t* const runs = (uint16_t*)malloc(runBytes);
        if (!runs) {
            *error = (size_t)-(int)GLYD_error_memory_allocation;
            glyd_cudaTensorFree(t);
            free(tables);
            return NULL;
        }
        if (!glyd_isError(glyd_tensorHuffmanRuns(blob, &t->t, tables, runs))) {
            e = cudaMalloc((void**)&t->runs, runBytes);
            if (e == cudaSuccess) e = cudaMemcpy(t->runs, runs, runBytes, cudaMemcpyHostToDevice);
            t->bytes += runBytes;
        }
        free(runs);
    }
    free(tables);
    if (e != cudaSuccess) {
        *error = cuda_failed(e, "upload");
        glyd_cudaTensorFree(t);
        return NULL;
    }
    return t;
}

extern "C" void glyd_cudaTensorFree(glyd_cudaTensor* t)
{
    if (!t) return;
    cudaFree(t->blob);
    cudaFree(t->tables);
    cudaFree(t->runs);
    free(t);
}

extern "C" uint64_t glyd_cudaTensorElements(const glyd_cudaTensor* t) { return t->t.nbElements; }
extern "C" size_t glyd_cudaTensorBytes(const glyd_cudaTensor* t) { return t->bytes; }

/* A fast-layout blob's codes (planes, units of whole groups) into the
 * nibble form, in place. */
extern "C" int glyd_cudaLaunchNibbles(uint8_t* blob, const gk_tensor* t, void* stream)
{
    if (t->layout != GK_LAYOUT_FAST || t->codeForm != GK_CODES_PLANES || t->unitSize % 32)
        return (int)cudaErrorInvalidValue;
    if (t->nbElements == 0) return 0;
    nibble_kernel<<<grid_for(t->nbUnits), BLOCK, 0, (cudaStream_t)stream>>>(blob, *t);
    return (int)cudaGetLastError();
}

extern "C" size_t glyd_cudaTensorNibbles(glyd_cudaTensor* t)
{
    CUDA_TRY((cudaError_t)glyd_cudaLaunchNibbles(t->blob, &t->t, NULL), "nibble form");
    CUDA_TRY(cudaDeviceSynchronize(), "nibble form");
    t->t.codeForm = GK_CODES_NIBBLES;
    return 0;
}

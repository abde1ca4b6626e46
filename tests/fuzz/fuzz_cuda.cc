/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_cuda.cc: hostile tensor blobs through the CUDA kernels themselves,
 * run on the CPU (tests/cudacpu): whatever a blob the upload accepts holds,
 * the kernels read only inside it (ASan sees cudaMalloc's exact bytes);
 * and where the CPU decoder decodes it too (a valid blob), they agree with
 * the CPU: a whole decode with the CPU decoder's, the nibble form's decode
 * with the first, a product bit for bit with its emulation. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "glyd_tensor.h"
#include "glyd_cuda.h"
extern "C" {
#include "../../lib/tensor/tensor.h" /* the kernels' emulation, the nibble form, the run index */
#include "../../gpu/tensor_gpu.h"
size_t glyd_cudaDescribeBlob(const void* blob, size_t size, gk_tensor* t, gk_huf_tables* tables);
}

static const uint64_t kMostElements = 1 << 16; /* a launch on the CPU is slow: the small ones only */

static std::vector<uint16_t> decode(const glyd_cudaTensor* t, uint64_t n)
{
    std::vector<uint16_t> out(n);
    uint16_t* d;
    if (cudaMalloc((void**)&d, n * 2) != cudaSuccess) abort();
    cudaMemset(d, 0xFF, n * 2);
    if (glyd_isError(glyd_cudaDecode(t, d, NULL))) abort(); /* an accepted blob decodes */
    cudaMemcpy(out.data(), d, n * 2, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return out;
}

/* y = W x on the device, against the emulation of its kernel when the blob
 * is valid (the blob as the host holds it: `host`, in nibble form when the
 * device's is) */
static void product(const glyd_cudaTensor* t, const std::vector<uint8_t>& host, const gk_tensor& desc,
                    const gk_huf_tables* tables, uint64_t rows, uint64_t cols, bool valid)
{
    std::vector<float> x(cols), want(rows), got(rows);
    float *dx, *dy;
    for (uint64_t i = 0; i < cols; i++) x[i] = (float)(i % 7) - 3.0f;
    size_t r;
    if (desc.layout == GK_LAYOUT_HUFFMAN) {
        std::vector<uint16_t> runs(gk_huf_index_size(&desc) + 1);
        if (glyd_isError(glyd_tensorHuffmanRuns(host.data(), &desc, tables, runs.data()))) return;
        r = glyd_tensorEmulateGemvHuffman(host.data(), &desc, tables, runs.data(), rows, cols, x.data(), 1,
                                          want.data());
    } else
        r = glyd_tensorEmulateGemv(host.data(), &desc, rows, cols, x.data(), 1, want.data());
    if (cudaMalloc((void**)&dx, cols * 4) != cudaSuccess || cudaMalloc((void**)&dy, rows * 4) != cudaSuccess) abort();
    cudaMemcpy(dx, x.data(), cols * 4, cudaMemcpyHostToDevice);
    size_t const g = glyd_cudaGemv(t, rows, cols, dx, 1, dy, NULL);
    cudaMemcpy(got.data(), dy, rows * 4, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
    if (valid && !glyd_isError(g) && !glyd_isError(r) && memcmp(got.data(), want.data(), rows * 4)) abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    size_t err;
    glyd_tensorView v;
    gk_tensor desc;
    gk_huf_tables* const tables = (gk_huf_tables*)malloc(sizeof(gk_huf_tables));
    std::vector<uint8_t> host(data, data + size);
    if (!tables || glyd_isError(glyd_tensorOpen(&v, data, size)) || v.nbElements > kMostElements ||
        glyd_isError(glyd_cudaDescribeBlob(host.data(), size, &desc, tables))) {
        free(tables);
        return 0;
    }
    glyd_cudaTensor* const t = glyd_cudaTensorUpload(data, size, &err);
    if (!t) {
        free(tables);
        return 0;
    }
    uint64_t const n = glyd_cudaTensorElements(t), cols = v.rowLength;
    bool const rows = cols && n % cols == 0 && cols <= kMostElements;
    std::vector<uint16_t> const elems = decode(t, n);
    /* the host checks a blob's structure at upload, not each unit's codes
     * against its checksum: a corrupt blob decodes to other elements, in
     * each form its own, and only where the CPU decoder accepts the blob
     * too must every form agree */
    std::vector<uint16_t> cpu(n);
    size_t const r = glyd_tensorDecompress(cpu.data(), n * 2, data, size, 1);
    bool const valid = !glyd_isError(r);
    if (valid && (r != n * 2 || cpu != elems)) abort();
    if (rows) product(t, host, desc, tables, n / cols, cols, valid);
    if (desc.layout == GK_LAYOUT_FAST && desc.unitSize % 32 == 0 && !glyd_isError(glyd_cudaTensorNibbles(t)) &&
        !glyd_isError(glyd_tensorNibbleForm(host.data(), &desc))) {
        if (decode(t, n) != elems && valid) abort();
        if (rows) product(t, host, desc, tables, n / cols, cols, valid);
    }
    glyd_cudaTensorFree(t);
    free(tables);
    return 0;
}

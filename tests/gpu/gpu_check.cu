/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_check.cu: the GPU kernels on a real device, against the CPU.
 *
 *   build/cuda/gpu_check FIXTURES_DIR [--quick | --small | --profile]
 *
 *   1. every bf16 matrix of the stories260K fixture, in the fast and the
 *      Huffman layouts, the fast layout's codes as coded (bit planes) and
 *      as the engine uploads them (nibbles, glyd_cudaTensorNibbles):
 *      glyd_cudaDecode gives the tensor back bit for bit; glyd_cudaGemv
 *      gives the bits of the CPU emulation of its kernel
 *      (glyd_tensorEmulateGemv, glyd_tensorEmulateGemvHuffman), batch 1
 *      to 8, both layouts; and a Huffman matrix whose units are too long
 *      for the run index, decoded bit for bit;
 *   2. a synthetic 1 GiB set of bf16 matrices (exponents as trained
 *      weights have them): decoded bit for bit, and the bulk decode's
 *      throughput in bf16 bytes written per second (fast layout: nibbles);
 *   3. y = W x at batch 1 on 4096x4096, 4096x14336 and 14336x4096: the
 *      fused kernels on the fast layout (the rows kernel on nibbles, the
 *      general kernel on bit planes) and on the Huffman layout (the rows
 *      kernel, as --compact runs it) against cuBLAS's bf16 product on the
 *      plain matrix (cublasGemmEx, n = 1), in microseconds per product,
 *      each form's weights read from HBM as in a model (copies enough to
 *      pass L2, taken in turn); and the bytes each reads a product, and
 *      at what rate (near HBM's, a product waits on memory; far under, on
 *      its own instructions or their latency).
 * --quick takes a sixteenth of section 2's rows. --small is the check the
 * kernels get on the CPU (tests/cudacpu, build/cudacpu/gpu_check): section
 * 1, and section 2 on its first three shapes at a 64th of their rows, for
 * the bits alone (no throughput, no section 3: no times mean anything
 * there), with the fast layout's products also on shapes whose units hold
 * several rows or end short. --profile checks nothing: it launches, once
 * each, the kernels whose counters a profiler is to read (tests/gpu/run.sh
 * runs it under Nsight Compute): on 4096x14336 and 14336x4096, the rows
 * kernel on the fast and Huffman layouts, cuBLAS's bf16 product, and the
 * two layouts' bulk decoders; and lists them in order.
 * Prints a Markdown report; exits 1 when a check fails.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "glyd_tensor.h"
#include "glyd_cuda.h"
#include "../../gpu/tensor_kernels.h"
#include "synth_weights.h"

/* libglyd's own (not in its API): the blob described as the kernels see it,
 * and their emulation on the CPU */
extern "C" {
size_t glyd_cudaDescribeBlob(const void* blob, size_t size, gk_tensor* t, gk_huf_tables* tables);
size_t glyd_tensorEmulateGemv(const void* blob, const gk_tensor* t, uint64_t rows, uint64_t cols, const float* x,
                              unsigned batch, float* y);
size_t glyd_tensorNibbleForm(void* blob, gk_tensor* t);
size_t glyd_tensorHuffmanRuns(const void* blob, const gk_tensor* t, const gk_huf_tables* tables, uint16_t* runs);
size_t glyd_tensorEmulateGemvHuffman(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                     const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x,
                                     unsigned batch, float* y);
}

static int g_failures;

#define CHECK(cond, ...)                                                \
    do {                                                                \
        if (!(cond)) { g_failures++; printf("FAIL: " __VA_ARGS__); printf("\n"); } \
    } while (0)
#define CUDA(call)                                                                          \
    do {                                                                                    \
        cudaError_t const e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                            \
            printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(2);                                                                        \
        }                                                                                   \
    } while (0)

static std::vector<uint8_t> read_all(const char* path)
{
    std::vector<uint8_t> v;
    FILE* const f = fopen(path, "rb");
    if (!f) return v;
    fseek(f, 0, SEEK_END);
    v.resize((size_t)ftell(f));
    fseek(f, 0, SEEK_SET);
    if (fread(v.data(), 1, v.size(), f) != v.size()) v.clear();
    fclose(f);
    return v;
}

static std::vector<uint8_t> compress(const uint16_t* w, size_t n, size_t cols, glyd_tensorLayout layout)
{
    std::vector<uint8_t> blob(glyd_tensorCompressBound(n, GLYD_DTYPE_BF16));
    size_t const c = glyd_tensorCompress(blob.data(), blob.size(), w, n, GLYD_DTYPE_BF16, cols, layout, 8);
    if (glyd_isError(c)) { printf("compress: %s\n", glyd_getErrorName(c)); exit(2); }
    blob.resize(c);
    return blob;
}

/* GB/s of a device-to-device copy of n bf16 values, counted as the
 * decoders are (bf16 bytes written a second): the memory's rate for the
 * same writes with 2 bytes read an element, where the fast layout's
 * decoder reads about 1.4, to set the decoders' beside. */
static double copy_gbps(size_t n)
{
    uint16_t *src, *dst;
    cudaEvent_t a, b;
    float ms;
    int const reps = 10;
    CUDA(cudaMalloc((void**)&src, n * 2));
    CUDA(cudaMalloc((void**)&dst, n * 2));
    CUDA(cudaMemset(src, 0x3F, n * 2));
    CUDA(cudaMemcpy(dst, src, n * 2, cudaMemcpyDeviceToDevice)); /* a warm-up */
    CUDA(cudaEventCreate(&a));
    CUDA(cudaEventCreate(&b));
    CUDA(cudaEventRecord(a));
    for (int k = 0; k < reps; k++) CUDA(cudaMemcpyAsync(dst, src, n * 2, cudaMemcpyDeviceToDevice, 0));
    CUDA(cudaEventRecord(b));
    CUDA(cudaEventSynchronize(b));
    CUDA(cudaEventElapsedTime(&ms, a, b));
    CUDA(cudaEventDestroy(a));
    CUDA(cudaEventDestroy(b));
    CUDA(cudaFree(src));
    CUDA(cudaFree(dst));
    return (double)n * 2 * reps / (ms * 1e-3) / 1e9;
}

/* Decodes on the device (the fast layout's codes rewritten as nibbles
 * first, when asked); 1 if the elements come back. */
static int decode_matches(const std::vector<uint8_t>& blob, const uint16_t* w, size_t n, int nibbles, double* gbps)
{
    size_t err;
    glyd_cudaTensor* const t = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
    uint16_t* dst;
    std::vector<uint16_t> back(n);
    int ok;
    if (!t) { printf("upload: %s %s\n", glyd_getErrorName(err), glyd_cudaLastError()); return 0; }
    if (nibbles && glyd_isError(glyd_cudaTensorNibbles(t))) {
        printf("nibble form: %s\n", glyd_cudaLastError());
        glyd_cudaTensorFree(t);
        return 0;
    }
    CUDA(cudaMalloc((void**)&dst, n * 2));
    CUDA(cudaMemset(dst, 0xFF, n * 2));
    err = glyd_cudaDecode(t, dst, NULL);
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaMemcpy(back.data(), dst, n * 2, cudaMemcpyDeviceToHost));
    ok = !glyd_isError(err) && memcmp(back.data(), w, n * 2) == 0;
    if (gbps) {
        cudaEvent_t a, b;
        float ms;
        int const reps = 10;
        CUDA(cudaEventCreate(&a));
        CUDA(cudaEventCreate(&b));
        CUDA(cudaEventRecord(a));
        for (int k = 0; k < reps; k++) glyd_cudaDecode(t, dst, NULL);
        CUDA(cudaEventRecord(b));
        CUDA(cudaEventSynchronize(b));
        CUDA(cudaEventElapsedTime(&ms, a, b));
        *gbps = (double)n * 2 * reps / (ms * 1e-3) / 1e9;
    }
    CUDA(cudaFree(dst));
    glyd_cudaTensorFree(t);
    return ok;
}

/* The fused product against the emulation of its kernel, bit for bit (the
 * fast layout's codes as nibbles on both sides, when asked; the Huffman
 * layout through its run index, as the engine multiplies it). */
static int gemv_matches(const std::vector<uint8_t>& blob, uint64_t rows, uint64_t cols, unsigned batch, int nibbles)
{
    size_t err;
    gk_tensor desc;
    std::vector<gk_huf_tables> tables(1);
    std::vector<uint8_t> host(blob);
    std::vector<float> x(batch * cols), want(batch * rows), got(batch * rows);
    glyd_cudaTensor* const t = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
    float *dx, *dy;
    if (!t) return 0;
    for (size_t i = 0; i < x.size(); i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    glyd_cudaDescribeBlob(host.data(), host.size(), &desc, tables.data());
    if (nibbles &&
        (glyd_isError(glyd_cudaTensorNibbles(t)) || glyd_isError(glyd_tensorNibbleForm(host.data(), &desc)))) {
        glyd_cudaTensorFree(t);
        return 0;
    }
    if (desc.layout == GK_LAYOUT_HUFFMAN) {
        std::vector<uint16_t> runs(gk_huf_index_size(&desc) + 1);
        if (glyd_isError(glyd_tensorHuffmanRuns(host.data(), &desc, tables.data(), runs.data())) ||
            glyd_isError(glyd_tensorEmulateGemvHuffman(host.data(), &desc, tables.data(), runs.data(), rows, cols,
                                                       x.data(), batch, want.data()))) {
            glyd_cudaTensorFree(t);
            return 0;
        }
    } else if (glyd_isError(glyd_tensorEmulateGemv(host.data(), &desc, rows, cols, x.data(), batch, want.data()))) {
        glyd_cudaTensorFree(t);
        return 0;
    }
    CUDA(cudaMalloc((void**)&dx, x.size() * 4));
    CUDA(cudaMalloc((void**)&dy, got.size() * 4));
    CUDA(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
    CUDA(cudaMemset(dy, 0xFF, got.size() * 4));
    err = glyd_cudaGemv(t, rows, cols, dx, batch, dy, NULL);
    CUDA(cudaDeviceSynchronize());
    CUDA(cudaMemcpy(got.data(), dy, got.size() * 4, cudaMemcpyDeviceToHost));
    CUDA(cudaFree(dx));
    CUDA(cudaFree(dy));
    glyd_cudaTensorFree(t);
    return !glyd_isError(err) && memcmp(got.data(), want.data(), got.size() * 4) == 0;
}

/* Products in the fast layout by rows of whole groups whose units hold
 * several rows (rows of 1024 and 2048), the last unit short of the others
 * (an odd number of rows of 2048): a warp's walk through a unit's rows,
 * which the stories260K and synthetic shapes (a row a unit, or rows in
 * parts) do not take. */
static void unit_shapes_check(void)
{
    static const uint64_t kShapes[][2] = { { 67, 1024 }, { 101, 2048 } };
    int products = 0;
    for (auto const& shape : kShapes) {
        size_t const n = (size_t)(shape[0] * shape[1]);
        std::vector<uint16_t> w(n);
        glyd_synthWeights(w.data(), n, 31);
        std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)shape[1], glyd_tensor_fast);
        for (unsigned b : { 1u, 3u, 8u }) {
            CHECK(gemv_matches(blob, shape[0], shape[1], b, 1), "gemv %llux%llu, batch %u",
                  (unsigned long long)shape[0], (unsigned long long)shape[1], b);
            products++;
        }
    }
    printf("- rows of 1024 and 2048 in units of several: %d products checked\n", products);
}

static double time_us(cudaEvent_t a, cudaEvent_t b, int reps)
{
    float ms;
    CUDA(cudaEventSynchronize(b));
    CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e3 / reps;
}

/* --profile: each kernel launched once, in the order listed */
static void profile_launches(void)
{
    static const uint64_t kShapes[][2] = { { 4096, 14336 }, { 14336, 4096 } };
    cublasHandle_t h;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    printf("Kernels launched, in order:\n\n");
    for (auto const& shape : kShapes) {
        uint64_t const rows = shape[0], cols = shape[1];
        size_t const n = (size_t)(rows * cols);
        size_t err = 0;
        float one = 1, zero = 0;
        std::vector<uint16_t> w(n);
        glyd_synthWeights(w.data(), n, 5);
        std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)cols, glyd_tensor_fast);
        std::vector<uint8_t> const hufBlob = compress(w.data(), n, (size_t)cols, glyd_tensor_entropy);
        glyd_cudaTensor* const fast = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
        glyd_cudaTensor* const huf = glyd_cudaTensorUpload(hufBlob.data(), hufBlob.size(), &err);
        std::vector<float> x(cols, 0.5f);
        std::vector<__nv_bfloat16> xh(cols, __float2bfloat16(0.5f));
        __nv_bfloat16 *dw, *dxh;
        float *dx, *dy;
        uint16_t* out;
        CHECK(fast && huf && !glyd_isError(glyd_cudaTensorNibbles(fast)), "upload %llux%llu",
              (unsigned long long)rows, (unsigned long long)cols);
        if (!fast || !huf) exit(1);
        CUDA(cudaMalloc((void**)&dw, n * 2));
        CUDA(cudaMalloc((void**)&out, n * 2));
        CUDA(cudaMalloc((void**)&dxh, cols * 2));
        CUDA(cudaMalloc((void**)&dx, cols * 4));
        CUDA(cudaMalloc((void**)&dy, rows * 4));
        CUDA(cudaMemcpy(dw, w.data(), n * 2, cudaMemcpyHostToDevice));
        CUDA(cudaMemcpy(dx, x.data(), cols * 4, cudaMemcpyHostToDevice));
        CUDA(cudaMemcpy(dxh, xh.data(), cols * 2, cudaMemcpyHostToDevice));
        CUDA(cudaDeviceSynchronize());
        printf("- %llux%llu: product, fast layout (rows kernel)\n", (unsigned long long)rows,
               (unsigned long long)cols);
        CHECK(!glyd_isError(glyd_cudaGemv(fast, rows, cols, dx, 1, dy, NULL)), "product, fast layout");
        printf("- %llux%llu: product, Huffman layout (rows kernel)\n", (unsigned long long)rows,
               (unsigned long long)cols);
        CHECK(!glyd_isError(glyd_cudaGemv(huf, rows, cols, dx, 1, dy, NULL)), "product, Huffman layout");
        printf("- %llux%llu: cuBLAS bf16 product\n", (unsigned long long)rows, (unsigned long long)cols);
        CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, 1, (int)cols, &one, dw, CUDA_R_16BF, (int)cols, dxh,
                           CUDA_R_16BF, (int)cols, &zero, dy, CUDA_R_32F, (int)rows, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS,
              "cublasGemmEx");
        printf("- %llux%llu: bulk decode, fast layout\n", (unsigned long long)rows, (unsigned long long)cols);
        CHECK(!glyd_isError(glyd_cudaDecode(fast, out, NULL)), "bulk decode, fast layout");
        printf("- %llux%llu: bulk decode, Huffman layout\n", (unsigned long long)rows, (unsigned long long)cols);
        CHECK(!glyd_isError(glyd_cudaDecode(huf, out, NULL)), "bulk decode, Huffman layout");
        CUDA(cudaDeviceSynchronize());
        glyd_cudaTensorFree(fast);
        glyd_cudaTensorFree(huf);
        CUDA(cudaFree(dw));
        CUDA(cudaFree(out));
        CUDA(cudaFree(dxh));
        CUDA(cudaFree(dx));
        CUDA(cudaFree(dy));
    }
    cublasDestroy(h);
    printf("\n");
}

int main(int argc, char** argv)
{
    const char* const fixtures = argc > 1 ? argv[1] : "../shared/fixtures";
    int const quick = argc > 2 && !strcmp(argv[2], "--quick"), small = argc > 2 && !strcmp(argv[2], "--small");
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    if (argc > 2 && !strcmp(argv[2], "--profile")) {
        printf("# The kernels to profile: %s (sm_%d%d)\n\n", prop.name, prop.major, prop.minor);
        profile_launches();
        printf("%d failed\n", g_failures);
        return g_failures ? 1 : 0;
    }
    printf("# GPU checks: %s\n\n", prop.name);
    if (small) unit_shapes_check();

    /* 1. the fixture's matrices */
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/stories260K/model.safetensors", fixtures);
        std::vector<uint8_t> const file = read_all(path);
        CHECK(file.size() > 8, "cannot read %s", path);
        if (file.size() > 8) {
            uint64_t hdr;
            memcpy(&hdr, file.data(), 8);
            size_t const n = (file.size() - 8 - hdr) / 2;
            std::vector<uint16_t> w(n);
            memcpy(w.data(), file.data() + 8 + hdr, n * 2);
            static const size_t kCols[] = { 64, 172, 512 };
            int decodes = 0, products = 0;
            for (size_t c : kCols) {
                size_t const m = n - n % c;
                for (glyd_tensorLayout l : { glyd_tensor_fast, glyd_tensor_entropy }) {
                    std::vector<uint8_t> const blob = compress(w.data(), m, c, l);
                    /* nibbles: units of whole groups only (not rows of 172) */
                    int const forms = l == glyd_tensor_fast && c % 32 == 0 ? 2 : 1;
                    for (int nib = 0; nib < forms; nib++) {
                        CHECK(decode_matches(blob, w.data(), m, nib, NULL),
                              "decode, rows of %zu, layout %d, nibbles %d", c, (int)l, nib);
                        decodes++;
                        for (unsigned b = 1; b <= 8; b++, products++)
                            CHECK(gemv_matches(blob, m / c, c, b, nib),
                                  "gemv, rows of %zu, layout %d, batch %u, nibbles %d", c, (int)l, b, nib);
                    }
                }
            }
            printf("- stories260K: %d decodes and %d products checked\n", decodes, products);
        }
    }
    {
        /* rows of a prime length (32771) are units whole, their streams
         * too long for the run index: the Huffman decode a thread a unit */
        size_t const cols = 32771, n = 2 * cols;
        std::vector<uint16_t> w(n);
        glyd_synthWeights(w.data(), n, 11);
        std::vector<uint8_t> const blob = compress(w.data(), n, cols, glyd_tensor_entropy);
        CHECK(decode_matches(blob, w.data(), n, 0, NULL), "decode, Huffman units of %zu, no run index", cols);
        printf("- 2x%zu: Huffman units of whole rows, without a run index, decoded\n", cols);
    }

    /* 2. 1 GiB of synthetic matrices (--small: 4 MiB) */
    {
        static const uint64_t kShapes[][2] = { { 4096, 4096 }, { 14336, 4096 }, { 4096, 14336 }, { 128256, 4096 } };
        double bytes = 0, fastSec = 0, hufSec = 0, copySec = 0;
        int ok = 1;
        size_t total = 0;
        for (unsigned s = 0; s < (small ? 3u : 4u) && total < ((size_t)1 << 29); s++) {
            uint64_t const rows = kShapes[s][0] / (small ? 64 : quick ? 16 : 1), cols = kShapes[s][1];
            size_t const n = (size_t)(rows * cols);
            std::vector<uint16_t> w(n);
            glyd_synthWeights(w.data(), n, 77 + s);
            for (glyd_tensorLayout l : { glyd_tensor_fast, glyd_tensor_entropy }) {
                double gbps = 0;
                std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)cols, l);
                if (!decode_matches(blob, w.data(), n, l == glyd_tensor_fast, small ? NULL : &gbps)) ok = 0;
                if (l == glyd_tensor_fast && !decode_matches(blob, w.data(), n, 0, NULL)) ok = 0;
                if (s < 3) /* the products' three shapes: rows of 4096, long rows cut in parts */
                    for (unsigned b = 1; b <= 8; b *= 8)
                        CHECK(gemv_matches(blob, rows, cols, b, l == glyd_tensor_fast),
                              "gemv %llux%llu, layout %d, batch %u", (unsigned long long)rows,
                              (unsigned long long)cols, (int)l, b);
                if (l == glyd_tensor_fast) fastSec += n * 2 / (gbps * 1e9);
                else hufSec += n * 2 / (gbps * 1e9);
                printf("- %llux%llu: %s layout %.3f of bf16", (unsigned long long)rows, (unsigned long long)cols,
                       l == glyd_tensor_fast ? "fast" : "Huffman", (double)blob.size() / (n * 2.0));
                if (small) printf("\n");
                else printf(", decoded at %.0f GB/s\n", gbps);
            }
            if (!small) {
                double const gbps = copy_gbps(n);
                copySec += n * 2 / (gbps * 1e9);
                printf("- %llux%llu: copied (device to device) at %.0f GB/s\n", (unsigned long long)rows,
                       (unsigned long long)cols, gbps);
            }
            bytes += n * 2;
            total += n;
        }
        CHECK(ok, "synthetic set: a decode differs");
        if (!small)
            printf("\n| bulk decode | bf16 GB/s |\n| --- | ---: |\n| fast layout | %.0f |\n| Huffman layout | %.0f |\n"
                   "| the bf16 copied, device to device (2 bytes read an element) | %.0f |\n\n",
                   bytes / fastSec / 1e9, bytes / hufSec / 1e9, bytes / copySec / 1e9);
    }

    /* 3. y = W x at batch 1 against cuBLAS. A model's decoding step reads
     * each matrix once, from HBM; the same matrix multiplied again and again
     * would be read from L2 instead (4096x4096 in bf16, 32 MiB, fits an
     * H200's 50 MiB), which measures neither product as it runs. So each
     * form is held in enough copies to pass three times L2, and the
     * repetitions go round them. */
    if (!small) {
        static const uint64_t kShapes[][2] = { { 4096, 4096 }, { 4096, 14336 }, { 14336, 4096 } };
        static const size_t kMostCopies = 16;
        cublasHandle_t h;
        cudaEvent_t a, b;
        int const reps = 48;
        CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
        CUDA(cudaEventCreate(&a));
        CUDA(cudaEventCreate(&b));
        printf("L2: %d MiB; each form in copies of at least %d MiB in all (the entropy layout's, the smallest), "
               "%d products timed round them.\n\n", prop.l2CacheSize >> 20, 3 * (prop.l2CacheSize >> 20), reps);
        char rates[3][160]; /* what each form reads a product, and how fast */
        printf("| rows x cols | copies | cuBLAS bf16 (us) | glyd rows kernel (us) | speed-up "
               "| glyd general kernel (us) | glyd rows kernel, entropy layout (us) | speed-up |\n"
               "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (unsigned s = 0; s < 3; s++) {
            uint64_t const rows = kShapes[s][0], cols = kShapes[s][1];
            size_t const n = (size_t)(rows * cols);
            std::vector<uint16_t> w(n);
            glyd_synthWeights(w.data(), n, 5 + s);
            std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)cols, glyd_tensor_fast);
            std::vector<uint8_t> const hufBlob = compress(w.data(), n, (size_t)cols, glyd_tensor_entropy);
            /* enough copies of the smallest form (the entropy layout's) to pass three times L2 */
            size_t const want = 3 * (size_t)prop.l2CacheSize, smallest = hufBlob.size() < blob.size() ? hufBlob.size()
                                                                                                        : blob.size();
            int const copies = (int)(want / smallest + 1 < kMostCopies ? want / smallest + 1 : kMostCopies);
            glyd_cudaTensor *t[kMostCopies], *planes[kMostCopies], *huf[kMostCopies];
            __nv_bfloat16 *dw[kMostCopies], *dxh;
            float *dx, *dy, one = 1, zero = 0;
            int uploaded = 1;
            std::vector<float> x(cols, 0.5f);
            std::vector<__nv_bfloat16> xh(cols, __float2bfloat16(0.5f));
            for (int c = 0; c < copies; c++) {
                size_t err = 0;
                t[c] = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
                planes[c] = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
                huf[c] = glyd_cudaTensorUpload(hufBlob.data(), hufBlob.size(), &err);
                uploaded &= t[c] && planes[c] && huf[c] && !glyd_isError(glyd_cudaTensorNibbles(t[c]));
                CUDA(cudaMalloc((void**)&dw[c], n * 2));
                CUDA(cudaMemcpy(dw[c], w.data(), n * 2, cudaMemcpyHostToDevice));
            }
            CHECK(uploaded, "upload %llux%llu", (unsigned long long)rows, (unsigned long long)cols);
            CUDA(cudaMalloc((void**)&dxh, cols * 2));
            CUDA(cudaMalloc((void**)&dx, cols * 4));
            CUDA(cudaMalloc((void**)&dy, rows * 4));
            CUDA(cudaMemcpy(dx, x.data(), cols * 4, cudaMemcpyHostToDevice));
            CUDA(cudaMemcpy(dxh, xh.data(), cols * 2, cudaMemcpyHostToDevice));
            double us[4] = { 0, 0, 0, 0 };
            /* row-major W (rows x cols) is column-major W^T: y = (W^T)^T x */
            for (int form = 0; form < 4 && uploaded; form++) {
                for (int k = -copies; k < reps; k++) { /* a round of the copies to warm up, then timed */
                    int const c = (k + copies) % copies;
                    if (k == 0) CUDA(cudaEventRecord(a));
                    if (form == 0)
                        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, 1, (int)cols, &one, dw[c], CUDA_R_16BF,
                                     (int)cols, dxh, CUDA_R_16BF, (int)cols, &zero, dy, CUDA_R_32F, (int)rows,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                    else
                        glyd_cudaGemv(form == 1 ? t[c] : form == 2 ? planes[c] : huf[c], rows, cols, dx, 1, dy, NULL);
                }
                CUDA(cudaEventRecord(b));
                us[form] = time_us(a, b, reps);
            }
            printf("| %llux%llu | %d | %.1f | %.1f | %.2fx | %.1f | %.1f | %.2fx |\n", (unsigned long long)rows,
                   (unsigned long long)cols, copies, us[0], us[1], us[0] / us[1], us[2], us[3], us[0] / us[3]);
            {
                /* megabytes a microsecond are terabytes a second: GB/s is 1000 times */
                double const mb[3] = { n * 2 / 1e6, uploaded ? glyd_cudaTensorBytes(t[0]) / 1e6 : 0,
                                       uploaded ? glyd_cudaTensorBytes(huf[0]) / 1e6 : 0 };
                if (!uploaded)
                    snprintf(rates[s], sizeof rates[s], "| %llux%llu | (upload failed) | | |", (unsigned long long)rows,
                             (unsigned long long)cols);
                else
                    snprintf(rates[s], sizeof rates[s], "| %llux%llu | %.1f MB, %.0f GB/s | %.1f MB, %.0f GB/s "
                             "| %.1f MB, %.0f GB/s |", (unsigned long long)rows, (unsigned long long)cols, mb[0],
                             mb[0] * 1e3 / us[0], mb[1], mb[1] * 1e3 / us[1], mb[2], mb[2] * 1e3 / us[3]);
            }
            for (int c = 0; c < copies; c++) {
                glyd_cudaTensorFree(t[c]);
                glyd_cudaTensorFree(planes[c]);
                glyd_cudaTensorFree(huf[c]);
                CUDA(cudaFree(dw[c]));
            }
            CUDA(cudaFree(dxh));
            CUDA(cudaFree(dx));
            CUDA(cudaFree(dy));
        }
        cublasDestroy(h);
        printf("\nWhat each product reads (weights, with the entropy layout's tables and run index), "
               "and how fast:\n\n| rows x cols | cuBLAS bf16 | glyd rows kernel "
               "| glyd rows kernel, entropy layout |\n| --- | ---: | ---: | ---: |\n");
        for (unsigned s = 0; s < 3; s++) printf("%s\n", rates[s]);
        printf("\n");
    }
    printf("%d failed\n", g_failures);
    return g_failures ? 1 : 0;
}

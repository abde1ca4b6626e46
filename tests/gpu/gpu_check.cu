/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_check.cu: the GPU kernels on a real device, against the CPU.
 *
 *   build/cuda/gpu_check FIXTURES_DIR [--quick | --small | --staged | --profile]
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
 * there); the fast layout's products both as they run by default and with
 * their steps held ahead (glyd_cudaSetRowsStages: the next one in
 * registers, or staged at 2 and 3 slots) or asked of L2 ahead
 * (glyd_cudaSetRowsPrefetch, 2 and 5 steps), with shapes whose units hold
 * several rows or end short, and as tuned (glyd_cudaTune, and settings kept
 * by hand: tune_check). --staged checks and times the rows kernel's
 * settings that are not yet the default alone, on a GPU (staged: sm_90 on;
 * on others the product is the unstaged one): section 2's products at a
 * 16th of their rows and the shapes above, bit for bit against the
 * emulation with the next step held in registers, staged at 2 and 3 slots
 * and with 2 steps asked of L2 ahead, then section 3's products so, by
 * default (no steps ahead) and as glyd_cudaTune keeps them (tuned round the
 * copies), beside cuBLAS. It is a run of its own, so that a staged kernel
 * that never ends leaves the default run's figures whole. --profile checks
 * nothing: it launches, once each, the kernels whose counters a profiler is
 * to read (tests/gpu/run.sh runs it under Nsight Compute): on 4096x14336
 * and 14336x4096, the rows kernel on the fast layout (and with its next
 * step held in registers, staged at 2 slots, sm_90 on, and with 2 steps
 * asked of L2 ahead), on the Huffman layout, cuBLAS's bf16 product, and the
 * two layouts' bulk decoders; and lists them in order.
 * Prints a Markdown report; exits 1 when a check fails.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
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
/* the settings that fast-layout products in the nibble form are checked
 * at: steps held ahead (glyd_cudaSetRowsStages: 1 in registers, more
 * staged), steps asked of L2 ahead (glyd_cudaSetRowsPrefetch) */
typedef struct {
    unsigned stages, prefetch;
} rows_setting;
static std::vector<rows_setting> g_settings = { { 0, 0 } };

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
    int same = 1;
    for (rows_setting const& set :
         nibbles && desc.layout == GK_LAYOUT_FAST ? g_settings : std::vector<rows_setting>{ { 0, 0 } }) {
        unsigned const was = glyd_cudaSetRowsStages(set.stages), before = glyd_cudaSetRowsPrefetch(set.prefetch);
        CUDA(cudaMemset(dy, 0xFF, got.size() * 4));
        err = glyd_cudaGemv(t, rows, cols, dx, batch, dy, NULL);
        glyd_cudaSetRowsStages(was);
        glyd_cudaSetRowsPrefetch(before);
        CUDA(cudaDeviceSynchronize());
        CUDA(cudaMemcpy(got.data(), dy, got.size() * 4, cudaMemcpyDeviceToHost));
        if (glyd_isError(err) || memcmp(got.data(), want.data(), got.size() * 4) != 0) {
            if (g_settings.size() > 1)
                printf("(at %u steps held ahead, %u asked of L2 ahead)\n", set.stages, set.prefetch);
            same = 0;
        }
    }
    CUDA(cudaFree(dx));
    CUDA(cudaFree(dy));
    glyd_cudaTensorFree(t);
    return same;
}

/* Products in the fast layout by rows of whole groups whose units hold
 * several rows (rows of 1024 and 2048), the last unit short of the others
 * (an odd number of rows of 2048): the staged steps' walk through units. */
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

#ifdef GLYD_CUDACPU
/* On the CPU, where cudacpu records the 128-byte lines that the kernels
 * ask of L2: a fast-layout product by rows with `steps` steps asked ahead
 * asks for every line of the blob's codes and planes (the nibble form, as
 * the device holds it: gk_device_form), and for no other. The lines are
 * placed by the lowest asked for, the planes' first (device allocations
 * are 256-byte aligned). */
static int prefetch_covers(const std::vector<uint8_t>& blob, uint64_t rows, uint64_t cols, unsigned steps)
{
    std::vector<uint8_t> host(blob);
    std::vector<gk_huf_tables> tables(1);
    std::vector<uintptr_t> asked;
    gk_tensor desc, dev;
    uint64_t pad[2];
    size_t err;
    float *dx, *dy;
    glyd_cudaTensor* const t = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
    if (!t) return 0;
    glyd_cudaDescribeBlob(host.data(), host.size(), &desc, tables.data());
    if (glyd_isError(glyd_cudaTensorNibbles(t)) || glyd_isError(glyd_tensorNibbleForm(host.data(), &desc))) {
        glyd_cudaTensorFree(t);
        return 0;
    }
    gk_device_form(&desc, &dev, pad);
    CUDA(cudaMalloc((void**)&dx, cols * 4));
    CUDA(cudaMalloc((void**)&dy, rows * 4));
    CUDA(cudaMemset(dx, 0, cols * 4));
    unsigned const was = glyd_cudaSetRowsPrefetch(steps);
    cudacpu_recordPrefetches(&asked);
    err = glyd_cudaGemv(t, rows, cols, dx, 1, dy, NULL);
    cudacpu_recordPrefetches(NULL);
    glyd_cudaSetRowsPrefetch(was);
    CUDA(cudaFree(dx));
    CUDA(cudaFree(dy));
    glyd_cudaTensorFree(t);
    if (glyd_isError(err) || asked.empty()) return 0;
    std::vector<uintptr_t> want;
    uintptr_t const base = *std::min_element(asked.begin(), asked.end()) - (dev.planes >> 7);
    uint64_t const groups = dev.nbElements / 32;
    for (uint64_t l = dev.planes >> 7; l <= (dev.planes + 32 * groups - 1) >> 7; l++) want.push_back(base + l);
    for (uint64_t l = dev.codePlanes >> 7; l <= (dev.codePlanes + 12 * groups - 1) >> 7; l++) want.push_back(base + l);
    std::sort(asked.begin(), asked.end());
    asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    return asked == want;
}

/* prefetch_covers on the shapes of the products' checks: rows of a unit,
 * units of several rows, a short last unit, long rows in parts; a step
 * ahead and more steps than a unit holds. */
static void prefetch_coverage_check(void)
{
    static const uint64_t kShapes[][2] = { { 64, 4096 }, { 67, 1024 }, { 101, 2048 }, { 16, 14336 } };
    int products = 0;
    for (auto const& shape : kShapes) {
        size_t const n = (size_t)(shape[0] * shape[1]);
        std::vector<uint16_t> w(n);
        glyd_synthWeights(w.data(), n, 41);
        std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)shape[1], glyd_tensor_fast);
        for (unsigned steps : { 1u, 2u, 8u }) {
            CHECK(prefetch_covers(blob, shape[0], shape[1], steps), "%llux%llu: %u steps ahead ask L2 for other lines",
                  (unsigned long long)shape[0], (unsigned long long)shape[1], steps);
            products++;
        }
    }
    printf("- the lines asked of L2 ahead: every line of the codes and planes, no other (%d products)\n", products);
}
#endif

/* glyd_cudaTune on three copies of a matrix: a setting it times is kept
 * for the shape and is the one it says; products where both settings are
 * left to the tuned shapes (GLYD_CUDA_TUNED) are the plain ones bit for
 * bit. On the CPU, where cudacpu records the lines asked of L2, such a
 * product asks for lines exactly where the setting kept for its shape
 * has steps asked ahead and neither setting is set otherwise, and a
 * tuning whose products differ (cudacpu_plantCopy) is refused. Settings
 * out of range are refused; 64 shapes are kept, the oldest making room. */
static void tune_check(void)
{
    uint64_t const rows = 48, cols = 2048;
    size_t const n = (size_t)(rows * cols);
    std::vector<uint16_t> w(n);
    std::vector<float> x(cols), plain(rows), got(rows);
    glyd_cudaTensor* t[3];
    unsigned stages = 99, prefetch = 99, keptStages = 99, keptPrefetch = 99;
    float *dx, *dy;
    size_t err = 0;
    int uploaded = 1;
    glyd_synthWeights(w.data(), n, 47);
    std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)cols, glyd_tensor_fast);
    for (size_t i = 0; i < cols; i++) x[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    for (auto& c : t) {
        c = glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
        uploaded &= c && !glyd_isError(glyd_cudaTensorNibbles(c));
    }
    CHECK(uploaded, "tuning: upload");
    if (!uploaded) return;
    CUDA(cudaMalloc((void**)&dx, cols * 4));
    CUDA(cudaMalloc((void**)&dy, rows * 4));
    CUDA(cudaMemcpy(dx, x.data(), cols * 4, cudaMemcpyHostToDevice));
    unsigned const wasStages = glyd_cudaSetRowsStages(0), wasPrefetch = glyd_cudaSetRowsPrefetch(0);
    CHECK(!glyd_isError(glyd_cudaGemv(t[0], rows, cols, dx, 1, dy, NULL)), "tuning: plain product");
    CUDA(cudaMemcpy(plain.data(), dy, rows * 4, cudaMemcpyDeviceToHost));
    glyd_cudaSetRowsStages(GLYD_CUDA_TUNED);
    glyd_cudaSetRowsPrefetch(GLYD_CUDA_TUNED);
    err = glyd_cudaTune(t, 3, rows, cols, 1, dx, dy, NULL, &stages, &prefetch);
    CHECK(!glyd_isError(err), "tuning: %s", glyd_cudaLastError());
    CHECK(stages <= 4 && (prefetch == 0 || prefetch == 1 || prefetch == 2 || prefetch == 4) && !(stages && prefetch),
          "tuning kept %u steps held and %u asked of L2 ahead, not a setting it times", stages, prefetch);
    CHECK(glyd_cudaTuned(rows, cols, 1, &keptStages, &keptPrefetch) == 1 && keptStages == stages &&
          keptPrefetch == prefetch, "tuning: the setting kept (%u, %u) is not the one told (%u, %u)", keptStages,
          keptPrefetch, stages, prefetch);
    CHECK(glyd_cudaTuned(rows, cols, 2, NULL, NULL) == 0, "tuning: a setting kept for a batch not tuned");
    /* as tuned, then at each setting kept by hand */
    static const unsigned kKept[][2] = { { 0, 0 }, { 0, 3 }, { 1, 0 }, { 2, 0 }, { 4, 0 } };
    for (int k = -1; k < 5; k++) {
        if (k >= 0) CHECK(!glyd_isError(glyd_cudaSetTuned(rows, cols, 1, kKept[k][0], kKept[k][1])), "kept by hand");
        std::vector<uintptr_t> asked;
#ifdef GLYD_CUDACPU
        cudacpu_recordPrefetches(&asked);
#endif
        CHECK(!glyd_isError(glyd_cudaGemv(t[k < 0 ? 0 : k % 3], rows, cols, dx, 1, dy, NULL)), "tuned product");
#ifdef GLYD_CUDACPU
        cudacpu_recordPrefetches(NULL);
        unsigned const ahead = k < 0 ? prefetch : kKept[k][1];
        CHECK(asked.empty() == (ahead == 0), "a tuned product at %u steps ahead asked L2 for %zu lines", ahead,
              asked.size());
#endif
        CUDA(cudaMemcpy(got.data(), dy, rows * 4, cudaMemcpyDeviceToHost));
        CHECK(!memcmp(got.data(), plain.data(), rows * 4), "a tuned product (setting %d) is not the plain one", k);
    }
    /* either setting set by hand wins over the shape's: slots set to none,
     * no steps asked ahead either, where the shape's setting has 3 */
    CHECK(!glyd_isError(glyd_cudaSetTuned(rows, cols, 1, 0, 3)), "kept by hand");
    glyd_cudaSetRowsStages(0);
    {
        std::vector<uintptr_t> asked;
#ifdef GLYD_CUDACPU
        cudacpu_recordPrefetches(&asked);
#endif
        CHECK(!glyd_isError(glyd_cudaGemv(t[1], rows, cols, dx, 1, dy, NULL)), "product set by hand");
#ifdef GLYD_CUDACPU
        cudacpu_recordPrefetches(NULL);
        CHECK(asked.empty(), "a product set to no steps ahead asked L2 for %zu lines", asked.size());
#endif
        CUDA(cudaMemcpy(got.data(), dy, rows * 4, cudaMemcpyDeviceToHost));
        CHECK(!memcmp(got.data(), plain.data(), rows * 4), "a product set by hand is not the plain one");
    }
    /* with a setting set by hand, tuning times nothing and tells the setting set */
    glyd_cudaSetRowsPrefetch(5);
    unsigned handStages = 99, handPrefetch = 99;
    CHECK(!glyd_isError(glyd_cudaTune(t, 3, rows, cols, 1, dx, dy, NULL, &handStages, &handPrefetch)) &&
          handStages == 0 && handPrefetch == 5 && glyd_cudaTuned(rows, cols, 1, &keptStages, &keptPrefetch) == 1 &&
          keptStages == 0 && keptPrefetch == 3, "tuning with a setting set by hand: told %u, %u; kept %u, %u",
          handStages, handPrefetch, keptStages, keptPrefetch);
    glyd_cudaSetRowsPrefetch(GLYD_CUDA_TUNED);
#ifdef GLYD_CUDACPU
    /* a setting whose product differs from the plain one's is refused,
     * naming it, and the shape keeps what it had: the plain product as
     * the tuner reads it back, then the first other setting's, made to
     * differ by a bit */
    glyd_cudaSetRowsStages(GLYD_CUDA_TUNED);
    for (unsigned nth = 1; nth <= 2; nth++) {
        cudacpu_plantCopy(nth);
        err = glyd_cudaTune(t, 3, rows, cols, 1, dx, dy, NULL, NULL, NULL);
        cudacpu_plantCopy(0);
        CHECK(glyd_isError(err) && strstr(glyd_cudaLastError(), "differs from the plain product") &&
                  glyd_cudaTuned(rows, cols, 1, &keptStages, &keptPrefetch) == 1 && keptStages == 0 &&
                  keptPrefetch == 3, "tuning with product %u differing: %s; kept %u, %u", nth,
              glyd_isError(err) ? glyd_cudaLastError() : "not refused", keptStages, keptPrefetch);
    }
    glyd_cudaSetRowsStages(0);
#endif
    CHECK(glyd_isError(glyd_cudaSetTuned(rows, cols, 1, 5, 0)) &&
          glyd_isError(glyd_cudaSetTuned(rows, cols, 1, 0, 9)) && glyd_isError(glyd_cudaSetTuned(rows, cols, 9, 0, 0)),
          "settings out of range kept");
    CHECK(glyd_isError(glyd_cudaTune(t, 3, rows, cols + 32, 1, dx, dy, NULL, NULL, NULL)), "a tuning of a wrong shape");
    /* 64 shapes are kept: the 64 last, of no product here, push out the oldest */
    CHECK(glyd_cudaTuned(rows, cols, 1, NULL, NULL) == 1, "tuning: the shape's setting lost");
    for (uint64_t k = 0; k < 64; k++) CHECK(!glyd_isError(glyd_cudaSetTuned(1000 + k, 1, 1, 0, 1)), "kept by hand");
    CHECK(glyd_cudaTuned(rows, cols, 1, NULL, NULL) == 0, "tuning: more than 64 shapes kept");
    CHECK(glyd_cudaTuned(1000, 1, 1, &keptStages, &keptPrefetch) == 1 && keptPrefetch == 1 &&
          glyd_cudaTuned(1063, 1, 1, NULL, NULL) == 1, "tuning: the 64 last shapes not kept");
    CHECK(!glyd_isError(glyd_cudaSetTuned(1063, 1, 1, 0, 2)) && glyd_cudaTuned(1063, 1, 1, NULL, &keptPrefetch) == 1 &&
          keptPrefetch == 2 && glyd_cudaTuned(1000, 1, 1, NULL, NULL) == 1, "tuning: a shape kept again");
    glyd_cudaSetRowsStages(wasStages);
    glyd_cudaSetRowsPrefetch(wasPrefetch);
    CUDA(cudaFree(dx));
    CUDA(cudaFree(dy));
    for (auto c : t) glyd_cudaTensorFree(c);
    printf("- tuning: kept %u steps held ahead, %u asked of L2 ahead for %llux%llu; tuned products bit for bit\n",
           stages, prefetch, (unsigned long long)rows, (unsigned long long)cols);
}

static double time_us(cudaEvent_t a, cudaEvent_t b, int reps)
{
    float ms;
    CUDA(cudaEventSynchronize(b));
    CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e3 / reps;
}

/* --profile: each kernel launched once, in the order listed */
static void profile_launches(const cudaDeviceProp& prop)
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
        /* then at the settings not yet timed (staged: sm_90 on) */
        static const struct {
            rows_setting at;
            const char* what;
        } kAhead[] = { { { 1, 0 }, "the next step held in registers" },
                       { { 2, 0 }, "staged at 2 slots" },
                       { { 0, 2 }, "2 steps asked of L2 ahead" } };
        for (auto const& a : kAhead) {
            if (a.at.stages > 1 && prop.major < 9) continue;
            printf("- %llux%llu: product, fast layout, %s\n", (unsigned long long)rows, (unsigned long long)cols,
                   a.what);
            unsigned const was = glyd_cudaSetRowsStages(a.at.stages), before = glyd_cudaSetRowsPrefetch(a.at.prefetch);
            CHECK(!glyd_isError(glyd_cudaGemv(fast, rows, cols, dx, 1, dy, NULL)), "product, %s", a.what);
            glyd_cudaSetRowsStages(was);
            glyd_cudaSetRowsPrefetch(before);
        }
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
    int const staged = argc > 2 && !strcmp(argv[2], "--staged");
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    if (argc > 2 && !strcmp(argv[2], "--profile")) {
        printf("# The kernels to profile: %s (sm_%d%d)\n\n", prop.name, prop.major, prop.minor);
        profile_launches(prop);
        printf("%d failed\n", g_failures);
        return g_failures ? 1 : 0;
    }
    if (staged) {
        g_settings = { { 1, 0 }, { 2, 0 }, { 3, 0 }, { 0, 2 } };
        printf("# GPU checks, the rows kernel with steps held ahead or asked of L2 ahead: %s (sm_%d%d)\n\n",
               prop.name, prop.major, prop.minor);
    } else {
        if (small) g_settings = { { 0, 0 }, { 1, 0 }, { 2, 0 }, { 3, 0 }, { 0, 2 }, { 0, 5 } };
        printf("# GPU checks: %s\n\n", prop.name);
    }
    if (small || staged) unit_shapes_check();
#ifdef GLYD_CUDACPU
    if (small) prefetch_coverage_check();
#endif
    if (small) tune_check();

    /* 1. the fixture's matrices */
    if (!staged) {
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
    if (!staged) {
        /* rows of a prime length (32771) are units whole, their streams
         * too long for the run index: the Huffman decode a thread a unit */
        size_t const cols = 32771, n = 2 * cols;
        std::vector<uint16_t> w(n);
        glyd_synthWeights(w.data(), n, 11);
        std::vector<uint8_t> const blob = compress(w.data(), n, cols, glyd_tensor_entropy);
        CHECK(decode_matches(blob, w.data(), n, 0, NULL), "decode, Huffman units of %zu, no run index", cols);
        printf("- 2x%zu: Huffman units of whole rows, without a run index, decoded\n", cols);
    }

    /* 2. 1 GiB of synthetic matrices (--small: 4 MiB); --staged, the
     * fast layout's products alone, at a 16th of the rows */
    if (staged) {
        static const uint64_t kShapes[][2] = { { 4096, 4096 }, { 14336, 4096 }, { 4096, 14336 } };
        int products = 0;
        for (unsigned s = 0; s < 3; s++) {
            uint64_t const rows = kShapes[s][0] / 16, cols = kShapes[s][1];
            size_t const n = (size_t)(rows * cols);
            std::vector<uint16_t> w(n);
            glyd_synthWeights(w.data(), n, 77 + s);
            std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)cols, glyd_tensor_fast);
            for (unsigned b = 1; b <= 8; b *= 2, products++)
                CHECK(gemv_matches(blob, rows, cols, b, 1), "gemv %llux%llu, batch %u", (unsigned long long)rows,
                      (unsigned long long)cols, b);
        }
        printf("- 256x4096, 896x4096, 256x14336: %d products checked\n\n", products);
    } else {
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
     * repetitions go round them. --staged: the fast layout's rows kernel
     * with no steps ahead, its next step held in registers, at 2 and 3
     * slots a warp, with 2 steps asked of L2 ahead, then as tuned. */
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
        if (staged)
            printf("| rows x cols | copies | cuBLAS bf16 (us) | glyd rows kernel (us) | next step in registers (us) "
                   "| staged, 2 slots (us) | staged, 3 slots (us) | 2 steps asked of L2 ahead (us) | tuned (us) "
                   "| tuned to | speed-ups |\n"
                   "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
        else
            printf("| rows x cols | copies | cuBLAS bf16 (us) | glyd rows kernel (us) | speed-up "
                   "| glyd general kernel (us) | glyd rows kernel, entropy layout (us) | speed-up |\n"
                   "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (unsigned s = 0; s < 3; s++) {
            uint64_t const rows = kShapes[s][0], cols = kShapes[s][1];
            size_t const n = (size_t)(rows * cols);
            std::vector<uint16_t> w(n);
            glyd_synthWeights(w.data(), n, 5 + s);
            std::vector<uint8_t> const blob = compress(w.data(), n, (size_t)cols, glyd_tensor_fast);
            std::vector<uint8_t> const hufBlob =
                staged ? blob : compress(w.data(), n, (size_t)cols, glyd_tensor_entropy);
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
                planes[c] = staged ? NULL : glyd_cudaTensorUpload(blob.data(), blob.size(), &err);
                huf[c] = staged ? NULL : glyd_cudaTensorUpload(hufBlob.data(), hufBlob.size(), &err);
                if (staged) planes[c] = huf[c] = t[c]; /* unused: the forms are t's */
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
            double us[7] = { 0, 0, 0, 0, 0, 0, 0 };
            unsigned tunedStages = 0, tunedPrefetch = 0;
            /* row-major W (rows x cols) is column-major W^T: y = (W^T)^T x */
            /* staged: cuBLAS, then the rows kernel at each setting (held ahead,
             * asked of L2 ahead), the last as tuned */
            static const unsigned kStages[] = { 0, 0, 1, 2, 3, 0, GLYD_CUDA_TUNED };
            static const unsigned kPrefetch[] = { 0, 0, 0, 0, 0, 2, GLYD_CUDA_TUNED };
            for (int form = 0; form < (staged ? 7 : 4) && uploaded; form++) {
                if (staged) glyd_cudaSetRowsStages(kStages[form]), glyd_cudaSetRowsPrefetch(kPrefetch[form]);
                if (staged && form == 6) /* timed round the copies, as the products below go */
                    CHECK(!glyd_isError(glyd_cudaTune(t, (unsigned)copies, rows, cols, 1, dx, dy, NULL, &tunedStages,
                                                      &tunedPrefetch)),
                          "tuning %llux%llu: %s", (unsigned long long)rows, (unsigned long long)cols,
                          glyd_cudaLastError());
                for (int k = -copies; k < reps; k++) { /* a round of the copies to warm up, then timed */
                    int const c = (k + copies) % copies;
                    if (k == 0) CUDA(cudaEventRecord(a));
                    if (form == 0)
                        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, 1, (int)cols, &one, dw[c], CUDA_R_16BF,
                                     (int)cols, dxh, CUDA_R_16BF, (int)cols, &zero, dy, CUDA_R_32F, (int)rows,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                    else if (staged)
                        glyd_cudaGemv(t[c], rows, cols, dx, 1, dy, NULL);
                    else
                        glyd_cudaGemv(form == 1 ? t[c] : form == 2 ? planes[c] : huf[c], rows, cols, dx, 1, dy, NULL);
                }
                CUDA(cudaEventRecord(b));
                us[form] = time_us(a, b, reps);
                if (staged) glyd_cudaSetRowsStages(0), glyd_cudaSetRowsPrefetch(0);
            }
            if (staged)
                printf("| %llux%llu | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %u held, %u ahead "
                       "| %.2fx / %.2fx / %.2fx / %.2fx / %.2fx / %.2fx |\n",
                       (unsigned long long)rows, (unsigned long long)cols, copies, us[0], us[1], us[2], us[3], us[4],
                       us[5], us[6], tunedStages, tunedPrefetch, us[0] / us[1], us[0] / us[2], us[0] / us[3],
                       us[0] / us[4], us[0] / us[5], us[0] / us[6]);
            else
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
                if (!staged) glyd_cudaTensorFree(planes[c]);
                if (!staged) glyd_cudaTensorFree(huf[c]);
                CUDA(cudaFree(dw[c]));
            }
            CUDA(cudaFree(dxh));
            CUDA(cudaFree(dx));
            CUDA(cudaFree(dy));
        }
        cublasDestroy(h);
        if (!staged)
            printf("\nWhat each product reads (weights, with the entropy layout's tables and run index), "
                   "and how fast:\n\n| rows x cols | cuBLAS bf16 | glyd rows kernel "
                   "| glyd rows kernel, entropy layout |\n| --- | ---: | ---: | ---: |\n");
        for (unsigned s = 0; s < 3 && !staged; s++) printf("%s\n", rates[s]);
        printf("\n");
    }
    printf("%d failed\n", g_failures);
    return g_failures ? 1 : 0;
}

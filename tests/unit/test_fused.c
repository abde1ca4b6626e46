/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fused.c: products of one vector with matrices in the fast layout,
 * 3-bit and 4-bit codes, decoded in registers (llm/infer/fused.c), against
 * the same products on the plain bf16 weights and through the decoder, bit
 * for bit, on every SIMD level this CPU has, in fp32 and in bf16 pairs;
 * and a unit whose escapes do not add up. */
#include <math.h>
#include <stdlib.h>

#include "../../llm/infer/infer.h"
#include "../../lib/tensor/tensor.h"
#include "harness.h"

static uint32_t next_random(uint32_t* s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* bf16 weights whose exponents spread as trained ones do: most within a
 * few of 120, about one in thirty further out (escapes in the fast
 * layout, with either codes); every `zeroRow`-th row negative zeros. */
static uint16_t* make_weights(uint64_t rows, uint64_t cols, uint32_t seed, uint64_t zeroRow)
{
    uint16_t* const w = (uint16_t*)malloc((size_t)(rows * cols) * 2);
    uint64_t i;
    if (!w) return NULL;
    for (i = 0; i < rows * cols; i++) {
        uint32_t const r = next_random(&seed);
        unsigned const far = (r & 31) == 0;
        unsigned const e = far ? 100 + (r >> 5) % 40 : 117 + (r >> 5) % 6 + ((r >> 9) & 1);
        w[i] = (uint16_t)(((r >> 12) & 1) << 15 | e << 7 | ((r >> 13) & 0x7F));
        if (zeroRow && (i / cols) % zeroRow == zeroRow - 1) w[i] = 0x8000;
    }
    return w;
}

/* y = W x over rows [r0, r1) through glyd_matmulRows, one vector; with
 * pairs, in bf16 pairs where the CPU can (glyd_decodeScratch.bf16Decode). */
static size_t product_as(const glyd_matrix* w, const float* x, float* y, uint64_t r0, uint64_t r1, int pairs)
{
    glyd_decodeScratch s;
    size_t r;
    memset(&s, 0, sizeof s);
    s.bf16Decode = pairs;
    r = glyd_scratchReserve(&s, w);
    if (!glyd_isError(r)) r = glyd_matmulRows(w, x, 1, y, r0, r1, &s);
    glyd_scratchFree(&s);
    return r;
}

static size_t product(const glyd_matrix* w, const float* x, float* y, uint64_t r0, uint64_t r1)
{
    return product_as(w, x, y, r0, r1, 0);
}

TEST(fused_products_equal_plain_ones_bit_for_bit)
{
    static const struct { uint64_t rows, cols; } kShapes[] = {
        { 37, 64 },    /* 64 rows a unit */
        { 50, 96 },    /* 42 rows a unit, the last unit shorter */
        { 9, 4128 },   /* a row a unit */
        { 5, 16384 },  /* long rows: two units each */
        { 4, 24576 },  /* three units each */
        { 11, 80 },    /* rows that end mid-group: the decoder's way */
    };
    static const unsigned kCodes[] = { GLYD_TENSOR_FAST_CODES, GLYD_TENSOR_NIBBLE_CODES };
    size_t k;
    for (k = 0; k < 2 * sizeof kShapes / sizeof kShapes[0]; k++) {
        uint64_t const rows = kShapes[k / 2].rows, cols = kShapes[k / 2].cols;
        unsigned const codes = kCodes[k % 2];
        uint16_t* const src = make_weights(rows, cols, (uint32_t)(k / 2 + 1), 7);
        float* const x = (float*)malloc((size_t)cols * sizeof(float));
        float* const want = (float*)malloc((size_t)rows * sizeof(float));
        float* const got = (float*)malloc((size_t)rows * sizeof(float));
        glyd_matrix plain, coded;
        uint32_t seed = 99;
        uint64_t i;
        int simd;
        CHECK(src && x && want && got);
        if (!src || !x || !want || !got) { free(src); free(x); free(want); free(got); return; }
        for (i = 0; i < cols; i++) x[i] = (float)((int)(next_random(&seed) % 2001) - 1000) / 256.0f;
        CHECK_OK(glyd_matrixPlain(&plain, src, rows, cols));
        CHECK_OK(glyd_matrixEncodeFast(&coded, src, rows, cols, codes, NULL, NULL));
        CHECK(coded.view.layout == GLYD_TLAYOUT_FAST && coded.view.fastCodes == codes);
        if (cols % 32 != 0) CHECK(!glyd_fusedFits(&coded));
        CHECK_OK(product(&plain, x, want, 0, rows));
        for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
            uint64_t const align = glyd_matrixRowAlign(&coded);
            uint64_t const mid = rows / align / 2 * align;
            glyd_tensorSimdLimit(simd);
            memset(got, 0xFF, (size_t)rows * sizeof(float));
            /* two calls, the second from a unit boundary as threads split rows */
            CHECK_OK(product(&coded, x, got, 0, mid));
            CHECK_OK(product(&coded, x, got, mid, rows));
            if (memcmp(got, want, (size_t)rows * sizeof(float)) != 0)
                fprintf(stderr, "# %llu x %llu, %u codes, SIMD level %d: products differ\n",
                        (unsigned long long)rows, (unsigned long long)cols, codes, simd);
            CHECK(memcmp(got, want, (size_t)rows * sizeof(float)) == 0);
        }
        glyd_tensorSimdLimit(GLYD_SIMD_BEST);
        /* the rows of negative zeros sum to +0, as the plain rows do */
        CHECK(rows < 7 || (memcmp(&want[6], &(float){ 0.0f }, 4) == 0));
        glyd_matrixFree(&coded);
        free(src);
        free(x);
        free(want);
        free(got);
    }
}

/* A token's products in bf16 pairs: the fast layout's 3-bit codes decoded
 * in registers, its 4-bit ones, the entropy layout and rows that end
 * mid-group decoded into a buffer, all give the plain weights' bits; near
 * the fp32 products, not equal to them, where the CPU has AVX512_BF16, and
 * the fp32 products themselves where it does not. */
TEST(fused_pairs_equal_plain_pairs_bit_for_bit)
{
    static const struct { uint64_t rows, cols; } kShapes[] = {
        { 37, 64 }, { 50, 96 }, { 9, 4128 }, { 5, 16384 }, { 4, 24576 }, { 11, 80 }, { 6, 33 },
    };
    size_t k;
    for (k = 0; k < 3 * sizeof kShapes / sizeof kShapes[0]; k++) {
        uint64_t const rows = kShapes[k / 3].rows, cols = kShapes[k / 3].cols;
        unsigned const form = (unsigned)(k % 3); /* 3-bit codes, 4-bit codes, entropy layout */
        uint16_t* const src = make_weights(rows, cols, (uint32_t)(k / 3 + 11), 7);
        float* const x = (float*)malloc((size_t)cols * sizeof(float));
        float* const want = (float*)malloc((size_t)rows * sizeof(float));
        float* const got = (float*)malloc((size_t)rows * sizeof(float));
        float* const fp32 = (float*)malloc((size_t)rows * sizeof(float));
        size_t const cap = glyd_tensorCompressBound((size_t)(rows * cols), GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        glyd_matrix plain, coded;
        uint32_t seed = 5;
        uint64_t i;
        int simd;
        CHECK(src && x && want && got && fp32 && blob);
        if (!src || !x || !want || !got || !fp32 || !blob) { free(src); free(x); free(want); free(got); free(fp32); free(blob); return; }
        for (i = 0; i < cols; i++) x[i] = (float)((int)(next_random(&seed) % 2001) - 1000) / 256.0f + 1.0f / 4096.0f;
        CHECK_OK(glyd_matrixPlain(&plain, src, rows, cols));
        if (form < 2) {
            CHECK_OK(glyd_matrixEncodeFast(&coded, src, rows, cols, form ? GLYD_TENSOR_NIBBLE_CODES : GLYD_TENSOR_FAST_CODES,
                                           NULL, NULL));
        } else {
            size_t const size = glyd_tensorCompress(blob, cap, src, (size_t)(rows * cols), GLYD_DTYPE_BF16, cols,
                                                    glyd_tensor_entropy, 1);
            CHECK_OK(size);
            CHECK_OK(glyd_matrixCoded(&coded, blob, size, rows, cols));
            CHECK(coded.view.layout != GLYD_TLAYOUT_FAST);
        }
        CHECK(glyd_fusedPairsFits(&coded) == (form == 0 && cols % 32 == 0 && glyd_bf16PairsUsable() && glyd_fusedFits(&coded)));
        CHECK_OK(product_as(&plain, x, want, 0, rows, 1));
        CHECK_OK(product_as(&plain, x, fp32, 0, rows, 0));
        for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
            uint64_t const align = glyd_matrixRowAlign(&coded);
            uint64_t const mid = rows / align / 2 * align;
            glyd_tensorSimdLimit(simd);
            memset(got, 0xFF, (size_t)rows * sizeof(float));
            CHECK_OK(product_as(&coded, x, got, 0, mid, 1));
            CHECK_OK(product_as(&coded, x, got, mid, rows, 1));
            /* below AVX-512, fp32 products: the plain fp32 bits */
            if (memcmp(got, glyd_bf16PairsUsable() ? want : fp32, (size_t)rows * sizeof(float)) != 0)
                fprintf(stderr, "# %llu x %llu, form %u, SIMD level %d: pair products differ\n",
                        (unsigned long long)rows, (unsigned long long)cols, form, simd);
            CHECK(memcmp(got, glyd_bf16PairsUsable() ? want : fp32, (size_t)rows * sizeof(float)) == 0);
        }
        glyd_tensorSimdLimit(GLYD_SIMD_BEST);
        if (glyd_bf16PairsUsable()) {
            int moved = 0;
            for (i = 0; i < rows; i++) {
                /* each x rounded by at most 2^-9 of itself */
                double size = 0;
                uint64_t j;
                for (j = 0; j < cols; j++) size += fabs((double)glyd_bf16ToF32(src[i * cols + j]) * x[j]);
                moved |= memcmp(&want[i], &fp32[i], sizeof(float)) != 0;
                CHECK(fabs((double)want[i] - fp32[i]) <= size / 256);
            }
            CHECK(moved);
        }
        glyd_matrixFree(&coded);
        free(src); free(x); free(want); free(got); free(fp32); free(blob);
    }
}

TEST(fused_products_refuse_escapes_that_do_not_add_up)
{
    static const unsigned kCodes[] = { GLYD_TENSOR_FAST_CODES, GLYD_TENSOR_NIBBLE_CODES };
    uint64_t const rows = 64, cols = 128;
    uint16_t* const src = make_weights(rows, cols, 7, 0);
    float x[128], y[64];
    size_t i, k;
    if (!src) return;
    for (i = 0; i < cols; i++) x[i] = 1.0f;
    for (k = 0; k < 2; k++) {
        glyd_matrix coded;
        uint8_t* ends;
        uint32_t first;
        int simd;
        CHECK_OK(glyd_matrixEncodeFast(&coded, src, rows, cols, kCodes[k], NULL, NULL));
        CHECK(coded.view.nbUnits == 2);
        /* unit 0 given one escape fewer than its codes ask for, unit 1 one more */
        ends = coded.ownedBlob + (coded.view.escapeEnds - coded.blob);
        first = glyd_read32(ends);
        CHECK(first > 0);
        glyd_write32(ends, first - 1);
        for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
            glyd_tensorSimdLimit(simd);
            CHECK_ERR(product(&coded, x, y, 0, 32), GLYD_error_corruption_detected);
            CHECK_ERR(product(&coded, x, y, 32, 64), GLYD_error_corruption_detected);
            CHECK_ERR(product_as(&coded, x, y, 0, 32, 1), GLYD_error_corruption_detected);
            CHECK_ERR(product_as(&coded, x, y, 32, 64, 1), GLYD_error_corruption_detected);
        }
        glyd_tensorSimdLimit(GLYD_SIMD_BEST);
        glyd_matrixFree(&coded);
    }
    free(src);
}

TEST(fused_codes_follow_the_widest_kernel)
{
    /* 4-bit codes exactly where AVX2 is the widest product kernel */
    glyd_tensorSimdLimit(GLYD_SIMD_NONE);
    CHECK(glyd_fusedCodes() == GLYD_TENSOR_FAST_CODES);
#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
    {
        int const avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        int const avx512 = __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("gfni") &&
                           __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("bmi2");
        glyd_tensorSimdLimit(GLYD_SIMD_AVX2);
        CHECK(glyd_fusedCodes() == (avx2 ? GLYD_TENSOR_NIBBLE_CODES : GLYD_TENSOR_FAST_CODES));
        glyd_tensorSimdLimit(GLYD_SIMD_BEST);
        CHECK(glyd_fusedCodes() == (avx2 && !avx512 ? GLYD_TENSOR_NIBBLE_CODES : GLYD_TENSOR_FAST_CODES));
    }
#else
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    CHECK(glyd_fusedCodes() == GLYD_TENSOR_FAST_CODES);
#endif
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

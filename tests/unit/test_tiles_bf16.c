/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tiles_bf16.c: products in bf16 pairs (llm/infer/tiles_bf16.c), for
 * prompts when asked: activations rounded to nearest-even bf16, each
 * (row, vector) sum within fp32 rounding of the exact sum of bf16 products,
 * the same bits whatever the batch, through glyd_matmulRows for plain and
 * coded matrices alike; tails of rows, columns and vectors. Where the CPU
 * has no AVX512_BF16, only the rounding, and the products' refusal. */
#include <math.h>
#include <stdlib.h>

#include "../../lib/tensor/tensor.h"
#include "../../llm/infer/infer.h"
#include "harness.h"

static float bf16_value(uint16_t b) { return glyd_bf16ToF32(b); }

TEST(bf16_rounding_to_nearest_even)
{
    /* 1, ties (to the even side), just past a tie, ... */
    float const kIn[] = { 1.0f, 1.00390625f, 1.01171875f, nextafterf(1.00390625f, 2.0f), -2.5f, INFINITY, -INFINITY,
                          3.4028235e38f, 0.0f, -0.0f };
    static const uint16_t kOut[] = { 0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC020, 0x7F80, 0xFF80, 0x7F80, 0x0000, 0x8000 };
    uint16_t out[10 + 40];
    float many[10 + 40];
    size_t i, level;
    for (level = 0; level < 2; level++) {
        glyd_tensorSimdLimit(level ? GLYD_SIMD_BEST : GLYD_SIMD_NONE);
        /* the same values at the end of a longer array: the vector path's tail */
        for (i = 0; i < 40; i++) many[i] = (float)i;
        memcpy(many + 40, kIn, sizeof kIn);
        glyd_bf16FromFloats(out, many, 50);
        for (i = 0; i < 10; i++) CHECK(out[40 + i] == kOut[i]);
        for (i = 0; i < 40; i++) CHECK(bf16_value(out[i]) == (float)i);
        {
            float const nan = NAN;
            glyd_bf16FromFloats(out, &nan, 1);
            CHECK(isnan(bf16_value(out[0])));
        }
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

/* rows x cols bf16 weights of a trained model's spread, and vectors */
static void fill(test_rng* g, uint16_t* w, size_t nw, float* x, size_t nx)
{
    size_t i;
    for (i = 0; i < nw; i++) {
        uint64_t const r = rng_next(g);
        w[i] = (uint16_t)(((r & 1) << 15) | ((118 + (unsigned)((r >> 24) % 6)) << 7) | ((r >> 8) & 0x7F));
    }
    for (i = 0; i < nx; i++) x[i] = (float)((double)(rng_next(g) >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

static void check_shape(test_rng* g, size_t rows, size_t cols, size_t nbVec)
{
    uint16_t* const w = (uint16_t*)malloc(rows * cols * 2);
    uint16_t* const xb = (uint16_t*)malloc(nbVec * cols * 2);
    float* const x = (float*)malloc(nbVec * cols * sizeof(float));
    float* const y = (float*)malloc(nbVec * rows * sizeof(float));
    float* const one = (float*)malloc(rows * sizeof(float));
    size_t v, r, i;
    CHECK(w && xb && x && y && one);
    if (!w || !xb || !x || !y || !one) goto out;
    fill(g, w, rows * cols, x, nbVec * cols);
    glyd_bf16FromFloats(xb, x, nbVec * cols);
    CHECK(glyd_bf16PairsTimesBatch(w, rows, cols, xb, nbVec, y, rows) == 1);
    for (v = 0; v < nbVec; v++) {
        for (r = 0; r < rows; r++) {
            double exact = 0, size = 0;
            for (i = 0; i < cols; i++) {
                double const p = (double)bf16_value(w[r * cols + i]) * bf16_value(xb[v * cols + i]);
                exact += p;
                size += fabs(p);
            }
            /* fp32 sums of cols terms: well within cols ulps of their size */
            if (!(fabs(y[v * rows + r] - exact) <= 1e-7 * (double)cols * size + 1e-30)) {
                fprintf(stderr, "# %zu x %zu, vector %zu row %zu: %g, exact %g\n", rows, cols, v, r,
                        y[v * rows + r], exact);
                CHECK(0);
                goto out;
            }
        }
        /* alone, the same bits */
        CHECK(glyd_bf16PairsTimesBatch(w, rows, cols, xb + v * cols, 1, one, 1) == 1);
        for (r = 0; r < rows; r++) CHECK(memcmp(&one[r], &y[v * rows + r], sizeof(float)) == 0);
    }
out:
    free(w); free(xb); free(x); free(y); free(one);
}

TEST(bf16_pairs_against_exact_sums)
{
    static const size_t kRows[] = { 1, 2, 3, 4, 5, 13 };
    static const size_t kCols[] = { 32, 64, 17, 103, 896 };
    test_rng g = { 7 };
    size_t a, b, v;
    if (!glyd_bf16PairsUsable()) {
        uint16_t w = 0x3F80, xb = 0x3F80;
        float y;
        fprintf(stderr, "# no AVX512_BF16 here: the products refuse\n");
        CHECK(glyd_bf16PairsTimesBatch(&w, 1, 1, &xb, 1, &y, 1) == 0);
        return;
    }
    for (a = 0; a < sizeof kRows / sizeof kRows[0]; a++)
        for (b = 0; b < sizeof kCols / sizeof kCols[0]; b++)
            for (v = 1; v <= 13; v += 3) check_shape(&g, kRows[a], kCols[b], v);
    check_shape(&g, 8, 4864, GLYD_BATCH);
    /* below AVX-512 the products are not used */
    glyd_tensorSimdLimit(GLYD_SIMD_AVX2);
    CHECK(!glyd_bf16PairsUsable());
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

/* Through glyd_matmulRows: a batch in bf16 pairs, a single vector in fp32
 * as without them; a coded matrix gives the plain one's bits. */
TEST(bf16_pairs_in_products_coded_as_plain)
{
    enum { ROWS = 64, COLS = 320, VEC = 9 };
    test_rng g = { 11 };
    uint16_t* const w = (uint16_t*)malloc(ROWS * COLS * 2);
    float* const x = (float*)malloc(VEC * COLS * sizeof(float));
    float *y[3], *single = (float*)malloc(ROWS * sizeof(float)), *exact1 = (float*)malloc(ROWS * sizeof(float));
    glyd_matrix plain, coded;
    glyd_decodeScratch s[2];
    size_t const cap = glyd_tensorCompressBound((size_t)ROWS * COLS, GLYD_DTYPE_BF16);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    size_t size, k;
    for (k = 0; k < 3; k++) y[k] = (float*)malloc(VEC * ROWS * sizeof(float));
    memset(s, 0, sizeof s);
    CHECK(w && x && y[0] && y[1] && y[2] && single && exact1 && blob);
    if (!w || !x || !y[0] || !y[1] || !y[2] || !single || !exact1 || !blob) goto out;
    fill(&g, w, ROWS * COLS, x, VEC * COLS);
    CHECK_OK(glyd_matrixPlain(&plain, w, ROWS, COLS));
    size = glyd_tensorCompress(blob, cap, w, (size_t)ROWS * COLS, GLYD_DTYPE_BF16, COLS, glyd_tensor_fast, 1);
    CHECK_OK(size);
    if (glyd_isError(size)) goto out;
    CHECK_OK(glyd_matrixCoded(&coded, blob, size, ROWS, COLS));
    s[1].bf16Pairs = 1;
    CHECK_OK(glyd_scratchReserve(&s[0], &plain));
    CHECK_OK(glyd_scratchReserve(&s[1], &plain));
    CHECK_OK(glyd_scratchReserve(&s[1], &coded));
    CHECK_OK(glyd_matmulRows(&plain, x, VEC, y[0], 0, ROWS, &s[0]));
    CHECK_OK(glyd_matmulRows(&plain, x, VEC, y[1], 0, ROWS, &s[1]));
    CHECK_OK(glyd_matmulRows(&coded, x, VEC, y[2], 0, ROWS, &s[1]));
    CHECK(memcmp(y[1], y[2], VEC * ROWS * sizeof(float)) == 0);
    if (glyd_bf16PairsUsable()) CHECK(memcmp(y[0], y[1], VEC * ROWS * sizeof(float)) != 0);
    else CHECK(memcmp(y[0], y[1], VEC * ROWS * sizeof(float)) == 0);
    CHECK_OK(glyd_matmulRows(&coded, x, 1, single, 0, ROWS, &s[1]));
    CHECK_OK(glyd_matmulRows(&plain, x, 1, exact1, 0, ROWS, &s[0]));
    CHECK(memcmp(single, exact1, ROWS * sizeof(float)) == 0);
    for (k = 0; k < ROWS; k++) CHECK(fabs(y[1][k] - y[0][k]) <= 1e-2 * (fabs(y[0][k]) + 0.1));
out:
    glyd_scratchFree(&s[0]);
    glyd_scratchFree(&s[1]);
    free(blob); free(w); free(x); free(single); free(exact1);
    for (k = 0; k < 3; k++) free(y[k]);
}

/* A token's vector laid out for its products in bf16 pairs (pairs.h): per
 * piece, from a multiple of 64 on, elements 16q + 0..7 (q = 0..3), then
 * 16q + 8..15, zeros past the piece's end. */
TEST(bf16_pair_order_lays_out_pieces)
{
    float x[256];
    uint16_t xp[512];
    size_t i;
    for (i = 0; i < 256; i++) x[i] = (float)i; /* exact in bf16 */
    CHECK(glyd_bf16PairOrderSize(100, 100) == 128);
    CHECK(glyd_bf16PairOrderSize(256, 96) == 3 * 128);
    CHECK(glyd_bf16PairOrderSize(4096, 2048) == 4096);
    glyd_bf16PairOrder(xp, x, 100, 100);
    for (i = 0; i < 8; i++) {
        CHECK(bf16_value(xp[i]) == (float)i);
        CHECK(bf16_value(xp[8 + i]) == (float)(16 + i));
        CHECK(bf16_value(xp[24 + i]) == (float)(48 + i));
        CHECK(bf16_value(xp[32 + i]) == (float)(8 + i));
        CHECK(bf16_value(xp[56 + i]) == (float)(56 + i));
        CHECK(bf16_value(xp[64 + i]) == (float)(64 + i));
        CHECK(bf16_value(xp[72 + i]) == (float)(80 + i));
        CHECK(bf16_value(xp[96 + i]) == (float)(72 + i));
        CHECK(bf16_value(xp[104 + i]) == (float)(88 + i));
    }
    /* elements 96..99 then zeros */
    for (i = 0; i < 16; i++) CHECK(bf16_value(xp[80 + i]) == (i < 4 ? (float)(96 + i) : 0.0f));
    for (i = 112; i < 128; i++) CHECK(xp[i] == 0);
    /* pieces of 96: the second starts at x[96], the third (64) fills its part */
    glyd_bf16PairOrder(xp, x, 256, 96);
    CHECK(bf16_value(xp[128]) == 96.0f && bf16_value(xp[136]) == 112.0f && bf16_value(xp[160]) == 104.0f);
    CHECK(xp[128 + 80] == 0 && bf16_value(xp[128 + 64]) == 160.0f);
    CHECK(bf16_value(xp[256]) == 192.0f && bf16_value(xp[256 + 63]) == 255.0f);
}

/* Rows times one vector in bf16 pairs: within fp32 rounding of the exact
 * sum of bf16 products, rows summed in pieces, tails of every length. */
TEST(bf16_rows_against_exact_sums)
{
    static const struct { size_t cols, chunk; } kShapes[] = {
        { 32, 32 }, { 64, 64 }, { 96, 96 }, { 17, 17 }, { 103, 103 }, { 896, 896 }, { 4864, 4864 },
        { 256, 96 }, { 16384, 8192 }, { 130, 65 },
    };
    test_rng g = { 13 };
    size_t k;
    if (!glyd_bf16PairsUsable()) {
        uint16_t w = 0x3F80, xp[64];
        float y, x = 1.0f;
        glyd_bf16PairOrder(xp, &x, 1, 1);
        fprintf(stderr, "# no AVX512_BF16 here: the products refuse\n");
        CHECK(glyd_bf16RowsTimesVector(&w, 1, 1, 1, xp, &y) == 0);
        return;
    }
    for (k = 0; k < sizeof kShapes / sizeof kShapes[0]; k++) {
        size_t const rows = 5, cols = kShapes[k].cols, chunk = kShapes[k].chunk;
        uint16_t* const w = (uint16_t*)malloc(rows * cols * 2);
        uint16_t* const xp = (uint16_t*)malloc(glyd_bf16PairOrderSize(cols, (uint32_t)chunk) * 2);
        float* const x = (float*)malloc(cols * sizeof(float));
        float y[5];
        size_t r, i;
        CHECK(w && xp && x);
        if (!w || !xp || !x) { free(w); free(xp); free(x); return; }
        fill(&g, w, rows * cols, x, cols);
        glyd_bf16PairOrder(xp, x, cols, (uint32_t)chunk);
        CHECK(glyd_bf16RowsTimesVector(w, rows, cols, (uint32_t)chunk, xp, y) == 1);
        for (r = 0; r < rows; r++) {
            double exact = 0, size = 0;
            for (i = 0; i < cols; i++) {
                double const p = (double)bf16_value(w[r * cols + i]) * bf16_value(glyd_f32ToBf16(x[i]));
                exact += p;
                size += fabs(p);
            }
            if (!(fabs(y[r] - exact) <= 1e-7 * (double)cols * size + 1e-30))
                fprintf(stderr, "# %zu (pieces of %zu), row %zu: %g, exact %g\n", cols, chunk, r, y[r], exact);
            CHECK(fabs(y[r] - exact) <= 1e-7 * (double)cols * size + 1e-30);
        }
        free(w); free(xp); free(x);
    }
}

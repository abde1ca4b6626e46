/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tiles.c: products of a batch of vectors through the tiles'
 * kernels against one vector at a time through weights.c's kernels, bit
 * for bit: plain and coded matrices (both layouts), rows summed whole or in
 * pieces, widths that are multiples of 16 and not, row ranges anywhere,
 * every batch size, at every SIMD level this CPU has. */
#include <stdlib.h>

#include "../../llm/infer/infer.h"
#include "../../lib/tensor/tensor.h"
#include "harness.h"

/* bf16 weights of a trained model's spread: exponents near 2^-5, some far
 * off, a few zeros, so that the order of the sums shows in the bits. */
static uint16_t* random_weights(test_rng* g, size_t n)
{
    uint16_t* const w = (uint16_t*)malloc(n * 2);
    size_t i;
    for (i = 0; w && i < n; i++) {
        uint64_t const r = rng_next(g);
        unsigned const far = (r >> 20) % 16 == 0;
        unsigned const exponent = far ? 100 + (unsigned)((r >> 24) % 40) : 118 + (unsigned)((r >> 24) % 6);
        w[i] = (r >> 40) % 64 == 0 ? 0 : (uint16_t)(((r & 1) << 15) | (exponent << 7) | ((r >> 8) & 0x7F));
    }
    return w;
}

static float* random_vectors(test_rng* g, size_t n)
{
    float* const x = (float*)malloc(n * sizeof(float));
    size_t i;
    for (i = 0; x && i < n; i++) x[i] = (float)((double)(rng_next(g) >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    return x;
}

/* Rows [r0, r1) of m times 1..GLYD_BATCH vectors at once against each
 * vector alone; at each SIMD level, the tiles' one where the CPU has it. */
static void check_batches(const glyd_matrix* m, const float* x, uint64_t r0, uint64_t r1)
{
    size_t const rows = (size_t)m->rows, cols = (size_t)m->cols;
    float* const ref = (float*)calloc(GLYD_BATCH * rows, sizeof(float));
    float* const y = (float*)calloc(GLYD_BATCH * rows, sizeof(float));
    glyd_decodeScratch s;
    size_t nbVec, t;
    int level;
    memset(&s, 0, sizeof s);
    CHECK(ref && y);
    if (!ref || !y) goto done;
    CHECK_OK(glyd_scratchReserve(&s, m));
    for (t = 0; t < GLYD_BATCH; t++) CHECK_OK(glyd_matmulRows(m, x + t * cols, 1, ref + t * rows, r0, r1, &s));
    for (level = GLYD_SIMD_NONE; level <= GLYD_SIMD_BEST; level++) {
        glyd_tensorSimdLimit(level);
        CHECK(glyd_tileLevel() <= level);
        for (nbVec = 1; nbVec <= GLYD_BATCH; nbVec++) {
            int same = 1;
            memset(y, 0xFF, GLYD_BATCH * rows * sizeof(float));
            CHECK_OK(glyd_matmulRows(m, x, nbVec, y, r0, r1, &s));
            for (t = 0; t < nbVec; t++)
                same &= memcmp(y + t * rows + r0, ref + t * rows + r0, (size_t)(r1 - r0) * sizeof(float)) == 0;
            if (!same)
                fprintf(stderr, "# %zux%zu (chunk %u) rows [%zu, %zu), %zu vectors, SIMD level %d: differ\n", rows,
                        cols, m->chunk, (size_t)r0, (size_t)r1, nbVec, level);
            CHECK(same);
        }
    }
done:
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    glyd_scratchFree(&s);
    free(ref);
    free(y);
}

TEST(tiles_plain_rows_equal_one_vector_at_a_time)
{
    /* rows, columns, the piece its sums are cut in (0: whole rows), rows from */
    static const struct { unsigned rows, cols, chunk, r0; } kShapes[] = {
        { 1, 16, 0, 0 },    { 5, 16, 0, 1 },     { 13, 40, 0, 3 },    { 9, 200, 72, 2 },  { 6, 200, 50, 0 },
        { 11, 896, 0, 5 },  { 8, 1000, 0, 0 },   { 7, 1000, 17, 1 },  { 4, 1030, 512, 0 }, { 3, 1536, 544, 1 },
        { 10, 2055, 0, 4 }, { 5, 4864, 0, 0 },   { 2, 9000, 4500, 1 },
    };
    test_rng g = { 0x7165 };
    size_t i;
    for (i = 0; i < sizeof kShapes / sizeof kShapes[0]; i++) {
        size_t const rows = kShapes[i].rows, cols = kShapes[i].cols;
        uint16_t* const w = random_weights(&g, rows * cols);
        float* const x = random_vectors(&g, GLYD_BATCH * cols);
        glyd_matrix m;
        CHECK(w && x);
        if (w && x) {
            CHECK_OK(glyd_matrixPlain(&m, w, rows, cols));
            if (kShapes[i].chunk) m.chunk = kShapes[i].chunk;
            check_batches(&m, x, kShapes[i].r0, rows);
            if (rows > kShapes[i].r0 + 1) check_batches(&m, x, 0, rows - 1);
        }
        free(w);
        free(x);
    }
}

TEST(tiles_coded_rows_equal_one_vector_at_a_time)
{
    /* units of 20 rows of 200; one row of 4864 (3 units at a time); 8 rows
     * of 9000 in units of half a row (pieces of 4500, not a multiple of 16) */
    static const struct { unsigned rows, cols, r0, r1; } kShapes[] = {
        { 50, 200, 20, 50 }, { 50, 200, 0, 40 }, { 7, 4864, 2, 5 }, { 7, 4864, 0, 7 }, { 8, 9000, 3, 8 },
    };
    static const glyd_tensorLayout kLayouts[] = { glyd_tensor_fast, glyd_tensor_entropy };
    test_rng g = { 0xC0DE };
    size_t i, l;
    for (i = 0; i < sizeof kShapes / sizeof kShapes[0]; i++) {
        size_t const rows = kShapes[i].rows, cols = kShapes[i].cols, n = rows * cols;
        uint16_t* const w = random_weights(&g, n);
        float* const x = random_vectors(&g, GLYD_BATCH * cols);
        size_t const cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        CHECK(w && x && blob);
        for (l = 0; w && x && blob && l < 2; l++) {
            size_t const size = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, cols, kLayouts[l], 1);
            glyd_matrix m;
            CHECK_OK(size);
            if (glyd_isError(size)) continue;
            CHECK_OK(glyd_matrixCoded(&m, blob, size, rows, cols));
            CHECK(m.plain == NULL);
            CHECK(m.view.layout == (l == 0 ? GLYD_TLAYOUT_FAST : GLYD_TLAYOUT_HUFFMAN));
            CHECK(kShapes[i].r0 % glyd_matrixRowAlign(&m) == 0);
            check_batches(&m, x, kShapes[i].r0, kShapes[i].r1);
            glyd_matrixFree(&m);
        }
        free(blob);
        free(w);
        free(x);
    }
}

TEST(tiles_take_the_widest_kernel_the_limit_allows)
{
    int const avx512 = glyd_tileLevel();
    glyd_tensorSimdLimit(GLYD_SIMD_AVX2);
    CHECK(glyd_tileLevel() == (avx512 == GLYD_SIMD_NONE ? GLYD_SIMD_NONE : GLYD_SIMD_AVX2));
    glyd_tensorSimdLimit(GLYD_SIMD_NONE);
    CHECK(glyd_tileLevel() == GLYD_SIMD_NONE);
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    CHECK(glyd_tileLevel() == avx512);
#if defined(__x86_64__) && !defined(GLYD_NO_SIMD)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) CHECK(avx512 == GLYD_SIMD_AVX512);
#endif
}

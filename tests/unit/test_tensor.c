/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tensor.c: the tensor codec: every bit pattern of every dtype, odd
 * shapes, layouts, threads, unit-level decoding, and hostile blobs. */
#include <stdlib.h>

#include <xxhash.h>

#include "../../llm/model/model.h"
#include "../../lib/tensor/tensor.h"
#include "harness.h"

static const glyd_tensorLayout kLayouts[] = { glyd_tensor_auto, glyd_tensor_entropy, glyd_tensor_fast };

/* Compresses and decompresses; 1 if the bytes come back exactly. */
static int tensor_round_trip(const void* src, size_t n, glyd_dtype dtype, size_t row,
                             glyd_tensorLayout layout, unsigned threads, size_t* blobSize)
{
    glyd_dtypeShape shape;
    size_t const cap = glyd_tensorCompressBound(n, dtype);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    uint8_t* back;
    size_t c, d;
    int ok;
    glyd_dtypeShapeOf((unsigned)dtype, &shape);
    back = (uint8_t*)malloc(n * shape.elemSize + 1);
    c = glyd_tensorCompress(blob, cap, src, n, dtype, row, layout, threads);
    if (glyd_isError(c)) {
        fprintf(stderr, "    compress: %s\n", glyd_getErrorName(c));
        free(blob);
        free(back);
        return 0;
    }
    d = glyd_tensorDecompress(back, n * shape.elemSize, blob, c, threads);
    ok = !glyd_isError(d) && d == n * shape.elemSize && (d == 0 || memcmp(back, src, d) == 0);
    if (glyd_isError(d)) fprintf(stderr, "    decompress: %s\n", glyd_getErrorName(d));
    if (blobSize) *blobSize = c;
    free(blob);
    free(back);
    return ok;
}

TEST(tensor_every_16bit_pattern)
{
    /* all 65536 values, as bf16 and as fp16, in an order that mixes them */
    uint16_t* const v = (uint16_t*)malloc(65536 * 2);
    size_t i, l;
    for (i = 0; i < 65536; i++) v[i] = (uint16_t)(i * 40503u);
    for (l = 0; l < 3; l++) {
        CHECK(tensor_round_trip(v, 65536, GLYD_DTYPE_BF16, 256, kLayouts[l], 1, NULL));
        CHECK(tensor_round_trip(v, 65536, GLYD_DTYPE_F16, 256, kLayouts[l], 1, NULL));
    }
    free(v);
}

TEST(tensor_special_values_fp32)
{
    static const uint32_t specials[] = {
        0x00000000, 0x80000000,             /* +0, -0 */
        0x7F800000, 0xFF800000,             /* +inf, -inf */
        0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FBFFFFF, /* quiet and signalling NaNs, payloads */
        0x00000001, 0x007FFFFF, 0x80000001, /* subnormals */
        0x00800000, 0x7F7FFFFF, 0x3F800000, 0xBF800000 };
    uint32_t v[4096];
    test_rng r = { 77 };
    size_t i, l;
    for (i = 0; i < 4096; i++)
        v[i] = (i % 3 == 0) ? specials[(i / 3) % 15] : (uint32_t)rng_next(&r);
    for (l = 0; l < 3; l++) CHECK(tensor_round_trip(v, 4096, GLYD_DTYPE_F32, 64, kLayouts[l], 1, NULL));
}

TEST(tensor_bf16_specials)
{
    static const uint16_t specials[] = { 0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81,
                                         0x0001, 0x807F, 0x0080, 0x7F7F, 0x3F80 };
    uint16_t v[3000];
    size_t i, l;
    for (i = 0; i < 3000; i++) v[i] = specials[i % 12];
    for (l = 0; l < 3; l++) CHECK(tensor_round_trip(v, 3000, GLYD_DTYPE_BF16, 0, kLayouts[l], 1, NULL));
}

TEST(tensor_fp8_every_byte)
{
    uint8_t v[256 * 40];
    size_t i, l;
    for (i = 0; i < sizeof v; i++) v[i] = (uint8_t)(i * 97);
    for (l = 0; l < 3; l++) {
        CHECK(tensor_round_trip(v, sizeof v, GLYD_DTYPE_F8_E4M3, 128, kLayouts[l], 1, NULL));
        CHECK(tensor_round_trip(v, sizeof v, GLYD_DTYPE_F8_E5M2, 0, kLayouts[l], 1, NULL));
    }
}

TEST(tensor_empty_single_and_odd_shapes)
{
    static const size_t rows[] = { 0, 1, 3, 31, 32, 33, 172, 4095, 4096, 4097, 8192, 10007, 14336, 65537 };
    uint16_t* const v = (uint16_t*)malloc(300000 * 2);
    test_rng r = { 9 };
    size_t i, k, l;
    uint16_t one = 0x3F80;
    /* a realistic spread of exponents */
    for (i = 0; i < 300000; i++) {
        uint64_t const x = rng_next(&r);
        v[i] = (uint16_t)(((x & 1) << 15) | ((118 + (x >> 8) % 7 - ((x >> 20) % 5 == 0 ? 10 : 0)) << 7) | ((x >> 40) & 0x7F));
    }
    for (l = 0; l < 3; l++) {
        CHECK(tensor_round_trip(NULL, 0, GLYD_DTYPE_BF16, 0, kLayouts[l], 1, NULL));
        CHECK(tensor_round_trip(&one, 1, GLYD_DTYPE_BF16, 1, kLayouts[l], 1, NULL));
        for (k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            size_t const row = rows[k];
            size_t const n = row ? row * (300000 / row > 7 ? 7 : 300000 / row) : 12345;
            int const ok = tensor_round_trip(v, n, GLYD_DTYPE_BF16, row, kLayouts[l], 1, NULL);
            if (!ok) fprintf(stderr, "    row %zu, layout %d\n", row, (int)kLayouts[l]);
            CHECK(ok);
        }
    }
    free(v);
}

TEST(tensor_constant_and_random)
{
    uint16_t v[5000];
    uint8_t r8[5000];
    size_t i, size;
    test_rng r = { 3 };
    /* one exponent everywhere: only the planes are stored */
    for (i = 0; i < 5000; i++) v[i] = (uint16_t)(0x3F80 | (i & 0x7F) | ((i & 1) << 15));
    CHECK(tensor_round_trip(v, 5000, GLYD_DTYPE_BF16, 100, glyd_tensor_auto, 1, &size));
    CHECK(size < 5000 + 64);
    memset(r8, 0x3C, sizeof r8);
    CHECK(tensor_round_trip(r8, 5000, GLYD_DTYPE_F8_E4M3, 0, glyd_tensor_auto, 1, &size));
    CHECK(size < 64);
    /* random bits: auto stores them, within the header's cost */
    rng_fill(&r, (uint8_t*)v, sizeof v);
    CHECK(tensor_round_trip(v, 5000, GLYD_DTYPE_BF16, 100, glyd_tensor_auto, 1, &size));
    CHECK(size == GLYD_TENSOR_HEADER + sizeof v);
}

TEST(tensor_real_weights_all_layouts)
{
    size_t n, sizes[3], l;
    uint8_t* const w = fixture_bf16(&n);
    if (!w) return;
    for (l = 0; l < 3; l++) CHECK(tensor_round_trip(w, n, GLYD_DTYPE_BF16, 64, kLayouts[l], 1, &sizes[l]));
    /* trained weights: the exponents code in well under 3 bits */
    CHECK(sizes[1] * 8.0 / (double)n < 11.0);
    CHECK(sizes[2] * 8.0 / (double)n < 11.6);
    CHECK(sizes[1] < sizes[2]);
    free(w);
}

TEST(tensor_threads_give_the_same_blob)
{
    /* 2M elements (past the size where workers start): the fixture's
     * weights repeated, their mantissas varied */
    size_t n0, l, i;
    uint8_t* const w0 = fixture_bf16(&n0);
    size_t const n = 2u << 20;
    uint16_t* w;
    if (!w0) return;
    w = (uint16_t*)malloc(n * 2);
    for (i = 0; i < n; i++) w[i] = (uint16_t)(glyd_read16(w0 + 2 * (i % n0)) ^ ((i / n0) & 0x7F));
    for (l = 1; l < 3; l++) {
        size_t const cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
        uint8_t* const a = (uint8_t*)malloc(cap);
        uint8_t* const b = (uint8_t*)malloc(cap);
        size_t const ca = glyd_tensorCompress(a, cap, w, n, GLYD_DTYPE_BF16, 64, kLayouts[l], 1);
        size_t const cb = glyd_tensorCompress(b, cap, w, n, GLYD_DTYPE_BF16, 64, kLayouts[l], 4);
        CHECK_OK(ca);
        CHECK(ca == cb && memcmp(a, b, ca) == 0);
        CHECK(tensor_round_trip(w, n, GLYD_DTYPE_BF16, 64, kLayouts[l], 3, NULL));
        free(a);
        free(b);
    }
    free(w);
    free(w0);
}

TEST(tensor_units_decode_alone)
{
    /* any run of units decodes to its slice of the tensor */
    size_t n, c, l;
    uint8_t* const w = fixture_bf16(&n);
    test_rng r = { 12 };
    if (!w) return;
    for (l = 1; l < 3; l++) {
        size_t const cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        glyd_tensorView v;
        glyd_tensorDTable* const t = (glyd_tensorDTable*)malloc(sizeof(glyd_tensorDTable));
        uint8_t* scratch;
        uint8_t* out = (uint8_t*)malloc(n * 2);
        int i, ok = 1;
        c = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, 64, kLayouts[l], 1);
        CHECK(glyd_tensorOpen(&v, blob, c) == c);
        CHECK(v.unitSize % 64 == 0 && v.nbUnits > 10);
        if (v.layout == GLYD_TLAYOUT_HUFFMAN) glyd_tensorBuildDTable(t, &v.huf);
        scratch = (uint8_t*)malloc(glyd_tensorScratchSize(&v));
        for (i = 0; i < 50; i++) {
            uint64_t const first = rng_next(&r) % v.nbUnits;
            uint64_t const count = 1 + rng_next(&r) % (v.nbUnits - first);
            size_t const got = glyd_tensorDecodeUnits(&v, t, first, count, out, scratch);
            size_t const a = (size_t)(first * v.unitSize * 2);
            if (glyd_isError(got) || memcmp(out, w + a, got) != 0) ok = 0;
            if (!glyd_isError(got) && got != (size_t)(GLYD_MIN((first + count) * v.unitSize, v.nbElements) -
                                                       first * v.unitSize) * 2)
                ok = 0;
        }
        CHECK(ok);
        free(blob);
        free(t);
        free(scratch);
        free(out);
    }
    free(w);
}

/* The matrices of the fixture: offsets, rows and columns from its header. */
typedef struct { size_t offset, rows, cols; } fixture_matrix;

static size_t fixture_matrices(fixture_matrix* out, size_t cap)
{
    char path[1024];
    glyd_mappedFile f;
    glyd_safetensors st;
    const char* why = "";
    size_t i, nb = 0;
    snprintf(path, sizeof path, "%s/../fixtures/stories260K/model.safetensors", corpus_dir());
    if (glyd_isError(glyd_mapFile(&f, path))) return 0;
    if (!glyd_isError(glyd_stParse(&st, f.data, f.size, &why))) {
        for (i = 0; i < st.nbTensors && nb < cap; i++) {
            const glyd_stTensor* const t = &st.tensors[i];
            if (t->ndim != 2 || t->dtype != GLYD_ST_BF16) continue;
            out[nb].offset = (size_t)t->begin / 2;
            out[nb].rows = (size_t)t->shape[0];
            out[nb].cols = (size_t)t->shape[1];
            nb++;
        }
        glyd_stFree(&st);
    }
    glyd_unmapFile(&f);
    return nb;
}

/* A fast blob from the writer, the elements put in pieces of `piece`. */
static size_t write_fast_codes(uint8_t** blob, const uint16_t* src, size_t n, size_t cols, size_t piece,
                               unsigned codes)
{
    uint64_t count[256];
    glyd_fastWriter fw;
    size_t size, i, r = 0;
    memset(count, 0, sizeof count);
    for (i = 0; i < n; i += piece) glyd_fastCount(count, src + i, GLYD_MIN(piece, n - i));
    size = glyd_fastWriterSize(count, cols, codes);
    *blob = (uint8_t*)malloc(size);
    r = glyd_fastWriterBegin(&fw, *blob, size, count, cols, codes, XXH3_64bits(src, n * 2));
    for (i = 0; i < n && !glyd_isError(r); i += piece) r = glyd_fastWriterPut(&fw, src + i, GLYD_MIN(piece, n - i));
    if (!glyd_isError(r)) r = glyd_fastWriterEnd(&fw);
    return r;
}

static size_t write_fast(uint8_t** blob, const uint16_t* src, size_t n, size_t cols, size_t piece)
{
    return write_fast_codes(blob, src, n, cols, piece, GLYD_TENSOR_FAST_CODES);
}

TEST(tensor_nibble_codes_leave_few_escapes)
{
    /* 15 direct codes leave far fewer escapes than 7 on trained weights,
     * for a bit more of codes per element */
    size_t n;
    uint8_t* const w = fixture_bf16(&n);
    fixture_matrix mats[64];
    glyd_tensorView v3, v4;
    uint8_t *b3 = NULL, *b4 = NULL;
    size_t nb, s3, s4;
    const uint16_t* src;
    if (!w) return;
    CHECK(fixture_matrices(mats, 64) >= 1);
    src = (const uint16_t*)(const void*)(w + 2 * mats[0].offset);
    nb = mats[0].rows * mats[0].cols;
    s3 = write_fast_codes(&b3, src, nb, mats[0].cols, nb, GLYD_TENSOR_FAST_CODES);
    s4 = write_fast_codes(&b4, src, nb, mats[0].cols, nb, GLYD_TENSOR_NIBBLE_CODES);
    CHECK_OK(glyd_tensorOpen(&v3, b3, s3));
    CHECK_OK(glyd_tensorOpen(&v4, b4, s4));
    CHECK(v3.fastCodes == GLYD_TENSOR_FAST_CODES && v4.fastCodes == GLYD_TENSOR_NIBBLE_CODES);
    CHECK(glyd_read32(v4.escapeEnds + 4 * (v4.nbUnits - 1)) * 20 < glyd_read32(v3.escapeEnds + 4 * (v3.nbUnits - 1)));
    CHECK(s3 < s4);
    free(b3);
    free(b4);
    free(w);
}

/* The elements of a nibble blob (4-bit fast codes) decoded whole, and its
 * symbols unit by unit, equal src. */
static int nibble_decodes(const uint8_t* blob, size_t size, const uint16_t* src, size_t n)
{
    glyd_tensorView v;
    uint16_t* const out = (uint16_t*)malloc(n * 2 + 64);
    uint8_t* const sym = (uint8_t*)malloc(n + 64);
    size_t r = glyd_tensorDecompress(out, n * 2 + 64, blob, size, 1), i;
    int ok = !glyd_isError(r) && r == n * 2 && memcmp(out, src, n * 2) == 0;
    ok = ok && !glyd_isError(glyd_tensorOpen(&v, blob, size)) && v.fastCodes == GLYD_TENSOR_NIBBLE_CODES;
    if (ok) {
        r = glyd_tensorDecodeSymbols(&v, NULL, 0, v.nbUnits, sym);
        ok = !glyd_isError(r) && r == n;
        for (i = 0; ok && i < n; i++) ok = sym[i] == ((src[i] >> 7) & 0xFF);
    }
    free(out);
    free(sym);
    return ok;
}

TEST(tensor_fast_bf16_every_decoder_path)
{
    /* real weights (rows of 64, 172 and 512 elements: units that start
     * inside the 32-element groups) and every bf16 pattern, in 3-bit and
     * 4-bit codes: each path gives the elements back, whole tensors and
     * runs of units (and the symbols too, for 4-bit codes) */
    size_t n, k, m, nbMat;
    uint8_t* const w = fixture_bf16(&n);
    fixture_matrix mats[64];
    uint16_t every[65536 + 77];
    int simd, ok = 1;
    if (!w) return;
    nbMat = fixture_matrices(mats, 64);
    CHECK(nbMat >= 10);
    for (k = 0; k < 65536 + 77; k++) every[k] = (uint16_t)(k * 40503u);
    for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
        glyd_tensorSimdLimit(simd);
        for (m = 0; m < nbMat; m++)
            if (!tensor_round_trip(w + 2 * mats[m].offset, mats[m].rows * mats[m].cols, GLYD_DTYPE_BF16,
                                   mats[m].cols, glyd_tensor_fast, 1, NULL)) ok = 0;
        if (!tensor_round_trip(every, 65536 + 77, GLYD_DTYPE_BF16, 172, glyd_tensor_fast, 1, NULL)) ok = 0;
    }
    /* the same with 4-bit codes (escapes everywhere in `every`), written
     * in pieces of any size */
    for (m = 0; m <= nbMat; m++) {
        static const size_t kPieces[] = { 1, 31, (size_t)1 << 30 };
        const uint16_t* const src = m < nbMat ? (const uint16_t*)(const void*)(w + 2 * mats[m].offset) : every;
        size_t const nb = m < nbMat ? mats[m].rows * mats[m].cols : 65536 + 77;
        size_t const cols = m < nbMat ? mats[m].cols : 172;
        for (k = 0; k < 3; k++) {
            uint8_t* blob = NULL;
            size_t const size = write_fast_codes(&blob, src, nb, cols, kPieces[k], GLYD_TENSOR_NIBBLE_CODES);
            if (glyd_isError(size)) ok = 0;
            for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST && !glyd_isError(size); simd++) {
                glyd_tensorSimdLimit(simd);
                if (!nibble_decodes(blob, size, src, nb)) ok = 0;
            }
            free(blob);
        }
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    CHECK(ok);
    free(w);
}

TEST(tensor_fast_writer_matches_the_compressor)
{
    /* byte for byte the blob glyd_tensorCompress makes, in any pieces */
    static const size_t kPieces[] = { 1, 31, 4096, (size_t)1 << 30 };
    size_t n, m, p, nbMat;
    uint8_t* const w = fixture_bf16(&n);
    fixture_matrix mats[64];
    int ok = 1;
    if (!w) return;
    nbMat = fixture_matrices(mats, 64);
    for (m = 0; m < nbMat; m++) {
        const uint16_t* const src = (const uint16_t*)(const void*)(w + 2 * mats[m].offset);
        size_t const nb = mats[m].rows * mats[m].cols;
        size_t const cap = glyd_tensorCompressBound(nb, GLYD_DTYPE_BF16);
        uint8_t* const ref = (uint8_t*)malloc(cap);
        size_t const c = glyd_tensorCompress(ref, cap, src, nb, GLYD_DTYPE_BF16, mats[m].cols, glyd_tensor_fast, 1);
        CHECK_OK(c);
        for (p = 0; p < 4; p++) {
            uint8_t* blob = NULL;
            size_t const got = write_fast(&blob, src, nb, mats[m].cols, kPieces[p]);
            if (glyd_isError(got) || got != c || memcmp(blob, ref, c) != 0) ok = 0;
            free(blob);
        }
        free(ref);
    }
    CHECK(ok);
    {
        /* elements other than those counted are refused */
        uint16_t a[100], b[100];
        uint64_t count[256];
        glyd_fastWriter fw;
        uint8_t* blob;
        size_t size, i;
        for (i = 0; i < 100; i++) {
            a[i] = (uint16_t)((120 + i % 7) << 7 | i);
            b[i] = (uint16_t)((90 + i % 9) << 7 | i); /* exponents a's counts make escapes of */
        }
        memset(count, 0, sizeof count);
        glyd_fastCount(count, a, 100);
        size = glyd_fastWriterSize(count, 10, GLYD_TENSOR_FAST_CODES);
        blob = (uint8_t*)malloc(size);
        CHECK_ERR(glyd_fastWriterBegin(&fw, blob, size - 1, count, 10, GLYD_TENSOR_FAST_CODES, 0), GLYD_error_dstSize_tooSmall);
        CHECK_OK(glyd_fastWriterBegin(&fw, blob, size, count, 10, GLYD_TENSOR_FAST_CODES, 0));
        CHECK_ERR(glyd_fastWriterPut(&fw, b, 100), GLYD_error_srcSize_wrong);
        CHECK_OK(glyd_fastWriterBegin(&fw, blob, size, count, 10, GLYD_TENSOR_FAST_CODES, 0));
        CHECK_OK(glyd_fastWriterPut(&fw, a, 99));
        CHECK_ERR(glyd_fastWriterEnd(&fw), GLYD_error_srcSize_wrong);
        CHECK_ERR(glyd_fastWriterPut(&fw, a, 2), GLYD_error_srcSize_wrong);
        CHECK_OK(glyd_fastWriterPut(&fw, a + 99, 1));
        CHECK(glyd_fastWriterEnd(&fw) == size);
        memset(count, 0, sizeof count);
        CHECK(glyd_fastWriterSize(count, 10, GLYD_TENSOR_FAST_CODES) == 0);
        CHECK_ERR(glyd_fastWriterBegin(&fw, blob, size, count, 10, GLYD_TENSOR_FAST_CODES, 0), GLYD_error_srcSize_wrong);
        free(blob);
    }
    free(w);
}

TEST(tensor_info_and_errors)
{
    uint16_t v[1000];
    uint8_t blob[4096];
    glyd_tensorInfo info;
    size_t c, i;
    for (i = 0; i < 1000; i++) v[i] = (uint16_t)(0x3C00 + (i % 200));
    c = glyd_tensorCompress(blob, sizeof blob, v, 1000, GLYD_DTYPE_BF16, 100, glyd_tensor_entropy, 1);
    CHECK_OK(c);
    CHECK(glyd_getTensorInfo(&info, blob, c) == c);
    CHECK(info.dtype == GLYD_DTYPE_BF16 && info.nbElements == 1000 && info.layout == glyd_tensor_entropy);
    CHECK(info.contentSize == 2000 && info.blobSize == c && info.unitSize % 100 == 0);
    CHECK_ERR(glyd_tensorCompress(blob, sizeof blob, v, 1000, (glyd_dtype)9, 0, glyd_tensor_auto, 1),
              GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_tensorCompress(blob, 40, v, 1000, GLYD_DTYPE_BF16, 0, glyd_tensor_auto, 1),
              GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_tensorDecompress(v, 1999, blob, c, 1), GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_tensorDecompress(v, 2000, blob, c + 1, 1), GLYD_error_corruption_detected);
    blob[24] ^= 1; /* the checksum */
    CHECK_ERR(glyd_tensorDecompress(v, 2000, blob, c, 1), GLYD_error_checksum_wrong);
    CHECK_ERR(glyd_tensorDecompress(v, 2000, "GLYT", 4, 1), GLYD_error_srcSize_truncated);
    CHECK(glyd_tensorCompressBound(10, (glyd_dtype)0) == 0);
}

/* glyd_getTensorInfo names each layout a blob can have with the enum that
 * glyd_tensorCompress takes, and compression takes only the ones it can be
 * asked for. */
TEST(tensor_info_names_each_layout)
{
    uint16_t v[4096];
    uint8_t blob[16384];
    glyd_tensorInfo info;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    size_t c, i;
    for (i = 0; i < 4096; i++) v[i] = (uint16_t)((0x3C00 + ((i % 7) << 7)) | (i & 0x7F));
    c = glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_entropy, 1);
    CHECK(glyd_getTensorInfo(&info, blob, c) == c && info.layout == glyd_tensor_entropy);
    c = glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_fast, 1);
    CHECK(glyd_getTensorInfo(&info, blob, c) == c && info.layout == glyd_tensor_fast);
    c = glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_auto, 1);
    CHECK(glyd_getTensorInfo(&info, blob, c) == c && info.layout == glyd_tensor_entropy);
    /* one exponent everywhere: only the raw bits */
    for (i = 0; i < 4096; i++) v[i] = (uint16_t)(0x3F80 | (i & 0x807F));
    c = glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_auto, 1);
    CHECK(glyd_getTensorInfo(&info, blob, c) == c && info.layout == glyd_tensor_constant);
    /* random bits: stored as they are */
    for (i = 0; i < 4096; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = (uint16_t)x;
    }
    c = glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_auto, 1);
    CHECK(glyd_getTensorInfo(&info, blob, c) == c && info.layout == glyd_tensor_stored);
    CHECK_ERR(glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_stored, 1),
              GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_tensorCompress(blob, sizeof blob, v, 4096, GLYD_DTYPE_BF16, 64, glyd_tensor_constant, 1),
              GLYD_error_parameter_outOfBound);
}

/* Decodes hostile bytes; 1 if the result is an error or the original. */
static int tensor_survives(const uint8_t* blob, size_t size, const uint8_t* orig, size_t bytes)
{
    uint8_t* const out = (uint8_t*)malloc(bytes + 64);
    size_t const r = glyd_tensorDecompress(out, bytes + 64, blob, size, 1);
    int const ok = glyd_isError(r) || (r == bytes && memcmp(out, orig, bytes) == 0);
    glyd_tensorInfo info;
    (void)glyd_getTensorInfo(&info, blob, size);
    free(out);
    return ok;
}

TEST(tensor_nibble_codes_hostile)
{
    uint16_t v[700];
    uint8_t* blob = NULL;
    uint8_t* copy;
    size_t i, c, cut, bit;
    int ok = 1, caught = 0, flips = 0, simd;
    glyd_tensorView view;
    /* 16 exponents: code 15 escapes; a unit of 50 */
    for (i = 0; i < 700; i++) v[i] = (uint16_t)(((110 + i % 16 + (i % 13 == 0 ? 30 : 0)) << 7) | (i & 0x7F));
    c = write_fast_codes(&blob, v, 700, 50, 700, GLYD_TENSOR_NIBBLE_CODES);
    CHECK_OK(c);
    if (glyd_isError(c)) { free(blob); return; }
    copy = (uint8_t*)malloc(c);
    for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
        glyd_tensorSimdLimit(simd);
        for (cut = 0; cut < c; cut++) {
            memcpy(copy, blob, cut);
            if (!glyd_isError(glyd_tensorDecompress(v, sizeof v, copy, cut, 1))) ok = 0;
        }
        for (bit = 0; bit < c * 8; bit++) {
            uint8_t out[1400];
            memcpy(copy, blob, c);
            copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            flips++;
            if (!tensor_survives(copy, c, (const uint8_t*)v, sizeof v)) ok = 0;
            if (glyd_isError(glyd_tensorDecompress(out, sizeof out, copy, c, 1))) caught++;
        }
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    CHECK(ok);
    CHECK(caught > flips * 9 / 10);
    /* 4-bit codes are a bf16 form: another dtype, or another code count, is refused */
    memcpy(copy, blob, c);
    copy[5] = GLYD_DTYPE_F16;
    CHECK_ERR(glyd_tensorOpen(&view, copy, c), GLYD_error_corruption_detected);
    memcpy(copy, blob, c);
    copy[GLYD_TENSOR_HEADER] = 8;
    CHECK_ERR(glyd_tensorOpen(&view, copy, c), GLYD_error_corruption_detected);
    free(copy);
    free(blob);
}

TEST(tensor_hostile_blobs)
{
    uint16_t v[700];
    size_t i, l;
    int ok = 1, caught = 0, flips = 0;
    test_rng r = { 5 };
    /* every layout; the fast one through each decoder path */
    static const struct { glyd_tensorLayout layout; int simd; } kCases[] = {
        { glyd_tensor_auto, GLYD_SIMD_BEST }, { glyd_tensor_entropy, GLYD_SIMD_BEST },
        { glyd_tensor_fast, GLYD_SIMD_NONE }, { glyd_tensor_fast, GLYD_SIMD_AVX2 }, { glyd_tensor_fast, GLYD_SIMD_BEST }
    };
    for (i = 0; i < 700; i++) v[i] = (uint16_t)(((118 + i % 9 + (i % 13 == 0 ? 20 : 0)) << 7) | (i & 0x7F));
    for (l = 0; l < sizeof kCases / sizeof kCases[0]; l++) {
        glyd_tensorSimdLimit(kCases[l].simd);
        size_t const cap = glyd_tensorCompressBound(700, GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        uint8_t* const copy = (uint8_t*)malloc(cap);
        size_t const c = glyd_tensorCompress(blob, cap, v, 700, GLYD_DTYPE_BF16, 50, kCases[l].layout, 1);
        size_t cut, bit;
        CHECK_OK(c);
        for (cut = 0; cut < c; cut++) {
            memcpy(copy, blob, cut);
            if (!glyd_isError(glyd_tensorDecompress(v, sizeof v, copy, cut, 1))) ok = 0;
        }
        for (bit = 0; bit < c * 8; bit++) {
            memcpy(copy, blob, c);
            copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            flips++;
            if (!tensor_survives(copy, c, (const uint8_t*)v, sizeof v)) ok = 0;
            {
                uint8_t out[1400];
                if (glyd_isError(glyd_tensorDecompress(out, sizeof out, copy, c, 1))) caught++;
            }
        }
        free(blob);
        free(copy);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    CHECK(ok);
    CHECK(caught > flips * 9 / 10);
    for (i = 0; i < 20000; i++) {
        uint8_t buf[300];
        size_t const n = (size_t)(rng_next(&r) % sizeof buf) + 1;
        rng_fill(&r, buf, n);
        if (n >= 32 && (i & 1)) {
            /* a plausible header over random contents */
            glyd_write32(buf, GLYD_TENSOR_MAGIC);
            buf[4] = 1;
            buf[5] = (uint8_t)(1 + rng_next(&r) % 5);
            buf[6] = (uint8_t)(rng_next(&r) % 4);
            buf[7] = 0;
            glyd_write64(buf + 8, rng_next(&r) % 2000);
            glyd_write32(buf + 16, (uint32_t)(1 + rng_next(&r) % 600));
        }
        if (!tensor_survives(buf, n, buf, 0)) ok = 0;
    }
    CHECK(ok);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weights.c: bf16 matrices, plain or in the tensor codec, and the products
 * the forward pass needs from them. A coded matrix is decoded a unit (whole
 * rows, or an even part of one long row) at a time into a small per-thread
 * buffer, right before those rows are multiplied.
 *
 * Both forms sum a row in the same pieces and the same order, through the
 * same kernel, so that the logits of a coded model are bit-identical to
 * those of the same engine on the plain weights.
 */
#include <stdlib.h>
#include <xxhash.h>

#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define DOT_AVX2 1
#else
#  define DOT_AVX2 0
#endif

void glyd_matrixFree(glyd_matrix* m)
{
    free(m->dt);
    free(m->ownedBlob);
    free(m->ownedPlain);
    memset(m, 0, sizeof(*m));
}

size_t glyd_matrixBytes(const glyd_matrix* m)
{
    return m->plain ? (size_t)(m->rows * m->cols * 2) : m->view.blobSize;
}

/* ------------------------------------------------------------------------ */
/* Dot products                                                             */
/* ------------------------------------------------------------------------ */

/*
 * Every kernel sums a piece of a row in one order, so that plain and coded
 * weights give bit-identical products:
 *   - sixteen partial sums: in each block of 16 elements, element 2j goes to
 *     even lane j and element 2j + 1 to odd lane j;
 *   - then even + odd, lane by lane; the tail (under 16 elements) adds its
 *     products into lanes 0, 1, ... (wrapping at 8); then a fixed tree.
 * Splitting even and odd elements is what makes bf16 cheap to widen: a
 * 32-bit lane holding two bf16 values is the odd one as a float once its low
 * half is masked off, and the even one once shifted up by 16. The vector x
 * is laid out to match (glyd_deinterleaveX): per block, its 8 even elements,
 * then its 8 odd ones.
 */
#define DOT_BLOCK 16

/* Plain rows are read from memory four at a time, four streams the
 * hardware prefetcher follows late: each is fetched this far ahead. */
#define DOT_PREFETCH 512

void glyd_deinterleaveX(float* xd, const float* x, uint64_t cols, uint32_t chunk)
{
    uint64_t p, i;
    unsigned j;
    for (p = 0; p < cols; p += chunk) {
        uint64_t const end = GLYD_MIN(p + chunk, cols);
        for (i = p; i + DOT_BLOCK <= end; i += DOT_BLOCK)
            for (j = 0; j < DOT_BLOCK / 2; j++) {
                xd[i + j] = x[i + 2 * j];
                xd[i + DOT_BLOCK / 2 + j] = x[i + 2 * j + 1];
            }
        for (; i < end; i++) xd[i] = x[i];
    }
}

/* The portable kernel: out[k] = row k . x for nbRows rows `stride` apart. */
static void dot_rows_portable(const uint16_t* w, size_t stride, unsigned nbRows, const float* xd, size_t n,
                              float* out)
{
    unsigned k, j;
    for (k = 0; k < nbRows; k++) {
        const uint16_t* const row = w + k * stride;
        float ev[8] = { 0, 0, 0, 0, 0, 0, 0, 0 }, od[8] = { 0, 0, 0, 0, 0, 0, 0, 0 }, s[8];
        size_t i;
        for (i = 0; i + DOT_BLOCK <= n; i += DOT_BLOCK)
            for (j = 0; j < 8; j++) {
                float const pe = glyd_bf16ToF32(row[i + 2 * j]) * xd[i + j];
                float const po = glyd_bf16ToF32(row[i + 2 * j + 1]) * xd[i + 8 + j];
                ev[j] += pe;
                od[j] += po;
            }
        for (j = 0; j < 8; j++) s[j] = ev[j] + od[j];
        out[k] = glyd_dotFinish(s, row, xd, i, n);
    }
}

#if DOT_AVX2
#  define DOT_ROW(r, e, o)                                                                    \
    do {                                                                                      \
        __m256i const h = _mm256_loadu_si256((const __m256i*)(const void*)((r) + i));        \
        e = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)), xe, e);          \
        o = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(h, high)), xo, o);         \
    } while (0)

/* The lanes of one row's sums, then its tail and tree. */
__attribute__((target("avx2,fma")))
static float dot_close(__m256 e, __m256 o, const uint16_t* row, const float* xd, size_t i, size_t n)
{
    float s[8];
    _mm256_storeu_ps(s, _mm256_add_ps(e, o));
    return glyd_dotFinish(s, row, xd, i, n);
}

/* Four rows at once share each load of x: eight chains of FMAs in flight. */
__attribute__((target("avx2,fma")))
static void dot4_avx2(const uint16_t* w, size_t stride, const float* xd, size_t n, float* out)
{
    __m256i const high = _mm256_set1_epi32((int)0xFFFF0000u);
    const uint16_t *const r0 = w, *const r1 = w + stride, *const r2 = w + 2 * stride, *const r3 = w + 3 * stride;
    __m256 e0 = _mm256_setzero_ps(), e1 = e0, e2 = e0, e3 = e0, o0 = e0, o1 = e0, o2 = e0, o3 = e0;
    size_t i;
    for (i = 0; i + DOT_BLOCK <= n; i += DOT_BLOCK) {
        __m256 const xe = _mm256_loadu_ps(xd + i), xo = _mm256_loadu_ps(xd + i + 8);
        _mm_prefetch((const char*)(r0 + i) + DOT_PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char*)(r1 + i) + DOT_PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char*)(r2 + i) + DOT_PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char*)(r3 + i) + DOT_PREFETCH, _MM_HINT_T0);
        DOT_ROW(r0, e0, o0);
        DOT_ROW(r1, e1, o1);
        DOT_ROW(r2, e2, o2);
        DOT_ROW(r3, e3, o3);
    }
    out[0] = dot_close(e0, o0, r0, xd, i, n);
    out[1] = dot_close(e1, o1, r1, xd, i, n);
    out[2] = dot_close(e2, o2, r2, xd, i, n);
    out[3] = dot_close(e3, o3, r3, xd, i, n);
}

__attribute__((target("avx2,fma")))
static float dot1_avx2(const uint16_t* r0, const float* xd, size_t n)
{
    __m256i const high = _mm256_set1_epi32((int)0xFFFF0000u);
    __m256 e0 = _mm256_setzero_ps(), o0 = e0;
    size_t i;
    for (i = 0; i + DOT_BLOCK <= n; i += DOT_BLOCK) {
        __m256 const xe = _mm256_loadu_ps(xd + i), xo = _mm256_loadu_ps(xd + i + 8);
        DOT_ROW(r0, e0, o0);
    }
    return dot_close(e0, o0, r0, xd, i, n);
}
#  undef DOT_ROW
#endif

/* out[k] = row k . x for nbRows <= 4 rows `stride` apart, n elements each. */
static void dot_rows(const uint16_t* w, size_t stride, unsigned nbRows, const float* xd, size_t n, float* out)
{
#if DOT_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        unsigned k;
        if (nbRows == 4) dot4_avx2(w, stride, xd, n, out);
        else for (k = 0; k < nbRows; k++) out[k] = dot1_avx2(w + k * stride, xd, n);
        return;
    }
#endif
    dot_rows_portable(w, stride, nbRows, xd, n, out);
}

/* Rows [0, nbRows) (nbRows <= 4) of a block `stride` apart, each summed in
 * pieces of `chunk` elements in order. */
static void rows_dot(const uint16_t* w, size_t stride, unsigned nbRows, const float* xd, uint64_t cols,
                     uint32_t chunk, float* out)
{
    float part[4];
    uint64_t p;
    unsigned k;
    for (k = 0; k < nbRows; k++) out[k] = 0;
    for (p = 0; p < cols; p += chunk) {
        dot_rows(w + p, stride, nbRows, xd + p, (size_t)GLYD_MIN((uint64_t)chunk, cols - p), part);
        for (k = 0; k < nbRows; k++) out[k] += part[k];
    }
}

/* ------------------------------------------------------------------------ */
/* Units                                                                    */
/* ------------------------------------------------------------------------ */

/* Whole rows in each unit (0 when a row spans several units). */
static uint64_t rows_per_unit(const glyd_matrix* m)
{
    return m->view.unitSize % m->cols == 0 ? m->view.unitSize / m->cols : 0;
}

size_t glyd_scratchReserve(glyd_decodeScratch* s, const glyd_matrix* m)
{
    size_t const xd = (size_t)GLYD_BATCH * (size_t)m->cols;
    if (xd > s->xdCap) {
        free(s->xd);
        /* on cache lines: a kernel's load of x that straddles two costs two */
        s->xd = (float*)aligned_alloc(64, (xd * sizeof(float) + 63) / 64 * 64);
        s->xdCap = s->xd ? xd : 0;
    }
    RETURN_ERROR_IF(!s->xd, memory_allocation, "decode scratch");
    if (s->bf16Pairs || s->bf16Decode) {
        size_t const xb = (size_t)GLYD_MAX((uint64_t)(s->bf16Pairs ? xd : 0),
                                           s->bf16Decode ? glyd_bf16PairOrderSize(m->cols, m->chunk) : 0);
        if (xb > s->xbCap) {
            free(s->xb);
            s->xb = (uint16_t*)malloc(xb * sizeof(uint16_t));
            s->xbCap = s->xb ? xb : 0;
            RETURN_ERROR_IF(!s->xb, memory_allocation, "decode scratch");
        }
    }
    if (!m->plain) {
        /* four units of whole rows, or the units of four long rows */
        size_t const elems = (size_t)GLYD_MAX((uint64_t)4 * m->view.unitSize, 4 * m->cols) + 16;
        size_t const symbols = glyd_tensorScratchSize(&m->view);
        if (elems > s->elemCap) {
            free(s->elems);
            s->elems = (uint16_t*)malloc(elems * 2);
            s->elemCap = s->elems ? elems : 0;
        }
        if (symbols > s->symbolCap) {
            free(s->symbols);
            s->symbols = (uint8_t*)malloc(symbols);
            s->symbolCap = s->symbols ? symbols : 0;
        }
        RETURN_ERROR_IF(!s->elems || !s->symbols, memory_allocation, "decode scratch");
    }
    return 0;
}

void glyd_scratchFree(glyd_decodeScratch* s)
{
    free(s->elems);
    free(s->symbols);
    free(s->xd);
    free(s->xb);
    memset(s, 0, sizeof(*s));
}

/* Decodes units [u, u + n) into s->elems. */
static size_t decode_units(const glyd_matrix* m, uint64_t u, uint64_t n, glyd_decodeScratch* s)
{
    size_t const r = glyd_tensorDecodeUnits(&m->view, m->dt, u, n, s->elems, s->symbols);
    FORWARD_IF_ERROR(r);
    return 0;
}

/* Rows [r0, r1) of W, held as bf16 from `block` on (row r0 first), times
 * every vector of the batch: four rows at a time, each group of rows serving
 * every vector while it sits in the cache. With xb (the vectors in bf16),
 * in bf16 pairs. */
static void block_times_batch(const glyd_matrix* w, const uint16_t* block, uint64_t r0, uint64_t r1,
                              const float* xd, const uint16_t* xb, size_t nbVec, float* y)
{
    uint64_t r;
    size_t t;
    if (xb && glyd_bf16PairsTimesBatch(block, r1 - r0, w->cols, xb, nbVec, y + r0, w->rows)) return;
    /* enough vectors for a matrix product: the same sums, through tiles.c */
    if (glyd_tileTimesBatch(block, r1 - r0, w->cols, w->chunk, xd, nbVec, y + r0, w->rows)) return;
    for (r = r0; r < r1; r += 4) {
        unsigned const nr = (unsigned)GLYD_MIN((uint64_t)4, r1 - r);
        for (t = 0; t < nbVec; t++) {
            float out[4];
            unsigned k;
            rows_dot(block + (r - r0) * w->cols, (size_t)w->cols, nr, xd + t * w->cols, w->cols, w->chunk, out);
            for (k = 0; k < nr; k++) y[t * w->rows + r + k] = out[k];
        }
    }
}

/* What multiplies a block of bf16 rows: the batch's vectors laid out for
 * the kernels (xd, or xb rounded to bf16 for pair products), or with xp a
 * single vector in the pair order of a token's products in bf16 pairs. */
typedef struct {
    const float* xd;
    const uint16_t* xb;
    const uint16_t* xp;
    size_t nbVec;
    float* y;
} block_product;

/* Rows [r0, r1) of W, held as bf16 from `block` on, times p's vectors. */
static void block_times(const glyd_matrix* w, const uint16_t* block, uint64_t r0, uint64_t r1, const block_product* p)
{
    if (p->xp) glyd_bf16RowsTimesVector(block, r1 - r0, w->cols, w->chunk, p->xp, p->y + r0);
    else block_times_batch(w, block, r0, r1, p->xd, p->xb, p->nbVec, p->y);
}

/* Rows [r0, r1) of W times p's vectors: plain rows as they lie, coded ones
 * a few units at a time decoded into s->elems, each unit decoded once. */
static size_t rows_times(const glyd_matrix* w, uint64_t r0, uint64_t r1, glyd_decodeScratch* s, const block_product* p)
{
    uint64_t const rpu = w->plain ? 0 : rows_per_unit(w);
    if (w->plain) {
        block_times(w, w->plain + r0 * w->cols, r0, r1, p);
    } else if (rpu) {
        /* up to four units at a time, whole rows each; r0 is a unit's first row */
        uint64_t u;
        RETURN_ERROR_IF(r0 % rpu, GENERIC, "product range not aligned on units");
        for (u = r0 / rpu; u * rpu < r1; u += 4) {
            uint64_t const n = GLYD_MIN((uint64_t)4, w->view.nbUnits - u);
            uint64_t const end = GLYD_MIN((u + n) * rpu, r1);
            FORWARD_IF_ERROR(decode_units(w, u, n, s));
            block_times(w, s->elems, u * rpu, end, p);
        }
    } else {
        /* long rows: the units of four rows at a time */
        uint64_t const parts = w->cols / w->view.unitSize;
        uint64_t r;
        for (r = r0; r < r1; r += 4) {
            uint64_t const nr = GLYD_MIN((uint64_t)4, r1 - r);
            FORWARD_IF_ERROR(decode_units(w, r * parts, nr * parts, s));
            block_times(w, s->elems, r, r + nr, p);
        }
    }
    return 0;
}

/* Y[t][r] = W[r] . X[t] for every vector t of the batch and rows [r0, r1):
 * each unit decoded once serves every vector. A single vector decodes the
 * fast layout in registers where a kernel fits (fused.c). */
size_t glyd_matmulRows(const glyd_matrix* w, const float* x, size_t nbVec, float* y, uint64_t r0, uint64_t r1,
                       glyd_decodeScratch* s)
{
    block_product p;
    size_t t;
    RETURN_ERROR_IF(nbVec > GLYD_BATCH || !s->xd || s->xdCap < nbVec * w->cols, GENERIC, "scratch not reserved");
    memset(&p, 0, sizeof p);
    p.nbVec = nbVec;
    p.y = y;
    if (nbVec == 1 && s->bf16Decode && glyd_bf16PairsUsable()) {
        RETURN_ERROR_IF(!s->xb || s->xbCap < glyd_bf16PairOrderSize(w->cols, w->chunk), GENERIC,
                        "scratch not reserved");
        glyd_bf16PairOrder(s->xb, x, w->cols, w->chunk);
        if (glyd_fusedPairsFits(w)) return glyd_fusedRowsPairs(w, s->xb, y, r0, r1);
        p.xp = s->xb;
        return rows_times(w, r0, r1, s, &p);
    }
    if (s->bf16Pairs && nbVec > 1 && glyd_bf16PairsUsable()) {
        RETURN_ERROR_IF(!s->xb || s->xbCap < nbVec * w->cols, GENERIC, "scratch not reserved");
        glyd_bf16FromFloats(s->xb, x, nbVec * w->cols);
        p.xb = s->xb;
    } else {
        for (t = 0; t < nbVec; t++) glyd_deinterleaveX(s->xd + t * w->cols, x + t * w->cols, w->cols, w->chunk);
    }
    p.xd = s->xd;
    if (nbVec == 1 && glyd_fusedFits(w)) return glyd_fusedRows(w, s->xd, y, r0, r1);
    return rows_times(w, r0, r1, s, &p);
}

size_t glyd_matrixRow(const glyd_matrix* w, uint64_t r, float* out, glyd_decodeScratch* s)
{
    const uint16_t* row;
    uint64_t c;
    RETURN_ERROR_IF(r >= w->rows, parameter_outOfBound, "row");
    if (w->plain) {
        row = w->plain + r * w->cols;
    } else {
        uint64_t const rpu = rows_per_unit(w);
        if (rpu) {
            FORWARD_IF_ERROR(decode_units(w, r / rpu, 1, s));
            row = s->elems + (r % rpu) * w->cols;
        } else {
            uint64_t const parts = w->cols / w->view.unitSize;
            FORWARD_IF_ERROR(decode_units(w, r * parts, parts, s));
            row = s->elems;
        }
    }
    for (c = 0; c < w->cols; c++) out[c] = glyd_bf16ToF32(row[c]);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Making matrices                                                          */
/* ------------------------------------------------------------------------ */

size_t glyd_matrixPlain(glyd_matrix* m, const uint16_t* data, uint64_t rows, uint64_t cols)
{
    memset(m, 0, sizeof(*m));
    m->rows = rows;
    m->cols = cols;
    m->plain = data;
    /* the pieces a coded copy would have: the units glyd_tensorCompress makes */
    {
        uint32_t const unit = glyd_tensorUnitSize(rows * cols, cols);
        m->chunk = unit % cols == 0 ? (uint32_t)cols : unit;
    }
    return 0;
}

size_t glyd_matrixCoded(glyd_matrix* m, const uint8_t* blob, size_t size, uint64_t rows, uint64_t cols)
{
    memset(m, 0, sizeof(*m));
    m->rows = rows;
    m->cols = cols;
    FORWARD_IF_ERROR(glyd_tensorOpen(&m->view, blob, size));
    m->blob = blob;
    RETURN_ERROR_IF(m->view.dtype != GLYD_DTYPE_BF16, model_unsupported, "weights other than bf16");
    RETURN_ERROR_IF(m->view.nbElements != rows * cols, model_invalid, "tensor size");
    if (m->view.unitSize % cols != 0 && cols % m->view.unitSize != 0) {
        /* units that cut rows unevenly (a blob written without its row
         * length): decoded once, kept plain */
        uint16_t* const plain = (uint16_t*)malloc((size_t)(rows * cols) * 2);
        size_t r;
        RETURN_ERROR_IF(!plain, memory_allocation, "matrix");
        r = glyd_tensorDecompress(plain, (size_t)(rows * cols) * 2, blob, size, 1);
        if (glyd_isError(r)) { free(plain); return r; }
        glyd_matrixPlain(m, plain, rows, cols);
        m->ownedPlain = plain;
        return 0;
    }
    m->chunk = m->view.unitSize % cols == 0 ? (uint32_t)cols : m->view.unitSize;
    if (m->view.layout == GLYD_TLAYOUT_HUFFMAN) {
        m->dt = (glyd_tensorDTable*)malloc(sizeof(*m->dt));
        RETURN_ERROR_IF(!m->dt, memory_allocation, "decoding table");
        glyd_tensorBuildDTable(m->dt, &m->view.huf);
    }
    return 0;
}

uint64_t glyd_matrixRowAlign(const glyd_matrix* m)
{
    uint64_t const rpu = m->plain ? 1 : rows_per_unit(m);
    return rpu ? rpu : 1;
}

/* ------------------------------------------------------------------------ */
/* Coding matrices into the fast layout                                     */
/* ------------------------------------------------------------------------ */

/* Elements coded per slice: each slice is handed back once read. */
#define ENCODE_SLICE ((size_t)1 << 20)

size_t glyd_matrixEncodeFast(glyd_matrix* w, const uint16_t* src, uint64_t rows, uint64_t cols, unsigned codes,
                             glyd_sliceDone done, void* opaque)
{
    uint64_t const n = rows * cols;
    uint64_t count[256], i;
    XXH3_state_t h;
    glyd_fastWriter fw;
    size_t size, r;
    uint8_t* blob;
    memset(count, 0, sizeof count);
    XXH3_64bits_reset(&h);
    for (i = 0; i < n; i += ENCODE_SLICE) {
        size_t const len = (size_t)GLYD_MIN((uint64_t)ENCODE_SLICE, n - i);
        glyd_fastCount(count, src + i, len);
        XXH3_64bits_update(&h, src + i, len * 2);
        if (done) done(opaque, src + i, len * 2);
    }
    size = glyd_fastWriterSize(count, cols, codes);
    blob = (uint8_t*)malloc(size ? size : 1);
    RETURN_ERROR_IF(!blob, memory_allocation, "weights");
    r = glyd_fastWriterBegin(&fw, blob, size, count, cols, codes, XXH3_64bits_digest(&h));
    for (i = 0; i < n && !glyd_isError(r); i += ENCODE_SLICE) {
        size_t const len = (size_t)GLYD_MIN((uint64_t)ENCODE_SLICE, n - i);
        r = glyd_fastWriterPut(&fw, src + i, len);
        if (done) done(opaque, src + i, len * 2);
    }
    if (!glyd_isError(r)) r = glyd_fastWriterEnd(&fw);
    if (!glyd_isError(r)) r = glyd_matrixCoded(w, blob, size, rows, cols);
    if (glyd_isError(r)) { free(blob); return r; }
    w->ownedBlob = blob;
    return 0;
}

size_t glyd_matrixRecodeFast(glyd_matrix* w, const uint8_t* blob, size_t blobSize, uint64_t rows, uint64_t cols,
                             unsigned codes, const uint64_t* expected)
{
    glyd_matrix src;
    glyd_decodeScratch s;
    uint64_t count[256], u;
    glyd_fastWriter fw;
    glyd_csum sum;
    size_t size = 0, r;
    uint8_t* out = NULL;
    int pass;
    memset(&s, 0, sizeof s);
    memset(count, 0, sizeof count);
    glyd_csumReset(&sum, glyd_csum_xxh3);
    FORWARD_IF_ERROR(glyd_matrixCoded(&src, blob, blobSize, rows, cols));
    r = src.plain ? GLYD_ERROR(GENERIC) : glyd_scratchReserve(&s, &src); /* plain: not a unit-wise blob */
    for (pass = 0; pass < 2 && !glyd_isError(r); pass++) {
        if (pass == 1) {
            if (expected && glyd_csumDigest(&sum) != *expected) { r = GLYD_ERROR(checksum_wrong); break; }
            size = glyd_fastWriterSize(count, cols, codes);
            out = (uint8_t*)malloc(size ? size : 1);
            r = out ? glyd_fastWriterBegin(&fw, out, size, count, cols, codes, src.view.checksum)
                    : GLYD_ERROR(memory_allocation);
        }
        for (u = 0; u < src.view.nbUnits && !glyd_isError(r); u += 4) {
            uint64_t const nb = GLYD_MIN((uint64_t)4, src.view.nbUnits - u);
            r = glyd_tensorDecodeUnits(&src.view, src.dt, u, nb, s.elems, s.symbols);
            if (glyd_isError(r)) break;
            if (pass == 0) {
                glyd_fastCount(count, s.elems, r / 2);
                if (expected) glyd_csumUpdate(&sum, s.elems, r);
            } else {
                r = glyd_fastWriterPut(&fw, s.elems, r / 2);
            }
        }
    }
    if (!glyd_isError(r)) r = glyd_fastWriterEnd(&fw);
    glyd_scratchFree(&s);
    glyd_matrixFree(&src);
    if (!glyd_isError(r)) r = glyd_matrixCoded(w, out, size, rows, cols);
    if (glyd_isError(r)) { free(out); return r; }
    w->ownedBlob = out;
    return 0;
}

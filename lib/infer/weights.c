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

GLYD_FORCE_INLINE float bf16_to_f32(uint16_t h)
{
    uint32_t const u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The portable kernel: eight partial sums, as the AVX2 one keeps, added up
 * in the same tree; n a multiple of 8 or not. */
static float dot_plain(const uint16_t* w, const float* x, size_t n)
{
    float acc[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    size_t i = 0, k;
    for (; i + 8 <= n; i += 8)
        for (k = 0; k < 8; k++) acc[k] += bf16_to_f32(w[i + k]) * x[i + k];
    for (k = 0; i < n; i++, k++) acc[k] += bf16_to_f32(w[i]) * x[i];
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

#if DOT_AVX2
__attribute__((target("avx2,fma"))) static float dot_avx2(const uint16_t* w, const float* x, size_t n)
{
    __m256 acc = _mm256_setzero_ps();
    float lanes[8], tail[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
    size_t i = 0, k;
    for (; i + 8 <= n; i += 8) {
        __m128i const h = _mm_loadu_si128((const __m128i*)(const void*)(w + i));
        __m256 const wf = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        acc = _mm256_fmadd_ps(wf, _mm256_loadu_ps(x + i), acc);
    }
    _mm256_storeu_ps(lanes, acc);
    for (k = 0; i < n; i++, k++) tail[k] = bf16_to_f32(w[i]) * x[i];
    for (k = 0; k < 8; k++) lanes[k] += tail[k];
    return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}
#endif

static float dot(const uint16_t* w, const float* x, size_t n)
{
#if DOT_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return dot_avx2(w, x, n);
#endif
    return dot_plain(w, x, n);
}

/* A row's product, in pieces of `chunk` elements summed in order. */
static float row_dot(const uint16_t* row, const float* x, uint64_t cols, uint32_t chunk)
{
    float acc = 0;
    uint64_t p;
    for (p = 0; p < cols; p += chunk) acc += dot(row + p, x + p, (size_t)GLYD_MIN((uint64_t)chunk, cols - p));
    return acc;
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
    size_t elems, symbols;
    if (m->plain) return 0;
    /* four units of whole rows, or the units of one long row */
    elems = (size_t)GLYD_MAX((uint64_t)4 * m->view.unitSize, m->cols) + 16;
    symbols = glyd_tensorScratchSize(&m->view);
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
    return 0;
}

void glyd_scratchFree(glyd_decodeScratch* s)
{
    free(s->elems);
    free(s->symbols);
    memset(s, 0, sizeof(*s));
}

/* Decodes units [u, u + n) into s->elems. */
static size_t decode_units(const glyd_matrix* m, uint64_t u, uint64_t n, glyd_decodeScratch* s)
{
    size_t const r = glyd_tensorDecodeUnits(&m->view, m->dt, u, n, s->elems, s->symbols);
    FORWARD_IF_ERROR(r);
    return 0;
}

/* Y[t][r] = W[r] . X[t] for every vector t of the batch and rows [r0, r1):
 * each unit decoded once serves every vector. */
size_t glyd_matmulRows(const glyd_matrix* w, const float* x, size_t nbVec, float* y, uint64_t r0, uint64_t r1,
                       glyd_decodeScratch* s)
{
    uint64_t r;
    size_t t;
#define ROW_TIMES_BATCH(row, r_)                                                                     \
    for (t = 0; t < nbVec; t++) y[t * w->rows + (r_)] = row_dot((row), x + t * w->cols, w->cols, w->chunk)
    if (w->plain) {
        for (r = r0; r < r1; r++) ROW_TIMES_BATCH(w->plain + r * w->cols, r);
        return 0;
    }
    {
        uint64_t const rpu = rows_per_unit(w);
        if (rpu) {
            /* up to four units at a time, whole rows each; r0 is a unit's first row */
            uint64_t u;
            RETURN_ERROR_IF(r0 % rpu, GENERIC, "product range not aligned on units");
            for (u = r0 / rpu; u * rpu < r1; u += 4) {
                uint64_t const n = GLYD_MIN((uint64_t)4, w->view.nbUnits - u);
                uint64_t const end = GLYD_MIN((u + n) * rpu, r1);
                FORWARD_IF_ERROR(decode_units(w, u, n, s));
                for (r = u * rpu; r < end; r++) ROW_TIMES_BATCH(s->elems + (r - u * rpu) * w->cols, r);
            }
        } else {
            uint64_t const parts = w->cols / w->view.unitSize;
            for (r = r0; r < r1; r++) {
                FORWARD_IF_ERROR(decode_units(w, r * parts, parts, s));
                ROW_TIMES_BATCH(s->elems, r);
            }
        }
    }
#undef ROW_TIMES_BATCH
    return 0;
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
    for (c = 0; c < w->cols; c++) out[c] = bf16_to_f32(row[c]);
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
    m->dt = (glyd_tensorDTable*)malloc(sizeof(*m->dt));
    RETURN_ERROR_IF(!m->dt, memory_allocation, "decoding table");
    if (m->view.layout == GLYD_TLAYOUT_HUFFMAN) glyd_tensorBuildDTable(m->dt, &m->view.huf);
    return 0;
}

uint64_t glyd_matrixRowAlign(const glyd_matrix* m)
{
    uint64_t const rpu = m->plain ? 1 : rows_per_unit(m);
    return rpu ? rpu : 1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tiles.c: a block of bf16 rows times a batch of vectors, as a matrix
 * product. weights.c's kernels take one row and one vector at a time, so
 * each weight is loaded and widened once per vector; here a few rows are
 * widened once into an fp32 tile, and a register-blocked kernel multiplies
 * R of its rows by V vectors at once, each weight loaded once for V vectors
 * and each element of x once for R rows: the FMAs, not the loads, set the
 * pace.
 *
 * The sums are those of weights.c's kernels, bit for bit (see the comment
 * above DOT_BLOCK there): every (row, vector) pair keeps its sixteen lanes,
 * one FMA after another in block order, and closes each piece of a row
 * the same way. The tile's columns are laid out as x is (glyd_deinterleaveX):
 * per block of 16, the 8 even elements, then the 8 odd ones, so that one
 * 16-lane accumulator (or two of 8) holds a pair's even and odd lanes.
 */
#include "infer.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
#  include <immintrin.h>
#  define TILE_X86 1
#else
#  define TILE_X86 0
#endif

#define TILE_BLOCK 16 /* weights.c's DOT_BLOCK */

/* Rows widened together: both kernels' R. */
#define TILE_ROWS 4

/* Columns of a piece widened at a time: the tile stays in L1 while every
 * vector of the batch passes over it, and x's span of each vector, in L2,
 * is read once per TILE_ROWS rows. Each pair's lanes wait in memory between
 * spans. */
#define TILE_COLS 512

/* Below this many vectors, widening rows once gains little over
 * weights.c's kernels, which widen them as they go. */
#define TILE_MIN_VECTORS 4

typedef struct {
    _Alignas(64) float w[TILE_ROWS][TILE_COLS];
    /* each (row, vector) pair's sixteen lanes between spans */
    _Alignas(64) float acc[TILE_ROWS][GLYD_BATCH][TILE_BLOCK];
} tile;

int glyd_tileLevel(void)
{
#if TILE_X86
    /* the kernels use FMAs, as weights.c's do on the same CPUs */
    int const limit = glyd_tensorSimdLimitGet();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return GLYD_SIMD_NONE;
    if (limit >= GLYD_SIMD_AVX512 && __builtin_cpu_supports("avx512f")) return GLYD_SIMD_AVX512;
    if (limit >= GLYD_SIMD_AVX2) return GLYD_SIMD_AVX2;
#endif
    return GLYD_SIMD_NONE;
}

/* A pair's piece closed as weights.c's kernels close it: even + odd lane by
 * lane, then glyd_dotFinish. */
static float piece_close(const float lanes[TILE_BLOCK], const uint16_t* row, const float* xd, size_t i, size_t n)
{
    float s[8];
    unsigned j;
    for (j = 0; j < 8; j++) s[j] = lanes[j] + lanes[8 + j];
    return glyd_dotFinish(s, row, xd, i, n);
}

#if TILE_X86

/* len (a multiple of 16) elements of nbRows rows `stride` apart into the
 * tile, each block of 16 as its even then its odd elements; the rows up to
 * TILE_ROWS left are zeros. With `more`, the same columns of the next
 * TILE_ROWS rows are fetched into L2 meanwhile, a row's worth of spans
 * before they are widened: plain rows come from memory. */
__attribute__((target("avx2")))
static void tile_widen(tile* t, const uint16_t* w, size_t stride, unsigned nbRows, size_t len, int more)
{
    __m256i const high = _mm256_set1_epi32((int)0xFFFF0000u);
    unsigned k;
    size_t i;
    for (k = 0; k < TILE_ROWS; k++) {
        float* const dst = t->w[k];
        if (k >= nbRows) {
            memset(dst, 0, len * sizeof(float));
            continue;
        }
        for (i = 0; i < len; i += TILE_BLOCK) {
            __m256i const h = _mm256_loadu_si256((const __m256i*)(const void*)(w + k * stride + i));
            if (more && i % 32 == 0) _mm_prefetch((const char*)(w + (k + TILE_ROWS) * stride + i), _MM_HINT_T1);
            _mm256_store_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
            _mm256_store_ps(dst + i + 8, _mm256_castsi256_ps(_mm256_and_si256(h, high)));
        }
    }
}

/* The lanes of pair (row k, vector v). */
#  define PAIR(t, k, v) ((t)->acc[k][v])

/*
 * AVX-512: rows 0..3 of the tile times vectors [v0, v0 + V) over nbBlocks
 * blocks, x's span of vector v at x + v * xStride. One zmm per pair holds
 * its 8 even then 8 odd lanes, as the tile's and x's blocks are laid out:
 * 4 V accumulators, 4 weights, one x. A piece's first span (first) starts
 * its sums from zero, the others from where the last one left them.
 */
static inline __attribute__((always_inline, target("avx512f")))
void span_avx512(tile* t, int first, const float* x, size_t xStride, size_t v0, unsigned V, size_t nbBlocks)
{
    __m512 a[TILE_ROWS][6];
    unsigned k, v;
    size_t b;
    for (k = 0; k < TILE_ROWS; k++)
        for (v = 0; v < V; v++) a[k][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(PAIR(t, k, v0 + v));
    for (b = 0; b < nbBlocks; b++) {
        __m512 const w0 = _mm512_load_ps(t->w[0] + b * TILE_BLOCK), w1 = _mm512_load_ps(t->w[1] + b * TILE_BLOCK),
                     w2 = _mm512_load_ps(t->w[2] + b * TILE_BLOCK), w3 = _mm512_load_ps(t->w[3] + b * TILE_BLOCK);
        for (v = 0; v < V; v++) {
            __m512 const xv = _mm512_loadu_ps(x + (v0 + v) * xStride + b * TILE_BLOCK);
            a[0][v] = _mm512_fmadd_ps(w0, xv, a[0][v]);
            a[1][v] = _mm512_fmadd_ps(w1, xv, a[1][v]);
            a[2][v] = _mm512_fmadd_ps(w2, xv, a[2][v]);
            a[3][v] = _mm512_fmadd_ps(w3, xv, a[3][v]);
        }
    }
    for (k = 0; k < TILE_ROWS; k++)
        for (v = 0; v < V; v++) _mm512_store_ps(PAIR(t, k, v0 + v), a[k][v]);
}

/* The tile times every vector: six at a time, then the rest. */
__attribute__((target("avx512f")))
static void spans_avx512(tile* t, int first, const float* x, size_t xStride, size_t nbVec, size_t nbBlocks)
{
    size_t v0 = 0;
    for (; v0 + 6 <= nbVec; v0 += 6) span_avx512(t, first, x, xStride, v0, 6, nbBlocks);
    switch (nbVec - v0) {
    case 5: span_avx512(t, first, x, xStride, v0, 5, nbBlocks); break;
    case 4: span_avx512(t, first, x, xStride, v0, 4, nbBlocks); break;
    case 3: span_avx512(t, first, x, xStride, v0, 3, nbBlocks); break;
    case 2: span_avx512(t, first, x, xStride, v0, 2, nbBlocks); break;
    case 1: span_avx512(t, first, x, xStride, v0, 1, nbBlocks); break;
    default: break;
    }
}

/*
 * AVX2: the tile's four rows times vectors [v0, v0 + V), as weights.c's
 * dot4_avx2 sums: two ymm per pair, its even lanes and its odd ones, each
 * an FMA of the widened weights and x's matching half. The two halves never
 * meet until a piece closes, so they run one after the other (half h: the
 * 8 floats at h * 8 of each block): 4 V sums, V halves of x and one of
 * weights in registers, 4 + V loads for 4 V FMAs.
 */
static inline __attribute__((always_inline, target("avx2,fma")))
void span_avx2(tile* t, int first, unsigned h, const float* x, size_t xStride, size_t v0, unsigned V,
               size_t nbBlocks)
{
    __m256 a[TILE_ROWS][3];
    unsigned k, v;
    size_t b;
    for (k = 0; k < TILE_ROWS; k++)
        for (v = 0; v < V; v++) a[k][v] = first ? _mm256_setzero_ps() : _mm256_load_ps(PAIR(t, k, v0 + v) + 8 * h);
    for (b = 0; b < nbBlocks; b++) {
        size_t const i = b * TILE_BLOCK + 8 * h;
        __m256 xv[3];
        for (v = 0; v < V; v++) xv[v] = _mm256_loadu_ps(x + (v0 + v) * xStride + i);
        for (k = 0; k < TILE_ROWS; k++) {
            __m256 const w = _mm256_load_ps(t->w[k] + i);
            for (v = 0; v < V; v++) a[k][v] = _mm256_fmadd_ps(w, xv[v], a[k][v]);
        }
    }
    for (k = 0; k < TILE_ROWS; k++)
        for (v = 0; v < V; v++) _mm256_store_ps(PAIR(t, k, v0 + v) + 8 * h, a[k][v]);
}

/* The tile times every vector, three vectors at a time, each half over
 * them before the next group, so that x's span is read from L2 once per
 * tile. */
__attribute__((target("avx2,fma")))
static void spans_avx2(tile* t, int first, const float* x, size_t xStride, size_t nbVec, size_t nbBlocks)
{
    size_t v0;
    unsigned h;
    for (v0 = 0; v0 < nbVec; v0 += 3) {
        unsigned const V = (unsigned)GLYD_MIN((size_t)3, nbVec - v0);
        for (h = 0; h < 2; h++) {
            if (V == 3) span_avx2(t, first, h, x, xStride, v0, 3, nbBlocks);
            else if (V == 2) span_avx2(t, first, h, x, xStride, v0, 2, nbBlocks);
            else span_avx2(t, first, h, x, xStride, v0, 1, nbBlocks);
        }
    }
}

/* Eight pairs' pieces closed at once, as piece_close closes each (no
 * tail): even + odd lanes, then the 8 x 8 of lane sums transposed so that
 * register j holds lane j of every pair, and glyd_dotTree's adds run on
 * the registers, one pair a lane. */
__attribute__((target("avx2,fma")))
static void close8_avx2(const float (*lanes)[TILE_BLOCK], float out[8])
{
    __m256 s[8], u[8], w[8];
    unsigned i;
    for (i = 0; i < 8; i++) s[i] = _mm256_add_ps(_mm256_load_ps(lanes[i]), _mm256_load_ps(lanes[i] + 8));
    for (i = 0; i < 8; i += 2) {
        u[i] = _mm256_unpacklo_ps(s[i], s[i + 1]);
        u[i + 1] = _mm256_unpackhi_ps(s[i], s[i + 1]);
    }
    for (i = 0; i < 8; i += 4) {
        w[i] = _mm256_shuffle_ps(u[i], u[i + 2], 0x44);
        w[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], 0xEE);
        w[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0x44);
        w[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0xEE);
    }
    /* lane j of pairs 0-3 in w[j % 4] (low half for j < 4), of pairs 4-7 in w[4 + j % 4] */
    for (i = 0; i < 4; i++) {
        s[i] = _mm256_permute2f128_ps(w[i], w[i + 4], 0x20);
        s[i + 4] = _mm256_permute2f128_ps(w[i], w[i + 4], 0x31);
    }
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s[0], s[4]), _mm256_add_ps(s[2], s[6])),
                                        _mm256_add_ps(_mm256_add_ps(s[1], s[5]), _mm256_add_ps(s[3], s[7]))));
}

#  undef PAIR

#endif /* TILE_X86 */

/* Piece [p, p + n) of nbRows (<= TILE_ROWS) rows from `rows` on, times
 * every vector: y[v * yStride + k] gets row k's piece added (the first
 * piece sets it). With `more`, TILE_ROWS more rows follow these. */
static void piece_times_batch(tile* t, int level, const uint16_t* rows, uint64_t cols, unsigned nbRows, int more,
                              uint64_t p, size_t n, const float* xd, size_t nbVec, float* y, uint64_t yStride)
{
    size_t const full = n - n % TILE_BLOCK;
    size_t c, v;
    unsigned k;
    /* a piece too short for a block closes from zero lanes */
    if (full == 0)
        for (k = 0; k < TILE_ROWS; k++) memset(t->acc[k], 0, nbVec * sizeof t->acc[k][0]);
#if TILE_X86
    for (c = 0; c < full; c += TILE_COLS) {
        size_t const len = GLYD_MIN((size_t)TILE_COLS, full - c);
        tile_widen(t, rows + p + c, (size_t)cols, nbRows, len, more);
        if (level == GLYD_SIMD_AVX512) spans_avx512(t, c == 0, xd + p + c, (size_t)cols, nbVec, len / TILE_BLOCK);
        else spans_avx2(t, c == 0, xd + p + c, (size_t)cols, nbVec, len / TILE_BLOCK);
    }
#else
    (void)c;
    (void)level;
    (void)more;
#endif
    for (k = 0; k < nbRows; k++) {
        v = 0;
#if TILE_X86
        /* without a tail, eight pairs at a time */
        for (; full == n && v + 8 <= nbVec; v += 8) {
            float part[8];
            unsigned j;
            close8_avx2(t->acc[k] + v, part);
            for (j = 0; j < 8; j++) {
                float* const out = y + (v + j) * yStride + k;
                *out = (p == 0 ? 0.0f : *out) + part[j];
            }
        }
#endif
        for (; v < nbVec; v++) {
            float* const out = y + v * yStride + k;
            float const part = piece_close(t->acc[k][v], rows + k * cols + p, xd + v * cols + p, full, n);
            *out = (p == 0 ? 0.0f : *out) + part;
        }
    }
}

int glyd_tileTimesBatch(const uint16_t* block, uint64_t nbRows, uint64_t cols, uint32_t chunk, const float* xd,
                        size_t nbVec, float* y, uint64_t yStride)
{
    tile t;
    uint64_t r, p;
    int level;
    if (nbVec < TILE_MIN_VECTORS || nbVec > GLYD_BATCH) return 0;
    level = glyd_tileLevel();
    if (level == GLYD_SIMD_NONE) return 0;
    for (r = 0; r < nbRows; r += TILE_ROWS) {
        unsigned const nr = (unsigned)GLYD_MIN((uint64_t)TILE_ROWS, nbRows - r);
        for (p = 0; p < cols; p += chunk)
            piece_times_batch(&t, level, block + r * cols, cols, nr, r + 2 * TILE_ROWS <= nbRows, p,
                              (size_t)GLYD_MIN((uint64_t)chunk, cols - p), xd, nbVec, y + r, yStride);
    }
    return 1;
}

/*
 * tensor_gpu.c: a checked blob described for the GPU kernels
 * (tensor_kernels.h): where its parts lie, and its decoding table; and the
 * kernels' launches emulated on the CPU, thread by thread in the kernels'
 * order (cuda/decode.cu): what tests check the kernels' logic with, here
 * and on a GPU.
 */
#include <math.h>
#include <stdlib.h>

#include "tensor.h"
#include "tensor_kernels.h"

size_t glyd_tensorDescribe(const glyd_tensorView* v, const void* blob, gk_tensor* t, uint16_t table[1 << 11])
{
    const uint8_t* const base = (const uint8_t*)blob;
    unsigned k;
    memset(t, 0, sizeof(*t));
    RETURN_ERROR_IF(v->dtype != GLYD_DTYPE_BF16, frameParameter_unsupported, "GPU decoding takes bf16");
    RETURN_ERROR_IF(v->layout != GLYD_TLAYOUT_HUFFMAN && v->layout != GLYD_TLAYOUT_FAST,
                    frameParameter_unsupported, "GPU decoding takes the Huffman and fast layouts");
    t->nbElements = v->nbElements;
    t->nbUnits = v->nbUnits;
    t->unitSize = v->unitSize;
    t->layout = v->layout;
    t->split = v->split;
    t->symBase = v->symBase;
    t->planes = (uint64_t)(v->planes[0] - base);
    t->blobSize = v->blobSize;
    if (v->layout == GLYD_TLAYOUT_HUFFMAN) {
        t->maxBits = v->huf.maxBits;
        t->ends = (uint64_t)(v->unitEnds - base);
        t->streams = (uint64_t)(v->streams - base);
        t->streamBytes = v->streamBytes;
        for (k = 0; k < (1u << v->huf.maxBits); k++) table[k] = v->huf.entry[k];
    } else {
        for (k = 0; k < GLYD_TENSOR_FAST_CODES; k++) t->fastSymbols[k] = v->fastSymbols[k];
        t->fastSymbols[7] = 0;
        t->ends = (uint64_t)(v->escapeEnds - base);
        t->codePlanes = (uint64_t)(v->codePlanes - base);
        t->escapes = (uint64_t)(v->escapes - base);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The kernels, emulated                                                    */
/* ------------------------------------------------------------------------ */

#define EMU_BLOCK 128     /* threads of a decoding block (decode.cu: BLOCK) */
#define EMU_WARPS 8       /* warps of a product block (GEMV_WARPS) */

/* fast_decode_kernel: block u; its threads over the unit's groups a block
 * at a time, each group's escapes where the exclusive prefix sum says.
 * Units [u0, u1), element i into out[i - u0 * unitSize]. */
static void emulate_fast(const uint8_t* blob, const gk_tensor* t, uint64_t u0, uint64_t u1, uint16_t* out)
{
    uint64_t const origin = u0 * t->unitSize;
    uint64_t u;
    for (u = u0; u < u1; u++) {
        uint64_t const a = u * t->unitSize;
        uint64_t const b = GLYD_MIN(a + t->unitSize, t->nbElements);
        uint64_t const last = (b - 1) >> 5, nbEsc = gk_unit_start(blob, t, u + 1);
        uint64_t g0, esc = gk_unit_start(blob, t, u);
        for (g0 = a >> 5; g0 <= last; g0 += EMU_BLOCK) {
            uint64_t before[EMU_BLOCK + 1];
            unsigned k;
            before[0] = 0;
            for (k = 0; k < EMU_BLOCK; k++)
                before[k + 1] = before[k] + (g0 + k <= last ? gk_popc(gk_fast_escapes(blob, t, g0 + k, a, b)) : 0);
            for (k = 0; k < EMU_BLOCK && g0 + k <= last; k++)
                gk_fast_group(blob, t, g0 + k, a, b, esc + before[k], nbEsc, out, origin);
            esc += before[EMU_BLOCK];
        }
    }
}

void glyd_tensorEmulateDecode(const void* blob, const gk_tensor* t, const uint16_t* table, uint16_t* out)
{
    uint64_t u;
    if (t->nbElements == 0) return;
    if (t->layout == GK_LAYOUT_FAST) emulate_fast((const uint8_t*)blob, t, 0, t->nbUnits, out);
    else for (u = 0; u < t->nbUnits; u++) gk_huffman_unit((const uint8_t*)blob, t, table, u, out);
}

void glyd_tensorEmulateDecodeUnits(const void* blob, const gk_tensor* t, uint64_t u0, uint64_t u1, uint16_t* out)
{
    if (t->layout == GK_LAYOUT_FAST) emulate_fast((const uint8_t*)blob, t, u0, u1, out);
    else memcpy(out, (const uint8_t*)blob + 2 * u0 * t->unitSize,
                2 * (GLYD_MIN(u1 * t->unitSize, t->nbElements) - u0 * t->unitSize));
}

size_t glyd_tensorHuffmanRuns(const void* blobv, const gk_tensor* t, const uint16_t* table, uint16_t* runs)
{
    const uint8_t* const blob = (const uint8_t*)blobv;
    uint64_t const rpu = gk_huf_runs_per_unit(t);
    uint64_t u;
    RETURN_ERROR_IF(t->layout != GK_LAYOUT_HUFFMAN, parameter_outOfBound, "not the Huffman layout");
    for (u = 0; u < t->nbUnits; u++) {
        uint64_t const a = u * t->unitSize, b = GLYD_MIN(a + t->unitSize, t->nbElements);
        uint64_t const start = 8 * gk_unit_start(blob, t, u);
        uint64_t bit = start, i, k;
        for (k = 0; k < rpu; k++) {
            uint64_t const i0 = GLYD_MIN(a + k * GK_HUF_RUN, b), i1 = GLYD_MIN(i0 + GK_HUF_RUN, b);
            /* 16 bits: a unit of at most 5957 elements always fits (11-bit
             * codes); a longer one only when its codes are short enough */
            RETURN_ERROR_IF(bit - start > 0xFFFF, parameter_outOfBound, "a unit's stream is over 65535 bits");
            if (k) runs[u * (rpu - 1) + k - 1] = (uint16_t)(bit - start);
            for (i = i0; i < i1; i++) {
                unsigned const len = table[gk_peek(blob + t->streams, t->streamBytes, bit) >> (32 - t->maxBits)] >> 8;
                bit += len ? len : 1;
            }
        }
    }
    return 0;
}

static size_t emulate_gemv(const uint8_t* blob, const gk_tensor* t, const uint16_t* table, const uint16_t* runs,
                           uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y)
{
    int const huffman = t->layout == GK_LAYOUT_HUFFMAN;
    uint16_t unit[GK_HUF_UNIT_MAX];
    float* parts = NULL;
    float* sums;
    uint64_t u, it, q, r;
    unsigned v, j;
    RETURN_ERROR_IF(batch < 1 || batch > 8 || rows * cols != t->nbElements || !gk_gemv_fits(t, cols),
                    parameter_outOfBound, "product");
    RETURN_ERROR_IF(huffman && (!table || !runs || t->unitSize > GK_HUF_UNIT_MAX), parameter_outOfBound,
                    "Huffman product");
    sums = (float*)malloc(sizeof(float) * GK_GEMV_MAX_ITEMS * 8);
    if (t->unitSize < cols) parts = (float*)malloc(sizeof(float) * batch * t->nbUnits);
    if (!sums || (t->unitSize < cols && !parts)) {
        free(sums);
        free(parts);
        RETURN_ERROR(memory_allocation, "product");
    }
    for (u = 0; u < t->nbUnits; u++) {
        gk_gemv_unit const g = gk_gemv_plan(t, u, cols, EMU_WARPS);
        uint64_t const nbEsc = huffman ? 0 : gk_escapes_before(blob, t, u + 1);
        /* items in order: each one's escapes start after the previous ones' */
        uint64_t esc = huffman ? 0 : gk_escapes_before(blob, t, u);
        if (huffman) glyd_tensorEmulateDecodeRuns(blob, t, table, runs, u, u + 1, unit); /* as the block does */
        for (it = 0; it < g.nbItems; it++) {
            uint64_t ia, ib, col0;
            float acc[32][8];
            gk_gemv_item(&g, it, &ia, &ib);
            col0 = (ia / cols) * cols;
            memset(acc, 0, sizeof acc);
            for (q = ia >> 5; ia < ib && q <= (ib - 1) >> 5; q++) {
                for (j = 0; j < 32; j++) {
                    uint64_t const i = 32 * q + j;
                    uint32_t const bits = !huffman ? gk_lane(blob, t, q, j, ia, ib, esc, nbEsc)
                                          : i >= ia && i < ib ? (uint32_t)unit[i - g.a] << 16 : 0;
                    float w;
                    memcpy(&w, &bits, 4);
                    if (i >= ia && i < ib)
                        for (v = 0; v < batch; v++) acc[j][v] = fmaf(w, x[v * cols + (i - col0)], acc[j][v]);
                }
                if (!huffman) esc += gk_popc(gk_escapes(blob, t, q, ia, ib));
            }
            for (v = 0; v < batch; v++) {
                float lane[32];
                for (j = 0; j < 32; j++) lane[j] = acc[j][v];
                sums[it * 8 + v] = gk_butterfly_emulated(lane);
            }
        }
        /* each segment adds its chunks in order */
        for (r = 0; r < g.nbSeg; r++)
            for (v = 0; v < batch; v++) {
                float sum = sums[r * g.chunks * 8 + v];
                uint64_t c;
                for (c = 1; c < g.chunks; c++) sum += sums[(r * g.chunks + c) * 8 + v];
                if (g.whole) y[v * rows + g.firstRow + r] = sum;
                else parts[v * t->nbUnits + u] = sum;
            }
    }
    if (parts) {
        /* long rows: parts added in order */
        uint64_t const perRow = cols / t->unitSize;
        for (r = 0; r < rows; r++)
            for (v = 0; v < batch; v++) {
                float sum = 0;
                uint64_t p;
                for (p = 0; p < perRow; p++) sum += parts[v * t->nbUnits + r * perRow + p];
                y[v * rows + r] = sum;
            }
    }
    free(parts);
    free(sums);
    return 0;
}

size_t glyd_tensorEmulateGemv(const void* blob, const gk_tensor* t, uint64_t rows, uint64_t cols, const float* x,
                              unsigned batch, float* y)
{
    RETURN_ERROR_IF(t->layout != GK_LAYOUT_FAST && t->layout != GK_LAYOUT_STORED, parameter_outOfBound, "layout");
    return emulate_gemv((const uint8_t*)blob, t, NULL, NULL, rows, cols, x, batch, y);
}

size_t glyd_tensorEmulateGemvHuffman(const void* blob, const gk_tensor* t, const uint16_t* table, const uint16_t* runs,
                                     uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y)
{
    RETURN_ERROR_IF(t->layout != GK_LAYOUT_HUFFMAN, parameter_outOfBound, "layout");
    return emulate_gemv((const uint8_t*)blob, t, table, runs, rows, cols, x, batch, y);
}

void glyd_tensorEmulateDecodeRuns(const void* blob, const gk_tensor* t, const uint16_t* table, const uint16_t* runs,
                                  uint64_t u0, uint64_t u1, uint16_t* out)
{
    uint64_t u;
    for (u = u0; u < u1; u++) {
        uint64_t const a = u * t->unitSize, b = GLYD_MIN(a + t->unitSize, t->nbElements);
        uint64_t k;
        for (k = 0; k < gk_huf_runs_per_unit(t); k++)
            gk_huf_unit_run((const uint8_t*)blob, t, table, runs, u, k, a, b, out, u0 * t->unitSize);
    }
}

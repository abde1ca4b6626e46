/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_gpu.c: a checked blob described for the GPU kernels
 * (tensor_kernels.h): where its parts lie, and its decoding tables; and the
 * kernels' launches emulated on the CPU, thread by thread in the kernels'
 * order (gpu/decode.cu): what tests check the kernels' logic with, here
 * and on a GPU.
 */
#include <math.h>
#include <stdlib.h>

#include "tensor_gpu.h"

/* The kernels read a blob's layout byte as it is. */
_Static_assert(GK_LAYOUT_STORED == GLYD_TLAYOUT_STORED && GK_LAYOUT_HUFFMAN == GLYD_TLAYOUT_HUFFMAN &&
                   GK_LAYOUT_FAST == GLYD_TLAYOUT_FAST,
               "the kernels' layout numbers are the blob's layout byte");

size_t glyd_tensorDescribe(const glyd_tensorView* v, const void* blob, gk_tensor* t, gk_huf_tables* tables)
{
    const uint8_t* const base = (const uint8_t*)blob;
    uint16_t wide[1 << GK_HUF_MAX_BITS];
    unsigned k;
    memset(t, 0, sizeof(*t));
    RETURN_ERROR_IF(v->dtype != GLYD_DTYPE_BF16, frameParameter_unsupported, "GPU decoding takes bf16");
    RETURN_ERROR_IF(v->layout != GLYD_TLAYOUT_HUFFMAN && v->layout != GLYD_TLAYOUT_FAST,
                    frameParameter_unsupported, "GPU decoding takes the Huffman and fast layouts");
    RETURN_ERROR_IF(v->layout == GLYD_TLAYOUT_FAST && v->fastCodes != GLYD_TENSOR_FAST_CODES,
                    frameParameter_unsupported, "GPU decoding takes the fast layout's 3-bit codes, not 4-bit ones");
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
        memset(tables, 0, sizeof(*tables)); /* all of it is uploaded, whatever maxBits */
        for (k = 0; k < (1u << t->maxBits); k++) tables->one[k] = v->huf.entry[k];
        /* the multi-symbol table by the next GK_HUF_MAX_BITS bits whatever
         * maxBits (shorter codes decode alike from a longer window) */
        for (k = 0; k < (1u << GK_HUF_MAX_BITS); k++) wide[k] = tables->one[k >> (GK_HUF_MAX_BITS - t->maxBits)];
        for (k = 0; k < (1u << GK_HUF_MAX_BITS); k++) tables->multi[k] = gk_huf_multi_entry(wide, GK_HUF_MAX_BITS, k);
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

/* The escape window of a step whose first escape is esc, as the step's
 * threads read it (a word each); returns its first escape. */
static uint64_t emulate_window(const uint8_t* blob, const gk_tensor* t, uint64_t esc, uint32_t* window, unsigned words)
{
    uint64_t const first = gk_window_first(esc);
    unsigned k;
    for (k = 0; k < words; k++) window[k] = gk_window_word(blob, t, first, k);
    return first;
}

/* A whole fast-layout group in the nibble form, as a thread of the kernels
 * rebuilds it (decode.cu: nibble_pairs): its escapes from number esc on,
 * through its step's window. */
static void emulate_nibble_group(const uint8_t* blob, const gk_tensor* t, uint64_t q, uint64_t esc, uint64_t nbEsc,
                                 const uint32_t* window, unsigned words, uint64_t first, uint32_t pairs[16])
{
    const uint8_t* const p = blob + t->codePlanes + 12 * q;
    uint32_t const w0 = gk_read32(p), w1 = gk_read32(p + 4), w2 = gk_read32(p + 8);
    uint32_t sel[4], ex[8], raw[8], slot[GK_PATCH_SLOT_WORDS];
    unsigned k;
    gk_nibble_selectors(w0, w1, w2, sel);
    gk_group_exponents(sel, gk_read32(t->fastSymbols), gk_read32(t->fastSymbols + 4), ex);
    gk_group_patch(blob, t, gk_nibble_escapes(w0, w1, w2), esc, nbEsc, window, words, first, ex, slot);
    for (k = 0; k < 8; k++) raw[k] = gk_read32(blob + t->planes + 32 * q + 4 * k);
    gk_group_pairs(ex, raw, pairs);
}

/* fast_decode_kernel: block u; its threads over the unit's groups a block
 * at a time, each group's escapes where the exclusive prefix sum says;
 * whole groups in the nibble form rebuilt at once through the step's
 * window, the others element by element. Units [u0, u1), element i into
 * out[i - u0 * unitSize]. */
static void emulate_fast(const uint8_t* blob, const gk_tensor* t, uint64_t u0, uint64_t u1, uint16_t* out)
{
    uint64_t const origin = u0 * t->unitSize;
    int const nibbles = t->codeForm == GK_CODES_NIBBLES;
    uint64_t u;
    for (u = u0; u < u1; u++) {
        uint64_t const a = u * t->unitSize;
        uint64_t const b = gk_unit_end(t, u);
        uint64_t const last = (b - 1) >> 5, nbEsc = gk_unit_start(blob, t, u + 1);
        uint64_t g0, esc = gk_unit_start(blob, t, u);
        for (g0 = a >> 5; g0 <= last; g0 += EMU_BLOCK) {
            uint64_t before[EMU_BLOCK + 1];
            uint32_t window[EMU_BLOCK];
            uint64_t const first = nibbles ? emulate_window(blob, t, esc, window, EMU_BLOCK) : 0;
            unsigned k, i;
            before[0] = 0;
            for (k = 0; k < EMU_BLOCK; k++)
                before[k + 1] = before[k] + (g0 + k <= last ? gk_popc(gk_fast_escapes(blob, t, g0 + k, a, b)) : 0);
            for (k = 0; k < EMU_BLOCK && g0 + k <= last; k++) {
                uint64_t const g = g0 + k;
                if (nibbles && 32 * g + 32 <= b) {
                    uint32_t pairs[16];
                    emulate_nibble_group(blob, t, g, esc + before[k], nbEsc, window, EMU_BLOCK, first, pairs);
                    for (i = 0; i < 16; i++) {
                        out[32 * g - origin + 2 * i] = (uint16_t)pairs[i];
                        out[32 * g - origin + 2 * i + 1] = (uint16_t)(pairs[i] >> 16);
                    }
                } else {
                    gk_fast_group(blob, t, g, a, b, esc + before[k], nbEsc, out, origin);
                }
            }
            esc += before[EMU_BLOCK];
        }
    }
}

void glyd_tensorEmulateDecode(const void* blob, const gk_tensor* t, const gk_huf_tables* tables, uint16_t* out)
{
    uint64_t u;
    if (t->nbElements == 0) return;
    if (t->layout == GK_LAYOUT_FAST) emulate_fast((const uint8_t*)blob, t, 0, t->nbUnits, out);
    else for (u = 0; u < t->nbUnits; u++) gk_huffman_unit((const uint8_t*)blob, t, tables->one, u, out);
}

void glyd_tensorEmulateDecodeUnits(const void* blob, const gk_tensor* t, uint64_t u0, uint64_t u1, uint16_t* out)
{
    if (t->layout == GK_LAYOUT_FAST) emulate_fast((const uint8_t*)blob, t, u0, u1, out);
    else memcpy(out, (const uint8_t*)blob + 2 * u0 * t->unitSize,
                2 * (gk_unit_end(t, u1 - 1) - u0 * t->unitSize));
}

size_t glyd_tensorHuffmanRuns(const void* blobv, const gk_tensor* t, const gk_huf_tables* tables, uint16_t* runs)
{
    const uint8_t* const blob = (const uint8_t*)blobv;
    uint64_t const rpu = gk_huf_runs_per_unit(t);
    uint64_t u;
    RETURN_ERROR_IF(t->layout != GK_LAYOUT_HUFFMAN, parameter_outOfBound, "not the Huffman layout");
    for (u = 0; u < t->nbUnits; u++) {
        uint64_t const a = u * t->unitSize, b = gk_unit_end(t, u);
        uint64_t const start = 8 * gk_unit_start(blob, t, u);
        uint64_t bit = start, k;
        for (k = 0; k < rpu; k++) {
            uint64_t const i0 = GLYD_MIN(a + k * GK_HUF_RUN, b), i1 = GLYD_MIN(i0 + GK_HUF_RUN, b);
            /* 16 bits: a unit of at most 5957 elements always fits (11-bit
             * codes); a longer one only when its codes are short enough */
            RETURN_ERROR_IF(bit - start > 0xFFFF, parameter_outOfBound, "a unit's stream is over 65535 bits");
            if (k) runs[u * (rpu - 1) + k - 1] = (uint16_t)(bit - start);
            /* the run's symbols walked as the kernels decode them, none kept */
            bit = gk_huffman_run(blob, t, tables->one, bit, i0, i1, 0, 0, NULL, 0);
        }
    }
    return 0;
}

size_t glyd_tensorNibbleForm(void* blob, gk_tensor* t)
{
    uint8_t* const b = (uint8_t*)blob;
    uint64_t u, g;
    RETURN_ERROR_IF(t->layout != GK_LAYOUT_FAST || t->codeForm != GK_CODES_PLANES || t->unitSize % 32,
                    parameter_outOfBound, "the nibble form takes fast-layout codes in units of whole groups");
    for (u = 0; u < t->nbUnits; u++) {
        /* as the kernel's block for unit u does: each group's escapes after
         * those of the groups before it */
        uint64_t const a = u * t->unitSize, e = gk_unit_end(t, u);
        uint64_t const nbEsc = gk_unit_start(b, t, u + 1);
        uint64_t esc = gk_unit_start(b, t, u);
        for (g = a / 32; g < (e + 31) / 32; g++) {
            uint64_t const n = gk_popc(gk_fast_escapes(b, t, g, 0, t->nbElements));
            gk_nibble_group(b, t, g, esc, nbEsc);
            esc += n;
        }
    }
    t->codeForm = GK_CODES_NIBBLES;
    return 0;
}

/* Long rows: each row's parts added in order (parts[v][unit]). */
static void sum_parts(const float* parts, uint64_t nbUnits, uint64_t rows, uint64_t perRow, unsigned batch, float* y)
{
    uint64_t r, p;
    unsigned v;
    for (r = 0; r < rows; r++)
        for (v = 0; v < batch; v++) {
            float sum = 0;
            for (p = 0; p < perRow; p++) sum += parts[v * nbUnits + r * perRow + p];
            y[v * rows + r] = sum;
        }
}

/* A group's 32 weights in pairs, as a thread of the rows kernel rebuilds
 * them: fast (its escapes from number esc on, through the warp's window),
 * plain, or Huffman (from the unit's symbols, decoded whole, unit[] from
 * its first element, and the group's planes). */
static void emulate_group(const uint8_t* blob, const gk_tensor* t, const uint8_t* unit, uint64_t unitStart,
                          uint64_t q, uint64_t esc, uint64_t nbEsc, const uint32_t window[32], uint64_t first,
                          uint32_t pairs[16])
{
    unsigned k;
    if (t->layout == GK_LAYOUT_FAST) {
        emulate_nibble_group(blob, t, q, esc, nbEsc, window, 32, first, pairs);
    } else if (t->layout == GK_LAYOUT_STORED) {
        for (k = 0; k < 16; k++) pairs[k] = gk_read32(blob + 64 * q + 4 * k);
    } else {
        uint32_t sym[8];
        for (k = 0; k < 8; k++) sym[k] = gk_read32(unit + gk_huf_slot_offset(32 * q - unitStart) + 4 * k);
        gk_huffman_pairs(blob, t, q, sym, pairs);
    }
}

/* The rows kernel (gk_rows_fits): a warp per unit, row by row; lane k takes
 * groups k, k + 32, ... of the row; escapes numbered in lane order. */
static size_t emulate_rows(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                           uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y)
{
    int const huffman = t->layout == GK_LAYOUT_HUFFMAN;
    uint64_t const span = gk_rows_span(t, cols), perRow = cols / span, groups = span / 32;
    uint8_t* const unit = huffman ? (uint8_t*)malloc(gk_huf_unit_bytes(t)) : NULL;
    float* const parts = perRow > 1 ? (float*)malloc(sizeof(float) * batch * t->nbUnits) : NULL;
    uint64_t u, r, i, k;
    unsigned v, lane;
    if ((huffman && !unit) || (perRow > 1 && !parts)) {
        free(unit);
        free(parts);
        RETURN_ERROR(memory_allocation, "product");
    }
    for (u = 0; u < t->nbUnits; u++) {
        uint64_t const unitStart = u * t->unitSize, nbRows = gk_rows_in_unit(t, cols, u);
        uint64_t const nbEsc = gk_escapes_before(blob, t, u + 1), xcol = (u % perRow) * span;
        uint64_t esc = gk_escapes_before(blob, t, u);
        /* the warp's lanes decode the unit's runs to symbols (the kernel
         * decodes several small units at once: the same symbols) */
        for (k = 0; huffman && k < gk_huf_runs_per_unit(t); k++)
            gk_huf_unit_symbols(blob, t, tables->multi, gk_huf_run_bit(blob, t, runs, u, k), u, k, unit);
        for (r = 0; r < nbRows; r++) {
            uint64_t const q0 = (unitStart + r * span) / 32;
            float acc[32][GK_ROWS_MAX_BATCH][4];
            memset(acc, 0, sizeof acc);
            for (i = 0; i < groups; i += 32) {
                /* the warp's escape window for the step, a word a lane */
                uint32_t window[32];
                uint64_t const first = t->layout == GK_LAYOUT_FAST ? emulate_window(blob, t, esc, window, 32) : 0;
                for (lane = 0; lane < 32 && i + lane < groups; lane++) {
                    uint64_t const q = q0 + i + lane;
                    uint32_t pairs[16];
                    emulate_group(blob, t, unit, unitStart, q, esc, nbEsc, window, first, pairs);
                    if (t->layout == GK_LAYOUT_FAST) esc += gk_popc(gk_fast_escapes(blob, t, q, 0, t->nbElements));
                    for (v = 0; v < batch; v++)
                        gk_group_fma(pairs, x + v * cols + xcol + 32 * (i + lane), acc[lane][v]);
                }
            }
            for (v = 0; v < batch; v++) {
                float lanes[32], sum;
                for (lane = 0; lane < 32; lane++)
                    lanes[lane] = (acc[lane][v][0] + acc[lane][v][1]) + (acc[lane][v][2] + acc[lane][v][3]);
                sum = gk_butterfly_emulated(lanes);
                if (perRow > 1) parts[v * t->nbUnits + u] = sum;
                else y[v * rows + u * (t->unitSize / cols) + r] = sum;
            }
        }
    }
    if (parts) sum_parts(parts, t->nbUnits, rows, perRow, batch, y);
    free(unit);
    free(parts);
    return 0;
}

static size_t emulate_gemv(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                           uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y)
{
    int const huffman = t->layout == GK_LAYOUT_HUFFMAN;
    uint16_t unit[GK_HUF_UNIT_MAX];
    float* parts = NULL;
    float* sums;
    uint64_t u, it, q, r, run;
    unsigned v, j;
    RETURN_ERROR_IF(batch < 1 || batch > 8 || rows * cols != t->nbElements || !gk_gemv_fits(t, cols),
                    parameter_outOfBound, "product");
    /* the kernels' own condition (glyd_cudaLaunchGemv) */
    RETURN_ERROR_IF(huffman && (!tables || !gk_huf_products_fit(t, runs != NULL)), parameter_outOfBound,
                    "Huffman product");
    if (gk_rows_fits(t, cols)) return emulate_rows(blob, t, tables, runs, rows, cols, x, batch, y);
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
        /* as the block does: a run a thread, element by element */
        for (run = 0; huffman && run < gk_huf_runs_per_unit(t); run++)
            gk_huf_unit_run(blob, t, tables->one, runs, u, run, u * t->unitSize, gk_unit_end(t, u), unit,
                            u * t->unitSize);
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
    if (parts) sum_parts(parts, t->nbUnits, rows, cols / t->unitSize, batch, y);
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

size_t glyd_tensorEmulateGemvHuffman(const void* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                     const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x, unsigned batch,
                                     float* y)
{
    RETURN_ERROR_IF(t->layout != GK_LAYOUT_HUFFMAN, parameter_outOfBound, "layout");
    return emulate_gemv((const uint8_t*)blob, t, tables, runs, rows, cols, x, batch, y);
}

void glyd_tensorEmulateDecodeRuns(const void* blobv, const gk_tensor* t, const gk_huf_tables* tables,
                                  const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* out)
{
    const uint8_t* const blob = (const uint8_t*)blobv;
    uint64_t const origin = u0 * t->unitSize;
    union { /* aligned as the kernels' slots */
        uint8_t b[GK_HUF_RUN + GK_HUF_SYMBOLS_SLACK];
        uint32_t words[(GK_HUF_RUN + GK_HUF_SYMBOLS_SLACK + 3) / 4];
    } syms;
    uint64_t u, k, i, a, b;
    unsigned j;
    if (!gk_huf_by_groups(t)) {
        /* huffman_runs_kernel: element by element, a thread per run */
        for (u = u0; u < u1; u++)
            for (k = 0; k < gk_huf_runs_per_unit(t); k++)
                gk_huf_unit_run(blob, t, tables->one, runs, u, k, u * t->unitSize, gk_unit_end(t, u), out, origin);
        return;
    }
    /* huffman_groups_kernel: each run to symbols, then its groups built
     * from symbols and planes */
    for (u = u0; u < u1; u++)
        for (k = 0; k < gk_huf_runs_per_unit(t); k++) {
            uint64_t const bit = gk_huf_run_at(blob, t, runs, u, k, &a, &b);
            gk_huffman_symbols(blob, t, tables->multi, bit, a, b, syms.b, a);
            for (i = a; i < b; i += 32) {
                uint32_t sym[8], pairs[16];
                for (j = 0; j < 8; j++) sym[j] = gk_read32(syms.b + (i - a) + 4 * j);
                gk_huffman_pairs(blob, t, i / 32, sym, pairs);
                for (j = 0; j < 16; j++) {
                    out[i - origin + 2 * j] = (uint16_t)pairs[j];
                    out[i - origin + 2 * j + 1] = (uint16_t)(pairs[j] >> 16);
                }
            }
        }
}

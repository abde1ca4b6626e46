/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_tensor.c: hostile tensor blobs through every decoding path (whole
 * tensor, one and several threads; units alone, on each SIMD path; the GPU
 * kernels' threads, emulated; the engine's products of one vector, which
 * decode in registers), and hostile safetensors headers through the strict
 * parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../llm/infer/infer.h"
#include "../../llm/model/model.h"
#include "../../lib/tensor/tensor.h"
#include "../../gpu/tensor_gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* A bf16 matrix's rows times one vector, on each SIMD path: never a crash,
 * and where the whole tensor decodes (checksum included), no error and the
 * same bits as the product of the decoded rows. */
static void products(const uint8_t* data, size_t size, const glyd_tensorView* v)
{
    static uint16_t plain[1 << 19];
    static float x[1 << 16], want[1 << 16], got[1 << 16];
    uint64_t const cols = v->rowLength, rows = cols ? v->nbElements / cols : 0;
    glyd_matrix coded, decoded;
    glyd_decodeScratch s;
    int const intact = !glyd_isError(glyd_tensorDecompress(plain, sizeof plain, data, size, 1));
    uint64_t i;
    int simd;
    if (v->dtype != GLYD_DTYPE_BF16 || !rows || v->nbElements % cols || rows > (1u << 16) ||
        v->nbElements > (1u << 19))
        return;
    for (i = 0; i < cols; i++) x[i] = (float)(i % 7) - 3.0f;
    if (glyd_isError(glyd_matrixCoded(&coded, data, size, rows, cols))) return;
    memset(&s, 0, sizeof s);
    if (!glyd_isError(glyd_scratchReserve(&s, &coded))) {
        glyd_matrixPlain(&decoded, plain, rows, cols);
        decoded.chunk = coded.chunk; /* the pieces the coded rows are summed in */
        if (intact && glyd_isError(glyd_matmulRows(&decoded, x, 1, want, 0, rows, &s))) abort();
        for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
            size_t r;
            glyd_tensorSimdLimit(simd);
            r = glyd_matmulRows(&coded, x, 1, got, 0, rows, &s);
            if (intact && (glyd_isError(r) || memcmp(got, want, (size_t)rows * sizeof(float)))) abort();
        }
        glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    }
    glyd_scratchFree(&s);
    glyd_matrixFree(&coded);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static uint8_t out[1 << 20];
    glyd_tensorView v;
    glyd_tensorInfo info;
    glyd_safetensors st;
    const char* why;
    size_t r = glyd_tensorDecompress(out, sizeof out, data, size, 1);
    if (!glyd_isError(r) && r > sizeof out) abort();
    r = glyd_tensorDecompress(out, sizeof out, data, size, 2);
    if (!glyd_isError(r) && r > sizeof out) abort();
    (void)glyd_getTensorInfo(&info, data, size);
    if (!glyd_isError(glyd_tensorOpen(&v, data, size)) && v.layout != GLYD_TLAYOUT_STORED && v.nbUnits &&
        v.unitSize <= 65536) {
        /* the last unit alone, as an engine would decode a row, through
         * each decoder path (portable, AVX2, the best the CPU has) */
        glyd_tensorDTable* const t = (glyd_tensorDTable*)malloc(sizeof(glyd_tensorDTable));
        uint8_t* const scratch = (uint8_t*)malloc(glyd_tensorScratchSize(&v));
        uint8_t* const elems = (uint8_t*)malloc((size_t)v.unitSize * v.shape.elemSize);
        int simd;
        if (v.layout == GLYD_TLAYOUT_HUFFMAN) glyd_tensorBuildDTable(t, &v.huf);
        for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
            glyd_tensorSimdLimit(simd);
            r = glyd_tensorDecodeUnits(&v, t, v.nbUnits - 1, 1, elems, scratch);
            if (!glyd_isError(r) && r > (size_t)v.unitSize * v.shape.elemSize) abort();
        }
        free(t);
        free(scratch);
        free(elems);
    }
    if (!glyd_isError(glyd_tensorOpen(&v, data, size)) && v.nbElements <= (1u << 19)) {
        /* the GPU kernels' threads, emulated: whatever the contents of a
         * blob the host accepted, they read only inside it */
        static uint16_t elems[1 << 19];
        static gk_huf_tables tables;
        gk_tensor t;
        if (!glyd_isError(glyd_tensorDescribe(&v, data, &t, &tables))) {
            glyd_tensorEmulateDecode(data, &t, &tables, elems);
            if (t.layout == GK_LAYOUT_FAST && v.rowLength && v.nbElements % v.rowLength == 0 &&
                v.rowLength <= (1u << 16)) {
                static float x[1 << 16], y[1 << 19];
                (void)glyd_tensorEmulateGemv(data, &t, v.nbElements / v.rowLength, v.rowLength, x, 1, y);
            }
            if (t.layout == GK_LAYOUT_FAST && t.unitSize % 32 == 0) {
                /* the codes rewritten as nibbles, as the GPU backend uploads
                 * them; then decoded, and multiplied by the rows kernel */
                uint8_t* const copy = (uint8_t*)malloc(size);
                if (copy) {
                    memcpy(copy, data, size);
                    if (!glyd_isError(glyd_tensorNibbleForm(copy, &t))) {
                        glyd_tensorEmulateDecode(copy, &t, &tables, elems);
                        if (v.rowLength && v.nbElements % v.rowLength == 0 && v.rowLength <= (1u << 16)) {
                            static float x[1 << 16], y[1 << 19];
                            (void)glyd_tensorEmulateGemv(copy, &t, v.nbElements / v.rowLength, v.rowLength, x, 1, y);
                        }
                    }
                    free(copy);
                }
            }
            if (t.layout == GK_LAYOUT_HUFFMAN && t.unitSize <= GK_HUF_UNIT_MAX) {
                /* the products' run index, and the runs decoded from it */
                uint16_t* const runs = (uint16_t*)malloc(sizeof(uint16_t) * gk_huf_index_size(&t) + 1);
                if (runs && !glyd_isError(glyd_tensorHuffmanRuns(data, &t, &tables, runs))) {
                    glyd_tensorEmulateDecodeRuns(data, &t, &tables, runs, 0, t.nbUnits, elems);
                    if (v.rowLength && v.nbElements % v.rowLength == 0 && v.rowLength <= (1u << 16)) {
                        static float x[1 << 16], y[1 << 19];
                        (void)glyd_tensorEmulateGemvHuffman(data, &t, &tables, runs, v.nbElements / v.rowLength,
                                                            v.rowLength, x, 1, y);
                    }
                }
                free(runs);
            }
        }
    }
    if (!glyd_isError(glyd_tensorOpen(&v, data, size))) products(data, size, &v);
    if (!glyd_isError(glyd_stParse(&st, data, size, &why))) glyd_stFree(&st);
    return 0;
}

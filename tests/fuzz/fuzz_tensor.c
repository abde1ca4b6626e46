/* fuzz_tensor.c: hostile tensor blobs through every decoding path (whole
 * tensor, one and several threads; units alone), and hostile safetensors
 * headers through the strict parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/model/model.h"
#include "../../lib/tensor/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

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
    if (!glyd_isError(glyd_stParse(&st, data, size, &why))) glyd_stFree(&st);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_stream.c: streaming compression and decompression with buffer sizes
 * and flushes drawn from the input must give back the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glyd.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    glyd_CCtx* c;
    glyd_DCtx* d;
    uint8_t *frame, *back;
    size_t cap, inPos = 0, outPos = 0, got = 0, rem = 1;
    size_t inStep, outStep, flushEvery;
    unsigned calls = 0;
    if (size < 4) return 0;
    inStep = (size_t)data[0] * 7 + 1;
    outStep = (size_t)data[1] * 3 + 1;
    flushEvery = data[2] % 8;
    c = glyd_createCCtx();
    d = glyd_createDCtx();
    glyd_CCtx_setParameter(c, glyd_c_compressionLevel, (int)(data[3] % 12) - 2 == 0 ? 1 : (int)(data[3] % 12) - 2);
    if (data[3] & 0x80) {
        glyd_CCtx_setParameter(c, glyd_c_nbWorkers, 2);
        glyd_CCtx_setParameter(c, glyd_c_segmentLog, 16);
    }
    data += 4;
    size -= 4;
    /* each call may flush, ending a block (a 4-byte header) and, with
     * workers, a segment (an 8-byte seek table entry) */
    cap = glyd_compressBound(size) + (size / inStep + 2) * 16 + 1024;
    frame = (uint8_t*)malloc(cap);
    back = (uint8_t*)malloc(size + 1);
    while (inPos < size || rem != 0) {
        size_t const inLen = size - inPos < inStep ? size - inPos : inStep;
        glyd_inBuffer ib = { data + inPos, inLen, 0 };
        glyd_outBuffer ob = { frame + outPos, cap - outPos < outStep ? cap - outPos : outStep, 0 };
        glyd_EndDirective op = inPos + inLen == size ? glyd_e_end
                             : (flushEvery && ++calls % flushEvery == 0) ? glyd_e_flush : glyd_e_continue;
        rem = glyd_compressStream(c, &ob, &ib, op);
        if (glyd_isError(rem)) abort();
        inPos += ib.pos;
        outPos += ob.pos;
        if (op == glyd_e_continue) rem = 1;
        if (outPos == cap) abort();
    }
    {
        glyd_inBuffer ib = { frame, 0, 0 };
        size_t ret = 1;
        while (ib.pos < outPos || ret != 0) {
            glyd_outBuffer ob = { back + got, size + 1 - got < outStep ? size + 1 - got : outStep, 0 };
            ib.size = ib.pos + (outPos - ib.pos < inStep ? outPos - ib.pos : inStep);
            ret = glyd_decompressStream(d, &ob, &ib);
            if (glyd_isError(ret)) abort();
            got += ob.pos;
            if (got > size) abort();
            if (ib.pos == outPos && ob.pos < ob.size && ret != 0) abort(); /* frame incomplete */
        }
    }
    if (got != size || memcmp(back, data, size) != 0) abort();
    free(frame);
    free(back);
    glyd_freeCCtx(c);
    glyd_freeDCtx(d);
    return 0;
}

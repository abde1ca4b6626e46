/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_decompress.c: hostile bytes through every decoding entry point:
 * one-shot (one thread and several), streaming with tiny buffers, frame
 * queries and random access. Nothing may crash or touch memory it does not
 * own; results must stay inside the buffers given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glyd.h"

#define OUT_CAP (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static uint8_t out[OUT_CAP];
    glyd_DCtx* const d = glyd_createDCtx();
    glyd_frameInfo fi;
    size_t r;
    if (!d) return 0;

    r = glyd_decompressDCtx(d, out, OUT_CAP, data, size);
    if (!glyd_isError(r) && r > OUT_CAP) abort();

    glyd_DCtx_setParameter(d, glyd_d_nbWorkers, 2);
    r = glyd_decompressDCtx(d, out, OUT_CAP, data, size);
    if (!glyd_isError(r) && r > OUT_CAP) abort();

    {   /* streaming, with small pieces of input and output */
        glyd_inBuffer in = { data, size, 0 };
        size_t produced = 0;
        int steps = 0;
        glyd_DCtx_reset(d, glyd_reset_session_only);
        glyd_DCtx_setParameter(d, glyd_d_windowLogMax, 24);
        while (produced < OUT_CAP && steps++ < 100000) {
            glyd_inBuffer piece = { data + in.pos, (size - in.pos) < 61 ? size - in.pos : 61, 0 };
            glyd_outBuffer ob = { out + produced, (OUT_CAP - produced) < 97 ? OUT_CAP - produced : 97, 0 };
            r = glyd_decompressStream(d, &ob, &piece);
            if (ob.pos > ob.size || piece.pos > piece.size) abort();
            in.pos += piece.pos;
            produced += ob.pos;
            if (glyd_isError(r)) break;
            if (in.pos == size && ob.pos < ob.size) break;
        }
    }

    {   /* with a raw-content dictionary: matches may reach into it */
        static const char dict[] = "The quick brown fox jumps over the lazy dog; 0123456789 "
                                   "{\"question\": \"How many\", \"answer\": \"#### 42\"}\n";
        glyd_DCtx_reset(d, glyd_reset_session_only);
        if (glyd_isError(glyd_DCtx_loadDictionary(d, dict, sizeof(dict) - 1))) abort();
        r = glyd_decompressDCtx(d, out, OUT_CAP, data, size);
        if (!glyd_isError(r) && r > OUT_CAP) abort();
        glyd_DCtx_loadDictionary(d, NULL, 0);
    }

    if (size > 1) {
        /* the input as a dictionary's tables and content: hostile tables
         * must be refused when loaded, never trusted */
        static uint8_t dictBuf[12 + 4096];
        size_t const n = size - 1 < 4096 ? size - 1 : 4096;
        uint32_t const tablesSize = (uint32_t)(data[0] * 4u) % (uint32_t)(n + 1);
        memcpy(dictBuf, "\xF7GLD", 4);
        memcpy(dictBuf + 4, "\x39\x30\x00\x00", 4);
        memcpy(dictBuf + 8, &tablesSize, 4);
        memcpy(dictBuf + 12, data + 1, n);
        glyd_DCtx_reset(d, glyd_reset_session_only);
        if (!glyd_isError(glyd_DCtx_loadDictionary(d, dictBuf, 12 + n))) {
            r = glyd_decompressDCtx(d, out, OUT_CAP, data, size);
            if (!glyd_isError(r) && r > OUT_CAP) abort();
        }
        glyd_DCtx_loadDictionary(d, NULL, 0);
    }

    if (!glyd_isError(glyd_getFrameInfo(&fi, data, size)) && fi.compressedSize > size) abort();
    (void)glyd_findDecompressedSize(data, size);
    (void)glyd_getFrameContentSize(data, size);
    if (size > 2) {
        unsigned long long const offset = (unsigned long long)data[0] * 977 + data[1];
        r = glyd_decompressRange(d, out, 4096, data, size, offset);
        if (!glyd_isError(r) && r > 4096) abort();
    }
    glyd_freeDCtx(d);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_roundtrip.c: any input, compressed with parameters drawn from its
 * first bytes (records frames among them), must decompress to itself,
 * one-shot and with threads. */
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
    size_t cap, csize, r;
    int level, records;
    if (size < 3) return 0;
    /* byte 0: level and long matching, byte 1: options, the rest: content */
    level = (int)(data[0] % 28) - 5; /* -5 .. 22 */
    if (level == 0) level = 1;
    c = glyd_createCCtx();
    d = glyd_createDCtx();
    if (!c || !d) abort();
    /* the strongest levels (block splitting) on small inputs only, for speed */
    glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level > 12 && size > 4096 ? 12 : level);
    glyd_CCtx_setParameter(c, glyd_c_checksumFlag, data[1] & 1);
    if (data[1] & 2) glyd_CCtx_setParameter(c, glyd_c_segmentLog, 16);
    if (data[1] & 4) glyd_CCtx_setParameter(c, glyd_c_windowLog, 10 + (data[1] >> 5));
    if (data[1] & 8) glyd_CCtx_setParameter(c, glyd_c_nbWorkers, 2);
    if (data[1] & 16) glyd_CCtx_setParameter(c, glyd_c_blockLog, 12);
    if ((data[0] / 28) & 1) glyd_CCtx_setParameter(c, glyd_c_longMatching, 1);
    /* records frames: row groups of text or log columns (no dictionary) */
    records = ((data[0] / 28) & 2) != 0;
    if (records) glyd_CCtx_setParameter(c, glyd_c_records, 1);
    data += 2;
    size -= 2;
    if ((data[-1] & 32) && !records) {
        /* the input's first quarter as a raw-content dictionary for the rest */
        size_t const dsize = size / 4;
        size_t const rc = glyd_CCtx_loadDictionary(c, data, dsize);
        size_t const rd = glyd_DCtx_loadDictionary(d, data, dsize);
        /* (bytes that look like a dictionary header with ID 0 are refused by both) */
        if (glyd_isError(rc) != glyd_isError(rd)) abort();
        if (!glyd_isError(rc)) {
            data += dsize;
            size -= dsize;
        }
    }
    cap = glyd_compressBound(size);
    frame = (uint8_t*)malloc(cap);
    back = (uint8_t*)malloc(size + 1);
    csize = glyd_compress2(c, frame, cap, data, size);
    if (glyd_isError(csize)) abort();
    r = glyd_decompressDCtx(d, back, size, frame, csize);
    if (glyd_isError(r) || r != size || memcmp(back, data, size) != 0) abort();
    glyd_DCtx_setParameter(d, glyd_d_nbWorkers, 2);
    r = glyd_decompressDCtx(d, back, size, frame, csize);
    if (glyd_isError(r) || r != size || memcmp(back, data, size) != 0) abort();
    free(frame);
    free(back);
    glyd_freeCCtx(c);
    glyd_freeDCtx(d);
    return 0;
}

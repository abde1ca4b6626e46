/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_pack.c: hostile packed models: the index checks, then every file
 * extracted through the checksums. Input: a u32 index length, the body,
 * then the index; the harness adds the header and a valid trailer so that
 * the fuzzer reaches the index parser and the blobs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../llm/model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static size_t count_bytes(void* opaque, const void* p, size_t n)
{
    (void)p;
    *(size_t*)opaque += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    size_t idxLen, body, total, err, i;
    uint8_t* buf;
    glyd_model* m;
    if (size < 4) return 0;
    idxLen = glyd_read32(data);
    data += 4;
    size -= 4;
    if (idxLen > size) idxLen = size;
    body = size - idxLen;
    total = GLYD_PACK_HEADER + size + GLYD_PACK_TRAILER;
    buf = (uint8_t*)calloc(1, total);
    memcpy(buf, GLYD_PACK_MAGIC, 8);
    glyd_write32(buf + 8, GLYD_PACK_VERSION);
    memcpy(buf + GLYD_PACK_HEADER, data, size);
    glyd_write64(buf + total - GLYD_PACK_TRAILER, GLYD_PACK_HEADER + body);
    glyd_write64(buf + total - GLYD_PACK_TRAILER + 8, idxLen);
    glyd_write64(buf + total - GLYD_PACK_TRAILER + 16, XXH3_64bits(buf + GLYD_PACK_HEADER + body, idxLen));
    memcpy(buf + total - 8, GLYD_PACK_MAGIC, 8);
    m = glyd_modelOpenBytes(buf, total, NULL, &err);
    if (m) {
        for (i = 0; i < glyd_modelNbFiles(m); i++) {
            glyd_modelFileInfo fi;
            size_t written = 0, t;
            glyd_modelGetFile(m, i, &fi);
            if (fi.size > (64u << 20)) continue;
            (void)glyd_modelExtractFile(m, i, count_bytes, &written, 1);
            if (written > fi.size) abort();
            for (t = 0; t < fi.nbTensors; t++) {
                glyd_modelTensorInfo ti;
                glyd_modelGetTensor(m, i, t, &ti);
            }
        }
        glyd_modelClose(m);
    }
    free(buf);
    return 0;
}

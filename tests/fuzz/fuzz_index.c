/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_index.c: hostile indexes of a packed model whose other parts are
 * sound. The input is the index's JSON; the harness puts it after the
 * header and blobs of a real packed model (GLYD_FUZZ_PACKED, by default
 * the stories260K fixture packed by `make fuzz`) and closes the file with
 * a trailer of the right length and XXH3, so that every input reaches the
 * index checks. An index that passes them has every tensor read and every
 * file extracted: errors are fine, crashes, leaks and reads out of bounds
 * are not. Seeds: that model's own index. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llm/model/model.h"

#ifndef GLYD_FUZZ_PACKED
#define GLYD_FUZZ_PACKED "build/fuzz/index-body.glyd"
#endif

/* Larger files and tensors are skipped: decoding them only costs time. */
#define MAX_DECODED (4u << 20)

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static uint8_t* g_body;  /* the header and blobs: bytes [0, index offset) */
static size_t g_bodySize;

int LLVMFuzzerInitialize(int* argc, char*** argv)
{
    const char* const path = getenv("GLYD_FUZZ_PACKED") ? getenv("GLYD_FUZZ_PACKED") : GLYD_FUZZ_PACKED;
    FILE* const f = fopen(path, "rb");
    long size;
    (void)argc;
    (void)argv;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < GLYD_PACK_HEADER + GLYD_PACK_TRAILER) {
        fprintf(stderr, "fuzz_index: cannot read the packed model %s (set GLYD_FUZZ_PACKED)\n", path);
        exit(1);
    }
    g_body = (uint8_t*)malloc((size_t)size);
    rewind(f);
    if (!g_body || fread(g_body, 1, (size_t)size, f) != (size_t)size) exit(1);
    fclose(f);
    g_bodySize = (size_t)glyd_read64(g_body + size - GLYD_PACK_TRAILER);
    if (g_bodySize < GLYD_PACK_HEADER || g_bodySize > (size_t)size - GLYD_PACK_TRAILER) {
        fprintf(stderr, "fuzz_index: %s is not a packed model\n", path);
        exit(1);
    }
    return 0;
}

static size_t count_bytes(void* opaque, const void* p, size_t n)
{
    (void)p;
    *(size_t*)opaque += n;
    return 0;
}

static void read_everything(const glyd_model* m)
{
    size_t i, t;
    for (i = 0; i < glyd_modelNbFiles(m); i++) {
        glyd_modelFileInfo fi;
        size_t written = 0, r;
        if (glyd_isError(glyd_modelGetFile(m, i, &fi))) abort();
        for (t = 0; t < fi.nbTensors; t++) {
            glyd_modelTensorInfo ti;
            void* dst;
            if (glyd_isError(glyd_modelGetTensor(m, i, t, &ti))) abort();
            if (ti.size > fi.size) abort(); /* the tensors tile the file */
            if (ti.size > MAX_DECODED || !(dst = malloc(ti.size ? ti.size : 1))) continue;
            r = glyd_modelReadTensor(m, i, t, dst, ti.size, 1);
            if (!glyd_isError(r) && r != ti.size) abort();
            free(dst);
        }
        if (fi.size > MAX_DECODED) continue;
        r = glyd_modelExtractFile(m, i, count_bytes, &written, 1);
        if (written > fi.size || (!glyd_isError(r) && (r != fi.size || written != fi.size))) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    size_t const total = g_bodySize + size + GLYD_PACK_TRAILER;
    uint8_t* const buf = (uint8_t*)malloc(total);
    uint8_t* const trailer = buf + g_bodySize + size;
    char message[512] = "";
    glyd_packParams p;
    glyd_model* m;
    size_t err;
    if (!buf) return 0;
    memcpy(buf, g_body, g_bodySize);
    if (size) memcpy(buf + g_bodySize, data, size);
    glyd_write64(trailer, g_bodySize);
    glyd_write64(trailer + 8, size);
    glyd_write64(trailer + 16, XXH3_64bits(data, size));
    memcpy(trailer + 24, GLYD_PACK_MAGIC, 8);
    memset(&p, 0, sizeof p);
    p.message = message;
    p.messageCapacity = sizeof message;
    m = glyd_modelOpenBytes(buf, total, &p, &err);
    if (m) {
        read_everything(m);
        glyd_modelClose(m);
    } else if (strncmp(message, "packed model index: ", 20) != 0 || strchr(message, '\n')) {
        /* the checksum gate is passed: every refusal is the index's, one line */
        abort();
    }
    free(buf);
    return 0;
}

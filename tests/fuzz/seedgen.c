/* SPDX-License-Identifier: BSD-3-Clause */
/* seedgen.c: seed inputs for fuzz_tensor and fuzz_cuda (blobs of every layout and dtype,
 * the fast layout's 4-bit codes too), fuzz_pack (a small packed model, in
 * the harness's input form) and fuzz_records (the head of each log file,
 * as text and as its columns).
 *   seedgen TENSOR_DIR PACK_DIR [RECORDS_DIR LOG_FILE...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../llm/model/model.h"
#include "../../lib/records/records.h"
#include "../../lib/tensor/tensor.h"

static void put(const char* dir, const char* name, const void* data, size_t n)
{
    char path[4096];
    FILE* f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) { perror(path); exit(1); }
    fclose(f);
}

int main(int argc, char** argv)
{
    uint16_t w[3072];
    uint8_t blob[16384];
    unsigned i, d, l;
    uint64_t s = 12345;
    if (argc < 3) return 1;
    for (i = 0; i < 3072; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        w[i] = (uint16_t)(((s & 1) << 15) | ((118 + s % 9) << 7) | ((s >> 20) & 0x7F));
    }
    for (d = 1; d <= 5; d++) {
        for (l = 0; l < 3; l++) {
            char name[64];
            size_t const n = d == 3 ? 1500 : d >= 4 ? 6000 : 3000;
            size_t const c = glyd_tensorCompress(blob, sizeof blob, w, n, (glyd_dtype)d, 100, (glyd_tensorLayout)l, 1);
            if (glyd_isError(c)) { fprintf(stderr, "seedgen: %s\n", glyd_getErrorName(c)); return 1; }
            snprintf(name, sizeof name, "tensor-d%u-l%u", d, l);
            put(argv[1], name, blob, c);
        }
    }
    for (l = 1; l < 3; l++) {
        /* bf16 in rows of whole 32-element groups: the GPU's rows kernel */
        char name[64];
        size_t const c = glyd_tensorCompress(blob, sizeof blob, w, 2816, GLYD_DTYPE_BF16, 256, (glyd_tensorLayout)l, 1);
        if (glyd_isError(c)) { fprintf(stderr, "seedgen: %s\n", glyd_getErrorName(c)); return 1; }
        snprintf(name, sizeof name, "tensor-rows256-l%u", l);
        put(argv[1], name, blob, c);
    }
    {
        /* rows of 1024, whole steps of the rows kernel (fast layout) */
        size_t const c = glyd_tensorCompress(blob, sizeof blob, w, 3072, GLYD_DTYPE_BF16, 1024, glyd_tensor_fast, 1);
        if (glyd_isError(c)) { fprintf(stderr, "seedgen: %s\n", glyd_getErrorName(c)); return 1; }
        put(argv[1], "tensor-rows1024-fast", blob, c);
    }
    {
        /* the fast layout's 4-bit codes, with escapes (20 exponents), in
         * rows of 1024 (the engine's products) and of 100 (units that start
         * inside a group) */
        static const unsigned kRows[] = { 1024, 100 };
        uint16_t v[3072];
        for (i = 0; i < 3072; i++) v[i] = (uint16_t)((w[i] & 0x807F) | (110 + (w[i] >> 7) % 20) << 7);
        for (l = 0; l < 2; l++) {
            uint64_t count[256];
            glyd_fastWriter fw;
            char name[64];
            size_t size, c;
            memset(count, 0, sizeof count);
            glyd_fastCount(count, v, 3072);
            size = glyd_fastWriterSize(count, kRows[l], GLYD_TENSOR_NIBBLE_CODES);
            c = size <= sizeof blob ? glyd_fastWriterBegin(&fw, blob, sizeof blob, count, kRows[l],
                                                           GLYD_TENSOR_NIBBLE_CODES, XXH3_64bits(v, sizeof v))
                                    : (size_t)-1;
            if (!glyd_isError(c)) c = glyd_fastWriterPut(&fw, v, 3072);
            if (!glyd_isError(c)) c = glyd_fastWriterEnd(&fw);
            if (glyd_isError(c)) { fprintf(stderr, "seedgen: 4-bit codes\n"); return 1; }
            snprintf(name, sizeof name, "tensor-nibbles-rows%u", kRows[l]);
            put(argv[1], name, blob, c);
        }
    }
    {
        /* a model folder of two tensors and a config, packed, in the fuzz
         * harness's form: index length, body, index */
        char dir[] = "/tmp/glyd-seedgen-XXXXXX", path[4096];
        glyd_stTensor ts[2];
        uint8_t* header;
        size_t hsize, packed;
        glyd_mappedFile mf;
        FILE* f;
        if (!mkdtemp(dir)) return 1;
        memset(ts, 0, sizeof ts);
        ts[0].name = (char*)"layers.0.mlp.up_proj.weight";
        ts[0].dtype = GLYD_ST_BF16; ts[0].ndim = 2; ts[0].shape[0] = 30; ts[0].shape[1] = 100; ts[0].nbElements = 3000;
        ts[1].name = (char*)"layers.0.input_layernorm.weight";
        ts[1].dtype = GLYD_ST_F32; ts[1].ndim = 1; ts[1].shape[0] = 100; ts[1].nbElements = 100;
        glyd_stWriteHeader(&header, &hsize, ts, 2, NULL);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        f = fopen(path, "wb");
        fwrite(header, 1, hsize, f);
        fwrite(w, 2, 3000, f);
        fwrite(w, 4, 100, f);
        fclose(f);
        snprintf(path, sizeof path, "%s/config.json", dir);
        f = fopen(path, "w");
        fputs("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 100}\n", f);
        fclose(f);
        snprintf(path, sizeof path, "%s.glyd", dir);
        packed = glyd_packModel(dir, path, NULL);
        if (glyd_isError(packed) || glyd_isError(glyd_mapFile(&mf, path))) { fprintf(stderr, "seedgen: pack\n"); return 1; }
        {
            uint64_t const idxOff = glyd_read64(mf.data + mf.size - GLYD_PACK_TRAILER);
            size_t const idxLen = (size_t)(mf.size - GLYD_PACK_TRAILER - idxOff);
            size_t const n = 4 + (size_t)(mf.size - GLYD_PACK_HEADER - GLYD_PACK_TRAILER);
            uint8_t* const seed = (uint8_t*)malloc(n);
            glyd_write32(seed, (uint32_t)idxLen);
            memcpy(seed + 4, mf.data + GLYD_PACK_HEADER, n - 4);
            put(argv[2], "pack-small", seed, n);
            free(seed);
        }
        glyd_unmapFile(&mf);
        unlink(path);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/config.json", dir);
        unlink(path);
        rmdir(dir);
        free(header);
    }
    for (i = 4; i < (unsigned)argc; i++) {
        /* a log's first lines, and their columns */
        static uint8_t text[4000], cols[8 * sizeof text + 64];
        FILE* const f = fopen(argv[i], "rb");
        size_t n = f ? fread(text, 1, sizeof text, f) : 0, c;
        const char* const base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        char name[300];
        if (f) fclose(f);
        while (n && text[n - 1] != '\n') n--;
        c = glyd_logToColumns(cols, sizeof cols, text, n);
        if (glyd_isError(c)) return 1;
        snprintf(name, sizeof name, "%s.txt", base);
        put(argv[3], name, text, n);
        snprintf(name, sizeof name, "%s.cols", base);
        put(argv[3], name, cols, c);
    }
    return 0;
}

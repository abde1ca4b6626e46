/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_tensor.c: the tensor codec on a safetensors file, against its
 * Shannon bound and zstd -19, in one run: size in bits per weight (every
 * byte of the packed file counted), packing and decoding speed with one and
 * two threads, for the entropy and the fast layout.
 *
 *   build/bench_tensor FILE.safetensors [--time S] [--tmp DIR]
 *
 * Lines "key value" at the end are for scripts (tools/real_weights.py).
 * Built by `make bench-tensor`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "../llm/model/model.h"
#include "bench_util.h"

typedef struct {
    const glyd_stTensor* t;
    const uint8_t* bytes;
    unsigned dtype;       /* tensor codec dtype, 0 if none */
    size_t row;
    uint8_t* blob;
    size_t blobSize;
} bench_tensor;

/* Bits of the Shannon bound: per tensor, the raw bits plus the entropy of
 * the coded symbol (the exponent, for bf16), summed. */
static double shannon_bits(const bench_tensor* bt)
{
    glyd_dtypeShape shape;
    unsigned count[256];
    uint8_t* sym;
    uint8_t* planes[3];
    size_t const n = (size_t)bt->t->nbElements;
    double h = 0;
    unsigned s, k;
    if (!bt->dtype) return 8.0 * (double)(bt->t->end - bt->t->begin);
    glyd_dtypeShapeOf(bt->dtype, &shape);
    sym = (uint8_t*)malloc(n + 1);
    for (k = 0; k < shape.nbPlanes; k++) planes[k] = (uint8_t*)malloc(n + 1);
    glyd_tensorSplit(bt->dtype, bt->bytes, n, sym, planes);
    memset(count, 0, sizeof count);
    for (s = 0; s < n; s++) count[sym[s]]++;
    for (s = 0; s < 256; s++)
        if (count[s]) h -= (double)count[s] * log2((double)count[s] / (double)n);
    free(sym);
    for (k = 0; k < shape.nbPlanes; k++) free(planes[k]);
    return h + 8.0 * (double)n * shape.nbPlanes;
}

/* Best-of time of compressing (or decompressing) every tensor. */
static double time_all(bench_tensor* ts, size_t nb, int decode, glyd_tensorLayout layout, unsigned threads,
                       double minTime, uint8_t* scratch)
{
    double best = 1e99, end = bench_now_s() + minTime;
    int checked = 0;
    do {
        double const t0 = bench_now_s();
        size_t i;
        for (i = 0; i < nb; i++) {
            bench_tensor* const b = &ts[i];
            size_t const bytes = (size_t)(b->t->end - b->t->begin);
            size_t r;
            if (!b->dtype || b->t->nbElements == 0) continue;
            if (decode) {
                /* compared once, outside the timing */
                r = glyd_tensorDecompress(scratch, bytes, b->blob, b->blobSize, threads);
                if (glyd_isError(r) || r != bytes || (!checked && memcmp(scratch, b->bytes, bytes) != 0)) {
                    fprintf(stderr, "bench_tensor: %s does not round trip\n", b->t->name);
                    exit(1);
                }
            } else {
                r = glyd_tensorCompress(b->blob, glyd_tensorCompressBound((size_t)b->t->nbElements, (glyd_dtype)b->dtype),
                                        b->bytes, (size_t)b->t->nbElements, (glyd_dtype)b->dtype, b->row, layout,
                                        threads);
                if (glyd_isError(r)) {
                    fprintf(stderr, "bench_tensor: %s: %s\n", b->t->name, glyd_getErrorName(r));
                    exit(1);
                }
                b->blobSize = r;
            }
        }
        if (bench_now_s() - t0 < best) best = bench_now_s() - t0;
        checked = 1;
    } while (bench_now_s() < end);
    return best;
}

/* Size of the whole packed file for this layout (metadata included). */
static size_t packed_size(const char* path, const char* tmpDir, glyd_tensorLayout layout)
{
    char out[4096], msg[256] = "";
    glyd_packParams p;
    size_t r;
    snprintf(out, sizeof out, "%s/bench_tensor_%d.glyd", tmpDir, (int)getpid());
    memset(&p, 0, sizeof p);
    p.layout = layout;
    p.nbThreads = 2;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    r = glyd_packModel(path, out, &p);
    unlink(out);
    if (glyd_isError(r)) {
        fprintf(stderr, "bench_tensor: pack: %s\n", msg[0] ? msg : glyd_getErrorName(r));
        exit(1);
    }
    return r;
}

int main(int argc, char** argv)
{
    const char* path = NULL;
    const char* tmpDir = "/tmp";
    double minTime = 1.0, bound = 0;
    glyd_mappedFile mf;
    glyd_safetensors st;
    const char* why = NULL;
    bench_tensor* ts;
    uint64_t weights = 0, codedBytes = 0;
    size_t i, maxBytes = 0, packedE, packedF, zsize;
    uint8_t* scratch;
    int a;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--time") && a + 1 < argc) minTime = atof(argv[++a]);
        else if (!strcmp(argv[a], "--tmp") && a + 1 < argc) tmpDir = argv[++a];
        else path = argv[a];
    }
    if (!path) {
        fprintf(stderr, "usage: bench_tensor FILE.safetensors [--time S] [--tmp DIR]\n");
        return 1;
    }
    if (glyd_isError(glyd_mapFile(&mf, path))) { fprintf(stderr, "bench_tensor: cannot read %s\n", path); return 1; }
    if (glyd_isError(glyd_stParse(&st, mf.data, mf.size, &why))) {
        fprintf(stderr, "bench_tensor: %s: %s\n", path, why);
        return 1;
    }
    ts = (bench_tensor*)calloc(st.nbTensors, sizeof(bench_tensor));
    for (i = 0; i < st.nbTensors; i++) {
        bench_tensor* const b = &ts[i];
        size_t const bytes = (size_t)(st.tensors[i].end - st.tensors[i].begin);
        b->t = &st.tensors[i];
        b->bytes = mf.data + st.dataStart + b->t->begin;
        b->dtype = glyd_stTensorCodecDtype(b->t->dtype);
        b->row = b->t->ndim >= 2 ? (size_t)b->t->shape[b->t->ndim - 1] : 0;
        if (b->dtype) {
            b->blob = (uint8_t*)malloc(glyd_tensorCompressBound((size_t)b->t->nbElements, (glyd_dtype)b->dtype));
            weights += b->t->nbElements;
            codedBytes += bytes;
        }
        bound += shannon_bits(b);
        if (bytes > maxBytes) maxBytes = bytes;
    }
    scratch = (uint8_t*)malloc(maxBytes + 1);

    printf("file: %s, %zu tensors, %llu coded weights (%.1f MB)\n\n", path, st.nbTensors,
           (unsigned long long)weights, (double)codedBytes / 1e6);
    packedE = packed_size(path, tmpDir, glyd_tensor_auto);
    packedF = packed_size(path, tmpDir, glyd_tensor_fast);
    {
        size_t const cap = ZSTD_compressBound(mf.size);
        void* const z = malloc(cap);
        zsize = ZSTD_compress(z, cap, mf.data, mf.size, 19);
        free(z);
    }
    printf("| codec | bytes | bits per weight | vs bound |\n| --- | ---: | ---: | ---: |\n");
    printf("| Shannon bound (8 + exponent entropy, per tensor) | %.0f | %.4f | 0 |\n", bound / 8,
           bound / (double)weights);
    printf("| glyd pack, entropy layout (whole file) | %zu | %.4f | +%.4f |\n", packedE,
           8.0 * (double)packedE / (double)weights, (8.0 * (double)packedE - bound) / (double)weights);
    printf("| glyd pack, fast layout (whole file) | %zu | %.4f | +%.4f |\n", packedF,
           8.0 * (double)packedF / (double)weights, (8.0 * (double)packedF - bound) / (double)weights);
    printf("| zstd -19 (whole file) | %zu | %.4f | +%.4f |\n", zsize, 8.0 * (double)zsize / (double)weights,
           (8.0 * (double)zsize - bound) / (double)weights);
    printf("| stored (safetensors file) | %zu | %.4f | |\n\n", mf.size, 8.0 * (double)mf.size / (double)weights);

    printf("| layout | threads | pack MB/s (input) | decode MB/s (output) |\n| --- | ---: | ---: | ---: |\n");
    {
        glyd_tensorLayout const layouts[2] = { glyd_tensor_auto, glyd_tensor_fast };
        const char* const names[2] = { "entropy", "fast" };
        int l;
        unsigned th;
        for (l = 0; l < 2; l++) {
            for (th = 1; th <= 2; th++) {
                double const tp = time_all(ts, st.nbTensors, 0, layouts[l], th, minTime, scratch);
                double const td = time_all(ts, st.nbTensors, 1, layouts[l], th, minTime, scratch);
                printf("| %s | %u | %.0f | %.0f |\n", names[l], th, (double)codedBytes / tp / 1e6,
                       (double)codedBytes / td / 1e6);
                printf("key %s_t%u_pack_mbps %.1f\nkey %s_t%u_decode_mbps %.1f\n", names[l], th,
                       (double)codedBytes / tp / 1e6, names[l], th, (double)codedBytes / td / 1e6);
            }
        }
    }
    printf("\nkey weights %llu\nkey bound_bpw %.4f\nkey glyd_bpw %.4f\nkey glyd_fast_bpw %.4f\nkey zstd19_bpw %.4f\n",
           (unsigned long long)weights, bound / (double)weights, 8.0 * (double)packedE / (double)weights,
           8.0 * (double)packedF / (double)weights, 8.0 * (double)zsize / (double)weights);
    for (i = 0; i < st.nbTensors; i++) free(ts[i].blob);
    free(ts);
    free(scratch);
    glyd_stFree(&st);
    glyd_unmapFile(&mf);
    return 0;
}

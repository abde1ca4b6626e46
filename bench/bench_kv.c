/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_kv.c: KV pages (glyd_kvPage*) on real caches, the kv fixture's
 * keys and values: each tensor [..., positions, heads, headDim] a stream
 * per head (and per passage), coded in pages of 16 and of 32 positions.
 * Bytes against bf16's, per model and keys or values: with a table fitted
 * on each stream's first page, and refitted when a page's own table would
 * save more than 2% (each table counted, 10 bytes); the order-0 bound of
 * the exponents (one distribution per stream, sign and mantissa kept).
 * Then the decoding speed of every page of 16 positions, one thread, on
 * each SIMD path (best of 5 passes).
 *
 *   build/bench_kv [FILE.safetensors]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glyd_tensor.h"
#include "../lib/tensor/tensor.h"
#include "../llm/model/model.h"
#include "bench_util.h"

enum { GROUPS = 4 }; /* minilm k, minilm v, stories260K k, stories260K v */
static const char* const kGroups[GROUPS] = { "all-MiniLM-L6-v2 keys", "all-MiniLM-L6-v2 values",
                                              "stories260K keys", "stories260K values" };

typedef struct {
    double values, streams, fitFirst, refit, bound, tables;
} totals;

/* The group of a tensor named like "minilm.layer3.k". */
static int group_of(const char* name)
{
    size_t const len = strlen(name);
    int const values = len > 2 && !strcmp(name + len - 2, ".v");
    return (strncmp(name, "minilm", 6) == 0 ? 0 : 2) + values;
}

/* Order-0 bits of n values' exponents, plus 8 a value for the rest. */
static double order0_bits(const uint16_t* v, size_t n)
{
    double count[256] = { 0 }, bits = 8.0 * (double)n;
    size_t i;
    for (i = 0; i < n; i++) count[(v[i] >> 7) & 0xFF] += 1;
    for (i = 0; i < 256; i++)
        if (count[i] > 0) bits -= count[i] * log2(count[i] / (double)n);
    return bits;
}

/* Coded pages kept to time their decoding: one buffer of pages, each with
 * its size, count of values and table. */
typedef struct {
    uint8_t* bytes;
    size_t size, cap;
    struct page_ref {
        size_t at, size, n;
        glyd_kvTable table;
    } * pages;
    size_t nbPages, capPages;
    double values;
} kept_pages;

static int keep_page(kept_pages* k, const uint8_t* page, size_t size, size_t n, const glyd_kvTable* table)
{
    if (k->size + size > k->cap) {
        k->cap = 2 * (k->size + size);
        k->bytes = (uint8_t*)realloc(k->bytes, k->cap);
    }
    if (k->nbPages == k->capPages) {
        k->capPages = 2 * k->capPages + 64;
        k->pages = (struct page_ref*)realloc(k->pages, k->capPages * sizeof(struct page_ref));
    }
    if (!k->bytes || !k->pages) return 0;
    memcpy(k->bytes + k->size, page, size);
    k->pages[k->nbPages].at = k->size;
    k->pages[k->nbPages].size = size;
    k->pages[k->nbPages].n = n;
    k->pages[k->nbPages].table = *table;
    k->nbPages++;
    k->size += size;
    k->values += (double)n;
    return 1;
}

/* Every kept page decoded on each SIMD path, best of 5 passes. */
static void decode_speeds(kept_pages* k)
{
    static const char* const kPaths[] = { "portable", "AVX2", "AVX-512" };
    uint16_t* const out = (uint16_t*)malloc(GLYD_KV_PAGE_MAX * sizeof(uint16_t));
    int level;
    if (!out) exit(1);
    printf("\nDecoding every page of 16 positions (%zu pages, %.1f MB of bf16), one thread, best of 5:\n\n",
           k->nbPages, 2 * k->values / 1e6);
    printf("| path | MB/s of bf16 |\n| --- | ---: |\n");
    for (level = GLYD_SIMD_NONE; level <= GLYD_SIMD_BEST; level++) {
        double best = 1e30;
        int pass;
        glyd_tensorSimdLimit(level);
        for (pass = 0; pass < 5; pass++) {
            double const t0 = bench_now_s();
            size_t i;
            for (i = 0; i < k->nbPages; i++) {
                const struct page_ref* const p = &k->pages[i];
                if (glyd_kvPageDecode(out, p->n, k->bytes + p->at, p->size, &p->table) != p->n) exit(1);
            }
            best = fmin(best, bench_now_s() - t0);
        }
        printf("| %s | %.0f |\n", kPaths[level], 2 * k->values / best / 1e6);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    free(out);
    free(k->bytes);
    free(k->pages);
}

int main(int argc, char** argv)
{
    kept_pages kept;
    const char* const path = argc > 1 ? argv[1] : "../shared/fixtures/kv/kv.safetensors";
    static const size_t kPositions[] = { 16, 32 };
    glyd_mappedFile mf;
    glyd_safetensors st;
    const char* why = NULL;
    size_t pi, t;
    memset(&kept, 0, sizeof kept);
    if (glyd_isError(glyd_mapFile(&mf, path))) { fprintf(stderr, "bench_kv: cannot read %s\n", path); return 1; }
    if (glyd_isError(glyd_stParse(&st, mf.data, mf.size, &why))) {
        fprintf(stderr, "bench_kv: %s: %s\n", path, why);
        return 1;
    }
    printf("## KV pages on %s\n\n", path);
    printf("Bytes against bf16's. fit once: a table fitted on each stream's first page; refit: a new\n"
           "table where a page's own would save 2%% (tables counted); bound: order-0 exponents, one\n"
           "distribution per stream, sign and mantissa kept.\n\n");
    printf("| page | cache | values | fit once | refit | tables | bound |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (pi = 0; pi < sizeof kPositions / sizeof kPositions[0]; pi++) {
        size_t const positions = kPositions[pi];
        totals g[GROUPS + 1];
        int k;
        memset(g, 0, sizeof g);
        for (t = 0; t < st.nbTensors; t++) {
            const glyd_stTensor* const ten = &st.tensors[t];
            const uint16_t* const all = (const uint16_t*)(mf.data + st.dataStart + ten->begin);
            size_t dim, heads, length, sequences, s, h, p, r;
            uint16_t *page, *stream, *back;
            uint8_t* coded;
            totals* const tg = &g[group_of(ten->name)];
            if (ten->dtype != GLYD_ST_BF16 || ten->ndim < 3) continue;
            dim = (size_t)ten->shape[ten->ndim - 1];
            heads = (size_t)ten->shape[ten->ndim - 2];
            length = (size_t)ten->shape[ten->ndim - 3];
            sequences = (size_t)ten->nbElements / (dim * heads * length);
            page = (uint16_t*)malloc(positions * dim * sizeof(uint16_t));
            back = (uint16_t*)malloc(positions * dim * sizeof(uint16_t));
            stream = (uint16_t*)malloc(length * dim * sizeof(uint16_t));
            coded = (uint8_t*)malloc(glyd_kvPageBound(positions * dim));
            if (!page || !back || !stream || !coded) return 1;
            for (s = 0; s < sequences; s++) {
                for (h = 0; h < heads; h++) {
                    glyd_kvTable first, current;
                    for (p = 0; p < length; p++)
                        memcpy(stream + p * dim, all + ((s * length + p) * heads + h) * dim, dim * sizeof(uint16_t));
                    tg->bound += order0_bits(stream, length * dim) / 8;
                    tg->values += (double)(length * dim);
                    tg->streams += 1;
                    for (p = 0; p < length; p += positions) {
                        size_t const n = (length - p < positions ? length - p : positions) * dim;
                        glyd_kvTable own;
                        size_t size, withOwn;
                        memcpy(page, stream + p * dim, n * sizeof(uint16_t));
                        glyd_kvTableFit(&own, page, n);
                        if (p == 0) {
                            first = current = own;
                            tg->tables += 1;
                        }
                        tg->fitFirst += (double)glyd_kvPageSize(page, n, &first);
                        size = glyd_kvPageSize(page, n, &current);
                        withOwn = glyd_kvPageSize(page, n, &own);
                        if ((double)withOwn + GLYD_KV_TABLE_SIZE < 0.98 * (double)size) {
                            current = own;
                            size = withOwn;
                            tg->tables += 1;
                        }
                        tg->refit += (double)size;
                        r = glyd_kvPageEncode(coded, glyd_kvPageBound(n), page, n, &current);
                        if (glyd_isError(r) || r != size) { fprintf(stderr, "bench_kv: encode\n"); return 1; }
                        if (glyd_kvPageDecode(back, n, coded, r, &current) != n ||
                            memcmp(back, page, n * sizeof(uint16_t))) {
                            fprintf(stderr, "bench_kv: a page differs\n");
                            return 1;
                        }
                        if (positions == 16 && !keep_page(&kept, coded, r, n, &current)) return 1;
                    }
                }
            }
            free(page);
            free(back);
            free(stream);
            free(coded);
        }
        for (k = 0; k < GROUPS; k++) {
            g[GROUPS].values += g[k].values, g[GROUPS].fitFirst += g[k].fitFirst, g[GROUPS].refit += g[k].refit;
            g[GROUPS].bound += g[k].bound, g[GROUPS].tables += g[k].tables, g[GROUPS].streams += g[k].streams;
        }
        for (k = 0; k <= GROUPS; k++) {
            double const bf16 = 2 * g[k].values;
            if (g[k].values == 0) continue;
            printf("| %zu positions | %s | %.0f | %.4f | %.4f | %.0f | %.4f |\n", positions,
                   k < GROUPS ? kGroups[k] : "all", g[k].values,
                   (g[k].fitFirst + GLYD_KV_TABLE_SIZE * g[k].streams) / bf16,
                   (g[k].refit + GLYD_KV_TABLE_SIZE * g[k].tables) / bf16, g[k].tables, g[k].bound / bf16);
        }
    }
    decode_speeds(&kept);
    glyd_stFree(&st);
    glyd_unmapFile(&mf);
    return 0;
}

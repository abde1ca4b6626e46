/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_records.c: log columns (lib/records) on whole files, one thread:
 * the ratio of zstd -19 and glyd -19 on the text against glyd -19 on its
 * columns, and the transform's own speed each way (best of 5). The
 * columns are checked to rebuild the text.
 *
 *   build/bench_records FILE...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "glyd.h"
#include "../lib/records/records.h"
#include "bench_util.h"

int main(int argc, char** argv)
{
    double totalText = 0, totalZstd = 0, totalGlyd = 0, totalCols = 0;
    int a;
    if (argc < 2) { fprintf(stderr, "usage: bench_records FILE...\n"); return 2; }
    printf("## Log columns: whole files, one thread; ratios at level 19\n\n");
    printf("| file | bytes | zstd -19 | glyd -19 | columns, glyd -19 | columns / zstd | split MB/s | rebuild MB/s |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (a = 1; a < argc; a++) {
        FILE* const f = fopen(argv[a], "rb");
        size_t n = 0, cap, zs, gs, cs, colSize = 0, r;
        uint8_t *text, *cols, *out, *back;
        double bestSplit = 1e30, bestRebuild = 1e30;
        int k;
        const char* const name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        if (!f) { perror(argv[a]); return 1; }
        fseek(f, 0, SEEK_END);
        n = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        cap = 8 * n + 64;
        text = (uint8_t*)malloc(n + 1);
        cols = (uint8_t*)malloc(cap);
        out = (uint8_t*)malloc(glyd_compressBound(cap) + ZSTD_compressBound(n));
        back = (uint8_t*)malloc(n + 1);
        if (!text || !cols || !out || !back || fread(text, 1, n, f) != n) return 1;
        fclose(f);
        for (k = 0; k < 5; k++) {
            double t0 = bench_now_s();
            colSize = glyd_logToColumns(cols, cap, text, n);
            bestSplit = fmin(bestSplit, bench_now_s() - t0);
            if (glyd_isError(colSize)) { fprintf(stderr, "%s: %s\n", name, glyd_getErrorName(colSize)); return 1; }
            t0 = bench_now_s();
            r = glyd_logFromColumns(back, n, cols, colSize);
            bestRebuild = fmin(bestRebuild, bench_now_s() - t0);
            if (r != n || memcmp(back, text, n)) { fprintf(stderr, "%s: columns rebuild another text\n", name); return 1; }
        }
        zs = ZSTD_compress(out, ZSTD_compressBound(n), text, n, 19);
        gs = glyd_compress(out, glyd_compressBound(n), text, n, 19);
        cs = glyd_compress(out, glyd_compressBound(colSize), cols, colSize, 19);
        if (ZSTD_isError(zs) || glyd_isError(gs) || glyd_isError(cs)) return 1;
        printf("| %s | %zu | %.2f | %.2f | %.2f | %.2fx | %.0f | %.0f |\n", name, n, (double)n / (double)zs,
               (double)n / (double)gs, (double)n / (double)cs, (double)zs / (double)cs, (double)n / bestSplit / 1e6,
               (double)n / bestRebuild / 1e6);
        totalText += (double)n, totalZstd += (double)zs, totalGlyd += (double)gs, totalCols += (double)cs;
        free(text); free(cols); free(out); free(back);
    }
    printf("| all | %.0f | %.2f | %.2f | %.2f | %.2fx | | |\n", totalText, totalText / totalZstd, totalText / totalGlyd,
           totalText / totalCols, totalZstd / totalCols);
    return 0;
}

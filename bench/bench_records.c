/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_records.c: records frames (`glyd -r`) on whole files, one thread,
 * against zstd -19, xz -9e and glyd's plain --max: the ratio of each, the
 * row groups of `-r --max` kept as log columns and context-mixed, and
 * `-r`'s speed each way at the default level (best of 5) and at --max
 * (once). Every frame is checked to decode to the file.
 *
 *   build/bench_records FILE...
 */
#include <lzma.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "glyd.h"
#include "bench_util.h"

typedef struct {
    double text, zstd, xz, plain, records19, recordsMax;
} totals;

/* A glyd frame of src at `level`, records or not; checked to decode.
 * *seconds (if not NULL) gets the time each way. */
static size_t glyd_frame(uint8_t* dst, size_t cap, const uint8_t* src, size_t n, int level, int records,
                         uint8_t* back, double seconds[2])
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t r, d;
    double t0 = bench_now_s(), t1;
    glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level);
    glyd_CCtx_setParameter(c, glyd_c_records, records);
    r = glyd_compress2(c, dst, cap, src, n);
    glyd_freeCCtx(c);
    if (glyd_isError(r)) { fprintf(stderr, "glyd: %s\n", glyd_getErrorName(r)); exit(1); }
    t1 = bench_now_s();
    d = glyd_decompress(back, n, dst, r);
    if (seconds) seconds[0] = t1 - t0, seconds[1] = bench_now_s() - t1;
    if (d != n || memcmp(back, src, n)) {
        fprintf(stderr, "a frame decodes to another text\n");
        exit(1);
    }
    return r;
}

static size_t xz_size(uint8_t* dst, size_t cap, const uint8_t* src, size_t n)
{
    size_t pos = 0;
    if (lzma_easy_buffer_encode(9 | LZMA_PRESET_EXTREME, LZMA_CHECK_CRC64, NULL, src, n, dst, &pos, cap) != LZMA_OK)
        exit(1);
    return pos;
}

/* Row groups kept as columns (kinds 1 and 3) and context-mixed (2 and 3),
 * of all, walking the frame's row groups (docs/FORMAT.md, section 18). */
static void group_kinds(const uint8_t* frame, size_t size, unsigned* columns, unsigned* mixed, unsigned* groups)
{
    glyd_frameInfo info;
    size_t at;
    *columns = *mixed = *groups = 0;
    if (glyd_isError(glyd_getFrameInfo(&info, frame, size)) || !info.isRecords) return;
    for (at = info.headerSize; at + 9 <= size;) {
        uint32_t body;
        unsigned const kind = (frame[at] >> 1) & 7;
        memcpy(&body, frame + at + 5, 4);
        *columns += kind == 1 || kind == 3;
        *mixed += kind == 2 || kind == 3;
        (*groups)++;
        if (frame[at] & 1) break;
        at += 9 + (size_t)body;
    }
}

int main(int argc, char** argv)
{
    totals t = { 0, 0, 0, 0, 0, 0 };
    int a;
    if (argc < 2) { fprintf(stderr, "usage: bench_records FILE...\n"); return 2; }
    printf("## Records frames: whole files, one thread; ratios; speed of -r at the default level, best of 5\n\n");
    printf("| file | bytes | zstd -19 | xz -9e | glyd --max | glyd -r -19 | glyd -r --max | -r --max / zstd -19 "
           "| groups as columns, context-mixed | -r MB/s | -r -d MB/s | -r --max MB/s | -r --max -d MB/s |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (a = 1; a < argc; a++) {
        FILE* const f = fopen(argv[a], "rb");
        size_t n, cap, zs, xs, ps, r19, rmax, r3 = 0;
        uint8_t *text, *out, *back;
        double bestC = 1e30, bestD = 1e30;
        unsigned columns, mixed, groups;
        double maxSeconds[2];
        int k;
        const char* const name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        glyd_CCtx* const c = glyd_createCCtx();
        glyd_DCtx* const d = glyd_createDCtx();
        if (!f) { perror(argv[a]); return 1; }
        fseek(f, 0, SEEK_END);
        n = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        cap = glyd_compressBound(n) + ZSTD_compressBound(n) + lzma_stream_buffer_bound(n);
        text = (uint8_t*)malloc(n + 1);
        out = (uint8_t*)malloc(cap);
        back = (uint8_t*)malloc(n + 1);
        if (!text || !out || !back || !c || !d || fread(text, 1, n, f) != n) return 1;
        fclose(f);
        zs = ZSTD_compress(out, cap, text, n, 19);
        if (ZSTD_isError(zs)) return 1;
        xs = xz_size(out, cap, text, n);
        ps = glyd_frame(out, cap, text, n, GLYD_LEVEL_MAX, 0, back, NULL);
        r19 = glyd_frame(out, cap, text, n, 19, 1, back, NULL);
        rmax = glyd_frame(out, cap, text, n, GLYD_LEVEL_MAX, 1, back, maxSeconds);
        group_kinds(out, rmax, &columns, &mixed, &groups);
        glyd_CCtx_setParameter(c, glyd_c_records, 1);
        for (k = 0; k < 5; k++) {
            double t0 = bench_now_s();
            r3 = glyd_compress2(c, out, cap, text, n);
            bestC = fmin(bestC, bench_now_s() - t0);
            if (glyd_isError(r3)) return 1;
            t0 = bench_now_s();
            if (glyd_decompressDCtx(d, back, n, out, r3) != n) return 1;
            bestD = fmin(bestD, bench_now_s() - t0);
            if (memcmp(back, text, n)) { fprintf(stderr, "%s: -r decodes to another text\n", name); return 1; }
        }
        printf("| %s | %zu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx | %u, %u of %u | %.0f | %.0f | %.1f | %.1f |\n",
               name, n, (double)n / (double)zs, (double)n / (double)xs, (double)n / (double)ps,
               (double)n / (double)r19, (double)n / (double)rmax, (double)zs / (double)rmax, columns, mixed, groups,
               (double)n / bestC / 1e6, (double)n / bestD / 1e6, (double)n / maxSeconds[0] / 1e6,
               (double)n / maxSeconds[1] / 1e6);
        t.text += (double)n, t.zstd += (double)zs, t.xz += (double)xs, t.plain += (double)ps;
        t.records19 += (double)r19, t.recordsMax += (double)rmax;
        free(text); free(out); free(back);
        glyd_freeCCtx(c);
        glyd_freeDCtx(d);
    }
    printf("| all | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx | | | | | |\n", t.text, t.text / t.zstd, t.text / t.xz,
           t.text / t.plain, t.text / t.records19, t.text / t.recordsMax, t.zstd / t.recordsMax);
    return 0;
}

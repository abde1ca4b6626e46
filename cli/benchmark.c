/* SPDX-License-Identifier: BSD-3-Clause */
/* benchmark.c: `glyd -b#`, in-memory compression and decompression speed
 * of files (or of a generated sample) at one level or a range of levels. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A text-like sample when no file is named: words from a small vocabulary
 * with a skewed choice, so that it compresses like prose. */
static uint8_t* make_sample(size_t n)
{
    static const char* const words[] = {
        "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
        "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
        "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
        "been", "if", "more", "when", "will", "would", "who", "so", "no", "compression", "entropy" };
    uint8_t* const buf = (uint8_t*)malloc(n);
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    size_t pos = 0;
    if (!buf) return NULL;
    while (pos < n) {
        const char* w;
        size_t len;
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        w = words[(state % 51) * (state % 51) / 51];
        len = strlen(w);
        if (pos + len + 1 > n) { memset(buf + pos, ' ', n - pos); break; }
        memcpy(buf + pos, w, len);
        pos += len;
        buf[pos++] = (state >> 40) % 13 == 0 ? '\n' : ' ';
    }
    return buf;
}

static int bench_one(const cli_options* o, const char* name, const uint8_t* src, size_t n, int level)
{
    size_t const cap = glyd_compressBound(n);
    uint8_t* const comp = (uint8_t*)malloc(cap);
    uint8_t* const back = (uint8_t*)malloc(n ? n : 1);
    glyd_CCtx* const cctx = glyd_createCCtx();
    glyd_DCtx* const dctx = glyd_createDCtx();
    double cbest = 1e99, dbest = 1e99, tEnd;
    size_t csize = 0;
    int err = 0;
    if (!comp || !back || !cctx || !dctx) {
        cli_error("out of memory");
        err = 1;
        goto done;
    }
    glyd_CCtx_setParameter(cctx, glyd_c_compressionLevel, level);
    glyd_CCtx_setParameter(cctx, glyd_c_nbWorkers, o->threads);
    glyd_CCtx_setParameter(cctx, glyd_c_records, o->records);
    glyd_DCtx_setParameter(dctx, glyd_d_nbWorkers, o->threads);
    /* best of repeated runs: the least disturbed measurement */
    tEnd = cli_now() + o->benchSeconds;
    do {
        double const t0 = cli_now();
        csize = glyd_compress2(cctx, comp, cap, src, n);
        if (glyd_isError(csize)) {
            cli_error("%s: compression failed: %s", name, glyd_getErrorName(csize));
            err = 1;
            goto done;
        }
        if (cli_now() - t0 < cbest) cbest = cli_now() - t0;
    } while (cli_now() < tEnd);
    tEnd = cli_now() + o->benchSeconds;
    do {
        double const t0 = cli_now();
        size_t const r = glyd_decompressDCtx(dctx, back, n, comp, csize);
        if (glyd_isError(r) || r != n || memcmp(src, back, n) != 0) {
            cli_error("%s: round trip failed at level %d", name, level);
            err = 1;
            goto done;
        }
        if (cli_now() - t0 < dbest) dbest = cli_now() - t0;
    } while (cli_now() < tEnd);
    printf("%3d#%-24s %10zu -> %10zu (%6.3f), %8.1f MB/s, %8.1f MB/s\n", level, name, n, csize,
           csize ? (double)n / (double)csize : 0.0, (double)n / cbest / 1e6, (double)n / dbest / 1e6);
    if (cli_stdoutFlush()) err = 1; /* nobody reads the next levels */
done:
    free(comp);
    free(back);
    glyd_freeCCtx(cctx);
    glyd_freeDCtx(dctx);
    return err;
}

int cli_benchmark(const cli_options* o, const char* const* inputs, int nbInputs)
{
    int err = 0, i, level;
    int const last = o->benchLast < o->level ? o->level : o->benchLast;
    if (nbInputs == 0) {
        size_t const n = 10u << 20;
        uint8_t* const sample = make_sample(n);
        if (!sample) { cli_error("out of memory"); return 1; }
        for (level = o->level; level <= last && !err; level++)
            err = bench_one(o, "sample (10 MiB of words)", sample, n, level);
        free(sample);
        return err;
    }
    for (i = 0; i < nbInputs; i++) {
        size_t n;
        uint8_t* const data = cli_readFile(inputs[i], &n);
        const char* const slash = strrchr(inputs[i], '/');
        if (!data) { err = 1; continue; }
        for (level = o->level; level <= last; level++)
            if (bench_one(o, slash ? slash + 1 : inputs[i], data, n, level)) { err = 1; break; }
        free(data);
        if (cli_stdoutFlush()) break;
    }
    return err;
}

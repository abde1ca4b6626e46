/* SPDX-License-Identifier: BSD-3-Clause */
/* util.c: messages, sizes, clock and the progress line of the glyd command. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void cli_error(const char* fmt, ...)
{
    va_list ap;
    fputs("glyd: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_note(const cli_options* o, int level, const char* fmt, ...)
{
    va_list ap;
    if (o->verbosity < level) return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

const char* cli_size(char* buf, size_t cap, unsigned long long bytes)
{
    static const char* const units[] = { "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = -1;
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu B", bytes);
        return buf;
    }
    while (v >= 1024 && u < 3) { v /= 1024; u++; }
    snprintf(buf, cap, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

double cli_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Inputs smaller than this finish before a progress line would help. */
#define PROGRESS_MIN_BYTES (16u << 20)

void cli_progressStart(cli_progress* p, const cli_options* o, const char* name, unsigned long long total)
{
    p->name = name;
    p->total = total;
    p->start = p->last = cli_now();
    if (o->progress == 0 || o->verbosity < 1) p->enabled = 0;
    else if (o->progress == 1) p->enabled = 1;
    else p->enabled = isatty(STDERR_FILENO) && (total == 0 || total >= PROGRESS_MIN_BYTES);
}

void cli_progressUpdate(cli_progress* p, unsigned long long in, unsigned long long out)
{
    char a[32], b[32];
    double const t = cli_now();
    double rate;
    if (!p->enabled || t - p->last < 0.1) return;
    p->last = t;
    rate = t > p->start ? (double)in / (t - p->start) / 1e6 : 0;
    if (p->total && out == 0)
        fprintf(stderr, "\r\033[K%s: %3.0f%%  %s  %.0f MB/s", p->name, 100.0 * (double)in / (double)p->total,
                cli_size(a, sizeof a, in), rate);
    else if (p->total)
        fprintf(stderr, "\r\033[K%s: %3.0f%%  %s => %s  %.0f MB/s", p->name, 100.0 * (double)in / (double)p->total,
                cli_size(a, sizeof a, in), cli_size(b, sizeof b, out), rate);
    else
        fprintf(stderr, "\r\033[K%s: %s => %s  %.0f MB/s", p->name, cli_size(a, sizeof a, in),
                cli_size(b, sizeof b, out), rate);
    fflush(stderr);
}

void cli_progressEnd(cli_progress* p)
{
    if (p->enabled && p->last > p->start) fputs("\r\033[K", stderr);
}

uint8_t* cli_readFile(const char* path, size_t* size)
{
    FILE* const f = fopen(path, "rb");
    uint8_t* buf;
    long n;
    if (!f) { cli_error("%s: %s", path, strerror(errno)); return NULL; }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        cli_error("%s: cannot determine its size (not a regular file?)", path);
        fclose(f);
        return NULL;
    }
    buf = (uint8_t*)malloc(n ? (size_t)n : 1);
    if (!buf) cli_error("%s: out of memory", path);
    else if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        cli_error("%s: read error", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

size_t cli_nextDamagedTensor(const glyd_model* m, size_t file, size_t from, unsigned threads)
{
    glyd_modelFileInfo fi;
    size_t t;
    glyd_modelGetFile(m, file, &fi);
    for (t = from; t < fi.nbTensors; t++)
        if (glyd_isError(glyd_modelVerifyTensor(m, file, t, threads))) break;
    return t;
}

const char* cli_packedDamage(const glyd_model* m, size_t file, size_t err, unsigned threads, char* buf,
                             size_t cap)
{
    glyd_modelFileInfo fi;
    glyd_modelTensorInfo first;
    size_t t, nbDamaged = 0;
    glyd_modelGetFile(m, file, &fi);
    for (t = cli_nextDamagedTensor(m, file, 0, threads); t < fi.nbTensors;
         t = cli_nextDamagedTensor(m, file, t + 1, threads))
        if (!nbDamaged++) glyd_modelGetTensor(m, file, t, &first);
    if (nbDamaged == 1)
        snprintf(buf, cap, "%s: tensor %s is damaged", fi.path, first.name);
    else if (nbDamaged > 1)
        snprintf(buf, cap, "%s: tensor %s and %zu more are damaged", fi.path, first.name, nbDamaged - 1);
    else
        snprintf(buf, cap, "%s: %s", fi.path, glyd_getErrorName(err));
    return buf;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.c: measures glyd against zstd, lz4, snappy, brotli and xz in one
 * process, through their C libraries, on the shared corpus; prints
 * markdown tables (ratio, speeds, peak heap, threads) and plots ratio
 * against decompression speed with gnuplot.
 *
 * Build, from the repository root, after `make`:
 *   cc -O2 -std=c11 -D_DEFAULT_SOURCE -Iinclude bench/bench.c build/libglyd.a -lzstd -llz4 -lsnappy -lbrotlienc -lbrotlidec -llzma -lxxhash -lpthread -lm -o build/bench
 * (clean with -Wall -Wextra -Werror as well.)
 *
 * Run, from the repository root:
 *   build/bench            default run: every codec/level on ../shared/corpus
 *   build/bench --quick    smoke test: a few levels, short timing, small mix
 *   build/bench --help     every option
 * Tables go to stdout and to bench/out/results.md (per-input figures to
 * results.csv); the plot to bench/out/ratio_vs_decomp.png.
 *
 * Method: each (codec, level, input) is compressed repeatedly for at least
 * --time seconds of wall time (at least once) and the fastest run is kept;
 * the same for decompression, whose output is checked byte for byte against
 * the input. The time is spread over --rounds passes over every row, minutes
 * apart, so that a spell of contention on a shared machine slows one pass of
 * a row, not the whole row against its reference; the slow rows, whose
 * single runs already last seconds, run in the first pass only. Everything
 * runs in the calling thread except the threads test.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem and the *_advanced creators */

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <dirent.h>
#include <errno.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lzma.h>
#include <math.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <zstd.h>

#include "glyd.h"
#include "bench_util.h"

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static _Noreturn void die(const char* fmt, ...)
{
    va_list ap;
    fputs("bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void* xmalloc(size_t n)
{
    void* const p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static char* xstrdup(const char* s)
{
    char* const p = (char*)xmalloc(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static const double MiB = 1024.0 * 1024.0;

/* ------------------------------------------------------------------------ */
/* Counting allocator                                                       */
/* ------------------------------------------------------------------------ */

/* glyd and zstd accept a custom allocator; routing their contexts through
 * this one tells how much heap a level really needs. Each block carries its
 * size in a header so that free() can subtract it. The lock only matters for
 * the threads test, where workers allocate concurrently. */
typedef union {
    size_t size;
    max_align_t align; /* keeps the user pointer as aligned as malloc's */
} MemHeader;

typedef struct {
    pthread_mutex_t lock;
    size_t current;
    size_t peak;
} MemCounter;

static MemCounter g_mem = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };

static void* counting_alloc(void* opaque, size_t size)
{
    MemCounter* const m = (MemCounter*)opaque;
    MemHeader* const h = (MemHeader*)malloc(sizeof(MemHeader) + size);
    if (!h) return NULL;
    h->size = size;
    pthread_mutex_lock(&m->lock);
    m->current += size;
    if (m->current > m->peak) m->peak = m->current;
    pthread_mutex_unlock(&m->lock);
    return h + 1;
}

static void counting_free(void* opaque, void* address)
{
    MemCounter* const m = (MemCounter*)opaque;
    MemHeader* h;
    if (!address) return;
    h = (MemHeader*)address - 1;
    pthread_mutex_lock(&m->lock);
    m->current -= h->size;
    pthread_mutex_unlock(&m->lock);
    free(h);
}

/* Starts a new measurement: the peak restarts from what is held now. */
static void mem_reset_peak(void)
{
    pthread_mutex_lock(&g_mem.lock);
    g_mem.peak = g_mem.current;
    pthread_mutex_unlock(&g_mem.lock);
}

static size_t mem_peak(void)
{
    size_t p;
    pthread_mutex_lock(&g_mem.lock);
    p = g_mem.peak;
    pthread_mutex_unlock(&g_mem.lock);
    return p;
}

static size_t mem_current(void)
{
    size_t c;
    pthread_mutex_lock(&g_mem.lock);
    c = g_mem.current;
    pthread_mutex_unlock(&g_mem.lock);
    return c;
}

static glyd_customMem glyd_counting_mem(void)
{
    glyd_customMem m;
    m.customAlloc = counting_alloc;
    m.customFree = counting_free;
    m.opaque = &g_mem;
    return m;
}

static ZSTD_customMem zstd_counting_mem(void)
{
    ZSTD_customMem m;
    m.customAlloc = counting_alloc;
    m.customFree = counting_free;
    m.opaque = &g_mem;
    return m;
}

/* ------------------------------------------------------------------------ */
/* Codecs and the rows of the tables                                        */
/* ------------------------------------------------------------------------ */

typedef enum { C_GLYD, C_ZSTD, C_LZ4, C_LZ4HC, C_SNAPPY, C_BROTLI, C_XZ } CodecId;

typedef struct {
    CodecId id;
    const char* codec; /* as printed */
    const char* label; /* the level as its command-line tool spells it */
    int level;         /* library level, quality or preset number */
    int slow;          /* skipped on the mix input unless --full */
    int quick;         /* kept by --quick */
} RowSpec;

static const RowSpec kRows[] = {
    { C_GLYD,   "glyd",   "--fast=1",    -1, 0, 1 },
    { C_GLYD,   "glyd",   "--fast=4",    -4, 0, 0 },
    { C_GLYD,   "glyd",   "1",            1, 0, 1 },
    { C_GLYD,   "glyd",   "3",            3, 0, 1 },
    { C_GLYD,   "glyd",   "9",            9, 0, 0 },
    { C_GLYD,   "glyd",   "19",          19, 1, 0 },
    { C_GLYD,   "glyd",   "--max",       GLYD_LEVEL_MAX, 1, 0 },
    { C_ZSTD,   "zstd",   "-1",           1, 0, 1 },
    { C_ZSTD,   "zstd",   "-3",           3, 0, 1 },
    { C_ZSTD,   "zstd",   "-9",           9, 0, 0 },
    { C_ZSTD,   "zstd",   "-19",         19, 1, 0 },
    { C_ZSTD,   "zstd",   "--ultra -22", 22, 1, 0 },
    { C_LZ4,    "lz4",    "default",      1, 0, 1 },
    { C_LZ4HC,  "lz4",    "-9",           9, 0, 0 },
    { C_SNAPPY, "snappy", "-",            0, 0, 1 },
    { C_BROTLI, "brotli", "q1",           1, 0, 1 },
    { C_BROTLI, "brotli", "q5",           5, 0, 0 },
    { C_BROTLI, "brotli", "q11 w24",     11, 1, 0 },
    { C_XZ,     "xz",     "-6",           6, 1, 0 },
    { C_XZ,     "xz",     "-9e",          9, 1, 0 },
};
#define NB_ROWS ((int)(sizeof(kRows) / sizeof(kRows[0])))

/* The row a glyd row is compared with: the zstd row at the same level
 * (--max against --ultra -22), and lz4's default for the --fast modes, which
 * compete with it rather than with zstd. -1 when there is none. */
static int reference_row(int r)
{
    const RowSpec* const s = &kRows[r];
    int i;
    if (s->id != C_GLYD) return -1;
    for (i = 0; i < NB_ROWS; i++) {
        if (s->level < 0 && kRows[i].id == C_LZ4) return i;
        if (s->level > 0 && kRows[i].id == C_ZSTD && kRows[i].level == s->level) return i;
    }
    return -1;
}

static const char* row_name(int r, char* buf, size_t cap)
{
    if (strcmp(kRows[r].label, "-") == 0) snprintf(buf, cap, "%s", kRows[r].codec);
    else snprintf(buf, cap, "%s %s", kRows[r].codec, kRows[r].label);
    return buf;
}

/* The per-input state of one row: contexts are created once per input and
 * reused across repetitions, as an application would. */
typedef struct {
    const RowSpec* spec;
    glyd_CCtx* gc;
    glyd_DCtx* gd;
    ZSTD_CCtx* zc;
    ZSTD_DCtx* zd;
    void* lz4hcState;
} Session;

static size_t row_bound(const RowSpec* s, size_t n)
{
    switch (s->id) {
    case C_GLYD:   return glyd_compressBound(n);
    case C_ZSTD:   return ZSTD_compressBound(n);
    case C_LZ4:
    case C_LZ4HC:  return (size_t)LZ4_compressBound((int)n);
    case C_SNAPPY: return snappy_max_compressed_length(n);
    case C_BROTLI: return BrotliEncoderMaxCompressedSize(n);
    case C_XZ:     return lzma_stream_buffer_bound(n);
    }
    return 0;
}

static _Noreturn void session_fail(const Session* s, const char* what, const char* input, const char* why)
{
    die("%s %s on %s: %s failed: %s", s->spec->codec, s->spec->label, input, what, why);
}

static void session_open_compress(Session* s, const RowSpec* spec)
{
    memset(s, 0, sizeof(*s));
    s->spec = spec;
    if (spec->id == C_GLYD) {
        size_t e;
        s->gc = glyd_createCCtx_advanced(glyd_counting_mem());
        if (!s->gc) die("glyd_createCCtx_advanced failed");
        e = glyd_CCtx_setParameter(s->gc, glyd_c_compressionLevel, spec->level);
        if (glyd_isError(e)) die("glyd level %d: %s", spec->level, glyd_getErrorName(e));
    } else if (spec->id == C_ZSTD) {
        size_t e;
        s->zc = ZSTD_createCCtx_advanced(zstd_counting_mem());
        if (!s->zc) die("ZSTD_createCCtx_advanced failed");
        e = ZSTD_CCtx_setParameter(s->zc, ZSTD_c_compressionLevel, spec->level);
        /* glyd frames carry a checksum by default, as do files written by the
         * zstd tool: have zstd compute one too, so both pay for it */
        if (!ZSTD_isError(e)) e = ZSTD_CCtx_setParameter(s->zc, ZSTD_c_checksumFlag, 1);
        if (ZSTD_isError(e)) die("zstd level %d: %s", spec->level, ZSTD_getErrorName(e));
    } else if (spec->id == C_LZ4HC) {
        /* an external state keeps LZ4_compress_HC from allocating per call */
        s->lz4hcState = xmalloc((size_t)LZ4_sizeofStateHC());
    }
}

static void session_open_decompress(Session* s, const RowSpec* spec)
{
    memset(s, 0, sizeof(*s));
    s->spec = spec;
    if (spec->id == C_GLYD) {
        s->gd = glyd_createDCtx_advanced(glyd_counting_mem());
        if (!s->gd) die("glyd_createDCtx_advanced failed");
    } else if (spec->id == C_ZSTD) {
        s->zd = ZSTD_createDCtx_advanced(zstd_counting_mem());
        if (!s->zd) die("ZSTD_createDCtx_advanced failed");
    }
}

static void session_close(Session* s)
{
    glyd_freeCCtx(s->gc);
    glyd_freeDCtx(s->gd);
    ZSTD_freeCCtx(s->zc);
    ZSTD_freeDCtx(s->zd);
    free(s->lz4hcState);
    memset(s, 0, sizeof(*s));
}

/* Returns the compressed size; dies with the library's message on failure. */
static size_t session_compress(Session* s, void* dst, size_t cap,
                               const void* src, size_t n, const char* input)
{
    const RowSpec* const spec = s->spec;
    switch (spec->id) {
    case C_GLYD: {
        const size_t r = glyd_compress2(s->gc, dst, cap, src, n);
        if (glyd_isError(r)) session_fail(s, "compression", input, glyd_getErrorName(r));
        return r;
    }
    case C_ZSTD: {
        const size_t r = ZSTD_compress2(s->zc, dst, cap, src, n);
        if (ZSTD_isError(r)) session_fail(s, "compression", input, ZSTD_getErrorName(r));
        return r;
    }
    case C_LZ4: {
        const int r = LZ4_compress_default((const char*)src, (char*)dst, (int)n, (int)cap);
        if (r <= 0 && n > 0) session_fail(s, "compression", input, "LZ4_compress_default returned 0");
        return (size_t)r;
    }
    case C_LZ4HC: {
        const int r = LZ4_compress_HC_extStateHC(s->lz4hcState, (const char*)src, (char*)dst,
                                                 (int)n, (int)cap, spec->level);
        if (r <= 0 && n > 0) session_fail(s, "compression", input, "LZ4_compress_HC returned 0");
        return (size_t)r;
    }
    case C_SNAPPY: {
        size_t len = cap;
        if (snappy_compress((const char*)src, n, (char*)dst, &len) != SNAPPY_OK)
            session_fail(s, "compression", input, "snappy_compress did not return SNAPPY_OK");
        return len;
    }
    case C_BROTLI: {
        /* the window only matters past 4 MiB; q11 gets the largest (24),
         * the others the library default, as asked of this benchmark */
        const int lgwin = spec->level >= 11 ? 24 : BROTLI_DEFAULT_WINDOW;
        size_t len = cap;
        if (!BrotliEncoderCompress(spec->level, lgwin, BROTLI_MODE_GENERIC, n,
                                   (const uint8_t*)src, &len, (uint8_t*)dst))
            session_fail(s, "compression", input, "BrotliEncoderCompress returned false");
        return len;
    }
    case C_XZ: {
        /* -9e is preset 9 with the extreme flag; CRC64 as the xz tool does */
        const uint32_t preset = (uint32_t)spec->level
                              | (spec->level == 9 ? LZMA_PRESET_EXTREME : 0);
        size_t pos = 0;
        const lzma_ret r = lzma_easy_buffer_encode(preset, LZMA_CHECK_CRC64, NULL,
                                                   (const uint8_t*)src, n,
                                                   (uint8_t*)dst, &pos, cap);
        if (r != LZMA_OK) {
            char why[64];
            snprintf(why, sizeof(why), "lzma_easy_buffer_encode returned %d", (int)r);
            session_fail(s, "compression", input, why);
        }
        return pos;
    }
    }
    return 0;
}

/* Returns the decompressed size; dies with the library's message on failure. */
static size_t session_decompress(Session* s, void* dst, size_t cap,
                                 const void* src, size_t n, const char* input)
{
    switch (s->spec->id) {
    case C_GLYD: {
        const size_t r = glyd_decompressDCtx(s->gd, dst, cap, src, n);
        if (glyd_isError(r)) session_fail(s, "decompression", input, glyd_getErrorName(r));
        return r;
    }
    case C_ZSTD: {
        const size_t r = ZSTD_decompressDCtx(s->zd, dst, cap, src, n);
        if (ZSTD_isError(r)) session_fail(s, "decompression", input, ZSTD_getErrorName(r));
        return r;
    }
    case C_LZ4:
    case C_LZ4HC: {
        const int r = LZ4_decompress_safe((const char*)src, (char*)dst, (int)n, (int)cap);
        if (r < 0) session_fail(s, "decompression", input, "LZ4_decompress_safe returned < 0");
        return (size_t)r;
    }
    case C_SNAPPY: {
        size_t len = cap;
        if (snappy_uncompress((const char*)src, n, (char*)dst, &len) != SNAPPY_OK)
            session_fail(s, "decompression", input, "snappy_uncompress did not return SNAPPY_OK");
        return len;
    }
    case C_BROTLI: {
        size_t len = cap;
        if (BrotliDecoderDecompress(n, (const uint8_t*)src, &len, (uint8_t*)dst)
            != BROTLI_DECODER_RESULT_SUCCESS)
            session_fail(s, "decompression", input, "BrotliDecoderDecompress failed");
        return len;
    }
    case C_XZ: {
        uint64_t memlimit = UINT64_MAX;
        size_t inPos = 0, outPos = 0;
        const lzma_ret r = lzma_stream_buffer_decode(&memlimit, 0, NULL, (const uint8_t*)src,
                                                     &inPos, n, (uint8_t*)dst, &outPos, cap);
        if (r != LZMA_OK) {
            char why[64];
            snprintf(why, sizeof(why), "lzma_stream_buffer_decode returned %d", (int)r);
            session_fail(s, "decompression", input, why);
        }
        return outPos;
    }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    char* name;  /* as printed: "text/alice29.txt", "mix64" */
    int group;   /* index into the group names */
    uint8_t* data;
    size_t size;
    int isMix;   /* the large concatenation, where slow rows may be skipped */
} Input;

typedef struct {
    Input* items;
    int count, cap;
} InputList;

static void inputs_add(InputList* l, char* name, int group, uint8_t* data, size_t size, int isMix)
{
    if (l->count == l->cap) {
        Input* grown;
        l->cap = l->cap ? 2 * l->cap : 32;
        grown = (Input*)realloc(l->items, (size_t)l->cap * sizeof(Input));
        if (!grown) die("out of memory");
        l->items = grown;
    }
    l->items[l->count].name = name;
    l->items[l->count].group = group;
    l->items[l->count].data = data;
    l->items[l->count].size = size;
    l->items[l->count].isMix = isMix;
    l->count++;
}

static uint8_t* read_whole_file(const char* path, size_t* size)
{
    FILE* const f = fopen(path, "rb");
    uint8_t* buf;
    long n;
    if (!f) die("%s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        die("%s: cannot determine its size", path);
    buf = (uint8_t*)xmalloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) die("%s: read error", path);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static int cmp_str(const void* a, const void* b)
{
    return strcmp(*(const char* const*)a, *(const char* const*)b);
}

/* Appends the regular files of dir/sub, sorted by name, as group `group`.
 * Returns how many were found. */
static int load_folder(InputList* l, const char* dir, const char* sub, int group)
{
    char path[4096];
    DIR* d;
    struct dirent* e;
    char** names = NULL;
    int n = 0, cap = 0, i;

    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    d = opendir(path);
    if (!d) die("corpus folder %s: %s", path, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        char full[4096 + 256];
        struct stat st;
        if (e->d_name[0] == '.') continue;
        snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            char** grown;
            cap = cap ? 2 * cap : 16;
            grown = (char**)realloc(names, (size_t)cap * sizeof(char*));
            if (!grown) die("out of memory");
            names = grown;
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(char*), cmp_str);
    for (i = 0; i < n; i++) {
        char full[4096 + 256], shown[512];
        size_t size;
        uint8_t* data;
        snprintf(full, sizeof(full), "%s/%s", path, names[i]);
        snprintf(shown, sizeof(shown), "%s/%s", sub, names[i]);
        data = read_whole_file(full, &size);
        inputs_add(l, xstrdup(shown), group, data, size, 0);
        free(names[i]);
    }
    free(names);
    return n;
}

/* Fills `size` bytes by concatenating the pieces again and again, so that
 * the buffer mixes every kind of data and is large enough for the long
 * windows, the segmenting and the threads to matter. */
static uint8_t* make_mix(uint8_t* const* pieces, const size_t* sizes, int count, size_t size)
{
    uint8_t* const buf = (uint8_t*)xmalloc(size);
    size_t pos = 0, total = 0;
    int i;
    for (i = 0; i < count; i++) total += sizes[i];
    if (total == 0) die("cannot build the mix input: every file is empty");
    while (pos < size) {
        for (i = 0; i < count && pos < size; i++) {
            const size_t take = sizes[i] < size - pos ? sizes[i] : size - pos;
            memcpy(buf + pos, pieces[i], take);
            pos += take;
        }
    }
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Measuring one cell                                                       */
/* ------------------------------------------------------------------------ */

typedef struct {
    int done;            /* 0: skipped, printed "-" */
    size_t orig, comp;
    double ctime, dtime; /* best single run, seconds */
    int cruns, druns;
    size_t cpeak, dpeak; /* heap peak, glyd and zstd only */
} Cell;

typedef struct {
    double minTime;             /* per cell and direction, in one pass */
    uint8_t* cbuf; size_t ccap; /* compressed output, sized for the worst row */
    uint8_t* dbuf; size_t dcap; /* decompressed output */
} Bench;

static void report_mismatch(const RowSpec* spec, const Input* in, const uint8_t* out, size_t outSize)
{
    size_t i = 0;
    const size_t common = outSize < in->size ? outSize : in->size;
    while (i < common && out[i] == in->data[i]) i++;
    die("MISMATCH: %s %s on %s: decompressed %zu bytes (expected %zu), first difference at byte %zu",
        spec->codec, spec->label, in->name, outSize, in->size, i);
}

static void measure_cell(Bench* b, int r, const Input* in, Cell* cell)
{
    const RowSpec* const spec = &kRows[r];
    Session s;
    double start;
    size_t csize = 0;
    const size_t cap = row_bound(spec, in->size);

    if (cap > b->ccap) die("internal: compressed buffer too small for %s", in->name);
    memset(cell, 0, sizeof(*cell));
    cell->orig = in->size;

    /* compression: the first run also measures the context's heap, from
     * its creation, since a fresh context is what one compression costs */
    mem_reset_peak();
    session_open_compress(&s, spec);
    cell->ctime = INFINITY;
    start = bench_now_s();
    do {
        const double t0 = bench_now_s();
        const size_t got = session_compress(&s, b->cbuf, cap, in->data, in->size, in->name);
        const double t = bench_now_s() - t0;
        if (cell->cruns == 0) {
            csize = got;
            cell->cpeak = mem_peak();
        } else if (got != csize) {
            die("%s %s on %s: compressed size changed between runs (%zu then %zu): not deterministic",
                spec->codec, spec->label, in->name, csize, got);
        }
        if (t < cell->ctime) cell->ctime = t;
        cell->cruns++;
    } while (bench_now_s() - start < b->minTime);
    session_close(&s);
    cell->comp = csize;

    /* decompression, checked byte for byte on the first run (the output
     * buffer is poisoned first so that a short write cannot pass) */
    memset(b->dbuf, 0xA5, in->size + 1); /* dcap is at least size + 1 */
    mem_reset_peak();
    session_open_decompress(&s, spec);
    cell->dtime = INFINITY;
    start = bench_now_s();
    do {
        const double t0 = bench_now_s();
        const size_t got = session_decompress(&s, b->dbuf, b->dcap, b->cbuf, csize, in->name);
        const double t = bench_now_s() - t0;
        if (cell->druns == 0) {
            cell->dpeak = mem_peak();
            if (got != in->size || memcmp(b->dbuf, in->data, in->size) != 0)
                report_mismatch(spec, in, b->dbuf, got);
        }
        if (t < cell->dtime) cell->dtime = t;
        cell->druns++;
    } while (bench_now_s() - start < b->minTime);
    session_close(&s);
    if (mem_current() != 0)
        fprintf(stderr, "bench: warning: %s %s left %zu bytes allocated after freeing its contexts\n",
                spec->codec, spec->label, mem_current());
    cell->done = 1;
}

/* Measures a cell in one pass; later passes keep the fastest runs, and
 * check that the compressed size has not changed. */
static void bench_cell(Bench* b, int r, const Input* in, Cell* cell)
{
    Cell c;
    if (!cell->done) {
        measure_cell(b, r, in, cell);
        return;
    }
    measure_cell(b, r, in, &c);
    if (c.comp != cell->comp)
        die("%s %s on %s: compressed size changed between passes (%zu then %zu): not deterministic",
            kRows[r].codec, kRows[r].label, in->name, cell->comp, c.comp);
    if (c.ctime < cell->ctime) cell->ctime = c.ctime;
    if (c.dtime < cell->dtime) cell->dtime = c.dtime;
    cell->cruns += c.cruns;
    cell->druns += c.druns;
}

/* ------------------------------------------------------------------------ */
/* Totals and tables                                                        */
/* ------------------------------------------------------------------------ */

typedef struct {
    int done;
    double orig, comp, ctime, dtime;
} Total;

static double total_ratio(const Total* t) { return t->orig / t->comp; }
static double total_cspeed(const Total* t) { return t->orig / t->ctime / 1e6; }
static double total_dspeed(const Total* t) { return t->orig / t->dtime / 1e6; }

/* Sums row r over the inputs whose group is in [g0, g1]; not done if any
 * of them was skipped, or if there is none. */
static Total sum_row(const Cell* cells, const InputList* l, int r, int g0, int g1)
{
    Total t = { 1, 0, 0, 0, 0 };
    int i, any = 0;
    for (i = 0; i < l->count; i++) {
        const Cell* const c = &cells[(size_t)r * (size_t)l->count + (size_t)i];
        if (l->items[i].group < g0 || l->items[i].group > g1) continue;
        any = 1;
        if (!c->done) { t.done = 0; continue; }
        t.orig += (double)c->orig;
        t.comp += (double)c->comp;
        t.ctime += c->ctime;
        t.dtime += c->dtime;
    }
    if (!any) t.done = 0;
    return t;
}

static FILE* g_md; /* results.md while the tables are written, else NULL */

/* Prints to stdout and, when open, to results.md: the same tables in both. */
static void emit(const char* fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    vprintf(fmt, ap);
    if (g_md) vfprintf(g_md, fmt, ap2);
    va_end(ap2);
    va_end(ap);
}

static void format_bytes(char* buf, size_t cap, double v)
{
    snprintf(buf, cap, "%.0f", v);
}

static void print_group_table(const Cell* cells, const InputList* l, const int* enabled,
                              const char* title, int g0, int g1)
{
    int r, files = 0, i;
    double bytes = 0;
    char nb[32];
    for (i = 0; i < l->count; i++) {
        if (l->items[i].group < g0 || l->items[i].group > g1) continue;
        files++;
        bytes += (double)l->items[i].size;
    }
    if (files == 0) return;
    format_bytes(nb, sizeof(nb), bytes);
    emit("\n### %s (%d file%s, %s bytes)\n\n", title, files, files > 1 ? "s" : "", nb);
    emit("| codec | level | ratio | comp MB/s | decomp MB/s | reference | ratio vs ref | comp vs ref | decomp vs ref |\n");
    emit("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n");
    for (r = 0; r < NB_ROWS; r++) {
        Total t;
        int ref;
        if (!enabled[r]) continue;
        t = sum_row(cells, l, r, g0, g1);
        emit("| %s | %s |", kRows[r].codec, kRows[r].label);
        if (!t.done) { emit(" - | - | - | - | - | - | - |\n"); continue; }
        emit(" %.3f | %.1f | %.1f |", total_ratio(&t), total_cspeed(&t), total_dspeed(&t));
        ref = reference_row(r);
        if (ref >= 0 && enabled[ref]) {
            const Total rt = sum_row(cells, l, ref, g0, g1);
            char name[64];
            if (rt.done)
                emit(" %s | %.3f | %.2fx | %.2fx |\n", row_name(ref, name, sizeof(name)),
                     total_ratio(&t) / total_ratio(&rt), total_cspeed(&t) / total_cspeed(&rt),
                     total_dspeed(&t) / total_dspeed(&rt));
            else
                emit(" %s | - | - | - |\n", row_name(ref, name, sizeof(name)));
        } else {
            emit(" | | | |\n");
        }
    }
}

/* The memory table: for each glyd and zstd row, the cell on the mix input
 * when it ran, else on the largest file. */
static void print_memory_table(const Cell* cells, const InputList* l, const int* enabled)
{
    int r, i, largest = -1, mix = -1;
    for (i = 0; i < l->count; i++) {
        if (l->items[i].isMix) mix = i;
        else if (largest < 0 || l->items[i].size > l->items[largest].size) largest = i;
    }
    emit("\n### Peak heap of one compression / decompression\n\n");
    emit("Heap held by the library (context creation included, counted through its custom allocator);\n");
    emit("the caller's source and destination buffers are not included.\n\n");
    emit("| codec | level | input | compress peak MiB | decompress peak MiB |\n");
    emit("| --- | --- | --- | ---: | ---: |\n");
    for (r = 0; r < NB_ROWS; r++) {
        const Cell* c = NULL;
        int at = -1;
        if (!enabled[r] || (kRows[r].id != C_GLYD && kRows[r].id != C_ZSTD)) continue;
        if (mix >= 0 && cells[(size_t)r * (size_t)l->count + (size_t)mix].done) at = mix;
        else if (largest >= 0) at = largest;
        if (at >= 0) c = &cells[(size_t)r * (size_t)l->count + (size_t)at];
        if (!c || !c->done) {
            emit("| %s | %s | - | - | - |\n", kRows[r].codec, kRows[r].label);
            continue;
        }
        emit("| %s | %s | %s | %.2f | %.2f |\n", kRows[r].codec, kRows[r].label,
             l->items[at].name, (double)c->cpeak / MiB, (double)c->dpeak / MiB);
    }
}

/* ------------------------------------------------------------------------ */
/* Threads test                                                             */
/* ------------------------------------------------------------------------ */

typedef struct {
    int done;
    size_t bigSize, frameT1, frameT2;
    unsigned long long segments;
    unsigned segmentLog;
    double cT1, cT2, dT0, dT2;             /* best seconds */
    size_t cT1peak, cT2peak, dT0peak, dT2peak;
} ThreadsResult;

static double time_glyd_compress(glyd_CCtx* cctx, uint8_t* dst, size_t cap, const uint8_t* src,
                                 size_t n, double minTime, size_t* frame, size_t* peak)
{
    double best = INFINITY;
    const double start = bench_now_s();
    int runs = 0;
    do {
        const double t0 = bench_now_s();
        const size_t r = glyd_compress2(cctx, dst, cap, src, n);
        const double t = bench_now_s() - t0;
        if (glyd_isError(r)) die("threads test: compression failed: %s", glyd_getErrorName(r));
        if (runs == 0) { *frame = r; *peak = mem_peak(); }
        if (t < best) best = t;
        runs++;
    } while (bench_now_s() - start < minTime);
    return best;
}

static double time_glyd_decompress(int workers, uint8_t* dst, const uint8_t* frame, size_t frameSize,
                                   const uint8_t* orig, size_t n, double minTime, size_t* peak)
{
    double best = INFINITY;
    double start;
    int runs = 0;
    size_t e;
    glyd_DCtx* dctx;
    mem_reset_peak();
    dctx = glyd_createDCtx_advanced(glyd_counting_mem());
    if (!dctx) die("glyd_createDCtx_advanced failed");
    e = glyd_DCtx_setParameter(dctx, glyd_d_nbWorkers, workers);
    if (glyd_isError(e)) die("threads test: glyd_d_nbWorkers=%d: %s", workers, glyd_getErrorName(e));
    memset(dst, 0xA5, n);
    start = bench_now_s();
    do {
        const double t0 = bench_now_s();
        const size_t r = glyd_decompressDCtx(dctx, dst, n, frame, frameSize);
        const double t = bench_now_s() - t0;
        if (glyd_isError(r))
            die("threads test: decompression with %d workers failed: %s", workers, glyd_getErrorName(r));
        if (runs == 0) {
            *peak = mem_peak();
            if (r != n || memcmp(dst, orig, n) != 0)
                die("MISMATCH: threads test: glyd 3 decompressed with %d workers differs from the input "
                    "(%zu bytes out, %zu expected)", workers, r, n);
        }
        if (t < best) best = t;
        runs++;
    } while (bench_now_s() - start < minTime);
    glyd_freeDCtx(dctx);
    return best;
}

static glyd_CCtx* threads_cctx(int workers)
{
    glyd_CCtx* const c = glyd_createCCtx_advanced(glyd_counting_mem());
    size_t e;
    if (!c) die("glyd_createCCtx_advanced failed");
    e = glyd_CCtx_setParameter(c, glyd_c_compressionLevel, 3);
    if (!glyd_isError(e)) e = glyd_CCtx_setParameter(c, glyd_c_nbWorkers, workers);
    if (glyd_isError(e)) die("threads test: glyd_c_nbWorkers=%d: %s", workers, glyd_getErrorName(e));
    return c;
}

/* glyd level 3 on 4 copies of the mix: compressed on 1 and 2 threads, the
 * two-thread frame decompressed on 1 and 2 threads. Its segments are what
 * lets the decoder split the work, so their count is reported too. */
static void run_threads_test(const Input* mix, double minTime, ThreadsResult* t)
{
    const size_t n = 4 * mix->size;
    uint8_t* const big = (uint8_t*)xmalloc(n);
    const size_t cap = glyd_compressBound(n);
    uint8_t* const frame = (uint8_t*)xmalloc(cap);
    uint8_t* const out = (uint8_t*)xmalloc(n);
    glyd_frameInfo info;
    glyd_CCtx* cctx;
    size_t i, r;

    memset(t, 0, sizeof(*t));
    for (i = 0; i < 4; i++) memcpy(big + i * mix->size, mix->data, mix->size);
    t->bigSize = n;
    memset(frame, 0, cap); /* fault the pages in before timing */
    memset(out, 0, n);

    fprintf(stderr, "threads: glyd 3 -T1 compression of %zu MiB\n", n >> 20);
    mem_reset_peak();
    cctx = threads_cctx(0);
    t->cT1 = time_glyd_compress(cctx, frame, cap, big, n, minTime, &t->frameT1, &t->cT1peak);
    glyd_freeCCtx(cctx);

    fprintf(stderr, "threads: glyd 3 -T2 compression\n");
    mem_reset_peak();
    cctx = threads_cctx(2);
    t->cT2 = time_glyd_compress(cctx, frame, cap, big, n, minTime, &t->frameT2, &t->cT2peak);
    glyd_freeCCtx(cctx);

    r = glyd_getFrameInfo(&info, frame, t->frameT2);
    if (glyd_isError(r)) die("threads test: glyd_getFrameInfo: %s", glyd_getErrorName(r));
    t->segments = info.nbSegments;
    t->segmentLog = info.segmentLog;

    fprintf(stderr, "threads: decompression, 0 then 2 workers\n");
    t->dT0 = time_glyd_decompress(0, out, frame, t->frameT2, big, n, minTime, &t->dT0peak);
    t->dT2 = time_glyd_decompress(2, out, frame, t->frameT2, big, n, minTime, &t->dT2peak);
    t->done = 1;
    free(big);
    free(frame);
    free(out);
}

static void print_threads_table(const ThreadsResult* t, const char* mixName)
{
    const double n = (double)t->bigSize;
    if (!t->done) return;
    emit("\n### Threads: glyd 3 on a %zu MiB buffer (4x %s)\n\n", t->bigSize >> 20, mixName);
    emit("Frame written with -T2: %zu bytes (ratio %.3f), %llu segment%s (segmentLog %u); "
         "with -T1: %zu bytes.\n\n", t->frameT2, n / (double)t->frameT2, t->segments,
         t->segments == 1 ? "" : "s", t->segmentLog, t->frameT1);
    emit("| operation | MB/s | speedup vs 1 thread | heap peak MiB |\n");
    emit("| --- | ---: | ---: | ---: |\n");
    emit("| compress -T1 | %.1f | 1.00x | %.2f |\n", n / t->cT1 / 1e6, (double)t->cT1peak / MiB);
    emit("| compress -T2 | %.1f | %.2fx | %.2f |\n", n / t->cT2 / 1e6, t->cT1 / t->cT2,
         (double)t->cT2peak / MiB);
    emit("| decompress (nbWorkers 0) | %.1f | 1.00x | %.2f |\n", n / t->dT0 / 1e6,
         (double)t->dT0peak / MiB);
    emit("| decompress -T2 (nbWorkers 2) | %.1f | %.2fx | %.2f |\n", n / t->dT2 / 1e6,
         t->dT0 / t->dT2, (double)t->dT2peak / MiB);
}

/* ------------------------------------------------------------------------ */
/* Output files                                                             */
/* ------------------------------------------------------------------------ */

/* mkdir -p: the out folder may be nested and may already exist. */
static void make_dirs(const char* path)
{
    char buf[4096];
    size_t i, n = strlen(path);
    if (n >= sizeof(buf)) die("--out path too long");
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            const char saved = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                die("cannot create %s: %s", buf, strerror(errno));
            buf[i] = saved;
        }
    }
}

static void write_csv(const char* outDir, const Cell* cells, const InputList* l, const int* enabled)
{
    char path[4200];
    FILE* f;
    int r, i;
    snprintf(path, sizeof(path), "%s/results.csv", outDir);
    f = fopen(path, "w");
    if (!f) die("%s: %s", path, strerror(errno));
    fprintf(f, "codec,level,input,bytes,compressed,ratio,comp_MBps,decomp_MBps,comp_runs,decomp_runs,"
               "comp_heap_peak,decomp_heap_peak\n");
    for (r = 0; r < NB_ROWS; r++) {
        if (!enabled[r]) continue;
        for (i = 0; i < l->count; i++) {
            const Cell* const c = &cells[(size_t)r * (size_t)l->count + (size_t)i];
            if (!c->done) continue;
            fprintf(f, "%s,%s,%s,%zu,%zu,%.4f,%.2f,%.2f,%d,%d,%zu,%zu\n", kRows[r].codec,
                    kRows[r].label, l->items[i].name, c->orig, c->comp,
                    (double)c->orig / (double)c->comp, (double)c->orig / c->ctime / 1e6,
                    (double)c->orig / c->dtime / 1e6, c->cruns, c->druns, c->cpeak, c->dpeak);
        }
    }
    fclose(f);
}

/* Quotes a path for sh: inside single quotes only the quote itself needs care. */
static void shell_quote(char* dst, size_t cap, const char* s)
{
    size_t o = 0;
    if (cap < 3) die("internal: quote buffer");
    dst[o++] = '\'';
    for (; *s && o + 5 < cap; s++) {
        if (*s == '\'') { memcpy(dst + o, "'\\''", 4); o += 4; }
        else dst[o++] = *s;
    }
    dst[o++] = '\'';
    dst[o] = '\0';
}

/* The plot's geometry, fixed in the script so that label positions can be
 * worked out here in pixels: gnuplot itself does not move labels apart. */
#define PLOT_W 1200
#define PLOT_H 800
#define PLOT_LEFT 0.08  /* plot area, as fractions of the image */
#define PLOT_RIGHT 0.86
#define PLOT_BOTTOM 0.10
#define PLOT_TOP 0.92
#define CHAR_W 7.5      /* pixels per character at font size 11, roughly */
#define CHAR_H 15.0

typedef struct {
    char label[64];
    int block;          /* codec index, for the colour */
    double x, y;        /* decompression MB/s, ratio */
    double cspeed;
    double px, py;      /* point, in pixels from the plot's lower left corner */
    double lx, ly;      /* label's left end, in data coordinates */
} PlotPoint;

typedef struct { double x0, y0, x1, y1; } Box;

static int boxes_overlap(Box a, Box b)
{
    return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/* Places each label next to its point, at the first of a few candidate
 * spots that covers no other point and no label already placed. */
static void place_labels(PlotPoint* pts, int n, double lmin, double lmax, double ymin, double ymax)
{
    static const double kSpots[][2] = { /* label centre offset, in pixels; x < 0: left side */
        { 9, 0 }, { 9, 13 }, { 9, -13 }, { -9, 0 }, { -9, 13 }, { -9, -13 }, { 9, 26 }, { 9, -26 },
        { -9, 26 }, { -9, -26 } };
    const int nbSpots = (int)(sizeof(kSpots) / sizeof(kSpots[0]));
    const double w = (PLOT_RIGHT - PLOT_LEFT) * PLOT_W, h = (PLOT_TOP - PLOT_BOTTOM) * PLOT_H;
    Box* const placed = (Box*)xmalloc((size_t)n * sizeof(Box));
    int i, j, k;

    for (i = 0; i < n; i++) {
        pts[i].px = (log10(pts[i].x) - lmin) / (lmax - lmin) * w;
        pts[i].py = (pts[i].y - ymin) / (ymax - ymin) * h;
    }
    for (i = 0; i < n; i++) {
        const double len = (double)strlen(pts[i].label) * CHAR_W;
        Box best = { 0, 0, 0, 0 };
        for (k = 0; k < nbSpots; k++) {
            Box b;
            int clear = 1;
            b.x0 = kSpots[k][0] > 0 ? pts[i].px + kSpots[k][0] : pts[i].px + kSpots[k][0] - len;
            b.x1 = b.x0 + len;
            b.y0 = pts[i].py + kSpots[k][1] - CHAR_H / 2;
            b.y1 = b.y0 + CHAR_H;
            if (k == 0) best = b;
            if (b.x0 < 0 || b.x1 > w || b.y0 < 0 || b.y1 > h) clear = 0;
            for (j = 0; j < n && clear; j++) {
                const Box dot = { pts[j].px - 6, pts[j].py - 6, pts[j].px + 6, pts[j].py + 6 };
                if (boxes_overlap(b, dot)) clear = 0;
            }
            for (j = 0; j < i && clear; j++)
                if (boxes_overlap(b, placed[j])) clear = 0;
            if (clear) { best = b; break; }
        }
        placed[i] = best;
        pts[i].lx = pow(10.0, lmin + best.x0 / w * (lmax - lmin));
        pts[i].ly = ymin + (best.y0 + CHAR_H / 2) / h * (ymax - ymin);
    }
    free(placed);
}

/* Writes the data and script for the ratio / decompression-speed plot of
 * the totals over groups [g0, g1], then runs gnuplot on them. One data
 * block per codec, so each codec gets its own colour and key entry. */
static void write_plot(const char* outDir, const Cell* cells, const InputList* l,
                       const int* enabled, int g0, int g1, const char* what)
{
    /* fixed dark colours: gnuplot's default yellow is unreadable as text */
    static const char* const kColours[] = { "#d62728", "#1f77b4", "#2ca02c",
                                            "#9467bd", "#ff7f0e", "#8c564b" };
    char path[4200], qdir[8600], cmd[9000];
    FILE* f;
    int r, block, i, n = 0, nbCodecs = 0;
    const char* codecs[NB_ROWS];
    PlotPoint pts[NB_ROWS];
    double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0, lmin, lmax, ymin, ymax, span;

    for (r = 0; r < NB_ROWS; r++) {
        int seen = -1;
        Total t;
        if (!enabled[r]) continue;
        for (i = 0; i < nbCodecs; i++) if (strcmp(codecs[i], kRows[r].codec) == 0) seen = i;
        if (seen < 0) { seen = nbCodecs; codecs[nbCodecs++] = kRows[r].codec; }
        t = sum_row(cells, l, r, g0, g1);
        if (!t.done) continue;
        row_name(r, pts[n].label, sizeof(pts[n].label));
        pts[n].block = seen;
        pts[n].x = total_dspeed(&t);
        pts[n].y = total_ratio(&t);
        pts[n].cspeed = total_cspeed(&t);
        if (pts[n].x < xlo) xlo = pts[n].x;
        if (pts[n].x > xhi) xhi = pts[n].x;
        if (pts[n].y < ylo) ylo = pts[n].y;
        if (pts[n].y > yhi) yhi = pts[n].y;
        n++;
    }
    if (n == 0) return;

    /* ranges with room for the labels, mostly on the right */
    span = log10(xhi) - log10(xlo);
    if (span < 0.5) span = 0.5;
    lmin = log10(xlo) - 0.08 * span;
    lmax = log10(xhi) + 0.22 * span;
    span = yhi - ylo;
    if (span <= 0) span = 1;
    ymin = ylo - 0.08 * span;
    ymax = yhi + 0.08 * span;
    place_labels(pts, n, lmin, lmax, ymin, ymax);

    snprintf(path, sizeof(path), "%s/ratio_vs_decomp.dat", outDir);
    f = fopen(path, "w");
    if (!f) die("%s: %s", path, strerror(errno));
    fprintf(f, "# totals over %s\n# label decomp_MBps ratio comp_MBps label_x label_y\n", what);
    for (block = 0; block < nbCodecs; block++) {
        fprintf(f, "%s# %s\n", block ? "\n\n" : "", codecs[block]);
        for (i = 0; i < n; i++)
            if (pts[i].block == block)
                fprintf(f, "\"%s\" %.2f %.4f %.2f %.4f %.4f\n", pts[i].label, pts[i].x, pts[i].y,
                        pts[i].cspeed, pts[i].lx, pts[i].ly);
    }
    fclose(f);

    snprintf(path, sizeof(path), "%s/plot.gp", outDir);
    f = fopen(path, "w");
    if (!f) die("%s: %s", path, strerror(errno));
    fprintf(f, "# plot.gp: written by bench/bench.c; run with `gnuplot plot.gp` in this folder.\n");
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
               "    set terminal pngcairo size %d,%d noenhanced font \",11\"\n"
               "} else {\n"
               "    set terminal png size %d,%d noenhanced\n"
               "}\n", PLOT_W, PLOT_H, PLOT_W, PLOT_H);
    fprintf(f, "set output 'ratio_vs_decomp.png'\n");
    fprintf(f, "set title 'Compression ratio vs decompression speed (totals over %s)'\n", what);
    fprintf(f, "set lmargin at screen %.2f\nset rmargin at screen %.2f\n", PLOT_LEFT, PLOT_RIGHT);
    fprintf(f, "set bmargin at screen %.2f\nset tmargin at screen %.2f\n", PLOT_BOTTOM, PLOT_TOP);
    fprintf(f, "set logscale x\n");
    fprintf(f, "set xrange [%.4f:%.4f]\nset yrange [%.4f:%.4f]\n",
            pow(10.0, lmin), pow(10.0, lmax), ymin, ymax);
    fprintf(f, "set xlabel 'decompression speed, MB/s (log scale)'\n");
    fprintf(f, "set ylabel 'compression ratio'\n");
    fprintf(f, "set grid\n");
    fprintf(f, "set key at screen 0.99, screen %.2f right top\n", PLOT_TOP);
    fprintf(f, "plot \\\n");
    for (block = 0; block < nbCodecs; block++) {
        const char* const colour = kColours[block % 6];
        fprintf(f, "  'ratio_vs_decomp.dat' index %d using 2:3 with points pt 7 ps 1.6 lc rgb '%s' "
                   "title '%s', \\\n", block, colour, codecs[block]);
        fprintf(f, "  'ratio_vs_decomp.dat' index %d using 5:6:1 with labels left tc rgb '%s' "
                   "notitle%s\n", block, colour, block + 1 < nbCodecs ? ", \\" : "");
    }
    fclose(f);

    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "bench: warning: gnuplot not found; %s/plot.gp was written but not run\n", outDir);
        return;
    }
    shell_quote(qdir, sizeof(qdir), outDir);
    snprintf(cmd, sizeof(cmd), "cd %s && gnuplot plot.gp", qdir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: warning: gnuplot failed; see %s/plot.gp\n", outDir);
    else
        fprintf(stderr, "plot: %s/ratio_vs_decomp.png\n", outDir);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(FILE* f)
{
    fprintf(f,
        "Usage: build/bench [OPTIONS]\n"
        "Benchmarks glyd, zstd, lz4, snappy, brotli and xz through their libraries.\n\n"
        "  --corpus DIR    corpus root with text/ logs/ tables/ bin/ (and delta/ for the mix)\n"
        "                  (default ../shared/corpus, relative to the current folder)\n"
        "  --files F...    bench these files instead of the corpus folders\n"
        "  --out DIR       where results.md, results.csv and the plot go (default bench/out)\n"
        "  --quick         smoke test: a few levels, short timing, 8 MiB mix\n"
        "  --full          also run the slow levels on the mix input\n"
        "  --time S        minimum timing per cell in seconds (default 0.3; --quick 0.02)\n"
        "  --rounds N      passes the time is spread over (default 3; --quick 1)\n"
        "  --mix MIB       size of the mix input in MiB (default 64; 0 = no mix, no threads test)\n"
        "  --no-threads    skip the threads test\n"
        "  -h, --help      this help\n");
}

static int is_dir(const char* p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char** argv)
{
    static const char* const kGroups[] = { "text", "logs", "tables", "bin" };
    const char* corpus = "../shared/corpus";
    const char* outDir = "bench/out";
    const char** files = NULL;
    int nbFiles = 0, quick = 0, full = 0, threads = 1, mixMiB = -1, rounds = -1, pass, i, r, nbGroups;
    double minTime = -1;
    const char* groupNames[8];
    InputList inputs = { NULL, 0, 0 };
    int enabled[NB_ROWS];
    Cell* cells;
    Bench b;
    ThreadsResult tres;
    const Input* mix = NULL;
    size_t maxSize = 0;
    double t0, loadStart[1], loadEnd[1];
    char mixName[32], mdPath[4200];
    struct utsname un;

    for (i = 1; i < argc; i++) {
        const char* const a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--quick")) quick = 1;
        else if (!strcmp(a, "--full")) full = 1;
        else if (!strcmp(a, "--no-threads")) threads = 0;
        else if (!strcmp(a, "--corpus") && i + 1 < argc) corpus = argv[++i];
        else if (!strcmp(a, "--out") && i + 1 < argc) outDir = argv[++i];
        else if (!strcmp(a, "--time") && i + 1 < argc) {
            char* end;
            minTime = strtod(argv[++i], &end);
            if (*end || minTime < 0 || minTime > 60) die("--time: expected seconds in 0..60, got %s", argv[i]);
        } else if (!strcmp(a, "--rounds") && i + 1 < argc) {
            char* end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100) die("--rounds: expected 1..100, got %s", argv[i]);
            rounds = (int)v;
        } else if (!strcmp(a, "--mix") && i + 1 < argc) {
            char* end;
            const long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 1024) die("--mix: expected MiB in 0..1024, got %s", argv[i]);
            mixMiB = (int)v;
        } else if (!strcmp(a, "--files")) {
            files = (const char**)(argv + i + 1);
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) { i++; nbFiles++; }
            if (nbFiles == 0) die("--files: name at least one file");
        } else {
            fprintf(stderr, "bench: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (minTime < 0) minTime = quick ? 0.02 : 0.3;
    if (rounds < 0) rounds = quick ? 1 : 3;
    if (mixMiB < 0) mixMiB = quick ? 8 : 64;
    for (r = 0; r < NB_ROWS; r++) enabled[r] = !quick || kRows[r].quick;

    /* inputs: one group per corpus folder, or one group for --files */
    if (nbFiles > 0) {
        groupNames[0] = "files";
        nbGroups = 1;
        for (i = 0; i < nbFiles; i++) {
            size_t size;
            uint8_t* const data = read_whole_file(files[i], &size);
            inputs_add(&inputs, xstrdup(files[i]), 0, data, size, 0);
        }
    } else {
        if (!is_dir(corpus))
            die("corpus folder %s not found (run from the repository root, or pass --corpus DIR)", corpus);
        nbGroups = 4;
        for (i = 0; i < nbGroups; i++) {
            groupNames[i] = kGroups[i];
            if (load_folder(&inputs, corpus, kGroups[i], i) == 0)
                die("corpus folder %s/%s holds no file", corpus, kGroups[i]);
        }
    }

    /* the mix: every input file, plus delta/ when benching the corpus */
    snprintf(mixName, sizeof(mixName), "mix%d", mixMiB);
    if (mixMiB > 0) {
        const int nbBase = inputs.count;
        InputList delta = { NULL, 0, 0 };
        uint8_t** pieces;
        size_t* sizes;
        int n = 0;
        char deltaPath[4200];
        snprintf(deltaPath, sizeof(deltaPath), "%s/delta", corpus);
        if (nbFiles == 0 && is_dir(deltaPath)) load_folder(&delta, corpus, "delta", 0);
        pieces = (uint8_t**)xmalloc((size_t)(nbBase + delta.count) * sizeof(uint8_t*));
        sizes = (size_t*)xmalloc((size_t)(nbBase + delta.count) * sizeof(size_t));
        for (i = 0; i < nbBase; i++) { pieces[n] = inputs.items[i].data; sizes[n++] = inputs.items[i].size; }
        for (i = 0; i < delta.count; i++) { pieces[n] = delta.items[i].data; sizes[n++] = delta.items[i].size; }
        groupNames[nbGroups] = mixName;
        inputs_add(&inputs, xstrdup(mixName), nbGroups,
                   make_mix(pieces, sizes, n, (size_t)mixMiB << 20), (size_t)mixMiB << 20, 1);
        mix = &inputs.items[inputs.count - 1];
        for (i = 0; i < delta.count; i++) { free(delta.items[i].name); free(delta.items[i].data); }
        free(delta.items);
        free(pieces);
        free(sizes);
    }

    /* one pair of buffers for every cell, sized for the worst codec on the
     * largest input, and touched once so that page faults are not timed */
    for (i = 0; i < inputs.count; i++) if (inputs.items[i].size > maxSize) maxSize = inputs.items[i].size;
    b.minTime = minTime;
    b.ccap = 0;
    for (r = 0; r < NB_ROWS; r++) {
        const size_t bound = row_bound(&kRows[r], maxSize);
        if (bound > b.ccap) b.ccap = bound;
    }
    b.dcap = maxSize + 1;
    b.cbuf = (uint8_t*)xmalloc(b.ccap);
    b.dbuf = (uint8_t*)xmalloc(b.dcap);
    memset(b.cbuf, 0, b.ccap);
    memset(b.dbuf, 0, b.dcap);

    make_dirs(outDir);
    cells = (Cell*)calloc((size_t)NB_ROWS * (size_t)inputs.count, sizeof(Cell));
    if (!cells) die("out of memory");

    for (r = 0, i = 0; r < NB_ROWS; r++) i += enabled[r];
    fprintf(stderr, "bench: %d inputs, %d rows, at least %.2f s per measurement%s\n",
            inputs.count, i, minTime, full ? ", slow levels on the mix too" : "");
    /* timings on a shared machine are only as good as its idleness: keep
     * the load seen before and after, so that a noisy run can be told */
    if (getloadavg(loadStart, 1) != 1) loadStart[0] = -1;
    if (loadStart[0] > 0.8)
        fprintf(stderr, "bench: warning: load average %.2f before starting; timings may be noisy\n",
                loadStart[0]);
    t0 = bench_now_s();
    for (pass = 0; pass < rounds; pass++) {
        if (rounds > 1) fprintf(stderr, "pass %d of %d\n", pass + 1, rounds);
        for (r = 0; r < NB_ROWS; r++) {
            char name[64];
            double rowStart;
            if (!enabled[r] || (pass > 0 && kRows[r].slow)) continue;
            /* the slow rows get the whole time in their one pass */
            b.minTime = kRows[r].slow ? minTime : minTime / rounds;
            rowStart = bench_now_s();
            fprintf(stderr, "%-20s", row_name(r, name, sizeof(name)));
            for (i = 0; i < inputs.count; i++) {
                const Input* const in = &inputs.items[i];
                if (in->isMix && kRows[r].slow && !full) continue;
                bench_cell(&b, r, in, &cells[(size_t)r * (size_t)inputs.count + (size_t)i]);
            }
            fprintf(stderr, " %7.1f s\n", bench_now_s() - rowStart);
        }
    }
    if (threads && mix) run_threads_test(mix, minTime, &tres);
    else tres.done = 0;

    /* tables: stdout and results.md carry the same text */
    snprintf(mdPath, sizeof(mdPath), "%s/results.md", outDir);
    g_md = fopen(mdPath, "w");
    if (!g_md) die("%s: %s", mdPath, strerror(errno));
    if (uname(&un) != 0) memset(&un, 0, sizeof(un));
    emit("## Glyd benchmark\n\n");
    emit("glyd %s, zstd %s, lz4 %s, brotli %u.%u.%u, xz %s, snappy (no version API); %s %s.\n",
         glyd_versionString(), ZSTD_versionString(), LZ4_versionString(),
         BrotliEncoderVersion() >> 24, (BrotliEncoderVersion() >> 12) & 0xFFF,
         BrotliEncoderVersion() & 0xFFF, lzma_version_string(), un.sysname, un.machine);
    emit("One thread; best of repeated runs (at least %.2f s per input and direction, spread over "
         "%d pass%s over the rows; slow rows in the first only); "
         "MB/s = 10^6 bytes of original data per second; totals = sum of original bytes / sum of "
         "compressed bytes and / sum of best times. \"-\": skipped (slow level on the mix input; "
         "--full runs it). zstd and glyd write a checksum, xz a CRC64.\n", minTime, rounds,
         rounds > 1 ? "es" : "");
    for (i = 0; i < nbGroups; i++) print_group_table(cells, &inputs, enabled, groupNames[i], i, i);
    if (nbGroups > 1) print_group_table(cells, &inputs, enabled, "all four (text + logs + tables + bin)",
                                        0, nbGroups - 1);
    if (mix) print_group_table(cells, &inputs, enabled, mixName, nbGroups, nbGroups);
    print_memory_table(cells, &inputs, enabled);
    print_threads_table(&tres, mixName);
    if (getloadavg(loadEnd, 1) != 1) loadEnd[0] = -1;
    emit("\nTotal run time: %.0f s; 1-minute load average %.2f before, %.2f after (the benchmark "
         "itself adds about 1, 2 during the threads test; more means other work shared the machine).\n",
         bench_now_s() - t0, loadStart[0], loadEnd[0]);
    fclose(g_md);
    g_md = NULL;

    fflush(stdout); /* the tables before gnuplot's and our own messages */
    write_csv(outDir, cells, &inputs, enabled);
    write_plot(outDir, cells, &inputs, enabled, 0, nbGroups - 1,
               nbGroups > 1 ? "text, logs, tables, bin" : "the files");
    fprintf(stderr, "tables: %s (per input: %s/results.csv)\n", mdPath, outDir);

    for (i = 0; i < inputs.count; i++) { free(inputs.items[i].name); free(inputs.items[i].data); }
    free(inputs.items);
    free(cells);
    free(b.cbuf);
    free(b.dbuf);
    return 0;
}

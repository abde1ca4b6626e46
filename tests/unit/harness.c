/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.c: the test runner: registry, failure reporting, test data. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glyd.h"
#include "harness.h"

#define MAX_TESTS 512

static struct { const char* name; test_fn fn; int slow; } g_tests[MAX_TESTS];
static int g_nbTests;
static int g_failures; /* in the running test */

void harness_register(const char* name, test_fn fn, int slow)
{
    if (g_nbTests < MAX_TESTS) {
        g_tests[g_nbTests].name = name;
        g_tests[g_nbTests].fn = fn;
        g_tests[g_nbTests].slow = slow;
        g_nbTests++;
    }
}

void harness_fail(const char* file, int line, const char* what)
{
    if (g_failures < 10) fprintf(stderr, "    %s:%d: check failed: %s\n", file, line, what);
    g_failures++;
}

int harness_quick(void) { return getenv("GLYD_TEST_QUICK") != NULL; }

const char* corpus_dir(void)
{
    const char* const env = getenv("GLYD_CORPUS");
    return env ? env : "../shared/corpus";
}

uint8_t* read_file(const char* path, size_t* size)
{
    FILE* const f = fopen(path, "rb");
    uint8_t* buf = NULL;
    long n;
    if (!f) {
        fprintf(stderr, "    cannot open %s\n", path);
        harness_fail(__FILE__, __LINE__, "read_file");
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = (uint8_t*)malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *size = (size_t)n;
    }
    fclose(f);
    if (!buf) harness_fail(__FILE__, __LINE__, "read_file");
    return buf;
}

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

int corpus_files(const char* folder, char** paths, int max)
{
    char dir[1024];
    DIR* d;
    struct dirent* e;
    int n = 0;
    snprintf(dir, sizeof dir, "%s/%s", corpus_dir(), folder);
    d = opendir(dir);
    if (!d) {
        fprintf(stderr, "    corpus folder %s is missing\n", dir);
        harness_fail(__FILE__, __LINE__, "corpus_files");
        return 0;
    }
    while ((e = readdir(d)) != NULL && n < max) {
        size_t const len = strlen(dir) + strlen(e->d_name) + 2;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        paths[n] = (char*)malloc(len);
        snprintf(paths[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof(char*), cmp_str);
    return n;
}

uint64_t rng_next(test_rng* r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

void rng_fill(test_rng* r, uint8_t* dst, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) dst[i] = (uint8_t)(rng_next(r) >> 32);
}

int main(int argc, char** argv)
{
    int i, passed = 0, failed = 0, skipped = 0;
    int const quick = harness_quick();
    for (i = 0; i < g_nbTests; i++) {
        struct timespec t0, t1;
        int j, selected = argc < 2;
        for (j = 1; j < argc; j++)
            if (strstr(g_tests[i].name, argv[j])) selected = 1;
        if (!selected) continue;
        if (quick && g_tests[i].slow) {
            printf("skip %s (GLYD_TEST_QUICK)\n", g_tests[i].name);
            skipped++;
            continue;
        }
        g_failures = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        g_tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%s %s (%.2fs)\n", g_failures ? "FAIL" : "ok  ", g_tests[i].name,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
        fflush(stdout);
        if (g_failures) failed++;
        else passed++;
    }
    printf("%d passed, %d failed", passed, failed);
    if (skipped) printf(", %d skipped", skipped);
    printf("\n");
    return failed ? 1 : 0;
}

uint8_t* test_compress(const uint8_t* src, size_t n, int level, int workers, int segLog, int blockLog,
                       size_t* outSize)
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t const cap = glyd_compressBound(n);
    uint8_t* const dst = (uint8_t*)malloc(cap);
    size_t r;
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level));
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_nbWorkers, workers));
    if (segLog) CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_segmentLog, segLog));
    if (blockLog) CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_blockLog, blockLog));
    r = glyd_compress2(c, dst, cap, src, n);
    CHECK_OK(r);
    CHECK(glyd_isError(r) || r <= GLYD_COMPRESSBOUND(n));
    glyd_freeCCtx(c);
    *outSize = glyd_isError(r) ? 0 : r;
    return dst;
}

/* A bf16 copy of the stories260K fixture's tensors, concatenated. */
uint8_t* fixture_bf16(size_t* nbElements)
{
    char path[1024];
    size_t size, i;
    uint8_t* data;
    uint64_t hdr;
    snprintf(path, sizeof path, "%s/../fixtures/stories260K/model.safetensors", corpus_dir());
    data = read_file(path, &size);
    if (!data) return NULL;
    for (hdr = 0, i = 8; i-- > 0;) hdr = hdr << 8 | data[i]; /* little-endian header length */
    *nbElements = (size - 8 - (size_t)hdr) / 2;
    memmove(data, data + 8 + hdr, *nbElements * 2);
    return data;
}

/* Decodes hostile bytes one-shot and streaming: an error, or exactly the
 * original content, is all that may come out. */
int decode_survives(const uint8_t* bytes, size_t size, const uint8_t* orig, size_t n)
{
    uint8_t* const out = (uint8_t*)malloc(n + 64);
    glyd_DCtx* const d = glyd_createDCtx();
    size_t r = glyd_decompressDCtx(d, out, n + 64, bytes, size);
    int ok = glyd_isError(r) || (r == n && memcmp(out, orig, n) == 0);
    {
        glyd_inBuffer ib = { bytes, size, 0 };
        size_t produced = 0;
        int steps = 0;
        glyd_DCtx_reset(d, glyd_reset_session_only);
        for (;;) {
            glyd_outBuffer ob = { out + produced, (n + 64 - produced < 997 ? n + 64 - produced : 997), 0 };
            r = glyd_decompressStream(d, &ob, &ib);
            produced += ob.pos;
            if (glyd_isError(r) || ++steps > 100000) break;
            if (ib.pos == ib.size && ob.pos < ob.size) break;
        }
        if (!glyd_isError(r) && r == 0 && !(produced == n && memcmp(out, orig, n) == 0)) ok = 0;
    }
    free(out);
    glyd_freeDCtx(d);
    return ok;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * harness.h: a minimal test harness. TEST(name) defines and registers a
 * test; CHECK* record failures without stopping the test. The runner prints
 * one line per test and closes with "N passed, N failed".
 */
#ifndef GLYD_TEST_HARNESS_H
#define GLYD_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*test_fn)(void);

void harness_register(const char* name, test_fn fn, int slow);
void harness_fail(const char* file, int line, const char* what);
int harness_quick(void); /* GLYD_TEST_QUICK set: shrink the heaviest tests */

#define TEST_(name, slow)                                                          \
    static void name(void);                                                        \
    __attribute__((constructor)) static void register_##name(void)                 \
    {                                                                              \
        harness_register(#name, name, slow);                                       \
    }                                                                              \
    static void name(void)
#define TEST(name) TEST_(name, 0)
#define TEST_SLOW(name) TEST_(name, 1)

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) harness_fail(__FILE__, __LINE__, #cond);                      \
    } while (0)

/* For size_t results of the library: fails with the error's name. */
#define CHECK_OK(expr)                                                             \
    do {                                                                           \
        size_t const check_r_ = (expr);                                            \
        if (glyd_isError(check_r_)) {                                              \
            char check_m_[256];                                                    \
            snprintf(check_m_, sizeof check_m_, "%s -> %s", #expr,                 \
                     glyd_getErrorName(check_r_));                                 \
            harness_fail(__FILE__, __LINE__, check_m_);                            \
        }                                                                          \
    } while (0)

#define CHECK_ERR(expr, code)                                                      \
    do {                                                                           \
        size_t const check_r_ = (expr);                                            \
        if (glyd_getErrorCode(check_r_) != (code)) {                               \
            char check_m_[256];                                                    \
            snprintf(check_m_, sizeof check_m_, "%s -> %s, expected error %d",     \
                     #expr, glyd_isError(check_r_) ? glyd_getErrorName(check_r_)   \
                                                   : "success", (int)(code));      \
            harness_fail(__FILE__, __LINE__, check_m_);                            \
        }                                                                          \
    } while (0)

/* Test data ---------------------------------------------------------------- */

/* Directory of the shared corpus (GLYD_CORPUS, else ../shared/corpus). */
const char* corpus_dir(void);
/* Reads a whole file; NULL (and a failure) if it cannot. Caller frees. */
uint8_t* read_file(const char* path, size_t* size);
/* The stories260K fixture's tensors, concatenated: little-endian bf16
 * elements (*nbElements of them); NULL if unreadable. Caller frees. */
uint8_t* fixture_bf16(size_t* nbElements);
/* Lists corpus files of a folder ("text", "logs", ...); returns count,
 * fills paths[] (caller frees each). */
int corpus_files(const char* folder, char** paths, int max);

/* Compresses src into one frame through the public API at `level`, with
 * `workers` threads and, when not 0, segmentLog and blockLog; checks the
 * result against the compress bound. Returns a malloc'd frame and its size
 * in *outSize (0 on failure, which is reported). */
uint8_t* test_compress(const uint8_t* src, size_t n, int level, int workers, int segLog, int blockLog,
                       size_t* outSize);

/* Decodes hostile bytes one-shot and streaming: 1 when an error, or
 * exactly orig[0..n), is all that comes out. */
int decode_survives(const uint8_t* bytes, size_t size, const uint8_t* orig, size_t n);

/* Deterministic pseudo-random bytes (xorshift), for generated inputs. */
typedef struct { uint64_t s; } test_rng;
uint64_t rng_next(test_rng* r);
void rng_fill(test_rng* r, uint8_t* dst, size_t n);

#endif

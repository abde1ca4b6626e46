/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_util.h: what every benchmark program here needs: a monotonic clock,
 * a reproducible stream of numbers, fp32 rounded to bf16.
 */
#ifndef GLYD_BENCH_UTIL_H
#define GLYD_BENCH_UTIL_H

#include <stdint.h>
#include <string.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A uniform double in (0, 1] from a 64-bit LCG. */
static inline double bench_uniform(uint64_t* s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return ((double)(*s >> 11) + 1.0) / 9007199254740992.0;
}

/* f rounded to the nearest bf16, ties to even (finite f). */
static inline uint16_t bench_to_bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

#endif /* GLYD_BENCH_UTIL_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_util.h: what every benchmark program here needs: a monotonic clock,
 * a reproducible stream of numbers, fp32 rounded to bf16, a measurement in
 * a process of its own.
 */
#ifndef GLYD_BENCH_UTIL_H
#define GLYD_BENCH_UTIL_H

#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* fn(arg, result) in a child process, so that the memory it takes is its
 * own and gone after it, its result (size bytes) copied back. Returns 0,
 * or 1 where fn or the child failed. */
static inline int bench_in_child(int (*fn)(void* arg, void* result), void* arg, void* result, size_t size)
{
    int fds[2], st;
    pid_t pid;
    ssize_t n;
    if (pipe(fds) != 0) return 1;
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        if (fn(arg, result) != 0 || write(fds[1], result, size) != (ssize_t)size) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    n = read(fds[0], result, size);
    close(fds[0]);
    waitpid(pid, &st, 0);
    return n == (ssize_t)size && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

#endif /* GLYD_BENCH_UTIL_H */

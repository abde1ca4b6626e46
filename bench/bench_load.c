/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_load.c: what checking a packed model's tensors at load costs. Each
 * packed model is opened with the check and without it (skipWeightChecks),
 * in turns, each open in a process of its own, the file in the page cache
 * (read once before the first round). Two times: the open alone, and the
 * open with the first token's forward pass, since weights used where they
 * lie are read from the mapping by that first token if the check has not
 * read them already.
 *
 *   build/bench_load PACKED... [--rounds R] [-T#] [--compact] [--cold]
 *
 * --compact also times the entropy layout used where it lies (without it,
 * an entropy-layout pack is recoded into the fast layout at load). --cold
 * drops the file from the page cache before each open (posix_fadvise), as
 * a first run after packing or copying a model finds it: read from disk.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "glyd_llm.h"
#include "bench_util.h"

typedef struct { double open, firstToken; } timing;

/* One open (and first token) in a child process; 0 on success. */
static int measure(const char* path, int compact, int check, unsigned threads, timing* out)
{
    int fds[2];
    pid_t pid;
    int status;
    if (pipe(fds) != 0) return 1;
    pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        glyd_llmParams p;
        char msg[512] = "";
        size_t err;
        timing t = { -1, -1 };
        glyd_llm* m;
        int const bos = 1;
        int next;
        double t0;
        close(fds[0]);
        memset(&p, 0, sizeof p);
        p.nbThreads = threads;
        p.compactWeights = compact;
        p.skipWeightChecks = !check;
        p.message = msg;
        p.messageCapacity = sizeof msg;
        t0 = bench_now_s();
        m = glyd_llmOpen(path, &p, &err);
        if (!m) { fprintf(stderr, "bench_load: %s: %s\n", path, msg[0] ? msg : glyd_getErrorName(err)); _exit(1); }
        t.open = bench_now_s() - t0;
        if (glyd_isError(glyd_llmGreedy(m, &bos, 1, 0, &next))) _exit(1);
        t.firstToken = bench_now_s() - t0;
        glyd_llmClose(m);
        if (write(fds[1], &t, sizeof t) != (ssize_t)sizeof t) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    status = read(fds[0], out, sizeof *out) == (ssize_t)sizeof *out ? 0 : 1;
    close(fds[0]);
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    return 0;
}

/* Drops the file's pages from the page cache (clean pages only: the file
 * is read, never written, here). */
static void evict(const char* path)
{
    int const fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* Reads the file once, so that every timed open finds it in the page cache. */
static void warm(const char* path)
{
    char buf[1 << 16];
    int const fd = open(path, O_RDONLY);
    if (fd < 0) return;
    while (read(fd, buf, sizeof buf) > 0) {}
    close(fd);
}

int main(int argc, char** argv)
{
    const char* paths[16];
    int nbPaths = 0, rounds = 5, withCompact = 0, cold = 0, i, r, k;
    unsigned threads = 0;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strncmp(argv[i], "-T", 2)) threads = (unsigned)atoi(argv[i] + 2);
        else if (!strcmp(argv[i], "--compact")) withCompact = 1;
        else if (!strcmp(argv[i], "--cold")) cold = 1;
        else if (argv[i][0] != '-' && nbPaths < 16) paths[nbPaths++] = argv[i];
        else { fprintf(stderr, "usage: bench_load PACKED... [--rounds R] [-T#] [--compact] [--cold]\n"); return 1; }
    }
    if (!nbPaths || rounds < 1) { fprintf(stderr, "usage: bench_load PACKED... [--rounds R] [-T#] [--compact] [--cold]\n"); return 1; }
    printf("| packed model | in memory | open, checked (s) | open, unchecked (s) | open + first token, "
           "checked (s) | unchecked (s) | cost of the check |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (i = 0; i < nbPaths; i++) {
        if (!cold) warm(paths[i]);
        for (k = 0; k <= withCompact; k++) {
            timing best[2] = { { 1e9, 1e9 }, { 1e9, 1e9 } };
            for (r = 0; r < rounds; r++) {
                int c;
                for (c = 0; c < 2; c++) {
                    /* alternate which goes first, so neither always follows the other */
                    int const check = (r + c) % 2;
                    timing t;
                    if (cold) evict(paths[i]);
                    if (measure(paths[i], k, check, threads, &t) != 0) return 1;
                    if (t.open < best[check].open) best[check].open = t.open;
                    if (t.firstToken < best[check].firstToken) best[check].firstToken = t.firstToken;
                }
            }
            printf("| %s | %s | %.3f | %.3f | %.3f | %.3f | %+.1f%% |\n", paths[i],
                   k ? "entropy layout (--compact)" : "fast layout", best[1].open, best[0].open, best[1].firstToken,
                   best[0].firstToken, 100.0 * (best[1].firstToken - best[0].firstToken) / best[0].firstToken);
            fflush(stdout);
        }
    }
    printf("\nbest of %d rounds each, the file %s; the cost is of the open with the first token\n", rounds,
           cold ? "read from disk (dropped from the page cache before each open)" : "in the page cache");
    return 0;
}

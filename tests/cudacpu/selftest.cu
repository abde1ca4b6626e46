/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * selftest.cu: cudacpu's own checks. Its kernels are CUDA, made C++ by
 * kernels.sed as the project's are: what a warp's shuffles give, barriers,
 * the order that tells a race apart, shared memory, a launch's limits, and
 * the faults that stop a program (run in a child, which must abort with
 * cudacpu's message).
 *
 *   build/cudacpu/selftest
 *
 * Prints a line a check, and "N passed, N failed"; exits 1 when one fails.
 */
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

static int g_passed, g_failed;

static void check(bool ok, const char* what)
{
    printf("%s - %s\n", ok ? "ok" : "FAIL", what);
    (ok ? g_passed : g_failed)++;
}

/* each lane's id summed over its warp by a butterfly; each lane's value
 * from shuffles by index, up and down, in segments of 8 */
__global__ void shuffles(int* out)
{
    unsigned const t = threadIdx.x, lane = t & 31;
    int sum = (int)lane;
    for (int m = 16; m; m >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, m);
    int const from = __shfl_sync(0xFFFFFFFFu, (int)t, 3, 8);
    int const up = __shfl_up_sync(0xFFFFFFFFu, (int)t, 2, 8);
    int const down = __shfl_down_sync(0xFFFFFFFFu, (int)t, 3, 8);
    float const f = __shfl_sync(0xFFFFFFFFu, 0.5f * (float)lane, 31 - (int)lane);
    out[4 * t] = sum;
    out[4 * t + 1] = from;
    out[4 * t + 2] = up * 1000 + down;
    out[4 * t + 3] = (int)(2 * f);
}

/* each warp's threads whose index 3 divides, as a ballot sees them (the
 * second warp of 48 threads has 16 lanes) */
__global__ void ballots(unsigned* out)
{
    out[threadIdx.x] = __ballot_sync(0xFFFFFFFFu, threadIdx.x % 3 == 0);
}

/* the block's threads reversed through shared memory, after a barrier */
__global__ void reversal(unsigned* out)
{
    __shared__ unsigned s[256];
    s[threadIdx.x] = blockIdx.x * 1000 + threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

/* a race: each thread reads its neighbour's word with no barrier between */
__global__ void racy(unsigned* out)
{
    extern __shared__ unsigned words[];
    words[threadIdx.x] = threadIdx.x;
    out[blockIdx.x * blockDim.x + threadIdx.x] = words[(threadIdx.x + 1) % blockDim.x];
}

/* what dynamic shared memory holds before a block writes it */
__global__ void unwritten(unsigned* out)
{
    extern __shared__ unsigned words[];
    out[threadIdx.x] = words[threadIdx.x];
}

/* a static shared variable read, then written (a fault the fill shows) */
__global__ void unwritten_static(float* out)
{
    __shared__ float partial[32];
    out[blockIdx.x * 32 + threadIdx.x] = partial[threadIdx.x];
    __syncthreads();
    partial[threadIdx.x] = 1.0f;
}

__global__ void nothing(void) {}

/* lane 0 at the block's barrier, the warp's other lanes at the warp's */
__global__ void deadlock(void)
{
    if (threadIdx.x == 0) __syncthreads();
    else __syncwarp();
}

/* half the warp returns; the other half shuffles under its own mask */
__global__ void shuffle_from_gone(int* out)
{
    if (threadIdx.x >= 16) return;
    out[threadIdx.x] = __shfl_sync(0x0000FFFFu, (int)threadIdx.x, 20);
}

/* lane 31 returns; the others shuffle, from lane 0 (defined: a lane that
 * has returned need not take part) and from lane 31 (undefined) */
__global__ void shuffle_after_return(int* out, int src)
{
    if (threadIdx.x == 31) return;
    out[threadIdx.x] = __shfl_sync(0xFFFFFFFFu, (int)threadIdx.x, src);
}

/* one word past the end of a device buffer */
__global__ void past_the_end(const unsigned* in, unsigned* out, unsigned n)
{
    out[threadIdx.x] = in[threadIdx.x + n];
}

/* runs f in a child; true if it fails (aborts, or exits with an error, as
 * ASan does) with `message` among what it says */
template <class F> static bool aborts_with(F f, const char* message)
{
    int fds[2];
    if (pipe(fds)) return false;
    fflush(stdout);
    pid_t const pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        f();
        _exit(0);
    }
    close(fds[1]);
    std::vector<char> said;
    char buf[512];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0) said.insert(said.end(), buf, buf + got);
    close(fds[0]);
    said.push_back(0);
    int status = 0;
    waitpid(pid, &status, 0);
    bool const failed = WIFSIGNALED(status) ? WTERMSIG(status) == SIGABRT : WEXITSTATUS(status) != 0;
    return failed && strstr(said.data(), message);
}

int main(void)
{
    {
        int* d;
        std::vector<int> h(64 * 4);
        cudaMalloc((void**)&d, h.size() * sizeof(int));
        shuffles<<<1, 64>>>(d);
        cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
        bool sums = true, indexed = true, updown = true, floats = true;
        for (int t = 0; t < 64; t++) {
            int const seg = t & ~7, lane = t & 31;
            int const up = (t & 7) >= 2 ? t - 2 : t, down = (t & 7) + 3 < 8 ? t + 3 : t;
            sums &= h[4 * t] == 496;
            indexed &= h[4 * t + 1] == seg + 3;
            updown &= h[4 * t + 2] == up * 1000 + down;
            floats &= h[4 * t + 3] == 31 - lane;
        }
        check(sums, "a butterfly of __shfl_xor_sync sums each warp's lanes");
        check(indexed, "__shfl_sync with a width reads within the lane's segment");
        check(updown, "__shfl_up_sync and __shfl_down_sync keep their own value past the segment's edge");
        check(floats, "a float crosses a shuffle unchanged");
        cudaFree(d);
    }
    {
        unsigned* d;
        std::vector<unsigned> h(48);
        cudaMalloc((void**)&d, h.size() * sizeof(unsigned));
        ballots<<<1, 48>>>(d);
        cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned), cudaMemcpyDeviceToHost);
        bool ok = true;
        for (unsigned t = 0; t < 48; t++) {
            unsigned want = 0;
            for (unsigned l = 0; l < 32 && (t & ~31u) + l < 48; l++)
                if (((t & ~31u) + l) % 3 == 0) want |= 1u << l;
            ok &= h[t] == want;
        }
        check(ok, "__ballot_sync: a bit for each lane of the warp whose predicate holds");
        cudaFree(d);
    }
    {
        unsigned* d;
        std::vector<unsigned> h(3 * 256);
        cudaMalloc((void**)&d, h.size() * sizeof(unsigned));
        reversal<<<3, 256>>>(d);
        cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned), cudaMemcpyDeviceToHost);
        bool ok = true;
        for (unsigned b = 0; b < 3; b++)
            for (unsigned t = 0; t < 256; t++) ok &= h[b * 256 + t] == b * 1000 + 255 - t;
        check(ok, "__syncthreads: every thread's write is seen after the barrier, in every block");
        cudaFree(d);
    }
    {
        /* block 0 runs its threads in order, block 1 in reverse (the other
         * way round when CUDACPU_ORDER=swapped): thread t reads t + 1's word
         * before it is written in one, after in the other */
        unsigned* d;
        std::vector<unsigned> h(2 * 64);
        cudaMalloc((void**)&d, h.size() * sizeof(unsigned));
        racy<<<2, 64, 64 * sizeof(unsigned)>>>(d);
        cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned), cudaMemcpyDeviceToHost);
        const char* const order = getenv("CUDACPU_ORDER");
        bool const swapped = order && !strcmp(order, "swapped");
        unsigned const early = 0xFFFFFFFFu, late = 1; /* thread 0's read, before and after thread 1's write */
        check(h[0] == (swapped ? late : early) && h[64] == (swapped ? early : late),
              "a race on shared memory gives different results in even and odd blocks");
        unwritten<<<1, 32, 32 * sizeof(unsigned)>>>(d);
        cudaMemcpy(h.data(), d, 32 * sizeof(unsigned), cudaMemcpyDeviceToHost);
        bool filled = true;
        for (int t = 0; t < 32; t++) filled &= h[t] == 0xFFFFFFFFu;
        check(filled, "dynamic shared memory holds 0xFF bytes until written");
        cudaFree(d);
        /* two blocks: the second finds the static variable filled again, not the first's values */
        float* f;
        cudaMalloc((void**)&f, 2 * 32 * sizeof(float));
        unwritten_static<<<2, 32>>>(f);
        std::vector<float> g(64);
        cudaMemcpy(g.data(), f, g.size() * sizeof(float), cudaMemcpyDeviceToHost);
        bool nan = true;
        for (int t = 0; t < 64; t++) nan &= isnan(g[t]);
        check(nan, "a static shared variable read before it is written: a NaN, in every block");
        cudaFree(f);
    }
    {
        cudaGetLastError();
        nothing<<<1, 1025>>>();
        check(cudaGetLastError() == cudaErrorInvalidConfiguration, "a block of 1025 threads: invalid configuration");
        nothing<<<dim3(1, 65536), 32>>>();
        check(cudaGetLastError() == cudaErrorInvalidConfiguration, "a grid 65536 blocks high: invalid configuration");
        nothing<<<1, 32, 64 << 10>>>();
        check(cudaGetLastError() == cudaErrorInvalidValue, "64 KiB of dynamic shared memory, not asked for: refused");
        cudaFuncSetAttribute(nothing, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10);
        nothing<<<1, 32, 64 << 10>>>();
        check(cudaGetLastError() == cudaSuccess, "64 KiB once cudaFuncSetAttribute allows it: launched");
        check(cudaFuncSetAttribute(nothing, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 << 10) ==
                  cudaErrorInvalidValue,
              "more than 227 KiB of dynamic shared memory: refused");
    }
    check(aborts_with([] { deadlock<<<1, 64>>>(); }, "wait for each other at different barriers"),
          "threads waiting at different barriers stop the program");
    check(aborts_with(
              [] {
                  int* d;
                  cudaMalloc((void**)&d, 64 * sizeof(int));
                  shuffle_from_gone<<<1, 32>>>(d);
              },
              "under the partial mask"),
          "a shuffle under a partial mask (not modelled) stops the program");
    {
        int* d;
        int h[31];
        bool ok = true;
        cudaMalloc((void**)&d, 32 * sizeof(int));
        shuffle_after_return<<<1, 32>>>(d, 0);
        cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
        for (int t = 0; t < 31; t++) ok &= h[t] == 0;
        check(ok, "a shuffle among the lanes that have not returned");
        cudaFree(d);
    }
    check(aborts_with(
              [] {
                  int* d;
                  cudaMalloc((void**)&d, 32 * sizeof(int));
                  shuffle_after_return<<<1, 32>>>(d, 31);
              },
              "which did not take part"),
          "a shuffle from a lane that has returned stops the program");
    check(aborts_with([] { __syncthreads(); }, "outside a kernel"), "__syncthreads outside a kernel stops the program");
#if defined(__SANITIZE_ADDRESS__)
    check(aborts_with(
              [] {
                  unsigned *in, *out;
                  cudaMalloc((void**)&in, 100 * sizeof(unsigned));
                  cudaMalloc((void**)&out, 32 * sizeof(unsigned));
                  past_the_end<<<1, 32>>>(in, out, 69); /* lane 31 reads in[100] */
              },
              "heap-buffer-overflow"),
          "ASan: a kernel's read past the bytes of its cudaMalloc stops the program");
#endif
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

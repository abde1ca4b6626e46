/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudacpu.h: the language of CUDA kernels on the CPU, so that the
 * project's kernels run, unchanged, where there is no GPU.
 *
 * A launch runs its blocks one after another; a block's threads are
 * fibers of one CPU thread, each running until it waits at a barrier
 * (__syncthreads, __syncwarp, a shuffle) or returns, in thread order on
 * even blocks and in reverse order on odd ones, so that a result that
 * depends on which thread of a block writes or reads shared memory first
 * differs between the two (CUDACPU_ORDER=swapped swaps them: a second run
 * gives every block the other order). What real hardware would leave
 * undefined is reported, and the program stops: threads of a block
 * waiting at different barriers for ever, a shuffle from a lane that has
 * returned; so is what cudacpu does not model, a shuffle or __syncwarp
 * under a partial mask. A launch that breaks CUDA's limits is a CUDA
 * error, as on a GPU.
 *
 * Device code is compiled as on the device (__CUDA_ARCH__ 900, so that
 * the device-only paths of the kernels' headers are the ones run). Shared
 * memory is filled with 0xFF bytes at each block's start (a NaN as a float,
 * all ones as an integer), so that a read before a write shows: static
 * variables (the blocks run one at a time) by the call that kernels.sed
 * puts after their declaration, dynamic shared memory as the block's own
 * allocation of exactly the launch's bytes, where ASan sees a read past
 * them. Streams run in order, each call done when it returns; launches
 * come from one CPU thread at a time. Floating point is the CPU's: a * b
 * + c is rounded twice where nvcc would fuse it, so fmaf is written where
 * a result must be the same on both.
 */
#ifndef CUDACPU_H
#define CUDACPU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "include/cuda_runtime_api.h"

#define __CUDACC__ 1
#define __CUDA_ARCH__ 900
#define GLYD_CUDACPU 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x, y, z;
};
struct __align__(16) uint4 {
    unsigned x, y, z, w;
};
struct __align__(16) float4 {
    float x, y, z, w;
};
struct __align__(8) uint2 {
    unsigned x, y;
};
struct __align__(8) float2 {
    float x, y;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{ x, y, z, w }; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{ x, y, z, w }; }

/* the running thread's place: set by the scheduler before each fiber runs */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

/* stops the program with a message: what a GPU would leave undefined */
[[noreturn]] void cudacpu_fail(const char* what, ...) __attribute__((format(printf, 1, 2)));
void cudacpu_syncthreads(void);
void cudacpu_syncwarp(unsigned mask);
/* the 64 bits `v` that the lane gives, the bits lane `src` gave */
uint64_t cudacpu_exchange(unsigned mask, uint64_t v, int src);
/* a bit for each lane that took part whose pred is not 0 */
unsigned cudacpu_ballot(unsigned mask, int pred);
void* cudacpu_dynamicShared(void);
/* fills a static shared variable with cudacpu_poison bytes, the first time
 * a thread of the running block passes its declaration */
void cudacpu_poison(void* p, size_t size);
template <class... T> inline void cudacpu_poisonShared(T&... v) { (cudacpu_poison(&v, sizeof v), ...); }

inline void __syncthreads(void) { cudacpu_syncthreads(); }
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) { cudacpu_syncwarp(mask); }

template <class T> inline uint64_t cudacpu_bits(T v)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "a shuffle's value");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}
template <class T> inline T cudacpu_from_bits(uint64_t b)
{
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}
inline unsigned cudacpu_lane(void) { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31; }

template <class T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    int const lane = (int)cudacpu_lane();
    return cudacpu_from_bits<T>(cudacpu_exchange(mask, cudacpu_bits(v), (lane & ~(width - 1)) + (src & (width - 1))));
}
template <class T> inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    int const lane = (int)cudacpu_lane();
    return cudacpu_from_bits<T>(cudacpu_exchange(mask, cudacpu_bits(v), (lane & (width - 1)) >= (int)d ? lane - (int)d : lane));
}
template <class T> inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    int const lane = (int)cudacpu_lane();
    return cudacpu_from_bits<T>(cudacpu_exchange(mask, cudacpu_bits(v), (lane & (width - 1)) + (int)d < width ? lane + (int)d : lane));
}
template <class T> inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
    int const lane = (int)cudacpu_lane(), src = lane ^ m;
    return cudacpu_from_bits<T>(cudacpu_exchange(mask, cudacpu_bits(v), (src & ~(width - 1)) == (lane & ~(width - 1)) ? src : lane));
}

inline unsigned __ballot_sync(unsigned mask, int pred) { return cudacpu_ballot(mask, pred); }

/* the blocks run one at a time on one CPU thread: nothing races */
template <class T> inline T atomicAdd(T* p, T v)
{
    T const old = *p;
    *p = old + v;
    return old;
}

template <class T> inline T __ldg(const T* p) { return *p; }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s)
{
    uint64_t const v = (uint64_t)hi << 32 | lo;
    return (unsigned)((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s)
{
    uint64_t const v = (uint64_t)hi << 32 | lo;
    return (unsigned)(v >> (s & 31));
}
inline unsigned __byte_perm(unsigned a, unsigned b, unsigned s)
{
    uint64_t const v = (uint64_t)b << 32 | a;
    unsigned r = 0;
    for (unsigned n = 0; n < 4; n++) r |= (unsigned)(v >> (8 * ((s >> (4 * n)) & 7)) & 0xFF) << (8 * n);
    return r;
}
inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
inline float __int_as_float(int i) { return __uint_as_float((unsigned)i); }
inline int __float_as_int(float f) { return (int)__float_as_uint(f); }

namespace cudacpu {

/* runs a launch's blocks (cudacpu.cpp); sets the error a launch gets */
void run(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body);

template <class K> struct Launch;
template <class... P> struct Launch<void(P...)> {
    void (*kernel)(P...);
    dim3 grid, block;
    size_t smem;
    /* the kernel's own parameter types, so that arguments convert as in a
     * call (NULL to a pointer); then copied, as a launch copies them to the
     * device, and each thread given its own copy */
    void operator()(P... args) const
    {
        std::tuple<std::decay_t<P>...> const bound(args...);
        auto const k = kernel;
        run((const void*)kernel, grid, block, smem, [k, &bound] { std::apply(k, bound); });
    }
};

/* what `kernel<<<grid, block, smem, stream>>>` becomes (the build's sed) */
template <class K>
Launch<K> launch(K* kernel, dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = nullptr)
{
    (void)stream;
    return Launch<K>{ kernel, grid, block, smem };
}

} // namespace cudacpu

#endif /* CUDACPU_H */

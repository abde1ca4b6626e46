/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cudacpu.cpp: the scheduler of cudacpu.h's fibers, and the runtime API
 * and cuBLAS calls of include/ on the CPU.
 */
#include "cudacpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include <map>
#include <unordered_map>
#include <vector>

#include "include/cublas_v2.h"

/* ASan, as g++ (__SANITIZE_ADDRESS__) and clang++ (__has_feature) say it */
#if defined(__SANITIZE_ADDRESS__)
#define CUDACPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDACPU_ASAN 1
#endif
#endif
#ifdef CUDACPU_ASAN
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

#if !defined(__x86_64__)
#error "cudacpu switches its fibers in x86-64 assembly"
#endif

/*
 * cudacpu_switch(from, to) pushes the callee-saved registers on the running
 * stack, stores its pointer in *from and resumes the stack at to. ucontext's
 * swapcontext would do as well, but it makes a system call (sigprocmask) at
 * every switch, and a kernel's threads switch at every barrier and shuffle.
 * The floating-point control words are not switched: no kernel sets them.
 */
extern "C" void cudacpu_switch(void** from, void* to);
asm(R"(
    .text
    .globl cudacpu_switch
    .type cudacpu_switch, @function
cudacpu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cudacpu_switch, .-cudacpu_switch
)");

namespace {

/* CUDA's limits, and the device that cudacpu says it is */
constexpr unsigned kMaxThreads = 1024;
constexpr size_t kSharedDefault = 48 << 10;
constexpr size_t kSharedOptin = 227 << 10;
constexpr size_t kStack = 512 << 10; /* a fiber's: the kernels keep their arrays on it */
constexpr unsigned kNone = ~0u;

enum State { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct Fiber {
    void* sp = nullptr; /* where cudacpu_switch left the fiber */
    void* stack = nullptr;
    State state = DONE;
    unsigned exchanges = 0; /* shuffles made: their parity picks the slots */
#ifdef CUDACPU_ASAN
    void* fakeStack = nullptr;
#endif
};

struct Block {
    const std::function<void()>* body = nullptr;
    std::vector<Fiber> fibers;
    void* scheduler = nullptr; /* the launching stack, while the block's fibers run */
    unsigned threads = 0, current = 0, live = 0, atBlock = 0;
    bool reverse = false; /* the order in which the fibers take turns */
    unsigned warpLive[kMaxThreads / 32], atWarp[kMaxThreads / 32];
    uint32_t released[kMaxThreads / 32]; /* the lanes that the warp's last barrier let go */
    uint64_t slots[2][kMaxThreads];
    void* shared = nullptr;
#ifdef CUDACPU_ASAN
    void* schedulerFakeStack = nullptr;
    void* schedulerBottom = nullptr; /* the launching thread's stack, for ASan's fiber switches */
    size_t schedulerSize = 0;
#endif
};

Block g_block;
bool g_running;
cudaError_t g_lastError = cudaSuccess;
std::map<const void*, size_t> g_sharedLimit; /* cudaFuncAttributeMaxDynamicSharedMemorySize */
uint64_t g_blockSerial;                         /* the running block's, counting every launch's */
std::unordered_map<void*, uint64_t> g_poisoned; /* a static shared variable: the block that last filled it */
constexpr int kPoison = 0xFF;

/* CUDACPU_ORDER=swapped: even blocks run their threads in reverse, odd
 * ones in order; so that a second run gives every block the other order */
bool swapped(void)
{
    static int const s = [] {
        const char* const e = getenv("CUDACPU_ORDER");
        return e && !strcmp(e, "swapped");
    }();
    return s;
}

unsigned sms(void)
{
    const char* const e = getenv("CUDACPU_SMS");
    int const n = e ? atoi(e) : 0;
    return n > 0 ? (unsigned)n : 4;
}

void place(unsigned t)
{
    threadIdx.x = t % blockDim.x;
    threadIdx.y = t / blockDim.x % blockDim.y;
    threadIdx.z = t / (blockDim.x * blockDim.y);
}

/* the runnable fiber that takes its turn after fiber t, in the block's order */
unsigned next_runnable(unsigned t)
{
    Block& b = g_block;
    for (unsigned k = 1; k <= b.threads; k++) {
        unsigned const u = b.reverse ? (t + b.threads - k) % b.threads : (t + k) % b.threads;
        if (b.fibers[u].state == RUNNABLE) return u;
    }
    return kNone;
}

/* The running fiber, waiting or done, hands the CPU to the next runnable
 * one, or to the scheduler when there is none: the block is done, or its
 * threads wait for each other. `from` is null when the fiber is done. */
void pass_on(void** from)
{
    Block& b = g_block;
    unsigned const next = next_runnable(b.current);
    void* const to = next == kNone ? b.scheduler : b.fibers[next].sp;
#ifdef CUDACPU_ASAN
    void** const fake = from ? &b.fibers[b.current].fakeStack : nullptr; /* null: this stack is done with */
    if (next == kNone) __sanitizer_start_switch_fiber(fake, b.schedulerBottom, b.schedulerSize);
    else __sanitizer_start_switch_fiber(fake, b.fibers[next].stack, kStack);
#endif
    Fiber& me = b.fibers[b.current];
    if (next != kNone) {
        b.current = next;
        place(next);
    }
    void* unused;
    cudacpu_switch(from ? from : &unused, to);
#ifdef CUDACPU_ASAN
    __sanitizer_finish_switch_fiber(me.fakeStack, nullptr, nullptr);
#else
    (void)me;
#endif
}

/* the barriers of warp w and of the block, once all their live threads wait there, let them go */
void release(unsigned w)
{
    Block& b = g_block;
    if (b.atBlock && b.atBlock == b.live) {
        for (unsigned t = 0; t < b.threads; t++)
            if (b.fibers[t].state == AT_BLOCK_BARRIER) b.fibers[t].state = RUNNABLE;
        b.atBlock = 0;
    }
    if (b.atWarp[w] && b.atWarp[w] == b.warpLive[w]) {
        b.released[w] = 0;
        for (unsigned t = 32 * w; t < 32 * w + 32 && t < b.threads; t++)
            if (b.fibers[t].state == AT_WARP_BARRIER) {
                b.fibers[t].state = RUNNABLE;
                b.released[w] |= 1u << (t & 31);
            }
        b.atWarp[w] = 0;
    }
}

/* the running fiber waits at a barrier, in state s */
void wait_at(State s)
{
    Block& b = g_block;
    Fiber& f = b.fibers[b.current];
    unsigned const w = b.current / 32;
    f.state = s;
    if (s == AT_BLOCK_BARRIER) b.atBlock++;
    else b.atWarp[w]++;
    release(w);
    if (f.state != RUNNABLE) pass_on(&f.sp);
}

[[noreturn]] void trampoline(void)
{
    Block& b = g_block;
#ifdef CUDACPU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    (*b.body)();
    b.fibers[b.current].state = DONE;
    b.live--;
    b.warpLive[b.current / 32]--;
    release(b.current / 32);
    pass_on(nullptr);
    __builtin_unreachable();
}

const char* state_name(State s)
{
    return s == AT_BLOCK_BARRIER ? "__syncthreads" : s == AT_WARP_BARRIER ? "a warp's barrier" : "running";
}

/* a fiber that will run the kernel from its start: a stack as
 * cudacpu_switch leaves one, whose return goes to trampoline as if called */
void start_fiber(Fiber& f)
{
    uint64_t* sp = (uint64_t*)((char*)f.stack + kStack);
    *--sp = 0; /* trampoline's return address: it never returns */
    *--sp = (uint64_t)(uintptr_t)trampoline;
    for (int r = 0; r < 6; r++) *--sp = 0; /* rbp, rbx, r12-r15 */
    f.sp = sp;
    f.state = RUNNABLE;
    f.exchanges = 0;
}

/* one block, to the end of its last thread */
void run_block(unsigned id)
{
    Block& b = g_block;
    b.live = b.threads;
    b.atBlock = 0;
    b.reverse = (id & 1) != swapped();
    for (unsigned w = 0; w < (b.threads + 31) / 32; w++) {
        b.warpLive[w] = b.threads - 32 * w < 32 ? b.threads - 32 * w : 32;
        b.atWarp[w] = 0;
    }
    for (unsigned t = 0; t < b.threads; t++) start_fiber(b.fibers[t]);
    unsigned const first = b.reverse ? b.threads - 1 : 0;
    b.current = first;
    place(first);
#ifdef CUDACPU_ASAN
    __sanitizer_start_switch_fiber(&b.schedulerFakeStack, b.fibers[first].stack, kStack);
    cudacpu_switch(&b.scheduler, b.fibers[first].sp);
    __sanitizer_finish_switch_fiber(b.schedulerFakeStack, nullptr, nullptr);
#else
    cudacpu_switch(&b.scheduler, b.fibers[first].sp);
#endif
    if (b.live) {
        for (unsigned t = 0; t < b.threads; t++)
            if (b.fibers[t].state != DONE)
                fprintf(stderr, "cudacpu: block (%u,%u,%u) thread %u waits at %s\n", blockIdx.x, blockIdx.y,
                        blockIdx.z, t, state_name(b.fibers[t].state));
        cudacpu_fail("the threads of a block wait for each other at different barriers");
    }
}

size_t& shared_limit(const void* kernel)
{
    auto const it = g_sharedLimit.find(kernel);
    return it != g_sharedLimit.end() ? it->second : (g_sharedLimit[kernel] = kSharedDefault);
}

} // namespace

void cudacpu_fail(const char* what, ...)
{
    va_list ap;
    va_start(ap, what);
    fprintf(stderr, "cudacpu: ");
    vfprintf(stderr, what, ap);
    fprintf(stderr, " (block %u,%u,%u, thread %u,%u,%u)\n", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
            threadIdx.y, threadIdx.z);
    va_end(ap);
    abort();
}

void cudacpu_syncthreads(void)
{
    if (!g_running) cudacpu_fail("__syncthreads outside a kernel");
    wait_at(AT_BLOCK_BARRIER);
}

static void warp_barrier(unsigned mask, const char* what)
{
    Block& b = g_block;
    unsigned const w = b.current / 32;
    unsigned const lanes = b.threads - 32 * w < 32 ? b.threads - 32 * w : 32;
    unsigned const full = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
    if (!g_running) cudacpu_fail("%s outside a kernel", what);
    if ((mask & full) != full) cudacpu_fail("%s under the partial mask %08x", what, mask);
    wait_at(AT_WARP_BARRIER);
}

void cudacpu_syncwarp(unsigned mask) { warp_barrier(mask, "__syncwarp"); }

uint64_t cudacpu_exchange(unsigned mask, uint64_t v, int src)
{
    Block& b = g_block;
    unsigned const me = b.current, w = me / 32;
    /* two sets of slots, taken in turn: a lane's next shuffle cannot write
     * the set that lanes still read, as it waits for them all first */
    unsigned const set = b.fibers[me].exchanges++ & 1;
    b.slots[set][me] = v;
    warp_barrier(mask, "a shuffle");
    if (src < 0 || src > 31 || !(b.released[w] >> src & 1))
        cudacpu_fail("a shuffle from lane %d, which did not take part", src);
    return b.slots[set][32 * w + (unsigned)src];
}

unsigned cudacpu_ballot(unsigned mask, int pred)
{
    Block& b = g_block;
    unsigned const me = b.current, w = me / 32;
    unsigned const set = b.fibers[me].exchanges++ & 1; /* as a shuffle's */
    unsigned bits = 0;
    b.slots[set][me] = pred != 0;
    warp_barrier(mask, "a ballot");
    for (unsigned l = 0; l < 32; l++)
        if (b.released[w] >> l & 1 && b.slots[set][32 * w + l]) bits |= 1u << l;
    return bits;
}

void* cudacpu_dynamicShared(void) { return g_block.shared; }

void cudacpu_poison(void* p, size_t size)
{
    uint64_t& filled = g_poisoned[p];
    if (filled == g_blockSerial) return;
    memset(p, kPoison, size);
    filled = g_blockSerial;
}

void cudacpu::run(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body)
{
    Block& b = g_block;
    uint64_t const threads = (uint64_t)block.x * block.y * block.z;
    if (g_running) cudacpu_fail("a launch from a kernel");
    if (!threads || threads > kMaxThreads || block.z > 64 || !grid.x || !grid.y || !grid.z || grid.y > 65535 ||
        grid.z > 65535 || grid.x > 0x7FFFFFFFu) {
        g_lastError = cudaErrorInvalidConfiguration;
        return;
    }
    if (smem > shared_limit(kernel)) {
        g_lastError = cudaErrorInvalidValue;
        return;
    }
    if (b.fibers.size() < threads) {
        size_t const had = b.fibers.size();
        b.fibers.resize(threads);
        for (size_t t = had; t < threads; t++) {
            void* const s = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                                 -1, 0);
            if (s == MAP_FAILED) cudacpu_fail("no memory for a thread's stack");
            b.fibers[t].stack = s;
        }
    }
    b.threads = (unsigned)threads;
    b.body = &body;
#ifdef CUDACPU_ASAN
    if (!b.schedulerBottom) {
        /* ASan is told each stack a switch goes to: the fibers' and this one */
        pthread_attr_t a;
        if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &b.schedulerBottom, &b.schedulerSize))
            cudacpu_fail("cannot find the launching thread's stack");
        pthread_attr_destroy(&a);
    }
#endif
    gridDim = grid;
    blockDim = block;
    g_running = true;
    uint64_t id = 0;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++, id++) {
                blockIdx = uint3{ x, y, z };
                /* exactly the launch's bytes, so that a sanitizer sees a read past them */
                b.shared = smem ? malloc(smem) : nullptr;
                if (smem && !b.shared) cudacpu_fail("no memory for a block's shared memory");
                if (smem) memset(b.shared, kPoison, smem);
                g_blockSerial++;
                run_block((unsigned)id);
                free(b.shared);
                b.shared = nullptr;
            }
    g_running = false;
}

/* ------------------------------------------------------------------------ */
/* The runtime API                                                          */
/* ------------------------------------------------------------------------ */

extern "C" {

const char* cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorMisalignedAddress: return "misaligned address";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t const e = g_lastError;
    g_lastError = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return g_lastError; }

cudaError_t cudaGetDeviceCount(int* count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device)
{
    *device = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device)
{
    if (device) return cudaErrorInvalidValue;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "cudacpu: the kernels on the CPU, as %u multiprocessors", sms());
    prop->totalGlobalMem = (size_t)16 << 30;
    prop->sharedMemPerBlock = kSharedDefault;
    prop->sharedMemPerBlockOptin = kSharedOptin;
    prop->multiProcessorCount = (int)sms();
    prop->l2CacheSize = 1 << 20;
    prop->major = 9;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device)
{
    if (device) return cudaErrorInvalidValue;
    if (attr == cudaDevAttrMultiProcessorCount) *value = (int)sms();
    else if (attr == cudaDevAttrMaxSharedMemoryPerBlockOptin) *value = (int)kSharedOptin;
    else return cudaErrorInvalidValue;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaMemGetInfo(size_t* avail, size_t* total)
{
    *avail = *total = (size_t)16 << 30;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t size)
{
    /* device allocations are 256-byte aligned; exactly the bytes asked
     * for, so that ASan sees a read past them, as compute-sanitizer would */
    if (posix_memalign(p, 256, size ? size : 1)) {
        *p = nullptr;
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t stream)
{
    (void)stream;
    return cudaMalloc(p, size);
}

cudaError_t cudaFree(void* p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t stream)
{
    (void)stream;
    return cudaFree(p);
}

cudaError_t cudaMemset(void* p, int value, size_t size)
{
    memset(p, value, size);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t size, cudaMemcpyKind kind)
{
    (void)kind;
    if (size) memmove(dst, src, size);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t size, cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy(dst, src, size, kind);
}

struct cudacpu_stream {
    int unused;
};

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags)
{
    (void)flags;
    *stream = new cudacpu_stream();
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

struct cudacpu_event {
    double seconds;
};

cudaError_t cudaEventCreate(cudaEvent_t* event)
{
    *event = new cudacpu_event();
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    struct timespec ts;
    (void)stream;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    event->seconds = ts.tv_sec + ts.tv_nsec * 1e-9;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    (void)event;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float)((end->seconds - start->seconds) * 1e3);
    return cudaSuccess;
}

cudaError_t cudacpu_funcSetAttribute(const void* kernel, enum cudaFuncAttribute attr, int value)
{
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || (size_t)value > kSharedOptin)
        return cudaErrorInvalidValue;
    shared_limit(kernel) = (size_t)value;
    return cudaSuccess;
}

cudaError_t cudacpu_occupancy(int* blocks, const void* kernel, int blockSize, size_t smem)
{
    /* an H200's multiprocessor: 2048 threads, 228 KiB of shared memory
     * (1 KiB of it a block's own), 32 blocks */
    (void)kernel;
    if (blockSize <= 0 || blockSize > (int)kMaxThreads) return cudaErrorInvalidValue;
    int byThreads = 2048 / blockSize, byShared = (int)((228 << 10) / (smem + 1024));
    *blocks = byThreads < byShared ? byThreads : byShared;
    if (*blocks > 32) *blocks = 32;
    return cudaSuccess;
}

/* ------------------------------------------------------------------------ */
/* cuBLAS                                                                   */
/* ------------------------------------------------------------------------ */

struct cudacpu_blas {
    int unused;
};

cublasStatus_t cublasCreate(cublasHandle_t* handle)
{
    *handle = new cudacpu_blas();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    (void)handle;
    (void)stream;
    return CUBLAS_STATUS_SUCCESS;
}

static float element(const void* p, cudaDataType type, size_t i)
{
    if (type == CUDA_R_32F) return ((const float*)p)[i];
    return __uint_as_float((uint32_t)((const uint16_t*)p)[i] << 16);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType at, int lda, const void* b,
                            cudaDataType bt, int ldb, const void* beta, void* c, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    (void)algo;
    if (!handle || m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) || lda < 1 || ldb < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (ct != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    float const al = *(const float*)alpha, be = *(const float*)beta;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0;
            for (int l = 0; l < k; l++) {
                size_t const ai = ta == CUBLAS_OP_N ? (size_t)l * lda + i : (size_t)i * lda + l;
                size_t const bi = tb == CUBLAS_OP_N ? (size_t)j * ldb + l : (size_t)l * ldb + j;
                s += element(a, at, ai) * element(b, bt, bi);
            }
            float* const y = (float*)c + (size_t)j * ldc + i;
            *y = al * s + (be != 0 ? be * *y : 0);
        }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc)
{
    return cublasGemmEx(handle, ta, tb, m, n, k, alpha, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb, beta, c, CUDA_R_32F,
                        ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

} /* extern "C" */

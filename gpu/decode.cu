/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * decode.cu: tensor blobs decoded whole on the GPU, into bf16. The
 * per-thread work is tensor_kernels.h, shared with the CPU emulation that
 * tests it (tensor_gpu.c); here are the launches and the block-wide prefix
 * sums.
 *
 *   fast layout: a block per unit, a thread per group of 32 elements; each
 *     group's escapes start where the block's prefix sum of the groups
 *     before it says. Codes in the nibble form (tensor_kernels.h, written
 *     once at upload by upload.cu's nibble_kernel) let a thread rebuild its
 *     group in registers a few instructions a weight, and a warp store its
 *     32 groups through shared memory in 512-byte runs; in bit planes,
 *     element by element.
 *   Huffman layout: a thread per run of GK_HUF_RUN symbols, from the run
 *     index built at upload; where a unit's stream is too long for the
 *     index, a thread per unit with the table in shared memory.
 */
#include <cub/block/block_scan.cuh>

#include "copies.cuh"

/* A warp's 32 whole groups as pairs of bf16 (pairs: the lane's group's)
 * into dst (16-byte aligned), through stage (shared memory: AT_ONCE lanes'
 * groups, 64 bytes each, staged at a time), so that each 16-byte store of
 * the warp writes 512 bytes in a row. Stored where they were, each lane's
 * 64 bytes in four 16-byte stores, a store wrote half of each 32-byte
 * sector it touched, and the writes took twice their bytes on the way to
 * L2: bulk decoding of 4096 x 4096 kept the crossbar into L2 81% busy with
 * DRAM at 38%. Lane l's chunk k is staged at stage[l % AT_ONCE][k ^ (l >>
 * 1 & 3)], so that neither the stores nor the loads of a quarter warp share
 * a bank. */
template <unsigned AT_ONCE> /* 32 (2 KiB of stage) or 16 (1 KiB) */
__device__ __forceinline__ void warp_store_groups(uint4* __restrict__ dst, const uint32_t pairs[16], uint4 (*stage)[4],
                                                  unsigned lane)
{
    static_assert(AT_ONCE == 32 || AT_ONCE == 16, "whole quarter warps a round");
#pragma unroll
    for (unsigned h = 0; h < 32 / AT_ONCE; h++) {
        if (lane / AT_ONCE == h)
#pragma unroll
            for (unsigned k = 0; k < 4; k++)
                stage[lane % AT_ONCE][k ^ (lane >> 1 & 3)] =
                    make_uint4(pairs[4 * k], pairs[4 * k + 1], pairs[4 * k + 2], pairs[4 * k + 3]);
        __syncwarp();
#pragma unroll
        for (unsigned j = 0; j < AT_ONCE / 8; j++) {
            unsigned const q = 8 * j + (lane >> 2), c = lane & 3; /* the round's group q's chunk c */
            dst[4 * AT_ONCE * h + 32 * j + lane] = stage[q][c ^ (q >> 1 & 3)];
        }
        __syncwarp(); /* the stage is read before it is written again */
    }
}

/* Units [u0, u1), element i into out[i - u0 * unitSize]. Registers held
 * to 48, so that 10 blocks fit a multiprocessor (the warps' stores through
 * shared memory took 55 otherwise: 9, as many warps as a block fewer).
 * The grid fills the device once (decode_grid) and each block loops over
 * its units, reading the next one's escape counts while it decodes this
 * one: a block a unit read them first, a trip to memory before its
 * window's and its groups' loads could start. */
__global__ void __launch_bounds__(BLOCK, 10)
fast_decode_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t u0, uint64_t u1, uint16_t* __restrict__ out)
{
    typedef cub::BlockScan<uint32_t, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan;
    __shared__ uint32_t slots[BLOCK][GK_PATCH_SLOT_WORDS];
    __shared__ uint32_t window[BLOCK];
    __shared__ uint4 staged[BLOCK / 32][32][4];
    uint64_t const origin = u0 * t.unitSize;
    unsigned const lane = threadIdx.x & 31;
    /* the nibble form: a thread rebuilds its whole group in registers, and
     * a warp whose groups are all whole writes them 512 bytes at a time */
    bool const wide = t.codeForm == GK_CODES_NIBBLES && nibble_words_aligned(blob, &t) && !((uintptr_t)out & 15);
    uint32_t const symLo = gk_read32(t.fastSymbols), symHi = gk_read32(t.fastSymbols + 4);
    uint64_t u = u0 + blockIdx.x;
    /* the escapes before unit u (even lanes) and after it (odd lanes), each
     * lane's own: read as the block's, the compiler took each into a
     * uniform register as it was loaded, which waited for it there */
    uint32_t ahead = u < u1 ? unit_start_ahead(blob, t, u + (lane & 1)) : 0;
    for (; u < u1; u += gridDim.x) {
        uint64_t const a = u * t.unitSize;
        uint64_t const b = gk_unit_end(&t, u);
        uint64_t const last = (b - 1) >> 5, nbEsc = __shfl_sync(0xFFFFFFFFu, ahead, 1);
        uint64_t esc = __shfl_sync(0xFFFFFFFFu, ahead, 0);
        if (u + gridDim.x < u1) ahead = unit_start_ahead(blob, t, u + gridDim.x + (lane & 1));
        for (uint64_t g0 = a >> 5; g0 <= last; g0 += BLOCK) {
            uint64_t const g = g0 + threadIdx.x;
            bool const whole = wide && g <= last && 32 * g + 32 <= b;
            bool const warpWhole = wide && 32 * (g - lane + 32) <= b; /* the same in every lane of the warp */
            uint32_t sel[4], raw[8], m = 0;
            /* every load of the step first: the escape window, codes,
             * planes; the window's word stored in shared memory once they
             * are all issued (stored as it came, it held the group's loads
             * back a trip to memory) */
            uint64_t const first = gk_window_first(esc);
            uint32_t const word = wide ? gk_window_word(blob, &t, first, threadIdx.x) : 0;
            if (whole) {
                const uint32_t* const cp = (const uint32_t*)(blob + t.codePlanes) + 3 * g;
                uint32_t const w0 = __ldg(cp), w1 = __ldg(cp + 1), w2 = __ldg(cp + 2);
                group_planes(blob, t, g, raw);
                gk_nibble_selectors(w0, w1, w2, sel);
                m = gk_nibble_escapes(w0, w1, w2);
            } else if (g <= last) {
                m = gk_fast_escapes(blob, &t, g, a, b);
            }
            if (wide) window[threadIdx.x] = word;
            uint32_t before, total;
            Scan(scan).ExclusiveSum(gk_popc(m), before, total);
            __syncthreads(); /* the window is whole */
            if (whole) {
                uint32_t pairs[16];
                nibble_pairs(blob, t, sel, m, raw, window, BLOCK, first, esc + before, nbEsc, symLo, symHi,
                             slots[threadIdx.x], pairs);
                if (warpWhole) {
                    uint4* const dst = (uint4*)(out + (32 * (g - lane) - origin)); /* the warp's first group's */
                    warp_store_groups<32>(dst, pairs, staged[threadIdx.x >> 5], lane);
                } else {
                    uint4* const dst = (uint4*)(out + (32 * g - origin));
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        dst[k] = make_uint4(pairs[4 * k], pairs[4 * k + 1], pairs[4 * k + 2], pairs[4 * k + 3]);
                }
            } else if (g <= last) {
                gk_fast_group(blob, &t, g, a, b, esc + before, nbEsc, out, origin);
            }
            esc += total;
            __syncthreads(); /* the scan's storage and the window are used again */
        }
    }
}

__global__ void huffman_decode_kernel(const uint8_t* __restrict__ blob, gk_tensor t,
                                      const gk_huf_tables* __restrict__ tables, uint16_t* __restrict__ out)
{
    __shared__ __align__(16) uint16_t shared[1 << GK_HUF_MAX_BITS];
    stage_table(shared, tables->one, 2u << t.maxBits);
    __syncthreads();
    for (uint64_t u = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; u < t.nbUnits;
         u += (uint64_t)gridDim.x * blockDim.x)
        gk_huffman_unit(blob, &t, shared, u, out);
}

/* Blocks of fast_decode_kernel for n units: as many as the device holds
 * at once (asked once per device), or n where fewer. */
static cudaError_t decode_grid(uint64_t n, unsigned* grid)
{
    static int perSm[16];
    device_limits dev;
    cudaError_t e = device_limits_get(&dev);
    int per = dev.device < 16 ? perSm[dev.device] : 0;
    if (e != cudaSuccess) return e;
    if (!per) {
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, fast_decode_kernel, BLOCK, 0);
        if (e != cudaSuccess) return e;
        if (per < 1) per = 1;
        if (dev.device < 16) perSm[dev.device] = per;
    }
    uint64_t const full = (uint64_t)dev.sms * (uint64_t)per;
    *grid = grid_for(n < full ? n : full);
    return cudaSuccess;
}

/* The backend's launchers (gpu/backend.c through gpu/device.c): units
 * [u0, u1) of a fast-layout blob into out (from the first unit's first
 * element); y = W x with room for parts given. 0 or the CUDA error. */
extern "C" int glyd_cudaLaunchDecodeUnits(const uint8_t* blob, const gk_tensor* t, uint64_t u0, uint64_t u1,
                                          uint16_t* out, void* stream)
{
    unsigned grid;
    cudaError_t e;
    if (u1 <= u0) return 0;
    if ((e = decode_grid(u1 - u0, &grid)) != cudaSuccess) return (int)e;
    fast_decode_kernel<<<grid, BLOCK, 0, (cudaStream_t)stream>>>(blob, *t, u0, u1, out);
    return (int)cudaGetLastError();
}

/* Units [u0, u1) of a Huffman blob, a thread per run, into out (from the
 * first unit's first element). */
__global__ void huffman_runs_kernel(const uint8_t* __restrict__ blob, gk_tensor t,
                                    const gk_huf_tables* __restrict__ tables, const uint16_t* __restrict__ runs,
                                    uint64_t u0, uint64_t u1, uint16_t* __restrict__ out)
{
    /* the table in shared memory: each symbol's lookup waits on it */
    __shared__ __align__(16) uint16_t codes[1 << GK_HUF_MAX_BITS];
    uint64_t const rpu = gk_huf_runs_per_unit(&t);
    stage_table(codes, tables->one, 2u << t.maxBits);
    __syncthreads();
    for (uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; r < (u1 - u0) * rpu;
         r += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t const u = u0 + r / rpu;
        uint64_t const a = u * t.unitSize, b = gk_unit_end(&t, u);
        gk_huf_unit_run(blob, &t, codes, runs, u, r % rpu, a, b, out, u0 * t.unitSize);
    }
}

/* The same where every group is whole (gk_huf_by_groups): a block takes
 * BLOCK runs at a time; each thread decodes its run to symbols in shared
 * memory through the multi-symbol table; then the block's threads build
 * its groups from symbols and planes (gk_huffman_pairs), consecutive
 * threads on consecutive groups, a warp on 4 runs. Where those are whole
 * and follow one another, as in a matrix's rows, the warp stores their
 * 32 groups 512 bytes at a time (warp_store_groups), staged 16 lanes at a
 * time in the runs' symbol rows, which it has read by then (the kernel's
 * shared memory, 45.5 KiB, leaves no room for a stage of its own);
 * otherwise each group in four 16-byte stores. */
__global__ void huffman_groups_kernel(const uint8_t* __restrict__ blob, gk_tensor t,
                                      const gk_huf_tables* __restrict__ tables, const uint16_t* __restrict__ runs,
                                      uint64_t u0, uint64_t u1, uint16_t* __restrict__ out)
{
    __shared__ __align__(16) uint32_t multi[1 << GK_HUF_MAX_BITS];
    __shared__ __align__(16) uint8_t syms[BLOCK][GK_HUF_SLOT]; /* a run a row; padded as in the rows kernel */
    /* each row's run: its first element and its length (0: none), found by
     * the thread that decodes it; the groups' threads read them, where each
     * divided by the runs of a unit before (some 60 instructions a group) */
    __shared__ uint64_t runStart[BLOCK];
    __shared__ uint32_t runLength[BLOCK];
    /* a bit a row: its run is whole (GK_HUF_RUN elements). Four whole runs
     * in a row follow one another: only a unit's last run can be short,
     * so a unit whose last is whole ends where the next unit starts */
    __shared__ uint32_t runsWhole[BLOCK / 32];
    uint64_t const rpu = gk_huf_runs_per_unit(&t), nbRuns = (u1 - u0) * rpu, origin = u0 * t.unitSize;
    unsigned const lane = threadIdx.x & 31, runsOfWarp = 32 / (GK_HUF_RUN / 32);
    bool const wide = !((uintptr_t)out & 15); /* as each run starts a group, so are the runs' stores */
    static_assert(sizeof syms[0] * (32 / (GK_HUF_RUN / 32)) >= 16 * 64 && sizeof syms[0] % 16 == 0,
                  "a warp's symbol rows hold 16 lanes' groups, 16-byte aligned");
    stage_table(multi, tables->multi, 4u << GK_HUF_MAX_BITS);
    __syncthreads();
    for (uint64_t r0 = (uint64_t)blockIdx.x * BLOCK; r0 < nbRuns; r0 += (uint64_t)gridDim.x * BLOCK) {
        uint64_t a = 0, b = 0;
        if (r0 + threadIdx.x < nbRuns) {
            uint64_t const r = r0 + threadIdx.x, u = u0 + r / rpu;
            uint64_t const bit = gk_huf_run_at(blob, &t, runs, u, r % rpu, &a, &b);
            gk_huffman_symbols(blob, &t, multi, bit, a, b, syms[threadIdx.x], a);
        }
        runStart[threadIdx.x] = a;
        runLength[threadIdx.x] = (uint32_t)(b - a);
        unsigned const wholeRuns = __ballot_sync(0xFFFFFFFFu, b - a == GK_HUF_RUN);
        if (lane == 0) runsWhole[threadIdx.x >> 5] = wholeRuns;
        __syncthreads();
        for (unsigned idx = threadIdx.x; idx < BLOCK * (GK_HUF_RUN / 32); idx += BLOCK) {
            unsigned const row = idx / (GK_HUF_RUN / 32), g = idx % (GK_HUF_RUN / 32);
            /* the warp's runs (the same in every lane): whole, so one after the other */
            unsigned const row0 = (idx - lane) / (GK_HUF_RUN / 32);
            bool const whole = wide && (~runsWhole[row0 >> 5] >> (row0 & 31) & ((1u << runsOfWarp) - 1)) == 0;
            if (!whole && 32 * g >= runLength[row]) continue;
            uint64_t const first = runStart[row] + 32 * g; /* the group's first element */
            const uint4* const p = (const uint4*)(syms[row] + 32 * g);
            uint4 const s0 = p[0], s1 = p[1];
            uint32_t const sym[8] = { s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w };
            uint32_t pairs[16];
            gk_huffman_pairs(blob, &t, first / 32, sym, pairs);
            if (whole) {
                __syncwarp(); /* every lane's symbols read: their rows are the stage */
                uint4* const dst = (uint4*)(out + (runStart[row0] - origin)); /* the warp's first group's */
                warp_store_groups<16>(dst, pairs, (uint4(*)[4])syms[row0], lane);
                continue;
            }
            uint4* const dst = (uint4*)(out + (first - origin));
#pragma unroll
            for (int k = 0; k < 4; k++)
                dst[k] = make_uint4(pairs[4 * k], pairs[4 * k + 1], pairs[4 * k + 2], pairs[4 * k + 3]);
        }
        __syncthreads(); /* the symbols are used again */
    }
}

extern "C" int glyd_cudaLaunchDecodeRuns(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                         const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* out,
                                         void* stream)
{
    uint64_t const n = (u1 - u0) * gk_huf_runs_per_unit(t);
    cudaStream_t const s = (cudaStream_t)stream;
    if (u1 <= u0) return 0;
    if (!gk_huf_blob_aligned(blob)) return (int)cudaErrorMisalignedAddress;
    if (gk_huf_by_groups(t) && !((uintptr_t)out & 15))
        huffman_groups_kernel<<<grid_for((n + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(blob, *t, tables, runs, u0, u1, out);
    else
        huffman_runs_kernel<<<grid_for((n + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(blob, *t, tables, runs, u0, u1, out);
    return (int)cudaGetLastError();
}

extern "C" size_t glyd_cudaDecode(const glyd_cudaTensor* t, uint16_t* dst, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    if (t->t.nbElements == 0) return 0;
    if (t->t.layout == GK_LAYOUT_FAST)
        CUDA_TRY((cudaError_t)glyd_cudaLaunchDecodeUnits(t->blob, &t->t, 0, t->t.nbUnits, dst, stream),
                 "decode launch");
    else if (t->runs || gk_huf_index_size(&t->t) == 0)
        CUDA_TRY((cudaError_t)glyd_cudaLaunchDecodeRuns(t->blob, &t->t, t->tables, t->runs, 0, t->t.nbUnits, dst,
                                                        stream),
                 "decode launch");
    else
        huffman_decode_kernel<<<grid_for((t->t.nbUnits + BLOCK - 1) / BLOCK), BLOCK, 0, s>>>(t->blob, t->t,
                                                                                           t->tables, dst);
    CUDA_TRY(cudaGetLastError(), "decode launch");
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * products.cu: y = W x on the GPU, each weight of W decoded from its blob
 * into a register (or, Huffman, its unit into shared memory) and
 * multiplied there. The per-thread work is tensor_kernels.h, shared with
 * the CPU emulation that tests it (tensor_gpu.c); here are the launches
 * and the reductions.
 *
 *   rows are whole groups (every real model): the rows kernel. x staged in
 *     shared memory; a warp per unit, row by row; a thread per group,
 *     rebuilt in registers (fast layout, nibble form), read as it is (plain
 *     bf16) or from the warp's unit decoded into shared memory (Huffman),
 *     and multiplied there; a butterfly of shuffles sums each row in a
 *     fixed order, the same for every layout.
 *   otherwise (rows that cut groups): the general kernel, a block per
 *     unit, a warp per row (or per part of a long row); lanes decode the 32
 *     elements of a group side by side. Parts of long rows are added in
 *     order afterwards, by either kernel.
 */
#include <cub/block/block_scan.cuh>

#include "copies.cuh"

/* The sum of v over lanes 0 .. lane of the warp: a shuffle up and an
 * add a step, the add predicated on the shuffle's own test that the lane
 * it read is in the warp (rather than a lane test and a select). */
__device__ __forceinline__ unsigned warp_inclusive_sum(unsigned v, unsigned lane)
{
#ifndef GLYD_CUDACPU
    (void)lane;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1)
        asm("{\n\t.reg .u32 r;\n\t.reg .pred p;\n\t"
            "shfl.sync.up.b32 r|p, %0, %1, 0, 0xffffffff;\n\t"
            "@p add.u32 %0, %0, r;\n\t}"
            : "+r"(v)
            : "r"(d));
#else /* the kernels on the CPU (tests/cudacpu): no PTX */
    for (int d = 1; d < 32; d <<= 1) {
        unsigned const n = __shfl_up_sync(0xFFFFFFFFu, v, d);
        if (lane >= (unsigned)d) v += n;
    }
#endif
    return v;
}

/* One unit's segments (its whole rows, or the unit itself when it is part
 * of a long row), each cut into chunks of groups when the unit has fewer
 * segments than the block has warps, so that every warp works: warp w
 * takes items (segment, chunk) w, w + GEMV_WARPS, ... Each item's escapes
 * start where the block's count of the items before it says; each item
 * sums in its warp's butterfly, then each segment adds its chunks in order
 * into y (whole rows) or parts[v][unit] (parts of long rows). */
/* HUFFMAN: the Huffman layout, each unit first decoded into shared memory
 * a run a thread (runs: where each starts), then read in the same order:
 * every layout gives the same sums. Otherwise fast or stored. */
template <bool HUFFMAN>
__global__ void fast_gemv_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t rows, uint64_t cols,
                                 const float* __restrict__ x, unsigned batch, float* __restrict__ y,
                                 float* __restrict__ parts, const gk_huf_tables* __restrict__ tables,
                                 const uint16_t* __restrict__ runs)
{
    __shared__ uint32_t before[GEMV_MAX_ITEMS + 1];
    __shared__ float sums[GEMV_MAX_ITEMS * GEMV_MAX_BATCH];
    __shared__ uint16_t unit[HUFFMAN ? GK_HUF_UNIT_MAX : 1];
    __shared__ __align__(16) uint16_t codes[HUFFMAN ? 1 << GK_HUF_MAX_BITS : 1];
    unsigned const warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (HUFFMAN) {
        stage_table(codes, tables->one, 2u << t.maxBits);
        __syncthreads();
    }
    for (uint64_t u = blockIdx.x; u < t.nbUnits; u += gridDim.x) {
        gk_gemv_unit const g = gk_gemv_plan(&t, u, cols, GEMV_WARPS);
        uint64_t const nbEsc = HUFFMAN ? 0 : gk_escapes_before(blob, &t, u + 1);
        if (HUFFMAN) {
            for (uint64_t k = threadIdx.x; k < gk_huf_runs_per_unit(&t); k += blockDim.x)
                gk_huf_unit_run(blob, &t, codes, runs, u, k, g.a, g.b, unit, g.a);
            __syncthreads();
        }
        if (!HUFFMAN) {
            /* each item's escapes start after those of the items before it */
            for (uint64_t it = warp; it < g.nbItems; it += GEMV_WARPS) {
                uint64_t ia, ib;
                uint32_t n = 0;
                gk_gemv_item(&g, it, &ia, &ib);
                for (uint64_t q = (ia >> 5) + lane; ia < ib && q <= (ib - 1) >> 5; q += 32)
                    n += gk_popc(gk_escapes(blob, &t, q, ia, ib));
                for (int m = 16; m; m >>= 1) n += __shfl_xor_sync(0xFFFFFFFFu, n, m);
                if (lane == 0) before[it + 1] = n;
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                before[0] = 0;
                for (uint64_t it = 1; it <= g.nbItems; it++) before[it] += before[it - 1];
            }
            __syncthreads();
        }
        for (uint64_t it = warp; it < g.nbItems; it += GEMV_WARPS) {
            uint64_t ia, ib;
            uint64_t esc = HUFFMAN ? 0 : gk_escapes_before(blob, &t, u) + before[it];
            float acc[GEMV_MAX_BATCH];
            gk_gemv_item(&g, it, &ia, &ib);
            uint64_t const col0 = (ia / cols) * cols;
            for (unsigned v = 0; v < GEMV_MAX_BATCH; v++) acc[v] = 0;
            for (uint64_t q = ia >> 5; ia < ib && q <= (ib - 1) >> 5; q++) {
                uint64_t const i = 32 * q + lane;
                float const w = __uint_as_float(!HUFFMAN ? gk_lane(blob, &t, q, lane, ia, ib, esc, nbEsc)
                                                : i >= ia && i < ib ? (uint32_t)unit[i - g.a] << 16 : 0u);
                /* fmaf, as the emulation: not left to the compiler's contraction of a * b + c */
                if (i >= ia && i < ib)
                    for (unsigned v = 0; v < batch; v++) acc[v] = fmaf(w, x[v * cols + (i - col0)], acc[v]);
                if (!HUFFMAN) esc += gk_popc(gk_escapes(blob, &t, q, ia, ib)); /* the same in every lane */
            }
            for (unsigned v = 0; v < batch; v++) {
                float r = acc[v];
                for (int m = 16; m; m >>= 1) r += __shfl_xor_sync(0xFFFFFFFFu, r, m);
                if (lane == 0) sums[it * GEMV_MAX_BATCH + v] = r;
            }
        }
        __syncthreads();
        for (uint64_t sg = threadIdx.x; sg < g.nbSeg; sg += blockDim.x)
            for (unsigned v = 0; v < batch; v++) {
                float r = sums[sg * g.chunks * GEMV_MAX_BATCH + v];
                for (uint64_t c = 1; c < g.chunks; c++) r += sums[(sg * g.chunks + c) * GEMV_MAX_BATCH + v];
                if (g.whole) y[v * rows + g.firstRow + sg] = r;
                else parts[v * t.nbUnits + u] = r;
            }
        __syncthreads(); /* before[] and sums[] are used again */
    }
}

/* Long rows: the parts' sums added in order. */
__global__ void gemv_parts_kernel(const float* __restrict__ parts, uint64_t nbUnits, uint64_t rows,
                                  uint64_t perRow, unsigned batch, float* __restrict__ y)
{
    uint64_t const r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (unsigned v = 0; v < batch; v++) {
        float s = 0;
        for (uint64_t p = 0; p < perRow; p++) s += parts[v * nbUnits + r * perRow + p];
        y[v * rows + r] = s;
    }
}

/* ------------------------------------------------------------------------ */
/* Products by rows of whole groups (gk_rows_fits): a thread per group       */
/* ------------------------------------------------------------------------ */

/* The unit that item (a row, or where rows are cut in parts, this
 * block's part of a row) is. */
__device__ __forceinline__ uint64_t rows_unit(uint64_t item, uint64_t perRow, uint64_t part)
{
    return perRow > 1 ? item * perRow + part : item;
}

/* What the rows kernel reads of an item before its first step, read an
 * item ahead of its use (the first in x's trip: a warp mostly has one
 * item, and at a row a unit these reads were a trip of their own before
 * the row's first step, a fifth of a 4096-column row's): the fast layout's
 * escape counts around item0, into the warp's two words of shared memory
 * (rows_counts_ahead; held in registers, at batch 1 one was spilled as it
 * was loaded, and the spill's store waited for the load); where the lane's
 * run of the Huffman units from item0 on starts (the stream's first word
 * needs it). */
typedef struct {
    uint64_t bit; /* Huffman */
} rows_ahead;

/* Lanes 0 and 1: the escapes before unit u and after it into counts[0]
 * and counts[1], copied where aligned (the index of counts is, as coded). */
__device__ __forceinline__ void rows_counts_ahead(uint32_t* counts, const uint8_t* __restrict__ blob,
                                                  const gk_tensor& t, uint64_t u, unsigned lane)
{
    if (lane > 1) return;
    const uint8_t* const p = unit_start_at(blob, t, u + lane);
    if (p && !((uintptr_t)p & 3)) copy4_async(counts + lane, p);
    else counts[lane] = unit_start_ahead(blob, t, u + lane);
}

/* The counts that rows_counts_ahead asked for, seen by every lane. */
__device__ __forceinline__ void rows_counts_wait(void)
{
    copy_wait();
    __syncwarp();
}

template <int LAYOUT>
__device__ __forceinline__ rows_ahead rows_read_ahead(const uint8_t* __restrict__ blob, const gk_tensor& t,
                                                      const uint16_t* __restrict__ runs, uint32_t* counts,
                                                      uint64_t item0, uint64_t items, uint64_t step, uint64_t perRow,
                                                      uint64_t part, unsigned lane, unsigned rpu, unsigned together)
{
    rows_ahead a = { 0 };
    if (LAYOUT == GK_LAYOUT_FAST && item0 < items)
        rows_counts_ahead(counts, blob, t, rows_unit(item0, perRow, part), lane);
    if (LAYOUT == GK_LAYOUT_HUFFMAN) {
        uint64_t const item = item0 + lane / rpu * step;
        if (lane < together * rpu && item < items)
            a.bit = gk_huf_run_bit(blob, &t, runs, rows_unit(item, perRow, part), lane % rpu);
    }
    return a;
}

/* Unit u's planes (Huffman) asked of L2, a 128-byte line a lane at a time
 * (lines from the blob's start, which device allocations align: a hint,
 * but kept to the blob). */
__device__ __forceinline__ void prefetch_planes(const uint8_t* __restrict__ blob, const gk_tensor& t, uint64_t u,
                                                unsigned lane)
{
    uint64_t const a = t.planes + gk_huf_group_planes(&t) * (u * t.unitSize / 32);
    uint64_t const b = t.planes + gk_huf_group_planes(&t) * ((gk_unit_end(&t, u) + 31) / 32);
    for (uint64_t o = (a & ~(uint64_t)127) + 128 * lane; o < b; o += 128 * 32)
        prefetch_l2(blob + o);
}

/* A warp per unit, row by row (see tensor_kernels.h); blockIdx.y is the
 * part of a long row that the block's units hold, whose x it stages.
 * vectors (at most BATCH) of x are read from x, y and parts as given.
 * At batch 1, the common case, registers are held to 64 a thread (no
 * spills, sm_90), so that 4 blocks fit a multiprocessor rather than 3:
 * a step's loads are all issued at once, and more warps keep more of
 * them in flight. Not for the Huffman layout, whose blocks' shared memory
 * (some 96 KiB at rows of 4096: the units each warp decodes at once) lets
 * only 2 fit on sm_90, 1 on sm_80/86/89: held to 64 there, registers
 * bought nothing and spilled on sm_80. */
template <int LAYOUT, int BATCH>
__global__ void __launch_bounds__(32 * GK_ROWS_WARPS, BATCH > 1                    ? 1
                                                      : LAYOUT == GK_LAYOUT_HUFFMAN ? 2
                                                                                    : GK_ROWS_FAST_BLOCKS)
rows_kernel(const uint8_t* __restrict__ blob, gk_tensor t, uint64_t rows, uint64_t cols, const float* __restrict__ x,
            unsigned vectors, float* __restrict__ y, float* __restrict__ parts,
            const gk_huf_tables* __restrict__ tables, const uint16_t* __restrict__ runs)
{
    unsigned const warps = blockDim.x >> 5;
    extern __shared__ __align__(16) uint8_t smem[];
    uint64_t const span = gk_rows_span(&t, cols), stride = gk_rows_stride(span);
    unsigned const groups = (unsigned)(span / 32); /* span is a unit's at most: 32-bit arithmetic within a row */
    uint64_t const perRow = cols / span, part = blockIdx.y;
    unsigned const warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    /* the block's shared memory, as tensor_kernels.h lays it out */
    uint32_t* const multi = (uint32_t*)smem;
    float* const xs = (float*)(smem + gk_rows_x_at(LAYOUT));
    uint8_t* const after = (uint8_t*)xs + gk_rows_after_x(vectors, stride);
    uint64_t const items = perRow > 1 ? rows : t.nbUnits, step = (uint64_t)gridDim.x * warps;
    /* Huffman: a warp decodes `together` of its units at once, their runs
     * a lane each (32 at most), then multiplies them one after another */
    unsigned const rpu = LAYOUT == GK_LAYOUT_HUFFMAN ? (unsigned)gk_huf_runs_per_unit(&t) : 1;
    unsigned const together = LAYOUT == GK_LAYOUT_HUFFMAN ? gk_huf_units_together(&t) : 1;
    /* loads that need nothing staged share x's trip: the Huffman table's,
     * and the warp's first item's reads */
    unsigned const multiBytes = 4u << GK_HUF_MAX_BITS;
    table_words const tableFirst = table_begin(LAYOUT == GK_LAYOUT_HUFFMAN ? tables->multi : NULL,
                                               LAYOUT == GK_LAYOUT_HUFFMAN ? multiBytes : 0);
    uint64_t const firstItem = (uint64_t)blockIdx.x * warps + warp;
    /* fast: the warp's window, and its two escape counts read ahead */
    uint32_t* const window = (uint32_t*)after + gk_rows_windows_at(blockDim.x) + 32 * warp;
    uint32_t* const counts = (uint32_t*)(after + gk_rows_counts_at(blockDim.x)) + 2 * warp;
    rows_ahead ahead =
        rows_read_ahead<LAYOUT>(blob, t, runs, counts, firstItem, items, step, perRow, part, lane, rpu, together);
    /* x's part for this block, padded */
    stage_x(xs, x, cols, span, stride, part, BATCH == 1 ? 1 : vectors);
    if (LAYOUT == GK_LAYOUT_HUFFMAN) table_end(multi, tables->multi, multiBytes, tableFirst);
    __syncthreads();
    uint32_t const symLo = gk_read32(t.fastSymbols), symHi = gk_read32(t.fastSymbols + 4);
    uint8_t* const units = LAYOUT != GK_LAYOUT_HUFFMAN ? NULL
                           : after + warp * together * gk_huf_unit_bytes(&t);
    /* Huffman: a block's warps decode their units side by side, then
     * multiply them side by side, and only 2 blocks fit a multiprocessor:
     * read where they are used, each step's planes were a trip to memory
     * that few other warps had work to cover. So the units' planes are
     * asked of L2 before they are decoded, and each step's read a step
     * ahead (planes: the lane's for the step at hand) */
    gk_planes planes;
    for (uint64_t item0 = firstItem; item0 < items; item0 += together * step) {
        rows_ahead const now = ahead;
        uint64_t escNow = 0, endNow = 0; /* fast */
        if (LAYOUT == GK_LAYOUT_FAST) {
            rows_counts_wait();
            escNow = counts[0], endNow = counts[1];
            __syncwarp(); /* read by every lane before the next item's come */
        }
        ahead = rows_read_ahead<LAYOUT>(blob, t, runs, counts, item0 + together * step, items, step, perRow, part,
                                        lane, rpu, together);
        if (LAYOUT == GK_LAYOUT_HUFFMAN) {
            for (unsigned j = 0; j < together && item0 + j * step < items; j++)
                prefetch_planes(blob, t, rows_unit(item0 + j * step, perRow, part), lane);
            __syncwarp(); /* the last units' reads are done */
            uint64_t const item = item0 + lane / rpu * step, u = rows_unit(item, perRow, part);
            if (lane < together * rpu && item < items)
                gk_huf_unit_symbols(blob, &t, multi, now.bit, u, lane % rpu,
                                    units + lane / rpu * gk_huf_unit_bytes(&t));
            __syncwarp();
        }
        for (unsigned j = 0; j < together && item0 + j * step < items; j++) {
            uint64_t const u = rows_unit(item0 + j * step, perRow, part);
            uint64_t const unitStart = u * t.unitSize, nbRows = gk_rows_in_unit(&t, cols, u);
            /* fast: one item at a time (together 1) */
            uint64_t const nbEsc = endNow;
            uint64_t esc = escNow;
            uint8_t* const unit = units + j * gk_huf_unit_bytes(&t);
            for (uint64_t r = 0; r < nbRows; r++) {
                uint64_t const q0 = (unitStart + r * span) / 32;
                float acc[BATCH][4];
#pragma unroll
                for (int v = 0; v < BATCH; v++) acc[v][0] = acc[v][1] = acc[v][2] = acc[v][3] = 0;
                /* Huffman: the row's planes, a group's at a time (each step's
                 * address in 32 bits from here, where a group's number was a
                 * 64-bit product); its first step's now */
                const uint8_t* const rowPlanes = blob + t.planes + gk_huf_group_planes(&t) * q0;
                unsigned const groupPlanes = (unsigned)gk_huf_group_planes(&t);
                if (LAYOUT == GK_LAYOUT_HUFFMAN)
                    gk_huffman_planes_at(&t, rowPlanes + (lane < groups ? groupPlanes * lane : 0), &planes);
                constexpr int stepsUnrolled = LAYOUT == GK_LAYOUT_HUFFMAN ? 2 : 1; /* see the planes below */
#pragma unroll stepsUnrolled
                for (unsigned i = 0; i < groups; i += 32) {
                    uint64_t const q = q0 + i + lane;
                    bool const active = i + lane < groups;
                    uint32_t pairs[16];
                    if (LAYOUT == GK_LAYOUT_FAST) {
                        /* every load of the step first: codes, planes, a word
                         * of the warp's escape window */
                        uint64_t const first = gk_window_first(esc);
                        uint32_t const word = gk_window_word(blob, &t, first, lane);
                        uint32_t w0, w1, w2, sel[4], raw[8];
                        const uint32_t* const cp = (const uint32_t*)(blob + t.codePlanes) + 3 * q;
                        w0 = active ? __ldg(cp) : 0, w1 = active ? __ldg(cp + 1) : 0;
                        w2 = active ? __ldg(cp + 2) : 0;
                        if (active) group_planes(blob, t, q, raw);
                        gk_nibble_selectors(w0, w1, w2, sel);
                        uint32_t m = gk_nibble_escapes(w0, w1, w2);
                        /* this lane's escapes start after the lanes' before it */
                        unsigned const count = __popc(m), before = warp_inclusive_sum(count, lane);
                        uint64_t const mine = esc + before - count;
                        esc += __shfl_sync(0xFFFFFFFFu, before, 31);
                        __syncwarp(); /* the last step's window is read */
                        window[lane] = word;
                        __syncwarp();
                        if (active)
                            nibble_pairs(blob, t, sel, m, raw, window, 32, first, mine, nbEsc, symLo, symHi,
                                         (uint32_t*)after + GK_PATCH_SLOT_WORDS * threadIdx.x, pairs);
                    } else if (LAYOUT == GK_LAYOUT_STORED) {
                        if (active) {
                            const uint4* const p = (const uint4*)(blob + 64 * q);
#pragma unroll
                            for (int k = 0; k < 4; k++) {
                                uint4 const d = __ldg(p + k);
                                pairs[4 * k] = d.x;
                                pairs[4 * k + 1] = d.y;
                                pairs[4 * k + 2] = d.z;
                                pairs[4 * k + 3] = d.w;
                            }
                        }
                    } else {
                        /* the next step's planes before this step's are used (where the lane
                         * has no group there, and after the row's last step, the row's first
                         * again: read, not used, so that the copy into planes needs no test,
                         * and two steps unrolled keep the two sets in registers rather than
                         * copying one into the other: 276 instructions a step became 255) */
                        gk_planes next;
                        unsigned const nextGroup = i + 32 + lane;
                        gk_huffman_planes_at(&t, rowPlanes + (nextGroup < groups ? groupPlanes * nextGroup : 0),
                                             &next);
                        if (active) {
                            uint32_t const o = (uint32_t)(r * span) + 32 * (i + lane); /* in the unit */
                            const uint4* const p = (const uint4*)(unit + (uint32_t)gk_huf_slot_offset(o));
                            uint4 const a = p[0], b = p[1];
                            uint32_t const sym[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
                            gk_huffman_join(&t, &planes, sym, pairs);
                        }
                        planes = next;
                    }
                    if (active) {
                        unsigned const c = 32 * (i + lane); /* the group's first column in the part */
#pragma unroll
                        for (int v = 0; v < BATCH; v++) {
                            /* vectors past the last read vector 0's x, their sums unused */
                            const float* const xv = xs + (v < (int)vectors ? v : 0) * stride + c + c / 32 * 4;
                            float xl[32];
#pragma unroll
                            for (int k = 0; k < 8; k++) {
                                float4 const f = *(const float4*)(xv + 4 * k);
                                xl[4 * k] = f.x;
                                xl[4 * k + 1] = f.y;
                                xl[4 * k + 2] = f.z;
                                xl[4 * k + 3] = f.w;
                            }
                            gk_group_fma(pairs, xl, acc[v]);
                        }
                    }
                }
#pragma unroll
                for (int v = 0; v < BATCH; v++) {
                    float s = (acc[v][0] + acc[v][1]) + (acc[v][2] + acc[v][3]);
                    for (int m = 16; m; m >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, m);
                    if (lane == 0 && v < (int)vectors) {
                        if (perRow > 1) parts[v * t.nbUnits + u] = s;
                        else y[v * rows + u * (t.unitSize / cols) + r] = s;
                    }
                }
            }
        }
    }
}

/* A launch of the rows kernel for vectors [0, vectors) of x, with warps
 * per block and smem bytes of shared memory that the device allows. */
template <int LAYOUT, int BATCH>
static cudaError_t launch_rows(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                               const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x, unsigned vectors,
                               float* y, float* parts, unsigned warps, size_t smem, const device_limits* dev,
                               cudaStream_t stream)
{
    /* the shared memory limit raised once per device; blocks per
     * multiprocessor for the last few block shapes and devices (an engine
     * asks for the same few). Not for host threads launching at once. */
    static unsigned ready; /* a bit per device */
    static struct { int device; size_t smem; unsigned warps; int perSm; } seen[4];
    static unsigned next;
    int perSm = 0;
    unsigned k;
    cudaError_t e;
    if (t->nbElements == 0) return cudaSuccess; /* no items */
    if (dev->device >= 32 || !((ready >> dev->device) & 1)) {
        e = cudaFuncSetAttribute(rows_kernel<LAYOUT, BATCH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)dev->smemMost);
        if (e != cudaSuccess) return e;
        if (dev->device < 32) ready |= 1u << dev->device;
    }
    for (k = 0; k < 4 && !perSm; k++)
        if (seen[k].perSm && seen[k].device == dev->device && seen[k].smem == smem && seen[k].warps == warps)
            perSm = seen[k].perSm;
    if (!perSm) {
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, rows_kernel<LAYOUT, BATCH>, 32 * warps, smem);
        if (e != cudaSuccess) return e;
        if (!perSm) return cudaErrorInvalidConfiguration;
        seen[next % 4].device = dev->device;
        seen[next % 4].smem = smem;
        seen[next % 4].warps = warps;
        seen[next++ % 4].perSm = perSm;
    }
    /* enough blocks to fill the device, each staging x once and looping
     * (a Huffman warp takes several small units at once) */
    gk_rows_grid const g = gk_rows_launch_grid(t, rows, cols, warps,
                                               LAYOUT == GK_LAYOUT_HUFFMAN ? gk_huf_units_together(t) : 1,
                                               (uint64_t)dev->sms * perSm);
    rows_kernel<LAYOUT, BATCH><<<dim3((unsigned)g.blocks, (unsigned)g.perRow), 32 * warps, smem, stream>>>(
        blob, *t, rows, cols, x, vectors, y, parts, tables, runs);
    return cudaGetLastError();
}

template <int LAYOUT>
static cudaError_t launch_rows_layout(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                      const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x,
                                      unsigned vectors, float* y, float* parts, unsigned warps,
                                      const device_limits* dev, cudaStream_t s)
{
    size_t const smem = gk_rows_smem_plan(LAYOUT, t, cols, vectors, 32 * warps).bytes;
    if (vectors == 1)
        return launch_rows<LAYOUT, 1>(blob, t, tables, runs, rows, cols, x, 1, y, parts, warps, smem, dev, s);
    if (vectors == 2)
        return launch_rows<LAYOUT, 2>(blob, t, tables, runs, rows, cols, x, 2, y, parts, warps, smem, dev, s);
    if (vectors <= 4)
        return launch_rows<LAYOUT, 4>(blob, t, tables, runs, rows, cols, x, vectors, y, parts, warps, smem, dev, s);
    return launch_rows<LAYOUT, 8>(blob, t, tables, runs, rows, cols, x, vectors, y, parts, warps, smem, dev, s);
}

/* y = W x by rows of whole groups, as many vectors at a time as a block
 * stages; the device's alignment of blobs (cudaMalloc) is what its word
 * loads assume, checked. */
static cudaError_t gemv_rows(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                             uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y, float* parts,
                             cudaStream_t s)
{
    int const layout = (int)t->layout;
    unsigned warps = GK_ROWS_WARPS, most = gk_rows_vectors(t, cols);
    device_limits dev;
    cudaError_t e0;
    /* the word loads' alignment (Huffman blobs': glyd_cudaLaunchGemv's) */
    bool const misaligned = layout == GK_LAYOUT_FAST     ? !nibble_words_aligned(blob, t)
                            : layout == GK_LAYOUT_STORED ? ((uintptr_t)blob & 15) != 0
                                                         : false;
    if (misaligned) return cudaErrorMisalignedAddress;
    if ((e0 = device_limits_get(&dev)) != cudaSuccess) return e0;
    /* within the device's shared memory: fewer warps (Huffman: each holds
     * up to 8.5 KiB of symbols), then fewer vectors at a time */
    while (warps > 1 && gk_rows_smem_plan(layout, t, cols, 1, 32 * warps).bytes > dev.smemMost) warps /= 2;
    while (most > 1 && gk_rows_smem_plan(layout, t, cols, most, 32 * warps).bytes > dev.smemMost) most--;
    if (gk_rows_smem_plan(layout, t, cols, most, 32 * warps).bytes > dev.smemMost) return cudaErrorInvalidConfiguration;
    for (unsigned v0 = 0; v0 < batch; v0 += most) {
        unsigned const n = batch - v0 < most ? batch - v0 : most;
        const float* const xv = x + (size_t)v0 * cols;
        float* const yv = y + (size_t)v0 * rows;
        float* const pv = parts ? parts + (size_t)v0 * t->nbUnits : NULL;
        cudaError_t e;
        if (t->layout == GK_LAYOUT_FAST)
            e = launch_rows_layout<GK_LAYOUT_FAST>(blob, t, tables, runs, rows, cols, xv, n, yv, pv, warps, &dev, s);
        else if (t->layout == GK_LAYOUT_STORED)
            e = launch_rows_layout<GK_LAYOUT_STORED>(blob, t, tables, runs, rows, cols, xv, n, yv, pv, warps, &dev, s);
        else
            e = launch_rows_layout<GK_LAYOUT_HUFFMAN>(blob, t, tables, runs, rows, cols, xv, n, yv, pv, warps, &dev, s);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* tables and runs: the Huffman layout's (NULL for the others). */
extern "C" int glyd_cudaLaunchGemv(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                                   const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x,
                                   unsigned batch, float* y, float* parts, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    if (t->nbElements == 0) return 0;
    /* the Huffman kernels decode whole units into shared memory through
     * the run index: the emulation's conditions, checked here as well */
    if (t->layout == GK_LAYOUT_HUFFMAN && (!tables || !gk_huf_products_fit(t, runs != NULL)))
        return (int)cudaErrorInvalidValue;
    if (t->layout == GK_LAYOUT_HUFFMAN && !gk_huf_blob_aligned(blob)) return (int)cudaErrorMisalignedAddress;
    if (gk_rows_fits(t, cols)) {
        cudaError_t const e = gemv_rows(blob, t, tables, runs, rows, cols, x, batch, y, parts, s);
        if (e != cudaSuccess) return (int)e;
    } else if (t->layout == GK_LAYOUT_HUFFMAN)
        fast_gemv_kernel<true><<<grid_for(t->nbUnits), 32 * GEMV_WARPS, 0, s>>>(blob, *t, rows, cols, x, batch, y,
                                                                               parts, tables, runs);
    else
        fast_gemv_kernel<false><<<grid_for(t->nbUnits), 32 * GEMV_WARPS, 0, s>>>(blob, *t, rows, cols, x, batch, y,
                                                                                parts, NULL, NULL);
    if (t->unitSize < cols && cudaPeekAtLastError() == cudaSuccess)
        gemv_parts_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, s>>>(parts, t->nbUnits, rows, cols / t->unitSize,
                                                                         batch, y);
    return (int)cudaGetLastError();
}

extern "C" size_t glyd_cudaGemv(const glyd_cudaTensor* w, uint64_t rows, uint64_t cols, const float* x,
                                unsigned batch, float* y, void* stream)
{
    cudaStream_t const s = (cudaStream_t)stream;
    gk_tensor const* const t = &w->t;
    float* parts = NULL;
    if (batch < 1 || batch > GEMV_MAX_BATCH) return (size_t)-(int)GLYD_error_parameter_outOfBound;
    if (rows * cols != t->nbElements || cols == 0) return (size_t)-(int)GLYD_error_parameter_outOfBound;
    if (t->layout == GK_LAYOUT_HUFFMAN && !gk_huf_products_fit(t, w->runs != NULL))
        return (size_t)-(int)GLYD_error_parameter_outOfBound;
    /* units of whole rows (few enough to count), or even parts of one row */
    if (!gk_gemv_fits(t, cols)) return (size_t)-(int)GLYD_error_parameter_outOfBound;
    if (t->unitSize < cols)
        CUDA_TRY(cudaMallocAsync((void**)&parts, sizeof(float) * batch * t->nbUnits, s), "gemv parts");
    CUDA_TRY((cudaError_t)glyd_cudaLaunchGemv(w->blob, t, w->tables, w->runs, rows, cols, x, batch, y, parts, stream),
             "gemv launch");
    if (parts) CUDA_TRY(cudaFreeAsync(parts, s), "gemv parts");
    return 0;
}

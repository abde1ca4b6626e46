/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emulated_device.c: a GPU device emulated on the CPU, for testing the GPU backend
 * (backend.c) where no GPU is. Device memory is the heap; each kernel runs its
 * blocks, warps and threads in turn, through the same per-thread code as
 * the CUDA kernels (engine_kernels.h, tensor_kernels.h), phase by phase as
 * the kernels synchronise: the same work for each thread, every sum added
 * in the same order. Only the math library differs (expf, sinf, cosf).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../llm/infer/infer.h"

static size_t emu_memory(const glyd_gpuDevice* d, size_t* total, size_t* avail)
{
    long const pages = sysconf(_SC_PHYS_PAGES), free = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    (void)d;
    *total = pages > 0 && size > 0 ? (size_t)pages * (size_t)size : 0;
    *avail = free > 0 && size > 0 ? (size_t)free * (size_t)size : 0;
    return 0;
}

static size_t emu_alloc(const glyd_gpuDevice* d, void** p, size_t size)
{
    (void)d;
    *p = malloc(size);
    RETURN_ERROR_IF(!*p, memory_allocation, "device memory");
    return 0;
}

static void emu_free(const glyd_gpuDevice* d, void* p)
{
    (void)d;
    free(p);
}

static size_t emu_copy(const glyd_gpuDevice* d, void* dst, const void* src, size_t size)
{
    (void)d;
    memcpy(dst, src, size);
    return 0;
}

static size_t emu_gemv(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                       const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y,
                       float* parts)
{
    (void)d;
    (void)parts;
    if (t->layout == GK_LAYOUT_HUFFMAN)
        return glyd_tensorEmulateGemvHuffman(blob, t, tables, runs, rows, cols, x, batch, y);
    return glyd_tensorEmulateGemv(blob, t, rows, cols, x, batch, y);
}

static size_t emu_nibbles(const glyd_gpuDevice* d, uint8_t* blob, const gk_tensor* t)
{
    gk_tensor copy = *t;
    (void)d;
    return glyd_tensorNibbleForm(blob, &copy);
}

static size_t emu_widen(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                        const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* bf16, float* out)
{
    uint64_t const n = gk_unit_end(t, u1 - 1) - u0 * t->unitSize;
    uint64_t i;
    (void)d;
    if (t->layout == GK_LAYOUT_HUFFMAN) glyd_tensorEmulateDecodeRuns(blob, t, tables, runs, u0, u1, bf16);
    else glyd_tensorEmulateDecodeUnits(blob, t, u0, u1, bf16);
    for (i = 0; i < n; i++) out[i] = gk_bits_float((uint32_t)bf16[i] << 16);
    return 0;
}

static size_t emu_gemm(const glyd_gpuDevice* d, const float* w, uint64_t m, uint64_t k, const float* x, uint64_t n,
                       float* y, uint64_t ldy)
{
    uint64_t i, r, c;
    (void)d;
    for (i = 0; i < n; i++)
        for (r = 0; r < m; r++) {
            float s = 0;
            for (c = 0; c < k; c++) s += w[r * k + c] * x[i * k + c];
            y[i * ldy + r] = s;
        }
    return 0;
}

/* A warp per token: the row's escapes before it counted, then its groups
 * read a lane each, in order. */
static size_t emu_embed(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, uint64_t cols,
                        const int* tokens, size_t T, float* x)
{
    size_t tk;
    (void)d;
    for (tk = 0; tk < T; tk++) {
        uint64_t const r = (uint64_t)tokens[tk], a = r * cols, b = a + cols;
        uint64_t const u = gk_row_unit(t, cols, r), uEnd = (b + t->unitSize - 1) / t->unitSize;
        uint64_t const nbEsc = gk_escapes_before(blob, t, uEnd);
        uint64_t esc = gk_escapes_before(blob, t, u), g;
        if (t->layout != GK_LAYOUT_STORED) esc += gk_fast_count(blob, t, u * t->unitSize, a);
        for (g = a >> 5; g <= (b - 1) >> 5; g++) {
            unsigned j;
            for (j = 0; j < 32; j++) {
                uint64_t const i = 32 * g + j;
                if (i >= a && i < b) x[tk * cols + (i - a)] = gk_row_lane(blob, t, a, cols, g, j, esc, nbEsc);
            }
            esc += gk_popc(gk_escapes(blob, t, g, a, b));
        }
    }
    return 0;
}

static size_t emu_rmsnorm(const glyd_gpuDevice* d, const gk_rmsnorm* a)
{
    float partial[GK_NORM_THREADS];
    uint64_t r;
    unsigned j;
    (void)d;
    for (r = 0; r < a->rows; r++) {
        float scale;
        for (j = 0; j < GK_NORM_THREADS; j++) partial[j] = gk_rms_partial(a, r, j);
        scale = gk_rms_scale(partial, a->n, a->eps);
        for (j = 0; j < GK_NORM_THREADS; j++) gk_rms_apply(a, r, j, scale);
    }
    return 0;
}

static size_t emu_rotate(const glyd_gpuDevice* d, const gk_rotate* a)
{
    unsigned const warps = GK_ROT_THREADS / 32;
    uint64_t t;
    unsigned j;
    (void)d;
    for (t = 0; t < a->T; t++) {
        for (j = 0; j < GK_ROT_THREADS; j++) gk_rot_bias(a, t, j);
        if (a->qNorm) {
            unsigned w, hh;
            for (w = 0; w < warps; w++)
                for (hh = w; hh < a->nbHeads + a->nbKvHeads; hh += warps) {
                    const float* nw;
                    float* const x = gk_rot_head(a, t, hh, &nw);
                    float lane[32], sum;
                    for (j = 0; j < 32; j++) lane[j] = gk_head_partial(x, a->headDim, j);
                    sum = gk_butterfly_emulated(lane);
                    for (j = 0; j < 32; j++) gk_head_apply(x, nw, a->headDim, j, sum, a->eps);
                }
        }
        for (j = 0; j < GK_ROT_THREADS; j++) gk_rot_rope(a, t, j);
        for (j = 0; j < GK_ROT_THREADS; j++) gk_rot_store(a, t, j);
    }
    return 0;
}

/* A block per (token, head, chunk), then a block per (token, head). */
static size_t emu_attend(const glyd_gpuDevice* d, const gk_attend* a)
{
    float const scale = 1.0f / sqrtf((float)a->headDim);
    float* row;
    uint64_t t, c;
    unsigned h;
    (void)d;
    RETURN_ERROR_IF(!a->chunk || a->chunk > GK_ATT_CHUNK_MAX, parameter_outOfBound, "attention chunk");
    row = (float*)malloc(sizeof(float) * a->chunk);
    RETURN_ERROR_IF(!row, memory_allocation, "attention");
    for (t = 0; t < a->T; t++)
        for (h = 0; h < a->nbHeads; h++)
            for (c = 0; c < gk_att_chunks(a, t); c++) {
                uint64_t const last = a->pos + t, p0 = c * a->chunk;
                uint64_t const p1 = GLYD_MIN(p0 + a->chunk, last + 1);
                float warpMax[GK_ATT_WARPS], warpSum[GK_ATT_WARPS], most, sum;
                float* const part = gk_att_part(a, t, h, c);
                unsigned w, j;
                uint64_t p, i;
                /* A: scores */
                for (w = 0; w < GK_ATT_WARPS; w++) {
                    warpMax[w] = -INFINITY;
                    for (p = p0 + w; p < p1; p += GK_ATT_WARPS) {
                        float lane[32];
                        for (j = 0; j < 32; j++) lane[j] = gk_att_partial(a, t, h, p, j);
                        row[p - p0] = gk_butterfly_emulated(lane) * scale;
                        if (row[p - p0] > warpMax[w]) warpMax[w] = row[p - p0];
                    }
                }
                /* B: the largest */
                most = warpMax[0];
                for (w = 1; w < GK_ATT_WARPS; w++) if (warpMax[w] > most) most = warpMax[w];
                /* C: exponentials and their sum */
                for (w = 0; w < GK_ATT_WARPS; w++) {
                    warpSum[w] = 0;
                    for (p = p0 + w; p < p1; p += GK_ATT_WARPS) {
                        row[p - p0] = expf(row[p - p0] - most);
                        warpSum[w] += row[p - p0];
                    }
                }
                sum = 0;
                for (w = 0; w < GK_ATT_WARPS; w++) sum += warpSum[w];
                /* E: the chunk's output */
                for (i = 0; i < a->headDim; i++) gk_att_chunk_out(a, t, h, c, row, i);
                part[a->headDim] = most;
                part[a->headDim + 1] = sum;
            }
    /* F: the chunks merged */
    for (t = 0; t < a->T; t++)
        for (h = 0; h < a->nbHeads; h++) {
            uint64_t i;
            for (i = 0; i < a->headDim; i++) gk_att_merge(a, t, h, i);
        }
    free(row);
    return 0;
}

static size_t emu_add(const glyd_gpuDevice* d, float* x, const float* y, size_t n)
{
    size_t i;
    (void)d;
    for (i = 0; i < n; i++) x[i] += y[i];
    return 0;
}

static size_t emu_swiglu(const glyd_gpuDevice* d, float* g, const float* u, size_t n)
{
    size_t i;
    (void)d;
    for (i = 0; i < n; i++) g[i] = gk_swiglu(g[i], u[i]);
    return 0;
}

static size_t emu_argmax(const glyd_gpuDevice* d, const float* x, size_t n, int* token)
{
    uint64_t partial[GK_ARGMAX_THREADS];
    unsigned j;
    (void)d;
    for (j = 0; j < GK_ARGMAX_THREADS; j++) partial[j] = gk_argmax_partial(x, n, j);
    *token = (int)gk_argmax_final(x, n, partial);
    return 0;
}

static size_t emu_penalize(const glyd_gpuDevice* d, float* x, const int* ids, size_t n, float penalty)
{
    size_t i;
    (void)d;
    for (i = 0; i < n; i++) x[ids[i]] = gk_penalized(x[ids[i]], penalty);
    return 0;
}

static size_t emu_topk(const glyd_gpuDevice* d, const float* x, size_t n, float temperature, unsigned k, float* keys,
                       int* ids)
{
    static const unsigned kShifts[4] = { 24, 16, 8, 0 };
    uint32_t hist[256], prefix = 0, mask = 0, need = k;
    uint64_t greater[GK_TOPK_THREADS], equal[GK_TOPK_THREADS], g = 0, e = 0, a, b, i;
    unsigned pass, j;
    (void)d;
    /* 1: the k-th largest key, a digit a pass */
    for (pass = 0; pass < 4; pass++) {
        memset(hist, 0, sizeof hist);
        for (j = 0; j < GK_TOPK_THREADS; j++) {
            gk_topk_run(n, j, &a, &b);
            for (i = a; i < b; i++) {
                uint32_t const key = gk_topk_key(x, i, temperature);
                if ((key & mask) == prefix) hist[(key >> kShifts[pass]) & 255]++;
            }
        }
        prefix |= (uint32_t)gk_topk_digit(hist, &need) << kShifts[pass];
        mask |= 255u << kShifts[pass];
    }
    /* 2: each run's keys above it and equal to it; offsets in run order */
    for (j = 0; j < GK_TOPK_THREADS; j++) {
        greater[j] = equal[j] = 0;
        gk_topk_run(n, j, &a, &b);
        for (i = a; i < b; i++) {
            uint32_t const key = gk_topk_key(x, i, temperature);
            greater[j] += key > prefix;
            equal[j] += key == prefix;
        }
    }
    for (j = 0; j < GK_TOPK_THREADS; j++) {
        uint64_t const gj = greater[j], ej = equal[j];
        greater[j] = g;
        equal[j] = e;
        g += gj;
        e += ej;
    }
    /* 3: the elements above, then as many equal ones as k leaves room for */
    for (j = 0; j < GK_TOPK_THREADS; j++) {
        uint64_t gi = greater[j], ei = (k - need) + equal[j];
        gk_topk_run(n, j, &a, &b);
        for (i = a; i < b; i++) {
            uint32_t const key = gk_topk_key(x, i, temperature);
            uint64_t const at = key > prefix ? gi++ : key == prefix ? ei++ : k;
            if (at < k) {
                keys[at] = x[i] / temperature;
                ids[at] = (int)i;
            }
        }
    }
    /* 4 */
    gk_topk_sort(keys, ids, k);
    return 0;
}

static const char* emu_last_error(const glyd_gpuDevice* d)
{
    (void)d;
    return "";
}

static void emu_release(glyd_gpuDevice* d) { free(d); }

glyd_gpuDevice* glyd_gpuEmulated(void)
{
    glyd_gpuDevice* const d = (glyd_gpuDevice*)calloc(1, sizeof(glyd_gpuDevice));
    if (!d) return NULL;
    d->name = "emulated";
    d->memory = emu_memory;
    d->alloc = emu_alloc;
    d->free = emu_free;
    d->upload = emu_copy;
    d->download = emu_copy;
    d->copy = emu_copy;
    d->gemv = emu_gemv;
    d->nibbles = emu_nibbles;
    d->widen = emu_widen;
    d->gemm = emu_gemm;
    d->embed = emu_embed;
    d->rmsnorm = emu_rmsnorm;
    d->rotate = emu_rotate;
    d->attend = emu_attend;
    d->add = emu_add;
    d->swiglu = emu_swiglu;
    d->argmax = emu_argmax;
    d->penalize = emu_penalize;
    d->topk = emu_topk;
    d->lastError = emu_last_error;
    d->release = emu_release;
    return d;
}

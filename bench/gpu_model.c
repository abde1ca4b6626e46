/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_model.c: the GPU kernels (gpu/decode.cu) on the GPU benchmark's
 * matrices (tests/gpu/gpu_check.cu: the same shapes and synthetic
 * weights), counted on the CPU, for when no GPU is at hand: the rows
 * kernel's products in both layouts, and the bulk decoding of the entropy
 * layout. Each warp is replayed lane by lane in lockstep with the kernels'
 * functions (tensor_kernels.h): its passes through the Huffman decoding
 * loop (checked against gk_huffman_symbols: the same symbols, as many
 * words stored), its product steps and decoded groups, and the shared-memory
 * wavefronts that each of its accesses takes (the distinct words its lanes
 * touch in the busiest bank; by quarter warps for 16-byte accesses). With
 * the instructions of a pass and of a step, read from the compiled kernels
 * (sm_90 SASS, through cuobjdump and nvdisasm; the defaults are this
 * revision's), it gives each kernel's three floors on an H200: its bytes
 * from HBM, its instructions at 4 a clock per multiprocessor, its shared
 * memory at a wavefront a clock. A model, not a measurement:
 * tests/gpu/run.sh measures. It leaves out latency, the per-unit set-up
 * and the launch; but it counts, from the fast layout's launch, the chain
 * of steps each warp takes one after another, which latency lengthens,
 * and so what a step may take for the product to run at its floor.
 *
 *   build/gpu_model [--pair N] [--huf-step N] [--huf-group N] [--huf-staged N] [--fast-step N]
 *                   [--escape8 N] [--slow N] [--escape N] [--escape-blob N]
 *
 * Built by `make gpu-model`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/tensor/tensor.h"
#include "../gpu/tensor_gpu.h"
#include "../tests/gpu/synth_weights.h"

/* One H200 (SXM), nominal. */
#define SMS        132
#define CLOCK_HZ   1.98e9
#define HBM_BYTES  4.8e12
#define SCHEDULERS 4
#define SM_SMEM    (228 * 1024) /* shared memory of a multiprocessor, */
#define BLOCK_SMEM 1024         /* of which each block's reserved part */

/* Instructions (sm_90 SASS of the rows kernel at batch 1), as options. */
typedef struct {
    double pair;       /* a pass of gk_huffman_symbols' loop: two lookups, a refill */
    double hufStep;    /* a product step of a Huffman group (joint split) */
    double hufGroup;   /* a group of the bulk decoder (joint split), stored where it is */
    double hufStaged;  /* more where its warp's four runs are whole: their groups stored through shared memory */
    double fastStep;   /* a product step of a fast-layout group, escapes aside */
    double escape8;    /* gk_patch_escapes8: a step where a lane's escapes are patched in registers */
    double slow;       /* a step where a lane's are too many for it: through its slot, set-up */
    double escape;     /* a pass of gk_patch_escapes' window loop */
    double escapeBlob; /* a pass of its loop over escapes past the window */
} model_instr;

typedef struct {
    double warpInstr, wavefronts, bytes;
    uint64_t passes, steps, escapePasses;
} model_count;

/* Wavefronts of one warp-wide access of `size` bytes a lane (1, 4 or 16)
 * at byte addresses addr[lane], lanes where on[lane]: 16-byte accesses go
 * a quarter warp at a time. */
static unsigned wavefronts(const uint32_t addr[32], const int on[32], unsigned size)
{
    unsigned const group = size == 16 ? 8 : 32, words = size == 16 ? 4 : 1;
    unsigned total = 0, g0, lane, k, j, bank;
    for (g0 = 0; g0 < 32; g0 += group) {
        uint32_t seen[32][32];
        unsigned count[32] = { 0 }, most = 0;
        for (lane = g0; lane < g0 + group; lane++)
            for (k = 0; on[lane] && k < words; k++) {
                uint32_t const word = addr[lane] / 4 + k;
                int known = 0;
                bank = word % 32;
                for (j = 0; j < count[bank]; j++) known |= seen[bank][j] == word;
                if (!known) seen[bank][count[bank]++] = word;
            }
        for (bank = 0; bank < 32; bank++)
            if (count[bank] > most) most = count[bank];
        total += most;
    }
    return total;
}

/* ------------------------------------------------------------------------ */
/* The entropy layout                                                       */
/* ------------------------------------------------------------------------ */

/* A lane decoding its run as gk_huffman_symbols does, a pass at a time. */
typedef struct {
    uint64_t win, next;
    uint32_t ahead, word;
    unsigned pos, fill;
    int words, left;
    uint32_t o;                          /* bytes stored */
    uint32_t slot;                       /* the run's slot in the warp's shared memory */
    uint8_t out[GK_HUF_SLOT];            /* its symbols */
} huf_lane;

static void huf_lane_start(huf_lane* l, const uint8_t* blob, const gk_tensor* t, uint64_t bit, uint64_t count,
                           uint32_t slot)
{
    uint64_t const byte = t->streams + (bit >> 3), at = byte & ~(uint64_t)3, limit = gk_stream_limit(t);
    uint64_t const room = at + 16 <= limit ? (limit - at - 12) / 4 : 0;
    memset(l, 0, sizeof(*l));
    l->win = (uint64_t)gk_stream_word(blob, t, at) << 32 | gk_stream_word(blob, t, at + 4);
    l->ahead = gk_stream_word(blob, t, at + 8);
    l->next = at + 12;
    l->words = room < 0x40000000u ? (int)room : 0x40000000;
    l->pos = (unsigned)(8 * (byte - at) + (bit & 7));
    l->left = 8 * (int)count;
    l->slot = slot;
}

/* A lookup's symbols appended: 1 if a word was stored, at *at. */
static int huf_append(huf_lane* l, uint32_t e, uint32_t* at)
{
    uint32_t const bits = (e >> 21) & 0x18;
    uint64_t const v = (uint64_t)(e & 0xFFFFFFu) << l->fill;
    l->word |= (uint32_t)v;
    l->fill += bits;
    l->left -= (int)bits;
    if (l->fill < 32) return 0;
    memcpy(l->out + l->o, &l->word, 4); /* little-endian, as on the device */
    *at = l->slot + l->o;
    l->o += 4;
    l->word = (uint32_t)(v >> 32);
    l->fill -= 32;
    return 1;
}

/* One pass: its two lookups' table addresses (the table at shared byte 0),
 * and its stores (stored[k], at store[k]). */
static void huf_pass(huf_lane* l, const uint8_t* blob, const uint32_t* multi, uint32_t look[2], uint32_t store[2],
                     int stored[2])
{
    unsigned const shift = 32 - GK_HUF_MAX_BITS;
    uint32_t const i0 = (uint32_t)((l->win << l->pos) >> 32) >> shift, e0 = multi[i0];
    unsigned const p1 = l->pos + (e0 >> 26);
    uint32_t const i1 = (uint32_t)((l->win << p1) >> 32) >> shift, e1 = multi[i1];
    look[0] = 4 * i0;
    look[1] = 4 * i1;
    stored[0] = huf_append(l, e0, &store[0]);
    stored[1] = huf_append(l, e1, &store[1]);
    l->pos = p1 + (e1 >> 26);
    if (l->pos >= 32) {
        l->win = l->win << 32 | l->ahead;
        l->ahead = l->words-- > 0 ? gk_word_be(blob + l->next) : 0;
        l->next += 4;
        l->pos -= 32;
    }
}

/* A warp decoding runs [run0, run0 + lanes), run run0 + l by lane l into
 * its slot (GK_HUF_SLOT bytes from lane l's: the rows kernel's units side
 * by side, and the bulk decoder's rows). 0 if a replayed run's symbols
 * differ from gk_huffman_symbols': the replay no longer follows it. */
static int huf_decode(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                      uint64_t run0, unsigned lanes, const model_instr* in, model_count* c)
{
    uint64_t const rpu = gk_huf_runs_per_unit(t);
    static huf_lane lane[32];
    uint32_t kernel[2][GK_HUF_SLOT / 4]; /* aligned as the kernels' slots */
    uint64_t bit[32], count[32];
    int on[32], ok = 1;
    unsigned l, k;
    for (l = 0; l < 32; l++) {
        uint64_t const run = run0 + l;
        uint64_t i0 = 0, i1 = 0;
        bit[l] = 0;
        on[l] = l < lanes;
        if (on[l]) bit[l] = gk_huf_run_at(blob, t, runs, run / rpu, run % rpu, &i0, &i1);
        on[l] = on[l] && i0 < i1;
        count[l] = i1 - i0;
        if (on[l]) huf_lane_start(&lane[l], blob, t, bit[l], count[l], l * GK_HUF_SLOT);
    }
    for (;;) {
        uint32_t look[2][32], store[2][32];
        int active[32], stored[2][32], any = 0;
        for (l = 0; l < 32; l++) {
            uint32_t lk[2], st[2];
            int sd[2];
            active[l] = on[l] && lane[l].left > 0;
            stored[0][l] = stored[1][l] = 0;
            if (!active[l]) continue;
            any = 1;
            huf_pass(&lane[l], blob, tables->multi, lk, st, sd);
            for (k = 0; k < 2; k++) {
                look[k][l] = lk[k];
                store[k][l] = st[k];
                stored[k][l] = sd[k];
            }
        }
        if (!any) break;
        c->passes++;
        c->warpInstr += in->pair;
        for (k = 0; k < 2; k++)
            c->wavefronts += wavefronts(look[k], active, 4) + wavefronts(store[k], stored[k], 4);
    }
    /* each lane's last word, then its symbols against the kernel's */
    {
        uint32_t last[32];
        int left[32];
        for (l = 0; l < 32; l++) {
            left[l] = on[l] && lane[l].fill;
            last[l] = on[l] ? lane[l].slot + lane[l].o : 0;
            if (left[l]) memcpy(lane[l].out + lane[l].o, &lane[l].word, 4);
        }
        c->wavefronts += wavefronts(last, left, 4);
    }
    /* the same symbols as the kernel's function, and as many words stored:
     * its extent found over two fillings of its slot */
    for (l = 0; l < 32; l++) {
        unsigned const stored = lane[l].o + (lane[l].fill ? 4 : 0);
        unsigned extent = GK_HUF_SLOT;
        if (!on[l]) continue;
        for (k = 0; k < 2; k++) {
            memset(kernel[k], k ? 0x5A : 0xA5, GK_HUF_SLOT);
            gk_huffman_symbols(blob, t, tables->multi, bit[l], 0, count[l], (uint8_t*)kernel[k], 0);
        }
        while (extent && ((uint8_t*)kernel[0])[extent - 1] == 0xA5 && ((uint8_t*)kernel[1])[extent - 1] == 0x5A)
            extent--;
        ok = ok && memcmp(kernel[0], lane[l].out, count[l]) == 0 && extent == stored;
    }
    return ok;
}

/* A warp of the rows kernel over units [u0, u0 + n): their runs decoded a
 * lane each, then their rows multiplied a step at a time (lane k takes
 * groups k, k + 32, ... of a row). The kernel's warp takes units a grid's
 * warps apart rather than side by side: on weights drawn alike, the same
 * counts. */
static int huf_warp(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                    uint64_t cols, uint64_t u0, unsigned n, const model_instr* in, model_count* c)
{
    uint64_t const rpu = gk_huf_runs_per_unit(t), span = gk_rows_span(t, cols), unitBytes = gk_huf_unit_bytes(t);
    unsigned const groups = (unsigned)(span / 32);
    unsigned l, j, k;
    if (!huf_decode(blob, t, tables, runs, u0 * rpu, (unsigned)(n * rpu), in, c)) return 0;
    /* the products: per unit, per row, per step, the symbols' and x's reads */
    for (j = 0; j < n; j++) {
        uint64_t const rows = gk_rows_in_unit(t, cols, u0 + j);
        uint64_t r;
        for (r = 0; r < rows; r++) {
            unsigned i;
            for (i = 0; i < groups; i += 32) {
                uint32_t sym[2][32], xs[8][32];
                int active[32];
                for (l = 0; l < 32; l++) {
                    uint32_t const o = (uint32_t)(r * span) + 32 * (i + l);
                    active[l] = i + l < groups;
                    sym[0][l] = (uint32_t)(j * unitBytes + gk_huf_slot_offset(o));
                    sym[1][l] = sym[0][l] + 16;
                    for (k = 0; k < 8; k++) xs[k][l] = 4 * 36 * (i + l) + 16 * k; /* gk_rows_stride */
                }
                c->steps++;
                c->warpInstr += in->hufStep;
                for (k = 0; k < 2; k++) c->wavefronts += wavefronts(sym[k], active, 16);
                for (k = 0; k < 8; k++) c->wavefronts += wavefronts(xs[k], active, 16);
            }
        }
    }
    return 1;
}

/* The bulk decoder (huffman_groups_kernel, blocks of BULK_THREADS): a
 * block's warps each decode 32 runs, a lane each; then its threads take
 * the block's groups, consecutive threads consecutive groups, each reading
 * the word of the block's whole runs, its run's start (and where the
 * warp's four runs are not all whole, its length) and its group's symbols
 * from shared memory; a warp whose runs are whole stores its groups
 * through their symbol rows, 16 lanes at a time (warp_store_groups). */
#define BULK_THREADS 128

static int huf_bulk(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables, const uint16_t* runs,
                    const model_instr* in, model_count* c)
{
    uint64_t const rpu = gk_huf_runs_per_unit(t), nbRuns = t->nbUnits * rpu;
    uint64_t r0;
    unsigned w, l, j, k;
    for (r0 = 0; r0 < nbRuns; r0 += BULK_THREADS) {
        for (w = 0; w < BULK_THREADS / 32; w++) {
            uint64_t const run = r0 + 32 * w;
            if (run < nbRuns &&
                !huf_decode(blob, t, tables, runs, run, (unsigned)(nbRuns - run < 32 ? nbRuns - run : 32), in, c))
                return 0;
        }
        for (w = 0; w < BULK_THREADS / 32; w++)
            for (j = 0; j < GK_HUF_RUN / 32; j++) { /* a warp's groups, 32 at a time */
                uint32_t sym[2][32], length[32], start[32], flags[32];
                int active[32], all[32], whole = 1;
                for (l = 0; l < 32; l++) {
                    unsigned const idx = 32 * w + l + BULK_THREADS * j, row = idx / (GK_HUF_RUN / 32);
                    uint64_t const run = r0 + row;
                    uint64_t a = 0, b = 0;
                    if (run < nbRuns) gk_huf_run_span(t, run / rpu, run % rpu, &a, &b);
                    active[l] = 32 * (idx % (GK_HUF_RUN / 32)) < b - a; /* the kernel's test of its run's length */
                    whole &= b - a == GK_HUF_RUN;
                    all[l] = 1;
                    flags[l] = 0;
                    length[l] = 4 * row;
                    start[l] = 4 * BULK_THREADS + 8 * row;
                    sym[0][l] = 8 * BULK_THREADS + row * GK_HUF_SLOT + 32 * (idx % (GK_HUF_RUN / 32));
                    sym[1][l] = sym[0][l] + 16;
                }
                c->steps++;
                c->warpInstr += in->hufGroup + (whole ? in->hufStaged : 0);
                c->wavefronts += wavefronts(flags, all, 4) + wavefronts(start, whole ? all : active, 4);
                if (!whole) c->wavefronts += wavefronts(length, active, 4);
                for (k = 0; k < 2; k++) c->wavefronts += wavefronts(sym[k], whole ? all : active, 16);
                if (whole) {
                    /* the stage: the warp's first row's symbols on; lane l's chunk k at 64 (l % 16) + 16 (k ^
                     * (l >> 1 & 3)), its store in the half of the warp that l is in; then loads of chunk
                     * c = l & 3 of group q = 8 j + l / 4 (j < 2), from the same swizzle */
                    uint32_t const stage = 8 * BULK_THREADS + (32 * w + BULK_THREADS * j) / 8 * GK_HUF_SLOT;
                    uint32_t addr[32];
                    int half[32];
                    unsigned h;
                    for (h = 0; h < 2; h++) {
                        for (k = 0; k < 4; k++) {
                            for (l = 0; l < 32; l++) {
                                half[l] = l / 16 == h;
                                addr[l] = stage + 64 * (l % 16) + 16 * (k ^ (l >> 1 & 3));
                            }
                            c->wavefronts += wavefronts(addr, half, 16);
                        }
                        for (k = 0; k < 2; k++) {
                            for (l = 0; l < 32; l++) {
                                unsigned const q = 8 * k + l / 4;
                                addr[l] = stage + 64 * q + 16 * ((l & 3) ^ (q >> 1 & 3));
                            }
                            c->wavefronts += wavefronts(addr, all, 16);
                        }
                    }
                }
            }
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The fast layout                                                          */
/* ------------------------------------------------------------------------ */

/* A warp of the rows kernel over unit u (nibble form): per row, per step,
 * the escape window's words stored; the escapes of lanes with at most 8 in
 * the window (gk_escapes8_fit) read from it, three words a lane, those of
 * the others through their slots (stored and loaded) and the patch loops'
 * passes; x read. */
static void fast_warp(const uint8_t* blob, const gk_tensor* t, uint64_t cols, uint64_t u, const model_instr* in,
                      model_count* c)
{
    uint64_t const span = gk_rows_span(t, cols), rows = gk_rows_in_unit(t, cols, u);
    uint64_t const nbEsc = gk_unit_start(blob, t, u + 1);
    unsigned const groups = (unsigned)(span / 32);
    uint32_t const slots = 32 * 4, window = slots + 4 * GK_PATCH_SLOT_WORDS * 32; /* bytes, from x's end */
    uint64_t esc = gk_unit_start(blob, t, u), r;
    unsigned l, k;
    for (r = 0; r < rows; r++) {
        uint64_t const q0 = (u * t->unitSize + r * span) / 32;
        unsigned i;
        for (i = 0; i < groups; i += 32) {
            uint64_t const first = gk_window_first(esc);
            uint32_t mask[32], addr[32], xs[8][32];
            unsigned n[32], inWindow[32], most = 0, mostBlob = 0;
            int active[32], patched[32], fits[32], anyFit = 0, anySlow = 0;
            uint64_t before = 0;
            for (l = 0; l < 32; l++) {
                gk_escape_cursor cur;
                active[l] = i + l < groups;
                mask[l] = active[l] ? gk_fast_escapes(blob, t, q0 + i + l, 0, t->nbElements) : 0;
                n[l] = gk_popc(mask[l]);
                fits[l] = n[l] && gk_escapes8_fit(esc + before, first, nbEsc, 32, n[l]);
                patched[l] = n[l] && !fits[l];
                anyFit |= fits[l];
                anySlow |= patched[l];
                cur = gk_escapes_from(t, esc + before, nbEsc, first, 32);
                inWindow[l] = !patched[l] ? 0 : n[l] < cur.inWindow ? n[l] : cur.inWindow;
                if (inWindow[l] > cur.left) inWindow[l] = cur.left;
                if (inWindow[l] > most) most = inWindow[l];
                if (patched[l] && n[l] - inWindow[l] > mostBlob) mostBlob = n[l] - inWindow[l];
                addr[l] = window + 4 * l; /* the window, a word a lane */
                for (k = 0; k < 8; k++) xs[k][l] = 4 * 36 * (i + l) + 16 * k;
                before += n[l];
            }
            c->steps++;
            c->warpInstr += in->fastStep + (anyFit ? in->escape8 : 0) +
                            (anySlow ? in->slow + in->escape * most + in->escapeBlob * mostBlob : 0);
            c->escapePasses += most;
            {
                int all[32]; /* every lane stores its word of the window */
                for (l = 0; l < 32; l++) all[l] = 1;
                c->wavefronts += wavefronts(addr, all, 4);
            }
            for (k = 0; k < 3; k++) { /* the window's words that hold a lane's escapes, if it fits */
                uint64_t mine = esc;
                for (l = 0; l < 32; l++) {
                    uint32_t const a = (uint32_t)(mine - first) / 4 + k;
                    addr[l] = window + 4 * (a < 32 ? a : 31);
                    mine += n[l];
                }
                c->wavefronts += wavefronts(addr, fits, 4);
            }
            for (k = 0; k < 8; k++) { /* slot stores, then loads */
                for (l = 0; l < 32; l++) addr[l] = slots + 4 * (GK_PATCH_SLOT_WORDS * l + k);
                c->wavefronts += 2 * wavefronts(addr, patched, 4);
            }
            /* the escape loops' passes: in the window, a byte read from it
             * and one written to the slot; past it, a slot byte written */
            for (k = 0; k < most + mostBlob; k++) {
                uint32_t from[32];
                int go[32], fromWindow = k < most;
                uint64_t mine = esc;
                for (l = 0; l < 32; l++) {
                    unsigned const e = fromWindow ? k : inWindow[l] + (k - most); /* the lane's escape */
                    uint32_t m = mask[l];
                    unsigned s;
                    go[l] = fromWindow ? k < inWindow[l] : e < n[l];
                    for (s = 0; s < e && m; s++) m &= m - 1;
                    from[l] = window + (uint32_t)(mine - first) + k;
                    addr[l] = slots + 4 * GK_PATCH_SLOT_WORDS * l + (m ? gk_nibble_element(gk_lowest(m)) : 0);
                    mine += n[l];
                }
                c->wavefronts += (fromWindow ? wavefronts(from, go, 1) : 0) + wavefronts(addr, go, 1);
            }
            for (k = 0; k < 8; k++) c->wavefronts += wavefronts(xs[k], active, 16);
            esc += before;
        }
    }
}

/* ------------------------------------------------------------------------ */

static const uint64_t kShapes[3][2] = { { 4096, 4096 }, { 4096, 14336 }, { 14336, 4096 } }; /* gpu_check's */

static double us_of(double clocks) { return 1e6 * clocks / CLOCK_HZ; }

/* The three floors of a count, in microseconds; returns the highest. */
static double floors(const model_count* c, double* hbm, double* issue, double* smem)
{
    double most;
    *hbm = 1e6 * c->bytes / HBM_BYTES;
    *issue = us_of(c->warpInstr / (SCHEDULERS * SMS));
    *smem = us_of(c->wavefronts / SMS);
    most = *hbm > *issue ? *hbm : *issue;
    return most > *smem ? most : *smem;
}

static void report(const char* name, uint64_t rows, uint64_t cols, const model_count* c)
{
    double hbm, issue, smem;
    double const floor = floors(c, &hbm, &issue, &smem), cublas = 1e6 * 2.0 * (double)(rows * cols) / HBM_BYTES;
    printf("| %llux%llu | %s | %llu | %llu | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f | %.2f | %.2fx |\n",
           (unsigned long long)rows, (unsigned long long)cols, name, (unsigned long long)c->passes,
           (unsigned long long)c->steps, c->bytes / 1e6, hbm, c->warpInstr / 1e6, issue, c->wavefronts / 1e6, smem,
           floor, cublas / floor);
}

/* How the rows kernel's warps share a product's steps (fast layout,
 * batch 1): the grid fills the device, each block's warps taking items
 * (units, or one part of a row where units are parts of rows: the grid's
 * y, a wave of blocks a part once the device is full) every stride items
 * from their first, a step after another. A warp's chain of steps is what
 * latency lengthens: a step waits on its loads, then on its instructions,
 * and the next one's loads are not issued before. The floor divided by the
 * longest chain is what a step may take for the product to run at its
 * floor. */
static void chains(uint64_t rows, uint64_t cols, const model_count* c)
{
    gk_tensor t;
    double hbm, issue, smem;
    double const floor = floors(c, &hbm, &issue, &smem);
    uint64_t const n = rows * cols;
    memset(&t, 0, sizeof t);
    t.unitSize = glyd_tensorUnitSize(n, cols);
    t.nbElements = n;
    t.nbUnits = (n + t.unitSize - 1) / t.unitSize;
    {
        /* the launch of decode.cu's launch_rows, at the occupancy its
         * launch bounds ask for (registers) unless shared memory holds
         * fewer blocks */
        unsigned const byRegs = GK_ROWS_FAST_BLOCKS;
        uint64_t const bytes = gk_rows_smem_plan(GK_LAYOUT_FAST, &t, cols, 1, 32 * GK_ROWS_WARPS).bytes;
        unsigned const bySmem = (unsigned)(SM_SMEM / (bytes + BLOCK_SMEM));
        unsigned const perSm = byRegs < bySmem ? byRegs : bySmem;
        uint64_t const full = (uint64_t)SMS * perSm;
        gk_rows_grid const g = gk_rows_launch_grid(&t, rows, cols, GK_ROWS_WARPS, 1, full);
        uint64_t const span = gk_rows_span(&t, cols), stepsPerItem = (g.perRow > 1 ? span : t.unitSize) / 1024;
        uint64_t const waves = (g.blocks * g.perRow + full - 1) / full;
        uint64_t const perWarp = (g.items + g.blocks * GK_ROWS_WARPS - 1) / (g.blocks * GK_ROWS_WARPS);
        uint64_t const longest = waves * perWarp * stepsPerItem;
        printf("| %llux%llu | %u | %llu x %llu | %.1f KiB | %u (%s) | %llu | %llu | %llu | %.1f | %.2f |\n",
               (unsigned long long)rows, (unsigned long long)cols, t.unitSize,
               (unsigned long long)g.items, (unsigned long long)g.perRow, bytes / 1024.0, perSm,
               byRegs <= bySmem ? "registers" : "shared memory",
               (unsigned long long)(g.blocks * GK_ROWS_WARPS), (unsigned long long)waves, (unsigned long long)longest,
               (double)c->steps / (double)(full * GK_ROWS_WARPS), floor / (double)longest);
    }
}

/* A shape's products in both layouts (a table row each), and its bulk
 * decoding in the entropy layout into *bulk. */
static int model_shape(uint64_t rows, uint64_t cols, uint64_t seed, const model_instr* in, model_count* bulk,
                       model_count* fast)
{
    size_t const n = (size_t)(rows * cols), cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
    uint16_t* const w = (uint16_t*)malloc(2 * n);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    static gk_huf_tables tables;
    uint16_t* runs = NULL;
    int ok = w && blob, layout;
    for (layout = 0; ok && layout < 2; layout++) {
        glyd_tensorView v;
        gk_tensor t;
        model_count c;
        uint64_t u;
        size_t size;
        memset(&c, 0, sizeof c);
        glyd_synthWeights(w, n, seed);
        size = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, cols,
                                   layout ? glyd_tensor_entropy : glyd_tensor_fast, 2);
        ok = !glyd_isError(size) && !glyd_isError(glyd_tensorOpen(&v, blob, size)) &&
             !glyd_isError(glyd_tensorDescribe(&v, blob, &t, &tables));
        if (ok && !layout) ok = !glyd_isError(glyd_tensorNibbleForm(blob, &t));
        if (ok && layout) {
            runs = (uint16_t*)malloc(sizeof(uint16_t) * (gk_huf_index_size(&t) + 1));
            ok = runs && !glyd_isError(glyd_tensorHuffmanRuns(blob, &t, &tables, runs));
        }
        ok = ok && gk_rows_fits(&t, cols) && (!layout || gk_huf_by_groups(&t));
        if (!ok) break;
        c.bytes = (double)size + (layout ? sizeof(gk_huf_tables) + 2.0 * gk_huf_index_size(&t) : 0);
        if (!layout)
            for (u = 0; u < t.nbUnits; u++) fast_warp(blob, &t, cols, u, in, &c);
        else
            for (u = 0; ok && u < t.nbUnits; u += gk_huf_units_together(&t)) {
                uint64_t const left = t.nbUnits - u, together = gk_huf_units_together(&t);
                ok = huf_warp(blob, &t, &tables, runs, cols, u, (unsigned)(left < together ? left : together), in, &c);
            }
        if (ok && layout) {
            memset(bulk, 0, sizeof(*bulk));
            bulk->bytes = c.bytes + 2.0 * (double)n; /* and the bf16 written */
            ok = huf_bulk(blob, &t, &tables, runs, in, bulk);
        }
        if (!ok) {
            fprintf(stderr, "gpu_model: the replay of the Huffman decoding no longer follows gk_huffman_symbols\n");
            break;
        }
        c.passes += c.escapePasses; /* the fast layout's passes: its escape loop's */
        report(layout ? "entropy" : "fast", rows, cols, &c);
        if (!layout) *fast = c;
        free(runs);
        runs = NULL;
    }
    free(runs);
    free(w);
    free(blob);
    return ok;
}

int main(int argc, char** argv)
{
    /* sm_90 SASS of rows_kernel<LAYOUT, 1> and huffman_groups_kernel at this revision */
    model_instr in = { 53, 255, 204, 33, 250, 68, 54, 14, 17 };
    model_count bulk[3], fast[3];
    int a, s;
    for (a = 1; a + 1 < argc; a += 2) {
        double const v = atof(argv[a + 1]);
        if (!strcmp(argv[a], "--pair")) in.pair = v;
        else if (!strcmp(argv[a], "--huf-step")) in.hufStep = v;
        else if (!strcmp(argv[a], "--huf-group")) in.hufGroup = v;
        else if (!strcmp(argv[a], "--huf-staged")) in.hufStaged = v;
        else if (!strcmp(argv[a], "--fast-step")) in.fastStep = v;
        else if (!strcmp(argv[a], "--escape8")) in.escape8 = v;
        else if (!strcmp(argv[a], "--slow")) in.slow = v;
        else if (!strcmp(argv[a], "--escape")) in.escape = v;
        else if (!strcmp(argv[a], "--escape-blob")) in.escapeBlob = v;
        else break;
    }
    if (a < argc) {
        fprintf(stderr, "usage: gpu_model [--pair N] [--huf-step N] [--huf-group N] [--huf-staged N] [--fast-step N] "
                        "[--escape8 N] [--slow N] [--escape N] [--escape-blob N]\n");
        return 2;
    }
    printf("A model on one H200 (%d SMs, %.2f GHz, %.1f TB/s), instructions from sm_90 SASS: a Huffman decoding\n"
           "pass %.0f, a Huffman product step %.0f, a bulk-decoded Huffman group %.0f\n"
           "(+ %.0f stored through shared memory), a fast product step %.0f\n"
           "+ %.0f escapes patched in registers, or + %.0f through slots, + %.0f an escape pass\n"
           "(+ %.0f past the window). "
"A floor is the highest of HBM, issue and shared memory.\n\n",
           SMS, CLOCK_HZ / 1e9, HBM_BYTES / 1e12, in.pair, in.hufStep, in.hufGroup, in.hufStaged, in.fastStep,
           in.escape8, in.slow, in.escape, in.escapeBlob);
    printf("Products at batch 1 (the rows kernel; warp passes: of the Huffman decoding loop, or of the fast layout's\n"
           "escape loop; cuBLAS bf16 taken at its bytes from HBM):\n\n"
           "| rows x cols | layout | warp passes | warp steps | MB | HBM (us) | warp instructions (M) | issue (us) "
           "| shared-memory wavefronts (M) | shared memory (us) | floor (us) | vs cuBLAS |\n"
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (s = 0; s < 3; s++)
        if (!model_shape(kShapes[s][0], kShapes[s][1], 5 + (uint64_t)s, &in, &bulk[s], &fast[s])) return 1;
    printf("\nThe fast layout's products as launched (batch 1):\n"
           "items (units, or parts of rows) x parts a row; shared memory a block; blocks a multiprocessor and what\n"
           "holds them to it; the warps a part takes, in waves of blocks; the steps a warp takes one after another,\n"
           "at most and on the mean of the warps the device holds; and what a step may take for the product to run\n"
           "at its floor:\n\n"
           "| rows x cols | unit | items x parts | shared memory | blocks a multiprocessor | warps | waves "
           "| longest chain (steps) | mean chain (steps) | a step at the floor (us) |\n"
           "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (s = 0; s < 3; s++) chains(kShapes[s][0], kShapes[s][1], &fast[s]);
    printf("\nBulk decoding into bf16, entropy layout (huffman_groups_kernel; MB read and written):\n\n"
           "| rows x cols | warp passes | group steps | MB | HBM (us) | warp instructions (M) | issue (us) "
           "| shared-memory wavefronts (M) | shared memory (us) | floor (us) | bf16 out (TB/s) |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (s = 0; s < 3; s++) {
        double hbm, issue, smem;
        double const floor = floors(&bulk[s], &hbm, &issue, &smem);
        double const out = 2.0 * (double)(kShapes[s][0] * kShapes[s][1]);
        printf("| %llux%llu | %llu | %llu | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f | %.2f | %.2f |\n",
               (unsigned long long)kShapes[s][0], (unsigned long long)kShapes[s][1],
               (unsigned long long)bulk[s].passes, (unsigned long long)bulk[s].steps, bulk[s].bytes / 1e6, hbm,
               bulk[s].warpInstr / 1e6, issue, bulk[s].wavefronts / 1e6, smem, floor, out / floor / 1e6);
    }
    return 0;
}

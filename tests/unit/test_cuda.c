/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda.c: the GPU decoding kernels' per-thread work
 * (gpu/tensor_kernels.h), run on the CPU the way the kernels run it
 * (glyd_tensorEmulateDecode, glyd_tensorEmulateGemv: a block per unit, a
 * thread per 32-element group or per unit, escape offsets from the
 * block's prefix sum, a warp per row), against the CPU decoder and exact
 * sums. */
#include <math.h>
#include <stdlib.h>

#include "../../lib/tensor/tensor.h"
#include "../../gpu/tensor_gpu.h"
#include "harness.h"

/* Codes src in a layout, decodes it through the emulated kernel; 1 if the
 * elements come back. */
static int kernel_round_trip(const uint16_t* src, size_t n, size_t cols, glyd_tensorLayout layout)
{
    size_t const cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    uint16_t* const out = (uint16_t*)calloc(n + 1, 2);
    gk_huf_tables tables;
    glyd_tensorView v;
    gk_tensor t;
    size_t const c = glyd_tensorCompress(blob, cap, src, n, GLYD_DTYPE_BF16, cols, layout, 1);
    int ok = !glyd_isError(c) && glyd_tensorOpen(&v, blob, c) == c &&
             !glyd_isError(glyd_tensorDescribe(&v, blob, &t, &tables));
    if (ok) {
        glyd_tensorEmulateDecode(blob, &t, &tables, out);
        ok = memcmp(out, src, n * 2) == 0;
    }
    if (ok && t.layout == GK_LAYOUT_FAST && t.unitSize % 32 == 0) {
        /* the codes rewritten as nibbles, as the GPU backend uploads them:
         * the same elements, whole and unit by unit */
        uint64_t u;
        memset(out, 0, n * 2);
        ok = !glyd_isError(glyd_tensorNibbleForm(blob, &t)) && t.codeForm == GK_CODES_NIBBLES;
        if (ok) glyd_tensorEmulateDecode(blob, &t, &tables, out);
        for (u = 0; ok && u < t.nbUnits; u += 3) {
            uint64_t const u1 = u + 3 < t.nbUnits ? u + 3 : t.nbUnits;
            glyd_tensorEmulateDecodeUnits(blob, &t, u, u1, out + u * t.unitSize);
        }
        ok = ok && memcmp(out, src, n * 2) == 0 && glyd_isError(glyd_tensorNibbleForm(blob, &t));
    }
    free(blob);
    free(out);
    return ok;
}

TEST(gpu_kernels_emulated_decode_real_weights)
{
    size_t n, i;
    uint8_t* const data = fixture_bf16(&n);
    uint16_t* w;
    static const size_t kCols[] = { 64, 172, 512, 1000 };
    int ok = 1;
    if (!data) return;
    w = (uint16_t*)malloc(n * 2);
    for (i = 0; i < n; i++) w[i] = (uint16_t)glyd_read16(data + 2 * i);
    /* rows of 64, 172 (units cutting the 32-element groups), 512 and 1000 */
    for (i = 0; i < 4; i++) {
        if (!kernel_round_trip(w, n - n % kCols[i], kCols[i], glyd_tensor_fast)) ok = 0;
        if (!kernel_round_trip(w, n - n % kCols[i], kCols[i], glyd_tensor_entropy)) ok = 0;
    }
    CHECK(ok);
    free(w);
    free(data);
}

/* Every run of every unit through the multi-symbol table (as described
 * for the kernels) against one symbol at a time; 1 if all agree and no
 * run writes past its end and the slack after it. */
static int multi_symbols_agree(const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                               const uint16_t* runs)
{
    size_t const room = GK_HUF_RUN + GK_HUF_SYMBOLS_SLACK + 1;
    uint8_t* const out = (uint8_t*)malloc(room);
    uint64_t u, k, i0, i1, i;
    int ok = out != NULL;
    for (u = 0; ok && u < t->nbUnits; u++)
        for (k = 0; ok && k < gk_huf_runs_per_unit(t); k++) {
            uint64_t const bit = gk_huf_run_at(blob, t, runs, u, k, &i0, &i1);
            gk_bits r = gk_bits_at(blob, t, bit);
            memset(out, 0xA5, room);
            gk_huffman_symbols(blob, t, tables->multi, bit, i0, i1, out, i0);
            for (i = i0; i < i1; i++) ok = ok && out[i - i0] == gk_huffman_next(&r, blob, t, tables->one);
            for (i = i1 - i0 + GK_HUF_SYMBOLS_SLACK; i < room; i++) ok = ok && out[i] == 0xA5;
        }
    free(out);
    return ok;
}

TEST(gpu_kernels_multi_symbol_table_decodes_as_one_at_a_time)
{
    /* the products' table of up to 3 symbols a lookup: on real weights in
     * the entropy layout (both splits: the weights as they are, and with
     * exponents spread past 128 values; and with 5 exponents, whose codes
     * are short, the table indexed by more bits than the longest), then
     * with the streams overwritten by random bits, where codes fall anyhow */
    size_t n, i, c;
    uint8_t* const data = fixture_bf16(&n);
    test_rng r = { 11 };
    unsigned pass;
    if (!data) return;
    n -= n % 512;
    for (pass = 0; pass < 3; pass++) {
        size_t const cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        uint16_t* const w = (uint16_t*)malloc(n * 2);
        gk_huf_tables tables;
        uint16_t* runs;
        glyd_tensorView v;
        gk_tensor t;
        for (i = 0; i < n; i++) {
            w[i] = (uint16_t)glyd_read16(data + 2 * i);
            if (pass == 1 && i % 97 == 0) w[i] = (uint16_t)(w[i] & 0x807F) | (uint16_t)((i / 97) % 256 << 7);
            if (pass == 2) w[i] = (uint16_t)(w[i] & 0x807F) | (uint16_t)((120 + i * i % 5) << 7);
        }
        c = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, 512, glyd_tensor_entropy, 1);
        CHECK(!glyd_isError(c) && glyd_tensorOpen(&v, blob, c) == c);
        CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
        CHECK(t.layout == GK_LAYOUT_HUFFMAN && (pass == 2 || t.split == (pass == 0 ? GK_SPLIT_JOINT : 0)));
        CHECK(pass == 2 ? t.maxBits < GK_HUF_MAX_BITS : t.maxBits == GK_HUF_MAX_BITS);
        runs = (uint16_t*)malloc(sizeof(uint16_t) * gk_huf_index_size(&t) + 1);
        CHECK_OK(glyd_tensorHuffmanRuns(blob, &t, &tables, runs));
        CHECK(multi_symbols_agree(blob, &t, &tables, runs));
        for (i = 0; i < t.streamBytes; i++) blob[t.streams + i] = (uint8_t)rng_next(&r);
        CHECK(multi_symbols_agree(blob, &t, &tables, runs));
        free(runs);
        free(w);
        free(blob);
    }
    free(data);
}

/* The joint split's group assembly, a pair of elements a word, against
 * the element-by-element rule of the CPU decoder: every symbol (those
 * whose exponent wraps past 255 included, as only a corrupt blob has) with
 * every field, at several bases, each value in each of a group's 32 places. */
TEST(gpu_kernels_joint_pairs_as_element_by_element)
{
    static const uint32_t kBases[] = { 0, 1, 97, 128, 200, 255 };
    gk_tensor t;
    unsigned b, s, f, j, bad = 0;
    memset(&t, 0, sizeof t);
    t.split = GK_SPLIT_JOINT;
    for (b = 0; b < sizeof kBases / sizeof kBases[0]; b++) {
        t.symBase = kBases[b];
        for (s = 0; s < 256; s++)
            for (f = 0; f < 128; f += 32) {
                /* element j of the group: symbol s + j, field f + j (each mod its range) */
                uint32_t sym[8] = { 0 }, fields[8] = { 0 }, pairs[16];
                for (j = 0; j < 32; j++) {
                    uint64_t const at = 7 * j;
                    uint32_t const fj = (f + j) & 0x7F;
                    sym[j / 4] |= ((s + j) & 0xFF) << 8 * (j % 4);
                    fields[at / 32] |= fj << at % 32;
                    if (at % 32 > 25) fields[at / 32 + 1] |= fj >> (32 - at % 32);
                }
                gk_joint_pairs(fields, sym, t.symBase, pairs);
                for (j = 0; j < 32; j++) {
                    uint16_t const want = gk_huffman_element(&t, (s + j) & 0xFF, (f + j) & 0x7F);
                    if ((uint16_t)(pairs[j / 2] >> 16 * (j % 2)) != want) bad++;
                }
            }
    }
    CHECK(bad == 0);
}

TEST(gpu_kernels_patch_slots_start_in_distinct_banks)
{
    /* a warp's 32 patch slots, side by side in shared memory: each of its
     * 8 slot stores (and loads) must touch 32 different banks, or it takes
     * as many passes as the busiest bank has threads (8 slots 8 words
     * apart: 8 passes; bench/gpu_model counts a fast product's step) */
    unsigned k, lane, worst = 0;
    for (k = 0; k < 8; k++) {
        unsigned perBank[32] = { 0 };
        for (lane = 0; lane < 32; lane++) perBank[(GK_PATCH_SLOT_WORDS * lane + k) % 32]++;
        for (lane = 0; lane < 32; lane++) worst = perBank[lane] > worst ? perBank[lane] : worst;
    }
    CHECK(GK_PATCH_SLOT_WORDS >= 8 && worst == 1);
}

TEST(gpu_kernels_escape_patch_in_registers_as_byte_by_byte)
{
    /* the escape mask straight from the nibble-form code words, against
     * code 7 element by element; then gk_patch_escapes8 (byte
     * permutations, in registers) against gk_patch_escapes (a byte at a
     * time, the kernels' way past 8 escapes or the window) on every count
     * of escapes up to 8, at every offset in a window whose tail holds
     * other data: the same exponents */
    test_rng r = { 8 };
    unsigned trial, bad = 0, counts[9] = { 0 };
    for (trial = 0; trial < 20000; trial++) {
        uint32_t const w0 = (uint32_t)rng_next(&r), w1 = (uint32_t)rng_next(&r), w2 = (uint32_t)rng_next(&r);
        uint32_t want = 0, m = 0, ex[8], ref[8], window[8], e0, e1;
        uint8_t bytes[32];
        unsigned j, n = (unsigned)(rng_next(&r) % 9), off = (unsigned)(rng_next(&r) % (4 * 8 - 8 + 1));
        gk_escape_cursor c;
        for (j = 0; j < 32; j++) {
            gk_tensor t;
            t.codeForm = GK_CODES_NIBBLES;
            if (gk_code(&t, w0, w1, w2, j) == 7) want |= 1u << gk_nibble_bit(j);
        }
        if (gk_nibble_escapes(w0, w1, w2) != want) bad++;
        /* n escapes at random elements */
        while ((unsigned)gk_popc(m) < n) m |= 1u << gk_nibble_bit((unsigned)(rng_next(&r) % 32));
        counts[n]++;
        for (j = 0; j < 8; j++) ex[j] = ref[j] = (uint32_t)rng_next(&r);
        for (j = 0; j < 8; j++) window[j] = (uint32_t)rng_next(&r);
        for (j = 0; j < 32; j++) bytes[j] = (uint8_t)(ref[j >> 2] >> 8 * (j & 3));
        memset(&c, 0, sizeof c);
        c.off = off;
        c.inWindow = 32 - off;
        c.left = 32;
        gk_patch_escapes(NULL, &c, window, m, bytes);
        for (j = 0; j < 8; j++)
            ref[j] = bytes[4 * j] | (uint32_t)bytes[4 * j + 1] << 8 | (uint32_t)bytes[4 * j + 2] << 16 |
                     (uint32_t)bytes[4 * j + 3] << 24;
        if (!gk_escapes8_fit(100 + off, 100, 100 + off + n, 8, n)) bad++;
        gk_window_bytes8(window, 8, off, &e0, &e1);
        gk_patch_escapes8(m, e0, e1, ex);
        if (memcmp(ex, ref, sizeof ex)) bad++;
    }
    CHECK(bad == 0);
    for (trial = 0; trial <= 8; trial++) CHECK(counts[trial] > 1000);
    /* what gk_escapes8_fit leaves to the loop: 9 escapes, the window's end,
     * the unit's last escape */
    CHECK(!gk_escapes8_fit(0, 0, 100, 32, 9));
    CHECK(!gk_escapes8_fit(125, 0, 200, 32, 4) && gk_escapes8_fit(124, 0, 200, 32, 4));
    CHECK(!gk_escapes8_fit(10, 8, 13, 32, 4) && gk_escapes8_fit(10, 8, 14, 32, 4));
    {
        /* a group without escapes that starts where the step's window ends
         * (fuzz_tensor found the emulation reading the word past it, under
         * ASan): nothing read, nothing changed */
        uint32_t window[8] = { 0 }, ex[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, slot[GK_PATCH_SLOT_WORDS];
        uint32_t volatile none = 0; /* not folded: the reads stay where they are */
        unsigned j;
        gk_group_patch(NULL, NULL, none, 132, 200, window, 8, 100, ex, slot);
        for (j = 0; j < 8; j++) CHECK(ex[j] == j + 1);
    }
}

TEST(gpu_kernels_emulated_decode_every_pattern)
{
    /* every bf16 value (escapes everywhere, the plain split), and a
     * long-row tensor whose units split rows */
    size_t const n = 65536 * 3;
    uint16_t* const w = (uint16_t*)malloc(n * 2);
    size_t i;
    for (i = 0; i < n; i++) w[i] = (uint16_t)(i * 40503u + i / 65536);
    CHECK(kernel_round_trip(w, n, 96, glyd_tensor_fast));
    CHECK(kernel_round_trip(w, n, 96, glyd_tensor_entropy));
    CHECK(kernel_round_trip(w, n, 65536, glyd_tensor_fast));
    for (i = 0; i < n; i++) w[i] = (uint16_t)((118 + (i * 7 % 11)) << 7 | (i & 0x807F));
    CHECK(kernel_round_trip(w, n, 12288, glyd_tensor_entropy));
    free(w);
}

TEST(gpu_kernels_stay_inside_hostile_blobs)
{
    /* streams, codes and escape counts flipped after the structure was
     * checked: the emulated kernels read only inside the blob (ASan). */
    size_t const n = 3000;
    uint16_t src[3000];
    size_t i, l, bit;
    test_rng r = { 77 };
    for (i = 0; i < n; i++) src[i] = (uint16_t)((116 + i % 13) << 7 | (i & 0x807F));
    for (l = 1; l < 3; l++) {
        size_t const cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        size_t const c = glyd_tensorCompress(blob, cap, src, n, GLYD_DTYPE_BF16, 100,
                                             l == 1 ? glyd_tensor_entropy : glyd_tensor_fast, 1);
        uint8_t* const copy = (uint8_t*)malloc(c);
        uint16_t* const out = (uint16_t*)malloc(n * 2);
        gk_huf_tables tables;
        glyd_tensorView v;
        gk_tensor t;
        CHECK(glyd_tensorOpen(&v, blob, c) == c);
        CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
        for (bit = 0; bit < 400; bit++) {
            size_t const at = (size_t)(t.planes + rng_next(&r) % (c - t.planes));
            memcpy(copy, blob, c);
            copy[at] ^= (uint8_t)(1u << (rng_next(&r) % 8));
            if (glyd_isError(glyd_tensorOpen(&v, copy, c))) continue; /* the host refuses it first */
            if (glyd_isError(glyd_tensorDescribe(&v, copy, &t, &tables))) continue;
            glyd_tensorEmulateDecode(copy, &t, &tables, out);
            if (t.layout == GK_LAYOUT_FAST) {
                float x[100], y[30];
                for (i = 0; i < 100; i++) x[i] = 1.0f;
                CHECK_OK(glyd_tensorEmulateGemv(copy, &t, 30, 100, x, 1, y));
                if (t.unitSize % 32 == 0) {
                    /* the nibble form of hostile codes, then decoded */
                    CHECK_OK(glyd_tensorNibbleForm(copy, &t));
                    glyd_tensorEmulateDecode(copy, &t, &tables, out);
                }
            }
        }
        free(blob);
        free(copy);
        free(out);
    }
    {
        /* layouts and dtypes the kernels do not take are refused */
        gk_huf_tables tables;
        uint8_t blob[256];
        glyd_tensorView v;
        gk_tensor t;
        float f[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        size_t const c = glyd_tensorCompress(blob, sizeof blob, f, 8, GLYD_DTYPE_F32, 8, glyd_tensor_auto, 1);
        CHECK(glyd_tensorOpen(&v, blob, c) == c);
        CHECK(glyd_isError(glyd_tensorDescribe(&v, blob, &t, &tables)));
    }
}

/* The same product read from plain bf16 (the stored layout) and from the
 * Huffman layout, decoded run by run as its kernel does: the same bits as
 * from the fast layout (fast: its description; y: its result). */
static int same_sums_in_every_layout(const uint16_t* w, uint64_t rows, uint64_t cols, const gk_tensor* fast,
                                     const float* x, unsigned batch, const float* y)
{
    size_t const n = (size_t)(rows * cols), cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    float* const y2 = (float*)malloc(sizeof(float) * batch * rows);
    uint16_t* const back = (uint16_t*)malloc(n * 2);
    gk_huf_tables tables;
    uint16_t* runs = NULL;
    glyd_tensorView v;
    gk_tensor t;
    size_t const c = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, (size_t)cols, glyd_tensor_entropy, 1);
    int ok = blob && y2 && back && !glyd_isError(c) && glyd_tensorOpen(&v, blob, c) == c &&
             !glyd_isError(glyd_tensorDescribe(&v, blob, &t, &tables)) && t.layout == GK_LAYOUT_HUFFMAN &&
             t.unitSize == fast->unitSize;
    if (ok) {
        runs = (uint16_t*)malloc(sizeof(uint16_t) * gk_huf_index_size(&t) + 1);
        ok = runs && !glyd_isError(glyd_tensorHuffmanRuns(blob, &t, &tables, runs));
    }
    if (ok) {
        /* decoded run by run: the elements */
        glyd_tensorEmulateDecodeRuns(blob, &t, &tables, runs, 0, t.nbUnits, back);
        ok = memcmp(back, w, n * 2) == 0;
    }
    if (ok) ok = !glyd_isError(glyd_tensorEmulateGemvHuffman(blob, &t, &tables, runs, rows, cols, x, batch, y2)) &&
                 memcmp(y, y2, sizeof(float) * batch * rows) == 0;
    if (ok) {
        gk_tensor stored;
        memset(&stored, 0, sizeof stored);
        stored.layout = GK_LAYOUT_STORED;
        stored.nbElements = n;
        stored.unitSize = fast->unitSize;
        stored.nbUnits = fast->nbUnits;
        ok = !glyd_isError(glyd_tensorEmulateGemv(w, &stored, rows, cols, x, batch, y2)) &&
             memcmp(y, y2, sizeof(float) * batch * rows) == 0;
    }
    free(blob);
    free(y2);
    free(back);
    free(runs);
    return ok;
}

/* y = W x by the emulated product kernel against sums in double, and the
 * same bits from every layout. */
static int gemv_close(const uint16_t* w, uint64_t rows, uint64_t cols, unsigned batch)
{
    size_t const n = (size_t)(rows * cols), cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    float* const x = (float*)malloc(sizeof(float) * batch * cols);
    float* const y = (float*)malloc(sizeof(float) * batch * rows);
    gk_huf_tables tables;
    glyd_tensorView v;
    gk_tensor t;
    test_rng r = { 3 + rows };
    size_t const c = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, (size_t)cols, glyd_tensor_fast, 1);
    uint64_t i, k;
    unsigned b;
    int ok = !glyd_isError(c) && glyd_tensorOpen(&v, blob, c) == c &&
             !glyd_isError(glyd_tensorDescribe(&v, blob, &t, &tables));
    for (i = 0; i < batch * cols; i++) x[i] = (float)((double)(rng_next(&r) % 2001) / 1000.0 - 1.0);
    /* as the GPU backend uploads it: codes as nibbles where the rows kernel reads them */
    if (ok && gk_rows_shape(&t, cols)) ok = !glyd_isError(glyd_tensorNibbleForm(blob, &t)) && gk_rows_fits(&t, cols);
    if (ok) ok = !glyd_isError(glyd_tensorEmulateGemv(blob, &t, rows, cols, x, batch, y));
    if (ok) ok = same_sums_in_every_layout(w, rows, cols, &t, x, batch, y);
    for (b = 0; ok && b < batch; b++)
        for (i = 0; i < rows; i++) {
            double exact = 0, mag = 0;
            for (k = 0; k < cols; k++) {
                uint32_t const bits = (uint32_t)w[i * cols + k] << 16;
                float f;
                memcpy(&f, &bits, 4);
                if (isnan(f) || isinf(f)) f = 0;
                exact += (double)f * x[b * cols + k];
                mag += fabs((double)f * x[b * cols + k]);
            }
            if (fabs(y[b * rows + i] - exact) > 1e-5 * mag + 1e-30) ok = 0;
        }
    free(blob);
    free(x);
    free(y);
    return ok;
}

TEST(gpu_gemv_emulated_sums_rows)
{
    /* rows of 64 and 172 (groups across rows, several rows per unit),
     * 4096 (a row per unit), 12288 (rows cut in two units): the stories
     * weights tiled, every batch size */
    size_t n, i;
    uint8_t* const data = fixture_bf16(&n);
    static const uint64_t kShapes[][2] = { { 300, 64 }, { 100, 172 }, { 20, 4096 }, { 6, 12288 } };
    uint16_t* w;
    unsigned s, b;
    int ok = 1;
    if (!data) return;
    w = (uint16_t*)malloc(20 * 4096 * 2); /* the largest shape's */
    for (i = 0; i < 20 * 4096; i++) w[i] = (uint16_t)glyd_read16(data + 2 * (i % n));
    for (s = 0; s < 4; s++)
        for (b = 1; b <= 8; b += 3)
            if (!gemv_close(w, kShapes[s][0], kShapes[s][1], b)) ok = 0;
    CHECK(ok);
    {
        /* shapes and batches the kernel does not take */
        uint8_t blob[4096];
        gk_huf_tables tables;
        glyd_tensorView v;
        gk_tensor t;
        float x[64], y[64];
        size_t const c = glyd_tensorCompress(blob, sizeof blob, w, 640, GLYD_DTYPE_BF16, 64, glyd_tensor_fast, 1);
        CHECK(glyd_tensorOpen(&v, blob, c) == c);
        CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
        memset(x, 0, sizeof x);
        CHECK(glyd_isError(glyd_tensorEmulateGemv(blob, &t, 10, 64, x, 0, y)));
        CHECK(glyd_isError(glyd_tensorEmulateGemv(blob, &t, 10, 64, x, 9, y)));
        CHECK(glyd_isError(glyd_tensorEmulateGemv(blob, &t, 11, 64, x, 1, y)));
        CHECK_OK(glyd_tensorEmulateGemv(blob, &t, 10, 64, x, 1, y));
    }
    free(w);
    free(data);
}

/* A Huffman blob whose units are a run each (256 elements, as another
 * writer may cut them) needs no run index: the emulation takes it without
 * one, as the kernels do (gk_huf_products_fit), and sums it as the blob
 * of the same weights in units of 4096 that does need one. */
TEST(gpu_gemv_emulated_huffman_units_of_one_run)
{
    size_t n, i;
    uint8_t* const data = fixture_bf16(&n);
    uint16_t w[256];
    uint8_t blob[2048];
    gk_huf_tables tables;
    glyd_tensorView v;
    gk_tensor t;
    uint16_t runs[16];
    float x[64], y[4], y1[4];
    size_t c;
    if (!data) return;
    for (i = 0; i < 256; i++) w[i] = (uint16_t)glyd_read16(data + 2 * (i % n));
    for (i = 0; i < 64; i++) x[i] = (float)i / 64.0f - 0.5f;
    c = glyd_tensorCompress(blob, sizeof blob, w, 256, GLYD_DTYPE_BF16, 64, glyd_tensor_entropy, 1);
    CHECK(glyd_tensorOpen(&v, blob, c) == c && v.layout == GLYD_TLAYOUT_HUFFMAN);
    CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
    CHECK(t.unitSize == 4096 && gk_huf_index_size(&t) == 15);
    CHECK(glyd_isError(glyd_tensorEmulateGemvHuffman(blob, &t, &tables, NULL, 4, 64, x, 1, y)));
    CHECK_OK(glyd_tensorHuffmanRuns(blob, &t, &tables, runs));
    CHECK_OK(glyd_tensorEmulateGemvHuffman(blob, &t, &tables, runs, 4, 64, x, 1, y));
    /* the same single unit's stream, its header saying units of 256 */
    glyd_write32(blob + 16, 256);
    CHECK(glyd_tensorOpen(&v, blob, c) == c);
    CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
    CHECK(t.unitSize == 256 && t.nbUnits == 1 && gk_huf_index_size(&t) == 0);
    CHECK_OK(glyd_tensorEmulateGemvHuffman(blob, &t, &tables, NULL, 4, 64, x, 1, y1));
    CHECK(memcmp(y, y1, sizeof y) == 0);
    free(data);
}

TEST(gpu_gemv_emulated_rows_of_whole_groups)
{
    /* The rows kernel (a thread per group) on shapes it takes: several rows
     * per unit, a row per unit, rows cut in two units; weights whose
     * exponents spread wide, so that most groups have escapes and some are
     * escapes throughout; every batch size. Against sums in double, and the
     * same bits from every layout. */
    static const uint64_t kShapes[][2] = { { 96, 96 }, { 5, 8192 }, { 3, 16384 } };
    test_rng r = { 77 };
    uint16_t* const w = (uint16_t*)malloc(3 * 16384 * 2);
    unsigned s, b;
    size_t i;
    int ok = 1;
    for (i = 0; i < 3 * 16384; i++) {
        uint64_t const z = rng_next(&r);
        /* exponents 100..139 around a peak at 120, in runs of escapes at times */
        unsigned const e = (i / 32) % 37 == 5 ? 100 + (unsigned)(z % 40) : 117 + (unsigned)(z % 7) + (z % 10 == 0 ? 9 : 0);
        w[i] = (uint16_t)((z >> 20 & 1) << 15 | e << 7 | (z >> 8 & 0x7F));
    }
    {
        /* the data reach past the warps' escape windows (128 bytes from a
         * multiple of 4 escapes) in some steps and not in others, so that
         * both ways to an escape are taken */
        size_t const n = 5 * 8192, cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
        uint8_t* const blob = (uint8_t*)malloc(cap);
        size_t const c = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, 8192, glyd_tensor_fast, 1);
        gk_huf_tables tables;
        glyd_tensorView v;
        gk_tensor t;
        unsigned within = 0, past = 0;
        uint64_t q0, q;
        CHECK(glyd_tensorOpen(&v, blob, c) == c);
        CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
        for (q0 = 0; q0 < n / 32; q0 += 32) {
            unsigned step = 0;
            for (q = q0; q < q0 + 32; q++) step += gk_popc(gk_fast_escapes(blob, &t, q, 0, n));
            within += step <= 125;
            past += step > 128;
        }
        CHECK(within > 0 && past > 0);
        free(blob);
    }
    for (s = 0; s < 3; s++) {
        gk_tensor t;
        memset(&t, 0, sizeof t);
        t.layout = GK_LAYOUT_FAST;
        t.nbElements = kShapes[s][0] * kShapes[s][1];
        t.unitSize = glyd_tensorUnitSize(t.nbElements, kShapes[s][1]);
        t.nbUnits = (t.nbElements + t.unitSize - 1) / t.unitSize;
        CHECK(gk_rows_shape(&t, kShapes[s][1]));
        for (b = 1; b <= 8; b++)
            if (!gemv_close(w, kShapes[s][0], kShapes[s][1], b)) ok = 0;
    }
    CHECK(ok);
    free(w);
}

/* A rows block's shared memory as the plan lays it out (tensor_kernels.h),
 * checked against the layout written out here: the regions in order, each
 * where the one before ends, apart, aligned as the kernel reads them, and
 * the whole what the launcher asks the device for. */
static int rows_plan_as_laid_out(int layout, const gk_tensor* t, uint64_t cols)
{
    int ok = 1;
    unsigned vectors, warps;
    for (vectors = 1; vectors <= GK_ROWS_MAX_BATCH; vectors++)
        for (warps = 1; warps <= GK_ROWS_WARPS; warps *= 2) {
            gk_rows_smem const p = gk_rows_smem_plan(layout, t, cols, vectors, 32 * warps);
            uint64_t const xEnd = p.x + 4 * (uint64_t)vectors * gk_rows_stride(gk_rows_span(t, cols));
            if (p.x != (layout == GK_LAYOUT_HUFFMAN ? 4u << GK_HUF_MAX_BITS : 0) || p.x % 16) ok = 0;
            if (layout == GK_LAYOUT_FAST) {
                /* slots, then windows, then counts: none overlapping the next */
                if (p.slots != xEnd || p.slots % 4) ok = 0;
                if (p.windows != p.slots + 4 * GK_PATCH_SLOT_WORDS * 32 * (uint64_t)warps) ok = 0;
                if (p.counts != p.windows + 4 * 32 * (uint64_t)warps) ok = 0;
                if (p.bytes != p.counts + 4 * 2 * (uint64_t)warps) ok = 0;
            } else if (layout == GK_LAYOUT_HUFFMAN) {
                if (p.units != xEnd || p.units % 16) ok = 0;
                if (p.bytes != p.units + (uint64_t)warps * gk_huf_units_together(t) * gk_huf_unit_bytes(t)) ok = 0;
            } else if (p.bytes != xEnd) {
                ok = 0;
            }
        }
    return ok;
}

TEST(gpu_kernels_rows_shared_memory_regions_apart)
{
    static const uint64_t kShapes[][2] = { { 96, 96 }, { 5, 8192 }, { 3, 16384 }, { 8, 4096 } };
    size_t const n = 5 * 8192, cap = glyd_tensorCompressBound(n, GLYD_DTYPE_BF16);
    uint16_t* const w = (uint16_t*)malloc(n * 2);
    uint8_t* const blob = (uint8_t*)malloc(cap);
    test_rng r = { 5 };
    gk_huf_tables tables;
    glyd_tensorView v;
    gk_tensor t;
    unsigned s;
    size_t i, c;
    for (i = 0; i < n; i++) {
        uint64_t const z = rng_next(&r);
        w[i] = (uint16_t)((z >> 20 & 1) << 15 | (118 + z % 5) << 7 | (z >> 8 & 0x7F));
    }
    for (s = 0; s < 4; s++) {
        memset(&t, 0, sizeof t);
        t.layout = GK_LAYOUT_FAST;
        t.nbElements = kShapes[s][0] * kShapes[s][1];
        t.unitSize = glyd_tensorUnitSize(t.nbElements, kShapes[s][1]);
        t.nbUnits = (t.nbElements + t.unitSize - 1) / t.unitSize;
        CHECK(rows_plan_as_laid_out(GK_LAYOUT_FAST, &t, kShapes[s][1]));
        t.layout = GK_LAYOUT_STORED;
        CHECK(rows_plan_as_laid_out(GK_LAYOUT_STORED, &t, kShapes[s][1]));
    }
    c = glyd_tensorCompress(blob, cap, w, n, GLYD_DTYPE_BF16, 8192, glyd_tensor_entropy, 1);
    CHECK(glyd_tensorOpen(&v, blob, c) == c);
    CHECK_OK(glyd_tensorDescribe(&v, blob, &t, &tables));
    CHECK(t.layout == GK_LAYOUT_HUFFMAN && gk_rows_fits(&t, 8192));
    CHECK(rows_plan_as_laid_out(GK_LAYOUT_HUFFMAN, &t, 8192));
    free(w);
    free(blob);
}

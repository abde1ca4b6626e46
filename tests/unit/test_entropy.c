/* SPDX-License-Identifier: BSD-3-Clause */
/* test_entropy.c: histograms, tANS tables and streams, Huffman codes. */
#include <math.h>
#include <stdlib.h>

#include "../../lib/entropy/entropy.h"
#include "harness.h"

TEST(histogram_counts_bytes)
{
    uint8_t data[1000];
    unsigned count[256], maxSym, i, sum = 0;
    test_rng r = { 1 };
    rng_fill(&r, data, sizeof data);
    for (i = 0; i < sizeof data; i++) data[i] &= 0x3F;
    CHECK(glyd_histBytes(count, &maxSym, data, sizeof data) > 0);
    for (i = 0; i < 256; i++) sum += count[i];
    CHECK(sum == sizeof data);
    CHECK(maxSym <= 0x3F);
    CHECK(glyd_histBytes(count, &maxSym, data, 0) == 0);
    CHECK(maxSym == 0);
}

/* A random histogram over 0..maxSymbol with a skew. */
static size_t random_hist(test_rng* r, unsigned* count, unsigned maxSymbol)
{
    size_t total = 0;
    unsigned s;
    for (s = 0; s <= maxSymbol; s++) {
        uint64_t const x = rng_next(r);
        count[s] = (x & 3) == 0 ? 0 : (unsigned)((x >> 8) % (1u << ((x >> 40) % 16)));
        total += count[s];
    }
    if (total == 0) { count[maxSymbol] = 1; total = 1; }
    return total;
}

TEST(fse_normalize_sums_to_table)
{
    test_rng r = { 99 };
    int iter, ok = 1;
    for (iter = 0; iter < 2000; iter++) {
        unsigned count[256];
        int16_t norm[256];
        unsigned const maxSym = (unsigned)(rng_next(&r) % 60);
        size_t const total = random_hist(&r, count, maxSym);
        unsigned const log = glyd_fseOptimalTableLog(9, total, maxSym);
        unsigned s;
        uint32_t sum = 0;
        if (glyd_isError(glyd_fseNormalize(norm, log, count, total, maxSym))) { ok = 0; continue; }
        for (s = 0; s <= maxSym; s++) {
            if (count[s] && norm[s] < 1) ok = 0;
            if (!count[s] && norm[s] != 0) ok = 0;
            sum += (uint32_t)norm[s];
        }
        if (sum != (1u << log)) ok = 0;
    }
    CHECK(ok);
}

TEST(fse_description_round_trip)
{
    test_rng r = { 5 };
    int iter, ok = 1;
    for (iter = 0; iter < 2000; iter++) {
        unsigned count[256];
        int16_t norm[256], back[256];
        uint8_t buf[512];
        unsigned const maxSym = (unsigned)(rng_next(&r) % 56) + 1;
        size_t const total = random_hist(&r, count, maxSym);
        unsigned log, maxRead = 255, logRead, s, top = 0;
        size_t w, rd;
        log = glyd_fseOptimalTableLog(9, total, maxSym);
        glyd_fseNormalize(norm, log, count, total, maxSym);
        for (s = 0; s <= maxSym; s++) if (norm[s]) top = s;
        w = glyd_fseWriteNCount(buf, sizeof buf, norm, top, log);
        if (glyd_isError(w)) { ok = 0; continue; }
        rd = glyd_fseReadNCount(back, &maxRead, &logRead, 12, buf, w);
        if (rd != w || maxRead != top || logRead != log) { ok = 0; continue; }
        for (s = 0; s <= top; s++) if (back[s] != norm[s]) ok = 0;
    }
    CHECK(ok);
}

TEST(fse_description_hostile_bytes)
{
    /* any bytes either fail cleanly or describe a distribution that sums
     * to the table size within the symbol limit */
    test_rng r = { 11 };
    int iter, ok = 1;
    for (iter = 0; iter < 20000; iter++) {
        uint8_t buf[64];
        int16_t norm[256];
        unsigned maxSym = 52, log;
        size_t const n = (size_t)(rng_next(&r) % sizeof buf) + 1;
        size_t rd;
        rng_fill(&r, buf, n);
        rd = glyd_fseReadNCount(norm, &maxSym, &log, 9, buf, n);
        if (!glyd_isError(rd)) {
            unsigned s;
            uint32_t sum = 0;
            if (maxSym > 52 || log > 9 || rd > n) ok = 0;
            for (s = 0; s <= maxSym; s++) sum += (uint32_t)norm[s];
            if (sum != (1u << log)) ok = 0;
            if (ok) {
                glyd_fseDTable dt;
                glyd_fseBuildDTable(&dt, norm, maxSym, log);
            }
        }
    }
    CHECK(ok);
}

TEST(fse_bytes_round_trip)
{
    test_rng r = { 3 };
    int iter, ok = 1, compressedSome = 0;
    for (iter = 0; iter < 300; iter++) {
        uint8_t src[2000], comp[4000], back[2000];
        size_t const n = (size_t)(rng_next(&r) % sizeof src) + 1;
        size_t i, c;
        for (i = 0; i < n; i++) {
            uint64_t const x = rng_next(&r);
            src[i] = (uint8_t)((x & 7) == 0 ? (x >> 8) % 12 : (x >> 8) % 3);
        }
        c = glyd_fseCompressBytes(comp, sizeof comp, src, n, 11, 6);
        if (glyd_isError(c)) { ok = 0; continue; }
        if (c == 0) continue; /* not compressible: caller stores raw */
        compressedSome = 1;
        if (glyd_fseDecompressBytes(back, n, comp, c, 11, 6) != c || memcmp(src, back, n)) ok = 0;
    }
    CHECK(ok);
    CHECK(compressedSome);
}

TEST(fse_bytes_hostile_streams)
{
    test_rng r = { 8 };
    int iter;
    for (iter = 0; iter < 20000; iter++) {
        uint8_t buf[48], out[300];
        size_t const n = (size_t)(rng_next(&r) % sizeof buf) + 1;
        rng_fill(&r, buf, n);
        /* must not crash or read out of bounds; the result may be anything */
        (void)glyd_fseDecompressBytes(out, (size_t)(rng_next(&r) % 255) + 1, buf, n, 11, 6);
    }
    CHECK(1);
}

/* Cost in bits of an unconstrained Huffman code, by repeated merging. */
static uint64_t huffman_cost(const unsigned* count, unsigned n)
{
    uint64_t w[256], cost = 0;
    unsigned m = 0, i;
    for (i = 0; i < n; i++) if (count[i]) w[m++] = count[i];
    while (m > 1) {
        unsigned a = 0, b = 1, k;
        if (w[b] < w[a]) { a = 1; b = 0; }
        for (k = 2; k < m; k++) {
            if (w[k] < w[a]) { b = a; a = k; }
            else if (w[k] < w[b]) b = k;
        }
        w[a] += w[b];
        cost += w[a];
        w[b] = w[--m];
    }
    return cost;
}

TEST(huffman_lengths_complete_limited_optimal)
{
    test_rng r = { 21 };
    int iter, ok = 1, optimalChecked = 0;
    for (iter = 0; iter < 500; iter++) {
        unsigned count[256];
        glyd_hufCTable ct;
        /* small alphabets mostly fit under the limit, large ones often not */
        unsigned const maxSym = (unsigned)(rng_next(&r) % (iter & 1 ? 255 : 24)) + 1;
        unsigned s, present = 0, longest = 0;
        double kraft = 0;
        size_t bits;
        random_hist(&r, count, maxSym);
        for (s = 0; s <= maxSym; s++) present += count[s] != 0;
        if (present < 2) continue;
        if (glyd_isError(glyd_hufBuildCTable(&ct, count, maxSym, 11))) { ok = 0; continue; }
        for (s = 0; s <= maxSym; s++) {
            if (count[s] && ct.len[s] == 0) ok = 0;
            if (ct.len[s]) kraft += ldexp(1.0, -(int)ct.len[s]);
            if (ct.len[s] > longest) longest = ct.len[s];
        }
        if (fabs(kraft - 1.0) > 1e-12 || longest > 11 || longest != ct.maxBits) ok = 0;
        bits = glyd_hufCost(&ct, count, maxSym);
        /* never better than unconstrained Huffman; equal when the limit
         * does not bind */
        {
            uint64_t const best = huffman_cost(count, maxSym + 1);
            if (bits < best) ok = 0;
            if (longest < 11 && bits != best) ok = 0;
            if (longest < 11) optimalChecked++;
        }
    }
    CHECK(ok);
    CHECK(optimalChecked > 50);
}

TEST(huffman_limit_binds_on_fibonacci_counts)
{
    unsigned count[30];
    glyd_hufCTable ct;
    unsigned s;
    count[0] = count[1] = 1;
    for (s = 2; s < 30; s++) count[s] = count[s - 1] + count[s - 2];
    CHECK(glyd_hufBuildCTable(&ct, count, 29, 11) == 11);
    CHECK(ct.maxBits == 11);
    CHECK(glyd_hufCost(&ct, count, 29) >= huffman_cost(count, 30));
}

static void huffman_round_trip(const uint8_t* src, size_t n, unsigned nbStreams, int* ok)
{
    unsigned count[256], maxSym;
    glyd_hufCTable ct;
    glyd_hufDTable dt;
    uint8_t desc[256];
    glyd_hufPairs* const pairs = (glyd_hufPairs*)malloc(sizeof(glyd_hufPairs));
    uint8_t* const comp = (uint8_t*)malloc(n + 1024);
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    size_t d, c;
    if (glyd_histBytes(count, &maxSym, src, n) == n) {
        /* one symbol: no code exists (blocks use run-length mode then) */
        if (!glyd_isError(glyd_hufBuildCTable(&ct, count, maxSym, 11))) *ok = 0;
        goto done;
    }
    if (glyd_isError(glyd_hufBuildCTable(&ct, count, maxSym, 11))) { *ok = 0; goto done; }
    d = glyd_hufWriteCTable(desc, sizeof desc, &ct);
    if (glyd_isError(d) || glyd_hufReadDTable(&dt, desc, d) != d) { *ok = 0; goto done; }
    c = glyd_hufCompress(comp, n + 1024, src, n, &ct, nbStreams);
    if (glyd_isError(c) || c == 0) { *ok = 0; goto done; }
    glyd_hufBuildPairs(pairs, &dt);
    if (glyd_hufDecompress(back, n, comp, c, &dt, NULL, nbStreams) != n || memcmp(src, back, n)) *ok = 0;
    /* two symbols per lookup: the same symbols */
    memset(back, 0, n);
    if (glyd_hufDecompress(back, n, comp, c, &dt, pairs, nbStreams) != n || memcmp(src, back, n)) *ok = 0;
    /* a shortened stream may decode to other symbols (the frame checksum
     * catches that), but never outside the buffers */
    (void)glyd_hufDecompress(back, n, comp, c - 1, &dt, NULL, nbStreams);
    (void)glyd_hufDecompress(back, n, comp, c - 1, &dt, pairs, nbStreams);
done:
    free(pairs);
    free(comp);
    free(back);
}

TEST(huffman_round_trip_corpus)
{
    char* paths[32];
    int n = corpus_files("text", paths, 32), i, ok = 1;
    for (i = 0; i < n; i++) {
        size_t size;
        uint8_t* const data = read_file(paths[i], &size);
        if (data && size > 64) {
            huffman_round_trip(data, size, 1, &ok);
            huffman_round_trip(data, size, 4, &ok);
            huffman_round_trip(data, 37, 4, &ok);
        }
        free(data);
        free(paths[i]);
    }
    CHECK(n > 0);
    CHECK(ok);
}

TEST(huffman_hostile_tables_and_streams)
{
    test_rng r = { 77 };
    int iter, ok = 1;
    for (iter = 0; iter < 20000; iter++) {
        uint8_t buf[200], out[600];
        glyd_hufDTable dt;
        glyd_hufPairs pairs;
        size_t const n = (size_t)(rng_next(&r) % sizeof buf) + 1;
        size_t t;
        rng_fill(&r, buf, n);
        if (iter & 1) buf[1] = 0x80; /* raw weights: more valid tables */
        t = glyd_hufReadDTable(&dt, buf, n);
        if (!glyd_isError(t)) {
            if (t > n || dt.maxBits > 11) ok = 0;
            if (t < n) {
                size_t const outN = (size_t)(rng_next(&r) % sizeof out);
                if (iter & 4) glyd_hufBuildPairs(&pairs, &dt);
                (void)glyd_hufDecompress(out, outN, buf + t, n - t, &dt, (iter & 4) ? &pairs : NULL,
                                         (iter & 2) ? 4 : 1);
            }
        }
    }
    CHECK(ok);
}

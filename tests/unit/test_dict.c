/* SPDX-License-Identifier: BSD-3-Clause */
/* test_dict.c: dictionaries: training on real records, compression and
 * decompression with them (one-shot, streamed, every level kind), frames
 * that name a dictionary, and wrong, missing or damaged dictionaries. */
#include <stdlib.h>
#include <string.h>

#include "../../include/glyd.h"
#include "harness.h"

#define GLYD_MIN_T(a, b) ((a) < (b) ? (a) : (b))

/* The records (lines) of a corpus file: the typical dictionary input. */
typedef struct {
    uint8_t* data;
    size_t size;
    size_t* sizes;
    unsigned n;
} records;

static int load_records(records* r, const char* name, unsigned max)
{
    char path[1024];
    size_t i, start = 0;
    snprintf(path, sizeof path, "%s/%s", corpus_dir(), name);
    r->data = read_file(path, &r->size);
    if (!r->data) return 0;
    r->sizes = (size_t*)malloc(max * sizeof(size_t));
    r->n = 0;
    for (i = 0; i < r->size && r->n < max; i++) {
        if (r->data[i] != '\n') continue;
        r->sizes[r->n++] = i + 1 - start;
        start = i + 1;
    }
    r->size = start; /* whole records only */
    return 1;
}

static void free_records(records* r)
{
    free(r->data);
    free(r->sizes);
}

static size_t compress_dict(const uint8_t* src, size_t n, const void* dict, size_t dictSize, int level,
                            uint8_t* dst, size_t cap)
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t r;
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level));
    CHECK_OK(glyd_CCtx_loadDictionary(c, dict, dictSize));
    r = glyd_compress2(c, dst, cap, src, n);
    CHECK_OK(r);
    glyd_freeCCtx(c);
    return glyd_isError(r) ? 0 : r;
}

/* Decodes with the dictionary, one-shot and streamed byte by byte. */
static int decodes_with(const uint8_t* frame, size_t size, const void* dict, size_t dictSize,
                        const uint8_t* src, size_t n)
{
    glyd_DCtx* const d = glyd_createDCtx();
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    size_t r, inPos = 0, outPos = 0;
    int ok;
    CHECK_OK(glyd_DCtx_loadDictionary(d, dict, dictSize));
    r = glyd_decompressDCtx(d, back, n + 1, frame, size);
    ok = !glyd_isError(r) && r == n && memcmp(back, src, n) == 0;
    do {
        glyd_inBuffer in = { frame + inPos, inPos < size ? 1 : 0, 0 };
        glyd_outBuffer out = { back + outPos, GLYD_MIN_T(n + 1 - outPos, 7), 0 };
        r = glyd_decompressStream(d, &out, &in);
        inPos += in.pos;
        outPos += out.pos;
    } while (!glyd_isError(r) && r != 0 && inPos <= size && (inPos < size || outPos < n));
    ok = ok && !glyd_isError(r) && outPos == n && memcmp(back, src, n) == 0;
    free(back);
    glyd_freeDCtx(d);
    return ok;
}

TEST(dictionary_trained_on_records_shrinks_them)
{
    records rec;
    uint8_t* const dict = (uint8_t*)malloc(65536);
    uint8_t* const frame = (uint8_t*)malloc(1 << 16);
    size_t dictSize, offset = 0, plain = 0, with = 0, raw = 0;
    unsigned i, train = 1500;
    if (!load_records(&rec, "tables/gsm8k_train.jsonl", 1800)) return;
    dictSize = glyd_trainDictionary(dict, 65536, rec.data, rec.sizes, train);
    CHECK_OK(dictSize);
    if (glyd_isError(dictSize)) return;
    CHECK(dictSize > 1000 && dictSize <= 65536);
    CHECK(glyd_getDictID(dict, dictSize) >= 32768);
    for (i = 0; i < train; i++) offset += rec.sizes[i];
    /* records the dictionary has not seen */
    for (i = train; i < rec.n; i++) {
        const uint8_t* const r = rec.data + offset;
        size_t const n = rec.sizes[i];
        size_t const a = glyd_compress(frame, 1 << 16, r, n, 3);
        size_t const b = compress_dict(r, n, dict, dictSize, 3, frame, 1 << 16);
        CHECK_OK(a);
        raw += n;
        plain += a;
        with += b;
        CHECK(glyd_getDictIDFromFrame(frame, b) == glyd_getDictID(dict, dictSize));
        CHECK(decodes_with(frame, b, dict, dictSize, r, n));
        offset += n;
    }
    /* measured: about 0.7 of the size without the dictionary */
    CHECK(with < plain * 8 / 10);
    CHECK(with < raw / 2);
    {   /* the --fast levels index the dictionary too */
        size_t fastPlain = 0, fastWith = 0;
        offset = 0;
        for (i = 0; i < train; i++) offset += rec.sizes[i];
        for (i = train; i < rec.n; i++) {
            size_t const a = glyd_compress(frame, 1 << 16, rec.data + offset, rec.sizes[i], -1);
            size_t const b = compress_dict(rec.data + offset, rec.sizes[i], dict, dictSize, -1, frame, 1 << 16);
            CHECK_OK(a);
            fastPlain += a;
            fastWith += b;
            CHECK(decodes_with(frame, b, dict, dictSize, rec.data + offset, rec.sizes[i]));
            offset += rec.sizes[i];
        }
        CHECK(fastWith < fastPlain * 8 / 10);
    }
    free(dict);
    free(frame);
    free_records(&rec);
}

TEST(dictionary_every_level_kind_and_streamed)
{
    records rec;
    uint8_t* const dict = (uint8_t*)malloc(32768);
    size_t const cap = 1 << 20;
    uint8_t* const frame = (uint8_t*)malloc(cap);
    size_t dictSize, n, c;
    static const int levels[] = { -3, 1, 3, 9, 12, 19 };
    unsigned i;
    if (!load_records(&rec, "logs/HPC_2k.log", 2000)) return;
    dictSize = glyd_trainDictionary(dict, 32768, rec.data, rec.sizes, 1000);
    CHECK_OK(dictSize);
    if (glyd_isError(dictSize)) return;
    n = rec.size; /* all records as one input, longer than the dictionary */
    for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        c = compress_dict(rec.data, n, dict, dictSize, levels[i], frame, cap);
        CHECK(decodes_with(frame, c, dict, dictSize, rec.data, n));
        c = compress_dict(rec.data, 100, dict, dictSize, levels[i], frame, cap);
        CHECK(decodes_with(frame, c, dict, dictSize, rec.data, 100));
        c = compress_dict(rec.data, 0, dict, dictSize, levels[i], frame, cap);
        CHECK(decodes_with(frame, c, dict, dictSize, rec.data, 0));
    }
    {   /* streamed in pieces, with workers asked for (dictionaries keep one thread) */
        glyd_CCtx* const cc = glyd_createCCtx();
        test_rng r = { 9 };
        size_t inPos = 0, outPos = 0, rem;
        CHECK_OK(glyd_CCtx_loadDictionary(cc, dict, dictSize));
        CHECK_OK(glyd_CCtx_setParameter(cc, glyd_c_nbWorkers, 2));
        do {
            size_t const draw = (size_t)(rng_next(&r) % 5000) + 1;
            size_t const take = GLYD_MIN_T(n - inPos, draw);
            glyd_inBuffer in = { rec.data + inPos, take, 0 };
            glyd_outBuffer out = { frame + outPos, cap - outPos, 0 };
            rem = glyd_compressStream(cc, &out, &in, inPos + take == n ? glyd_e_end : glyd_e_continue);
            CHECK_OK(rem);
            if (glyd_isError(rem)) break;
            inPos += in.pos;
            outPos += out.pos;
        } while (inPos < n || rem != 0);
        CHECK(decodes_with(frame, outPos, dict, dictSize, rec.data, n));
        /* the loaded dictionary serves the next frame as well */
        c = glyd_compress2(cc, frame, cap, rec.data, 5000);
        CHECK(decodes_with(frame, c, dict, dictSize, rec.data, 5000));
        glyd_freeCCtx(cc);
    }
    free(dict);
    free(frame);
    free_records(&rec);
}

TEST(dictionary_missing_wrong_or_damaged)
{
    records rec;
    uint8_t* const dict = (uint8_t*)malloc(16384);
    uint8_t* const other = (uint8_t*)malloc(16384);
    uint8_t frame[4096], back[4096];
    size_t dictSize, otherSize, c;
    glyd_DCtx* const d = glyd_createDCtx();
    glyd_CCtx* const cc = glyd_createCCtx();
    if (!load_records(&rec, "logs/Spark_2k.log", 1200)) return;
    dictSize = glyd_trainDictionary(dict, 16384, rec.data, rec.sizes, 600);
    otherSize = glyd_trainDictionary(other, 16384, rec.data + 50000, rec.sizes + 600, 600);
    CHECK_OK(dictSize);
    CHECK_OK(otherSize);
    if (glyd_isError(dictSize) || glyd_isError(otherSize)) return;
    CHECK(glyd_getDictID(dict, dictSize) != glyd_getDictID(other, otherSize));
    c = compress_dict(rec.data, 2000, dict, dictSize, 3, frame, sizeof frame);
    /* without it, or with another: refused, not decoded to garbage */
    CHECK_ERR(glyd_decompress(back, sizeof back, frame, c), GLYD_error_dictionary_wrong);
    CHECK_OK(glyd_DCtx_loadDictionary(d, other, otherSize));
    CHECK_ERR(glyd_decompressDCtx(d, back, sizeof back, frame, c), GLYD_error_dictionary_wrong);
    {
        glyd_inBuffer in = { frame, c, 0 };
        glyd_outBuffer out = { back, sizeof back, 0 };
        CHECK_ERR(glyd_decompressStream(d, &out, &in), GLYD_error_dictionary_wrong);
    }
    /* unloading works, and the right one decodes */
    CHECK_OK(glyd_DCtx_loadDictionary(d, NULL, 0));
    CHECK_ERR(glyd_decompressDCtx(d, back, sizeof back, frame, c), GLYD_error_dictionary_wrong);
    CHECK(decodes_with(frame, c, dict, dictSize, rec.data, 2000));
    /* raw content: any bytes, no ID in the frame */
    c = compress_dict(rec.data, 2000, rec.data + 3000, 9000, 3, frame, sizeof frame);
    CHECK(glyd_getDictIDFromFrame(frame, c) == 0);
    CHECK(decodes_with(frame, c, rec.data + 3000, 9000, rec.data, 2000));
    /* trained dictionaries carry entropy tables; damaged ones are refused */
    {
        uint8_t* const bad = (uint8_t*)malloc(dictSize);
        uint32_t const tablesSize = (uint32_t)dict[8] | (uint32_t)dict[9] << 8 | (uint32_t)dict[10] << 16 |
                                    (uint32_t)dict[11] << 24;
        CHECK(tablesSize > 20 && tablesSize < 512);
        memcpy(bad, dict, dictSize);
        bad[12] = 0; /* the Huffman description's largest symbol: a code needs two */
        CHECK_ERR(glyd_CCtx_loadDictionary(cc, bad, dictSize), GLYD_error_dictionary_corrupted);
        CHECK_ERR(glyd_DCtx_loadDictionary(d, bad, dictSize), GLYD_error_dictionary_corrupted);
        memcpy(bad, dict, dictSize);
        bad[8] = 0xFF; /* tables running past the end */
        bad[9] = 0xFF;
        bad[10] = 0xFF;
        CHECK_ERR(glyd_DCtx_loadDictionary(d, bad, dictSize), GLYD_error_dictionary_corrupted);
        memcpy(bad, dict, dictSize);
        /* one byte short: the last table would end inside the content */
        bad[8] = (uint8_t)(tablesSize - 1);
        bad[9] = (uint8_t)((tablesSize - 1) >> 8);
        CHECK(glyd_isError(glyd_DCtx_loadDictionary(d, bad, dictSize)));
        free(bad);
    }
    /* a dictionary header with ID 0 is damaged */
    {
        uint8_t bad[64];
        memcpy(bad, dict, 12);
        memset(bad + 4, 0, 4);
        memset(bad + 12, 'a', sizeof bad - 12);
        CHECK_ERR(glyd_CCtx_loadDictionary(cc, bad, sizeof bad), GLYD_error_dictionary_corrupted);
        CHECK_ERR(glyd_DCtx_loadDictionary(d, bad, sizeof bad), GLYD_error_dictionary_corrupted);
        CHECK(glyd_getDictID(bad, sizeof bad) == 0);
    }
    /* not while a frame is in progress */
    {
        glyd_inBuffer in = { rec.data, 100, 0 };
        glyd_outBuffer out = { frame, sizeof frame, 0 };
        CHECK_OK(glyd_compressStream(cc, &out, &in, glyd_e_continue));
        CHECK_ERR(glyd_CCtx_loadDictionary(cc, dict, dictSize), GLYD_error_stage_wrong);
    }
    /* a destination too small is reported, and the context stays usable */
    CHECK_OK(glyd_CCtx_reset(cc, glyd_reset_session_only));
    CHECK_OK(glyd_CCtx_loadDictionary(cc, dict, dictSize));
    CHECK_ERR(glyd_compress2(cc, frame, 10, rec.data, 2000), GLYD_error_dstSize_tooSmall);
    c = glyd_compress2(cc, frame, sizeof frame, rec.data, 2000);
    CHECK(decodes_with(frame, c, dict, dictSize, rec.data, 2000));
    CHECK_OK(glyd_DCtx_loadDictionary(d, dict, dictSize));
    CHECK_ERR(glyd_decompressDCtx(d, back, 1000, frame, c), GLYD_error_dstSize_tooSmall);
    CHECK_ERR(glyd_decompressDCtx(d, back, sizeof back, frame, c - 3), GLYD_error_srcSize_truncated);
    glyd_freeDCtx(d);
    glyd_freeCCtx(cc);
    free(dict);
    free(other);
    free_records(&rec);
}

TEST(dictionary_training_refuses_too_little)
{
    uint8_t dict[4096];
    uint8_t samples[600];
    size_t sizes[6] = { 100, 100, 100, 100, 100, 100 };
    memset(samples, 'x', sizeof samples);
    CHECK_ERR(glyd_trainDictionary(dict, sizeof dict, samples, sizes, 3), GLYD_error_srcSize_wrong);
    CHECK_ERR(glyd_trainDictionary(dict, 16, samples, sizes, 6), GLYD_error_dstSize_tooSmall);
    sizes[0] = sizes[1] = sizes[2] = sizes[3] = 10;
    CHECK_ERR(glyd_trainDictionary(dict, sizeof dict, samples, sizes, 4), GLYD_error_srcSize_wrong);
    {   /* samples that share nothing */
        test_rng r = { 3 };
        size_t s4[4] = { 150, 150, 150, 150 };
        rng_fill(&r, samples, sizeof samples);
        CHECK_ERR(glyd_trainDictionary(dict, sizeof dict, samples, s4, 4), GLYD_error_srcSize_wrong);
    }
}

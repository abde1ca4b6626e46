/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dict.c: dictionaries: the file format (docs/FORMAT.md, "Dictionaries")
 * and training from samples.
 *
 * A dictionary is content that every frame made with it may refer to, as if
 * it came just before the frame's first byte. Training picks that content
 * from samples: the spans of a fixed size whose 8-byte substrings occur in
 * the most samples (a substring seen in many samples is likely in the next
 * input too; one seen in one sample only, however often, is not).
 */
#include <stdlib.h>

#include "dict.h"
#include "../lz/lz.h"

/* ------------------------------------------------------------------------ */
/* Format                                                                   */
/* ------------------------------------------------------------------------ */

size_t glyd_dictParse(glyd_dictView* v, const void* dict, size_t size)
{
    const uint8_t* const p = (const uint8_t*)dict;
    RETURN_ERROR_IF(p == NULL && size > 0, GENERIC, "dictionary is NULL");
    if (size >= 4 && glyd_read32(p) == GLYD_DICT_MAGIC) {
        RETURN_ERROR_IF(size < GLYD_DICT_HEADER_SIZE, dictionary_corrupted, "truncated dictionary header");
        v->id = glyd_read32(p + 4);
        RETURN_ERROR_IF(v->id == 0, dictionary_corrupted, "dictionary ID 0");
        v->tablesSize = glyd_read32(p + 8);
        RETURN_ERROR_IF(v->tablesSize > size - GLYD_DICT_HEADER_SIZE, dictionary_corrupted,
                        "dictionary tables beyond its end");
        v->tables = v->tablesSize ? p + GLYD_DICT_HEADER_SIZE : NULL;
        v->content = p + GLYD_DICT_HEADER_SIZE + v->tablesSize;
        v->size = size - GLYD_DICT_HEADER_SIZE - v->tablesSize;
    } else {
        /* anything else is raw content, named by no ID */
        v->id = 0;
        v->tables = NULL;
        v->tablesSize = 0;
        v->content = p;
        v->size = size;
    }
    RETURN_ERROR_IF(v->size > GLYD_DICT_CONTENT_MAX, dictionary_corrupted, "dictionary larger than 2 GiB");
    return 0;
}

void glyd_dictFree(glyd_dictCopy* c, glyd_customMem mem)
{
    glyd_free(c->content, mem);
    glyd_free(c->tables, mem);
    memset(c, 0, sizeof(*c));
}

/* Tables must read as a block's would, to the last byte. */
static size_t check_tables(const uint8_t* tables, size_t size, glyd_customMem mem)
{
    glyd_lzDCtx dz;
    size_t r;
    FORWARD_IF_ERROR(glyd_lzDInit(&dz, mem));
    r = glyd_lzDLoadTables(&dz, tables, size);
    glyd_lzDFree(&dz);
    RETURN_ERROR_IF(GLYD_IS_ERROR(r), dictionary_corrupted, "dictionary tables");
    return 0;
}

size_t glyd_dictLoad(glyd_dictCopy* c, const void* dict, size_t size, glyd_customMem mem)
{
    glyd_dictView v;
    memset(&v, 0, sizeof(v));
    if (size) FORWARD_IF_ERROR(glyd_dictParse(&v, dict, size));
    if (v.tablesSize) FORWARD_IF_ERROR(check_tables(v.tables, v.tablesSize, mem));
    glyd_dictFree(c, mem);
    if (v.size == 0 && v.tablesSize == 0) return 0;
    c->content = (uint8_t*)glyd_malloc(v.size + 1, mem);
    c->tables = v.tablesSize ? (uint8_t*)glyd_malloc(v.tablesSize, mem) : NULL;
    if (!c->content || (v.tablesSize && !c->tables)) {
        glyd_dictFree(c, mem);
        RETURN_ERROR(memory_allocation, "dictionary");
    }
    memcpy(c->content, v.content, v.size);
    if (v.tablesSize) memcpy(c->tables, v.tables, v.tablesSize);
    c->size = v.size;
    c->tablesSize = v.tablesSize;
    c->id = v.id;
    return 0;
}

unsigned glyd_getDictID(const void* dict, size_t dictSize)
{
    glyd_dictView v;
    if (GLYD_IS_ERROR(glyd_dictParse(&v, dict, dictSize))) return 0;
    return v.id;
}

/* ------------------------------------------------------------------------ */
/* Training                                                                 */
/* ------------------------------------------------------------------------ */

#define DMER 8           /* substring length whose frequency is counted */
#define FREQ_LOG 20      /* counters (hashed substrings) */
#define SEGMENT_MIN 64
#define TABLES_MAX 512   /* a Huffman description and three distributions fit */

typedef struct {
    size_t pos;          /* in the concatenated samples */
    uint64_t score;
} segment;

GLYD_FORCE_INLINE size_t dmer_hash(const uint8_t* p)
{
    return (size_t)((glyd_read64(p) * 0x9E3779B185EBCA87ULL) >> (64 - FREQ_LOG));
}

static int by_score(const void* a, const void* b)
{
    const segment* const x = (const segment*)a;
    const segment* const y = (const segment*)b;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Samples that the entropy tables are learnt from, at most (spread over
 * all of them): each costs a parse of the whole content. */
#define TABLE_SAMPLES 1000

/* Writes the entropy tables for a dictionary's content: the statistics of
 * samples coded at the default level with the content as history, every
 * symbol given a count of at least one so that any block can repeat the
 * tables. Returns their size, or an error. */
static size_t train_tables(uint8_t* dst, size_t cap, const uint8_t* content, size_t contentSize,
                           const uint8_t* samples, const size_t* sizes, unsigned nbSamples)
{
    static const unsigned maxCode[3] = { GLYD_LL_MAX_CODE, GLYD_OF_MAX_CODE, GLYD_ML_MAX_CODE };
    static const unsigned maxLog[3] = { GLYD_LL_MAX_LOG, GLYD_OF_MAX_LOG, GLYD_ML_MAX_LOG };
    glyd_lzCodeCounts* const counts = (glyd_lzCodeCounts*)calloc(1, sizeof(glyd_lzCodeCounts));
    size_t maxSample = 0, pos = 0, op = 0, r = 0;
    glyd_lzParams p;
    glyd_lzCCtx* zc = NULL;
    uint8_t* buf = NULL;
    glyd_hufCTable ct;
    unsigned s, k, step = nbSamples > TABLE_SAMPLES ? nbSamples / TABLE_SAMPLES : 1;

    for (s = 0; s < nbSamples; s++) maxSample = GLYD_MAX(maxSample, sizes[s]);
    glyd_lzParamsForLevel(&p, GLYD_LEVEL_DEFAULT, contentSize + maxSample);
    if (counts) zc = glyd_lzCreateCCtx(&p, GLYD_MIN(GLYD_BLOCKLOG_DEFAULT, p.windowLog), glyd_defaultCMem);
    if (zc) buf = (uint8_t*)malloc(contentSize + maxSample + 1);
    if (!buf) {
        r = GLYD_ERROR(memory_allocation);
        goto done;
    }
    memcpy(buf, content, contentSize);
    for (s = 0; s < nbSamples; pos += sizes[s], s++) {
        size_t at = 0;
        if (s % step || sizes[s] < 16) continue;
        memcpy(buf + contentSize, samples + pos, sizes[s]);
        glyd_lzStartHistory(zc, buf);
        glyd_lzLoadHistory(zc, buf, contentSize);
        while (at < sizes[s]) {
            size_t const n = GLYD_MIN(sizes[s] - at, (size_t)1 << GLYD_BLOCKLOG_DEFAULT);
            glyd_lzCountCodes(zc, buf + contentSize + at, n, counts);
            at += n;
        }
    }

    for (s = 0; s < 256; s++) counts->lit[s]++;
    r = glyd_hufBuildCTable(&ct, counts->lit, 255, GLYD_HUF_MAX_BITS);
    if (GLYD_IS_ERROR(r)) goto done;
    r = glyd_hufWriteCTable(dst, cap, &ct);
    if (GLYD_IS_ERROR(r)) goto done;
    op = r;
    for (k = 0; k < 3; k++) {
        unsigned* const c = k == 0 ? counts->ll : k == 1 ? counts->of : counts->ml;
        int16_t norm[GLYD_ML_MAX_CODE + 1];
        size_t total = 0;
        for (s = 0; s <= maxCode[k]; s++) total += ++c[s];
        r = glyd_fseNormalize(norm, maxLog[k], c, total, maxCode[k]);
        if (GLYD_IS_ERROR(r)) goto done;
        r = glyd_fseWriteNCount(dst + op, cap - op, norm, maxCode[k], maxLog[k]);
        if (GLYD_IS_ERROR(r)) goto done;
        op += r;
    }
    r = op;
done:
    glyd_lzFreeCCtx(zc);
    free(buf);
    free(counts);
    return r;
}

size_t glyd_trainDictionary(void* dictBuffer, size_t dictCapacity, const void* samples,
                            const size_t* sampleSizes, unsigned nbSamples)
{
    const uint8_t* const src = (const uint8_t*)samples;
    uint8_t* const out = (uint8_t*)dictBuffer;
    size_t total = 0, contentCap, tablesRoom, segSize, nbSeg, epoch, i, pos, written, chosen = 0;
    uint32_t* freq;
    uint32_t* lastSample;
    segment* segs;
    unsigned s;

    RETURN_ERROR_IF(dictBuffer == NULL && dictCapacity > 0, dstBuffer_null, "dictionary buffer");
    RETURN_ERROR_IF(nbSamples > 0 && (samples == NULL || sampleSizes == NULL), GENERIC, "samples");
    for (s = 0; s < nbSamples; s++) total += sampleSizes[s];
    RETURN_ERROR_IF(dictCapacity < GLYD_DICT_HEADER_SIZE + SEGMENT_MIN, dstSize_tooSmall,
                    "dictionary capacity below 72 bytes");
    /* too little to learn from: fewer samples than a dictionary could
     * generalise over, or fewer bytes than it holds */
    RETURN_ERROR_IF(nbSamples < 4 || total < 4 * SEGMENT_MIN, srcSize_wrong, "too few samples");

    /* room for the entropy tables, when the capacity is not tiny */
    tablesRoom = dictCapacity >= GLYD_DICT_HEADER_SIZE + TABLES_MAX + 4 * SEGMENT_MIN ? TABLES_MAX : 0;
    contentCap = GLYD_MIN(dictCapacity - GLYD_DICT_HEADER_SIZE - tablesRoom, total / 2);
    contentCap = GLYD_MIN(contentCap, (size_t)GLYD_DICT_CONTENT_MAX);
    /* Spans a quarter of a sample long: on JSON records and log lines that
     * beat whole-sample spans by 1-2% (shorter spans leave room for more of
     * the samples' recurring pieces), and the size matters little beyond. */
    segSize = GLYD_MAX((size_t)SEGMENT_MIN, GLYD_MIN(total / nbSamples / 4, (size_t)1024));
    segSize = GLYD_MIN(segSize, contentCap);
    nbSeg = contentCap / segSize;
    epoch = total / nbSeg;

    freq = (uint32_t*)calloc((size_t)1 << FREQ_LOG, sizeof(uint32_t));
    lastSample = (uint32_t*)calloc((size_t)1 << FREQ_LOG, sizeof(uint32_t));
    segs = (segment*)calloc(nbSeg, sizeof(segment));
    if (!freq || !lastSample || !segs) {
        free(freq);
        free(lastSample);
        free(segs);
        RETURN_ERROR(memory_allocation, "training tables");
    }

    /* in how many samples each substring occurs */
    for (s = 0, pos = 0; s < nbSamples; pos += sampleSizes[s], s++) {
        size_t j;
        if (sampleSizes[s] < DMER) continue;
        for (j = pos; j + DMER <= pos + sampleSizes[s]; j++) {
            size_t const h = dmer_hash(src + j);
            if (lastSample[h] != s + 1) {
                lastSample[h] = s + 1;
                freq[h]++;
            }
        }
    }
    for (i = 0; i < ((size_t)1 << FREQ_LOG); i++)
        if (freq[i] < 2) freq[i] = 0; /* seen in one sample: no help for others */

    /* One span per stretch of the samples ("epoch"), so that the dictionary
     * covers all of them rather than the most repetitive corner; in each
     * epoch, the span with the highest sum of frequencies. The substrings of
     * a chosen span count for nothing afterwards. */
    for (i = 0; i < nbSeg; i++) {
        size_t const start = i * epoch;
        size_t const end = GLYD_MIN(start + epoch, total);
        size_t best = start, j;
        uint64_t bestScore = 0, score = 0;
        if (end - start < segSize) continue;
        for (j = start; j + DMER <= start + segSize; j++) score += freq[dmer_hash(src + j)];
        bestScore = score;
        for (j = start + 1; j + segSize <= end; j++) {
            score -= freq[dmer_hash(src + j - 1)];
            score += freq[dmer_hash(src + j + segSize - DMER)];
            if (score > bestScore) {
                bestScore = score;
                best = j;
            }
        }
        if (bestScore == 0) continue;
        for (j = best; j + DMER <= best + segSize; j++) freq[dmer_hash(src + j)] = 0;
        segs[chosen].pos = best;
        segs[chosen].score = bestScore;
        chosen++;
    }
    if (chosen == 0) {
        free(freq);
        free(lastSample);
        free(segs);
        RETURN_ERROR(srcSize_wrong, "the samples share nothing to learn from");
    }

    /* The most useful spans last: nearest to the data, at the smallest
     * offsets, which cost the fewest bits. */
    qsort(segs, chosen, sizeof(segment), by_score);
    written = GLYD_DICT_HEADER_SIZE + tablesRoom;
    for (i = 0; i < chosen; i++) {
        memcpy(out + written, src + segs[i].pos, segSize);
        written += segSize;
    }
    free(freq);
    free(lastSample);
    free(segs);
    {
        uint8_t* const content = out + GLYD_DICT_HEADER_SIZE + tablesRoom;
        size_t const contentSize = written - GLYD_DICT_HEADER_SIZE - tablesRoom;
        uint8_t tables[TABLES_MAX];
        size_t tablesSize = 0;
        uint64_t h;
        uint32_t id;
        if (tablesRoom) {
            tablesSize = train_tables(tables, sizeof(tables), content, contentSize, src, sampleSizes, nbSamples);
            FORWARD_IF_ERROR(tablesSize);
        }
        /* the tables go before the content */
        memmove(out + GLYD_DICT_HEADER_SIZE + tablesSize, content, contentSize);
        memcpy(out + GLYD_DICT_HEADER_SIZE, tables, tablesSize);
        written = GLYD_DICT_HEADER_SIZE + tablesSize + contentSize;
        /* an ID drawn from tables and content: the same samples give the
         * same dictionary; IDs below 32768 are left for users to assign */
        h = XXH64(out + GLYD_DICT_HEADER_SIZE, written - GLYD_DICT_HEADER_SIZE, 0);
        id = (uint32_t)(h % ((1u << 31) - 32768)) + 32768;
        glyd_write32(out, GLYD_DICT_MAGIC);
        glyd_write32(out + 4, id);
        glyd_write32(out + 8, (uint32_t)tablesSize);
    }
    return written;
}

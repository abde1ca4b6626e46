/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm.c: the context-mixing coder (cm.h). Every bit goes through the same
 * steps on both sides: predict (counters of each context, mixed, refined),
 * code, learn. All arithmetic is integer, so that every machine decodes
 * what any machine coded.
 */
#include <stdlib.h>

#include "cm.h"

/* ------------------------------------------------------------------------ */
/* Probabilities in the logistic domain                                     */
/* ------------------------------------------------------------------------ */

/* 4096 / (1 + e^(-d / 256)) at d = -2048, -1920, ..., 2048: the logistic
 * curve that squash() follows between these points. A fixed table rather
 * than exp(), whose last bit may differ between C libraries. */
static const int16_t kSquashPoints[33] = { 1,    2,    4,    6,    10,   17,   27,   45,   74,   120,  194,
                                           311,  488,  747,  1102, 1546, 2048, 2550, 2994, 3349, 3608, 3785,
                                           3902, 3976, 4022, 4051, 4069, 4079, 4086, 4090, 4092, 4094, 4095 };

/* A stretched probability d (ln(p / (1 - p)) * 256) back to p in 12 bits. */
static inline int squash(int d)
{
    int w;
    if (d > 2047) d = 2047;
    if (d < -2047) d = -2047;
    w = d & 127;
    d = (d >> 7) + 16;
    return (kSquashPoints[d] * (128 - w) + kSquashPoints[d + 1] * w + 64) >> 7;
}

/* ------------------------------------------------------------------------ */
/* The model                                                                */
/* ------------------------------------------------------------------------ */

/* Contexts hashed into tables of slots: orders 2, 3, 4 and 6, the word
 * being written, and the byte's column (below). A slot holds the 15 counters of one nibble's bit tree in
 * one context (and a check of the context in entry 0), so that a bit costs
 * no cache miss of its own. */
enum { CTX_O2, CTX_O3, CTX_O4, CTX_O6, CTX_WORD, CTX_COLUMN, CTX_HASHED };

/* Mixer inputs: orders 0 and 1 (direct tables), the hashed contexts, the
 * match, and a constant. The column context is the byte's column in its
 * line and the byte above it (in the line before): the fields of a log or
 * a table line up. */
#define INPUTS (2 + CTX_HASHED + 2)

/* Counters: a 22-bit probability of a 1 over a 10-bit count of updates,
 * which sets how far the next moves it (1 / (n + 1.5)), down to
 * 1 / (COUNT_LIMIT + 1.5) once the context is well known. */
#define COUNT_LIMIT 127
#define COUNTER_INIT (1u << 31)

/* Slots per hashed table: 2^SLOT_BITS_MIN to 2^SLOT_BITS_MAX, as the input
 * asks (two nibbles a byte). */
#define SLOT_BITS_MIN 10
#define SLOT_BITS_MAX 18
#define SLOT_SIZE 16

/* Earlier text the match model looks up, by a hash of the last
 * MATCH_MIN bytes. */
#define MATCH_MIN 6
#define MATCH_BITS_MIN 12
#define MATCH_BITS_MAX 22
#define MATCH_BUCKETS 32

/* Two mixers, their outputs averaged: weights in 16.16 fixed point, sets
 * selected by the partial byte and how long the match runs, and by the
 * byte above and the bit's position. */
#define BYTE_SETS (256 * 4)
#define COLUMN_SETS (257 * 8)
#define MIXER_SHIFT 16
#define MIXER_LEARN 13
#define WEIGHT_MAX (1 << 24)

/* Refinement stages (adaptive probability maps): 33 points on the
 * stretched probability, by context. */
#define APM_POINTS 33
#define APM_RATE 6
/* Contexts of the second map: 2^10 for a short input (the partial byte and
 * the low 2 bits of the byte before) to 2^16 (both bytes whole), so that a
 * short input does not pay to set up a large map. */
#define APM1_BITS_MIN 10
#define APM1_BITS_MAX 16

typedef struct {
    /* learnt state */
    uint32_t order0[256];
    uint32_t order1[256 * 256];
    uint32_t matchCounter[MATCH_BUCKETS * 2];
    int32_t byteWeights[BYTE_SETS * INPUTS];
    int32_t columnWeights[COLUMN_SETS * INPUTS];
    uint16_t apm0[256 * APM_POINTS];
    uint16_t* apm1;      /* by the partial byte and (low bits of) the byte before */
    uint32_t apm1Mask;
    uint32_t recip[COUNT_LIMIT + 1];
    int16_t stretchTable[4096];
    uint32_t* slots; /* CTX_HASHED tables of 2^slotBits slots */
    uint32_t* matchTable;
    unsigned slotBits, matchBits;

    /* where the coding is */
    const uint8_t* text; /* the bytes coded so far (the encoder's input, the decoder's output) */
    size_t pos;          /* how many */
    uint32_t c0;         /* the byte being coded, after a leading 1 */
    uint32_t nibble;     /* the same within its nibble: 1..15 */
    unsigned bit;        /* bits of it coded */
    uint64_t last8;      /* the bytes before it */
    uint32_t word, previousWord;
    size_t lineStart, previousLineStart;
    uint32_t above;      /* the byte above it, 256 for none */
    uint32_t hash[CTX_HASHED];
    uint32_t* slot[CTX_HASHED];
    size_t matchPtr;
    uint32_t matchLen;
    int expectedBit;

    /* this bit's prediction */
    uint32_t* counter[INPUTS];
    int32_t input[INPUTS];
    int32_t* byteSet;
    int32_t* columnSet;
    int pByte, pColumn, pMix, apmIndex0, apmIndex1;
} cm_model;

static unsigned bits_for(size_t n, unsigned lo, unsigned hi)
{
    unsigned b = lo;
    while (b < hi && ((size_t)1 << b) < n) b++;
    return b;
}

size_t glyd_cmMemory(size_t srcSize)
{
    unsigned const slotBits = bits_for(2 * srcSize, SLOT_BITS_MIN, SLOT_BITS_MAX);
    unsigned const matchBits = bits_for(srcSize, MATCH_BITS_MIN, MATCH_BITS_MAX);
    unsigned const apmBits = bits_for(4 * srcSize, APM1_BITS_MIN, APM1_BITS_MAX);
    return sizeof(cm_model) + ((size_t)CTX_HASHED << slotBits) * SLOT_SIZE * sizeof(uint32_t) +
           ((size_t)1 << matchBits) * sizeof(uint32_t) + ((size_t)APM_POINTS << apmBits) * sizeof(uint16_t);
}

static int apm_point(int j) { return squash((j - 16) * 128) * 16; }

static cm_model* model_create(size_t srcSize)
{
    cm_model* m = (cm_model*)malloc(sizeof(cm_model));
    unsigned const apmBits = bits_for(4 * srcSize, APM1_BITS_MIN, APM1_BITS_MAX);
    int i, j, p, previous = 0;
    if (!m) return NULL;
    m->apm1Mask = (1u << apmBits) - 1;
    m->slotBits = bits_for(2 * srcSize, SLOT_BITS_MIN, SLOT_BITS_MAX);
    m->matchBits = bits_for(srcSize, MATCH_BITS_MIN, MATCH_BITS_MAX);
    /* zeroed slots fail every check, so they start as fresh counters */
    m->slots = (uint32_t*)calloc((size_t)CTX_HASHED << m->slotBits, SLOT_SIZE * sizeof(uint32_t));
    m->matchTable = (uint32_t*)calloc((size_t)1 << m->matchBits, sizeof(uint32_t));
    m->apm1 = (uint16_t*)malloc(((size_t)APM_POINTS << apmBits) * sizeof(uint16_t));
    if (!m->slots || !m->matchTable || !m->apm1) {
        free(m->slots);
        free(m->matchTable);
        free(m->apm1);
        free(m);
        return NULL;
    }
    for (i = 0; i < 256; i++) m->order0[i] = COUNTER_INIT;
    for (i = 0; i < 256 * 256; i++) m->order1[i] = COUNTER_INIT;
    for (i = 0; i < MATCH_BUCKETS * 2; i++) m->matchCounter[i] = COUNTER_INIT;
    for (i = 0; i < BYTE_SETS * INPUTS; i++) m->byteWeights[i] = (1 << MIXER_SHIFT) / 4;
    for (i = 0; i < COLUMN_SETS * INPUTS; i++) m->columnWeights[i] = (1 << MIXER_SHIFT) / 4;
    for (i = 0; i < 256; i++)
        for (j = 0; j < APM_POINTS; j++) m->apm0[i * APM_POINTS + j] = (uint16_t)apm_point(j);
    for (i = 0; i <= (int)m->apm1Mask; i++)
        for (j = 0; j < APM_POINTS; j++) m->apm1[i * APM_POINTS + j] = (uint16_t)apm_point(j);
    for (i = 0; i <= COUNT_LIMIT; i++) m->recip[i] = (uint32_t)(131072 / (2 * i + 3));
    /* stretch: the inverse of squash, each p to the smallest d it reaches */
    for (j = -2047; j <= 2047; j++) {
        int const v = squash(j);
        for (p = previous; p <= v; p++) m->stretchTable[p] = (int16_t)j;
        previous = v + 1;
    }
    for (p = previous; p < 4096; p++) m->stretchTable[p] = 2047;
    m->text = NULL;
    m->pos = 0;
    m->c0 = 1;
    m->nibble = 1;
    m->bit = 0;
    m->last8 = 0;
    m->word = m->previousWord = 0;
    m->lineStart = m->previousLineStart = 0;
    m->above = 256;
    memset(m->hash, 0, sizeof m->hash);
    m->matchPtr = 0;
    m->matchLen = 0;
    m->expectedBit = 0;
    return m;
}

static void model_free(cm_model* m)
{
    if (!m) return;
    free(m->slots);
    free(m->matchTable);
    free(m->apm1);
    free(m);
}

/* A 32-bit finalizer: each bit of h moves every bit of the result. */
static inline uint32_t mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

/* The slot of each hashed context for the nibble that starts now. */
static void find_slots(cm_model* m)
{
    unsigned k;
    for (k = 0; k < CTX_HASHED; k++) {
        uint32_t const h = mix32(m->hash[k] + m->c0 * 0x9E3779B1u);
        uint32_t const check = h | 1;
        uint32_t* const s =
            m->slots + (((size_t)k << m->slotBits) + (h >> (32 - m->slotBits))) * SLOT_SIZE;
        if (s[0] != check) {
            unsigned i;
            s[0] = check;
            for (i = 1; i < SLOT_SIZE; i++) s[i] = COUNTER_INIT;
        }
        m->slot[k] = s;
    }
}

static int is_word_byte(uint8_t c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }

/* The byte just coded, m->text[m->pos - 1]: the contexts of the next. */
static void next_byte(cm_model* m)
{
    uint8_t const c = m->text[m->pos - 1];
    uint64_t const h8 = m->last8 = m->last8 << 8 | c;
    size_t column;
    /* the match: follows on, or is looked up anew */
    if (m->matchLen && m->text[m->matchPtr] == c) {
        m->matchLen += m->matchLen < 65535;
        m->matchPtr++;
    } else {
        m->matchLen = 0;
    }
    if (m->pos >= MATCH_MIN) {
        uint32_t const h =
            (uint32_t)(((h8 & 0xFFFFFFFFFFFFull) * 0x9E3779B97F4A7C15ull) >> (64 - m->matchBits));
        if (!m->matchLen && m->matchTable[h]) {
            size_t const at = m->matchTable[h];
            uint32_t len = 0;
            while (len < 64 && len < at && m->text[at - 1 - len] == m->text[m->pos - 1 - len]) len++;
            if (len >= MATCH_MIN) {
                m->matchLen = len;
                m->matchPtr = at;
            }
        }
        if (m->pos < UINT32_MAX) m->matchTable[h] = (uint32_t)m->pos;
    }
    if (is_word_byte(c)) {
        m->word = (m->word + (c | 32) + 1) * 0x2F0B3C4Du;
    } else if (m->word) {
        m->previousWord = m->word;
        m->word = 0;
    }
    m->hash[CTX_O2] = (uint32_t)(h8 & 0xFFFF) * 0x01000193u + 0x1000000u;
    m->hash[CTX_O3] = mix32((uint32_t)(h8 & 0xFFFFFF) + 0x2000000u);
    m->hash[CTX_O4] = mix32((uint32_t)h8) * 3u + 0x3000000u;
    if (c == '\n') {
        m->previousLineStart = m->lineStart;
        m->lineStart = m->pos;
    }
    column = m->pos - m->lineStart;
    m->above = m->previousLineStart + column < m->lineStart ? m->text[m->previousLineStart + column] : 256u;
    m->hash[CTX_COLUMN] = mix32((uint32_t)GLYD_MIN(column, 255) << 9 | m->above) * 7u + (uint32_t)c * 0x3C6EF372u;
    m->hash[CTX_O6] = (uint32_t)(((h8 & 0xFFFFFFFFFFFFull) * 0xD6E8FEB86659FD93ull) >> 32);
    m->hash[CTX_WORD] = mix32(m->word ? m->word + (uint32_t)c * 0x01000193u : m->previousWord ^ c) + 0x5000000u;
    m->c0 = 1;
    m->nibble = 1;
    m->bit = 0;
    find_slots(m);
}

static inline int stretch(const cm_model* m, uint32_t counter) { return m->stretchTable[counter >> 20]; }

static int apm_index(int stretched, int ctx) { return ctx * APM_POINTS + ((stretched + 2048) >> 7); }

static inline int apm_read(const uint16_t* t, int index, int stretched)
{
    int const w = (stretched + 2048) & 127;
    return (t[index] * (128 - w) + t[index + 1] * w) >> 11;
}

/* A mixer's output, stretched, for inputs x under weights w. */
static int mixer_dot(const int32_t* x, const int32_t* w)
{
    int64_t dot = 0;
    unsigned k;
    for (k = 0; k < INPUTS; k++) dot += (int64_t)x[k] * w[k];
    return (int)GLYD_MAX(-2047, GLYD_MIN(2047, dot >> MIXER_SHIFT));
}

/* Weights w moved against the error of their prediction p (12 bits). */
static void mixer_train(const int32_t* x, int32_t* w, int p, int bit)
{
    int const err = ((bit << 12) - p) * 6;
    unsigned k;
    for (k = 0; k < INPUTS; k++) {
        int32_t const v = w[k] + ((x[k] * err) >> MIXER_LEARN);
        w[k] = GLYD_MAX(-WEIGHT_MAX, GLYD_MIN(WEIGHT_MAX, v));
    }
}

/* P(next bit is 1), 1..4095. */
static int predict(cm_model* m)
{
    uint8_t const c1 = (uint8_t)m->last8;
    unsigned k, n = 0, bucket = 0;
    int p, s, sByte, sColumn;
    m->counter[n++] = &m->order0[m->c0];
    m->counter[n++] = &m->order1[(unsigned)c1 << 8 | m->c0];
    for (k = 0; k < CTX_HASHED; k++) m->counter[n++] = &m->slot[k][m->nibble];
    if (m->matchLen) {
        uint32_t const expected = m->text[m->matchPtr] | 256u;
        if (expected >> (8 - m->bit) == m->c0) {
            m->expectedBit = (int)(expected >> (7 - m->bit)) & 1;
            bucket = m->matchLen < 16 ? m->matchLen : GLYD_MIN(16 + (m->matchLen - 16) / 4, MATCH_BUCKETS - 1);
        } else {
            m->matchLen = 0; /* the byte left the match: none until the next */
        }
    }
    m->counter[n] = bucket ? &m->matchCounter[bucket * 2 + m->expectedBit] : NULL;
    for (k = 0; k < n; k++) m->input[k] = stretch(m, *m->counter[k]);
    m->input[n] = bucket ? stretch(m, *m->counter[n]) : 0;
    m->input[n + 1] = 256;
    m->byteSet = &m->byteWeights[(m->c0 + 256 * (bucket == 0 ? 0 : bucket < 16 ? 1 : bucket < 24 ? 2 : 3)) * INPUTS];
    m->columnSet = &m->columnWeights[(m->above + 257 * m->bit) * INPUTS];
    sByte = mixer_dot(m->input, m->byteSet);
    sColumn = mixer_dot(m->input, m->columnSet);
    m->pByte = squash(sByte);
    m->pColumn = squash(sColumn);
    m->pMix = squash((sByte + sColumn) / 2);
    s = m->stretchTable[m->pMix];
    m->apmIndex0 = apm_index(s, (int)m->c0);
    m->apmIndex1 = apm_index(s, (int)((m->c0 | (unsigned)c1 << 8) & m->apm1Mask));
    p = (m->pMix + apm_read(m->apm0, m->apmIndex0, s) + 2 * apm_read(m->apm1, m->apmIndex1, s) + 2) >> 2;
    return GLYD_MAX(1, GLYD_MIN(4095, p));
}

static inline void counter_update(cm_model* m, uint32_t* c, int bit)
{
    uint32_t const n = *c & 1023;
    int32_t const p = (int32_t)(*c >> 10);
    int32_t const target = bit ? (1 << 22) - 1 : 0;
    int32_t const q = p + (int32_t)(((int64_t)(target - p) * m->recip[n]) >> 16);
    *c = (uint32_t)q << 10 | (n + (n < COUNT_LIMIT));
}

static inline void apm_update(uint16_t* t, int index, int bit)
{
    int const target = bit ? 65535 : 0;
    t[index] = (uint16_t)(t[index] + ((target - t[index]) >> APM_RATE));
    t[index + 1] = (uint16_t)(t[index + 1] + ((target - t[index + 1]) >> APM_RATE));
}

/* Learn the bit coded; returns whether a byte is complete. */
static int update(cm_model* m, int bit)
{
    unsigned k;
    mixer_train(m->input, m->byteSet, m->pByte, bit);
    mixer_train(m->input, m->columnSet, m->pColumn, bit);
    for (k = 0; k < 2 + CTX_HASHED; k++) counter_update(m, m->counter[k], bit);
    if (m->counter[2 + CTX_HASHED]) counter_update(m, m->counter[2 + CTX_HASHED], bit);
    apm_update(m->apm0, m->apmIndex0, bit);
    apm_update(m->apm1, m->apmIndex1, bit);
    m->c0 = m->c0 << 1 | (uint32_t)bit;
    m->nibble = m->nibble << 1 | (uint32_t)bit;
    if (++m->bit == 8) return 1;
    if (m->bit == 4) {
        m->nibble = 1;
        find_slots(m);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Binary arithmetic coding (32 bits, carries avoided: a byte goes out as    */
/* soon as both ends of the range agree on it)                              */
/* ------------------------------------------------------------------------ */

static inline uint32_t split_point(uint32_t low, uint32_t high, int p)
{
    uint32_t const range = high - low;
    return low + (range >> 12) * (uint32_t)p + (((range & 0xFFF) * (uint32_t)p) >> 12);
}

size_t glyd_cmCompress(void* dst, size_t dstCapacity, const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    uint8_t* const out = (uint8_t*)dst;
    uint32_t low = 0, high = 0xFFFFFFFFu;
    size_t op = 0, i;
    cm_model* m;
    RETURN_ERROR_IF(dstCapacity < 4, dstSize_tooSmall, "context-mixing stream");
    m = model_create(srcSize);
    RETURN_ERROR_IF(!m, memory_allocation, "context-mixing model");
    m->text = in;
    find_slots(m);
    for (i = 0; i < srcSize; i++) {
        int b;
        for (b = 7; b >= 0; b--) {
            int const bit = (in[i] >> b) & 1;
            uint32_t const mid = split_point(low, high, predict(m));
            if (bit) high = mid;
            else low = mid + 1;
            update(m, bit);
            while ((low ^ high) < (1u << 24)) {
                if (op == dstCapacity - 4) {
                    model_free(m);
                    RETURN_ERROR(dstSize_tooSmall, "context-mixing stream");
                }
                out[op++] = (uint8_t)(high >> 24);
                low <<= 8;
                high = high << 8 | 255;
            }
        }
        m->pos = i + 1;
        next_byte(m);
    }
    model_free(m);
    for (i = 0; i < 4; i++) out[op++] = (uint8_t)(low >> (24 - 8 * i));
    return op;
}

size_t glyd_cmDecompress(void* dst, size_t dstSize, const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    uint8_t* const out = (uint8_t*)dst;
    uint32_t low = 0, high = 0xFFFFFFFFu, x = 0;
    size_t ip = 0, i;
    cm_model* m;
    RETURN_ERROR_IF(srcSize < 4, corruption_detected, "context-mixing stream too short");
    m = model_create(dstSize);
    RETURN_ERROR_IF(!m, memory_allocation, "context-mixing model");
    m->text = out;
    for (; ip < 4; ip++) x = x << 8 | in[ip];
    find_slots(m);
    for (i = 0; i < dstSize; i++) {
        uint32_t c = 0;
        int b;
        for (b = 0; b < 8; b++) {
            uint32_t const mid = split_point(low, high, predict(m));
            int const bit = x <= mid;
            if (bit) high = mid;
            else low = mid + 1;
            update(m, bit);
            c = c << 1 | (uint32_t)bit;
            while ((low ^ high) < (1u << 24)) {
                if (ip == srcSize) {
                    model_free(m);
                    RETURN_ERROR(corruption_detected, "context-mixing stream ends early");
                }
                low <<= 8;
                high = high << 8 | 255;
                x = x << 8 | in[ip++];
            }
        }
        out[i] = (uint8_t)c;
        m->pos = i + 1;
        next_byte(m);
    }
    model_free(m);
    RETURN_ERROR_IF(ip != srcSize, corruption_detected, "context-mixing stream longer than its text");
    return dstSize;
}

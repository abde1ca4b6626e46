/* SPDX-License-Identifier: BSD-3-Clause */
/* fse.c: tANS tables: normalization of a histogram, the compact description
 * of a normalized distribution, and the encoding and decoding tables. */
#include <math.h>

#include "entropy.h"

unsigned glyd_fseOptimalTableLog(unsigned maxLog, size_t total, unsigned maxSymbol)
{
    /* every symbol needs a slot, with some room to express skew */
    unsigned const minLog = glyd_highbit32(maxSymbol | 1) + 2;
    unsigned log = maxLog;
    if (total > 1) {
        /* a table much larger than the sample count only costs header bits */
        unsigned const srcLog = glyd_highbit64(total - 1) + 1;
        if (srcLog < log + 1) log = srcLog > 1 ? srcLog - 1 : 1;
    }
    if (log < minLog) log = minLog;
    if (log < GLYD_FSE_MIN_TABLELOG) log = GLYD_FSE_MIN_TABLELOG;
    if (log > GLYD_FSE_MAX_TABLELOG) log = GLYD_FSE_MAX_TABLELOG;
    return log;
}

size_t glyd_fseNormalize(int16_t* norm, unsigned tableLog, const unsigned* count,
                         size_t total, unsigned maxSymbol)
{
    uint32_t const tableSize = 1u << tableLog;
    uint32_t sum = 0, present = 0;
    unsigned s;
    RETURN_ERROR_IF(tableLog < GLYD_FSE_MIN_TABLELOG || tableLog > GLYD_FSE_MAX_TABLELOG,
                    parameter_outOfBound, "table log");
    RETURN_ERROR_IF(total == 0, GENERIC, "empty histogram");
    for (s = 0; s <= maxSymbol; s++) {
        if (count[s] == 0) { norm[s] = 0; continue; }
        {   /* nearest integer share, at least one slot */
            uint64_t v = ((uint64_t)count[s] * tableSize * 2 + total) / ((uint64_t)total * 2);
            if (v == 0) v = 1;
            norm[s] = (int16_t)v;
            sum += (uint32_t)v;
            present++;
        }
    }
    RETURN_ERROR_IF(present > tableSize, GENERIC, "more symbols than slots");
    /* Rounding and the one-slot floor leave the sum off by a little: move
     * slots one at a time where the coding cost changes least. The cost of
     * symbol s is count[s] * log2(tableSize / norm[s]) bits. */
    while (sum > tableSize) {
        unsigned best = 0;
        double bestLoss = HUGE_VAL;
        for (s = 0; s <= maxSymbol; s++) {
            if (norm[s] > 1) {
                double const loss = count[s] * log2((double)norm[s] / (norm[s] - 1));
                if (loss < bestLoss) { bestLoss = loss; best = s; }
            }
        }
        norm[best]--;
        sum--;
    }
    while (sum < tableSize) {
        unsigned best = 0;
        double bestGain = -1;
        for (s = 0; s <= maxSymbol; s++) {
            if (norm[s] > 0) {
                double const gain = count[s] * log2((double)(norm[s] + 1) / norm[s]);
                if (gain > bestGain) { bestGain = gain; best = s; }
            }
        }
        norm[best]++;
        sum++;
    }
    return 0;
}

/* Truncated binary code of v in [0, m), m >= 2: the first u values take
 * floor(log2 m) bits, the others one more. */
static void write_truncated(glyd_fwdWriter* w, uint32_t v, uint32_t m)
{
    unsigned const k = glyd_highbit32(m);
    uint32_t const u = (2u << k) - m;
    if (v < u) {
        glyd_fwdWrite(w, v, k);
    } else {
        uint32_t const x = v + u;
        glyd_fwdWrite(w, x >> 1, k);
        glyd_fwdWrite(w, x & 1, 1);
    }
}

static uint32_t read_truncated(glyd_fwdReader* r, uint32_t m)
{
    unsigned const k = glyd_highbit32(m);
    uint32_t const u = (2u << k) - m;
    uint32_t const x = glyd_fwdRead(r, k);
    if (x < u) return x;
    return ((x << 1) | glyd_fwdRead(r, 1)) - u;
}

size_t glyd_fseWriteNCount(void* dst, size_t cap, const int16_t* norm,
                           unsigned maxSymbol, unsigned tableLog)
{
    glyd_fwdWriter w;
    uint32_t remaining = 1u << tableLog;
    unsigned s = 0;
    size_t size;
    RETURN_ERROR_IF(tableLog < GLYD_FSE_MIN_TABLELOG || tableLog > GLYD_FSE_MAX_TABLELOG,
                    parameter_outOfBound, "table log");
    glyd_fwdWriterInit(&w, dst, cap);
    glyd_fwdWrite(&w, tableLog - GLYD_FSE_MIN_TABLELOG, 4);
    while (remaining > 0) {
        uint32_t v;
        RETURN_ERROR_IF(s > maxSymbol, GENERIC, "distribution does not sum to the table size");
        v = (uint32_t)norm[s];
        RETURN_ERROR_IF(v > remaining, GENERIC, "distribution exceeds the table size");
        write_truncated(&w, v, remaining + 1);
        remaining -= v;
        s++;
        if (v == 0) {
            /* a zero is followed by the length of the run of zeros after it,
             * in 2-bit groups where 3 means "three more, and continue" */
            unsigned run = 0;
            while (s + run <= maxSymbol && norm[s + run] == 0) run++;
            s += run;
            while (run >= 3) { glyd_fwdWrite(&w, 3, 2); run -= 3; }
            glyd_fwdWrite(&w, run, 2);
        }
    }
    size = glyd_fwdWriterClose(&w);
    RETURN_ERROR_IF(size == 0, dstSize_tooSmall, "table description");
    return size;
}

size_t glyd_fseReadNCount(int16_t* norm, unsigned* maxSymbol, unsigned* tableLog,
                          unsigned maxLog, const void* src, size_t size)
{
    glyd_fwdReader r;
    unsigned const maxAllowed = *maxSymbol;
    uint32_t remaining;
    unsigned s = 0, log;
    glyd_fwdReaderInit(&r, src, size);
    log = glyd_fwdRead(&r, 4) + GLYD_FSE_MIN_TABLELOG;
    RETURN_ERROR_IF(log > maxLog || log > GLYD_FSE_MAX_TABLELOG, corruption_detected,
                    "table log too large");
    remaining = 1u << log;
    while (remaining > 0) {
        uint32_t v;
        RETURN_ERROR_IF(s > maxAllowed, corruption_detected, "symbol out of range");
        v = read_truncated(&r, remaining + 1);
        norm[s++] = (int16_t)v;
        remaining -= v;
        if (v == 0) {
            unsigned group;
            do {
                unsigned i;
                group = glyd_fwdRead(&r, 2);
                for (i = 0; i < group; i++) {
                    RETURN_ERROR_IF(s > maxAllowed, corruption_detected, "zero run out of range");
                    norm[s++] = 0;
                }
                RETURN_ERROR_IF(glyd_fwdReaderOverrun(&r), corruption_detected, "truncated");
            } while (group == 3);
        }
        RETURN_ERROR_IF(glyd_fwdReaderOverrun(&r), corruption_detected, "truncated description");
    }
    *maxSymbol = s - 1;
    *tableLog = log;
    return glyd_fwdReaderBytes(&r);
}

size_t glyd_fseCost(const unsigned* count, unsigned maxSymbol, const int16_t* norm,
                    unsigned normMaxSymbol, unsigned tableLog)
{
    double bits = 0;
    unsigned s;
    for (s = 0; s <= maxSymbol; s++) {
        if (count[s] == 0) continue;
        if (s > normMaxSymbol || norm[s] <= 0) return SIZE_MAX;
        bits += count[s] * (tableLog - log2((double)norm[s]));
    }
    return (size_t)bits + 1;
}

/* The slot order shared by encoder and decoder: each symbol's slots are
 * scattered by an odd stride, which visits every slot once. */
void glyd_fseSpread(uint8_t* tableSymbol, const int16_t* norm, unsigned maxSymbol, unsigned tableLog)
{
    uint32_t const size = 1u << tableLog;
    uint32_t const mask = size - 1;
    uint32_t const step = (size >> 1) + (size >> 3) + 3;
    uint32_t pos = 0;
    unsigned s;
    for (s = 0; s <= maxSymbol; s++) {
        int i;
        for (i = 0; i < norm[s]; i++) {
            tableSymbol[pos] = (uint8_t)s;
            pos = (pos + step) & mask;
        }
    }
    assert(pos == 0);
}

void glyd_fseBuildCTable(glyd_fseCTable* ct, const int16_t* norm, unsigned maxSymbol,
                         unsigned tableLog)
{
    uint32_t const size = 1u << tableLog;
    uint8_t tableSymbol[1 << GLYD_FSE_MAX_TABLELOG];
    uint32_t cumul[GLYD_FSE_MAX_SYMBOL + 2];
    uint32_t u, total = 0;
    unsigned s;
    ct->tableLog = tableLog;
    ct->maxSymbol = maxSymbol;
    glyd_fseSpread(tableSymbol, norm, maxSymbol, tableLog);
    cumul[0] = 0;
    for (s = 0; s <= maxSymbol; s++) cumul[s + 1] = cumul[s] + (uint32_t)norm[s];
    /* each symbol's states, in ascending order */
    for (u = 0; u < size; u++) ct->stateTable[cumul[tableSymbol[u]]++] = (uint16_t)(size + u);
    for (s = 0; s <= maxSymbol; s++) {
        uint32_t const n = (uint32_t)norm[s];
        glyd_fseSymbolTT* const tt = &ct->symbolTT[s];
        if (n == 0) {
            /* never encoded; a harmless value keeps cost probes defined */
            tt->deltaNbBits = ((tableLog + 1) << 16) - size;
            tt->deltaFindState = 0;
        } else {
            unsigned const maxBitsOut = tableLog - (n > 1 ? glyd_highbit32(n - 1) : 0);
            uint32_t const minStatePlus = n << maxBitsOut;
            tt->deltaNbBits = (maxBitsOut << 16) - minStatePlus;
            tt->deltaFindState = (int32_t)total - (int32_t)n;
            total += n;
        }
    }
}

void glyd_fseBuildDTable(glyd_fseDTable* dt, const int16_t* norm, unsigned maxSymbol,
                         unsigned tableLog)
{
    uint32_t const size = 1u << tableLog;
    uint8_t tableSymbol[1 << GLYD_FSE_MAX_TABLELOG];
    uint32_t next[GLYD_FSE_MAX_SYMBOL + 1];
    uint32_t u;
    unsigned s;
    dt->tableLog = tableLog;
    glyd_fseSpread(tableSymbol, norm, maxSymbol, tableLog);
    for (s = 0; s <= maxSymbol; s++) next[s] = (uint32_t)norm[s];
    for (u = 0; u < size; u++) {
        uint8_t const sym = tableSymbol[u];
        uint32_t const x = next[sym]++;
        unsigned const nbBits = tableLog - glyd_highbit32(x);
        dt->table[u].symbol = sym;
        dt->table[u].nbBits = (uint8_t)nbBits;
        dt->table[u].newState = (uint16_t)((x << nbBits) - size);
    }
}

void glyd_fseBuildDTableRLE(glyd_fseDTable* dt, uint8_t symbol)
{
    dt->tableLog = 0;
    dt->table[0].symbol = symbol;
    dt->table[0].nbBits = 0;
    dt->table[0].newState = 0;
}

size_t glyd_fseCompressBytes(void* dst, size_t cap, const uint8_t* src, size_t n,
                             unsigned maxSymbol, unsigned maxTableLog)
{
    uint8_t* const out = (uint8_t*)dst;
    unsigned count[GLYD_FSE_MAX_SYMBOL + 1];
    int16_t norm[GLYD_FSE_MAX_SYMBOL + 1];
    glyd_fseCTable ct;
    glyd_fseCState st;
    glyd_bitWriter bw;
    unsigned tableLog, maxSym = maxSymbol;
    size_t hdr, payload, i;
    if (n <= 2) return 0;
    if (glyd_histSmall(count, &maxSym, src, n) == n) return 0; /* one symbol */
    tableLog = glyd_fseOptimalTableLog(maxTableLog, n, maxSym);
    FORWARD_IF_ERROR(glyd_fseNormalize(norm, tableLog, count, n, maxSym));
    hdr = glyd_fseWriteNCount(out, cap, norm, maxSym, tableLog);
    if (GLYD_IS_ERROR(hdr)) return 0;
    if (cap - hdr < 8) return 0;
    glyd_fseBuildCTable(&ct, norm, maxSym, tableLog);
    glyd_bitWriterInit(&bw, out + hdr, cap - hdr);
    glyd_fseInitCState(&st, &ct, src[n - 1]);
    for (i = n - 1; i-- > 0;) {
        glyd_fseEncode(&bw, &st, src[i]);
        glyd_bitFlush(&bw);
    }
    glyd_fseFlushCState(&bw, &st);
    payload = glyd_bitWriterClose(&bw);
    if (payload == 0 || hdr + payload >= n) return 0;
    return hdr + payload;
}

size_t glyd_fseDecompressBytes(uint8_t* dst, size_t n, const void* src, size_t size,
                               unsigned maxSymbol, unsigned maxTableLog)
{
    int16_t norm[GLYD_FSE_MAX_SYMBOL + 1];
    glyd_fseDTable dt;
    glyd_fseDState st;
    glyd_bitReader br;
    unsigned maxSym = maxSymbol, tableLog;
    size_t hdr, i;
    RETURN_ERROR_IF(n == 0, corruption_detected, "nothing to decode");
    hdr = glyd_fseReadNCount(norm, &maxSym, &tableLog, maxTableLog, src, size);
    FORWARD_IF_ERROR(hdr);
    RETURN_ERROR_IF(hdr >= size, corruption_detected, "no payload");
    glyd_fseBuildDTable(&dt, norm, maxSym, tableLog);
    FORWARD_IF_ERROR(glyd_bitReaderInit(&br, (const uint8_t*)src + hdr, size - hdr));
    glyd_fseInitDState(&st, &br, &dt);
    for (i = 0; i < n; i++) {
        dst[i] = (uint8_t)glyd_fsePeekSymbol(&st);
        if (i + 1 < n) glyd_fseUpdateState(&st, &br);
        RETURN_ERROR_IF(glyd_bitReload(&br) == glyd_bit_overflow, corruption_detected,
                        "stream overread");
    }
    RETURN_ERROR_IF(!glyd_bitFinished(&br), corruption_detected, "stream not fully used");
    return size;
}

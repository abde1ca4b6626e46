/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tensor_enc.c: compression of a tensor into a blob. Two passes over the
 * input: a histogram of the symbols, then, unit by unit, the split into
 * symbols and raw planes and the coding of the symbols. Units are coded in
 * parallel when threads are asked for; the output does not depend on it.
 */
#include <stdlib.h>

#include "tensor.h"

uint32_t glyd_tensorUnitSize(uint64_t nbElements, uint64_t rowLength)
{
    enum { TARGET = 4096, LONGEST = 8192 };
    uint64_t k;
    if (nbElements == 0) return 1;
    if (rowLength == 0 || rowLength > nbElements || nbElements % rowLength != 0) rowLength = TARGET;
    if (rowLength <= LONGEST) {
        /* whole rows, enough of them to make a unit of about TARGET */
        uint64_t const rows = rowLength >= TARGET ? 1 : TARGET / rowLength;
        return (uint32_t)GLYD_MIN(rowLength * rows, (uint64_t)GLYD_TENSOR_UNIT_MAX);
    }
    /* a long row: an even split into parts of at most LONGEST */
    for (k = 2; k <= rowLength / 512; k++)
        if (rowLength % k == 0 && rowLength / k <= LONGEST) return (uint32_t)(rowLength / k);
    return (uint32_t)GLYD_MIN(rowLength, (uint64_t)GLYD_TENSOR_UNIT_MAX);
}

size_t glyd_tensorCompressBound(size_t nbElements, glyd_dtype dtype)
{
    glyd_dtypeShape shape;
    if (!glyd_dtypeShapeOf((unsigned)dtype, &shape)) return 0;
    /* the fast layout at worst: 3/8 byte of codes plus an escape byte per
     * element, beside the planes; the entropy layout stays below that */
    return 256 + nbElements * shape.elemSize + nbElements / 2 + 16 * (nbElements / 4096 + 1);
}

/* The symbol of element i, without splitting the rest. */
GLYD_FORCE_INLINE uint8_t symbol_at(unsigned dtype, const uint8_t* in, size_t i)
{
    switch (dtype) {
    case GLYD_DTYPE_BF16: return (uint8_t)(glyd_read16(in + 2 * i) >> 7);
    case GLYD_DTYPE_F16: return in[2 * i + 1];
    case GLYD_DTYPE_F32: return (uint8_t)(glyd_read32(in + 4 * i) >> 23);
    default: return in[i];
    }
}

/* ------------------------------------------------------------------------ */
/* Jobs over units                                                          */
/* ------------------------------------------------------------------------ */

typedef struct {
    unsigned dtype;
    const uint8_t* src;
    uint64_t n;
    uint32_t unitSize;
    glyd_dtypeShape shape;
    uint8_t* planes[3];
    /* histogram job: for bf16, by exponent and top mantissa bit (9 bits) */
    unsigned count[512];
    /* coding job */
    const glyd_hufCTable* ct;
    const uint8_t* fastCode;  /* symbol -> 3-bit code (7 = escape) */
    uint8_t* fields;          /* joint split: the whole tensor's 7-bit fields */
    uint8_t symBase;
    uint64_t firstUnit, nbUnits;
    uint8_t* out;             /* this job's streams (huffman) or escapes (fast) */
    size_t outCap;
    uint32_t* unitSizes;      /* per unit: stream bytes (huffman) or escapes (fast) */
    uint8_t* codes;           /* fast: the whole tensor's codes, one byte each */
    size_t result;            /* bytes written to out, or an error */
} enc_job;

static void run_jobs(enc_job* jobs, unsigned nbJobs, void (*fn)(void*), glyd_pool* pool)
{
    unsigned j;
    if (nbJobs == 1 || !pool) {
        for (j = 0; j < nbJobs; j++) fn(&jobs[j]);
        return;
    }
    for (j = 0; j < nbJobs; j++) glyd_poolAdd(pool, fn, &jobs[j]);
    glyd_poolWait(pool);
}

/* The 9 bits below a bf16's sign (exponent and top mantissa bit), or the
 * symbol of other dtypes: what the histogram counts. */
GLYD_FORCE_INLINE unsigned hist_key(unsigned dtype, const uint8_t* in, size_t i)
{
    if (dtype == GLYD_DTYPE_BF16) return (glyd_read16(in + 2 * i) >> 6) & 0x1FF;
    return symbol_at(dtype, in, i);
}

static void histogram_job(void* arg)
{
    enc_job* const j = (enc_job*)arg;
    uint64_t const a = j->firstUnit * j->unitSize;
    uint64_t const b = GLYD_MIN(j->n, (j->firstUnit + j->nbUnits) * j->unitSize);
    unsigned c[2][512];
    uint64_t i = a;
    unsigned s;
    memset(c, 0, sizeof(c));
    for (; i + 2 <= b; i += 2) {
        c[0][hist_key(j->dtype, j->src, i)]++;
        c[1][hist_key(j->dtype, j->src, i + 1)]++;
    }
    for (; i < b; i++) c[0][hist_key(j->dtype, j->src, i)]++;
    for (s = 0; s < 512; s++) j->count[s] = c[0][s] + c[1][s];
}

/* Codes n symbols MSB-first; returns the byte-padded size. */
static size_t huffman_unit(uint8_t* dst, const uint8_t* sym, size_t n, const glyd_hufCTable* ct)
{
    uint8_t* op = dst;
    uint64_t acc = 0;
    unsigned nb = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        /* at most 31 + 11 bits held: the oldest bits never fall off */
        unsigned const len = ct->len[sym[i]];
        acc = (acc << len) | ct->code[sym[i]];
        nb += len;
        if (nb >= 32) {
            uint32_t const w = (uint32_t)(acc >> (nb - 32));
            op[0] = (uint8_t)(w >> 24);
            op[1] = (uint8_t)(w >> 16);
            op[2] = (uint8_t)(w >> 8);
            op[3] = (uint8_t)w;
            op += 4;
            nb -= 32;
        }
    }
    while (nb >= 8) {
        nb -= 8;
        *op++ = (uint8_t)(acc >> nb);
    }
    if (nb) *op++ = (uint8_t)(acc << (8 - nb));
    return (size_t)(op - dst);
}

/* Splits this job's units into planes and codes their symbols. */
static void code_job(void* arg)
{
    enc_job* const j = (enc_job*)arg;
    uint8_t* const sym = (uint8_t*)malloc(j->unitSize);
    uint64_t u;
    size_t pos = 0;
    if (!sym) { j->result = GLYD_ERROR(memory_allocation); return; }
    for (u = j->firstUnit; u < j->firstUnit + j->nbUnits; u++) {
        uint64_t const a = u * j->unitSize;
        size_t const len = (size_t)GLYD_MIN((uint64_t)j->unitSize, j->n - a);
        uint8_t* planes[3];
        unsigned k;
        if (j->fields) {
            glyd_tensorSplitJoint(j->src + a * 2, len, j->symBase, sym, j->fields + a);
        } else {
            for (k = 0; k < j->shape.nbPlanes; k++) planes[k] = j->planes[k] + a;
            glyd_tensorSplit(j->dtype, j->src + a * j->shape.elemSize, len, sym, planes);
        }
        if (j->ct) {
            size_t const w = huffman_unit(j->out + pos, sym, len, j->ct);
            j->unitSizes[u - j->firstUnit] = (uint32_t)w;
            pos += w;
        } else if (j->fastCode) {
            /* one code byte per element (packed into bit planes afterwards:
             * units need not start on the planes' 32-element groups), and
             * the escaped symbols in element order */
            size_t i, nbEsc = 0;
            for (i = 0; i < len; i++) {
                uint8_t const c = j->fastCode[sym[i]];
                j->codes[a + i] = c;
                if (c == 7) j->out[pos + nbEsc++] = sym[i];
            }
            j->unitSizes[u - j->firstUnit] = (uint32_t)nbEsc;
            pos += nbEsc;
        }
    }
    free(sym);
    j->result = pos;
}

/* ------------------------------------------------------------------------ */
/* Blob                                                                     */
/* ------------------------------------------------------------------------ */

static void write_header(uint8_t* dst, unsigned dtype, unsigned layout, uint64_t n, uint32_t unitSize,
                         uint32_t rowLength, uint64_t checksum)
{
    memset(dst, 0, GLYD_TENSOR_HEADER);
    glyd_write32(dst, GLYD_TENSOR_MAGIC);
    dst[4] = GLYD_TENSOR_VERSION;
    dst[5] = (uint8_t)dtype;
    dst[6] = (uint8_t)layout;
    glyd_write64(dst + 8, n);
    glyd_write32(dst + 16, unitSize);
    glyd_write32(dst + 20, rowLength);
    glyd_write64(dst + 24, checksum);
}

static size_t store(uint8_t* dst, size_t cap, unsigned dtype, const uint8_t* src, uint64_t n,
                    size_t bytes, uint32_t unitSize, uint32_t rowLength, uint64_t checksum)
{
    RETURN_ERROR_IF(cap < GLYD_TENSOR_HEADER + bytes, dstSize_tooSmall, "tensor blob");
    write_header(dst, dtype, GLYD_TLAYOUT_STORED, n, unitSize, rowLength, checksum);
    if (bytes) memcpy(dst + GLYD_TENSOR_HEADER, src, bytes);
    return GLYD_TENSOR_HEADER + bytes;
}

/* Packs one code byte per element into 3 bit planes per 32 elements. */
static void pack_code_planes(uint8_t* planes, const uint8_t* codes, uint64_t n)
{
    uint64_t g;
    for (g = 0; g * 32 < n; g++) {
        uint32_t w[3] = { 0, 0, 0 };
        unsigned i;
        for (i = 0; i < 32 && g * 32 + i < n; i++) {
            unsigned const c = codes[g * 32 + i];
            w[0] |= (uint32_t)(c & 1) << i;
            w[1] |= (uint32_t)((c >> 1) & 1) << i;
            w[2] |= (uint32_t)((c >> 2) & 1) << i;
        }
        glyd_write32(planes + 12 * g, w[0]);
        glyd_write32(planes + 12 * g + 4, w[1]);
        glyd_write32(planes + 12 * g + 8, w[2]);
    }
}

/* The fast layout's table: the nbCodes (7, or 15) most frequent symbols get
 * direct codes, in frequency order (ties to the smaller symbol); code[]
 * maps every symbol to its code, nbCodes (escape) for the rest and for
 * table entries never seen. */
static void fast_table(const uint64_t count[256], unsigned nbCodes, uint8_t* table, uint8_t code[256])
{
    unsigned order[256], i, s, direct = 0;
    for (s = 0; s < 256; s++) order[s] = s;
    for (i = 0; i < nbCodes; i++) {
        unsigned best = i;
        for (s = i + 1; s < 256; s++)
            if (count[order[s]] > count[order[best]]) best = s;
        { unsigned const t = order[i]; order[i] = order[best]; order[best] = t; }
    }
    memset(code, (int)nbCodes, 256);
    for (i = 0; i < nbCodes; i++) {
        table[i] = (uint8_t)order[i];
        if (count[order[i]] && direct == i) { code[order[i]] = (uint8_t)i; direct++; }
    }
}

/* ------------------------------------------------------------------------ */
/* The fast layout, bf16, written piece by piece                            */
/* ------------------------------------------------------------------------ */

void glyd_fastCount(uint64_t count[256], const uint16_t* elems, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) count[(elems[i] >> 7) & 0xFF]++;
}

/* Where each part of the blob starts, for n elements with these counts. */
static size_t fast_layout_size(const uint64_t count[256], uint64_t n, uint32_t unitSize, unsigned codes,
                               uint64_t* nbEscapes)
{
    uint8_t table[GLYD_TENSOR_NIBBLE_CODES], code[256];
    uint64_t esc = 0;
    unsigned s;
    fast_table(count, codes, table, code);
    for (s = 0; s < 256; s++)
        if (code[s] == codes) esc += count[s];
    *nbEscapes = esc;
    return GLYD_TENSOR_HEADER + 1 + codes + (size_t)n + 4 * (size_t)((n + unitSize - 1) / unitSize) +
           glyd_fastGroupBytes(codes) * (size_t)((n + 31) / 32) + (size_t)esc;
}

size_t glyd_fastWriterSize(const uint64_t count[256], uint64_t rowLength, unsigned codes)
{
    uint64_t n = 0, esc;
    unsigned s;
    for (s = 0; s < 256; s++) n += count[s];
    if (n == 0 || (codes != GLYD_TENSOR_FAST_CODES && codes != GLYD_TENSOR_NIBBLE_CODES)) return 0;
    return fast_layout_size(count, n, glyd_tensorUnitSize(n, rowLength), codes, &esc);
}

size_t glyd_fastWriterBegin(glyd_fastWriter* w, void* dst, size_t dstCapacity, const uint64_t count[256],
                            uint64_t rowLength, unsigned codes, uint64_t checksum)
{
    uint8_t* const out = (uint8_t*)dst;
    uint64_t n = 0;
    unsigned s;
    size_t size, pos = GLYD_TENSOR_HEADER;
    memset(w, 0, sizeof(*w));
    RETURN_ERROR_IF(codes != GLYD_TENSOR_FAST_CODES && codes != GLYD_TENSOR_NIBBLE_CODES, parameter_outOfBound,
                    "fast code count");
    for (s = 0; s < 256; s++) n += count[s];
    RETURN_ERROR_IF(n == 0, srcSize_wrong, "an empty tensor");
    RETURN_ERROR_IF(n > (SIZE_MAX >> 3), srcSize_wrong, "tensor too large");
    w->n = n;
    w->codes = codes;
    w->unitSize = glyd_tensorUnitSize(n, rowLength);
    size = fast_layout_size(count, n, w->unitSize, codes, &w->nbEscapes);
    RETURN_ERROR_IF(w->nbEscapes > 0xFFFFFFFFu, srcSize_wrong, "too many escapes");
    RETURN_ERROR_IF(dstCapacity < size, dstSize_tooSmall, "tensor blob");
    write_header(out, GLYD_DTYPE_BF16, GLYD_TLAYOUT_FAST, n, w->unitSize,
                 rowLength <= 0xFFFFFFFFu ? (uint32_t)rowLength : 0, checksum);
    out[pos++] = (uint8_t)codes;
    fast_table(count, codes, out + pos, w->code);
    pos += codes;
    w->raw = out + pos;
    pos += (size_t)n;
    w->ends = out + pos;
    pos += 4 * (size_t)((n + w->unitSize - 1) / w->unitSize);
    w->planes = out + pos;
    pos += glyd_fastGroupBytes(codes) * (size_t)((n + 31) / 32);
    w->escapes = out + pos;
    w->size = size;
    return 0;
}

/* The current group's codes into the planes: three bit planes, or 16
 * bytes of nibbles (glyd_nibbleByte). */
static void fast_writer_flush(glyd_fastWriter* w, uint64_t group)
{
    if (w->codes == GLYD_TENSOR_NIBBLE_CODES) {
        uint8_t* const g = w->planes + 16 * group;
        unsigned k;
        for (k = 0; k < 4; k++) glyd_write32(g + 4 * k, w->word[k]);
    } else {
        uint8_t* const g = w->planes + 12 * group;
        glyd_write32(g, w->word[0]);
        glyd_write32(g + 4, w->word[1]);
        glyd_write32(g + 8, w->word[2]);
    }
    memset(w->word, 0, sizeof w->word);
}

size_t glyd_fastWriterPut(glyd_fastWriter* w, const uint16_t* elems, size_t nb)
{
    size_t k;
    RETURN_ERROR_IF(nb > w->n - w->done, srcSize_wrong, "more elements than counted");
    for (k = 0; k < nb; k++) {
        uint64_t const i = w->done++;
        unsigned const h = elems[k], e = (h >> 7) & 0xFF, c = w->code[e], bit = (unsigned)(i & 31);
        w->raw[i] = (uint8_t)(((h >> 8) & 0x80) | (h & 0x7F));
        if (w->codes == GLYD_TENSOR_NIBBLE_CODES) {
            unsigned const byte = glyd_nibbleByte(bit);
            w->word[byte >> 2] |= (uint32_t)c << (8 * (byte & 3) + glyd_nibbleShift(bit));
        } else {
            w->word[0] |= (uint32_t)(c & 1) << bit;
            w->word[1] |= (uint32_t)((c >> 1) & 1) << bit;
            w->word[2] |= (uint32_t)(c >> 2) << bit;
        }
        if (c == w->codes) {
            RETURN_ERROR_IF(w->escaped == w->nbEscapes, srcSize_wrong, "elements other than counted");
            w->escapes[w->escaped++] = (uint8_t)e;
        }
        if (bit == 31 || w->done == w->n) fast_writer_flush(w, i >> 5);
        if (w->done % w->unitSize == 0 || w->done == w->n)
            glyd_write32(w->ends + 4 * (i / w->unitSize), (uint32_t)w->escaped);
    }
    return 0;
}

size_t glyd_fastWriterEnd(const glyd_fastWriter* w)
{
    RETURN_ERROR_IF(w->done != w->n || w->escaped != w->nbEscapes, srcSize_wrong, "elements other than counted");
    return w->size;
}

/* Inside glyd_tensorCompress: fail after allocations, through the cleanup. */
#define FAIL_IF(cond, err) do { if (cond) { r = GLYD_ERROR(err); goto done; } } while (0)

size_t glyd_tensorCompress(void* dst, size_t dstCapacity, const void* src, size_t nbElements,
                           glyd_dtype dtype, size_t rowLength, glyd_tensorLayout layout,
                           unsigned nbThreads)
{
    uint8_t* const out = (uint8_t*)dst;
    const uint8_t* const in = (const uint8_t*)src;
    glyd_dtypeShape shape;
    uint64_t const n = nbElements;
    uint32_t unitSize;
    uint64_t nbUnits, checksum;
    size_t bytes, pos = GLYD_TENSOR_HEADER, r = 0;
    unsigned count9[512], count[256], maxSymbol = 0, distinct = 0, s, k, nbJobs;
    int joint = 0;
    uint8_t symBase = 0;
    uint8_t* fields = NULL;
    uint32_t const row32 = rowLength <= 0xFFFFFFFFu ? (uint32_t)rowLength : 0;
    glyd_pool* pool = NULL;
    enc_job* jobs = NULL;
    uint8_t* codes = NULL;
    glyd_hufCTable ct;
    uint8_t fastCode[256];

    RETURN_ERROR_IF(!glyd_dtypeShapeOf((unsigned)dtype, &shape), parameter_outOfBound, "dtype");
    RETURN_ERROR_IF(layout < glyd_tensor_auto || layout > glyd_tensor_fast, parameter_outOfBound, "layout");
    RETURN_ERROR_IF(src == NULL && n > 0, GENERIC, "src is NULL");
    RETURN_ERROR_IF(dst == NULL && dstCapacity > 0, dstBuffer_null, "dst");
    RETURN_ERROR_IF(n > (SIZE_MAX >> 3), srcSize_wrong, "tensor too large");
    bytes = (size_t)n * shape.elemSize;
    unitSize = glyd_tensorUnitSize(n, rowLength);
    nbUnits = n ? (n + unitSize - 1) / unitSize : 0;
    checksum = XXH3_64bits(in, bytes);
    if (n == 0) return store(out, dstCapacity, (unsigned)dtype, in, n, bytes, unitSize, row32, checksum);

    /* jobs: contiguous ranges of units, a few per thread for balance */
    if (n < GLYD_TENSOR_MT_MIN) nbThreads = 1;
    nbJobs = nbThreads > 1 ? (unsigned)GLYD_MIN((uint64_t)nbThreads * 4, nbUnits) : 1;
    jobs = (enc_job*)calloc(nbJobs, sizeof(enc_job));
    RETURN_ERROR_IF(jobs == NULL, memory_allocation, "jobs");
    if (nbJobs > 1) {
        pool = glyd_poolCreate(GLYD_MIN(nbThreads, nbJobs), glyd_defaultCMem);
        FAIL_IF(pool == NULL, threads_unavailable);
    }
    for (k = 0; k < nbJobs; k++) {
        enc_job* const j = &jobs[k];
        j->dtype = (unsigned)dtype;
        j->src = in;
        j->n = n;
        j->unitSize = unitSize;
        j->shape = shape;
        j->firstUnit = nbUnits * k / nbJobs;
        j->nbUnits = nbUnits * (k + 1) / nbJobs - j->firstUnit;
    }
    run_jobs(jobs, nbJobs, histogram_job, pool);
    memset(count9, 0, sizeof(count9));
    for (k = 0; k < nbJobs; k++)
        for (s = 0; s < 512; s++) count9[s] += jobs[k].count[s];
    /* the plain symbol's counts (for bf16, the exponent's) */
    for (s = 0; s < 256; s++)
        count[s] = dtype == GLYD_DTYPE_BF16 ? count9[2 * s] + count9[2 * s + 1] : count9[s];
    for (s = 0; s < 256; s++)
        if (count[s]) { maxSymbol = s; distinct++; }

    if (distinct == 1) {
        /* one symbol: nothing to code, only the planes */
        FAIL_IF(dstCapacity < pos + 1 + shape.nbPlanes * (size_t)n, dstSize_tooSmall);
        write_header(out, (unsigned)dtype, GLYD_TLAYOUT_CONSTANT, n, unitSize, row32, checksum);
        out[pos++] = (uint8_t)maxSymbol;
    } else if (layout == glyd_tensor_fast) {
        uint64_t count64[256];
        for (s = 0; s < 256; s++) count64[s] = count[s];
        FAIL_IF(dstCapacity < pos + 1 + GLYD_TENSOR_FAST_CODES, dstSize_tooSmall);
        write_header(out, (unsigned)dtype, GLYD_TLAYOUT_FAST, n, unitSize, row32, checksum);
        out[pos++] = GLYD_TENSOR_FAST_CODES;
        fast_table(count64, GLYD_TENSOR_FAST_CODES, out + pos, fastCode);
        pos += GLYD_TENSOR_FAST_CODES;
        codes = (uint8_t*)malloc((size_t)n);
        FAIL_IF(codes == NULL, memory_allocation);
    } else {
        /* bits beyond the planes' whole bytes: the symbols' code */
        size_t codedBits;
        FAIL_IF(GLYD_IS_ERROR(glyd_hufBuildCTable(&ct, count, maxSymbol, GLYD_HUF_MAX_BITS)), GENERIC);
        codedBits = glyd_hufCost(&ct, count, maxSymbol);
        if (dtype == GLYD_DTYPE_BF16) {
            /* the joint split, when the exponents span at most 128 values
             * and it codes smaller: symbols of 8 bits, fields of 7 */
            unsigned lo = 0, hi = maxSymbol;
            while (!count[lo]) lo++;
            if (hi - lo <= 127) {
                unsigned jcount[256], jmax = 0;
                glyd_hufCTable jct;
                memset(jcount, 0, sizeof(jcount));
                for (s = lo; s <= hi; s++) {
                    jcount[(s - lo) << 1] = count9[2 * s];
                    jcount[((s - lo) << 1) | 1] = count9[2 * s + 1];
                }
                for (s = 0; s < 256; s++)
                    if (jcount[s]) jmax = s;
                if (!GLYD_IS_ERROR(glyd_hufBuildCTable(&jct, jcount, jmax, GLYD_HUF_MAX_BITS))) {
                    size_t const jbits = glyd_hufCost(&jct, jcount, jmax);
                    /* one bit less per element in the fields */
                    if (jbits < codedBits + (size_t)n) {
                        joint = 1;
                        symBase = (uint8_t)lo;
                        ct = jct;
                        codedBits = jbits - (size_t)n;
                    }
                }
            }
        }
        if (layout == glyd_tensor_auto && codedBits / 8 + 4 * nbUnits + 200 >= (size_t)n) {
            /* store as is when coding would not pay (random bits, fp8 noise) */
            r = store(out, dstCapacity, (unsigned)dtype, in, n, bytes, unitSize, row32, checksum);
            goto done;
        }
        FAIL_IF(dstCapacity < pos + 160, dstSize_tooSmall);
        write_header(out, (unsigned)dtype, GLYD_TLAYOUT_HUFFMAN, n, unitSize, row32, checksum);
        if (joint) {
            out[7] = GLYD_TSPLIT_JOINT;
            out[pos++] = symBase;
            fields = (uint8_t*)malloc((size_t)n);
            FAIL_IF(fields == NULL, memory_allocation);
        }
        r = glyd_hufWriteCTable(out + pos, dstCapacity - pos, &ct);
        if (GLYD_IS_ERROR(r)) goto done;
        pos += r;
    }

    /* the planes, at a place known now, then the symbols of every unit */
    {
        size_t const planeBytes = joint ? (size_t)((n * 7 + 7) / 8) : shape.nbPlanes * (size_t)n;
        FAIL_IF(dstCapacity - pos < planeBytes + 4 * nbUnits, dstSize_tooSmall);
    }
    for (k = 0; k < nbJobs; k++) {
        enc_job* const j = &jobs[k];
        unsigned p;
        j->fields = fields;
        j->symBase = symBase;
        for (p = 0; p < shape.nbPlanes; p++) j->planes[p] = out + pos + p * (size_t)n;
        j->ct = (distinct > 1 && !codes) ? &ct : NULL;
        j->fastCode = codes ? fastCode : NULL;
        j->codes = codes;
        if (distinct > 1) {
            j->outCap = codes ? (size_t)(j->nbUnits * unitSize)
                              : ((size_t)unitSize * GLYD_HUF_MAX_BITS + 7) / 8 * (size_t)j->nbUnits;
            j->out = (uint8_t*)malloc(j->outCap + 8);
            j->unitSizes = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)j->nbUnits + 1);
            FAIL_IF(!j->out || !j->unitSizes, memory_allocation);
        }
    }
    run_jobs(jobs, nbJobs, code_job, pool);
    if (joint) {
        /* fields are packed once every job is done: units need not start
         * on a byte of the packed plane */
        glyd_tensorPack7(out + pos, fields, (size_t)n);
        pos += (size_t)((n * 7 + 7) / 8);
    } else {
        pos += shape.nbPlanes * (size_t)n;
    }
    if (distinct == 1) {
        r = pos;
        goto done;
    }
    {
        /* per unit: where its stream ends (huffman) or how many escapes
         * precede its end (fast) */
        uint8_t* const ends = out + pos;
        size_t total = 0;
        pos += 4 * nbUnits;
        if (codes) {
            size_t const planeBytes = 12 * (size_t)((n + 31) / 32);
            FAIL_IF(dstCapacity - pos < planeBytes, dstSize_tooSmall);
            pack_code_planes(out + pos, codes, n);
            pos += planeBytes;
        }
        for (k = 0; k < nbJobs; k++) {
            enc_job* const j = &jobs[k];
            uint64_t u;
            if (GLYD_IS_ERROR(j->result)) { r = j->result; goto done; }
            FAIL_IF(dstCapacity - pos < j->result + GLYD_TENSOR_PAD, dstSize_tooSmall);
            memcpy(out + pos, j->out, j->result);
            pos += j->result;
            for (u = 0; u < j->nbUnits; u++) {
                total += j->unitSizes[u];
                FAIL_IF(total > 0xFFFFFFFFu, srcSize_wrong);
                glyd_write32(ends + 4 * (j->firstUnit + u), (uint32_t)total);
            }
        }
        if (!codes) {
            /* decoders read 8 bytes at a time: zeros after the streams */
            memset(out + pos, 0, GLYD_TENSOR_PAD);
            pos += GLYD_TENSOR_PAD;
        }
        r = pos;
    }

done:
    for (k = 0; jobs && k < nbJobs; k++) {
        free(jobs[k].out);
        free(jobs[k].unitSizes);
    }
    free(jobs);
    free(codes);
    free(fields);
    glyd_poolFree(pool);
    return r;
}

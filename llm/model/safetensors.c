/* SPDX-License-Identifier: BSD-3-Clause */
/* safetensors.c: a strict reader of the safetensors format: an 8-byte
 * little-endian header size, a JSON header mapping tensor names to dtype,
 * shape and byte range, then the tensors' bytes. */
#include <stdlib.h>

#include "model.h"

static const struct { const char* name; unsigned size; unsigned codec; } kDtypes[GLYD_ST_NB_DTYPES] = {
    { "BOOL", 1, 0 }, { "U8", 1, 0 }, { "I8", 1, 0 }, { "I16", 2, 0 }, { "U16", 2, 0 },
    { "F16", 2, GLYD_DTYPE_F16 }, { "BF16", 2, GLYD_DTYPE_BF16 }, { "I32", 4, 0 }, { "U32", 4, 0 },
    { "F32", 4, GLYD_DTYPE_F32 }, { "F64", 8, 0 }, { "I64", 8, 0 }, { "U64", 8, 0 },
    { "F8_E4M3", 1, GLYD_DTYPE_F8_E4M3 }, { "F8_E5M2", 1, GLYD_DTYPE_F8_E5M2 } };

const char* glyd_stDtypeName(glyd_stDtype d) { return d < GLYD_ST_NB_DTYPES ? kDtypes[d].name : "?"; }
unsigned glyd_stDtypeSize(glyd_stDtype d) { return d < GLYD_ST_NB_DTYPES ? kDtypes[d].size : 0; }
unsigned glyd_stTensorCodecDtype(glyd_stDtype d) { return d < GLYD_ST_NB_DTYPES ? kDtypes[d].codec : 0; }

static int dtype_from_name(const char* s, glyd_stDtype* d)
{
    unsigned i;
    for (i = 0; i < GLYD_ST_NB_DTYPES; i++)
        if (strcmp(s, kDtypes[i].name) == 0) { *d = (glyd_stDtype)i; return 1; }
    return 0;
}

static int cmp_begin(const void* a, const void* b)
{
    const glyd_stTensor* x = (const glyd_stTensor*)a;
    const glyd_stTensor* y = (const glyd_stTensor*)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    /* empty tensors may share an offset with the next: empty ones first */
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

void glyd_stFree(glyd_safetensors* st)
{
    size_t i;
    for (i = 0; i < st->nbTensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    st->tensors = NULL;
    st->nbTensors = 0;
}

/* Reads a JSON integer >= 0 (no fractions, no exponents beyond range). */
static int json_uint(const json_t* j, uint64_t* v)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0) return 0;
    *v = (uint64_t)json_integer_value(j);
    return 1;
}

#define FAIL(msg) do { *why = (msg); goto bad; } while (0)

size_t glyd_stParse(glyd_safetensors* st, const void* data, size_t size, const char** why)
{
    const uint8_t* const in = (const uint8_t*)data;
    json_t* root = NULL;
    json_error_t jerr;
    const char* key;
    json_t* value;
    size_t count = 0, i;
    uint64_t dataSize, expect = 0;
    static const char* ignore;
    if (!why) why = &ignore;
    memset(st, 0, sizeof(*st));
    st->base = in;
    st->size = size;
    if (size < 8) FAIL("shorter than the 8-byte header size");
    st->headerSize = glyd_read64(in);
    if (st->headerSize > GLYD_ST_HEADER_MAX) FAIL("header larger than 100 MiB");
    if (st->headerSize > size - 8) FAIL("header runs past the end of the file");
    st->dataStart = 8 + (size_t)st->headerSize;
    dataSize = size - st->dataStart;
    /* the whole header must be one JSON object; jansson checks UTF-8 */
    root = json_loadb((const char*)in + 8, (size_t)st->headerSize, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) FAIL("header is not valid JSON (or has duplicate keys)");
    if (!json_is_object(root)) FAIL("header is not a JSON object");
    st->tensors = (glyd_stTensor*)calloc(json_object_size(root) + 1, sizeof(glyd_stTensor));
    if (!st->tensors) FAIL("out of memory");

    json_object_foreach(root, key, value) {
        glyd_stTensor* const t = &st->tensors[count];
        json_t *dt, *shape, *offs;
        size_t d;
        uint64_t bytes;
        if (strcmp(key, "__metadata__") == 0) {
            const char* k2;
            json_t* v2;
            if (!json_is_object(value)) FAIL("__metadata__ is not an object");
            json_object_foreach(value, k2, v2)
                if (!json_is_string(v2)) FAIL("__metadata__ values must be strings");
            continue;
        }
        if (!json_is_object(value) || json_object_size(value) != 3) FAIL("a tensor entry must hold exactly dtype, shape, data_offsets");
        dt = json_object_get(value, "dtype");
        shape = json_object_get(value, "shape");
        offs = json_object_get(value, "data_offsets");
        if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs)) FAIL("a tensor entry must hold exactly dtype, shape, data_offsets");
        t->name = strdup(key);
        count++;
        if (!t->name) FAIL("out of memory");
        if (!dtype_from_name(json_string_value(dt), &t->dtype)) FAIL("unknown dtype");
        if (json_array_size(shape) > GLYD_ST_MAX_DIMS) FAIL("more than 16 dimensions");
        t->ndim = (unsigned)json_array_size(shape);
        t->nbElements = 1;
        for (d = 0; d < t->ndim; d++) {
            if (!json_uint(json_array_get(shape, d), &t->shape[d])) FAIL("a dimension is not a non-negative integer");
            if (t->shape[d] && t->nbElements > UINT64_MAX / t->shape[d]) FAIL("shape too large");
            t->nbElements *= t->shape[d];
        }
        if (json_array_size(offs) != 2 || !json_uint(json_array_get(offs, 0), &t->begin) ||
            !json_uint(json_array_get(offs, 1), &t->end))
            FAIL("data_offsets must be two non-negative integers");
        if (t->begin > t->end || t->end > dataSize) FAIL("data_offsets outside the data");
        bytes = t->end - t->begin;
        if (t->nbElements > UINT64_MAX / kDtypes[t->dtype].size || t->nbElements * kDtypes[t->dtype].size != bytes)
            FAIL("shape does not match the byte range");
    }
    st->nbTensors = count;
    qsort(st->tensors, count, sizeof(glyd_stTensor), cmp_begin);
    for (i = 0; i < count; i++) {
        if (st->tensors[i].begin != expect) FAIL(st->tensors[i].begin < expect ? "tensors overlap" : "gap between tensors");
        expect = st->tensors[i].end;
    }
    if (expect != dataSize) FAIL("bytes after the last tensor");
    json_decref(root);
    return 0;
bad:
    json_decref(root);
    st->nbTensors = count;
    glyd_stFree(st);
    RETURN_ERROR(safetensors_invalid, *why);
}

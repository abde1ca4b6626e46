/* SPDX-License-Identifier: BSD-3-Clause */
/* hf_config.c: the Hugging Face side of a model folder: the sharding index
 * that maps tensor names to safetensors files, and the writing of
 * safetensors headers. config.json is the engine's to read (infer/config.c),
 * where every field it uses is checked. */
#include <stdlib.h>

#include "model.h"

void glyd_shardIndexFree(glyd_shardIndex* x)
{
    size_t i;
    for (i = 0; i < x->nbEntries; i++) {
        free(x->names[i]);
        free(x->files[i]);
    }
    free(x->names);
    free(x->files);
    memset(x, 0, sizeof(*x));
}

size_t glyd_shardIndexParse(glyd_shardIndex* x, const char* text, size_t size, const char** why)
{
    json_error_t jerr;
    json_t* const root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
    const json_t* map;
    const char* key;
    json_t* value;
    memset(x, 0, sizeof(*x));
    map = root ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(map)) {
        *why = "the sharding index has no weight_map object";
        json_decref(root);
        RETURN_ERROR(GENERIC, "index");
    }
    x->names = (char**)calloc(json_object_size(map) + 1, sizeof(char*));
    x->files = (char**)calloc(json_object_size(map) + 1, sizeof(char*));
    if (!x->names || !x->files) {
        json_decref(root);
        glyd_shardIndexFree(x);
        RETURN_ERROR(memory_allocation, "index");
    }
    json_object_foreach((json_t*)map, key, value) {
        if (!json_is_string(value)) {
            *why = "a weight_map entry is not a file name";
            json_decref(root);
            glyd_shardIndexFree(x);
            RETURN_ERROR(GENERIC, "index");
        }
        x->names[x->nbEntries] = strdup(key);
        x->files[x->nbEntries] = strdup(json_string_value(value));
        x->nbEntries++;
    }
    json_decref(root);
    return 0;
}

const char* glyd_shardIndexFind(const glyd_shardIndex* x, const char* tensor)
{
    size_t i;
    for (i = 0; i < x->nbEntries; i++)
        if (strcmp(x->names[i], tensor) == 0) return x->files[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Writing safetensors                                                      */
/* ------------------------------------------------------------------------ */

size_t glyd_stWriteHeader(uint8_t** header, size_t* size, const glyd_stTensor* tensors, size_t nb,
                          const char* metadataJson)
{
    json_t* const root = json_object();
    char* text;
    size_t i, len, padded;
    uint64_t offset = 0;
    if (metadataJson) {
        json_error_t jerr;
        json_t* const meta = json_loads(metadataJson, 0, &jerr);
        if (!json_is_object(meta)) {
            json_decref(meta);
            json_decref(root);
            RETURN_ERROR(parameter_outOfBound, "metadata");
        }
        json_object_set_new(root, "__metadata__", meta);
    }
    for (i = 0; i < nb; i++) {
        const glyd_stTensor* const t = &tensors[i];
        json_t* const o = json_object();
        json_t* const shape = json_array();
        json_t* const offs = json_array();
        unsigned d;
        for (d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        json_array_append_new(offs, json_integer((json_int_t)offset));
        offset += t->nbElements * glyd_stDtypeSize(t->dtype);
        json_array_append_new(offs, json_integer((json_int_t)offset));
        json_object_set_new(o, "dtype", json_string(glyd_stDtypeName(t->dtype)));
        json_object_set_new(o, "shape", shape);
        json_object_set_new(o, "data_offsets", offs);
        json_object_set_new(root, t->name, o);
    }
    text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    RETURN_ERROR_IF(!text, memory_allocation, "header");
    len = strlen(text);
    /* spaces pad the header to 8 bytes, as writers commonly do, so that the
     * data starts aligned */
    padded = (len + 7) & ~(size_t)7;
    *header = (uint8_t*)malloc(8 + padded);
    if (!*header) { free(text); RETURN_ERROR(memory_allocation, "header"); }
    glyd_write64(*header, padded);
    memcpy(*header + 8, text, len);
    memset(*header + 8 + len, ' ', padded - len);
    *size = 8 + padded;
    free(text);
    return 0;
}

/* hf_config.c: the Hugging Face side of a model folder: config.json's
 * architecture fields, and the sharding index that maps tensor names to
 * safetensors files. */
#include <stdlib.h>

#include "model.h"

static unsigned long long get_u(const json_t* o, const char* key, unsigned long long dflt)
{
    const json_t* const j = json_object_get(o, key);
    return json_is_integer(j) && json_integer_value(j) >= 0 ? (unsigned long long)json_integer_value(j) : dflt;
}

static double get_f(const json_t* o, const char* key, double dflt)
{
    const json_t* const j = json_object_get(o, key);
    return json_is_number(j) ? json_number_value(j) : dflt;
}

size_t glyd_hfConfigParse(glyd_hfConfig* c, const char* text, size_t size, const char** why)
{
    json_error_t jerr;
    json_t* const root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
    const json_t* arch;
    const json_t* rs;
    memset(c, 0, sizeof(*c));
    if (!root || !json_is_object(root)) {
        *why = "config.json is not a JSON object";
        json_decref(root);
        RETURN_ERROR(GENERIC, "config");
    }
    arch = json_object_get(root, "architectures");
    if (json_is_array(arch) && json_is_string(json_array_get(arch, 0)))
        snprintf(c->architecture, sizeof c->architecture, "%s", json_string_value(json_array_get(arch, 0)));
    if (json_is_string(json_object_get(root, "model_type")))
        snprintf(c->modelType, sizeof c->modelType, "%s", json_string_value(json_object_get(root, "model_type")));
    if (json_is_string(json_object_get(root, "torch_dtype")))
        snprintf(c->torchDtype, sizeof c->torchDtype, "%s", json_string_value(json_object_get(root, "torch_dtype")));
    c->hiddenSize = get_u(root, "hidden_size", 0);
    c->intermediateSize = get_u(root, "intermediate_size", 0);
    c->nbLayers = get_u(root, "num_hidden_layers", 0);
    c->nbHeads = get_u(root, "num_attention_heads", 0);
    c->nbKvHeads = get_u(root, "num_key_value_heads", c->nbHeads);
    c->headDim = get_u(root, "head_dim", c->nbHeads ? c->hiddenSize / c->nbHeads : 0);
    c->vocabSize = get_u(root, "vocab_size", 0);
    c->maxPositions = get_u(root, "max_position_embeddings", 0);
    c->normEps = get_f(root, "rms_norm_eps", get_f(root, "layer_norm_eps", 1e-6));
    c->ropeTheta = get_f(root, "rope_theta", 10000.0);
    c->tieEmbeddings = json_is_true(json_object_get(root, "tie_word_embeddings"));
    c->attentionBias = json_is_true(json_object_get(root, "attention_bias"));
    c->bosToken = (long long)get_u(root, "bos_token_id", (unsigned long long)-1);
    c->eosToken = (long long)get_u(root, "eos_token_id", (unsigned long long)-1);
    rs = json_object_get(root, "rope_scaling");
    if (json_is_object(rs)) {
        const json_t* const type = json_object_get(rs, "rope_type") ? json_object_get(rs, "rope_type")
                                                                   : json_object_get(rs, "type");
        if (json_is_string(type)) snprintf(c->ropeScaling, sizeof c->ropeScaling, "%s", json_string_value(type));
        c->ropeFactor = get_f(rs, "factor", 1.0);
        c->ropeOriginalMax = get_u(rs, "original_max_position_embeddings", c->maxPositions);
    }
    json_decref(root);
    return 0;
}

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

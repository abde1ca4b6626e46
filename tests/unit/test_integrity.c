/* SPDX-License-Identifier: BSD-3-Clause */
/* test_integrity.c: a packed model's tensors are checked against its index
 * wherever the engine uses them. One damaged byte in any tensor of a pack
 * of the stories260K fixture, in either layout, stops glyd_llmOpen with the
 * tensor named, on the CPU and on the emulated GPU, whether the blob is used
 * where it lies, recoded at load or decoded whole; packs written before the
 * index carried the stored bytes' checksum are checked by decoding. */
#define _GNU_SOURCE /* memmem */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include <xxhash.h>

#include "../../llm/model/model.h"
#include "harness.h"

static const char* stories(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../fixtures/stories260K", corpus_dir());
    return path;
}

typedef struct {
    char dir[64];
    char path[128];
} scratch_dir;

static int scratch_open(scratch_dir* s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/glyd-integrity-XXXXXX");
    if (!mkdtemp(s->dir)) { CHECK(!"mkdtemp"); return 0; }
    snprintf(s->path, sizeof s->path, "%s/m.glyd", s->dir);
    return 1;
}

static void scratch_close(scratch_dir* s)
{
    unlink(s->path);
    rmdir(s->dir);
}

static int write_bytes(const char* path, const uint8_t* data, size_t n)
{
    FILE* const f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    CHECK(ok);
    return ok;
}

/* Every tensor's stored range in a packed file: from the public API. */
typedef struct {
    char name[128];
    size_t offset, stored;
    unsigned hasStoredChecksum;
    const char* codec;
} tensor_place;

/* The stored offset is not in glyd_modelTensorInfo; it comes from the
 * index itself, which this test reads as a reader of the format would. */
static size_t index_places(const uint8_t* file, size_t size, tensor_place* out, size_t max)
{
    uint64_t const at = glyd_read64(file + size - 32), len = glyd_read64(file + size - 24);
    json_t* const root = json_loadb((const char*)file + at, (size_t)len, 0, NULL);
    size_t n = 0, f, t;
    CHECK(root != NULL);
    if (!root) return 0;
    for (f = 0; f < json_array_size(json_object_get(root, "files")); f++) {
        json_t* const ts = json_object_get(json_array_get(json_object_get(root, "files"), f), "tensors");
        for (t = 0; t < json_array_size(ts) && n < max; t++, n++) {
            json_t* const o = json_array_get(ts, t);
            snprintf(out[n].name, sizeof out[n].name, "%s", json_string_value(json_object_get(o, "name")));
            out[n].offset = (size_t)json_integer_value(json_object_get(o, "offset"));
            out[n].stored = (size_t)json_integer_value(json_object_get(o, "stored"));
            out[n].hasStoredChecksum = json_object_get(o, "storedXxh3") != NULL;
        }
    }
    json_decref(root);
    return n;
}

/* The same pack with its index rewritten without the stored bytes'
 * checksums, as packs were written before the index carried them. */
static uint8_t* without_stored_checksums(const uint8_t* file, size_t size, size_t* newSize)
{
    uint64_t const at = glyd_read64(file + size - 32), len = glyd_read64(file + size - 24);
    json_t* const root = json_loadb((const char*)file + at, (size_t)len, 0, NULL);
    char* text;
    uint8_t* out = NULL;
    size_t f, t, tlen;
    if (!root) return NULL;
    for (f = 0; f < json_array_size(json_object_get(root, "files")); f++) {
        json_t* const e = json_array_get(json_object_get(root, "files"), f);
        json_t* const ts = json_object_get(e, "tensors");
        json_object_del(e, "storedXxh3");
        json_object_del(json_object_get(e, "header"), "storedXxh3");
        for (t = 0; t < json_array_size(ts); t++) json_object_del(json_array_get(ts, t), "storedXxh3");
    }
    text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text) return NULL;
    tlen = strlen(text);
    out = (uint8_t*)malloc((size_t)at + tlen + 32);
    if (out) {
        memcpy(out, file, (size_t)at);
        memcpy(out + at, text, tlen);
        glyd_write64(out + at + tlen, at);
        glyd_write64(out + at + tlen + 8, tlen);
        glyd_write64(out + at + tlen + 16, XXH3_64bits(text, tlen));
        memcpy(out + at + tlen + 24, file + size - 8, 8);
        *newSize = (size_t)at + tlen + 32;
    }
    free(text);
    return out;
}

/* form: 0 the fast layout in memory, 1 the entropy layout (compact). */
static glyd_llm* open_llm(const char* path, int form, int gpu, int skipChecks, char* msg, size_t cap, size_t* err)
{
    glyd_llmParams p;
    memset(&p, 0, sizeof p);
    p.nbThreads = 2;
    p.compactWeights = form == 1;
    p.gpu = gpu;
    p.skipWeightChecks = skipChecks;
    p.message = msg;
    p.messageCapacity = cap;
    msg[0] = 0;
    return glyd_llmOpen(path, &p, err);
}

/* Flips one byte in the middle of each tensor's blob in turn and opens the
 * damaged copy in every form: each must be refused, naming that tensor.
 * Returns how many tensors were damaged. */
static size_t check_each_tensor_refused(const uint8_t* file, size_t size, const char* path, int gpu)
{
    tensor_place places[64];
    size_t const n = index_places(file, size, places, 64);
    uint8_t* const copy = (uint8_t*)malloc(size);
    size_t i;
    int form;
    CHECK(n > 40 && copy);
    if (!copy) return 0;
    for (i = 0; i < n; i++) {
        size_t const at = places[i].offset + places[i].stored / 2;
        memcpy(copy, file, size);
        copy[at] ^= 0x10;
        if (!write_bytes(path, copy, size)) break;
        for (form = 0; form < 2; form++) {
            char msg[512];
            size_t err = 0;
            glyd_llm* const m = open_llm(path, form, gpu, 0, msg, sizeof msg, &err);
            CHECK(m == NULL);
            if (m) {
                fprintf(stderr, "# damage in %s (form %d, gpu %d) not caught\n", places[i].name, form, gpu);
                glyd_llmClose(m);
                continue;
            }
            /* the checksum says so, or the decoder first, where the pack
             * is checked by decoding */
            CHECK(glyd_getErrorCode(err) == GLYD_error_checksum_wrong ||
                  glyd_getErrorCode(err) == GLYD_error_corruption_detected);
            if (!strstr(msg, places[i].name) || !strstr(msg, "damaged"))
                fprintf(stderr, "# damage in %s: message \"%s\"\n", places[i].name, msg);
            CHECK(strstr(msg, places[i].name) != NULL && strstr(msg, "damaged") != NULL);
        }
    }
    free(copy);
    return n;
}

static uint8_t* pack_fixture(const scratch_dir* s, glyd_tensorLayout layout, size_t* size)
{
    glyd_packParams pp;
    memset(&pp, 0, sizeof pp);
    pp.layout = layout;
    CHECK_OK(glyd_packModel(stories(), s->path, &pp));
    return read_file(s->path, size);
}

TEST(integrity_every_damaged_tensor_is_refused_by_name)
{
    static const glyd_tensorLayout kLayouts[] = { glyd_tensor_auto, glyd_tensor_fast };
    scratch_dir s;
    size_t k;
    if (!scratch_open(&s)) return;
    for (k = 0; k < 2; k++) {
        size_t size;
        uint8_t* const file = pack_fixture(&s, kLayouts[k], &size);
        tensor_place places[64];
        size_t i, n;
        if (!file) break;
        n = index_places(file, size, places, 64);
        for (i = 0; i < n; i++) CHECK(places[i].hasStoredChecksum);
        CHECK(check_each_tensor_refused(file, size, s.path, GLYD_GPU_NONE) == n);
        free(file);
    }
    scratch_close(&s);
}

TEST(integrity_damage_is_refused_on_the_emulated_gpu)
{
    scratch_dir s;
    size_t size;
    uint8_t* file;
    if (!scratch_open(&s)) return;
    file = pack_fixture(&s, glyd_tensor_fast, &size);
    if (file) CHECK(check_each_tensor_refused(file, size, s.path, GLYD_GPU_EMULATED) > 40);
    free(file);
    scratch_close(&s);
}

TEST(integrity_packs_without_stored_checksums_are_checked_by_decoding)
{
    static const glyd_tensorLayout kLayouts[] = { glyd_tensor_auto, glyd_tensor_fast };
    scratch_dir s;
    size_t k;
    if (!scratch_open(&s)) return;
    for (k = 0; k < 2; k++) {
        size_t size, oldSize = 0;
        uint8_t* const file = pack_fixture(&s, kLayouts[k], &size);
        uint8_t* const old = file ? without_stored_checksums(file, size, &oldSize) : NULL;
        tensor_place places[64];
        size_t i, n;
        CHECK(old != NULL);
        if (old) {
            n = index_places(old, oldSize, places, 64);
            for (i = 0; i < n; i++) CHECK(!places[i].hasStoredChecksum);
            /* undamaged, it opens as the new pack does */
            if (write_bytes(s.path, old, oldSize)) {
                char msg[512];
                size_t err;
                glyd_llm* const m = open_llm(s.path, 0, GLYD_GPU_NONE, 0, msg, sizeof msg, &err);
                CHECK(m != NULL);
                glyd_llmClose(m);
            }
            CHECK(check_each_tensor_refused(old, oldSize, s.path, GLYD_GPU_NONE) == n);
        }
        free(old);
        free(file);
    }
    scratch_close(&s);
}

/* Without the check, the same damage gives a model that opens and answers
 * differently: what the check is there to prevent. */
TEST(integrity_skipping_the_check_runs_damaged_weights)
{
    scratch_dir s;
    size_t size;
    uint8_t* file;
    tensor_place places[64];
    size_t n, i, target = 0;
    if (!scratch_open(&s)) return;
    file = pack_fixture(&s, glyd_tensor_fast, &size);
    if (!file) { scratch_close(&s); return; }
    n = index_places(file, size, places, 64);
    for (i = 0; i < n; i++)
        if (!strcmp(places[i].name, "model.layers.0.mlp.up_proj.weight")) target = i;
    CHECK(!strcmp(places[target].name, "model.layers.0.mlp.up_proj.weight"));
    {
        int const tokens[3] = { 1, 461, 401 };
        float clean[512], damaged[512];
        char msg[512];
        size_t err;
        glyd_llm* m = open_llm(s.path, 0, GLYD_GPU_NONE, 0, msg, sizeof msg, &err);
        CHECK(m != NULL);
        if (m) CHECK_OK(glyd_llmForward(m, tokens, 3, 0, clean, 0));
        glyd_llmClose(m);
        /* the last byte of the blob: escaped exponents or sign and
         * mantissa bits, which no structural check can tell from others */
        file[places[target].offset + places[target].stored - 1] ^= 0x01;
        if (write_bytes(s.path, file, size)) {
            m = open_llm(s.path, 0, GLYD_GPU_NONE, 0, msg, sizeof msg, &err);
            CHECK(m == NULL && strstr(msg, "model.layers.0.mlp.up_proj.weight") != NULL);
            glyd_llmClose(m);
            m = open_llm(s.path, 0, GLYD_GPU_NONE, 1, msg, sizeof msg, &err);
            CHECK(m != NULL);
            if (m) CHECK_OK(glyd_llmForward(m, tokens, 3, 0, damaged, 0));
            if (m) CHECK(memcmp(clean, damaged, sizeof clean) != 0);
            glyd_llmClose(m);
        }
    }
    free(file);
    scratch_close(&s);
}

/* The library's own check, as the bindings use it. */
TEST(integrity_verify_tensor_and_read_tensor)
{
    scratch_dir s;
    size_t size, err;
    uint8_t* file;
    glyd_model* model;
    if (!scratch_open(&s)) return;
    file = pack_fixture(&s, glyd_tensor_auto, &size);
    model = file ? glyd_modelOpenBytes(file, size, NULL, &err) : NULL;
    CHECK(model != NULL);
    if (model) {
        glyd_modelFileInfo fi;
        size_t f, t, checked = 0;
        for (f = 0; f < glyd_modelNbFiles(model); f++) {
            CHECK_OK(glyd_modelGetFile(model, f, &fi));
            for (t = 0; t < fi.nbTensors; t++) {
                glyd_modelTensorInfo ti;
                uint8_t* buf;
                CHECK_OK(glyd_modelGetTensor(model, f, t, &ti));
                CHECK(ti.hasStoredChecksum);
                CHECK_OK(glyd_modelVerifyTensor(model, f, t, 1));
                buf = (uint8_t*)malloc((size_t)ti.size + 1);
                if (buf) {
                    CHECK(glyd_modelReadTensor(model, f, t, buf, (size_t)ti.size, 1) == ti.size);
                    CHECK(XXH3_64bits(buf, (size_t)ti.size) == ti.checksum);
                }
                free(buf);
                checked++;
            }
        }
        CHECK(checked > 40);
        CHECK_ERR(glyd_modelVerifyTensor(model, 99, 0, 1), GLYD_error_parameter_outOfBound);
        glyd_modelClose(model);
    }
    if (file) {
        /* each tensor damaged in turn: both calls say so */
        tensor_place places[64];
        size_t const n = index_places(file, size, places, 64);
        size_t i, refused = 0;
        for (i = 0; i < n; i++) {
            file[places[i].offset + places[i].stored / 2] ^= 0x04;
            model = glyd_modelOpenBytes(file, size, NULL, &err);
            CHECK(model != NULL);
            if (model) {
                uint8_t* const buf = (uint8_t*)malloc(1 << 20);
                glyd_modelFileInfo fi;
                size_t f, t;
                for (f = 0; f < glyd_modelNbFiles(model); f++)
                    if (glyd_modelGetFile(model, f, &fi) == 0 && fi.isSafetensors) break;
                CHECK(f < glyd_modelNbFiles(model));
                for (t = 0; f < glyd_modelNbFiles(model) && t < fi.nbTensors; t++) {
                    glyd_modelTensorInfo ti;
                    int const hit = glyd_modelGetTensor(model, f, t, &ti) == 0 && !strcmp(ti.name, places[i].name);
                    size_t const v = glyd_modelVerifyTensor(model, f, t, 1);
                    size_t const rd = buf ? glyd_modelReadTensor(model, f, t, buf, 1 << 20, 1) : 0;
                    CHECK(hit ? glyd_getErrorCode(v) == GLYD_error_checksum_wrong : !glyd_isError(v));
                    CHECK(hit ? glyd_isError(rd) : !glyd_isError(rd));
                    refused += hit && glyd_isError(v) && glyd_isError(rd);
                }
                free(buf);
                glyd_modelClose(model);
            }
            file[places[i].offset + places[i].stored / 2] ^= 0x04;
        }
        CHECK(refused == n);
    }
    free(file);
    scratch_close(&s);
}

/* A stored checksum that is there but malformed makes the index invalid. */
TEST(integrity_malformed_stored_checksum_is_refused)
{
    scratch_dir s;
    size_t size, err;
    uint8_t* file;
    if (!scratch_open(&s)) return;
    file = pack_fixture(&s, glyd_tensor_auto, &size);
    if (file) {
        uint64_t const at = glyd_read64(file + size - 32), len = glyd_read64(file + size - 24);
        char* const key = (char*)memmem(file + at, (size_t)len, "\"storedXxh3\":\"", 14);
        glyd_model* m;
        CHECK(key != NULL);
        if (key) {
            key[14] = 'g'; /* not a hex digit */
            glyd_write64(file + size - 16, XXH3_64bits(file + at, (size_t)len));
            m = glyd_modelOpenBytes(file, size, NULL, &err);
            CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_pack_invalid);
            glyd_modelClose(m);
        }
    }
    free(file);
    scratch_close(&s);
}

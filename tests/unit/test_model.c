/* SPDX-License-Identifier: BSD-3-Clause */
/* test_model.c: safetensors reading and writing, sharding indexes, and
 * packed models: packing, extraction, hostile files. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../llm/model/model.h"
#include "harness.h"

static char* fixture_path(const char* name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../fixtures/stories260K/%s", corpus_dir(), name);
    return path;
}

/* A safetensors file from a header text and n data bytes. */
static uint8_t* make_st(const char* json, size_t dataBytes, size_t* size)
{
    size_t const h = strlen(json);
    uint8_t* const f = (uint8_t*)calloc(1, 8 + h + dataBytes + 1);
    glyd_write64(f, h);
    memcpy(f + 8, json, h);
    *size = 8 + h + dataBytes;
    return f;
}

static int st_ok(const char* json, size_t dataBytes)
{
    size_t size;
    uint8_t* const f = make_st(json, dataBytes, &size);
    glyd_safetensors st;
    const char* why = NULL;
    size_t const r = glyd_stParse(&st, f, size, &why);
    if (!glyd_isError(r)) glyd_stFree(&st);
    free(f);
    return !glyd_isError(r);
}

TEST(safetensors_fixture_parses)
{
    size_t size;
    uint8_t* const f = read_file(fixture_path("model.safetensors"), &size);
    glyd_safetensors st;
    const char* why = NULL;
    size_t i;
    if (!f) return;
    CHECK_OK(glyd_stParse(&st, f, size, &why));
    CHECK(st.nbTensors == 47);
    CHECK(strcmp(st.tensors[0].name, "model.embed_tokens.weight") == 0);
    CHECK(st.tensors[0].dtype == GLYD_ST_BF16 && st.tensors[0].ndim == 2 && st.tensors[0].shape[0] == 512);
    for (i = 1; i < st.nbTensors; i++) CHECK(st.tensors[i].begin == st.tensors[i - 1].end);
    CHECK(st.dataStart + st.tensors[st.nbTensors - 1].end == size);
    glyd_stFree(&st);
    free(f);
}

TEST(safetensors_strict_header_checks)
{
    /* valid */
    CHECK(st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8));
    CHECK(st_ok("{\"__metadata__\":{\"k\":\"v\"},\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}  ", 8));
    CHECK(st_ok("{\"e\":{\"dtype\":\"F16\",\"shape\":[0,4],\"data_offsets\":[0,0]},"
                "\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1));
    CHECK(st_ok("{}", 0));
    /* invalid: each one fails */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8));    /* bad JSON */
    CHECK(!st_ok("[1,2]", 0));                                                            /* not an object */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8));   /* dtype */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8));   /* shape */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8));  /* past the end */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 9));   /* trailing byte */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12)); /* gap */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12));    /* overlap */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16));    /* duplicate */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8));  /* negative */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8));     /* arity */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8)); /* extra key */
    CHECK(!st_ok("{\"__metadata__\":{\"k\":1}}", 0));                                       /* metadata */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8));   /* reversed */
    CHECK(!st_ok("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", 8));
    {
        /* header sizes beyond the file or the limit */
        uint8_t f[16];
        glyd_safetensors st;
        const char* why = NULL;
        glyd_write64(f, 100);
        memcpy(f + 8, "{}      ", 8);
        CHECK_ERR(glyd_stParse(&st, f, 16, &why), GLYD_error_safetensors_invalid);
        CHECK(why && strstr(why, "past the end"));
        glyd_write64(f, (uint64_t)1 << 40);
        CHECK_ERR(glyd_stParse(&st, f, 16, &why), GLYD_error_safetensors_invalid);
        CHECK(why && strstr(why, "100 MiB"));
        CHECK_ERR(glyd_stParse(&st, f, 5, &why), GLYD_error_safetensors_invalid);
    }
}

TEST(safetensors_writer_round_trips)
{
    glyd_stTensor ts[3];
    uint8_t* header;
    size_t hsize, total, i;
    uint8_t* file;
    glyd_safetensors st;
    const char* why = NULL;
    memset(ts, 0, sizeof ts);
    ts[0].name = (char*)"w"; ts[0].dtype = GLYD_ST_BF16; ts[0].ndim = 2; ts[0].shape[0] = 3; ts[0].shape[1] = 5;
    ts[0].nbElements = 15;
    ts[1].name = (char*)"b"; ts[1].dtype = GLYD_ST_F32; ts[1].ndim = 1; ts[1].shape[0] = 3; ts[1].nbElements = 3;
    ts[2].name = (char*)"i"; ts[2].dtype = GLYD_ST_I64; ts[2].ndim = 0; ts[2].nbElements = 1;
    CHECK_OK(glyd_stWriteHeader(&header, &hsize, ts, 3, "{\"format\": \"pt\"}"));
    CHECK(hsize % 8 == 0);
    total = hsize + 30 + 12 + 8;
    file = (uint8_t*)calloc(1, total);
    memcpy(file, header, hsize);
    CHECK_OK(glyd_stParse(&st, file, total, &why));
    CHECK(st.nbTensors == 3);
    for (i = 0; i < st.nbTensors; i++) {
        if (!strcmp(st.tensors[i].name, "w")) CHECK(st.tensors[i].begin == 0 && st.tensors[i].end == 30);
        if (!strcmp(st.tensors[i].name, "i")) CHECK(st.tensors[i].end - st.tensors[i].begin == 8);
    }
    glyd_stFree(&st);
    CHECK_ERR(glyd_stWriteHeader(&header, &hsize, ts, 3, "[1]"), GLYD_error_parameter_outOfBound);
    free(header);
    free(file);
}

TEST(hf_config_shard_index)
{
    glyd_shardIndex x;
    const char* why = NULL;
    static const char idx[] = "{\"metadata\": {\"total_size\": 10}, \"weight_map\": {\"a\": \"m-1.safetensors\", "
                              "\"b\": \"m-2.safetensors\"}}";
    CHECK_OK(glyd_shardIndexParse(&x, idx, sizeof idx - 1, &why));
    CHECK(x.nbEntries == 2);
    CHECK(strcmp(glyd_shardIndexFind(&x, "b"), "m-2.safetensors") == 0);
    CHECK(glyd_shardIndexFind(&x, "c") == NULL);
    glyd_shardIndexFree(&x);
    CHECK(glyd_isError(glyd_shardIndexParse(&x, "{}", 2, &why)));
}

/* A temporary folder for packs. */
static char* temp_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/glyd-test-XXXXXX");
    return mkdtemp(dir);
}

static void write_file(const char* path, const void* data, size_t n)
{
    FILE* const f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

static void write_text(const char* path, const char* text) { write_file(path, text, strlen(text)); }

typedef struct { const uint8_t* expect; size_t size, pos; int same; } cmp_state;
static size_t cmp_write(void* opaque, const void* data, size_t n)
{
    cmp_state* const c = (cmp_state*)opaque;
    if (c->pos + n > c->size || memcmp(c->expect + c->pos, data, n) != 0) c->same = 0;
    c->pos += n;
    return 0;
}

TEST(pack_fixture_extract_and_read)
{
    char* const dir = temp_dir();
    char out[256], msg[256] = "";
    glyd_packParams p;
    glyd_model* m;
    size_t err, i, nb, size;
    uint8_t* const st = read_file(fixture_path("model.safetensors"), &size);
    if (!dir || !st) { free(st); return; }
    snprintf(out, sizeof out, "%s/m.glyd", dir);
    memset(&p, 0, sizeof p);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    p.nbThreads = 2;
    CHECK_OK(glyd_packModel(fixture_path(""), out, &p));
    CHECK(glyd_isPackedModel(out));
    m = glyd_modelOpen(out, &p, &err);
    CHECK(m != NULL);
    if (!m) { free(st); return; }
    nb = glyd_modelNbFiles(m);
    CHECK(nb == 5);
    for (i = 0; i < nb; i++) {
        glyd_modelFileInfo fi;
        char src[1024];
        size_t n;
        uint8_t* orig;
        cmp_state c;
        CHECK_OK(glyd_modelGetFile(m, i, &fi));
        snprintf(src, sizeof src, "%s", fixture_path(fi.path));
        orig = read_file(src, &n);
        c.expect = orig; c.size = n; c.pos = 0; c.same = 1;
        CHECK(glyd_modelExtractFile(m, i, cmp_write, &c, 1) == n);
        CHECK(c.same && c.pos == n);
        if (fi.isSafetensors) {
            size_t t;
            CHECK(fi.nbTensors == 47);
            for (t = 0; t < fi.nbTensors; t++) {
                glyd_modelTensorInfo ti;
                uint8_t buf[70000];
                CHECK_OK(glyd_modelGetTensor(m, i, t, &ti));
                CHECK(glyd_modelReadTensor(m, i, t, buf, sizeof buf, 1) == ti.size);
                CHECK(memcmp(buf, st + ti.offset, (size_t)ti.size) == 0);
            }
            CHECK(glyd_modelGetTensor(m, i, fi.nbTensors, NULL) != 0 && glyd_isError(glyd_modelGetTensor(m, i, fi.nbTensors, NULL)));
        }
        free(orig);
    }
    glyd_modelClose(m);
    unlink(out);
    rmdir(dir);
    free(st);
}

TEST(pack_checks_shards_and_inputs)
{
    char* const dir = temp_dir();
    char path[512], out[512], msg[256];
    glyd_packParams p;
    glyd_stTensor ts[2];
    uint8_t* header;
    size_t hsize, r;
    uint8_t data[64];
    if (!dir) return;
    memset(data, 0x3C, sizeof data);
    memset(&p, 0, sizeof p);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    memset(ts, 0, sizeof ts);
    ts[0].name = (char*)"x"; ts[0].dtype = GLYD_ST_BF16; ts[0].ndim = 1; ts[0].shape[0] = 16; ts[0].nbElements = 16;
    glyd_stWriteHeader(&header, &hsize, ts, 1, NULL);
    snprintf(path, sizeof path, "%s/m-1.safetensors", dir);
    {
        FILE* const f = fopen(path, "wb");
        fwrite(header, 1, hsize, f);
        fwrite(data, 1, 32, f);
        fclose(f);
    }
    snprintf(out, sizeof out, "%s.glyd", dir);
    /* an index naming a tensor its shard lacks */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_text(path, "{\"weight_map\": {\"x\": \"m-1.safetensors\", \"y\": \"m-1.safetensors\"}}");
    msg[0] = 0;
    r = glyd_packModel(dir, out, &p);
    CHECK_ERR(r, GLYD_error_safetensors_invalid);
    CHECK(strstr(msg, "tensor y is not in m-1.safetensors") != NULL);
    /* a consistent one */
    write_text(path, "{\"weight_map\": {\"x\": \"m-1.safetensors\"}}");
    CHECK_OK(glyd_packModel(dir, out, &p));
    unlink(path);
    /* a broken safetensors file is refused, with the reason */
    snprintf(path, sizeof path, "%s/m-1.safetensors", dir);
    write_file(path, "\x0f\0\0\0\0\0\0\0{\"x\": 1}       ", 23); /* x is no tensor */
    msg[0] = 0;
    CHECK_ERR(glyd_packModel(dir, out, &p), GLYD_error_safetensors_invalid);
    CHECK(strstr(msg, "m-1.safetensors") != NULL);
    unlink(path);
    CHECK_ERR(glyd_packModel("/nonexistent/model", out, &p), GLYD_error_io_failed);
    CHECK_ERR(glyd_packModel(dir, out, &p), GLYD_error_io_failed); /* no files left */
    unlink(out);
    rmdir(dir);
    free(header);
}

/* A packed file made of a body and an index text (a valid trailer). */
static uint8_t* craft_pack(const char* index, const uint8_t* body, size_t bodySize, size_t* size)
{
    size_t const n = strlen(index);
    size_t const total = GLYD_PACK_HEADER + bodySize + n + GLYD_PACK_TRAILER;
    uint8_t* const b = (uint8_t*)calloc(1, total);
    memcpy(b, GLYD_PACK_MAGIC, 8);
    glyd_write32(b + 8, GLYD_PACK_VERSION);
    if (bodySize) memcpy(b + GLYD_PACK_HEADER, body, bodySize);
    memcpy(b + GLYD_PACK_HEADER + bodySize, index, n);
    glyd_write64(b + total - 32, GLYD_PACK_HEADER + bodySize);
    glyd_write64(b + total - 24, n);
    glyd_write64(b + total - 16, XXH3_64bits(index, n));
    memcpy(b + total - 8, GLYD_PACK_MAGIC, 8);
    *size = total;
    return b;
}

static int pack_opens(const char* index)
{
    size_t size, err;
    uint8_t* const b = craft_pack(index, (const uint8_t*)"0123456789", 10, &size);
    glyd_model* const m = glyd_modelOpenBytes(b, size, NULL, &err);
    int const ok = m != NULL;
    glyd_modelClose(m);
    free(b);
    return ok;
}

TEST(packed_index_is_checked)
{
#define HEAD "{\"format\":\"glyd-packed-model\",\"version\":1,\"files\":["
    CHECK(pack_opens(HEAD "{\"path\":\"a.txt\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                     "\"offset\":64,\"stored\":10,\"codec\":\"raw\"}]}"));
    CHECK(!pack_opens(HEAD "{\"path\":\"../evil\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                      "\"offset\":64,\"stored\":10,\"codec\":\"raw\"}]}"));
    CHECK(!pack_opens(HEAD "{\"path\":\"/etc/x\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                      "\"offset\":64,\"stored\":10,\"codec\":\"raw\"}]}"));
    CHECK(!pack_opens(HEAD "{\"path\":\"a/./b\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                      "\"offset\":64,\"stored\":10,\"codec\":\"raw\"}]}"));
    CHECK(!pack_opens(HEAD "{\"path\":\"a.txt\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                      "\"offset\":64,\"stored\":11,\"codec\":\"raw\"}]}"));                      /* past the body */
    CHECK(!pack_opens(HEAD "{\"path\":\"a.txt\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                      "\"offset\":60,\"stored\":10,\"codec\":\"raw\"}]}"));                      /* before it */
    CHECK(!pack_opens(HEAD "{\"path\":\"a.txt\",\"type\":\"file\",\"size\":10,\"xxh3\":\"00\","
                      "\"offset\":64,\"stored\":10,\"codec\":\"raw\"}]}"));                      /* checksum */
    CHECK(!pack_opens(HEAD "{\"path\":\"a\",\"type\":\"file\",\"size\":10,\"xxh3\":\"0000000000000000\","
                      "\"offset\":64,\"stored\":10,\"codec\":\"raw\"},{\"path\":\"a\",\"type\":\"file\",\"size\":10,"
                      "\"xxh3\":\"0000000000000000\",\"offset\":64,\"stored\":10,\"codec\":\"raw\"}]}"));  /* twice */
    CHECK(!pack_opens(HEAD "{\"path\":\"m.safetensors\",\"type\":\"safetensors\",\"size\":18,"
                      "\"xxh3\":\"0000000000000000\",\"header\":{\"offset\":64,\"stored\":8,\"size\":8,\"codec\":\"raw\"},"
                      "\"tensors\":[{\"name\":\"t\",\"dtype\":\"BF16\",\"shape\":[4],\"begin\":0,\"end\":10,"
                      "\"offset\":64,\"stored\":10,\"xxh3\":\"0000000000000000\",\"codec\":\"raw\"}]}]}"));  /* shape */
    CHECK(!pack_opens("{\"format\":\"other\",\"version\":1,\"files\":[]}"));
    CHECK(!pack_opens("{\"format\":\"glyd-packed-model\",\"version\":2,\"files\":[]}"));
    CHECK(!pack_opens("not json"));
#undef HEAD
}

TEST(damaged_packed_files_fail_cleanly)
{
    char* const dir = temp_dir();
    char out[256];
    glyd_mappedFile mf;
    size_t i, err, origSize;
    test_rng r = { 8 };
    int ok = 1, caught = 0, tries = 0;
    uint8_t* orig;
    if (!dir) return;
    snprintf(out, sizeof out, "%s/m.glyd", dir);
    orig = read_file(fixture_path("model.safetensors"), &origSize);
    if (!orig) return;
    CHECK_OK(glyd_packModel(fixture_path("model.safetensors"), out, NULL));
    CHECK_OK(glyd_mapFile(&mf, out));
    for (i = 0; i < 3000; i++) {
        uint8_t* const copy = (uint8_t*)malloc(mf.size);
        size_t const at = (size_t)(rng_next(&r) % mf.size);
        size_t const cut = (i % 3 == 0) ? (size_t)(rng_next(&r) % mf.size) : mf.size;
        glyd_model* m;
        memcpy(copy, mf.data, mf.size);
        copy[at] ^= (uint8_t)(1 + rng_next(&r) % 255);
        m = glyd_modelOpenBytes(copy, cut, NULL, &err);
        tries++;
        if (!m) {
            caught++;
        } else {
            /* an error, or (damage in padding) exactly the original */
            cmp_state c;
            size_t x;
            c.expect = orig; c.size = origSize; c.pos = 0; c.same = 1;
            x = glyd_modelExtractFile(m, 0, cmp_write, &c, 1);
            if (glyd_isError(x)) caught++;
            else if (!c.same || x != origSize) ok = 0;
            glyd_modelClose(m);
        }
        free(copy);
    }
    CHECK(ok);
    CHECK(caught > tries * 9 / 10);
    glyd_unmapFile(&mf);
    unlink(out);
    rmdir(dir);
    free(orig);
}

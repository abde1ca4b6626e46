/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pack_read.c: opening a packed model and decoding its files and tensors.
 * The index is checked whole before anything is used: blob ranges inside
 * the file, safe relative paths, tensor ranges that tile each safetensors
 * file exactly. Extraction verifies every checksum on the way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "model.h"

enum { CODEC_RAW = 0, CODEC_FRAME = 1, CODEC_TENSOR = 2 };
static const char* const kCodecNames[] = { "raw", "frame", "tensor" };

typedef struct {
    char* name;
    glyd_stDtype dtype;
    unsigned ndim;
    uint64_t shape[GLYD_ST_MAX_DIMS];
    uint64_t nbElements, begin, end;
    uint64_t offset, stored, checksum;
    uint64_t storedChecksum;   /* of the blob's bytes, where hasStoredChecksum */
    int hasStoredChecksum;
    int codec;
} model_tensor;

typedef struct {
    char* path;
    uint64_t size, checksum;
    int isSafetensors;
    uint64_t offset, stored, headerSize; /* the file's blob, or its header's */
    int codec;
    model_tensor* tensors;
    size_t nbTensors;
    uint64_t packed;
} model_file;

struct glyd_model_s {
    glyd_mappedFile map;       /* when the model owns its file's mapping */
    const uint8_t* data;       /* the packed file's bytes */
    size_t size;
    uint64_t indexOffset;
    model_file* files;
    size_t nbFiles;
};

void glyd_modelRelease(const glyd_model* model, const void* p, size_t n) { glyd_mappedRelease(&model->map, p, n); }

unsigned glyd_isPackedModel(const char* path)
{
    char magic[8];
    int const fd = open(path, O_RDONLY);
    ssize_t n;
    if (fd < 0) return 0;
    n = read(fd, magic, 8);
    close(fd);
    return n == 8 && memcmp(magic, GLYD_PACK_MAGIC, 8) == 0;
}

static void free_model(glyd_model* m)
{
    size_t i, t;
    if (!m) return;
    for (i = 0; i < m->nbFiles; i++) {
        for (t = 0; t < m->files[i].nbTensors; t++) free(m->files[i].tensors[t].name);
        free(m->files[i].tensors);
        free(m->files[i].path);
    }
    free(m->files);
    if (m->map.data) glyd_unmapFile(&m->map);
    free(m);
}

void glyd_modelClose(glyd_model* model) { free_model(model); }

/* ------------------------------------------------------------------------ */
/* Index                                                                    */
/* ------------------------------------------------------------------------ */

static int get_uint(const json_t* o, const char* key, uint64_t* v)
{
    const json_t* const j = json_object_get(o, key);
    if (!json_is_integer(j) || json_integer_value(j) < 0) return 0;
    *v = (uint64_t)json_integer_value(j);
    return 1;
}

static int get_hex64(const json_t* o, const char* key, uint64_t* v)
{
    const char* const s = json_string_value(json_object_get(o, key));
    char* end;
    if (!s || strlen(s) != 16) return 0;
    *v = strtoull(s, &end, 16);
    return *end == 0;
}

/* An optional checksum: absent (0, *has = 0), or valid (1); -1 if malformed. */
static int get_optional_hex64(const json_t* o, const char* key, uint64_t* v, int* has)
{
    *has = 0;
    if (!json_object_get(o, key)) return 0;
    if (!get_hex64(o, key, v)) return -1;
    *has = 1;
    return 1;
}

static int get_codec(const json_t* o, int* codec)
{
    const char* const s = json_string_value(json_object_get(o, "codec"));
    int i;
    for (i = 0; s && i < 3; i++)
        if (strcmp(s, kCodecNames[i]) == 0) { *codec = i; return 1; }
    return 0;
}

/* A path that stays inside the folder it is unpacked to. */
static int safe_path(const char* p)
{
    const char* c = p;
    if (!p[0] || p[0] == '/') return 0;
    while (*c) {
        const char* const slash = strchr(c, '/');
        size_t const len = slash ? (size_t)(slash - c) : strlen(c);
        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.')) return 0;
        if (!slash) break;
        c = slash + 1;
    }
    return strchr(p, '\\') == NULL;
}

/* A blob's range inside the body (between the header and the index). */
static int blob_ok(const glyd_model* m, uint64_t offset, uint64_t stored)
{
    return offset >= GLYD_PACK_HEADER && offset <= m->indexOffset && stored <= m->indexOffset - offset;
}

#define BAD(msg) do { why = (msg); goto bad; } while (0)

static size_t parse_index(glyd_model* m, const char* text, size_t n, const glyd_packParams* p)
{
    json_error_t jerr;
    json_t* const root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &jerr);
    json_t* files;
    const char* why = NULL;
    size_t i, j;
    if (!root) {
        glyd_packMessage(p, "packed model index: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        RETURN_ERROR(pack_invalid, "index JSON");
    }
    if (!json_is_object(root) || !json_is_string(json_object_get(root, "format")) ||
        strcmp(json_string_value(json_object_get(root, "format")), "glyd-packed-model") != 0)
        BAD("the index does not describe a packed model");
    {
        uint64_t version;
        if (!get_uint(root, "version", &version) || version != GLYD_PACK_VERSION) BAD("unsupported version");
    }
    files = json_object_get(root, "files");
    if (!json_is_array(files)) BAD("the index has no file list");
    m->files = (model_file*)calloc(json_array_size(files) + 1, sizeof(model_file));
    if (!m->files) BAD("out of memory");
    for (i = 0; i < json_array_size(files); i++) {
        json_t* const e = json_array_get(files, i);
        model_file* const f = &m->files[i];
        const char* const path = json_string_value(json_object_get(e, "path"));
        const char* const type = json_string_value(json_object_get(e, "type"));
        m->nbFiles = i + 1;
        if (!json_is_object(e) || !path || !type) BAD("a file entry lacks its path or type");
        if (!safe_path(path)) BAD("a file path leaves its folder");
        for (j = 0; j < i; j++)
            if (strcmp(m->files[j].path, path) == 0) BAD("a file path appears twice");
        f->path = strdup(path);
        if (!f->path) BAD("out of memory");
        if (!get_uint(e, "size", &f->size) || !get_hex64(e, "xxh3", &f->checksum))
            BAD("a file entry lacks its size or checksum");
        if (strcmp(type, "file") == 0) {
            if (!get_uint(e, "offset", &f->offset) || !get_uint(e, "stored", &f->stored) || !get_codec(e, &f->codec) ||
                f->codec == CODEC_TENSOR || !blob_ok(m, f->offset, f->stored) ||
                (f->codec == CODEC_RAW && f->stored != f->size))
                BAD("a file's blob is out of place");
            f->packed = f->stored;
        } else if (strcmp(type, "safetensors") == 0) {
            json_t* const h = json_object_get(e, "header");
            json_t* const ts = json_object_get(e, "tensors");
            uint64_t expect = 0;
            f->isSafetensors = 1;
            if (!json_is_object(h) || !get_uint(h, "offset", &f->offset) || !get_uint(h, "stored", &f->stored) ||
                !get_uint(h, "size", &f->headerSize) || !get_codec(h, &f->codec) || f->codec == CODEC_TENSOR ||
                !blob_ok(m, f->offset, f->stored) || f->headerSize < 8 || f->headerSize > f->size ||
                (f->codec == CODEC_RAW && f->stored != f->headerSize))
                BAD("a safetensors header blob is out of place");
            if (!json_is_array(ts)) BAD("a safetensors entry has no tensor list");
            f->tensors = (model_tensor*)calloc(json_array_size(ts) + 1, sizeof(model_tensor));
            if (!f->tensors) BAD("out of memory");
            f->packed = f->stored;
            for (j = 0; j < json_array_size(ts); j++) {
                json_t* const o = json_array_get(ts, j);
                model_tensor* const t = &f->tensors[j];
                const char* const name = json_string_value(json_object_get(o, "name"));
                const char* const dt = json_string_value(json_object_get(o, "dtype"));
                json_t* const shape = json_object_get(o, "shape");
                unsigned d, k;
                f->nbTensors = j + 1;
                if (!json_is_object(o) || !name || !dt || !json_is_array(shape) ||
                    json_array_size(shape) > GLYD_ST_MAX_DIMS)
                    BAD("a tensor entry is incomplete");
                t->name = strdup(name);
                if (!t->name) BAD("out of memory");
                for (k = 0; k < GLYD_ST_NB_DTYPES; k++)
                    if (strcmp(dt, glyd_stDtypeName((glyd_stDtype)k)) == 0) break;
                if (k == GLYD_ST_NB_DTYPES) BAD("a tensor has an unknown dtype");
                t->dtype = (glyd_stDtype)k;
                t->ndim = (unsigned)json_array_size(shape);
                t->nbElements = 1;
                for (d = 0; d < t->ndim; d++) {
                    json_t* const dim = json_array_get(shape, d);
                    if (!json_is_integer(dim) || json_integer_value(dim) < 0) BAD("a tensor has a bad shape");
                    t->shape[d] = (uint64_t)json_integer_value(dim);
                    if (t->shape[d] && t->nbElements > UINT64_MAX / t->shape[d]) BAD("a tensor's shape overflows");
                    t->nbElements *= t->shape[d];
                }
                if (!get_uint(o, "begin", &t->begin) || !get_uint(o, "end", &t->end) ||
                    !get_uint(o, "offset", &t->offset) || !get_uint(o, "stored", &t->stored) ||
                    !get_hex64(o, "xxh3", &t->checksum) || !get_codec(o, &t->codec) ||
                    get_optional_hex64(o, "storedXxh3", &t->storedChecksum, &t->hasStoredChecksum) < 0)
                    BAD("a tensor entry is incomplete");
                if (t->begin != expect || t->end < t->begin ||
                    t->nbElements > UINT64_MAX / glyd_stDtypeSize(t->dtype) ||
                    t->end - t->begin != t->nbElements * glyd_stDtypeSize(t->dtype))
                    BAD("tensor byte ranges do not tile the file");
                if (!blob_ok(m, t->offset, t->stored) ||
                    (t->codec == CODEC_TENSOR && !glyd_stTensorCodecDtype(t->dtype)) ||
                    (t->codec == CODEC_RAW && t->stored != t->end - t->begin))
                    BAD("a tensor's blob is out of place");
                expect = t->end;
                f->packed += t->stored;
            }
            if (f->headerSize + expect != f->size) BAD("a safetensors file's parts do not add up to its size");
        } else {
            BAD("a file entry has an unknown type");
        }
    }
    json_decref(root);
    return 0;
bad:
    json_decref(root);
    glyd_packMessage(p, "packed model index: %s", why);
    RETURN_ERROR(pack_invalid, why);
}

/* Checks the header, trailer and index of a packed file's bytes. */
static size_t open_bytes(glyd_model* m, const char* name, const glyd_packParams* params)
{
    const uint8_t* t;
    uint64_t indexSize;
    if (m->size < GLYD_PACK_HEADER + GLYD_PACK_TRAILER || memcmp(m->data, GLYD_PACK_MAGIC, 8) != 0 ||
        glyd_read32(m->data + 8) != GLYD_PACK_VERSION) {
        glyd_packMessage(params, "%s: not a packed model", name);
        RETURN_ERROR(pack_invalid, "magic");
    }
    t = m->data + m->size - GLYD_PACK_TRAILER;
    m->indexOffset = glyd_read64(t);
    indexSize = glyd_read64(t + 8);
    if (memcmp(t + 24, GLYD_PACK_MAGIC, 8) != 0 || m->indexOffset < GLYD_PACK_HEADER ||
        m->indexOffset > m->size - GLYD_PACK_TRAILER ||
        indexSize != m->size - GLYD_PACK_TRAILER - m->indexOffset) {
        glyd_packMessage(params, "%s: truncated or damaged packed model", name);
        RETURN_ERROR(pack_invalid, "trailer");
    }
    if (XXH3_64bits(m->data + m->indexOffset, (size_t)indexSize) != glyd_read64(t + 16)) {
        glyd_packMessage(params, "%s: the index is damaged (checksum)", name);
        RETURN_ERROR(checksum_wrong, "index");
    }
    return parse_index(m, (const char*)m->data + m->indexOffset, (size_t)indexSize, params);
}

glyd_model* glyd_modelOpenBytes(const void* data, size_t size, const glyd_packParams* params, size_t* error)
{
    glyd_model* const m = (glyd_model*)calloc(1, sizeof(glyd_model));
    if (!m) { *error = GLYD_ERROR(memory_allocation); return NULL; }
    m->data = (const uint8_t*)data;
    m->size = size;
    *error = open_bytes(m, "packed model", params);
    if (GLYD_IS_ERROR(*error)) {
        free_model(m);
        return NULL;
    }
    return m;
}

glyd_model* glyd_modelOpen(const char* path, const glyd_packParams* params, size_t* error)
{
    glyd_model* const m = (glyd_model*)calloc(1, sizeof(glyd_model));
    size_t r;
    if (!m) { *error = GLYD_ERROR(memory_allocation); return NULL; }
    r = glyd_mapFile(&m->map, path);
    if (GLYD_IS_ERROR(r)) {
        glyd_packMessage(params, "%s: %s", path, strerror(errno));
        free(m);
        *error = r;
        return NULL;
    }
    m->data = m->map.data;
    m->size = m->map.size;
    r = open_bytes(m, path, params);
    if (GLYD_IS_ERROR(r)) {
        free_model(m);
        *error = r;
        return NULL;
    }
    *error = 0;
    return m;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                  */
/* ------------------------------------------------------------------------ */

size_t glyd_modelNbFiles(const glyd_model* model) { return model->nbFiles; }
unsigned long long glyd_modelPackedSize(const glyd_model* model) { return model->size; }

size_t glyd_modelGetFile(const glyd_model* model, size_t file, glyd_modelFileInfo* info)
{
    const model_file* f;
    RETURN_ERROR_IF(file >= model->nbFiles, parameter_outOfBound, "file index");
    f = &model->files[file];
    info->path = f->path;
    info->size = f->size;
    info->packedSize = f->packed;
    info->checksum = f->checksum;
    info->isSafetensors = (unsigned)f->isSafetensors;
    info->nbTensors = f->nbTensors;
    return 0;
}

size_t glyd_modelGetTensor(const glyd_model* model, size_t file, size_t tensor, glyd_modelTensorInfo* info)
{
    const model_tensor* t;
    unsigned d;
    RETURN_ERROR_IF(file >= model->nbFiles || tensor >= model->files[file].nbTensors, parameter_outOfBound,
                    "tensor index");
    t = &model->files[file].tensors[tensor];
    memset(info, 0, sizeof(*info));
    info->name = t->name;
    info->dtype = glyd_stDtypeName(t->dtype);
    info->ndim = t->ndim;
    for (d = 0; d < t->ndim; d++) info->shape[d] = t->shape[d];
    info->nbElements = t->nbElements;
    info->size = t->end - t->begin;
    info->packedSize = t->stored;
    info->offset = model->files[file].headerSize + t->begin;
    info->codec = kCodecNames[t->codec];
    info->checksum = t->checksum;
    info->storedChecksum = t->storedChecksum;
    info->hasStoredChecksum = (unsigned)t->hasStoredChecksum;
    return 0;
}

int glyd_modelTensorStored(const glyd_model* model, size_t file, size_t tensor, const uint8_t** blob,
                           size_t* size)
{
    const model_tensor* t;
    if (file >= model->nbFiles || tensor >= model->files[file].nbTensors) return -1;
    t = &model->files[file].tensors[tensor];
    *blob = model->data + t->offset;
    *size = (size_t)t->stored;
    return t->codec;
}

/* Decodes a blob of codec `codec` holding `size` original bytes. */
static size_t decode_blob(const glyd_model* m, int codec, uint64_t offset, uint64_t stored, void* dst,
                          size_t size, unsigned nbThreads)
{
    const uint8_t* const src = m->data + offset;
    size_t r;
    switch (codec) {
    case CODEC_RAW:
        RETURN_ERROR_IF(stored != size, pack_invalid, "raw size");
        if (size) memcpy(dst, src, size);
        return size;
    case CODEC_FRAME:
        r = glyd_decompress(dst, size, src, (size_t)stored);
        FORWARD_IF_ERROR(r);
        RETURN_ERROR_IF(r != size, contentSize_wrong, "frame size");
        return size;
    default:
        r = glyd_tensorDecompress(dst, size, src, (size_t)stored, nbThreads);
        FORWARD_IF_ERROR(r);
        RETURN_ERROR_IF(r != size, contentSize_wrong, "tensor size");
        return size;
    }
}

size_t glyd_modelReadTensor(const glyd_model* model, size_t file, size_t tensor, void* dst,
                            size_t dstCapacity, unsigned nbThreads)
{
    const model_tensor* t;
    size_t size;
    RETURN_ERROR_IF(file >= model->nbFiles || tensor >= model->files[file].nbTensors, parameter_outOfBound,
                    "tensor index");
    t = &model->files[file].tensors[tensor];
    size = (size_t)(t->end - t->begin);
    RETURN_ERROR_IF(size > dstCapacity, dstSize_tooSmall, "tensor");
    if (t->codec == CODEC_TENSOR) {
        /* a blob checks its values against the checksum in its header, which
         * sits in the damageable bytes: that checksum must be the index's */
        glyd_tensorView v;
        FORWARD_IF_ERROR(glyd_tensorOpen(&v, model->data + t->offset, (size_t)t->stored));
        RETURN_ERROR_IF(v.checksum != t->checksum, checksum_wrong, "tensor checksum");
        FORWARD_IF_ERROR(decode_blob(model, t->codec, t->offset, t->stored, dst, size, nbThreads));
        return size;
    }
    /* raw bytes have no checksum of their own, a frame's is optional */
    FORWARD_IF_ERROR(decode_blob(model, t->codec, t->offset, t->stored, dst, size, nbThreads));
    RETURN_ERROR_IF(glyd_csumOnce(glyd_csum_xxh3, dst, size) != t->checksum, checksum_wrong, "tensor checksum");
    return size;
}

size_t glyd_modelVerifyTensor(const glyd_model* model, size_t file, size_t tensor, unsigned nbThreads)
{
    const model_tensor* t;
    RETURN_ERROR_IF(file >= model->nbFiles || tensor >= model->files[file].nbTensors, parameter_outOfBound,
                    "tensor index");
    t = &model->files[file].tensors[tensor];
    if (t->hasStoredChecksum || t->codec == CODEC_RAW) {
        /* raw bytes are the original ones: the index's checksum is theirs */
        uint64_t const expect = t->hasStoredChecksum ? t->storedChecksum : t->checksum;
        RETURN_ERROR_IF(glyd_csumOnce(glyd_csum_xxh3, model->data + t->offset, (size_t)t->stored) != expect,
                        checksum_wrong, "tensor checksum");
        return 0;
    }
    {   /* a pack without stored checksums: decoded, then checked */
        size_t const size = (size_t)(t->end - t->begin);
        void* const buf = malloc(size ? size : 1);
        size_t r;
        RETURN_ERROR_IF(!buf, memory_allocation, "tensor");
        r = glyd_modelReadTensor(model, file, tensor, buf, size, nbThreads);
        free(buf);
        FORWARD_IF_ERROR(r);
        return 0;
    }
}

/* Streams a frame blob through write, hashing what passes. */
static size_t stream_frame(const glyd_model* m, const model_file* f, glyd_writeFunction write, void* opaque,
                           XXH3_state_t* h)
{
    glyd_DCtx* const d = glyd_createDCtx();
    size_t const cap = 1u << 20;
    uint8_t* const buf = (uint8_t*)malloc(cap);
    glyd_inBuffer in = { m->data + f->offset, (size_t)f->stored, 0 };
    uint64_t total = 0;
    size_t r = 1;
    if (!d || !buf) { glyd_freeDCtx(d); free(buf); RETURN_ERROR(memory_allocation, "frame"); }
    while (in.pos < in.size || r != 0) {
        glyd_outBuffer out = { buf, cap, 0 };
        r = glyd_decompressStream(d, &out, &in);
        if (GLYD_IS_ERROR(r)) break;
        total += out.pos;
        if (total > f->size) { r = GLYD_ERROR(contentSize_wrong); break; }
        XXH3_64bits_update(h, buf, out.pos);
        if (out.pos) {
            size_t const w = write(opaque, buf, out.pos);
            if (GLYD_IS_ERROR(w)) { r = w; break; }
        }
        if (in.pos == in.size && out.pos < out.size && r != 0) { r = GLYD_ERROR(srcSize_truncated); break; }
    }
    glyd_freeDCtx(d);
    free(buf);
    FORWARD_IF_ERROR(r);
    RETURN_ERROR_IF(total != f->size, contentSize_wrong, "file size");
    return 0;
}

size_t glyd_modelExtractFile(const glyd_model* model, size_t file, glyd_writeFunction write, void* opaque,
                             unsigned nbThreads)
{
    const model_file* f;
    XXH3_state_t h;
    size_t t;
    RETURN_ERROR_IF(file >= model->nbFiles, parameter_outOfBound, "file index");
    f = &model->files[file];
    XXH3_64bits_reset(&h);
    if (!f->isSafetensors) {
        if (f->codec == CODEC_FRAME) {
            FORWARD_IF_ERROR(stream_frame(model, f, write, opaque, &h));
        } else {
            XXH3_64bits_update(&h, model->data + f->offset, (size_t)f->stored);
            if (f->stored) FORWARD_IF_ERROR(write(opaque, model->data + f->offset, (size_t)f->stored));
        }
    } else {
        /* the header, then each tensor in the order of its bytes */
        size_t maxSize = (size_t)f->headerSize;
        uint8_t* buf;
        size_t r = 0;
        for (t = 0; t < f->nbTensors; t++)
            if (f->tensors[t].end - f->tensors[t].begin > maxSize) maxSize = (size_t)(f->tensors[t].end - f->tensors[t].begin);
        buf = (uint8_t*)malloc(maxSize ? maxSize : 1);
        RETURN_ERROR_IF(!buf, memory_allocation, "tensor buffer");
        r = decode_blob(model, f->codec, f->offset, f->stored, buf, (size_t)f->headerSize, nbThreads);
        if (!GLYD_IS_ERROR(r)) {
            XXH3_64bits_update(&h, buf, (size_t)f->headerSize);
            r = write(opaque, buf, (size_t)f->headerSize);
        }
        for (t = 0; t < f->nbTensors && !GLYD_IS_ERROR(r); t++) {
            size_t const size = (size_t)(f->tensors[t].end - f->tensors[t].begin);
            r = glyd_modelReadTensor(model, file, t, buf, size, nbThreads);
            if (GLYD_IS_ERROR(r)) break;
            XXH3_64bits_update(&h, buf, size);
            if (size) r = write(opaque, buf, size);
        }
        free(buf);
        FORWARD_IF_ERROR(r);
    }
    RETURN_ERROR_IF(XXH3_64bits_digest(&h) != f->checksum, checksum_wrong, "file checksum");
    return (size_t)f->size;
}

typedef struct { char* data; size_t size, cap; } file_buf;

static size_t file_buf_write(void* opaque, const void* data, size_t size)
{
    file_buf* const b = (file_buf*)opaque;
    if (b->size + size + 1 > b->cap) {
        size_t const cap = (b->size + size + 1) * 2;
        char* const d = (char*)realloc(b->data, cap);
        RETURN_ERROR_IF(!d, memory_allocation, "file");
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->size, data, size);
    b->size += size;
    b->data[b->size] = 0;
    return 0;
}

size_t glyd_modelReadFile(const glyd_model* model, const char* path, char** data, size_t* size)
{
    size_t f;
    *data = NULL;
    *size = 0;
    for (f = 0; f < model->nbFiles; f++) {
        if (strcmp(model->files[f].path, path) == 0) {
            file_buf b = { NULL, 0, 0 };
            size_t const r = glyd_modelExtractFile(model, f, file_buf_write, &b, 1);
            if (glyd_isError(r)) { free(b.data); return r; }
            if (!b.data) b.data = (char*)calloc(1, 1);
            RETURN_ERROR_IF(!b.data, memory_allocation, "file");
            *data = b.data;
            *size = b.size;
            return 0;
        }
    }
    RETURN_ERROR(io_failed, "no such file in the packed model");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pack_write.c: glyd_packModel: a model folder into one packed file. Every
 * file becomes a blob at a 64-byte boundary: safetensors files as their
 * header plus one blob per tensor (the tensor codec for floating-point
 * dtypes), others as a frame of the general codec. A JSON index and a
 * trailer that locates it close the file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

void glyd_packMessage(const glyd_packParams* p, const char* fmt, ...)
{
    va_list ap;
    if (!p || !p->message || p->messageCapacity == 0) return;
    va_start(ap, fmt);
    vsnprintf(p->message, p->messageCapacity, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* The files of a folder                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    char** paths;   /* relative to the root */
    size_t count, cap;
} file_list;

static int list_add(file_list* l, const char* path)
{
    if (l->count == l->cap) {
        size_t const cap = l->cap ? 2 * l->cap : 64;
        char** const grown = (char**)realloc(l->paths, cap * sizeof(char*));
        if (!grown) return 0;
        l->paths = grown;
        l->cap = cap;
    }
    l->paths[l->count] = strdup(path);
    return l->paths[l->count++] != NULL;
}

static void list_free(file_list* l)
{
    size_t i;
    for (i = 0; i < l->count; i++) free(l->paths[i]);
    free(l->paths);
}

static int cmp_path(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* out = a/b (or a alone when b is empty); 0 if it does not fit. */
static int join_path(char* out, size_t cap, const char* a, const char* b)
{
    int const n = b[0] ? snprintf(out, cap, "%s/%s", a, b) : snprintf(out, cap, "%s", a);
    return n >= 0 && (size_t)n < cap;
}

/* Adds the regular files under root/rel (hidden folders such as .git and
 * .cache are not model files). Returns 0 or an error. */
static size_t walk(file_list* l, const char* root, const char* rel, int depth, const glyd_packParams* p)
{
    char dir[PATH_MAX];
    DIR* d;
    struct dirent* e;
    RETURN_ERROR_IF(!join_path(dir, sizeof dir, root, rel), io_failed, "path too long");
    RETURN_ERROR_IF(depth > 32, io_failed, "folders nested too deep");
    d = opendir(dir);
    if (!d) {
        glyd_packMessage(p, "%s: %s", dir, strerror(errno));
        RETURN_ERROR(io_failed, "opendir");
    }
    while ((e = readdir(d)) != NULL) {
        char full[PATH_MAX], sub[PATH_MAX];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (!(rel[0] ? join_path(sub, sizeof sub, rel, e->d_name) : join_path(sub, sizeof sub, e->d_name, "")) ||
            !join_path(full, sizeof full, root, sub)) {
            closedir(d);
            glyd_packMessage(p, "%s/%s: path too long", dir, e->d_name);
            RETURN_ERROR(io_failed, "path too long");
        }
        if (stat(full, &st) != 0) continue; /* a dangling link */
        if (S_ISDIR(st.st_mode)) {
            if (e->d_name[0] == '.') continue;
            {
                size_t const r = walk(l, root, sub, depth + 1, p);
                if (GLYD_IS_ERROR(r)) { closedir(d); return r; }
            }
        } else if (S_ISREG(st.st_mode)) {
            if (!list_add(l, sub)) { closedir(d); RETURN_ERROR(memory_allocation, "file list"); }
        }
    }
    closedir(d);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct {
    FILE* f;
    int writeErrno;        /* why a write to the output failed, or 0 */
    uint64_t pos;
    const glyd_packParams* p;
    unsigned long long done, total;
    uint8_t* buf;          /* compression output */
    size_t bufCap;
    glyd_CCtx* cctx;
} pack_writer;

static size_t put(pack_writer* w, const void* data, size_t n)
{
    if (n && fwrite(data, 1, n, w->f) != n) {
        w->writeErrno = errno;
        RETURN_ERROR(io_failed, "write");
    }
    w->pos += n;
    return 0;
}

static size_t align(pack_writer* w)
{
    static const uint8_t zeros[GLYD_PACK_ALIGN];
    size_t const pad = (size_t)((GLYD_PACK_ALIGN - w->pos % GLYD_PACK_ALIGN) % GLYD_PACK_ALIGN);
    return put(w, zeros, pad);
}

static size_t reserve(pack_writer* w, size_t need)
{
    if (w->bufCap >= need) return 0;
    free(w->buf);
    w->buf = (uint8_t*)malloc(need);
    w->bufCap = w->buf ? need : 0;
    RETURN_ERROR_IF(!w->buf, memory_allocation, "blob buffer");
    return 0;
}

static void progress(pack_writer* w, unsigned long long add)
{
    w->done += add;
    if (w->p && w->p->progress) w->p->progress(w->p->opaque, w->done, w->total);
}

static void hex64(char out[17], uint64_t v) { snprintf(out, 17, "%016llx", (unsigned long long)v); }

/* The checksum of a blob's bytes as they lie in the packed file, so that a
 * reader that uses the blob where it lies (an engine mapping the weights)
 * can check it without decoding it. */
static void put_stored_checksum(json_t* obj, const uint8_t* stored, size_t n)
{
    char hex[17];
    hex64(hex, XXH3_64bits(stored, n));
    json_object_set_new(obj, "storedXxh3", json_string(hex));
}

/* Writes bytes as a general-codec frame, or raw when that is no smaller.
 * Fills the blob's offset, size and codec into obj, and with stored checksum
 * 1 the checksum of the bytes as written. */
static size_t put_frame_blob(pack_writer* w, json_t* obj, const uint8_t* data, size_t n, int storedChecksum)
{
    size_t c;
    const char* codec = "frame";
    FORWARD_IF_ERROR(align(w));
    FORWARD_IF_ERROR(reserve(w, glyd_compressBound(n)));
    c = glyd_compress2(w->cctx, w->buf, w->bufCap, data, n);
    FORWARD_IF_ERROR(c);
    json_object_set_new(obj, "offset", json_integer((json_int_t)w->pos));
    if (c >= n) {
        codec = "raw";
        c = n;
        FORWARD_IF_ERROR(put(w, data, n));
        if (storedChecksum) put_stored_checksum(obj, data, n);
    } else {
        FORWARD_IF_ERROR(put(w, w->buf, c));
        if (storedChecksum) put_stored_checksum(obj, w->buf, c);
    }
    json_object_set_new(obj, "stored", json_integer((json_int_t)c));
    json_object_set_new(obj, "codec", json_string(codec));
    return 0;
}

static size_t pack_safetensors(pack_writer* w, json_t* entry, const glyd_safetensors* st)
{
    json_t* const tensors = json_array();
    json_t* const header = json_object();
    size_t i;
    char hex[17];
    json_object_set_new(entry, "type", json_string("safetensors"));
    json_object_set_new(entry, "header", header);
    json_object_set_new(entry, "tensors", tensors);
    FORWARD_IF_ERROR(put_frame_blob(w, header, st->base, st->dataStart, 0));
    json_object_set_new(header, "size", json_integer((json_int_t)st->dataStart));
    for (i = 0; i < st->nbTensors; i++) {
        const glyd_stTensor* const t = &st->tensors[i];
        json_t* const o = json_object();
        json_t* const shape = json_array();
        const uint8_t* const bytes = st->base + st->dataStart + t->begin;
        size_t const n = (size_t)(t->end - t->begin);
        unsigned const codecDtype = glyd_stTensorCodecDtype(t->dtype);
        unsigned d;
        json_array_append_new(tensors, o);
        json_object_set_new(o, "name", json_string(t->name));
        json_object_set_new(o, "dtype", json_string(glyd_stDtypeName(t->dtype)));
        for (d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        json_object_set_new(o, "shape", shape);
        json_object_set_new(o, "begin", json_integer((json_int_t)t->begin));
        json_object_set_new(o, "end", json_integer((json_int_t)t->end));
        hex64(hex, XXH3_64bits(bytes, n));
        json_object_set_new(o, "xxh3", json_string(hex));
        if (codecDtype && t->nbElements > 0) {
            /* rows of a matrix are its last dimension */
            size_t const row = t->ndim >= 2 ? (size_t)t->shape[t->ndim - 1] : 0;
            glyd_tensorLayout const layout = w->p ? w->p->layout : glyd_tensor_auto;
            size_t c;
            FORWARD_IF_ERROR(align(w));
            FORWARD_IF_ERROR(reserve(w, glyd_tensorCompressBound((size_t)t->nbElements, (glyd_dtype)codecDtype)));
            c = glyd_tensorCompress(w->buf, w->bufCap, bytes, (size_t)t->nbElements, (glyd_dtype)codecDtype,
                                    row, layout, w->p ? w->p->nbThreads : 1);
            FORWARD_IF_ERROR(c);
            json_object_set_new(o, "offset", json_integer((json_int_t)w->pos));
            json_object_set_new(o, "stored", json_integer((json_int_t)c));
            json_object_set_new(o, "codec", json_string("tensor"));
            put_stored_checksum(o, w->buf, c);
            FORWARD_IF_ERROR(put(w, w->buf, c));
        } else {
            FORWARD_IF_ERROR(put_frame_blob(w, o, bytes, n, 1));
        }
        progress(w, n);
    }
    return 0;
}

static size_t pack_file(pack_writer* w, json_t* files, const char* root, const char* rel, int single)
{
    char full[PATH_MAX], hex[17];
    glyd_mappedFile mf;
    glyd_safetensors st;
    json_t* const entry = json_object();
    size_t r;
    const char* why = NULL;
    size_t const len = strlen(rel);
    if (!join_path(full, sizeof full, root, single ? "" : rel)) {
        glyd_packMessage(w->p, "%s/%s: path too long", root, rel);
        RETURN_ERROR(io_failed, "path too long");
    }
    json_array_append_new(files, entry);
    json_object_set_new(entry, "path", json_string(rel));
    r = glyd_mapFile(&mf, full);
    if (GLYD_IS_ERROR(r)) {
        glyd_packMessage(w->p, "%s: cannot read: %s", full, strerror(errno));
        return r;
    }
    json_object_set_new(entry, "size", json_integer((json_int_t)mf.size));
    hex64(hex, XXH3_64bits(mf.data, mf.size));
    json_object_set_new(entry, "xxh3", json_string(hex));
    if (len > 12 && strcmp(rel + len - 12, ".safetensors") == 0) {
        r = glyd_stParse(&st, mf.data, mf.size, &why);
        if (GLYD_IS_ERROR(r)) {
            glyd_packMessage(w->p, "%s: not a valid safetensors file: %s", full, why);
        } else {
            r = pack_safetensors(w, entry, &st);
            progress(w, st.dataStart);
            glyd_stFree(&st);
        }
    } else {
        json_object_set_new(entry, "type", json_string("file"));
        r = put_frame_blob(w, entry, mf.data, mf.size, 0);
        progress(w, mf.size);
    }
    if (GLYD_IS_ERROR(r) && glyd_getErrorCode(r) == GLYD_error_io_failed)
        glyd_packMessage(w->p, "writing the packed model: %s", strerror(errno));
    glyd_unmapFile(&mf);
    return r;
}

/* A sharded model's index must agree with its shards: each tensor it names
 * lies in the shard it names, and each tensor of those shards is named. */
static size_t check_shard_index(const char* root, const char* rel, const glyd_packParams* p)
{
    char path[PATH_MAX], dir[PATH_MAX];
    glyd_mappedFile mf;
    glyd_shardIndex x;
    const char* why = NULL;
    const char* slash = strrchr(rel, '/');
    size_t i, r;
    snprintf(dir, sizeof dir, "%s%s%.*s", root, slash ? "/" : "", slash ? (int)(slash - rel) : 0, rel);
    if (!join_path(path, sizeof path, root, rel)) RETURN_ERROR(io_failed, "path too long");
    FORWARD_IF_ERROR(glyd_mapFile(&mf, path));
    r = glyd_shardIndexParse(&x, (const char*)mf.data, mf.size, &why);
    glyd_unmapFile(&mf);
    if (GLYD_IS_ERROR(r)) {
        glyd_packMessage(p, "%s: %s", path, why);
        RETURN_ERROR(safetensors_invalid, "index");
    }
    for (i = 0; i < x.nbEntries && !GLYD_IS_ERROR(r); i++) {
        /* each shard once: at the first tensor that names it */
        char shard[PATH_MAX];
        glyd_safetensors st;
        size_t j, k, named = 0;
        for (j = 0; j < i; j++)
            if (strcmp(x.files[j], x.files[i]) == 0) break;
        if (j < i) continue;
        if (!join_path(shard, sizeof shard, dir, x.files[i]) || GLYD_IS_ERROR(glyd_mapFile(&mf, shard))) {
            glyd_packMessage(p, "%s: names %s, which cannot be read", path, x.files[i]);
            r = GLYD_ERROR(safetensors_invalid);
            break;
        }
        r = glyd_stParse(&st, mf.data, mf.size, &why);
        if (GLYD_IS_ERROR(r)) {
            glyd_packMessage(p, "%s: not a valid safetensors file: %s", shard, why);
        } else {
            for (j = 0; j < x.nbEntries && !GLYD_IS_ERROR(r); j++) {
                if (strcmp(x.files[j], x.files[i]) != 0) continue;
                named++;
                for (k = 0; k < st.nbTensors; k++)
                    if (strcmp(st.tensors[k].name, x.names[j]) == 0) break;
                if (k == st.nbTensors) {
                    glyd_packMessage(p, "%s: tensor %s is not in %s", path, x.names[j], x.files[i]);
                    r = GLYD_ERROR(safetensors_invalid);
                }
            }
            if (!GLYD_IS_ERROR(r) && named != st.nbTensors) {
                glyd_packMessage(p, "%s: %s holds %zu tensors, the index names %zu", path, x.files[i],
                                 st.nbTensors, named);
                r = GLYD_ERROR(safetensors_invalid);
            }
            glyd_stFree(&st);
        }
        glyd_unmapFile(&mf);
    }
    glyd_shardIndexFree(&x);
    return GLYD_IS_ERROR(r) ? r : 0;
}

/* ------------------------------------------------------------------------ */
/* The output file                                                          */
/* ------------------------------------------------------------------------ */

/* The packed file reaches outPath by the rules the glyd command keeps for
 * every output: a regular file (or none yet) is written under the temporary
 * name ".NAME.PID.glydtmp" beside it (the name shortened to fit; the command
 * recognises such names as glyd's own), synced and renamed onto it; a device
 * or FIFO is written in place, never replaced; a symbolic link is written
 * through, and the file it names is the one replaced (a link to nothing is
 * refused: following it could create a file anywhere). */
typedef struct {
    char final[PATH_MAX];
    char temp[PATH_MAX];   /* empty when written in place */
} pack_output;

static size_t temp_name(char* out, size_t cap, const char* final)
{
    const char* const slash = strrchr(final, '/');
    size_t const dirLen = slash ? (size_t)(slash - final) + 1 : 0;
    const char* const base = final + dirLen;
    char tail[32];
    size_t keep = strlen(base);
    int n;
    snprintf(tail, sizeof tail, ".%ld.glydtmp", (long)getpid());
    RETURN_ERROR_IF(keep == 0, io_failed, "no file name");
    if (1 + keep + strlen(tail) > NAME_MAX) keep = NAME_MAX - 1 - strlen(tail);
    n = snprintf(out, cap, "%.*s.%.*s%s", (int)dirLen, final, (int)keep, base, tail);
    RETURN_ERROR_IF(n < 0 || (size_t)n >= cap, io_failed, "path too long");
    return 0;
}

/* Opens the output as the rules above say; *f receives the stream. */
static size_t open_output(pack_output* po, const char* outPath, FILE** f, const glyd_packParams* p)
{
    struct stat st;
    int fd;
    po->temp[0] = 0;
    if (!join_path(po->final, sizeof po->final, outPath, "")) {
        glyd_packMessage(p, "%s: path too long", outPath);
        RETURN_ERROR(io_failed, "path too long");
    }
    if (lstat(outPath, &st) == 0 && S_ISLNK(st.st_mode) && !realpath(outPath, po->final)) {
        if (errno == ENOENT)
            glyd_packMessage(p, "%s: a symbolic link to a missing file; not written through", outPath);
        else
            glyd_packMessage(p, "%s: %s", outPath, strerror(errno));
        RETURN_ERROR(io_failed, "symbolic link");
    }
    if (stat(po->final, &st) == 0 && S_ISDIR(st.st_mode)) {
        glyd_packMessage(p, "%s: is a directory", outPath);
        RETURN_ERROR(io_failed, "directory");
    }
    if (stat(po->final, &st) == 0 && !S_ISREG(st.st_mode)) {
        fd = open(po->final, O_WRONLY | O_CLOEXEC);
    } else {
        if (GLYD_IS_ERROR(temp_name(po->temp, sizeof po->temp, po->final))) {
            glyd_packMessage(p, "%s: path too long", outPath);
            RETURN_ERROR(io_failed, "path too long");
        }
        fd = open(po->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        /* only an earlier process with this process id left that name */
        if (fd < 0 && errno == EEXIST && unlink(po->temp) == 0)
            fd = open(po->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0 || !(*f = fdopen(fd, "wb"))) {
        glyd_packMessage(p, "%s: cannot create: %s", outPath, strerror(errno));
        if (fd >= 0) close(fd);
        if (po->temp[0]) unlink(po->temp);
        RETURN_ERROR(io_failed, "create");
    }
    return 0;
}

/* Makes the complete output durable and puts it in place; closes f. */
static size_t close_output(const pack_output* po, FILE* f, const char* outPath, const glyd_packParams* p)
{
    int fd;
    if (!po->temp[0]) {
        /* a device or FIFO: nothing to sync or rename */
        if (fflush(f) != 0 || fclose(f) != 0) {
            glyd_packMessage(p, "%s: write error: %s", outPath, strerror(errno));
            RETURN_ERROR(io_failed, "write");
        }
        return 0;
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        glyd_packMessage(p, "%s: write error: %s", outPath, strerror(errno));
        fclose(f);
        RETURN_ERROR(io_failed, "write");
    }
    {   /* created private; a new file normally honours the umask */
        mode_t const mask = umask(0);
        umask(mask);
        fchmod(fileno(f), 0666 & ~mask);
    }
    if (fclose(f) != 0) {
        glyd_packMessage(p, "%s: write error: %s", outPath, strerror(errno));
        RETURN_ERROR(io_failed, "close");
    }
    if (rename(po->temp, po->final) != 0) {
        glyd_packMessage(p, "%s: cannot rename: %s", outPath, strerror(errno));
        RETURN_ERROR(io_failed, "rename");
    }
    {   /* the rename itself on disk */
        char dir[PATH_MAX];
        const char* const slash = strrchr(po->final, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - po->final) + 1 : 1, slash ? po->final : ".");
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            glyd_packMessage(p, "%s: cannot sync its folder: %s", outPath, strerror(errno));
            if (fd >= 0) close(fd);
            RETURN_ERROR(io_failed, "sync");
        }
        close(fd);
    }
    return 0;
}

/* The same file, named two ways (the output may lie inside the folder). */
static int same_file(const char* a, const char* b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

size_t glyd_packModel(const char* modelDir, const char* outPath, const glyd_packParams* params)
{
    pack_writer w;
    file_list files;
    json_t* const index = json_object();
    json_t* const farr = json_array();
    pack_output po;
    struct stat st;
    size_t r = 0, i;
    int single;
    memset(&w, 0, sizeof w);
    memset(&files, 0, sizeof files);
    w.p = params;
    json_object_set_new(index, "format", json_string("glyd-packed-model"));
    json_object_set_new(index, "version", json_integer(GLYD_PACK_VERSION));
    json_object_set_new(index, "files", farr);

    if (stat(modelDir, &st) != 0) {
        glyd_packMessage(params, "%s: %s", modelDir, strerror(errno));
        json_decref(index);
        RETURN_ERROR(io_failed, "model folder");
    }
    single = S_ISREG(st.st_mode);
    if (single) {
        const char* const slash = strrchr(modelDir, '/');
        r = list_add(&files, slash ? slash + 1 : modelDir) ? 0 : GLYD_ERROR(memory_allocation);
    } else {
        r = walk(&files, modelDir, "", 0, params);
    }
    if (GLYD_IS_ERROR(r)) goto done;
    if (files.count) qsort(files.paths, files.count, sizeof(char*), cmp_path);
    for (i = 0; i < files.count; i++) {
        char full[PATH_MAX];
        if (!join_path(full, sizeof full, modelDir, single ? "" : files.paths[i])) continue;
        if (same_file(full, outPath)) {
            /* never pack the output into itself */
            free(files.paths[i]);
            memmove(files.paths + i, files.paths + i + 1, (files.count - i - 1) * sizeof(char*));
            files.count--;
            i--;
            continue;
        }
        if (stat(full, &st) == 0) w.total += (unsigned long long)st.st_size;
    }
    if (files.count == 0) {
        glyd_packMessage(params, "%s: no files to pack", modelDir);
        r = GLYD_ERROR(io_failed);
        goto done;
    }
    for (i = 0; i < files.count && !single; i++) {
        size_t const len = strlen(files.paths[i]);
        if (len >= 23 && strcmp(files.paths[i] + len - 23, ".safetensors.index.json") == 0) {
            r = check_shard_index(modelDir, files.paths[i], params);
            if (GLYD_IS_ERROR(r)) goto done;
        }
    }

    r = open_output(&po, outPath, &w.f, params);
    if (GLYD_IS_ERROR(r)) goto done;
    w.cctx = glyd_createCCtx();
    if (!w.cctx) {
        r = GLYD_ERROR(memory_allocation);
        goto fail;
    }
    glyd_CCtx_setParameter(w.cctx, glyd_c_compressionLevel, params && params->level ? params->level : 9);
    {
        uint8_t header[GLYD_PACK_HEADER];
        memset(header, 0, sizeof header);
        memcpy(header, GLYD_PACK_MAGIC, 8);
        glyd_write32(header + 8, GLYD_PACK_VERSION);
        r = put(&w, header, sizeof header);
        if (GLYD_IS_ERROR(r)) goto fail;
    }
    for (i = 0; i < files.count; i++) {
        r = pack_file(&w, farr, modelDir, files.paths[i], single);
        if (GLYD_IS_ERROR(r)) goto fail;
    }
    {
        /* index, then the trailer that finds it from the end */
        char* const text = json_dumps(index, JSON_COMPACT | JSON_PRESERVE_ORDER);
        uint8_t trailer[GLYD_PACK_TRAILER];
        size_t const n = text ? strlen(text) : 0;
        if (!text) { r = GLYD_ERROR(memory_allocation); goto fail; }
        r = align(&w);
        glyd_write64(trailer, w.pos);
        glyd_write64(trailer + 8, n);
        glyd_write64(trailer + 16, XXH3_64bits(text, n));
        memcpy(trailer + 24, GLYD_PACK_MAGIC, 8);
        if (!GLYD_IS_ERROR(r)) r = put(&w, text, n);
        if (!GLYD_IS_ERROR(r)) r = put(&w, trailer, sizeof trailer);
        free(text);
        if (GLYD_IS_ERROR(r)) goto fail;
    }
    r = close_output(&po, w.f, outPath, params);
    w.f = NULL;
    if (GLYD_IS_ERROR(r)) goto fail;
    r = (size_t)w.pos;
    goto done;

fail:
    if (w.f) fclose(w.f);
    if (po.temp[0]) unlink(po.temp);
    /* the output's name, rather than the file being packed when it failed */
    if (w.writeErrno) glyd_packMessage(params, "%s: write error: %s", outPath, strerror(w.writeErrno));
    if (params && params->message && !params->message[0])
        glyd_packMessage(params, "%s", glyd_getErrorName(r));
done:
    glyd_freeCCtx(w.cctx);
    free(w.buf);
    list_free(&files);
    json_decref(index);
    return r;
}

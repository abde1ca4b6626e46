/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * _glyd.c: the CPython extension under the glyd package. It binds glyd.h
 * (one-shot and streamed frames), glyd_tensor.h's tensor blobs and packed
 * models. Inputs are read through the buffer protocol without a copy, and
 * the GIL is released while the library works; the Python layer
 * (glyd/__init__.py) builds the user-facing API on these calls.
 */
#include "module.h"

#include <pythread.h>
#include <string.h>

PyObject* GlydError; /* glyd.Error */

/* Raises glyd.Error for the library result r, with its message (prefixed by
 * `what` where given) and its glyd_ErrorCode as .code. Returns NULL. */
PyObject* raise_code(size_t r, const char* what)
{
    PyObject *exc, *code;
    const char* const name = glyd_getErrorName(r);
    if (what && what[0]) exc = PyObject_CallFunction(GlydError, "s", what);
    else exc = PyObject_CallFunction(GlydError, "s", name);
    if (!exc) return NULL;
    code = PyLong_FromLong((long)glyd_getErrorCode(r));
    if (code) {
        PyObject_SetAttrString(exc, "code", code);
        Py_DECREF(code);
    }
    PyErr_SetObject(GlydError, exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject* raise_msg(glyd_ErrorCode code, const char* message)
{
    return raise_code((size_t)-(int)code, message);
}

/* Threads as Python callers count them (0: all cores, 1: the calling
 * thread) to the library's workers (0: the calling thread). */
int workers_of(int threads, int* workers)
{
    if (threads < 0 || threads > GLYD_THREADS_MAX) {
        PyErr_Format(PyExc_ValueError, "threads must be 0..%d", GLYD_THREADS_MAX);
        return -1;
    }
    if (threads == 0) {
        long n = 1;
#ifdef _SC_NPROCESSORS_ONLN
        n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
        threads = n < 1 ? 1 : n > GLYD_THREADS_MAX ? GLYD_THREADS_MAX : (int)n;
    }
    *workers = threads <= 1 ? 0 : threads;
    return 0;
}

/* A bytes object of `size` bytes to write into; shrunk by finish_bytes. */
static int finish_bytes(PyObject** out, size_t size)
{
    if ((size_t)PyBytes_GET_SIZE(*out) == size) return 0;
    return _PyBytes_Resize(out, (Py_ssize_t)size);
}

/* ------------------------------------------------------------------------ */
/* One-shot                                                                 */
/* ------------------------------------------------------------------------ */

static PyObject* py_compress(PyObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "data", "level", "threads", "records", NULL };
    Py_buffer in;
    int level = GLYD_LEVEL_DEFAULT, threads = 1, records = 0, workers;
    PyObject* out;
    size_t bound, r;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|ii$p:compress", kwlist, &in, &level, &threads, &records))
        return NULL;
    if (workers_of(threads, &workers)) goto fail;
    bound = glyd_compressBound((size_t)in.len);
    if (glyd_isError(bound)) { raise_code(bound, NULL); goto fail; }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound);
    if (!out) goto fail;
    if (workers == 0 && !records) {
        Py_BEGIN_ALLOW_THREADS
        r = glyd_compress(PyBytes_AS_STRING(out), bound, in.buf, (size_t)in.len, level);
        Py_END_ALLOW_THREADS
    } else {
        Py_BEGIN_ALLOW_THREADS
        glyd_CCtx* const cctx = glyd_createCCtx();
        r = (size_t)-(int)GLYD_error_memory_allocation;
        if (cctx) {
            r = glyd_CCtx_setParameter(cctx, glyd_c_compressionLevel, level);
            if (!glyd_isError(r)) r = glyd_CCtx_setParameter(cctx, glyd_c_nbWorkers, workers);
            if (!glyd_isError(r)) r = glyd_CCtx_setParameter(cctx, glyd_c_records, records);
            if (!glyd_isError(r)) r = glyd_compress2(cctx, PyBytes_AS_STRING(out), bound, in.buf, (size_t)in.len);
            glyd_freeCCtx(cctx);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&in);
    if (glyd_isError(r)) {
        Py_DECREF(out);
        return raise_code(r, NULL);
    }
    if (finish_bytes(&out, r)) return NULL;
    return out;
fail:
    PyBuffer_Release(&in);
    return NULL;
}

/* Calls glyd_decompressStream until a frame ends (0), an error, a full
 * output, or a call that makes no progress (more input is needed). Runs
 * without the GIL. */
static size_t stream_steps(glyd_DCtx* dctx, glyd_outBuffer* ob, glyd_inBuffer* ib)
{
    for (;;) {
        size_t const inBefore = ib->pos, outBefore = ob->pos;
        size_t const r = glyd_decompressStream(dctx, ob, ib);
        if (glyd_isError(r) || r == 0 || ob->pos == ob->size) return r;
        if (ib->pos == inBefore && ob->pos == outBefore) return r;
    }
}

/* Decodes src by streaming into a growing bytes object: for frames that do
 * not declare their size, or declare one too large to trust before the
 * data shows it. limit: 0 for none. */
static PyObject* decompress_streamed(const Py_buffer* in, size_t limit, int workers)
{
    glyd_DCtx* dctx;
    size_t cap = (size_t)in->len * 4 + 65536, r = 0, err = 0;
    glyd_inBuffer ib = { in->buf, (size_t)in->len, 0 };
    glyd_outBuffer ob;
    PyObject* out;
    int overflow = 0;
    if (limit && cap > limit) cap = limit;
    dctx = glyd_createDCtx();
    if (!dctx) return PyErr_NoMemory();
    if (workers) glyd_DCtx_setParameter(dctx, glyd_d_nbWorkers, workers);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (!out) { glyd_freeDCtx(dctx); return NULL; }
    ob.dst = PyBytes_AS_STRING(out);
    ob.size = cap;
    ob.pos = 0;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        do {
            r = stream_steps(dctx, &ob, &ib);
        } while (r == 0 && ib.pos < ib.size && ob.pos < ob.size); /* the next frame */
        Py_END_ALLOW_THREADS
        if (glyd_isError(r)) { err = r; break; }
        if (ob.pos < ob.size) break; /* all input consumed, all output flushed */
        if (r == 0 && ib.pos == ib.size) break; /* the last frame ended just as the output filled */
        /* the output is full: there may be more */
        if (limit && ob.size >= limit) {
            /* one more byte tells whether the content goes beyond the limit */
            char probe;
            glyd_outBuffer pb = { &probe, 1, 0 };
            Py_BEGIN_ALLOW_THREADS
            do {
                r = stream_steps(dctx, &pb, &ib);
            } while (r == 0 && pb.pos == 0 && ib.pos < ib.size);
            Py_END_ALLOW_THREADS
            if (glyd_isError(r)) err = r;
            else if (pb.pos) overflow = 1;
            break;
        }
        cap = ob.size * 2;
        if (limit && cap > limit) cap = limit;
        if (_PyBytes_Resize(&out, (Py_ssize_t)cap)) { glyd_freeDCtx(dctx); return NULL; }
        ob.dst = PyBytes_AS_STRING(out);
        ob.size = cap;
    }
    glyd_freeDCtx(dctx);
    if (err) {
        Py_DECREF(out);
        return raise_code(err, NULL);
    }
    if (overflow) {
        Py_DECREF(out);
        PyErr_Format(GlydError, "decompressed data exceeds max_output_size (%zu bytes)", limit);
        return NULL;
    }
    if (r != 0) {
        Py_DECREF(out);
        return raise_msg(GLYD_error_srcSize_truncated, "input ended inside a frame (truncated data)");
    }
    if (finish_bytes(&out, ob.pos)) return NULL;
    return out;
}

static PyObject* py_decompress(PyObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "data", "max_output_size", "threads", NULL };
    Py_buffer in;
    Py_ssize_t maxOut = 0;
    int threads = 1, workers;
    unsigned long long declared;
    PyObject* out = NULL;
    size_t r;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|ni:decompress", kwlist, &in, &maxOut, &threads)) return NULL;
    if (maxOut < 0) { PyErr_SetString(PyExc_ValueError, "max_output_size must be >= 0"); goto done; }
    if (workers_of(threads, &workers)) goto done;
    if (in.len == 0) {
        raise_msg(GLYD_error_srcSize_truncated, "empty input: not a glyd frame");
        goto done;
    }
    declared = glyd_findDecompressedSize(in.buf, (size_t)in.len);
    if (declared == GLYD_CONTENTSIZE_ERROR) {
        /* name what is wrong: the first frame's own error, else the stream's */
        glyd_frameInfo fi;
        size_t const e = glyd_getFrameInfo(&fi, in.buf, (size_t)in.len);
        if (glyd_isError(e)) raise_code(e, NULL);
        else out = decompress_streamed(&in, (size_t)maxOut, workers);
        goto done;
    }
    if (declared != GLYD_CONTENTSIZE_UNKNOWN && maxOut && declared > (unsigned long long)maxOut) {
        PyErr_Format(GlydError, "decompressed data exceeds max_output_size (%zd bytes): frames declare %llu",
                     maxOut, declared);
        goto done;
    }
    /* A declared size is trusted up to what the input could plausibly hold;
     * beyond it the output grows only as the data shows it. */
    if (declared == GLYD_CONTENTSIZE_UNKNOWN || declared > (unsigned long long)in.len * 1024 + (1u << 26)) {
        out = decompress_streamed(&in, (size_t)maxOut, workers);
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)declared);
    if (!out) goto done;
    if (workers == 0) {
        Py_BEGIN_ALLOW_THREADS
        r = glyd_decompress(PyBytes_AS_STRING(out), (size_t)declared, in.buf, (size_t)in.len);
        Py_END_ALLOW_THREADS
    } else {
        Py_BEGIN_ALLOW_THREADS
        glyd_DCtx* const dctx = glyd_createDCtx();
        r = (size_t)-(int)GLYD_error_memory_allocation;
        if (dctx) {
            r = glyd_DCtx_setParameter(dctx, glyd_d_nbWorkers, workers);
            if (!glyd_isError(r))
                r = glyd_decompressDCtx(dctx, PyBytes_AS_STRING(out), (size_t)declared, in.buf, (size_t)in.len);
            glyd_freeDCtx(dctx);
        }
        Py_END_ALLOW_THREADS
    }
    if (glyd_isError(r)) {
        Py_CLEAR(out);
        raise_code(r, NULL);
    } else if (r != declared) {
        Py_CLEAR(out);
        raise_msg(GLYD_error_contentSize_wrong, glyd_getErrorString(GLYD_error_contentSize_wrong));
    }
done:
    PyBuffer_Release(&in);
    return out;
}

static PyObject* py_frame_content_size(PyObject* self, PyObject* arg)
{
    Py_buffer in;
    unsigned long long n;
    (void)self;
    if (PyObject_GetBuffer(arg, &in, PyBUF_SIMPLE)) return NULL;
    n = glyd_getFrameContentSize(in.buf, (size_t)in.len);
    PyBuffer_Release(&in);
    if (n == GLYD_CONTENTSIZE_ERROR) return raise_msg(GLYD_error_prefix_unknown, "not a glyd frame header");
    if (n == GLYD_CONTENTSIZE_UNKNOWN) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(n);
}

/* ------------------------------------------------------------------------ */
/* A lock per streaming object: the GIL is released while it works          */
/* ------------------------------------------------------------------------ */

#define ACQUIRE_LOCK(obj)                                        \
    do {                                                         \
        if (!PyThread_acquire_lock((obj)->lock, 0)) {            \
            Py_BEGIN_ALLOW_THREADS                               \
            PyThread_acquire_lock((obj)->lock, 1);               \
            Py_END_ALLOW_THREADS                                 \
        }                                                        \
    } while (0)
#define RELEASE_LOCK(obj) PyThread_release_lock((obj)->lock)

/* ------------------------------------------------------------------------ */
/* Compressor                                                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    glyd_CCtx* cctx;
    PyThread_type_lock lock;
    int broken; /* an error abandoned the frame */
} CompressorObject;

static int Compressor_init(CompressorObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "level", "threads", "records", NULL };
    int level = GLYD_LEVEL_DEFAULT, threads = 1, records = 0, workers;
    size_t r;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ii$p:Compressor", kwlist, &level, &threads, &records)) return -1;
    if (workers_of(threads, &workers)) return -1;
    if (!self->lock) self->lock = PyThread_allocate_lock();
    if (!self->lock) { PyErr_NoMemory(); return -1; }
    if (!self->cctx) self->cctx = glyd_createCCtx();
    if (!self->cctx) { PyErr_NoMemory(); return -1; }
    glyd_CCtx_reset(self->cctx, glyd_reset_session_and_parameters);
    r = glyd_CCtx_setParameter(self->cctx, glyd_c_compressionLevel, level);
    if (!glyd_isError(r)) r = glyd_CCtx_setParameter(self->cctx, glyd_c_nbWorkers, workers);
    if (!glyd_isError(r)) r = glyd_CCtx_setParameter(self->cctx, glyd_c_records, records);
    if (glyd_isError(r)) { raise_code(r, NULL); return -1; }
    self->broken = 0;
    return 0;
}

static void Compressor_dealloc(CompressorObject* self)
{
    glyd_freeCCtx(self->cctx);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

/* Runs the stream with op until the input is consumed (continue) or the
 * flush is complete; returns the bytes produced. */
static PyObject* compress_run(CompressorObject* self, const void* src, size_t size, glyd_EndDirective op)
{
    glyd_inBuffer ib = { src, size, 0 };
    glyd_outBuffer ob;
    size_t cap = size / 2 + glyd_CStreamOutSize(), r = 0;
    PyObject* out;
    if (self->broken) return raise_msg(GLYD_error_stage_wrong, "the Compressor failed earlier");
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (!out) return NULL;
    ob.dst = PyBytes_AS_STRING(out);
    ob.size = cap;
    ob.pos = 0;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        do {
            r = glyd_compressStream(self->cctx, &ob, &ib, op);
        } while (!glyd_isError(r) && ob.pos < ob.size &&
                 (op == glyd_e_continue ? ib.pos < ib.size : r != 0));
        Py_END_ALLOW_THREADS
        if (glyd_isError(r)) {
            Py_DECREF(out);
            self->broken = 1;
            return raise_code(r, NULL);
        }
        if (op == glyd_e_continue ? ib.pos == ib.size : r == 0) break;
        cap = ob.size * 2;
        if (_PyBytes_Resize(&out, (Py_ssize_t)cap)) return NULL;
        ob.dst = PyBytes_AS_STRING(out);
        ob.size = cap;
    }
    if (finish_bytes(&out, ob.pos)) return NULL;
    return out;
}

static PyObject* Compressor_compress(CompressorObject* self, PyObject* arg)
{
    Py_buffer in;
    PyObject* out;
    if (PyObject_GetBuffer(arg, &in, PyBUF_SIMPLE)) return NULL;
    ACQUIRE_LOCK(self);
    out = compress_run(self, in.buf, (size_t)in.len, glyd_e_continue);
    RELEASE_LOCK(self);
    PyBuffer_Release(&in);
    return out;
}

static PyObject* Compressor_flush(CompressorObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "mode", NULL };
    int mode = glyd_e_end;
    PyObject* out;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:flush", kwlist, &mode)) return NULL;
    if (mode != glyd_e_flush && mode != glyd_e_end) {
        PyErr_SetString(PyExc_ValueError, "mode must be FLUSH_BLOCK or FLUSH_FRAME");
        return NULL;
    }
    ACQUIRE_LOCK(self);
    out = compress_run(self, "", 0, (glyd_EndDirective)mode);
    RELEASE_LOCK(self);
    return out;
}

static PyMethodDef Compressor_methods[] = {
    { "compress", (PyCFunction)Compressor_compress, METH_O,
      "compress(data) -> bytes: feeds data; returns the compressed bytes ready so far." },
    { "flush", (PyCFunction)(void (*)(void))Compressor_flush, METH_VARARGS | METH_KEYWORDS,
      "flush(mode=FLUSH_FRAME) -> bytes: FLUSH_BLOCK makes all input so far decodable; FLUSH_FRAME ends "
      "the frame (the next compress() starts a new one)." },
    { NULL, NULL, 0, NULL }
};

static PyTypeObject CompressorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "glyd.Compressor",
    .tp_basicsize = sizeof(CompressorObject),
    .tp_dealloc = (destructor)Compressor_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Compressor(level=3, threads=1, *, records=False): streaming compression into glyd frames; "
              "records=True writes records frames (logs and tables as typed columns).",
    .tp_methods = Compressor_methods,
    .tp_init = (initproc)Compressor_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Decompressor                                                             */
/* ------------------------------------------------------------------------ */

/* After the frame (without read_across_frames), skippable frames such as
 * the seek table are consumed; anything else becomes unused_data. */
typedef struct {
    PyObject_HEAD
    glyd_DCtx* dctx;
    PyThread_type_lock lock;
    PyObject* pending;      /* input held back by max_length (bytes) */
    PyObject* unused;       /* unused_data (bytes) */
    int across;             /* read_across_frames */
    int eof;                /* a frame ended (across: the input ends at a frame's end) */
    int needsInput;
    int broken;
    int tail;               /* after eof: all further input is unused_data */
    unsigned char hdr[8];   /* after eof: a skippable frame's header so far */
    size_t hdrLen;
    unsigned long long skip; /* after eof: skippable payload still to skip */
} DecompressorObject;

static int Decompressor_init(DecompressorObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "read_across_frames", "threads", NULL };
    int across = 0, threads = 1, workers;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pi:Decompressor", kwlist, &across, &threads)) return -1;
    if (workers_of(threads, &workers)) return -1;
    if (!self->lock) self->lock = PyThread_allocate_lock();
    if (!self->lock) { PyErr_NoMemory(); return -1; }
    if (!self->dctx) self->dctx = glyd_createDCtx();
    if (!self->dctx) { PyErr_NoMemory(); return -1; }
    glyd_DCtx_reset(self->dctx, glyd_reset_session_and_parameters);
    glyd_DCtx_setParameter(self->dctx, glyd_d_nbWorkers, workers);
    Py_CLEAR(self->pending);
    Py_XSETREF(self->unused, PyBytes_FromStringAndSize(NULL, 0));
    if (!self->unused) return -1;
    self->across = across;
    self->eof = across; /* nothing read yet: a boundary */
    self->needsInput = 1;
    self->broken = self->tail = 0;
    self->hdrLen = 0;
    self->skip = 0;
    return 0;
}

static void Decompressor_dealloc(DecompressorObject* self)
{
    glyd_freeDCtx(self->dctx);
    if (self->lock) PyThread_free_lock(self->lock);
    Py_XDECREF(self->pending);
    Py_XDECREF(self->unused);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static int append_unused(DecompressorObject* self, const unsigned char* p, size_t n)
{
    PyObject* more;
    if (!n) return 0;
    more = PyBytes_FromStringAndSize((const char*)p, (Py_ssize_t)n);
    if (!more) return -1;
    PyBytes_ConcatAndDel(&self->unused, more);
    return self->unused ? 0 : -1;
}

static int is_skippable_magic(const unsigned char* p)
{
    unsigned const magic = (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 | (unsigned)p[3] << 24;
    return (magic & GLYD_MAGIC_SKIPPABLE_MASK) == GLYD_MAGIC_SKIPPABLE_START;
}

/* Input after the end of the frame: skippable frames are skipped, and from
 * the first byte of anything else on, all is unused_data. */
static int after_eof(DecompressorObject* self, const unsigned char* p, size_t n)
{
    while (n) {
        if (self->tail) return append_unused(self, p, n);
        if (self->skip) {
            size_t const k = self->skip < n ? (size_t)self->skip : n;
            self->skip -= k;
            p += k;
            n -= k;
            continue;
        }
        while (self->hdrLen < 8 && n) {
            self->hdr[self->hdrLen++] = *p++;
            n--;
        }
        if (self->hdrLen >= 4 && !is_skippable_magic(self->hdr)) {
            self->tail = 1;
            if (append_unused(self, self->hdr, self->hdrLen)) return -1;
            self->hdrLen = 0;
            continue;
        }
        if (self->hdrLen < 8) return 0; /* the rest of the header is to come */
        self->skip = (unsigned long long)self->hdr[4] | (unsigned long long)self->hdr[5] << 8 |
                     (unsigned long long)self->hdr[6] << 16 | (unsigned long long)self->hdr[7] << 24;
        self->hdrLen = 0;
    }
    return 0;
}

static PyObject* decompress_run(DecompressorObject* self, const unsigned char* src, size_t size,
                                Py_ssize_t maxLength)
{
    glyd_inBuffer ib = { src, size, 0 };
    glyd_outBuffer ob;
    size_t cap, r = 1;
    int full = 0;
    PyObject* out;
    cap = size * 4 + 4096;
    if (cap < glyd_DStreamOutSize()) cap = glyd_DStreamOutSize();
    if (maxLength >= 0 && cap > (size_t)maxLength) cap = (size_t)maxLength;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    if (!out) return NULL;
    ob.dst = PyBytes_AS_STRING(out);
    ob.size = cap;
    ob.pos = 0;
    for (;;) {
        int frameEnd = 0;
        size_t const inBefore = ib.pos, outBefore = ob.pos;
        if (ob.pos < ob.size || ib.pos < ib.size) {
            Py_BEGIN_ALLOW_THREADS
            r = stream_steps(self->dctx, &ob, &ib);
            Py_END_ALLOW_THREADS
            if (glyd_isError(r)) {
                Py_DECREF(out);
                self->broken = 1;
                return raise_code(r, NULL);
            }
            frameEnd = r == 0;
        }
        if (frameEnd) {
            if (!self->across) {
                self->eof = 1;
                if (after_eof(self, src + ib.pos, ib.size - ib.pos)) { Py_DECREF(out); return NULL; }
                ib.pos = ib.size;
                break;
            }
            self->eof = 1;
            if (ib.pos < ib.size) continue;
        } else if (ib.pos > inBefore || ob.pos > outBefore) {
            self->eof = 0; /* inside a frame */
        }
        if (ob.pos < ob.size && ib.pos == ib.size) break; /* needs more input */
        if (ob.pos == ob.size) {
            if (maxLength >= 0 && ob.size >= (size_t)maxLength) { full = 1; break; }
            cap = ob.size * 2 + 1;
            if (maxLength >= 0 && cap > (size_t)maxLength) cap = (size_t)maxLength;
            if (_PyBytes_Resize(&out, (Py_ssize_t)cap)) return NULL;
            ob.dst = PyBytes_AS_STRING(out);
            ob.size = cap;
        }
    }
    /* input held back because max_length was reached */
    Py_CLEAR(self->pending);
    if (ib.pos < ib.size) {
        self->pending = PyBytes_FromStringAndSize((const char*)src + ib.pos, (Py_ssize_t)(ib.size - ib.pos));
        if (!self->pending) { Py_DECREF(out); return NULL; }
    }
    self->needsInput = !full && !self->pending && !(self->eof && !self->across);
    if (finish_bytes(&out, ob.pos)) return NULL;
    return out;
}

static PyObject* Decompressor_decompress(DecompressorObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "data", "max_length", NULL };
    Py_buffer in;
    Py_ssize_t maxLength = -1;
    PyObject* out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|n:decompress", kwlist, &in, &maxLength)) return NULL;
    ACQUIRE_LOCK(self);
    if (self->broken) {
        raise_msg(GLYD_error_stage_wrong, "the Decompressor failed earlier");
    } else if (self->eof && !self->across) {
        if (!after_eof(self, in.buf, (size_t)in.len)) out = PyBytes_FromStringAndSize(NULL, 0);
    } else if (self->pending) {
        /* what max_length held back comes first */
        PyObject* joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(self->pending) + in.len);
        if (joined) {
            memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(self->pending), (size_t)PyBytes_GET_SIZE(self->pending));
            memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(self->pending), in.buf, (size_t)in.len);
            out = decompress_run(self, (const unsigned char*)PyBytes_AS_STRING(joined),
                                 (size_t)PyBytes_GET_SIZE(joined), maxLength);
            Py_DECREF(joined);
        }
    } else {
        out = decompress_run(self, in.buf, (size_t)in.len, maxLength);
    }
    RELEASE_LOCK(self);
    PyBuffer_Release(&in);
    return out;
}

static PyObject* Decompressor_get_eof(DecompressorObject* self, void* closure)
{
    (void)closure;
    return PyBool_FromLong(self->eof && !self->pending);
}

static PyObject* Decompressor_get_unused(DecompressorObject* self, void* closure)
{
    (void)closure;
    /* with the start of what may yet be a skippable frame */
    if (self->hdrLen) {
        PyObject* all = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(self->unused) + (Py_ssize_t)self->hdrLen);
        if (!all) return NULL;
        memcpy(PyBytes_AS_STRING(all), PyBytes_AS_STRING(self->unused), (size_t)PyBytes_GET_SIZE(self->unused));
        memcpy(PyBytes_AS_STRING(all) + PyBytes_GET_SIZE(self->unused), self->hdr, self->hdrLen);
        return all;
    }
    Py_INCREF(self->unused);
    return self->unused;
}

static PyObject* Decompressor_get_needs_input(DecompressorObject* self, void* closure)
{
    (void)closure;
    return PyBool_FromLong(self->needsInput);
}

static PyMethodDef Decompressor_methods[] = {
    { "decompress", (PyCFunction)(void (*)(void))Decompressor_decompress, METH_VARARGS | METH_KEYWORDS,
      "decompress(data, max_length=-1) -> bytes: feeds data; returns at most max_length bytes (all when "
      "negative) of the content decoded so far; input held back is used by the next call." },
    { NULL, NULL, 0, NULL }
};

static PyGetSetDef Decompressor_getset[] = {
    { "eof", (getter)Decompressor_get_eof, NULL,
      "True once the frame has ended (with read_across_frames: the input so far ends at a frame's end).",
      NULL },
    { "unused_data", (getter)Decompressor_get_unused, NULL, "Bytes found after the end of the frame.", NULL },
    { "needs_input", (getter)Decompressor_get_needs_input, NULL,
      "False when max_length stopped the output and more can be had without new input.", NULL },
    { NULL, NULL, NULL, NULL, NULL }
};

static PyTypeObject DecompressorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "glyd.Decompressor",
    .tp_basicsize = sizeof(DecompressorObject),
    .tp_dealloc = (destructor)Decompressor_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Decompressor(read_across_frames=False, threads=1): streaming decompression.",
    .tp_methods = Decompressor_methods,
    .tp_getset = Decompressor_getset,
    .tp_init = (initproc)Decompressor_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Tensor blobs                                                             */
/* ------------------------------------------------------------------------ */

static size_t elem_size(int dtype)
{
    switch (dtype) {
    case GLYD_DTYPE_BF16: case GLYD_DTYPE_F16: return 2;
    case GLYD_DTYPE_F32: return 4;
    case GLYD_DTYPE_F8_E4M3: case GLYD_DTYPE_F8_E5M2: return 1;
    default: return 0;
    }
}

static PyObject* py_tensor_compress(PyObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "data", "dtype", "row_length", "layout", "threads", NULL };
    Py_buffer in;
    int dtype, layout = glyd_tensor_auto, threads = 1, workers;
    Py_ssize_t rowLength = 0;
    size_t es, n, bound, r;
    PyObject* out = NULL;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*i|nii:tensor_compress", kwlist, &in, &dtype, &rowLength, &layout,
                                     &threads))
        return NULL;
    es = elem_size(dtype);
    if (!es) { PyErr_Format(PyExc_ValueError, "unknown dtype code %d", dtype); goto done; }
    if ((size_t)in.len % es) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not a whole number of %zu-byte elements", in.len, es);
        goto done;
    }
    if (layout < glyd_tensor_auto || layout > glyd_tensor_fast) {
        PyErr_SetString(PyExc_ValueError, "layout must be auto, entropy or fast");
        goto done;
    }
    if (rowLength < 0) { PyErr_SetString(PyExc_ValueError, "row_length must be >= 0"); goto done; }
    if (workers_of(threads, &workers)) goto done;
    n = (size_t)in.len / es;
    bound = glyd_tensorCompressBound(n, (glyd_dtype)dtype);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)bound);
    if (!out) goto done;
    Py_BEGIN_ALLOW_THREADS
    r = glyd_tensorCompress(PyBytes_AS_STRING(out), bound, in.buf, n, (glyd_dtype)dtype, (size_t)rowLength,
                            (glyd_tensorLayout)layout, (unsigned)workers);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) {
        Py_CLEAR(out);
        raise_code(r, NULL);
    } else if (finish_bytes(&out, r)) {
        out = NULL;
    }
done:
    PyBuffer_Release(&in);
    return out;
}

static PyObject* info_dict(const glyd_tensorInfo* ti)
{
    return Py_BuildValue("{s:i,s:i,s:K,s:K,s:I,s:I,s:K,s:K}", "dtype", (int)ti->dtype, "layout", (int)ti->layout,
                         "elements", ti->nbElements, "units", ti->nbUnits, "unit_size", ti->unitSize,
                         "row_length", ti->rowLength, "content_size", ti->contentSize, "blob_size", ti->blobSize);
}

static PyObject* py_tensor_info(PyObject* self, PyObject* arg)
{
    Py_buffer in;
    glyd_tensorInfo ti;
    size_t r;
    (void)self;
    if (PyObject_GetBuffer(arg, &in, PyBUF_SIMPLE)) return NULL;
    r = glyd_getTensorInfo(&ti, in.buf, (size_t)in.len);
    PyBuffer_Release(&in);
    if (glyd_isError(r)) return raise_code(r, NULL);
    return info_dict(&ti);
}

/* Decodes a blob into a new bytearray (writable, so that numpy arrays over
 * it are too). */
static PyObject* py_tensor_decompress(PyObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "data", "threads", NULL };
    Py_buffer in;
    int threads = 1, workers;
    glyd_tensorInfo ti;
    PyObject* out = NULL;
    size_t r;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|i:tensor_decompress", kwlist, &in, &threads)) return NULL;
    if (workers_of(threads, &workers)) goto done;
    r = glyd_getTensorInfo(&ti, in.buf, (size_t)in.len);
    if (glyd_isError(r)) { raise_code(r, NULL); goto done; }
    if (ti.contentSize > (unsigned long long)PY_SSIZE_T_MAX) {
        raise_msg(GLYD_error_corruption_detected, "tensor blob declares an impossible size");
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)ti.contentSize);
    if (!out) goto done;
    Py_BEGIN_ALLOW_THREADS
    r = glyd_tensorDecompress(PyByteArray_AS_STRING(out), (size_t)ti.contentSize, in.buf, (size_t)in.len,
                              (unsigned)workers);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) {
        Py_CLEAR(out);
        raise_code(r, NULL);
    } else if (r != ti.contentSize) {
        Py_CLEAR(out);
        raise_msg(GLYD_error_corruption_detected, "tensor blob decoded to a size other than it declares");
    }
done:
    PyBuffer_Release(&in);
    return out;
}

/* ------------------------------------------------------------------------ */
/* Packed models                                                            */
/* ------------------------------------------------------------------------ */

static PyObject* py_pack(PyObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "model_dir", "out_path", "level", "threads", "layout", NULL };
    PyObject *dirObj = NULL, *outObj = NULL;
    int level = 0, threads = 1, layout = glyd_tensor_auto, workers;
    char msg[512] = "";
    glyd_packParams params;
    size_t r;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&|iii:pack", kwlist, PyUnicode_FSConverter, &dirObj,
                                     PyUnicode_FSConverter, &outObj, &level, &threads, &layout))
        goto fail;
    if (workers_of(threads, &workers)) goto fail;
    memset(&params, 0, sizeof params);
    params.nbThreads = (unsigned)workers;
    params.level = level;
    params.layout = (glyd_tensorLayout)layout;
    params.message = msg;
    params.messageCapacity = sizeof msg;
    Py_BEGIN_ALLOW_THREADS
    r = glyd_packModel(PyBytes_AS_STRING(dirObj), PyBytes_AS_STRING(outObj), &params);
    Py_END_ALLOW_THREADS
    Py_DECREF(dirObj);
    Py_DECREF(outObj);
    if (glyd_isError(r)) return raise_code(r, msg);
    return PyLong_FromSize_t(r);
fail:
    Py_XDECREF(dirObj);
    Py_XDECREF(outObj);
    return NULL;
}

static int Model_init(ModelObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "path", NULL };
    PyObject* pathObj = NULL;
    char msg[512] = "";
    glyd_packParams params;
    size_t err = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:Model", kwlist, PyUnicode_FSConverter, &pathObj)) return -1;
    if (self->exports) {
        Py_DECREF(pathObj);
        PyErr_SetString(PyExc_BufferError, "the packed model's tensors are in use by CodedMatrix objects");
        return -1;
    }
    if (self->model) {
        glyd_modelClose(self->model);
        self->model = NULL;
    }
    memset(&params, 0, sizeof params);
    params.message = msg;
    params.messageCapacity = sizeof msg;
    Py_BEGIN_ALLOW_THREADS
    self->model = glyd_modelOpen(PyBytes_AS_STRING(pathObj), &params, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(pathObj);
    if (!self->model) {
        raise_code(err ? err : (size_t)-(int)GLYD_error_pack_invalid, msg);
        return -1;
    }
    return 0;
}

static void Model_dealloc(ModelObject* self)
{
    if (self->model) glyd_modelClose(self->model);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

int model_open(ModelObject* self)
{
    if (self->model) return 0;
    PyErr_SetString(PyExc_ValueError, "the packed model is closed");
    return -1;
}

static PyObject* Model_close(ModelObject* self, PyObject* unused)
{
    (void)unused;
    if (self->exports) {
        PyErr_SetString(PyExc_BufferError, "the packed model's tensors are in use by CodedMatrix objects");
        return NULL;
    }
    if (self->model) glyd_modelClose(self->model);
    self->model = NULL;
    Py_RETURN_NONE;
}

static PyObject* tensor_dict(const glyd_modelTensorInfo* ti)
{
    PyObject* shape = PyTuple_New(ti->ndim);
    unsigned k;
    if (!shape) return NULL;
    for (k = 0; k < ti->ndim; k++) {
        PyObject* d = PyLong_FromUnsignedLongLong(ti->shape[k]);
        if (!d) { Py_DECREF(shape); return NULL; }
        PyTuple_SET_ITEM(shape, k, d);
    }
    return Py_BuildValue("{s:s,s:s,s:N,s:K,s:K,s:K,s:K,s:s,s:K}", "name", ti->name, "dtype", ti->dtype, "shape",
                         shape, "elements", ti->nbElements, "size", ti->size, "packed_size", ti->packedSize,
                         "offset", ti->offset, "codec", ti->codec, "checksum", ti->checksum);
}

/* files() -> [dict]: each file with its tensors, in the index's order. */
static PyObject* Model_files(ModelObject* self, PyObject* unused)
{
    size_t i, t, n;
    PyObject* list;
    (void)unused;
    if (model_open(self)) return NULL;
    n = glyd_modelNbFiles(self->model);
    list = PyList_New((Py_ssize_t)n);
    if (!list) return NULL;
    for (i = 0; i < n; i++) {
        glyd_modelFileInfo fi;
        PyObject *tensors, *d;
        size_t r = glyd_modelGetFile(self->model, i, &fi);
        if (glyd_isError(r)) { Py_DECREF(list); return raise_code(r, NULL); }
        tensors = PyList_New((Py_ssize_t)fi.nbTensors);
        if (!tensors) { Py_DECREF(list); return NULL; }
        for (t = 0; t < fi.nbTensors; t++) {
            glyd_modelTensorInfo ti;
            PyObject* td;
            r = glyd_modelGetTensor(self->model, i, t, &ti);
            if (glyd_isError(r)) { Py_DECREF(tensors); Py_DECREF(list); return raise_code(r, NULL); }
            td = tensor_dict(&ti);
            if (!td) { Py_DECREF(tensors); Py_DECREF(list); return NULL; }
            PyList_SET_ITEM(tensors, (Py_ssize_t)t, td);
        }
        d = Py_BuildValue("{s:s,s:K,s:K,s:K,s:O,s:N}", "path", fi.path, "size", fi.size, "packed_size",
                          fi.packedSize, "checksum", fi.checksum, "safetensors", fi.isSafetensors ? Py_True : Py_False,
                          "tensors", tensors);
        if (!d) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject* Model_packed_size(ModelObject* self, PyObject* unused)
{
    (void)unused;
    if (model_open(self)) return NULL;
    return PyLong_FromUnsignedLongLong(glyd_modelPackedSize(self->model));
}

typedef struct {
    PyObject* write;       /* the Python callable */
    PyThreadState* saved;  /* the thread state while the GIL is released */
    int failed;            /* the callable raised */
} extract_state;

/* Hands each piece to the Python callable as a read-only memoryview, valid
 * during the call only. */
static size_t extract_piece(void* opaque, const void* data, size_t size)
{
    extract_state* const s = (extract_state*)opaque;
    PyObject *view, *res;
    if (s->failed) return (size_t)-(int)GLYD_error_io_failed;
    PyEval_RestoreThread(s->saved);
    view = PyMemoryView_FromMemory((char*)data, (Py_ssize_t)size, PyBUF_READ);
    res = view ? PyObject_CallFunctionObjArgs(s->write, view, NULL) : NULL;
    if (view) {
        /* a view kept past the call would read freed memory: release it */
        PyObject* r2 = PyObject_CallMethod(view, "release", NULL);
        if (!r2) PyErr_Clear(); /* exported elsewhere: leave it */
        Py_XDECREF(r2);
        Py_DECREF(view);
    }
    if (!res) s->failed = 1;
    Py_XDECREF(res);
    s->saved = PyEval_SaveThread();
    return s->failed ? (size_t)-(int)GLYD_error_io_failed : 0;
}

static PyObject* Model_extract(ModelObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "file", "write", "threads", NULL };
    Py_ssize_t file;
    int threads = 1, workers;
    extract_state s;
    size_t r;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nO|i:extract", kwlist, &file, &s.write, &threads)) return NULL;
    if (model_open(self) || workers_of(threads, &workers)) return NULL;
    if (file < 0 || (size_t)file >= glyd_modelNbFiles(self->model)) {
        PyErr_SetString(PyExc_IndexError, "no such file in the packed model");
        return NULL;
    }
    s.failed = 0;
    s.saved = PyEval_SaveThread();
    r = glyd_modelExtractFile(self->model, (size_t)file, extract_piece, &s, (unsigned)workers);
    PyEval_RestoreThread(s.saved);
    if (s.failed) return NULL; /* the callable's exception */
    if (glyd_isError(r)) return raise_code(r, NULL);
    return PyLong_FromSize_t(r);
}

static PyObject* Model_verify_tensor(ModelObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "file", "tensor", "threads", NULL };
    Py_ssize_t file, tensor;
    int threads = 1, workers;
    glyd_modelFileInfo fi;
    size_t r;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nn|i:verify_tensor", kwlist, &file, &tensor, &threads)) return NULL;
    if (model_open(self) || workers_of(threads, &workers)) return NULL;
    if (file < 0 || (size_t)file >= glyd_modelNbFiles(self->model) ||
        glyd_isError(glyd_modelGetFile(self->model, (size_t)file, &fi)) || tensor < 0 ||
        (size_t)tensor >= fi.nbTensors) {
        PyErr_SetString(PyExc_IndexError, "no such tensor in the packed model");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    r = glyd_modelVerifyTensor(self->model, (size_t)file, (size_t)tensor, (unsigned)workers);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) return raise_code(r, NULL);
    Py_RETURN_NONE;
}

static PyObject* Model_read_tensor(ModelObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "file", "tensor", "threads", NULL };
    Py_ssize_t file, tensor;
    int threads = 1, workers;
    glyd_modelFileInfo fi;
    glyd_modelTensorInfo ti;
    PyObject* out;
    size_t r;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nn|i:read_tensor", kwlist, &file, &tensor, &threads)) return NULL;
    if (model_open(self) || workers_of(threads, &workers)) return NULL;
    if (file < 0 || (size_t)file >= glyd_modelNbFiles(self->model) ||
        glyd_isError(glyd_modelGetFile(self->model, (size_t)file, &fi)) || tensor < 0 ||
        (size_t)tensor >= fi.nbTensors ||
        glyd_isError(glyd_modelGetTensor(self->model, (size_t)file, (size_t)tensor, &ti))) {
        PyErr_SetString(PyExc_IndexError, "no such tensor in the packed model");
        return NULL;
    }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)ti.size);
    if (!out) return NULL;
    Py_BEGIN_ALLOW_THREADS
    r = glyd_modelReadTensor(self->model, (size_t)file, (size_t)tensor, PyByteArray_AS_STRING(out), (size_t)ti.size,
                             (unsigned)workers);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) {
        Py_DECREF(out);
        return raise_code(r, NULL);
    }
    return out;
}

static PyMethodDef Model_methods[] = {
    { "files", (PyCFunction)Model_files, METH_NOARGS, "files() -> list of dicts: each file and its tensors." },
    { "packed_size", (PyCFunction)Model_packed_size, METH_NOARGS, "packed_size() -> int: the packed file's size." },
    { "extract", (PyCFunction)(void (*)(void))Model_extract, METH_VARARGS | METH_KEYWORDS,
      "extract(file, write, threads=1) -> int: decodes file number `file`, in order, through write(memoryview), "
      "checking every checksum; returns its size." },
    { "verify_tensor", (PyCFunction)(void (*)(void))Model_verify_tensor, METH_VARARGS | METH_KEYWORDS,
      "verify_tensor(file, tensor, threads=1): raises Error if the tensor is damaged." },
    { "read_tensor", (PyCFunction)(void (*)(void))Model_read_tensor, METH_VARARGS | METH_KEYWORDS,
      "read_tensor(file, tensor, threads=1) -> bytearray: the tensor's original bytes, checked." },
    { "close", (PyCFunction)Model_close, METH_NOARGS, "close(): unmaps the packed model." },
    { NULL, NULL, 0, NULL }
};

PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "glyd._glyd.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(path): a packed model, opened read-only after its index is checked.",
    .tp_methods = Model_methods,
    .tp_init = (initproc)Model_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Module                                                                   */
/* ------------------------------------------------------------------------ */

static PyMethodDef module_methods[] = {
    { "compress", (PyCFunction)(void (*)(void))py_compress, METH_VARARGS | METH_KEYWORDS,
      "compress(data, level=3, threads=1, *, records=False) -> bytes: one glyd frame; records=True makes it a "
      "records frame (logs and tables as typed columns)." },
    { "decompress", (PyCFunction)(void (*)(void))py_decompress, METH_VARARGS | METH_KEYWORDS,
      "decompress(data, max_output_size=0, threads=1) -> bytes: every frame in data." },
    { "frame_content_size", (PyCFunction)py_frame_content_size, METH_O,
      "frame_content_size(data) -> int or None: the size the first frame declares." },
    { "tensor_compress", (PyCFunction)(void (*)(void))py_tensor_compress, METH_VARARGS | METH_KEYWORDS,
      "tensor_compress(data, dtype, row_length=0, layout=0, threads=1) -> bytes: a tensor blob." },
    { "tensor_decompress", (PyCFunction)(void (*)(void))py_tensor_decompress, METH_VARARGS | METH_KEYWORDS,
      "tensor_decompress(blob, threads=1) -> bytearray: the tensor's bytes." },
    { "tensor_info", (PyCFunction)py_tensor_info, METH_O, "tensor_info(blob) -> dict: the blob's header." },
    { "pack", (PyCFunction)(void (*)(void))py_pack, METH_VARARGS | METH_KEYWORDS,
      "pack(model_dir, out_path, level=0, threads=1, layout=0) -> int: the packed file's size." },
    { NULL, NULL, 0, NULL }
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_glyd", "The C library under the glyd package.", -1, module_methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC PyInit__glyd(void)
{
    PyObject* m;
    if (PyType_Ready(&CompressorType) < 0 || PyType_Ready(&DecompressorType) < 0 || PyType_Ready(&ModelType) < 0)
        return NULL;
    m = PyModule_Create(&module_def);
    if (!m) return NULL;
    GlydError = PyErr_NewExceptionWithDoc("glyd.Error",
                                          "An error of the glyd library: its message, and .code, its glyd_ErrorCode.",
                                          NULL, NULL);
    if (!GlydError || PyModule_AddObject(m, "Error", GlydError) < 0) goto fail;
    Py_INCREF(GlydError); /* the module's reference; ours stays */
    Py_INCREF(&CompressorType);
    if (PyModule_AddObject(m, "Compressor", (PyObject*)&CompressorType) < 0) goto fail;
    Py_INCREF(&DecompressorType);
    if (PyModule_AddObject(m, "Decompressor", (PyObject*)&DecompressorType) < 0) goto fail;
    Py_INCREF(&ModelType);
    if (PyModule_AddObject(m, "Model", (PyObject*)&ModelType) < 0) goto fail;
    if (coded_matrix_add(m) < 0) goto fail;
    if (PyModule_AddIntConstant(m, "FLUSH_BLOCK", glyd_e_flush) || PyModule_AddIntConstant(m, "FLUSH_FRAME", glyd_e_end) ||
        PyModule_AddStringConstant(m, "LIBRARY_VERSION", glyd_versionString()) ||
        PyModule_AddIntConstant(m, "LEVEL_DEFAULT", GLYD_LEVEL_DEFAULT) ||
        PyModule_AddIntConstant(m, "LEVEL_MIN", GLYD_LEVEL_MIN) || PyModule_AddIntConstant(m, "LEVEL_MAX", GLYD_LEVEL_MAX))
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}

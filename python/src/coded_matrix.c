/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coded_matrix.c: glyd._glyd.CodedMatrix, a bf16 weight matrix held in the
 * tensor codec, and the products the torch modules of glyd/_hf.py run on
 * it: the engine's own decode-in-product kernel (glyd_matmulRows, each unit
 * decoded into a per-thread buffer right before its rows are multiplied),
 * rows decoded to bf16 (a tile of a long prompt's product, or the whole
 * weight for exact products), and rows gathered by index (an embedding).
 *
 * Where the CPU has AVX-512 BF16, the products multiply the decoded units
 * with the engine's bf16-pair kernel (glyd_bf16PairsTimesBatch), the
 * vectors left in bf16; elsewhere with its fp32 kernel on fp32 copies.
 *
 * The products run on one team of threads (team.h) shared by every matrix,
 * behind a lock, with the GIL released. Tensors are passed as addresses: the Python
 * layer checks their dtype, shape and contiguity and keeps them alive for
 * the call; these methods are not public API.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "module.h"
#include "team.h"
#include "../../llm/infer/infer.h"

/* ------------------------------------------------------------------------ */
/* The threads products run on                                              */
/* ------------------------------------------------------------------------ */

#define MAX_SHARES 256
/* Elements of work below which another share costs more than it saves:
 * waking a pool thread takes tens of microseconds, what a thread decodes
 * and multiplies a few hundred thousand elements in. */
#define SHARE_MIN_WORK (1u << 18)

static struct {
    pthread_mutex_t lock;
    unsigned nbThreads;            /* shares of a product, the calling thread's included */
    team* team;                    /* nbThreads - 1 workers, or NULL */
    glyd_decodeScratch scratch[MAX_SHARES];
    float *xf, *yf;                /* the batch's inputs and sums in fp32 */
    size_t xfCap, yfCap;
    int bf16Kernel;                /* products in bf16 pairs (1) or the engine's fp32 kernel (0); GIL held */
} P = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, { { 0 } }, NULL, NULL, 0, 0, 0 };

static unsigned online_cores(void)
{
    long const n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > MAX_SHARES ? MAX_SHARES : (unsigned)n;
}

/* A child of fork() has none of the team's threads: it makes its own. */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&P.lock, NULL);
    P.team = NULL; /* the parent's, not freed: its threads are not here */
    P.nbThreads = 0;
}

/* Called with P.lock held. */
static size_t set_threads_locked(unsigned n)
{
    static int forkHandled = 0;
    if (!forkHandled) forkHandled = pthread_atfork(NULL, NULL, after_fork_in_child) == 0;
    if (n == 0) n = online_cores();
    if (n > MAX_SHARES) n = MAX_SHARES;
    if (n == P.nbThreads) return 0;
    team_free(P.team);
    P.team = NULL;
    P.nbThreads = 1;
    if (n > 1) {
        P.team = team_create(n);
        RETURN_ERROR_IF(!P.team, threads_unavailable, "product threads");
    }
    P.nbThreads = n;
    return 0;
}

static size_t grow(float** buf, size_t* cap, size_t n)
{
    if (n <= *cap) return 0;
    free(*buf);
    *buf = (float*)malloc(n * sizeof(float));
    *cap = *buf ? n : 0;
    RETURN_ERROR_IF(!*buf, memory_allocation, "product buffers");
    return 0;
}

typedef struct product_job_s product_job;
typedef size_t (*product_fn)(product_job* j);

struct product_job_s {
    product_fn fn;
    const glyd_matrix* w;
    glyd_decodeScratch* s;
    uint64_t origin;               /* the first row or index of the whole range */
    uint64_t first, last;          /* this share: rows (products, decoding) or indices (gathers) */
    size_t nbVec;
    const uint16_t *x, *bias;
    const int64_t* ids;
    uint16_t* out;
    size_t result;
};

static void job_run(void* jobs, unsigned index)
{
    product_job* const j = (product_job*)jobs + index;
    j->result = j->first < j->last ? j->fn(j) : 0;
}

/* Runs fn over [begin, end) split in up to P.nbThreads shares starting on
 * multiples of `align` (begin is one), a share for each SHARE_MIN_WORK
 * elements of `work`, with the GIL released and P.lock held. linger: the
 * workers then watch for the next round (products come in quick
 * succession in a forward pass; a decoded tile is followed by torch's own
 * product, whose threads need the cores). */
static size_t run_shares(product_job* proto, uint64_t begin, uint64_t end, uint64_t align, uint64_t work,
                         int linger)
{
    product_job jobs[MAX_SHARES];
    uint64_t const groups = (end - begin + align - 1) / align;
    unsigned nbJobs, i;
    size_t r = 0;
    nbJobs = P.nbThreads;
    if ((uint64_t)nbJobs > work / SHARE_MIN_WORK) nbJobs = (unsigned)(work / SHARE_MIN_WORK);
    if ((uint64_t)nbJobs > groups) nbJobs = (unsigned)groups;
    if (nbJobs == 0) nbJobs = 1;
    for (i = 0; i < nbJobs; i++) {
        jobs[i] = *proto;
        jobs[i].s = &P.scratch[i];
        jobs[i].origin = begin;
        jobs[i].first = GLYD_MIN(begin + groups * i / nbJobs * align, end);
        jobs[i].last = GLYD_MIN(begin + groups * (i + 1) / nbJobs * align, end);
    }
    team_run(P.team, job_run, jobs, nbJobs, linger);
    for (i = 0; i < nbJobs && !glyd_isError(r); i++) r = jobs[i].result;
    return r;
}

/* ------------------------------------------------------------------------ */
/* The three operations                                                     */
/* ------------------------------------------------------------------------ */

/* out[t][r] = bf16(W[r] . x[t] + bias[r]) for this share's rows, the batch
 * GLYD_BATCH vectors at a time (P.xf holds x in fp32). */
static size_t product_share(product_job* j)
{
    const glyd_matrix* const w = j->w;
    size_t b, t;
    uint64_t r;
    FORWARD_IF_ERROR(glyd_scratchReserve(j->s, w));
    for (b = 0; b < j->nbVec; b += GLYD_BATCH) {
        size_t const nb = GLYD_MIN((size_t)GLYD_BATCH, j->nbVec - b);
        float* const y = P.yf + b * w->rows;
        FORWARD_IF_ERROR(glyd_matmulRows(w, P.xf + b * w->cols, nb, y, j->first, j->last, j->s));
        for (t = 0; t < nb; t++) {
            const float* const yt = y + t * w->rows;
            uint16_t* const ot = j->out + (b + t) * w->rows;
            for (r = j->first; r < j->last; r++)
                ot[r] = glyd_f32ToBf16(j->bias ? yt[r] + glyd_bf16ToF32(j->bias[r]) : yt[r]);
        }
    }
    return 0;
}

/* Rows of one unit-aligned span [r0, r1) into dst (row r0 first). */
static size_t decode_span(const glyd_matrix* w, uint64_t r0, uint64_t r1, uint16_t* dst, glyd_decodeScratch* s)
{
    uint64_t const unit = w->view.unitSize;
    uint64_t u, u1;
    if (w->plain) {
        memcpy(dst, w->plain + r0 * w->cols, (size_t)((r1 - r0) * w->cols) * 2);
        return 0;
    }
    /* units cover whole rows or evenly split each row (glyd_matrixCoded
     * keeps any other matrix plain), and spans start and end on units */
    u = r0 * w->cols / unit;
    u1 = (r1 * w->cols + unit - 1) / unit;
    for (; u < u1; u += 4) {
        uint64_t const n = GLYD_MIN((uint64_t)4, u1 - u);
        FORWARD_IF_ERROR(glyd_tensorDecodeUnits(&w->view, w->dt, u, n, dst + (u * unit - r0 * w->cols), s->symbols));
    }
    return 0;
}

/* product_share in bf16 pairs: the vectors stay bf16 (j->x), and
 * a span of up to four units (or four long rows) is decoded at a time. */
static size_t product_share_bf16(product_job* j)
{
    const glyd_matrix* const w = j->w;
    uint64_t const span = 4 * glyd_matrixRowAlign(w);
    uint64_t r;
    size_t t;
    FORWARD_IF_ERROR(glyd_scratchReserve(j->s, w));
    for (r = j->first; r < j->last; r += span) {
        uint64_t const r1 = GLYD_MIN(r + span, j->last);
        const uint16_t* block = w->plain ? w->plain + r * w->cols : j->s->elems;
        if (!w->plain) FORWARD_IF_ERROR(decode_span(w, r, r1, j->s->elems, j->s));
        RETURN_ERROR_IF(!glyd_bf16PairsTimesBatch(block, r1 - r, w->cols, j->x, j->nbVec, P.yf + r, w->rows), GENERIC,
                        "no bf16 pair products here");
    }
    for (t = 0; t < j->nbVec; t++) {
        const float* const yt = P.yf + t * w->rows;
        uint16_t* const ot = j->out + t * w->rows;
        for (r = j->first; r < j->last; r++)
            ot[r] = glyd_f32ToBf16(j->bias ? yt[r] + glyd_bf16ToF32(j->bias[r]) : yt[r]);
    }
    return 0;
}

static size_t decode_share(product_job* j)
{
    FORWARD_IF_ERROR(glyd_scratchReserve(j->s, j->w));
    return decode_span(j->w, j->first, j->last, j->out + (j->first - j->origin) * j->w->cols, j->s);
}

/* out[i] = W[ids[i]] for this share's indices. */
static size_t gather_share(product_job* j)
{
    const glyd_matrix* const w = j->w;
    uint64_t const align = glyd_matrixRowAlign(w);
    uint64_t i;
    FORWARD_IF_ERROR(glyd_scratchReserve(j->s, w));
    for (i = j->first; i < j->last; i++) {
        uint64_t const row = (uint64_t)j->ids[i];
        uint16_t* const dst = j->out + i * w->cols;
        if (w->plain || align == 1) {
            FORWARD_IF_ERROR(decode_span(w, row, row + 1, dst, j->s));
        } else {
            uint64_t const first = row - row % align;
            FORWARD_IF_ERROR(decode_span(w, first, GLYD_MIN(first + align, w->rows), j->s->elems, j->s));
            memcpy(dst, j->s->elems + (row - first) * w->cols, (size_t)w->cols * 2);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The Python type                                                          */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    glyd_matrix m;
    int ready;
    Py_buffer view;    /* the blob, when made from a buffer */
    int hasView;
    PyObject* model;   /* the packed model whose mapping holds the blob */
    void* mapped;      /* a blob compressed here, in pages of its own */
    size_t mappedSize;
    size_t storedSize; /* bytes of the blob or plain data */
} CodedMatrixObject;

static void CodedMatrix_dealloc(CodedMatrixObject* self)
{
    if (self->ready) glyd_matrixFree(&self->m);
    if (self->hasView) PyBuffer_Release(&self->view);
    if (self->mapped) munmap(self->mapped, self->mappedSize);
    if (self->model) ((ModelObject*)self->model)->exports--;
    Py_XDECREF(self->model);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static int check_shape(long long rows, long long cols)
{
    if (rows <= 0 || cols <= 0 || (unsigned long long)rows > (1ull << 32) || (unsigned long long)cols > (1ull << 32)) {
        PyErr_SetString(PyExc_ValueError, "a matrix needs 1 to 2**32 rows and columns");
        return -1;
    }
    return 0;
}

/* CodedMatrix(blob, rows, cols): over a bf16 tensor blob (kept referenced). */
static int CodedMatrix_init(CodedMatrixObject* self, PyObject* args, PyObject* kw)
{
    static char* kwlist[] = { "blob", "rows", "cols", NULL };
    PyObject* blob;
    long long rows, cols;
    size_t r;
    if (self->ready || self->hasView) {
        PyErr_SetString(PyExc_TypeError, "CodedMatrix is made once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OLL:CodedMatrix", kwlist, &blob, &rows, &cols)) return -1;
    if (check_shape(rows, cols)) return -1;
    if (PyObject_GetBuffer(blob, &self->view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    self->hasView = 1;
    r = glyd_matrixCoded(&self->m, (const uint8_t*)self->view.buf, (size_t)self->view.len, (uint64_t)rows,
                         (uint64_t)cols);
    if (glyd_isError(r)) {
        glyd_matrixFree(&self->m);
        raise_code(r, "not a bf16 tensor blob of that shape");
        return -1;
    }
    self->ready = 1;
    self->storedSize = (size_t)self->view.len;
    return 0;
}

/* The arguments (model, file, tensor, rows, cols) of from_pack and
 * recode_pack, checked, and the tensor's stored bytes: its codec (as
 * glyd_modelTensorStored gives it), or -1 and an exception. */
typedef struct {
    ModelObject* model;
    Py_ssize_t file, tensor;
    long long rows, cols;
    const uint8_t* stored;
    size_t size;
} pack_tensor;

static int pack_tensor_args(PyObject* args, const char* format, pack_tensor* t)
{
    int codec;
    if (!PyArg_ParseTuple(args, format, &ModelType, &t->model, &t->file, &t->tensor, &t->rows, &t->cols)) return -1;
    if (model_open(t->model) || check_shape(t->rows, t->cols)) return -1;
    if (t->file < 0 || t->tensor < 0 ||
        (codec = glyd_modelTensorStored(t->model->model, (size_t)t->file, (size_t)t->tensor, &t->stored, &t->size)) < 0) {
        PyErr_SetString(PyExc_IndexError, "no such tensor in the packed model");
        return -1;
    }
    return codec;
}

/* from_pack(model, file, tensor, rows, cols): over a tensor where it lies in
 * a packed model's mapping: a tensor blob, or bf16 stored as it is. */
static PyObject* CodedMatrix_from_pack(PyTypeObject* type, PyObject* args)
{
    pack_tensor t;
    size_t r;
    CodedMatrixObject* self;
    int const codec = pack_tensor_args(args, "O!nnLL:from_pack", &t);
    if (codec < 0) return NULL;
    self = (CodedMatrixObject*)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (codec == 2)
        r = glyd_matrixCoded(&self->m, t.stored, t.size, (uint64_t)t.rows, (uint64_t)t.cols);
    else if (codec == 0 && t.size == (size_t)t.rows * (size_t)t.cols * 2)
        r = glyd_matrixPlain(&self->m, (const uint16_t*)(const void*)t.stored, (uint64_t)t.rows, (uint64_t)t.cols);
    else
        r = (size_t)-(int)GLYD_error_model_unsupported;
    if (glyd_isError(r)) {
        glyd_matrixFree(&self->m);
        Py_DECREF(self);
        return raise_code(r, "the packed tensor is not a bf16 matrix of that shape");
    }
    self->ready = 1;
    self->storedSize = t.size;
    Py_INCREF(t.model);
    t.model->exports++;
    self->model = (PyObject*)t.model;
    return (PyObject*)self;
}

/* compress(data, rows, cols, threads=1): bf16 data coded in the fast
 * layout into pages mapped for the blob alone, so that a model's blobs,
 * made one after another between large temporary buffers, leave no holes
 * in the heap. */
static PyObject* CodedMatrix_compress(PyTypeObject* type, PyObject* args)
{
    Py_buffer src;
    long long rows, cols;
    int threads = 1, workers;
    size_t bound, r, page = (size_t)sysconf(_SC_PAGESIZE), kept;
    void* map;
    CodedMatrixObject* self;
    if (!PyArg_ParseTuple(args, "y*LL|i:compress", &src, &rows, &cols, &threads)) return NULL;
    if (check_shape(rows, cols) || workers_of(threads, &workers)) goto fail;
    if ((unsigned long long)src.len != (unsigned long long)rows * (unsigned long long)cols * 2) {
        PyErr_Format(PyExc_ValueError, "%zd bytes for a bf16 matrix of %lld x %lld", src.len, rows, cols);
        goto fail;
    }
    bound = glyd_tensorCompressBound((size_t)rows * (size_t)cols, GLYD_DTYPE_BF16);
    map = mmap(NULL, bound, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    r = glyd_tensorCompress(map, bound, src.buf, (size_t)rows * (size_t)cols, GLYD_DTYPE_BF16, (size_t)cols,
                            glyd_tensor_fast, (unsigned)workers);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    if (glyd_isError(r)) {
        munmap(map, bound);
        return raise_code(r, NULL);
    }
    kept = (r + page - 1) / page * page;
    if (kept < bound) munmap((char*)map + kept, bound - kept);
    self = (CodedMatrixObject*)type->tp_alloc(type, 0);
    if (!self) {
        munmap(map, kept);
        return NULL;
    }
    self->mapped = map;
    self->mappedSize = kept;
    r = glyd_matrixCoded(&self->m, (const uint8_t*)map, r, (uint64_t)rows, (uint64_t)cols);
    if (glyd_isError(r)) {
        Py_DECREF(self);
        return raise_code(r, NULL);
    }
    self->ready = 1;
    self->storedSize = self->m.view.blobSize;
    return (PyObject*)self;
fail:
    PyBuffer_Release(&src);
    return NULL;
}

static void release_slice(void* opaque, const void* p, size_t n)
{
    glyd_mappedRelease((const glyd_mappedFile*)opaque, p, n);
}

/* from_file(path, offset, rows, cols): the bf16 matrix at offset in a file
 * (a safetensors file's tensor), coded into the fast layout from the file's
 * mapping a slice at a time, each slice's pages let go once read, so that
 * loading holds no more of the source than a slice. */
static PyObject* CodedMatrix_from_file(PyTypeObject* type, PyObject* args)
{
    PyObject* pathObj;
    unsigned long long offset;
    long long rows, cols;
    glyd_mappedFile f;
    CodedMatrixObject* self;
    size_t r;
    if (!PyArg_ParseTuple(args, "O&KLL:from_file", PyUnicode_FSConverter, &pathObj, &offset, &rows, &cols)) return NULL;
    if (check_shape(rows, cols)) {
        Py_DECREF(pathObj);
        return NULL;
    }
    self = (CodedMatrixObject*)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(pathObj);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    r = glyd_mapFile(&f, PyBytes_AS_STRING(pathObj));
    if (!glyd_isError(r)) {
        uint64_t const bytes = (uint64_t)rows * (uint64_t)cols * 2;
        if (offset % 2 || offset > f.size || bytes > f.size - offset)
            r = (size_t)-(int)GLYD_error_srcSize_wrong;
        else
            r = glyd_matrixEncodeFast(&self->m, (const uint16_t*)(const void*)((const uint8_t*)f.data + offset),
                                      (uint64_t)rows, (uint64_t)cols, GLYD_TENSOR_FAST_CODES, release_slice, &f);
        glyd_unmapFile(&f);
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(pathObj);
    if (glyd_isError(r)) {
        Py_DECREF(self);
        return raise_code(r, "the matrix could not be read from the file and coded");
    }
    self->ready = 1;
    self->storedSize = self->m.view.blobSize;
    return (PyObject*)self;
}

/* recode_pack(model, file, tensor, rows, cols): a packed tensor of another
 * layout (the entropy layout) recoded into the fast one, its values checked
 * against the index's checksum of the original bytes on the way, and its
 * stored pages let go. */
static PyObject* CodedMatrix_recode_pack(PyTypeObject* type, PyObject* args)
{
    pack_tensor t;
    size_t r;
    glyd_modelTensorInfo ti;
    uint64_t expected;
    CodedMatrixObject* self;
    int const codec = pack_tensor_args(args, "O!nnLL:recode_pack", &t);
    if (codec < 0) return NULL;
    if (codec != 2 || glyd_isError(glyd_modelGetTensor(t.model->model, (size_t)t.file, (size_t)t.tensor, &ti))) {
        PyErr_SetString(PyExc_IndexError, "no such tensor blob in the packed model");
        return NULL;
    }
    expected = ti.checksum;
    self = (CodedMatrixObject*)type->tp_alloc(type, 0);
    if (!self) return NULL;
    Py_BEGIN_ALLOW_THREADS
    r = glyd_matrixRecodeFast(&self->m, t.stored, t.size, (uint64_t)t.rows, (uint64_t)t.cols, GLYD_TENSOR_FAST_CODES,
                              &expected);
    glyd_modelRelease(t.model->model, t.stored, t.size);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) {
        Py_DECREF(self);
        return raise_code(r, "the packed tensor could not be recoded");
    }
    self->ready = 1;
    self->storedSize = self->m.view.blobSize;
    return (PyObject*)self;
}

static int ready(CodedMatrixObject* self)
{
    if (self->ready) return 0;
    PyErr_SetString(PyExc_ValueError, "CodedMatrix not initialized");
    return -1;
}

/* Runs `proto` over [begin, end) on the product threads, the GIL released,
 * after sizing the fp32 buffers (xElems, yElems) and widening the input
 * (xElems of proto->x) into P.xf. linger: as run_shares. */
static PyObject* run_locked(product_job* proto, uint64_t begin, uint64_t end, uint64_t align, uint64_t work,
                            size_t xElems, size_t yElems, int linger)
{
    size_t r;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&P.lock);
    r = P.nbThreads ? 0 : set_threads_locked(0);
    if (!glyd_isError(r)) r = grow(&P.xf, &P.xfCap, xElems);
    if (!glyd_isError(r)) r = grow(&P.yf, &P.yfCap, yElems);
    if (!glyd_isError(r) && xElems) {
        size_t i;
        for (i = 0; i < xElems; i++) P.xf[i] = glyd_bf16ToF32(proto->x[i]);
    }
    if (!glyd_isError(r)) r = run_shares(proto, begin, end, align, work, linger);
    pthread_mutex_unlock(&P.lock);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) return raise_code(r, NULL);
    Py_RETURN_NONE;
}

/* matmul(x, n, out, bias=0): out (n, rows) = bf16(x (n, cols) W^T + bias),
 * all bf16 at the given addresses; fp32 sums. */
static PyObject* CodedMatrix_matmul(CodedMatrixObject* self, PyObject* args)
{
    unsigned long long x, out, bias = 0;
    Py_ssize_t n;
    product_job job;
    if (!PyArg_ParseTuple(args, "KnK|K:matmul", &x, &n, &out, &bias) || ready(self)) return NULL;
    if (n <= 0 || !x || !out) {
        PyErr_SetString(PyExc_ValueError, "matmul needs at least one vector and its buffers");
        return NULL;
    }
    if ((uint64_t)n > ((uint64_t)1 << 40) / GLYD_MAX(self->m.rows, self->m.cols)) {
        PyErr_SetString(PyExc_ValueError, "matmul: too many vectors");
        return NULL;
    }
    memset(&job, 0, sizeof job);
    job.fn = P.bf16Kernel ? product_share_bf16 : product_share;
    job.w = &self->m;
    job.nbVec = (size_t)n;
    job.x = (const uint16_t*)(uintptr_t)x;
    job.bias = (const uint16_t*)(uintptr_t)bias;
    job.out = (uint16_t*)(uintptr_t)out;
    /* the engine's kernel takes the vectors in fp32 */
    return run_locked(&job, 0, self->m.rows, glyd_matrixRowAlign(&self->m), self->m.rows * self->m.cols * (uint64_t)n,
                      P.bf16Kernel ? 0 : (size_t)n * (size_t)self->m.cols, (size_t)n * (size_t)self->m.rows, 1);
}

/* decode_rows(r0, r1, out): rows [r0, r1) as bf16 at out; r0 and r1 on
 * multiples of row_align (or r1 the last row). */
static PyObject* CodedMatrix_decode_rows(CodedMatrixObject* self, PyObject* args)
{
    long long r0, r1;
    unsigned long long out;
    uint64_t align;
    product_job job;
    if (!PyArg_ParseTuple(args, "LLK:decode_rows", &r0, &r1, &out) || ready(self)) return NULL;
    align = glyd_matrixRowAlign(&self->m);
    if (r0 < 0 || r1 <= r0 || (uint64_t)r1 > self->m.rows || (uint64_t)r0 % align ||
        ((uint64_t)r1 % align && (uint64_t)r1 != self->m.rows) || !out) {
        PyErr_Format(PyExc_ValueError, "rows [%lld, %lld) of %llu, on multiples of %llu", r0, r1,
                     (unsigned long long)self->m.rows, (unsigned long long)align);
        return NULL;
    }
    memset(&job, 0, sizeof job);
    job.fn = decode_share;
    job.w = &self->m;
    job.out = (uint16_t*)(uintptr_t)out;
    return run_locked(&job, (uint64_t)r0, (uint64_t)r1, align, (uint64_t)(r1 - r0) * self->m.cols, 0, 0, 0);
}

static PyObject* CodedMatrix_gather(CodedMatrixObject* self, PyObject* args)
{
    unsigned long long ids, out;
    Py_ssize_t n, i;
    product_job job;
    if (!PyArg_ParseTuple(args, "KnK:gather", &ids, &n, &out) || ready(self)) return NULL;
    if (n <= 0 || !ids || !out) {
        PyErr_SetString(PyExc_ValueError, "gather needs at least one index and its buffers");
        return NULL;
    }
    for (i = 0; i < n; i++) {
        int64_t const id = ((const int64_t*)(uintptr_t)ids)[i];
        if (id < 0 || (uint64_t)id >= self->m.rows) {
            PyErr_Format(PyExc_IndexError, "index %lld is out of range for %llu rows", (long long)id,
                         (unsigned long long)self->m.rows);
            return NULL;
        }
    }
    memset(&job, 0, sizeof job);
    job.fn = gather_share;
    job.w = &self->m;
    job.ids = (const int64_t*)(uintptr_t)ids;
    job.out = (uint16_t*)(uintptr_t)out;
    return run_locked(&job, 0, (uint64_t)n, 1, (uint64_t)n * GLYD_MAX(self->m.cols, (uint64_t)self->m.view.unitSize), 0, 0,
                      0);
}

/* The whole matrix decoded into a new buffer (freed by the caller), the
 * blob's checksum checked, the GIL released while it decodes. NULL and an
 * exception on failure. */
static void* decode_whole(CodedMatrixObject* self, size_t bytes)
{
    void* const tmp = malloc(bytes ? bytes : 1);
    size_t r = 0;
    if (!tmp) return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    if (self->m.plain) memcpy(tmp, self->m.plain, bytes);
    else r = glyd_tensorDecompress(tmp, bytes, self->m.blob, self->m.view.blobSize, 0);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) {
        free(tmp);
        return raise_code(r, NULL);
    }
    return tmp;
}

/* equals(data) -> bool: the matrix decoded is data, byte for byte (the
 * blob's checksum checked on the way). */
static PyObject* CodedMatrix_equals(CodedMatrixObject* self, PyObject* arg)
{
    size_t const bytes = (size_t)(self->m.rows * self->m.cols) * 2;
    Py_buffer src;
    void* decoded;
    int same;
    if (ready(self) || PyObject_GetBuffer(arg, &src, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if ((size_t)src.len != bytes) {
        PyBuffer_Release(&src);
        Py_RETURN_FALSE;
    }
    decoded = decode_whole(self, bytes);
    same = decoded && memcmp(decoded, src.buf, bytes) == 0;
    free(decoded);
    PyBuffer_Release(&src);
    if (!decoded) return NULL;
    return PyBool_FromLong(same);
}

/* verify(): decodes the whole blob and checks its checksum. */
static PyObject* CodedMatrix_verify(CodedMatrixObject* self, PyObject* unused)
{
    void* decoded;
    (void)unused;
    if (ready(self)) return NULL;
    if (self->m.plain) Py_RETURN_NONE; /* nothing coded: the pack's own checks cover it */
    decoded = decode_whole(self, (size_t)(self->m.rows * self->m.cols) * 2);
    if (!decoded) return NULL;
    free(decoded);
    Py_RETURN_NONE;
}

static PyObject* CodedMatrix_get(CodedMatrixObject* self, void* which)
{
    if (ready(self)) return NULL;
    switch ((int)(intptr_t)which) {
    case 0: return PyLong_FromUnsignedLongLong(self->m.rows);
    case 1: return PyLong_FromUnsignedLongLong(self->m.cols);
    case 2: return PyLong_FromSize_t(self->storedSize + (self->m.dt ? sizeof(*self->m.dt) : 0) +
                                     (self->m.ownedPlain ? (size_t)(self->m.rows * self->m.cols) * 2 : 0));
    case 3: return PyLong_FromUnsignedLongLong(glyd_matrixRowAlign(&self->m));
    default: return PyUnicode_FromString(self->m.plain ? "plain"
                                         : self->m.view.layout == GLYD_TLAYOUT_HUFFMAN ? "entropy" : "fast");
    }
}

static PyGetSetDef CodedMatrix_getset[] = {
    { "rows", (getter)CodedMatrix_get, NULL, "rows of the matrix", (void*)0 },
    { "cols", (getter)CodedMatrix_get, NULL, "columns of the matrix", (void*)1 },
    { "nbytes", (getter)CodedMatrix_get, NULL, "bytes held: the blob and its decoding table", (void*)2 },
    { "row_align", (getter)CodedMatrix_get, NULL, "decode_rows ranges start on multiples of this", (void*)3 },
    { "layout", (getter)CodedMatrix_get, NULL, "'fast', 'entropy' or 'plain'", (void*)4 },
    { NULL, NULL, NULL, NULL, NULL }
};

static PyMethodDef CodedMatrix_methods[] = {
    { "from_pack", (PyCFunction)CodedMatrix_from_pack, METH_VARARGS | METH_CLASS,
      "from_pack(model, file, tensor, rows, cols): the matrix where it lies in a packed model." },
    { "from_file", (PyCFunction)CodedMatrix_from_file, METH_VARARGS | METH_CLASS,
      "from_file(path, offset, rows, cols): the bf16 matrix at offset in a file, coded a slice at a time." },
    { "recode_pack", (PyCFunction)CodedMatrix_recode_pack, METH_VARARGS | METH_CLASS,
      "recode_pack(model, file, tensor, rows, cols): a packed entropy-layout tensor recoded, checked." },
    { "compress", (PyCFunction)CodedMatrix_compress, METH_VARARGS | METH_CLASS,
      "compress(data, rows, cols, threads=1): bf16 data coded in the fast layout." },
    { "equals", (PyCFunction)CodedMatrix_equals, METH_O, "equals(data) -> bool: the matrix decoded is data." },
    { "matmul", (PyCFunction)CodedMatrix_matmul, METH_VARARGS,
      "matmul(x, n, out, bias=0): out = x W^T + bias, bf16 at addresses, fp32 sums." },
    { "decode_rows", (PyCFunction)CodedMatrix_decode_rows, METH_VARARGS,
      "decode_rows(r0, r1, out): rows [r0, r1) as bf16 at address out." },
    { "gather", (PyCFunction)CodedMatrix_gather, METH_VARARGS,
      "gather(ids, n, out): the rows of n int64 indices as bf16 at address out." },
    { "verify", (PyCFunction)CodedMatrix_verify, METH_NOARGS, "verify(): raises Error if the blob is damaged." },
    { NULL, NULL, 0, NULL }
};

static PyTypeObject CodedMatrixType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "glyd._glyd.CodedMatrix",
    .tp_basicsize = sizeof(CodedMatrixObject),
    .tp_dealloc = (destructor)CodedMatrix_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CodedMatrix(blob, rows, cols): a bf16 matrix held in the tensor codec.",
    .tp_methods = CodedMatrix_methods,
    .tp_getset = CodedMatrix_getset,
    .tp_init = (initproc)CodedMatrix_init,
    .tp_new = PyType_GenericNew,
};

static PyObject* py_set_product_threads(PyObject* self, PyObject* arg)
{
    long n = PyLong_AsLong(arg);
    size_t r;
    (void)self;
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > MAX_SHARES) {
        PyErr_Format(PyExc_ValueError, "threads must be 0..%d", MAX_SHARES);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&P.lock);
    r = set_threads_locked((unsigned)n);
    pthread_mutex_unlock(&P.lock);
    Py_END_ALLOW_THREADS
    if (glyd_isError(r)) return raise_code(r, NULL);
    return PyLong_FromUnsignedLong(P.nbThreads);
}

static PyObject* py_rest_product_threads(PyObject* self, PyObject* unused)
{
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&P.lock);
    team_rest(P.team);
    pthread_mutex_unlock(&P.lock);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject* py_set_product_kernel(PyObject* self, PyObject* arg)
{
    const char* name = PyUnicode_AsUTF8(arg);
    int want;
    (void)self;
    if (!name) return NULL;
    if (!strcmp(name, "auto")) want = glyd_bf16PairsUsable();
    else if (!strcmp(name, "engine")) want = 0;
    else if (!strcmp(name, "bf16") && glyd_bf16PairsUsable()) want = 1;
    else if (!strcmp(name, "bf16")) {
        PyErr_SetString(PyExc_ValueError, "this CPU has no AVX-512 BF16 for the bf16 kernel");
        return NULL;
    } else {
        PyErr_SetString(PyExc_ValueError, "kernel: 'auto', 'bf16' or 'engine'");
        return NULL;
    }
    P.bf16Kernel = want; /* read and written with the GIL held */
    return PyUnicode_FromString(want ? "bf16" : "engine");
}

static PyMethodDef coded_methods[] = {
    { "set_product_kernel", (PyCFunction)py_set_product_kernel, METH_O,
      "set_product_kernel('auto' | 'bf16' | 'engine') -> str: the kernel of products of few vectors." },
    { "rest_product_threads", (PyCFunction)py_rest_product_threads, METH_NOARGS,
      "rest_product_threads(): the product threads sleep now rather than watch for the next product." },
    { "set_product_threads", (PyCFunction)py_set_product_threads, METH_O,
      "set_product_threads(n) -> int: threads CodedMatrix products run on (0: every core)." },
    { NULL, NULL, 0, NULL }
};

int coded_matrix_add(PyObject* module)
{
    P.bf16Kernel = glyd_bf16PairsUsable();
    if (PyType_Ready(&CodedMatrixType) < 0) return -1;
    Py_INCREF(&CodedMatrixType);
    if (PyModule_AddObject(module, "CodedMatrix", (PyObject*)&CodedMatrixType) < 0) {
        Py_DECREF(&CodedMatrixType);
        return -1;
    }
    return PyModule_AddFunctions(module, coded_methods);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * forward.c: a model opened from a Hugging Face folder or a packed model,
 * its KV cache, and the forward pass, readable top to bottom:
 *
 *   x = embed[token]
 *   for each layer:
 *     h = rmsnorm(x) ; q, k, v = Wq h (+bq), Wk h (+bk), Wv h (+bv)
 *     (Qwen3: rmsnorm of each head of q and k) ; rope(q, k) ; cache k, v
 *     x += Wo attention(q, cached k, cached v)      (grouped-query heads)
 *     h = rmsnorm(x) ; x += Wdown (silu(Wgate h) * Wup h)   (or experts: moe.c)
 *   logits = lm_head rmsnorm(x)
 *
 * Qwen3.5 (deltanet.c) puts Gated DeltaNet in place of attention in most
 * layers and gates its attention's output.
 *
 * Everything is fp32 but the weights (bf16, usually coded) and, by default,
 * the cache (bf16). Prompts run through each layer GLYD_BATCH tokens at a
 * time, so that rows decoded once serve them all.
 */
#include <dirent.h>
#include <pthread.h>
#ifdef __GLIBC__
#  include <malloc.h>
#endif
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "infer.h"

struct glyd_llm_s {
    glyd_llmConfig cfg;
    char arch[64];
    /* where the weights live */
    glyd_model* packed;
    glyd_mappedFile* maps;      /* folder: each safetensors file, mapped */
    glyd_safetensors* sts;
    size_t nbMaps;              /* allocated entries of maps */
    size_t nbSt;                /* entries of sts parsed */
    int plain;
    int compact;                /* coded weights in the entropy layout */
    int checkWeights;           /* a packed model's tensors checked as they load */
    unsigned fastCodes;         /* the fast layout's code count the products take */
    /* weights */
    glyd_matrix embed;          /* (vocab, dim) */
    glyd_matrix head;           /* (vocab, dim); unused when tied */
    float* finalNorm;           /* (dim) */
    glyd_layer* layers;         /* (nbLayers) */
    unsigned long long weightBytes, weightBf16;
    /* running */
    unsigned nbThreads;
    glyd_pool* pool;
    glyd_decodeScratch* scratch;/* (nbThreads) */
    unsigned long long ctx;
    int kvF32;
    int kvLossless;             /* glyd_llmParams' */
    int chunkedPrompts;       /* glyd_llmParams' */
    int bf16Prompts;          /* glyd_llmParams' */
    int bf16Decode;           /* glyd_llmParams' */
    void* kCache;               /* (nbLayers, ctx, nbKvHeads * headDim), fp32 or bf16 */
    void* vCache;
    /* --kv lossless: the cache in coded pages instead; each position's keys
     * and values on their way in (2, nbKvHeads * headDim), and each
     * thread's room for a head's keys and values decoded (2, ctx rounded up
     * to a page, headDim) */
    glyd_kvPaged* kvPaged;
    uint16_t* kvIn;
    uint16_t* kvRows;
    /* activations of a batch of up to GLYD_BATCH tokens, one row each */
    float *x, *xn, *xb2;        /* (batch, dim) */
    float* ao;                  /* (batch, nbHeads * headDim): attention's output */
    float *q;                   /* (batch, nbHeads * headDim) */
    float *k, *v;               /* (batch, nbKvHeads * headDim) */
    float *hb, *hb2;            /* (batch, hidden) */
    float* att;                 /* (nbThreads, ctx): each thread's softmax weights */
    float* invFreq;             /* (headDim / 2) */
    float *ropeCos, *ropeSin;   /* (headDim / 2): the current position's rotation */
    float ropeScale;
    float* logits;              /* (vocab): greedy decoding's, allocated when first used */
    glyd_moeState* moe;         /* the layers of experts' buffers, when the model has some */
    /* where the forward pass runs: the CPU (this struct's buffers) or the GPU */
    const glyd_backendOps* ops;
    void* backend;
    const char* backendName;
    unsigned long long deviceBytes;
    /* Qwen3.5: the Gated DeltaNet layers' state, the position it has
     * reached (the only one but 0 a forward pass may start at), the
     * attention's output gates (batch, nbHeads * headDim), and the tensors
     * of the checkpoint the text model does not use */
    glyd_deltaNet* dn;
    size_t dnEnd;
    float* gate;
    unsigned long long ignored;
    float* invFreqLocal;        /* Gemma 3's sliding layers' (headDim / 2), else NULL */
    float ropeScaleLocal;
};

/* The CPU backend's operations (below, with the pieces of the forward pass). */
static const glyd_backendOps kCpuOps;

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static void say(const glyd_llmParams* p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const glyd_llmParams* p, const char* fmt, ...)
{
    va_list ap;
    if (!p || !p->message || !p->messageCapacity) return;
    va_start(ap, fmt);
    vsnprintf(p->message, p->messageCapacity, fmt, ap);
    va_end(ap);
}

/* Puts "PATH: " before the message already said, naming the model a
 * tensor's message is about. */
static void say_in(const glyd_llmParams* p, const char* path)
{
    char said[512];
    if (!p || !p->message || !p->messageCapacity || !p->message[0]) return;
    snprintf(said, sizeof said, "%s", p->message);
    say(p, "%s: %s", path, said);
}

/* A tensor that failed to load; damage is the likeliest cause of a checksum
 * or decoding error in a packed model, and the message says so. */
static void say_tensor_error(const glyd_llmParams* p, const char* name, size_t err)
{
    switch (glyd_getErrorCode(err)) {
    case GLYD_error_checksum_wrong:
        say(p, "tensor %s is damaged: its bytes do not match the packed model's checksum", name);
        break;
    case GLYD_error_corruption_detected:
        say(p, "tensor %s is damaged: %s", name, glyd_getErrorName(err));
        break;
    default:
        say(p, "tensor %s: %s", name, glyd_getErrorName(err));
    }
}

/* ------------------------------------------------------------------------ */
/* Finding tensors                                                          */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char* dtype;          /* as safetensors spells it */
    unsigned ndim;
    uint64_t shape[GLYD_ST_MAX_DIMS];
    uint64_t nbElements;
    const uint8_t* data;        /* folder: the bytes; packed: the stored blob */
    size_t size;
    int codec;                  /* -1 folder bytes; packed: 0 raw, 1 frame, 2 tensor blob */
    size_t file, index;         /* packed: where */
    uint64_t checksum;          /* packed: XXH3-64 of the original bytes, from the index */
} tensor_ref;

static int find_named(const glyd_llm* m, const char* name, tensor_ref* t)
{
    size_t f, i;
    char nested[256];
    memset(t, 0, sizeof(*t));
    /* Qwen3_5ForConditionalGeneration keeps its text model's tensors
     * under model.language_model. */
    if (m->cfg.nestedText && !strncmp(name, "model.", 6)) {
        snprintf(nested, sizeof nested, "model.language_model.%s", name + 6);
        name = nested;
    }
    if (m->packed) {
        size_t const nbFiles = glyd_modelNbFiles(m->packed);
        for (f = 0; f < nbFiles; f++) {
            glyd_modelFileInfo fi;
            glyd_modelGetFile(m->packed, f, &fi);
            for (i = 0; i < fi.nbTensors; i++) {
                glyd_modelTensorInfo ti;
                unsigned d;
                glyd_modelGetTensor(m->packed, f, i, &ti);
                if (strcmp(ti.name, name) != 0) continue;
                t->dtype = ti.dtype;
                t->ndim = ti.ndim;
                for (d = 0; d < ti.ndim; d++) t->shape[d] = ti.shape[d];
                t->nbElements = ti.nbElements;
                t->codec = glyd_modelTensorStored(m->packed, f, i, &t->data, &t->size);
                t->checksum = ti.checksum;
                t->file = f;
                t->index = i;
                return 1;
            }
        }
        return 0;
    }
    for (f = 0; f < m->nbSt; f++) {
        const glyd_safetensors* const st = &m->sts[f];
        for (i = 0; i < st->nbTensors; i++) {
            const glyd_stTensor* const s = &st->tensors[i];
            unsigned d;
            if (strcmp(s->name, name) != 0) continue;
            t->dtype = glyd_stDtypeName(s->dtype);
            t->ndim = s->ndim;
            for (d = 0; d < s->ndim; d++) t->shape[d] = s->shape[d];
            t->nbElements = s->nbElements;
            t->data = st->base + st->dataStart + s->begin;
            t->size = (size_t)(s->end - s->begin);
            t->codec = -1;
            t->file = f;
            return 1;
        }
    }
    return 0;
}

/* A tensor by its name in a text model's checkpoint. Gemma 3's multimodal
 * checkpoints hold the text model under language_model.model. (as
 * transformers saves them) or model.language_model. (as it names them in
 * memory), and lm_head beside it. */
static int find_tensor(const glyd_llm* m, const char* name, tensor_ref* t)
{
    static const char* const kText[] = { "language_model.model.", "model.language_model." };
    char mapped[256];
    size_t k;
    if (!m->cfg.multimodal) return find_named(m, name, t);
    for (k = 0; k < 2 && !strncmp(name, "model.", 6); k++) {
        snprintf(mapped, sizeof mapped, "%s%s", kText[k], name + 6);
        if (find_named(m, mapped, t)) return 1;
    }
    if (strcmp(name, "lm_head.weight") != 0) return 0;
    return find_named(m, name, t) || find_named(m, "language_model.lm_head.weight", t);
}

/* The mapping that holds a tensor's bytes, for letting its pages go. */
static void release_source(const glyd_llm* m, const tensor_ref* t)
{
    if (m->packed) glyd_modelRelease(m->packed, t->data, t->size);
    else if (t->file < m->nbMaps) glyd_mappedRelease(&m->maps[t->file], t->data, t->size);
}

typedef struct {
    const glyd_llm* m;
    const tensor_ref* t;
} slice_source;

static void release_slice(void* opaque, const void* p, size_t n)
{
    const slice_source* const s = (const slice_source*)opaque;
    glyd_mappedRelease(&s->m->maps[s->t->file], p, n);
}

/* A folder's bf16 matrix into a fast-layout blob, the mapped source's
 * pages let go behind each slice. */
static size_t encode_fast(const glyd_llm* m, glyd_matrix* w, const uint16_t* src, uint64_t rows, uint64_t cols,
                          const tensor_ref* t)
{
    slice_source s;
    s.m = m;
    s.t = t;
    return glyd_matrixEncodeFast(w, src, rows, cols, m->fastCodes, t && t->file < m->nbMaps ? release_slice : NULL,
                                 &s);
}

/* A packed tensor's stored bytes, checked before they are used where they
 * lie: the one thing between a damaged file and silently wrong logits.
 * Packs whose index lacks the stored bytes' checksum have the tensor
 * decoded once here, a slower load. */
static size_t check_stored(const glyd_llm* m, const tensor_ref* t)
{
    if (!m->checkWeights) return 0;
    return glyd_modelVerifyTensor(m->packed, t->file, t->index, 1);
}

/* A packed model's tensor blob in another layout (or the fast one with
 * other codes), recoded into the fast one with the products' codes. Its
 * first pass checks the values against the index's checksum, which is what
 * makes the recoded blob trustworthy. */
static size_t recode_fast(glyd_llm* m, glyd_matrix* w, const tensor_ref* t, uint64_t rows, uint64_t cols)
{
    size_t const r = glyd_matrixRecodeFast(w, t->data, t->size, rows, cols, m->fastCodes,
                                           m->checkWeights ? &t->checksum : NULL);
    release_source(m, t);
    return r;
}

/* The entropy layout, as a packed model would hold it, from a folder's bf16. */
static size_t encode_entropy(const glyd_llm* m, glyd_matrix* w, const tensor_ref* t, uint64_t rows, uint64_t cols)
{
    size_t const cap = glyd_tensorCompressBound((size_t)(rows * cols), GLYD_DTYPE_BF16);
    uint8_t* blob = (uint8_t*)malloc(cap);
    size_t r;
    RETURN_ERROR_IF(!blob, memory_allocation, "weights");
    /* one thread: the matrices are coded side by side already */
    r = glyd_tensorCompress(blob, cap, t->data, (size_t)(rows * cols), GLYD_DTYPE_BF16, (size_t)cols,
                            glyd_tensor_auto, 1);
    release_source(m, t);
    if (!glyd_isError(r)) {
        /* the blob is far smaller than its bound: give the rest back */
        uint8_t* const fit = (uint8_t*)realloc(blob, r);
        if (fit) blob = fit;
        r = glyd_matrixCoded(w, blob, r, rows, cols);
    }
    if (glyd_isError(r)) { free(blob); return r; }
    w->ownedBlob = blob;
    return 0;
}

/* A matrix to load: found and checked first, in order; then coded, on the
 * loading threads. */
typedef struct {
    glyd_llm* m;
    glyd_matrix* w;
    const char* name;
    tensor_ref t;
    uint64_t rows, cols;
    size_t result;
    struct load_s* load;
} matrix_job;

/* What the loading threads share: progress, reported as each matrix is done. */
typedef struct load_s {
    pthread_mutex_t lock;
    const glyd_llmParams* p;
    unsigned long long done, total;
} load_state;

static size_t find_matrix(glyd_llm* m, const glyd_llmParams* p, matrix_job* j, glyd_matrix* w, const char* name,
                          uint64_t rows, uint64_t cols)
{
    tensor_ref* const t = &j->t;
    j->m = m;
    j->w = w;
    j->name = name;
    j->rows = rows;
    j->cols = cols;
    j->result = 0;
    if (!find_tensor(m, name, t)) {
        say(p, "tensor %s is missing", name);
        RETURN_ERROR(model_invalid, "missing tensor");
    }
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
        say(p, "tensor %s: shape [%llu, %llu] expected", name, (unsigned long long)rows, (unsigned long long)cols);
        RETURN_ERROR(model_invalid, "tensor shape");
    }
    if (strcmp(t->dtype, "BF16") != 0) {
        say(p, "tensor %s is %s: the engine takes bf16 weights", name, t->dtype);
        RETURN_ERROR(model_unsupported, "weight dtype");
    }
    return 0;
}

/* A matrix in the form the open asked for. */
static size_t code_matrix(glyd_llm* m, glyd_matrix* w, const tensor_ref* t, uint64_t rows, uint64_t cols)
{
    size_t r = 0;
    switch (t->codec) {
    case -1: /* a folder's bytes */
        if (m->plain) glyd_matrixPlain(w, (const uint16_t*)(const void*)t->data, rows, cols);
        else if (m->compact) r = encode_entropy(m, w, t, rows, cols);
        else r = encode_fast(m, w, (const uint16_t*)(const void*)t->data, rows, cols, t);
        break;
    case 0: /* stored raw in the packed file */
        r = check_stored(m, t);
        if (!glyd_isError(r)) glyd_matrixPlain(w, (const uint16_t*)(const void*)t->data, rows, cols);
        break;
    case 2: { /* a tensor blob: used where it lies, or recoded */
        glyd_tensorView v;
        r = glyd_tensorOpen(&v, t->data, t->size);
        if (glyd_isError(r)) break;
        if (m->compact || (v.layout == GLYD_TLAYOUT_FAST && v.fastCodes == m->fastCodes) ||
            v.layout == GLYD_TLAYOUT_STORED) {
            r = check_stored(m, t);
            if (!glyd_isError(r)) r = glyd_matrixCoded(w, t->data, t->size, rows, cols);
        } else {
            r = recode_fast(m, w, t, rows, cols); /* checks the values it decodes */
        }
        break;
    }
    default: { /* a frame: read whole, kept plain */
        uint16_t* const plain = (uint16_t*)malloc((size_t)(rows * cols) * 2);
        RETURN_ERROR_IF(!plain, memory_allocation, "weights");
        r = glyd_modelReadTensor(m->packed, t->file, t->index, plain, (size_t)(rows * cols) * 2, 1);
        if (glyd_isError(r)) { free(plain); break; }
        glyd_matrixPlain(w, plain, rows, cols);
        w->ownedPlain = plain;
        break;
    }
    }
    return glyd_isError(r) ? r : 0;
}

static void matrix_job_run(void* arg)
{
    matrix_job* const j = (matrix_job*)arg;
    j->result = code_matrix(j->m, j->w, &j->t, j->rows, j->cols);
    pthread_mutex_lock(&j->load->lock);
    j->load->done += j->rows * j->cols * 2;
    if (j->load->p && j->load->p->progress) j->load->p->progress(j->load->p->opaque, j->load->done, j->load->total);
    pthread_mutex_unlock(&j->load->lock);
}

/* Codes every matrix on the engine's threads, the largest first. */
static size_t code_matrices(glyd_llm* m, const glyd_llmParams* p, matrix_job* jobs, size_t nb,
                            unsigned long long total)
{
    load_state load;
    glyd_pool* pool = NULL;
    size_t i, r = 0;
    load.p = p;
    load.done = 0;
    load.total = total;
    RETURN_ERROR_IF(pthread_mutex_init(&load.lock, NULL) != 0, threads_unavailable, "lock");
    if (m->nbThreads > 1 && nb > 1) pool = glyd_poolCreate(GLYD_MIN(m->nbThreads, (unsigned)nb), glyd_defaultCMem);
    for (i = 0; i < nb; i++) {
        jobs[i].load = &load;
        if (pool) glyd_poolAdd(pool, matrix_job_run, &jobs[i]);
        else matrix_job_run(&jobs[i]);
    }
    glyd_poolFree(pool); /* waits for every job */
    pthread_mutex_destroy(&load.lock);
    for (i = 0; i < nb; i++) {
        if (glyd_isError(jobs[i].result) && !glyd_isError(r)) {
            say_tensor_error(p, jobs[i].name, jobs[i].result);
            r = jobs[i].result;
        }
        if (!glyd_isError(jobs[i].result)) {
            m->weightBytes += glyd_matrixBytes(jobs[i].w);
            m->weightBf16 += jobs[i].rows * jobs[i].cols * 2;
        }
    }
    return r;
}

/* An array of n values as floats; bf16 or fp32. Its shape is [n], or
 * [n, 1, k] when k (else 0) is given (a depthwise convolution's filter,
 * n / k channels of k taps). */
static size_t load_array(glyd_llm* m, const glyd_llmParams* p, float** out, const char* name, uint64_t n, uint64_t k)
{
    tensor_ref t;
    uint8_t* bytes = NULL;
    const uint8_t* src;
    size_t elem, i;
    *out = NULL;
    if (!find_tensor(m, name, &t)) {
        say(p, "tensor %s is missing", name);
        RETURN_ERROR(model_invalid, "missing tensor");
    }
    if (k && (t.ndim != 3 || t.shape[0] != n / k || t.shape[1] != 1 || t.shape[2] != k)) {
        say(p, "tensor %s: shape [%llu, 1, %llu] expected", name, (unsigned long long)(n / k), (unsigned long long)k);
        RETURN_ERROR(model_invalid, "tensor shape");
    }
    if (!k && (t.ndim != 1 || t.shape[0] != n)) {
        say(p, "tensor %s: shape [%llu] expected", name, (unsigned long long)n);
        RETURN_ERROR(model_invalid, "tensor shape");
    }
    if (!strcmp(t.dtype, "BF16")) elem = 2;
    else if (!strcmp(t.dtype, "F32")) elem = 4;
    else {
        say(p, "tensor %s is %s: bf16 or f32 expected", name, t.dtype);
        RETURN_ERROR(model_unsupported, "vector dtype");
    }
    *out = (float*)malloc((size_t)n * sizeof(float));
    RETURN_ERROR_IF(!*out, memory_allocation, "vector");
    if (t.codec == -1 || t.codec == 0) {
        size_t const r = t.codec == 0 ? check_stored(m, &t) : 0;
        if (glyd_isError(r)) { say_tensor_error(p, name, r); return r; }
        src = t.data;
    } else {
        size_t r;
        bytes = (uint8_t*)malloc((size_t)n * elem);
        RETURN_ERROR_IF(!bytes, memory_allocation, "vector");
        r = glyd_modelReadTensor(m->packed, t.file, t.index, bytes, (size_t)n * elem, 1);
        if (glyd_isError(r)) { say_tensor_error(p, name, r); free(bytes); return r; }
        src = bytes;
    }
    for (i = 0; i < n; i++) {
        if (elem == 2) {
            uint32_t const u = (uint32_t)glyd_read16(src + 2 * i) << 16;
            memcpy(&(*out)[i], &u, 4);
        } else {
            uint32_t const u = glyd_read32(src + 4 * i);
            memcpy(&(*out)[i], &u, 4);
        }
    }
    m->weightBytes += (unsigned long long)n * elem;
    m->weightBf16 += (unsigned long long)n * 2;
    free(bytes);
    if (!m->plain && t.codec == -1) release_source(m, &t);
    return 0;
}

/* A vector (norm weights, biases) as floats; bf16 or fp32. */
static size_t load_vector(glyd_llm* m, const glyd_llmParams* p, float** out, const char* name, uint64_t n)
{
    return load_array(m, p, out, name, n, 0);
}

static int has_tensor(const glyd_llm* m, const char* name)
{
    tensor_ref t;
    return find_tensor(m, name, &t);
}

static int unused_by_text(const char* name)
{
    return !strncmp(name, "model.visual.", 13) || !strncmp(name, "mtp.", 4);
}

/* The tensors of a Qwen3.5 checkpoint that its text model does not use:
 * the vision tower and the multi-token-prediction head, left as they lie. */
static unsigned long long count_unused(const glyd_llm* m)
{
    unsigned long long n = 0;
    size_t f, i;
    if (m->packed) {
        for (f = 0; f < glyd_modelNbFiles(m->packed); f++) {
            glyd_modelFileInfo fi;
            glyd_modelGetFile(m->packed, f, &fi);
            for (i = 0; i < fi.nbTensors; i++) {
                glyd_modelTensorInfo ti;
                glyd_modelGetTensor(m->packed, f, i, &ti);
                n += unused_by_text(ti.name);
            }
        }
        return n;
    }
    for (f = 0; f < m->nbSt; f++)
        for (i = 0; i < m->sts[f].nbTensors; i++) n += unused_by_text(m->sts[f].tensors[i].name);
    return n;
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                  */
/* ------------------------------------------------------------------------ */

static int cmp_str(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

/* Maps every safetensors file of the folder. */
static size_t open_folder(glyd_llm* m, const glyd_llmParams* p, const char* dir)
{
    DIR* const d = opendir(dir);
    struct dirent* e;
    char** names = NULL;
    size_t nb = 0, cap = 0, i;
    size_t r = 0;
    if (!d) {
        say(p, "%s: cannot open the folder", dir);
        RETURN_ERROR(io_failed, "folder");
    }
    while ((e = readdir(d)) != NULL) {
        size_t const len = strlen(e->d_name);
        if (len <= 12 || strcmp(e->d_name + len - 12, ".safetensors") != 0) continue;
        if (nb == cap) {
            char** const n2 = (char**)realloc(names, (cap = cap ? 2 * cap : 8) * sizeof(char*));
            if (!n2) { r = GLYD_ERROR(memory_allocation); break; }
            names = n2;
        }
        names[nb] = (char*)malloc(strlen(dir) + len + 2);
        if (!names[nb]) { r = GLYD_ERROR(memory_allocation); break; }
        sprintf(names[nb], "%s/%s", dir, e->d_name);
        nb++;
    }
    closedir(d);
    if (!glyd_isError(r) && nb == 0) {
        say(p, "%s: no .safetensors file", dir);
        r = GLYD_ERROR(model_invalid);
    }
    if (!glyd_isError(r)) {
        qsort(names, nb, sizeof(char*), cmp_str);
        m->maps = (glyd_mappedFile*)calloc(nb, sizeof(glyd_mappedFile));
        m->sts = (glyd_safetensors*)calloc(nb, sizeof(glyd_safetensors));
        if (!m->maps || !m->sts) r = GLYD_ERROR(memory_allocation);
        else m->nbMaps = nb;
    }
    for (i = 0; i < nb && !glyd_isError(r); i++) {
        const char* why = "";
        r = glyd_mapFile(&m->maps[i], names[i]);
        if (glyd_isError(r)) { say(p, "%s: cannot read it", names[i]); break; }
        r = glyd_stParse(&m->sts[i], m->maps[i].data, m->maps[i].size, &why);
        if (glyd_isError(r)) { say(p, "%s: not a valid safetensors file: %s", names[i], why); break; }
        m->nbSt = i + 1;
    }
    for (i = 0; i < nb; i++) free(names[i]);
    free(names);
    return r;
}

/* Qwen3.5's recurrence in the form the forward pass uses it: it decays
 * by -exp(A_log). (Its norms' 1 + w is glyd_offsetNorms'.) */
static void qwen3_5_weights(glyd_llm* m)
{
    glyd_llmConfig const* const c = &m->cfg;
    unsigned l, i;
    for (l = 0; l < c->nbLayers; l++) {
        glyd_layer* const L = &m->layers[l];
        for (i = 0; L->aNeg && i < c->linearValueHeads; i++) L->aNeg[i] = -expf(L->aNeg[i]);
    }
}

static size_t load_weights(glyd_llm* m, const glyd_llmParams* p)
{
    glyd_llmConfig const* const c = &m->cfg;
    uint64_t const qDim = (uint64_t)c->nbHeads * c->headDim, kvDim = (uint64_t)c->nbKvHeads * c->headDim;
    unsigned long long total = 0;
    unsigned l;
    size_t nb = 0, nbMoe = 0, r;
    char (*names)[128];
    matrix_job* jobs;
    /* a layer of experts has a router and each expert's three matrices */
    for (l = 0; l < c->nbLayers; l++) nbMoe += glyd_moeSparse(c, l) != 0;
    m->layers = (glyd_layer*)calloc(c->nbLayers, sizeof(glyd_layer));
    jobs = (matrix_job*)calloc(2 + 8 * (size_t)c->nbLayers + nbMoe * (1 + 3 * (size_t)c->nbExperts),
                               sizeof(matrix_job));
    names = (char(*)[128])calloc(2 + 8 * (size_t)c->nbLayers + nbMoe * (1 + 3 * (size_t)c->nbExperts), 128);
    if (!m->layers || !jobs || !names) { free(jobs); free(names); RETURN_ERROR(memory_allocation, "layers"); }
#define MATRIX(w, rows, cols, ...)                                                                     \
    do {                                                                                               \
        snprintf(names[nb], 128, __VA_ARGS__);                                                         \
        r = find_matrix(m, p, &jobs[nb], (w), names[nb], (rows), (cols));                             \
        nb++;                                                                                          \
        if (glyd_isError(r)) goto done;                                                                \
    } while (0)
#define VECTOR(v, name, n) do { r = load_vector(m, p, (v), (name), (n)); if (glyd_isError(r)) goto done; } while (0)
    MATRIX(&m->embed, c->vocab, c->dim, "model.embed_tokens.weight");
    if (!c->tied && has_tensor(m, "lm_head.weight")) {
        MATRIX(&m->head, c->vocab, c->dim, "lm_head.weight");
    } else if (!c->tied) {
        say(p, "tensor lm_head.weight is missing (and tie_word_embeddings is false)");
        r = GLYD_ERROR(model_invalid);
        goto done;
    }
    VECTOR(&m->finalNorm, "model.norm.weight", c->dim);
    for (l = 0; l < c->nbLayers; l++) {
        glyd_layer* const L = &m->layers[l];
        char name[128];
#define NAME(fmt) (snprintf(name, sizeof name, "model.layers.%u." fmt, l), name)
        if (c->arch == GLYD_ARCH_QWEN3_5 && glyd_layerIsLinear(c, l)) {
            /* Gated DeltaNet in place of attention */
            uint64_t const keys = (uint64_t)c->linearKeyHeads * c->linearKeyDim;
            uint64_t const values = (uint64_t)c->linearValueHeads * c->linearValueDim;
            MATRIX(&L->wQkv, 2 * keys + values, c->dim, "model.layers.%u.linear_attn.in_proj_qkv.weight", l);
            MATRIX(&L->wZ, values, c->dim, "model.layers.%u.linear_attn.in_proj_z.weight", l);
            MATRIX(&L->wB, c->linearValueHeads, c->dim, "model.layers.%u.linear_attn.in_proj_b.weight", l);
            MATRIX(&L->wA, c->linearValueHeads, c->dim, "model.layers.%u.linear_attn.in_proj_a.weight", l);
            MATRIX(&L->wOut, c->dim, values, "model.layers.%u.linear_attn.out_proj.weight", l);
            r = load_array(m, p, &L->conv, NAME("linear_attn.conv1d.weight"), (2 * keys + values) * c->linearConv,
                           c->linearConv);
            if (glyd_isError(r)) goto done;
            VECTOR(&L->dtBias, NAME("linear_attn.dt_bias"), c->linearValueHeads);
            VECTOR(&L->aNeg, NAME("linear_attn.A_log"), c->linearValueHeads);
            VECTOR(&L->gateNorm, NAME("linear_attn.norm.weight"), c->linearValueDim);
        } else {
            /* Qwen3.5's q_proj gives each head's query, then its gate */
            MATRIX(&L->wq, qDim * (c->attnGate ? 2 : 1), c->dim, "model.layers.%u.self_attn.q_proj.weight", l);
            MATRIX(&L->wk, kvDim, c->dim, "model.layers.%u.self_attn.k_proj.weight", l);
            MATRIX(&L->wv, kvDim, c->dim, "model.layers.%u.self_attn.v_proj.weight", l);
            MATRIX(&L->wo, c->dim, qDim, "model.layers.%u.self_attn.o_proj.weight", l);
        }
        if (glyd_moeSparse(c, l)) {
            unsigned e, k;
            L->moe = glyd_moeLayerAlloc(c);
            if (!L->moe) { r = GLYD_ERROR(memory_allocation); goto done; }
            glyd_moeTensorName(c, l, 0, 0, name, sizeof name);
            if (!has_tensor(m, name)) {
                char fused[128];
                glyd_moeTensorName(c, l, 0, 3, fused, sizeof fused);
                if (has_tensor(m, fused)) {
                    say(p, "tensor %s: experts fused in one tensor are not supported (one tensor per expert, as "
                           "checkpoints on the hub hold them, is)", fused);
                    r = GLYD_ERROR(model_unsupported);
                    goto done;
                }
            }
            glyd_moeTensorName(c, l, -1, 0, name, sizeof name);
            MATRIX(&L->moe->router, c->nbExperts, c->dim, "%s", name);
            for (e = 0; e < c->nbExperts; e++) {
                for (k = 0; k < 3; k++) {
                    glyd_matrix* const w = k == 0 ? &L->moe->gate[e] : k == 1 ? &L->moe->up[e] : &L->moe->down[e];
                    glyd_moeTensorName(c, l, (int)e, k, name, sizeof name);
                    MATRIX(w, k == 2 ? c->dim : c->moeHidden, k == 2 ? c->moeHidden : c->dim, "%s", name);
                }
            }
        } else {
            MATRIX(&L->wGate, c->hidden, c->dim, "model.layers.%u.mlp.gate_proj.weight", l);
            MATRIX(&L->wUp, c->hidden, c->dim, "model.layers.%u.mlp.up_proj.weight", l);
            MATRIX(&L->wDown, c->dim, c->hidden, "model.layers.%u.mlp.down_proj.weight", l);
        }
        VECTOR(&L->attnNorm, NAME("input_layernorm.weight"), c->dim);
        if (c->gemma) { /* a norm before and after each of the attention and the MLP */
            VECTOR(&L->mlpNorm, NAME("pre_feedforward_layernorm.weight"), c->dim);
            VECTOR(&L->postAttnNorm, NAME("post_attention_layernorm.weight"), c->dim);
            VECTOR(&L->postMlpNorm, NAME("post_feedforward_layernorm.weight"), c->dim);
        } else {
            VECTOR(&L->mlpNorm, NAME("post_attention_layernorm.weight"), c->dim);
        }
        if (c->qkvBias) {
            VECTOR(&L->bq, NAME("self_attn.q_proj.bias"), qDim);
            VECTOR(&L->bk, NAME("self_attn.k_proj.bias"), kvDim);
            VECTOR(&L->bv, NAME("self_attn.v_proj.bias"), kvDim);
        }
        if (c->qkNorm && !L->conv) {
            VECTOR(&L->qNorm, NAME("self_attn.q_norm.weight"), c->headDim);
            VECTOR(&L->kNorm, NAME("self_attn.k_norm.weight"), c->headDim);
        }
#undef NAME
    }
#undef MATRIX
#undef VECTOR
    glyd_offsetNorms(c, m->layers, m->finalNorm);
    /* every matrix found and checked: now coded, on every thread */
    for (l = 0; l < nb; l++) total += 2ULL * jobs[l].rows * jobs[l].cols;
    r = code_matrices(m, p, jobs, nb, total);
    if (!glyd_isError(r) && c->arch == GLYD_ARCH_QWEN3_5) qwen3_5_weights(m);
done:
    free(jobs);
    free(names);
    return r;
}

/* The rotary frequencies, which every backend uses. */
static size_t rope_init(glyd_llm* m)
{
    m->invFreq = (float*)calloc(m->cfg.headDim / 2 + 1, sizeof(float));
    RETURN_ERROR_IF(!m->invFreq, memory_allocation, "rotary frequencies");
    glyd_ropeFrequencies(&m->cfg, m->invFreq, &m->ropeScale);
    if (m->cfg.gemma) {
        m->invFreqLocal = (float*)calloc(m->cfg.headDim / 2 + 1, sizeof(float));
        RETURN_ERROR_IF(!m->invFreqLocal, memory_allocation, "rotary frequencies");
        glyd_ropeLocalFrequencies(&m->cfg, m->invFreqLocal, &m->ropeScaleLocal);
    }
    return 0;
}

/* Layers whose keys and values the cache holds (Qwen3.5's Gated DeltaNet
 * layers keep a state of their own instead), and layer l's place among them. */
static unsigned kv_layers(const glyd_llmConfig* c) { return c->nbLayers - c->nbLinear; }

static size_t kv_slot(const glyd_llmConfig* c, unsigned l)
{
    unsigned i, slot = 0;
    for (i = 0; i < l; i++) slot += !glyd_layerIsLinear(c, i);
    return slot;
}

/* A lossless cache: the rows a thread decodes a head's keys (or values)
 * into, the context rounded up to whole pages. */
static size_t paged_rows(const glyd_llm* m)
{
    return (size_t)(m->ctx + GLYD_KV_PAGE_POSITIONS - 1) / GLYD_KV_PAGE_POSITIONS * GLYD_KV_PAGE_POSITIONS;
}

/* The CPU backend's buffers: its cache, activations, and each thread's room
 * for decoded units. */
static size_t alloc_state(glyd_llm* m)
{
    glyd_llmConfig const* const c = &m->cfg;
    size_t const qDim = (size_t)c->nbHeads * c->headDim, kvDim = (size_t)c->nbKvHeads * c->headDim;
    size_t const cacheElems = m->kvLossless ? 0 : (size_t)kv_layers(c) * (size_t)m->ctx * kvDim;
    size_t const elem = m->kvF32 ? 4 : 2;
    unsigned t, l;
    /* + 1: a model of Gated DeltaNet layers only has no cache */
    m->kCache = calloc(cacheElems + 1, elem);
    m->vCache = calloc(cacheElems + 1, elem);
    if (m->kvLossless) {
        size_t const rows = paged_rows(m);
        m->kvPaged = glyd_kvPagedCreate(kv_layers(c), c->nbKvHeads, c->headDim, (size_t)m->ctx);
        m->kvIn = (uint16_t*)calloc(2 * kvDim + 1, sizeof(uint16_t));
        m->kvRows = (uint16_t*)calloc((size_t)m->nbThreads * 2 * rows * c->headDim + 1, sizeof(uint16_t));
        RETURN_ERROR_IF(!m->kvPaged || !m->kvIn || !m->kvRows, memory_allocation, "KV cache");
    }
    m->x = (float*)calloc((size_t)GLYD_BATCH * c->dim, sizeof(float));
    m->xn = (float*)calloc((size_t)GLYD_BATCH * c->dim, sizeof(float));
    m->xb2 = (float*)calloc((size_t)GLYD_BATCH * c->dim, sizeof(float));
    m->ao = (float*)calloc((size_t)GLYD_BATCH * qDim, sizeof(float));
    m->q = (float*)calloc((size_t)GLYD_BATCH * qDim * (c->attnGate ? 2 : 1), sizeof(float));
    m->k = (float*)calloc((size_t)GLYD_BATCH * kvDim, sizeof(float));
    m->v = (float*)calloc((size_t)GLYD_BATCH * kvDim, sizeof(float));
    m->att = (float*)calloc((size_t)m->nbThreads * (size_t)m->ctx, sizeof(float));
    m->hb = (float*)calloc((size_t)GLYD_BATCH * c->hidden, sizeof(float));
    m->hb2 = (float*)calloc((size_t)GLYD_BATCH * c->hidden, sizeof(float));
    m->ropeCos = (float*)calloc(c->headDim / 2 + 1, sizeof(float));
    m->ropeSin = (float*)calloc(c->headDim / 2 + 1, sizeof(float));
    m->scratch = (glyd_decodeScratch*)calloc(m->nbThreads, sizeof(glyd_decodeScratch));
    RETURN_ERROR_IF(!m->kCache || !m->vCache || !m->x || !m->xn || !m->xb2 || !m->ao || !m->q || !m->k || !m->v ||
                    !m->att || !m->hb || !m->hb2 || !m->ropeCos || !m->ropeSin || !m->scratch,
                    memory_allocation, "model state");
    if (c->arch == GLYD_ARCH_QWEN3_5) {
        m->gate = (float*)calloc((size_t)GLYD_BATCH * qDim, sizeof(float));
        m->dn = glyd_deltaNetCreate(c, m->chunkedPrompts);
        RETURN_ERROR_IF(!m->gate || !m->dn, memory_allocation, "model state");
    }
    for (t = 0; t < m->nbThreads; t++) {
        m->scratch[t].bf16Pairs = m->bf16Prompts;
        m->scratch[t].bf16Decode = m->bf16Decode;
        FORWARD_IF_ERROR(glyd_scratchReserve(&m->scratch[t], &m->embed));
        if (!c->tied) FORWARD_IF_ERROR(glyd_scratchReserve(&m->scratch[t], &m->head));
        for (l = 0; l < c->nbLayers; l++) {
            unsigned k;
            for (k = 0; k < GLYD_W_KINDS; k++) {
                const glyd_matrix* const w = glyd_layerWeight(&m->layers[l], (glyd_weightKind)k);
                if (w->rows) FORWARD_IF_ERROR(glyd_scratchReserve(&m->scratch[t], w)); /* none: experts, DeltaNet */
            }
            if (m->layers[l].moe) FORWARD_IF_ERROR(glyd_moeScratchReserve(&m->scratch[t], m->layers[l].moe));
            if (m->layers[l].conv) {
                glyd_layer const* const L = &m->layers[l];
                const glyd_matrix* const lin[5] = { &L->wQkv, &L->wZ, &L->wB, &L->wA, &L->wOut };
                for (k = 0; k < 5; k++) FORWARD_IF_ERROR(glyd_scratchReserve(&m->scratch[t], lin[k]));
            }
        }
    }
    if (c->nbExperts) {
        m->moe = glyd_moeStateAlloc(c);
        RETURN_ERROR_IF(!m->moe, memory_allocation, "experts' buffers");
    }
    if (m->nbThreads > 1) {
        m->pool = glyd_poolCreate(m->nbThreads - 1, glyd_defaultCMem);
        RETURN_ERROR_IF(!m->pool, threads_unavailable, "engine threads");
    }
    return 0;
}

/* Bytes the system could give now (MemAvailable), 0 if unknown. */
static unsigned long long available_memory(void)
{
    FILE* const f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

/* The model's context, or less: the cache may take a quarter of the
 * memory available (the weights and the rest of the system need the
 * remainder), and never under 256 positions. */
static unsigned long long default_context(const glyd_llmConfig* c, int kvF32, int kvLossless)
{
    /* coded pages: 0.70 of bf16's bytes, about what real caches take
     * (docs/KV.md) */
    unsigned long long const perPos =
        2ULL * kv_layers(c) * c->nbKvHeads * c->headDim * (kvF32 ? 4 : 2) * (kvLossless ? 7 : 10) / 10;
    unsigned long long const avail = available_memory();
    unsigned long long ctx = c->maxPositions;
    if (avail && perPos && ctx > avail / 4 / perPos) ctx = GLYD_MAX(avail / 4 / perPos, 256ULL);
    return GLYD_MIN(ctx, (unsigned long long)c->maxPositions);
}

/* The host's copies of the matrices (coded blobs, decoding tables): at
 * close, or once the GPU holds them (the CPU backend is not used again).
 * Mapped bf16 (plain weights) is the page cache's, not the process's. */
static void drop_host_weights(glyd_llm* m)
{
    unsigned l;
    for (l = 0; m->layers && l < m->cfg.nbLayers; l++) {
        glyd_layer* const L = &m->layers[l];
        glyd_matrixFree(&L->wq); glyd_matrixFree(&L->wk); glyd_matrixFree(&L->wv); glyd_matrixFree(&L->wo);
        glyd_matrixFree(&L->wGate); glyd_matrixFree(&L->wUp); glyd_matrixFree(&L->wDown);
        glyd_moeLayerFree(L->moe);
        L->moe = NULL;
        glyd_matrixFree(&L->wQkv); glyd_matrixFree(&L->wZ); glyd_matrixFree(&L->wB); glyd_matrixFree(&L->wA);
        glyd_matrixFree(&L->wOut);
    }
    glyd_matrixFree(&m->embed);
    glyd_matrixFree(&m->head);
}

/* The device that p asks for, or NULL (said why). */
static glyd_gpuDevice* open_device(const glyd_llmParams* p)
{
    char why[256] = "";
    glyd_gpuDevice* const d = p->gpu == GLYD_GPU_EMULATED ? glyd_gpuEmulated() : glyd_gpuCuda(why, sizeof why);
    if (!d) say(p, "no GPU: %s", why[0] ? why : "out of memory");
    return d;
}

/* The forward pass on device d (a GPU or its emulation), which it takes:
 * the weights as they are held here are uploaded; the CPU backend's
 * buffers are never made. */
static size_t open_gpu(glyd_llm* m, const glyd_llmParams* p, glyd_gpuDevice* d)
{
    glyd_llmWeights w;
    char why[256] = "";
    size_t r;
    memset(&w, 0, sizeof w);
    w.cfg = &m->cfg;
    w.layers = m->layers;
    w.embed = &m->embed;
    w.head = m->cfg.tied ? &m->embed : &m->head;
    w.finalNorm = m->finalNorm;
    w.invFreq = m->invFreq;
    w.ropeScale = m->ropeScale;
    w.ctx = m->ctx;
    w.kvF32 = m->kvF32;
    r = glyd_gpuBackendOpen(&w, d, &m->ops, &m->backend, &m->deviceBytes, why, sizeof why);
    m->backendName = p->gpu == GLYD_GPU_EMULATED ? "emulated" : "cuda";
    if (glyd_isError(r)) {
        /* the backend is left as it was: the CPU's */
        say(p, "GPU: %s", why);
        return r;
    }
    drop_host_weights(m);
    return 0;
}

glyd_llm* glyd_llmOpen(const char* path, const glyd_llmParams* p, size_t* error)
{
    glyd_llm* const m = (glyd_llm*)calloc(1, sizeof(glyd_llm));
    char* text = NULL;
    size_t textSize = 0, r;
    struct stat sb;
    char why[512] = ""; /* a config reason lists every supported class */
    glyd_gpuDevice* device = NULL;
    *error = 0;
    if (!m) { *error = GLYD_ERROR(memory_allocation); return NULL; }
    m->nbThreads = p && p->nbThreads ? p->nbThreads : (unsigned)GLYD_MAX(sysconf(_SC_NPROCESSORS_ONLN), 1L);
    if (m->nbThreads > GLYD_THREADS_MAX) m->nbThreads = GLYD_THREADS_MAX;
    m->kvF32 = p ? p->kvF32 : 0;
    m->kvLossless = p ? p->kvLossless : 0;
    m->chunkedPrompts = p ? p->chunkedPrompts != 0 : 0;
    m->bf16Prompts = p ? p->bf16Prompts != 0 : 0;
    m->bf16Decode = p ? p->bf16Decode != 0 : 0;
    m->plain = p ? p->plainWeights : 0;
    m->compact = p ? p->compactWeights : 0;
    m->checkWeights = p ? !p->skipWeightChecks : 1;
    /* the GPU's kernels read 3-bit codes */
    m->fastCodes = p && p->fastCodeBits == 4 ? GLYD_TENSOR_NIBBLE_CODES
                 : p && (p->fastCodeBits == 3 || p->gpu) ? GLYD_TENSOR_FAST_CODES
                 : glyd_fusedCodes();
    if (p && (unsigned)p->gpu > (unsigned)GLYD_GPU_EMULATED) {
        say(p, "backend %u: not a glyd_gpuBackend (GLYD_GPU_NONE, _CUDA or _EMULATED)", (unsigned)p->gpu);
        r = GLYD_ERROR(parameter_outOfBound);
    } else if (p && p->fastCodeBits != 0 && p->fastCodeBits != 3 && p->fastCodeBits != 4) {
        say(p, "fast codes of %u bits: 3 or 4 (0 for this CPU's best)", p->fastCodeBits);
        r = GLYD_ERROR(parameter_outOfBound);
    } else if (p && p->kvLossless && (p->kvF32 || p->gpu)) {
        say(p, "a lossless KV cache holds bf16, on the CPU: not with %s", p->gpu ? "a GPU" : "an fp32 cache");
        r = GLYD_ERROR(parameter_outOfBound);
    } else if (p && p->fastCodeBits == 4 && p->gpu) {
        say(p, "the GPU reads the fast layout's 3-bit codes, not 4-bit ones");
        r = GLYD_ERROR(parameter_outOfBound);
    } else if (stat(path, &sb) != 0) {
        say(p, "%s: no such file or folder", path);
        r = GLYD_ERROR(io_failed);
    } else if (S_ISDIR(sb.st_mode)) {
        char cfg[4096];
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        r = glyd_readFile(cfg, &text, &textSize);
        if (glyd_isError(r)) say(p, "%s: no config.json in the folder", path);
        else r = open_folder(m, p, path);
    } else if (glyd_isPackedModel(path)) {
        glyd_packParams pp;
        memset(&pp, 0, sizeof(pp));
        if (p) { pp.message = p->message; pp.messageCapacity = p->messageCapacity; }
        m->packed = glyd_modelOpen(path, &pp, &r);
        if (m->packed) {
            r = glyd_modelReadFile(m->packed, "config.json", &text, &textSize);
            if (glyd_getErrorCode(r) == GLYD_error_io_failed)
                say(p, "%s: the packed model holds no config.json", path);
            else if (glyd_isError(r))
                say(p, "%s: config.json is damaged: %s", path, glyd_getErrorName(r));
        }
    } else {
        say(p, "%s: neither a model folder nor a packed model", path);
        r = GLYD_ERROR(pack_invalid);
    }
    if (!glyd_isError(r)) {
        r = glyd_llmConfigParse(&m->cfg, text, textSize, why, sizeof why);
        if (glyd_isError(r)) say(p, "%s: %s", path, why);
    }
    free(text);
    if (!glyd_isError(r)) {
        glyd_llmConfig const* const c = &m->cfg;
        static const char* const kNames[] = { "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                                              "Qwen3MoeForCausalLM", "MixtralForCausalLM", "Qwen3_5ForCausalLM",
                                              "MistralForCausalLM", "Gemma3ForCausalLM" };
        snprintf(m->arch, sizeof m->arch, "%s",
                 c->nestedText ? "Qwen3_5ForConditionalGeneration"
                 : c->multimodal ? "Gemma3ForConditionalGeneration" : kNames[c->arch]);
        m->ctx = p && p->contextLength ? p->contextLength : default_context(c, m->kvF32, m->kvLossless);
        if (m->ctx > GLYD_MAX_POSITIONS) {
            /* the bound under which the cache's sizes cannot overflow */
            say(p, "context length %llu: at most %u positions", m->ctx, GLYD_MAX_POSITIONS);
            r = GLYD_ERROR(parameter_outOfBound);
        }
        /* the GPU before the weights: coding them can take minutes, and a
         * machine without one is told so at once */
        if (!glyd_isError(r) && p && p->gpu &&
            (glyd_isError(glyd_gpuBackendRefuses(c, why, sizeof why)) || glyd_gpuRefuses(c, m->ctx, why, sizeof why))) {
            say(p, "%s: GPU: %s", path, why);
            r = GLYD_ERROR(model_unsupported);
        }
        if (!glyd_isError(r) && p && p->gpu && !(device = open_device(p))) r = GLYD_ERROR(model_unsupported);
        if (!glyd_isError(r)) {
            r = load_weights(m, p);
            if (glyd_isError(r)) say_in(p, path);
            else if (c->arch == GLYD_ARCH_QWEN3_5) m->ignored = count_unused(m);
        }
    }
    if (!glyd_isError(r) && !m->plain && m->maps) {
        /* every matrix now lives in its own blob and every vector in
         * floats: the folder's mapped pages are no longer needed */
        size_t i;
        for (i = 0; i < m->nbSt; i++) glyd_stFree(&m->sts[i]);
        for (i = 0; i < m->nbMaps; i++) if (m->maps[i].data) glyd_unmapFile(&m->maps[i]);
        free(m->sts);
        free(m->maps);
        m->sts = NULL;
        m->maps = NULL;
        m->nbSt = m->nbMaps = 0;
    }
    m->ops = &kCpuOps;
    m->backend = m;
    m->backendName = "cpu";
    if (!glyd_isError(r)) r = rope_init(m);
    /* the CPU's buffers only where the CPU runs the model */
    if (!glyd_isError(r)) {
        r = device ? open_gpu(m, p, device) : alloc_state(m);
        device = NULL; /* open_gpu's now */
    }
    if (device) device->release(device);
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    if (glyd_isError(r)) {
        if (p && p->message && p->messageCapacity && !p->message[0])
            say(p, "%s: %s", path, glyd_getErrorName(r));
        glyd_llmClose(m);
        *error = r;
        return NULL;
    }
    return m;
}

void glyd_llmClose(glyd_llm* m)
{
    unsigned l, t;
    if (!m) return;
    if (m->ops && m->ops->close) m->ops->close(m->backend);
    glyd_poolFree(m->pool);
    drop_host_weights(m);
    if (m->layers) {
        for (l = 0; l < m->cfg.nbLayers; l++) {
            glyd_layer* const L = &m->layers[l];
            free(L->attnNorm); free(L->mlpNorm); free(L->bq); free(L->bk); free(L->bv);
            free(L->qNorm); free(L->kNorm); free(L->postAttnNorm); free(L->postMlpNorm);
            free(L->conv); free(L->dtBias); free(L->aNeg); free(L->gateNorm);
        }
        free(m->layers);
    }
    free(m->finalNorm);
    if (m->scratch) for (t = 0; t < m->nbThreads; t++) glyd_scratchFree(&m->scratch[t]);
    free(m->scratch);
    free(m->kCache); free(m->vCache);
    glyd_kvPagedFree(m->kvPaged); free(m->kvIn); free(m->kvRows);
    free(m->x); free(m->xn); free(m->xb2); free(m->ao); free(m->q); free(m->k); free(m->v); free(m->att);
    free(m->hb); free(m->hb2); free(m->invFreq); free(m->ropeCos); free(m->ropeSin); free(m->logits);
    glyd_moeStateFree(m->moe);
    free(m->gate);
    glyd_deltaNetFree(m->dn);
    free(m->invFreqLocal);
    glyd_modelClose(m->packed);
    if (m->sts) for (t = 0; t < m->nbSt; t++) glyd_stFree(&m->sts[t]);
    for (t = 0; t < m->nbMaps; t++) if (m->maps[t].data) glyd_unmapFile(&m->maps[t]);
    free(m->sts);
    free(m->maps);
    free(m);
}

size_t glyd_llmGetInfo(const glyd_llm* m, glyd_llmInfo* info)
{
    glyd_llmConfig const* const c = &m->cfg;
    memset(info, 0, sizeof(*info));
    info->architecture = m->arch;
    info->vocabSize = c->vocab;
    info->nbLayers = c->nbLayers;
    info->hiddenSize = c->dim;
    info->nbHeads = c->nbHeads;
    info->nbKvHeads = c->nbKvHeads;
    info->headDim = c->headDim;
    info->contextLength = m->ctx;
    info->maxPositions = c->maxPositions;
    info->weightBytes = m->weightBytes;
    info->weightBytesBf16 = m->weightBf16;
    info->kvBytes = 2ULL * kv_layers(c) * m->ctx * c->nbKvHeads * c->headDim * (m->kvF32 ? 4 : 2);
    info->kvBytesBf16 = 2ULL * kv_layers(c) * m->ctx * c->nbKvHeads * c->headDim * 2;
    if (m->kvPaged) {
        info->kvBytes = glyd_kvPagedBytes(m->kvPaged);
        info->kvBytesBf16 = glyd_kvPagedBytesBf16(m->kvPaged);
    }
    info->backend = m->backendName;
    info->deviceWeightBytes = m->deviceBytes;
    info->bosToken = c->bos;
    info->eosToken = c->eos;
    info->recurrent = m->dn != NULL;
    info->ignoredTensors = m->ignored;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Pieces of the forward pass                                               */
/* ------------------------------------------------------------------------ */

/* One thread's share of up to three products of the same input. */
typedef struct {
    const glyd_matrix* w[3];
    float* y[3];
    uint64_t r0[3], r1[3];
    unsigned nbW;
    const float* x;
    size_t nbVec;
    glyd_decodeScratch* s;
    size_t result;
} matmul_job;

static void matmul_run(void* arg)
{
    matmul_job* const j = (matmul_job*)arg;
    unsigned i;
    j->result = 0;
    for (i = 0; i < j->nbW && !glyd_isError(j->result); i++)
        j->result = glyd_matmulRows(j->w[i], j->x, j->nbVec, j->y[i], j->r0[i], j->r1[i], j->s);
}

/* Y_i = X W_i^T for nbW (1 to 3) matrices of the same input X (nbVec
 * rows), on the engine's threads: each thread takes its share of the rows
 * of every matrix (split on unit boundaries), so that one hand-off to the
 * threads serves them all. */
static size_t matmuls(glyd_llm* m, const glyd_matrix* const* ws, float* const* ys, unsigned nbW, const float* x,
                      size_t nbVec)
{
    matmul_job jobs[256];
    unsigned const nbJobs = m->pool ? m->nbThreads : 1;
    unsigned i, j;
    memset(&jobs[0], 0, sizeof jobs[0]);
    for (j = 0; j < nbJobs; j++) {
        jobs[j].nbW = nbW;
        jobs[j].x = x;
        jobs[j].nbVec = nbVec;
        jobs[j].s = &m->scratch[j];
        for (i = 0; i < nbW; i++) {
            uint64_t const align = glyd_matrixRowAlign(ws[i]);
            uint64_t const groups = (ws[i]->rows + align - 1) / align;
            jobs[j].w[i] = ws[i];
            jobs[j].y[i] = ys[i];
            jobs[j].r0[i] = GLYD_MIN(groups * j / nbJobs * align, ws[i]->rows);
            jobs[j].r1[i] = GLYD_MIN(groups * (j + 1) / nbJobs * align, ws[i]->rows);
        }
        /* the calling thread takes the first share itself */
        if (j > 0) glyd_poolAdd(m->pool, matmul_run, &jobs[j]);
    }
    matmul_run(&jobs[0]);
    if (nbJobs > 1) glyd_poolWait(m->pool);
    for (j = 0; j < nbJobs; j++) FORWARD_IF_ERROR(jobs[j].result);
    return 0;
}

static size_t matmul(glyd_llm* m, const glyd_matrix* w, const float* x, size_t nbVec, float* y)
{
    return matmuls(m, &w, &y, 1, x, nbVec);
}

/* out = x / rms(x) * weight, in fp32 as transformers computes it. */
static void rmsnorm(float* out, const float* x, const float* weight, size_t n, float eps)
{
    float ss = 0;
    size_t i;
    for (i = 0; i < n; i++) ss += x[i] * x[i];
    ss = 1.0f / sqrtf(ss / (float)n + eps);
    for (i = 0; i < n; i++) out[i] = weight[i] * (x[i] * ss);
}

/* The rotation of position pos: cos and sin of each rotary pair's angle,
 * with the scale they carry. */
static void rope_angles(float* cs, float* sn, unsigned rotaryDim, size_t pos, const float* invFreq, float scale)
{
    unsigned i;
    for (i = 0; i < rotaryDim / 2; i++) {
        float const angle = (float)pos * invFreq[i];
        cs[i] = cosf(angle) * scale;
        sn[i] = sinf(angle) * scale;
    }
}

/* Rotates the halves of each head's first rotaryDim values (transformers'
 * rotate_half layout; the rest, where the rotation is partial, as they are). */
static void rope(float* v, unsigned nbHeads, unsigned headDim, unsigned rotaryDim, const float* cs, const float* sn)
{
    unsigned const half = rotaryDim / 2;
    unsigned h, i;
    for (i = 0; i < half; i++) {
        float const c = cs[i], s = sn[i];
        for (h = 0; h < nbHeads; h++) {
            float* const x = v + (size_t)h * headDim;
            float const a = x[i], b = x[i + half];
            x[i] = a * c - b * s;
            x[i + half] = b * c + a * s;
        }
    }
}

static void cache_put(const glyd_llm* m, void* cache, size_t i, const float* src, size_t n)
{
    size_t k;
    if (m->kvF32) { memcpy((float*)cache + i, src, n * sizeof(float)); return; }
    for (k = 0; k < n; k++) ((uint16_t*)cache)[i + k] = gk_bf16(src[k]); /* as the GPU's cache rounds */
}

/* One thread's share of a layer's attention: the heads [i0, i1) of the
 * batch's tokens, numbered token by token. */
typedef struct {
    glyd_llm* m;
    unsigned layer;
    size_t pos;                 /* the batch's first token's */
    size_t T;                   /* the batch's tokens */
    size_t i0, i1;
    float* att;                 /* (ctx): this thread's softmax weights */
    uint16_t* rows;             /* a lossless cache: this thread's decoded head */
    size_t error;
} attend_job;

/* The same over a cache of coded pages: the heads in order, each KV head's
 * keys and values decoded once (the positions the batch sees) into the
 * thread's rows, where attention reads them as it reads a bf16 cache: the
 * same values, the same kernel, the same result. */
static void attend_paged(attend_job* j)
{
    glyd_llm* const m = j->m;
    glyd_llmConfig const* const c = &m->cfg;
    size_t const hd = c->headDim, qDim = (size_t)c->nbHeads * hd;
    size_t const rows = paged_rows(m);
    unsigned const group = c->nbHeads / c->nbKvHeads, slot = kv_slot(c, j->layer);
    size_t const from = glyd_attendFrom(c, j->layer, j->pos), end = j->pos + j->T;
    float const scale = glyd_attendScale(c);
    uint16_t* const keys = j->rows;
    uint16_t* const values = j->rows + rows * hd;
    unsigned decoded = c->nbKvHeads; /* none yet */
    size_t i;
    for (i = j->i0; i < j->i1; i++) {
        size_t const h = i / j->T, t = i % j->T, pos = j->pos + t;
        glyd_kvHead kv;
        if (h / group != decoded) {
            decoded = (unsigned)(h / group);
            j->error = glyd_kvPagedRead(m->kvPaged, slot, decoded, from, end, keys, values);
            if (GLYD_IS_ERROR(j->error)) return;
        }
        kv.f32 = 0;
        kv.k = keys;
        kv.v = values;
        kv.stride = hd;
        kv.headDim = c->headDim;
        glyd_attendHead(&kv, m->q + t * qDim + h * hd, glyd_attendFrom(c, j->layer, pos), pos, scale, j->att,
                        m->ao + t * qDim + h * hd);
    }
}

static void attend_run(void* arg)
{
    attend_job* const j = (attend_job*)arg;
    glyd_llm* const m = j->m;
    glyd_llmConfig const* const c = &m->cfg;
    size_t const hd = c->headDim, qDim = (size_t)c->nbHeads * hd, kvDim = (size_t)c->nbKvHeads * hd;
    size_t const layerBase = kv_slot(c, j->layer) * (size_t)m->ctx * kvDim;
    unsigned const group = c->nbHeads / c->nbKvHeads;
    float const scale = glyd_attendScale(c);
    size_t i;
    if (m->kvPaged) {
        attend_paged(j);
        return;
    }
    for (i = j->i0; i < j->i1; i++) {
        size_t const t = i / c->nbHeads, h = i % c->nbHeads, pos = j->pos + t;
        size_t const at = layerBase + h / group * hd;
        glyd_kvHead kv;
        kv.f32 = m->kvF32;
        kv.k = m->kvF32 ? (const void*)((const float*)m->kCache + at) : (const void*)((const uint16_t*)m->kCache + at);
        kv.v = m->kvF32 ? (const void*)((const float*)m->vCache + at) : (const void*)((const uint16_t*)m->vCache + at);
        kv.stride = kvDim;
        kv.headDim = c->headDim;
        /* causal: token t sees the cache up to its own position */
        glyd_attendHead(&kv, m->q + t * qDim + h * hd, glyd_attendFrom(c, j->layer, pos), pos, scale, j->att,
                        m->ao + t * qDim + h * hd);
    }
}

/* ------------------------------------------------------------------------ */
/* The CPU backend: the operations over the model's own buffers             */
/* ------------------------------------------------------------------------ */

static size_t cpu_embed(void* b, const int* tokens, size_t T)
{
    glyd_llm* const m = (glyd_llm*)b;
    size_t t;
    float const scale = glyd_embedScale(&m->cfg);
    for (t = 0; t < T; t++)
        FORWARD_IF_ERROR(glyd_matrixRow(&m->embed, (uint64_t)tokens[t], m->x + t * m->cfg.dim, &m->scratch[0]));
    if (scale != 1.0f) for (t = 0; t < T * m->cfg.dim; t++) m->x[t] *= scale;
    return 0;
}

static size_t cpu_norm(void* b, glyd_normKind k, unsigned layer, size_t t0, size_t T)
{
    glyd_llm* const m = (glyd_llm*)b;
    size_t const dim = m->cfg.dim;
    const float* const w = k == GLYD_NORM_FINAL ? m->finalNorm
                           : k == GLYD_NORM_ATTN ? m->layers[layer].attnNorm : m->layers[layer].mlpNorm;
    size_t t;
    for (t = t0; t < T; t++) rmsnorm(m->xn + t * dim, m->x + t * dim, w, dim, m->cfg.normEps);
    return 0;
}

static size_t cpu_project(void* b, unsigned layer, const glyd_weightKind* kinds, unsigned nbW, size_t T)
{
    glyd_llm* const m = (glyd_llm*)b;
    const glyd_matrix* ws[3];
    float* ys[3];
    unsigned i;
    for (i = 0; i < nbW; i++) {
        float* const outs[7] = { m->q, m->k, m->v, NULL, m->hb, m->hb2, NULL };
        ws[i] = glyd_layerWeight(&m->layers[layer], kinds[i]);
        ys[i] = outs[kinds[i]];
        RETURN_ERROR_IF(!ys[i], parameter_outOfBound, "not a projection of xn");
    }
    return matmuls(m, ws, ys, nbW, m->xn, T);
}

static size_t cpu_rotate_store(void* b, unsigned layer, size_t T, size_t pos)
{
    glyd_llm* const m = (glyd_llm*)b;
    glyd_llmConfig const* const c = &m->cfg;
    glyd_layer const* const L = &m->layers[layer];
    size_t const hd = c->headDim, qDim = (size_t)c->nbHeads * hd, kvDim = (size_t)c->nbKvHeads * hd;
    size_t const layerBase = kv_slot(c, layer) * (size_t)m->ctx * kvDim;
    size_t t, i;
    unsigned h;
    if (c->attnGate) glyd_splitQueryGate(m->q, m->gate, T, c->nbHeads, c->headDim);
    for (t = 0; t < T; t++) {
        float* const q = m->q + t * qDim;
        float* const k = m->k + t * kvDim;
        float* const v = m->v + t * kvDim;
        if (c->qkvBias) {
            for (i = 0; i < qDim; i++) q[i] += L->bq[i];
            for (i = 0; i < kvDim; i++) { k[i] += L->bk[i]; v[i] += L->bv[i]; }
        }
        if (c->qkNorm) {
            for (h = 0; h < c->nbHeads; h++) rmsnorm(q + h * hd, q + h * hd, L->qNorm, hd, c->normEps);
            for (h = 0; h < c->nbKvHeads; h++) rmsnorm(k + h * hd, k + h * hd, L->kNorm, hd, c->normEps);
        }
        /* one rotation for q and k alike (Gemma 3's sliding layers: theirs) */
        if (m->invFreqLocal && c->sliding[layer])
            rope_angles(m->ropeCos, m->ropeSin, c->rotaryDim, pos + t, m->invFreqLocal, m->ropeScaleLocal);
        else
            rope_angles(m->ropeCos, m->ropeSin, c->rotaryDim, pos + t, m->invFreq, m->ropeScale);
        rope(q, c->nbHeads, c->headDim, c->rotaryDim, m->ropeCos, m->ropeSin);
        rope(k, c->nbKvHeads, c->headDim, c->rotaryDim, m->ropeCos, m->ropeSin);
        if (m->kvPaged) {
            cache_put(m, m->kvIn, 0, k, kvDim);
            cache_put(m, m->kvIn, kvDim, v, kvDim);
            FORWARD_IF_ERROR(glyd_kvPagedPut(m->kvPaged, kv_slot(c, layer), pos + t, m->kvIn, m->kvIn + kvDim));
            continue;
        }
        cache_put(m, m->kCache, layerBase + (pos + t) * kvDim, k, kvDim);
        cache_put(m, m->vCache, layerBase + (pos + t) * kvDim, v, kvDim);
    }
    return 0;
}

/* Every head of every token on the engine's threads, each thread a run of
 * them: a head's result is the same whichever thread computes it. */
static size_t cpu_attend(void* b, unsigned layer, size_t T, size_t pos)
{
    glyd_llm* const m = (glyd_llm*)b;
    attend_job jobs[GLYD_THREADS_MAX];
    size_t const n = T * m->cfg.nbHeads;
    unsigned const nbJobs = m->pool ? m->nbThreads : 1;
    unsigned j;
    size_t const rows = paged_rows(m);
    for (j = 0; j < nbJobs; j++) {
        jobs[j].m = m;
        jobs[j].layer = layer;
        jobs[j].pos = pos;
        jobs[j].T = T;
        jobs[j].i0 = n * j / nbJobs;
        jobs[j].i1 = n * (j + 1) / nbJobs;
        jobs[j].att = m->att + (size_t)j * m->ctx;
        jobs[j].rows = m->kvRows ? m->kvRows + (size_t)j * 2 * rows * m->cfg.headDim : NULL;
        jobs[j].error = 0;
        if (j > 0) glyd_poolAdd(m->pool, attend_run, &jobs[j]);
    }
    attend_run(&jobs[0]);
    if (nbJobs > 1) glyd_poolWait(m->pool);
    for (j = 0; j < nbJobs; j++) FORWARD_IF_ERROR(jobs[j].error);
    return 0;
}

static size_t cpu_residual(void* b, unsigned layer, glyd_weightKind k, size_t T)
{
    glyd_llm* const m = (glyd_llm*)b;
    size_t const n = T * m->cfg.dim;
    size_t i;
    const float* const post = k == GLYD_W_O ? m->layers[layer].postAttnNorm : m->layers[layer].postMlpNorm;
    if (k == GLYD_W_O && m->cfg.attnGate)
        glyd_applyOutputGate(m->ao, m->gate, T * (size_t)m->cfg.nbHeads * m->cfg.headDim);
    FORWARD_IF_ERROR(matmul(m, glyd_layerWeight(&m->layers[layer], k), k == GLYD_W_O ? m->ao : m->hb, T, m->xb2));
    /* Gemma 3 normalizes each output before adding it */
    for (i = 0; post && i < T; i++)
        rmsnorm(m->xb2 + i * m->cfg.dim, m->xb2 + i * m->cfg.dim, post, m->cfg.dim, m->cfg.normEps);
    for (i = 0; i < n; i++) m->x[i] += m->xb2[i];
    return 0;
}

static size_t cpu_swiglu(void* b, size_t T)
{
    glyd_llm* const m = (glyd_llm*)b;
    glyd_gatedActivation(&m->cfg, m->hb, m->hb2, T * m->cfg.hidden);
    return 0;
}

static size_t cpu_logits(void* b, size_t t0, size_t T, float* out)
{
    glyd_llm* const m = (glyd_llm*)b;
    FORWARD_IF_ERROR(matmul(m, m->cfg.tied ? &m->embed : &m->head, m->xn + t0 * m->cfg.dim, T - t0, out));
    glyd_logitSoftcap(&m->cfg, out, (T - t0) * m->cfg.vocab);
    return 0;
}

/* The engine's products, for the mixture of experts (moe.c) and Gated
 * DeltaNet (deltanet.c). */
static size_t cpu_matmuls(void* opaque, const glyd_matrix* const* ws, float* const* ys, unsigned nbW, const float* x,
                          size_t nbVec)
{
    return matmuls((glyd_llm*)opaque, ws, ys, nbW, x, nbVec);
}

static size_t cpu_experts(void* b, unsigned layer, size_t T)
{
    glyd_llm* const m = (glyd_llm*)b;
    size_t const n = T * m->cfg.dim;
    size_t i;
    FORWARD_IF_ERROR(glyd_moeForward(m->layers[layer].moe, &m->cfg, m->moe, m->xn, T, m->xb2, cpu_matmuls, m));
    for (i = 0; i < n; i++) m->x[i] += m->xb2[i];
    return 0;
}

static const glyd_backendOps kCpuOps = {
    "cpu", cpu_embed, cpu_norm, cpu_project, cpu_rotate_store, cpu_attend, cpu_residual, cpu_swiglu,
    cpu_logits, NULL, NULL, cpu_experts
};

/* ------------------------------------------------------------------------ */
/* The forward pass                                                         */
/* ------------------------------------------------------------------------ */

/* Tokens [0, T) at positions pos..pos+T-1 through every layer together:
 * each token's numbers are those it would get alone (on the CPU). The
 * logits: every token's (allLogits), the last one's, or none (logits
 * NULL). */
static size_t forward_batch(glyd_llm* m, const int* tokens, size_t T, size_t pos, float* logits, int allLogits)
{
    glyd_backendOps const* const o = m->ops;
    void* const b = m->backend;
    static const glyd_weightKind kQkv[3] = { GLYD_W_Q, GLYD_W_K, GLYD_W_V };
    static const glyd_weightKind kGateUp[2] = { GLYD_W_GATE, GLYD_W_UP };
    unsigned l;

    FORWARD_IF_ERROR(o->embed(b, tokens, T));
    for (l = 0; l < m->cfg.nbLayers; l++) {
        /* attention */
        FORWARD_IF_ERROR(o->norm(b, GLYD_NORM_ATTN, l, 0, T));
        if (m->dn && glyd_layerIsLinear(&m->cfg, l)) {
            /* or Qwen3.5's Gated DeltaNet, on the CPU (the GPU backend
             * refuses such models) */
            FORWARD_IF_ERROR(glyd_deltaNetLayer(m->dn, &m->cfg, &m->layers[l], l, m->xn, m->x, T, cpu_matmuls, m));
        } else {
            FORWARD_IF_ERROR(o->project(b, l, kQkv, 3, T));
            FORWARD_IF_ERROR(o->rotateStore(b, l, T, pos));
            FORWARD_IF_ERROR(o->attend(b, l, T, pos));
            FORWARD_IF_ERROR(o->residual(b, l, GLYD_W_O, T));
        }
        /* SwiGLU */
        FORWARD_IF_ERROR(o->norm(b, GLYD_NORM_MLP, l, 0, T));
        if (m->layers[l].moe) { FORWARD_IF_ERROR(o->experts(b, l, T)); continue; }
        FORWARD_IF_ERROR(o->project(b, l, kGateUp, 2, T));
        FORWARD_IF_ERROR(o->swiglu(b, T));
        FORWARD_IF_ERROR(o->residual(b, l, GLYD_W_DOWN, T));
    }
    if (!logits) return 0; /* prompt tokens whose logits nobody reads */
    {
        size_t const first = allLogits ? 0 : T - 1;
        FORWARD_IF_ERROR(o->norm(b, GLYD_NORM_FINAL, 0, first, T));
        return o->logits(b, first, T, logits);
    }
}

/* The tokens through in batches of GLYD_BATCH; *lastT (when asked): the
 * last batch's tokens, whose states the backend holds after. */
static size_t forward_checked(glyd_llm* m, const int* tokens, size_t n, size_t pos, float* logits, int allLogits,
                              size_t* lastT)
{
    size_t i;
    RETURN_ERROR_IF(n == 0, parameter_outOfBound, "no tokens");
    RETURN_ERROR_IF(pos > m->ctx || n > m->ctx - pos, parameter_outOfBound, "context full");
    for (i = 0; i < n; i++)
        RETURN_ERROR_IF(tokens[i] < 0 || (unsigned)tokens[i] >= m->cfg.vocab, parameter_outOfBound, "token id");
    if (m->dn) {
        /* a recurrent state holds every token before it and cannot go
         * back: a sequence restarts at 0 or goes on where it stopped */
        RETURN_ERROR_IF(pos != 0 && pos != m->dnEnd, stage_wrong,
                        "Qwen3.5's recurrent state: a forward pass starts at 0 or where the last one ended");
        if (pos == 0) glyd_deltaNetReset(m->dn);
        m->dnEnd = (size_t)-1; /* until the tokens are all through */
    }
    for (i = 0; i < n; i += GLYD_BATCH) {
        size_t const T = GLYD_MIN((size_t)GLYD_BATCH, n - i);
        float* const out = allLogits ? logits + i * (size_t)m->cfg.vocab : i + T == n ? logits : NULL;
        FORWARD_IF_ERROR(forward_batch(m, tokens + i, T, pos + i, out, allLogits));
        if (lastT) *lastT = T;
    }
    if (m->dn) m->dnEnd = pos + n;
    return 0;
}

/* The last token's logits, on the host (for a backend that picks no
 * candidates itself). */
static size_t host_logits(glyd_llm* m, const int* tokens, size_t n, size_t pos)
{
    if (!m->logits) {
        m->logits = (float*)malloc((size_t)m->cfg.vocab * sizeof(float));
        RETURN_ERROR_IF(!m->logits, memory_allocation, "logits");
    }
    return forward_checked(m, tokens, n, pos, m->logits, 0, NULL);
}

/* The tokens through, then the backend's k candidates for the next one:
 * what a draw needs, without the logits leaving the backend. */
static size_t backend_candidates(glyd_llm* m, const int* tokens, size_t n, size_t pos, const int* penalized,
                                 size_t nbPenalized, float penalty, float temperature, unsigned k, float* keys,
                                 int* ids)
{
    size_t T = 0;
    FORWARD_IF_ERROR(forward_checked(m, tokens, n, pos, NULL, 0, &T));
    FORWARD_IF_ERROR(m->ops->norm(m->backend, GLYD_NORM_FINAL, 0, T - 1, T));
    return m->ops->candidates(m->backend, T, penalized, nbPenalized, penalty, temperature, k, keys, ids);
}

size_t glyd_llmGreedy(glyd_llm* m, const int* tokens, size_t n, size_t pos, int* next)
{
    size_t i, best = 0;
    float key;
    if (m->ops->candidates) return backend_candidates(m, tokens, n, pos, NULL, 0, 1.0f, 0.0f, 1, &key, next);
    FORWARD_IF_ERROR(host_logits(m, tokens, n, pos));
    for (i = 1; i < m->cfg.vocab; i++) if (m->logits[i] > m->logits[best]) best = i;
    *next = (int)best;
    return 0;
}

size_t glyd_llmSample(glyd_llm* m, const int* tokens, size_t n, size_t pos, glyd_sampler* s, const int* history,
                      size_t nbHistory, int* next)
{
    unsigned const k = glyd_samplerDeviceK(s, m->cfg.vocab);
    if (m->ops->candidates && k) {
        float keys[GLYD_SAMPLER_DEVICE_K], penalty, temperature;
        int ids[GLYD_SAMPLER_DEVICE_K];
        const int* penalized;
        size_t const nbPenalized = glyd_samplerPenalized(s, history, nbHistory, &penalized);
        glyd_samplerRules(s, &penalty, &temperature);
        FORWARD_IF_ERROR(backend_candidates(m, tokens, n, pos, penalized, nbPenalized, penalty, temperature, k,
                                            keys, ids));
        *next = glyd_samplerPick(s, keys, ids, k);
        return 0;
    }
    FORWARD_IF_ERROR(host_logits(m, tokens, n, pos));
    *next = glyd_samplerSample(s, m->logits, history, nbHistory);
    return 0;
}

size_t glyd_llmForward(glyd_llm* m, const int* tokens, size_t n, size_t pos, float* logits, int allLogits)
{
    return forward_checked(m, tokens, n, pos, logits, allLogits, NULL);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu.c: the GPU backend, the host's side of it. The weights go to the
 * device as the engine holds them (fast-layout blobs, or plain bf16 read
 * through the same kernels as a "stored" layout, so that both sum alike),
 * with the norms and biases in fp32. Each operation of the forward pass is
 * one or a few kernel launches on the device's stream; nothing waits for
 * the device but the logits (or the greedy token) at the end.
 *
 * Products: batches of 1 to 8 tokens go through the fused kernel (each
 * weight decoded into a register and multiplied there); larger batches
 * (prompts) decode tiles of whole units, widen them to fp32 and multiply
 * them through cuBLAS.
 *
 * The KV cache is paged (infer_kernels.h): pages of GK_PAGE positions are
 * taken as positions are first used, a few at a time for every layer, so
 * that memory follows the conversation rather than the context's length.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../llm/infer/infer.h"

#define MAX_GEMV_BATCH 8
#define PAGES_PER_STEP 4                   /* pages (of every layer) taken at a time */
#define TILE_ELEMENTS ((uint64_t)1 << 26)  /* a prompt product's decoded tile, at most */

typedef struct {
    uint8_t* blob;              /* device: the blob (fast or Huffman layout), or the plain bf16 values */
    gk_tensor t;                /* as the kernels read it */
    gk_huf_tables* tables;      /* device, Huffman layout: the decoding tables */
    uint16_t* runs;             /* device, Huffman layout: where each run of GK_HUF_RUN elements starts */
    uint64_t rows, cols;
} gpu_matrix;

typedef struct {
    gpu_matrix w[GLYD_W_KINDS]; /* indexed by glyd_weightKind */
    float *attnNorm, *mlpNorm;  /* (dim) */
    float *bq, *bk, *bv;        /* (qDim), (kvDim) x2, or NULL */
    float *qNorm, *kNorm;       /* (headDim), or NULL */
} gpu_layer;

typedef struct {
    glyd_gpuDevice* d;
    glyd_llmConfig cfg;
    unsigned long long ctx;
    int kvF32;
    float ropeScale;
    gpu_layer* layers;          /* (nbLayers) */
    gpu_matrix embed, head;     /* head shares embed's blob when tied */
    float *finalNorm, *invFreq; /* (dim), (headDim / 2) */
    /* activations (device), GLYD_BATCH tokens */
    float *x, *xn, *xb2;        /* (batch, dim) */
    float *q, *ao;              /* (batch, qDim) */
    float *k, *v;               /* (batch, kvDim) */
    float *hb, *hb2;            /* (batch, hidden) */
    float* logits;              /* (batch, vocab) */
    int* tokens;                /* (batch) */
    int* next;                  /* (1) */
    int* history;               /* (historyCap): the distinct tokens the penalty applies to */
    size_t historyCap;
    float* candKeys;            /* (GLYD_SAMPLER_DEVICE_K): the sampler's candidates */
    int* candIds;
    float* parts;               /* (8, units of the matrix with the most): sums of parts of long rows */
    float* attParts;            /* (batch, nbHeads, GK_ATT_SPLITS, headDim + 2): attention's chunks */
    uint16_t* tileBf16;         /* (tileCap): a prompt product's tile, decoded */
    float* tileF32;             /* (tileCap): and widened */
    uint64_t tileCap;
    /* the paged cache */
    uint64_t maxPages, nbPages; /* pages per layer: the context's, and those taken */
    int tablesStale;            /* pages taken that the device's tables do not show yet */
    void** kTable;              /* device: (nbLayers, maxPages) page addresses */
    void** vTable;
    void** hostK;               /* the same tables on the host */
    void** hostV;
    void** slabs;               /* device allocations that hold pages */
    size_t nbSlabs;
    unsigned long long weightBytes;
} gpu_backend;

static size_t dev_alloc(gpu_backend* g, void* p, size_t size)
{
    return g->d->alloc(g->d, (void**)p, size ? size : 1);
}

/* ------------------------------------------------------------------------ */
/* Opening: weights and buffers                                              */
/* ------------------------------------------------------------------------ */

static size_t upload(gpu_backend* g, void* dst, const void* src, size_t size)
{
    FORWARD_IF_ERROR(dev_alloc(g, dst, size));
    return g->d->upload(g->d, *(void**)dst, src, size);
}

static size_t upload_floats(gpu_backend* g, float** dst, const float* src, size_t n, int weights)
{
    *dst = NULL;
    if (!src) return 0;
    if (weights) g->weightBytes += n * sizeof(float);
    return upload(g, dst, src, n * sizeof(float));
}

/* The Huffman layout's decoding tables and run index, which the products
 * need beside the blob (they count in the weights' memory). */
static size_t upload_huffman(gpu_backend* g, gpu_matrix* dst, const uint8_t* blob, const gk_huf_tables* tables,
                             char* why, size_t whyCap)
{
    size_t const nbRuns = (size_t)gk_huf_index_size(&dst->t);
    uint16_t* runs;
    size_t r;
    if (dst->t.unitSize > GK_HUF_UNIT_MAX) {
        snprintf(why, whyCap, "Huffman units of %u elements (the GPU decodes at most %u at once)", dst->t.unitSize,
                 GK_HUF_UNIT_MAX);
        RETURN_ERROR(model_unsupported, "units");
    }
    runs = (uint16_t*)malloc(nbRuns * sizeof(uint16_t) + 1);
    RETURN_ERROR_IF(!runs, memory_allocation, "run index");
    r = glyd_tensorHuffmanRuns(blob, &dst->t, tables, runs);
    if (!glyd_isError(r)) r = upload(g, &dst->runs, runs, nbRuns * sizeof(uint16_t));
    free(runs);
    FORWARD_IF_ERROR(r);
    g->weightBytes += nbRuns * sizeof(uint16_t) + sizeof(*tables);
    return upload(g, &dst->tables, tables, sizeof(*tables));
}

/* A matrix as the kernels read it: a fast-layout blob as it is, or plain
 * bf16 as a "stored" blob cut into the units a coded copy would have. */
static size_t upload_matrix(gpu_backend* g, gpu_matrix* dst, const glyd_matrix* m, char* why, size_t whyCap)
{
    uint64_t const n = m->rows * m->cols;
    const void* src;
    size_t size;
    memset(dst, 0, sizeof(*dst));
    dst->rows = m->rows;
    dst->cols = m->cols;
    if (m->plain) {
        dst->t.layout = GK_LAYOUT_STORED;
        dst->t.nbElements = n;
        dst->t.unitSize = m->chunk == m->cols ? glyd_tensorUnitSize(n, m->cols) : m->chunk;
        dst->t.nbUnits = (n + dst->t.unitSize - 1) / dst->t.unitSize;
        src = m->plain;
        size = (size_t)n * 2;
    } else {
        gk_huf_tables tables;
        if (m->view.layout != GLYD_TLAYOUT_FAST && m->view.layout != GLYD_TLAYOUT_HUFFMAN) {
            snprintf(why, whyCap, "the GPU reads weights in the fast or Huffman layouts or plain bf16 (layout %u)",
                     m->view.layout);
            RETURN_ERROR(model_unsupported, "layout");
        }
        if (m->view.layout == GLYD_TLAYOUT_FAST && m->view.fastCodes != GLYD_TENSOR_FAST_CODES) {
            snprintf(why, whyCap, "the GPU reads the fast layout's 3-bit codes, not the 4-bit ones of the CPU's products");
            RETURN_ERROR(model_unsupported, "layout");
        }
        FORWARD_IF_ERROR(glyd_tensorDescribe(&m->view, m->blob, &dst->t, &tables));
        src = m->blob;
        size = (size_t)m->view.blobSize;
        if (dst->t.layout == GK_LAYOUT_HUFFMAN) FORWARD_IF_ERROR(upload_huffman(g, dst, m->blob, &tables, why, whyCap));
    }
    if (!gk_gemv_fits(&dst->t, m->cols)) {
        snprintf(why, whyCap, "a matrix of %llu columns in units of %u elements", (unsigned long long)m->cols,
                 dst->t.unitSize);
        RETURN_ERROR(model_unsupported, "units");
    }
    g->weightBytes += size;
    FORWARD_IF_ERROR(upload(g, &dst->blob, src, size));
    if (dst->t.layout == GK_LAYOUT_FAST && gk_rows_shape(&dst->t, m->cols)) {
        /* the rows kernel reads the codes as nibbles */
        FORWARD_IF_ERROR(g->d->nibbles(g->d, dst->blob, &dst->t));
        dst->t.codeForm = GK_CODES_NIBBLES;
    }
    return 0;
}

static size_t alloc_floats(gpu_backend* g, float** p, size_t n) { return dev_alloc(g, p, n * sizeof(float)); }

static size_t open_buffers(gpu_backend* g)
{
    glyd_llmConfig const* const c = &g->cfg;
    size_t const B = GLYD_BATCH, qDim = (size_t)c->nbHeads * c->headDim, kvDim = (size_t)c->nbKvHeads * c->headDim;
    uint64_t mostUnits = g->embed.t.nbUnits;
    unsigned l, k;
    for (l = 0; l < c->nbLayers; l++)
        for (k = 0; k < 7; k++) mostUnits = GLYD_MAX(mostUnits, g->layers[l].w[k].t.nbUnits);
    mostUnits = GLYD_MAX(mostUnits, g->head.t.nbUnits);
    FORWARD_IF_ERROR(alloc_floats(g, &g->x, B * c->dim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->xn, B * c->dim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->xb2, B * c->dim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->q, B * qDim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->ao, B * qDim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->k, B * kvDim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->v, B * kvDim));
    FORWARD_IF_ERROR(alloc_floats(g, &g->hb, B * c->hidden));
    FORWARD_IF_ERROR(alloc_floats(g, &g->hb2, B * c->hidden));
    FORWARD_IF_ERROR(alloc_floats(g, &g->logits, B * c->vocab));
    FORWARD_IF_ERROR(alloc_floats(g, &g->parts, MAX_GEMV_BATCH * (size_t)mostUnits));
    FORWARD_IF_ERROR(dev_alloc(g, &g->tokens, B * sizeof(int)));
    FORWARD_IF_ERROR(dev_alloc(g, &g->next, sizeof(int)));
    FORWARD_IF_ERROR(alloc_floats(g, &g->attParts, B * c->nbHeads * GK_ATT_SPLITS * ((size_t)c->headDim + 2)));
    FORWARD_IF_ERROR(alloc_floats(g, &g->candKeys, GLYD_SAMPLER_DEVICE_K));
    FORWARD_IF_ERROR(dev_alloc(g, &g->candIds, GLYD_SAMPLER_DEVICE_K * sizeof(int)));
    g->maxPages = (g->ctx + GK_PAGE - 1) / GK_PAGE;
    g->hostK = (void**)calloc((size_t)(c->nbLayers * g->maxPages), sizeof(void*));
    g->hostV = (void**)calloc((size_t)(c->nbLayers * g->maxPages), sizeof(void*));
    g->slabs = (void**)calloc((size_t)((g->maxPages + PAGES_PER_STEP - 1) / PAGES_PER_STEP), sizeof(void*));
    RETURN_ERROR_IF(!g->hostK || !g->hostV || !g->slabs, memory_allocation, "page tables");
    FORWARD_IF_ERROR(dev_alloc(g, &g->kTable, (size_t)(c->nbLayers * g->maxPages) * sizeof(void*)));
    FORWARD_IF_ERROR(dev_alloc(g, &g->vTable, (size_t)(c->nbLayers * g->maxPages) * sizeof(void*)));
    return 0;
}

static void free_matrix(glyd_gpuDevice* d, gpu_matrix* m)
{
    d->free(d, m->blob);
    d->free(d, m->tables);
    d->free(d, m->runs);
}

static void gpu_close(void* b)
{
    gpu_backend* const g = (gpu_backend*)b;
    glyd_gpuDevice* const d = g->d;
    size_t i;
    unsigned l, k;
    if (g->layers) {
        for (l = 0; l < g->cfg.nbLayers; l++) {
            gpu_layer* const L = &g->layers[l];
            for (k = 0; k < 7; k++) free_matrix(d, &L->w[k]);
            d->free(d, L->attnNorm); d->free(d, L->mlpNorm); d->free(d, L->bq); d->free(d, L->bk);
            d->free(d, L->bv); d->free(d, L->qNorm); d->free(d, L->kNorm);
        }
        free(g->layers);
    }
    if (g->head.blob != g->embed.blob) free_matrix(d, &g->head);
    free_matrix(d, &g->embed);
    d->free(d, g->finalNorm); d->free(d, g->invFreq);
    d->free(d, g->x); d->free(d, g->xn); d->free(d, g->xb2); d->free(d, g->q); d->free(d, g->ao);
    d->free(d, g->k); d->free(d, g->v); d->free(d, g->hb); d->free(d, g->hb2); d->free(d, g->logits);
    d->free(d, g->tokens); d->free(d, g->next); d->free(d, g->history); d->free(d, g->candKeys);
    d->free(d, g->candIds); d->free(d, g->parts); d->free(d, g->attParts);
    d->free(d, g->tileBf16); d->free(d, g->tileF32); d->free(d, g->kTable); d->free(d, g->vTable);
    for (i = 0; i < g->nbSlabs; i++) d->free(d, g->slabs[i]);
    free(g->slabs); free(g->hostK); free(g->hostV);
    d->release(d);
    free(g);
}

/* ------------------------------------------------------------------------ */
/* Products                                                                 */
/* ------------------------------------------------------------------------ */

/* The prompt path's tiles, taken when first needed: as large as the
 * largest matrix, up to TILE_ELEMENTS. */
static size_t reserve_tiles(gpu_backend* g, uint64_t elements)
{
    uint64_t const want = GLYD_MIN(elements, TILE_ELEMENTS);
    if (g->tileCap >= want) return 0;
    g->d->free(g->d, g->tileBf16);
    g->d->free(g->d, g->tileF32);
    g->tileBf16 = NULL;
    g->tileF32 = NULL;
    g->tileCap = 0;
    FORWARD_IF_ERROR(dev_alloc(g, &g->tileBf16, (size_t)want * 2));
    FORWARD_IF_ERROR(alloc_floats(g, &g->tileF32, (size_t)want));
    g->tileCap = want;
    return 0;
}

/* y (T, rows) = x (T, cols) W^T. */
static size_t gpu_matmul(gpu_backend* g, const gpu_matrix* w, const float* x, size_t T, float* y)
{
    glyd_gpuDevice* const d = g->d;
    uint64_t const unit = w->t.unitSize, cols = w->cols;
    uint64_t rowsPerTile, r0;
    if (T <= MAX_GEMV_BATCH)
        return d->gemv(d, w->blob, &w->t, w->tables, w->runs, w->rows, cols, x, (unsigned)T, y, g->parts);
    /* tiles of whole units and whole rows */
    FORWARD_IF_ERROR(reserve_tiles(g, w->rows * cols));
    {
        uint64_t const align = unit >= cols ? unit / cols : 1;
        rowsPerTile = GLYD_MAX(g->tileCap / cols / align, (uint64_t)1) * align;
        RETURN_ERROR_IF(rowsPerTile * cols > g->tileCap, parameter_outOfBound, "tile");
    }
    for (r0 = 0; r0 < w->rows; r0 += rowsPerTile) {
        uint64_t const r1 = GLYD_MIN(r0 + rowsPerTile, w->rows);
        uint64_t const u0 = r0 * cols / unit, u1 = (r1 * cols + unit - 1) / unit;
        FORWARD_IF_ERROR(d->widen(d, w->blob, &w->t, w->tables, w->runs, u0, u1, g->tileBf16, g->tileF32));
        FORWARD_IF_ERROR(d->gemm(d, g->tileF32, r1 - r0, cols, x, T, y + r0, w->rows));
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The cache's pages, and attention's room                                   */
/* ------------------------------------------------------------------------ */

/* Pages for positions [0, upto) in every layer. */
static size_t reserve_pages(gpu_backend* g, uint64_t upto)
{
    glyd_llmConfig const* const c = &g->cfg;
    size_t const pageBytes = (size_t)GK_PAGE * c->nbKvHeads * c->headDim * (g->kvF32 ? 4 : 2);
    uint64_t const need = (upto + GK_PAGE - 1) / GK_PAGE;
    size_t const tableBytes = (size_t)(c->nbLayers * g->maxPages) * sizeof(void*);
    size_t r = 0;
    if (need <= g->nbPages && !g->tablesStale) return 0;
    while (g->nbPages < need) {
        uint64_t const nb = GLYD_MIN((uint64_t)PAGES_PER_STEP, g->maxPages - g->nbPages);
        uint8_t* slab;
        uint64_t l, p;
        r = dev_alloc(g, &slab, (size_t)(2 * c->nbLayers * nb) * pageBytes);
        if (glyd_isError(r)) break;
        g->slabs[g->nbSlabs++] = slab;
        for (l = 0; l < c->nbLayers; l++)
            for (p = 0; p < nb; p++) {
                g->hostK[l * g->maxPages + g->nbPages + p] = slab + ((2 * l) * nb + p) * pageBytes;
                g->hostV[l * g->maxPages + g->nbPages + p] = slab + ((2 * l + 1) * nb + p) * pageBytes;
            }
        g->nbPages += nb;
        g->tablesStale = 1;
    }
    /* the tables as far as pages were taken, a failed step's included; a
     * failed upload is tried again by the next call */
    if (g->tablesStale) {
        FORWARD_IF_ERROR(g->d->upload(g->d, g->kTable, g->hostK, tableBytes));
        FORWARD_IF_ERROR(g->d->upload(g->d, g->vTable, g->hostV, tableBytes));
        g->tablesStale = 0;
    }
    return r;
}

/* ------------------------------------------------------------------------ */
/* The operations                                                           */
/* ------------------------------------------------------------------------ */

static size_t gpu_embed(void* b, const int* tokens, size_t T)
{
    gpu_backend* const g = (gpu_backend*)b;
    gpu_matrix const* const e = &g->embed;
    size_t t;
    if (e->t.layout != GK_LAYOUT_HUFFMAN) {
        FORWARD_IF_ERROR(g->d->upload(g->d, g->tokens, tokens, T * sizeof(int)));
        return g->d->embed(g->d, e->blob, &e->t, e->cols, g->tokens, T, g->x);
    }
    /* the Huffman layout: the units that hold each row, decoded run by run
     * into the tile, and the row copied from there */
    FORWARD_IF_ERROR(reserve_tiles(g, 2ULL * GLYD_MAX((uint64_t)e->t.unitSize, e->cols)));
    for (t = 0; t < T; t++) {
        uint64_t const a = (uint64_t)tokens[t] * e->cols, u0 = a / e->t.unitSize;
        uint64_t const u1 = (a + e->cols + e->t.unitSize - 1) / e->t.unitSize;
        FORWARD_IF_ERROR(g->d->widen(g->d, e->blob, &e->t, e->tables, e->runs, u0, u1, g->tileBf16, g->tileF32));
        FORWARD_IF_ERROR(g->d->copy(g->d, g->x + t * e->cols, g->tileF32 + (a - u0 * e->t.unitSize),
                                    (size_t)e->cols * sizeof(float)));
    }
    return 0;
}

static size_t gpu_norm(void* b, glyd_normKind k, unsigned layer, size_t t0, size_t T)
{
    gpu_backend* const g = (gpu_backend*)b;
    size_t const dim = g->cfg.dim;
    gk_rmsnorm a;
    a.x = g->x + t0 * dim;
    a.out = g->xn + t0 * dim;
    a.w = k == GLYD_NORM_FINAL ? g->finalNorm
          : k == GLYD_NORM_ATTN ? g->layers[layer].attnNorm : g->layers[layer].mlpNorm;
    a.rows = T - t0;
    a.n = a.stride = dim;
    a.eps = g->cfg.normEps;
    return g->d->rmsnorm(g->d, &a);
}

static size_t gpu_project(void* b, unsigned layer, const glyd_weightKind* kinds, unsigned nbW, size_t T)
{
    gpu_backend* const g = (gpu_backend*)b;
    unsigned i;
    for (i = 0; i < nbW; i++) {
        float* const outs[7] = { g->q, g->k, g->v, NULL, g->hb, g->hb2, NULL };
        RETURN_ERROR_IF(!outs[kinds[i]], parameter_outOfBound, "not a projection of xn");
        FORWARD_IF_ERROR(gpu_matmul(g, &g->layers[layer].w[kinds[i]], g->xn, T, outs[kinds[i]]));
    }
    return 0;
}

static size_t gpu_rotate_store(void* b, unsigned layer, size_t T, size_t pos)
{
    gpu_backend* const g = (gpu_backend*)b;
    gpu_layer const* const L = &g->layers[layer];
    gk_rotate a;
    FORWARD_IF_ERROR(reserve_pages(g, pos + T));
    a.q = g->q;
    a.k = g->k;
    a.v = g->v;
    a.bq = L->bq;
    a.bk = L->bk;
    a.bv = L->bv;
    a.qNorm = L->qNorm;
    a.kNorm = L->kNorm;
    a.invFreq = g->invFreq;
    a.ropeScale = g->ropeScale;
    a.eps = g->cfg.normEps;
    a.nbHeads = g->cfg.nbHeads;
    a.nbKvHeads = g->cfg.nbKvHeads;
    a.headDim = g->cfg.headDim;
    a.T = T;
    a.pos = pos;
    a.kPages = g->kTable + layer * g->maxPages;
    a.vPages = g->vTable + layer * g->maxPages;
    a.kvF32 = g->kvF32;
    return g->d->rotate(g->d, &a);
}

static size_t gpu_attend(void* b, unsigned layer, size_t T, size_t pos)
{
    gpu_backend* const g = (gpu_backend*)b;
    gk_attend a;
    a.q = g->q;
    a.out = g->ao;
    a.part = g->attParts;
    a.kPages = (const void* const*)(g->kTable + layer * g->maxPages);
    a.vPages = (const void* const*)(g->vTable + layer * g->maxPages);
    a.nbHeads = g->cfg.nbHeads;
    a.nbKvHeads = g->cfg.nbKvHeads;
    a.headDim = g->cfg.headDim;
    a.T = T;
    a.pos = pos;
    a.chunk = gk_att_chunk(pos + T);
    a.kvF32 = g->kvF32;
    return g->d->attend(g->d, &a);
}

static size_t gpu_residual(void* b, unsigned layer, glyd_weightKind k, size_t T)
{
    gpu_backend* const g = (gpu_backend*)b;
    FORWARD_IF_ERROR(gpu_matmul(g, &g->layers[layer].w[k], k == GLYD_W_O ? g->ao : g->hb, T, g->xb2));
    return g->d->add(g->d, g->x, g->xb2, T * g->cfg.dim);
}

static size_t gpu_swiglu(void* b, size_t T)
{
    gpu_backend* const g = (gpu_backend*)b;
    return g->d->swiglu(g->d, g->hb, g->hb2, T * g->cfg.hidden);
}

static size_t gpu_logits(void* b, size_t t0, size_t T, float* out)
{
    gpu_backend* const g = (gpu_backend*)b;
    size_t const n = (T - t0) * g->cfg.vocab;
    FORWARD_IF_ERROR(gpu_matmul(g, &g->head, g->xn + t0 * g->cfg.dim, T - t0, g->logits));
    return g->d->download(g->d, out, g->logits, n * sizeof(float));
}

static size_t gpu_candidates(void* b, size_t T, const int* penalized, size_t nbPenalized, float penalty,
                             float temperature, unsigned k, float* keys, int* ids)
{
    gpu_backend* const g = (gpu_backend*)b;
    glyd_gpuDevice* const d = g->d;
    RETURN_ERROR_IF(k == 0 || k > GLYD_SAMPLER_DEVICE_K || k >= g->cfg.vocab, parameter_outOfBound, "k");
    FORWARD_IF_ERROR(gpu_matmul(g, &g->head, g->xn + (T - 1) * g->cfg.dim, 1, g->logits));
    if (penalty != 1.0f && nbPenalized) {
        if (nbPenalized > g->historyCap) {
            d->free(d, g->history);
            g->history = NULL;
            g->historyCap = 0;
            FORWARD_IF_ERROR(dev_alloc(g, &g->history, 2 * nbPenalized * sizeof(int)));
            g->historyCap = 2 * nbPenalized;
        }
        FORWARD_IF_ERROR(d->upload(d, g->history, penalized, nbPenalized * sizeof(int)));
        FORWARD_IF_ERROR(d->penalize(d, g->logits, g->history, nbPenalized, penalty));
    }
    if (!(temperature > 0)) {
        /* greedy: the largest after the penalty */
        FORWARD_IF_ERROR(d->argmax(d, g->logits, g->cfg.vocab, g->next));
        keys[0] = 0;
        return d->download(d, ids, g->next, sizeof(int));
    }
    FORWARD_IF_ERROR(d->topk(d, g->logits, g->cfg.vocab, temperature, k, g->candKeys, g->candIds));
    FORWARD_IF_ERROR(d->download(d, keys, g->candKeys, k * sizeof(float)));
    return d->download(d, ids, g->candIds, k * sizeof(int));
}

static const glyd_backendOps kGpuOps = {
    "gpu", gpu_embed, gpu_norm, gpu_project, gpu_rotate_store, gpu_attend, gpu_residual, gpu_swiglu,
    gpu_logits, gpu_candidates, gpu_close, NULL
};

size_t glyd_gpuBackendRefuses(const glyd_llmConfig* c, char* why, size_t whyCap)
{
    if (c->arch == GLYD_ARCH_QWEN3_5) {
        snprintf(why, whyCap, "Qwen3.5 (its Gated DeltaNet layers) runs on the CPU only: glyd run without --gpu");
        RETURN_ERROR(model_unsupported, "GPU backend: Qwen3.5");
    }
    return 0;
}

size_t glyd_gpuBackendOpen(const glyd_llmWeights* w, glyd_gpuDevice* d, const glyd_backendOps** ops,
                           void** state, unsigned long long* deviceBytes, char* why, size_t whyCap)
{
    glyd_llmConfig const* const c = w->cfg;
    size_t const qDim = (size_t)c->nbHeads * c->headDim, kvDim = (size_t)c->nbKvHeads * c->headDim;
    gpu_backend* g;
    size_t r = 0, total = 0, avail = 0;
    unsigned l, k;
    why[0] = 0;
    r = glyd_gpuBackendRefuses(c, why, whyCap);
    if (glyd_isError(r)) {
        d->release(d);
        return r;
    }
    g = (gpu_backend*)calloc(1, sizeof(gpu_backend));
    if (!g) {
        d->release(d);
        RETURN_ERROR(memory_allocation, "GPU backend");
    }
    g->d = d;
    g->cfg = *c;
    g->ctx = w->ctx;
    g->kvF32 = w->kvF32;
    g->ropeScale = w->ropeScale;
    g->layers = (gpu_layer*)calloc(c->nbLayers, sizeof(gpu_layer));
    if (!g->layers) r = GLYD_ERROR(memory_allocation);
    for (l = 0; l < c->nbLayers && !glyd_isError(r); l++) {
        if (!w->layers[l].moe) continue;
        /* the experts' products are the CPU backend's alone */
        snprintf(why, whyCap, "mixtures of experts are not supported on the GPU (layer %u has %u experts): run on "
                 "the CPU", l, c->nbExperts);
        r = GLYD_ERROR(model_unsupported);
    }
    if (!glyd_isError(r) && !gk_att_chunk(g->ctx)) {
        snprintf(why, whyCap, "a context of %llu positions (the GPU's attention takes %llu at most)", g->ctx,
                 (unsigned long long)GK_ATT_SPLITS * GK_ATT_CHUNK_MAX);
        r = GLYD_ERROR(parameter_outOfBound);
    }
    /* the weights must fit in the free memory (the buffers, tables and
     * pages, far smaller, are checked as they are taken) */
    if (!glyd_isError(r) && !glyd_isError(d->memory(d, &total, &avail))) {
        unsigned long long need = glyd_matrixBytes(w->embed) + (w->head != w->embed ? glyd_matrixBytes(w->head) : 0);
        for (l = 0; l < c->nbLayers; l++)
            for (k = 0; k < GLYD_W_KINDS; k++)
                need += glyd_matrixBytes(glyd_layerWeight(&w->layers[l], (glyd_weightKind)k));
        if (need > avail) {
            snprintf(why, whyCap, "the weights take %.1f MiB, the GPU has %.1f MiB free", need / 1048576.0,
                     avail / 1048576.0);
            r = GLYD_ERROR(memory_allocation);
        }
    }
    if (!glyd_isError(r)) r = upload_matrix(g, &g->embed, w->embed, why, whyCap);
    if (!glyd_isError(r)) {
        if (w->head == w->embed) g->head = g->embed;
        else r = upload_matrix(g, &g->head, w->head, why, whyCap);
    }
    for (l = 0; l < c->nbLayers && !glyd_isError(r); l++) {
        glyd_layer const* const L = &w->layers[l];
        gpu_layer* const G = &g->layers[l];
        for (k = 0; k < GLYD_W_KINDS && !glyd_isError(r); k++)
            r = upload_matrix(g, &G->w[k], glyd_layerWeight(L, (glyd_weightKind)k), why, whyCap);
        if (!glyd_isError(r)) r = upload_floats(g, &G->attnNorm, L->attnNorm, c->dim, 1);
        if (!glyd_isError(r)) r = upload_floats(g, &G->mlpNorm, L->mlpNorm, c->dim, 1);
        if (!glyd_isError(r) && c->qkvBias) {
            r = upload_floats(g, &G->bq, L->bq, qDim, 1);
            if (!glyd_isError(r)) r = upload_floats(g, &G->bk, L->bk, kvDim, 1);
            if (!glyd_isError(r)) r = upload_floats(g, &G->bv, L->bv, kvDim, 1);
        }
        if (!glyd_isError(r) && c->qkNorm) {
            r = upload_floats(g, &G->qNorm, L->qNorm, c->headDim, 1);
            if (!glyd_isError(r)) r = upload_floats(g, &G->kNorm, L->kNorm, c->headDim, 1);
        }
    }
    if (!glyd_isError(r)) r = upload_floats(g, &g->finalNorm, w->finalNorm, c->dim, 1);
    if (!glyd_isError(r)) r = upload_floats(g, &g->invFreq, w->invFreq, c->headDim / 2, 0);
    if (!glyd_isError(r)) r = open_buffers(g);
    if (glyd_isError(r)) {
        if (!why[0]) snprintf(why, whyCap, "%s", d->lastError(d)[0] ? d->lastError(d) : glyd_getErrorName(r));
        gpu_close(g);
        return r;
    }
    *ops = &kGpuOps;
    *state = g;
    *deviceBytes = g->weightBytes;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* CUDA's device, from libglyd_cuda.so                                       */
/* ------------------------------------------------------------------------ */

/* The library is looked for beside the program (build/cuda/, as `make
 * cuda` leaves it, or ../lib/ once installed), then where the dynamic
 * loader looks. Loaded once, never unloaded. */
glyd_gpuDevice* glyd_gpuCuda(char* why, size_t whyCap)
{
    typedef glyd_gpuDevice* (*open_fn)(char*, size_t);
    static const char* const kBeside[] = { "cuda/libglyd_cuda.so", "../lib/libglyd_cuda.so" };
    char self[4096], path[4200];
    void* lib = NULL;
    open_fn open;
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    size_t i;
    if (len > 0) {
        char* slash;
        self[len] = 0;
        slash = strrchr(self, '/');
        if (slash) slash[1] = 0;
        for (i = 0; i < sizeof kBeside / sizeof kBeside[0] && !lib; i++) {
            snprintf(path, sizeof path, "%s%s", self, kBeside[i]);
            lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!lib) lib = dlopen("libglyd_cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, whyCap, "libglyd_cuda.so was not found (built by `make cuda`): %s", dlerror());
        return NULL;
    }
    *(void**)&open = dlsym(lib, "glyd_cudaDeviceOpen");
    if (!open) {
        snprintf(why, whyCap, "libglyd_cuda.so has no glyd_cudaDeviceOpen");
        return NULL;
    }
    return open(why, whyCap);
}

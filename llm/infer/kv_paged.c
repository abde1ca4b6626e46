/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv_paged.c: the CPU engine's KV cache in coded pages (--kv lossless).
 * Each layer keeps the positions of the page being filled as plain bf16
 * (its tail); once a page's GLYD_KV_PAGE_POSITIONS positions are all
 * there, every KV head's keys and values of it are coded as KV pages
 * (glyd_kvPage*, docs/FORMAT.md section 19) into one block, the page
 * group, and the tail starts again. Each stream (a layer's head's keys, or
 * its values) codes under a table fitted on its first page, and a new one
 * where a page's own would save 2%; a page group names its pages' tables.
 * Writing a position inside a coded page (a conversation rewound) decodes
 * that page back into the tail and drops the pages after it.
 */
#include <stdlib.h>
#include <string.h>

#include "infer.h"

#define KV_TABLES_MAX 64 /* tables a stream may fit; past them it keeps its last */

/* A page group: for stream s (head h's keys at 2h, its values at 2h + 1)
 * its page's end in bytes and its table's number, then the pages. */
typedef struct {
    uint32_t* ends;             /* (2 * kvHeads) */
    uint8_t* tables;            /* (2 * kvHeads) */
    uint8_t* bytes;
} page_group;

typedef struct {
    uint16_t *tailK, *tailV;    /* (PAGE, kvDim): positions pages * PAGE.. */
    page_group* groups;         /* (ctx / PAGE + 1) */
    size_t pages;               /* coded */
    size_t filled;              /* positions held */
    glyd_kvTable* tables;       /* (2 * kvHeads, KV_TABLES_MAX) */
    uint8_t* nbTables;          /* (2 * kvHeads) */
} kv_layer;

struct glyd_kvPaged_s {
    unsigned nbLayers, kvHeads, headDim;
    size_t ctx;
    kv_layer* layers;
    unsigned long long codedBytes; /* the page groups' */
    uint16_t* page;             /* one stream's page being coded or decoded (PAGE * headDim) */
    uint8_t* coded;             /* a page group's pages as they are coded (2 * kvHeads * glyd_kvPageBound) */
    size_t* sizes;              /* and their sizes (2 * kvHeads) */
    uint8_t* tableOf;           /* and their tables' numbers (2 * kvHeads) */
};

glyd_kvPaged* glyd_kvPagedCreate(unsigned nbLayers, unsigned kvHeads, unsigned headDim, size_t ctx)
{
    glyd_kvPaged* const c = (glyd_kvPaged*)calloc(1, sizeof(glyd_kvPaged));
    size_t const kvDim = (size_t)kvHeads * headDim, streams = 2 * (size_t)kvHeads;
    unsigned l;
    if (!c) return NULL;
    c->nbLayers = nbLayers;
    c->kvHeads = kvHeads;
    c->headDim = headDim;
    c->ctx = ctx;
    c->layers = (kv_layer*)calloc(nbLayers + 1, sizeof(kv_layer));
    c->page = (uint16_t*)malloc((size_t)GLYD_KV_PAGE_POSITIONS * headDim * sizeof(uint16_t));
    c->coded = (uint8_t*)malloc(streams * glyd_kvPageBound((size_t)GLYD_KV_PAGE_POSITIONS * headDim));
    c->sizes = (size_t*)malloc(streams * sizeof(size_t));
    c->tableOf = (uint8_t*)malloc(streams);
    if (!c->layers || !c->page || !c->coded || !c->sizes || !c->tableOf ||
        (size_t)GLYD_KV_PAGE_POSITIONS * headDim > GLYD_KV_PAGE_MAX) {
        glyd_kvPagedFree(c);
        return NULL;
    }
    for (l = 0; l < nbLayers; l++) {
        kv_layer* const L = &c->layers[l];
        L->tailK = (uint16_t*)calloc((size_t)GLYD_KV_PAGE_POSITIONS * kvDim, sizeof(uint16_t));
        L->tailV = (uint16_t*)calloc((size_t)GLYD_KV_PAGE_POSITIONS * kvDim, sizeof(uint16_t));
        L->groups = (page_group*)calloc(ctx / GLYD_KV_PAGE_POSITIONS + 1, sizeof(page_group));
        L->tables = (glyd_kvTable*)calloc(streams * KV_TABLES_MAX, sizeof(glyd_kvTable));
        L->nbTables = (uint8_t*)calloc(streams, 1);
        if (!L->tailK || !L->tailV || !L->groups || !L->tables || !L->nbTables) {
            glyd_kvPagedFree(c);
            return NULL;
        }
    }
    return c;
}

static void drop_groups(glyd_kvPaged* c, kv_layer* L, size_t from)
{
    size_t b;
    for (b = from; b < L->pages; b++) {
        c->codedBytes -= L->groups[b].ends[2 * c->kvHeads - 1] + 5 * 2 * (size_t)c->kvHeads;
        free(L->groups[b].ends);
        memset(&L->groups[b], 0, sizeof L->groups[b]);
    }
    L->pages = GLYD_MIN(L->pages, from);
}

void glyd_kvPagedFree(glyd_kvPaged* c)
{
    unsigned l;
    if (!c) return;
    for (l = 0; c->layers && l < c->nbLayers; l++) {
        kv_layer* const L = &c->layers[l];
        if (L->groups) drop_groups(c, L, 0);
        free(L->tailK);
        free(L->tailV);
        free(L->groups);
        free(L->tables);
        free(L->nbTables);
    }
    free(c->layers);
    free(c->page);
    free(c->coded);
    free(c->sizes);
    free(c->tableOf);
    free(c);
}

/* Stream s's rows of a layer's tail as one page (position-major). */
static void gather_stream(const glyd_kvPaged* c, const kv_layer* L, unsigned s, uint16_t* page)
{
    size_t const hd = c->headDim, kvDim = (size_t)c->kvHeads * hd;
    const uint16_t* const tail = (s & 1) ? L->tailV : L->tailK;
    size_t p;
    for (p = 0; p < GLYD_KV_PAGE_POSITIONS; p++)
        memcpy(page + p * hd, tail + p * kvDim + (s / 2) * hd, hd * sizeof(uint16_t));
}

/* The table stream s codes its page under: its last, or a new one fitted
 * on the page where that saves 2% (the new table's 10 bytes counted). */
static uint8_t choose_table(kv_layer* L, unsigned s, const uint16_t* page, size_t n)
{
    glyd_kvTable* const tables = L->tables + (size_t)s * KV_TABLES_MAX;
    glyd_kvTable own;
    unsigned const last = L->nbTables[s];
    glyd_kvTableFit(&own, page, n);
    if (last == 0 || (last < KV_TABLES_MAX && (double)glyd_kvPageSize(page, n, &own) + GLYD_KV_TABLE_SIZE <
                                                  0.98 * (double)glyd_kvPageSize(page, n, &tables[last - 1]))) {
        tables[last] = own;
        L->nbTables[s] = (uint8_t)(last + 1);
    }
    return (uint8_t)(L->nbTables[s] - 1);
}

/* The tail, full, coded as page group L->pages: each stream's page coded
 * once, aside, then the block allocated at its exact size. */
static size_t code_tail(glyd_kvPaged* c, kv_layer* L)
{
    size_t const n = (size_t)GLYD_KV_PAGE_POSITIONS * c->headDim, bound = glyd_kvPageBound(n);
    unsigned const streams = 2 * c->kvHeads;
    page_group* const g = &L->groups[L->pages];
    size_t total = 0;
    unsigned s;
    for (s = 0; s < streams; s++) {
        gather_stream(c, L, s, c->page);
        c->tableOf[s] = choose_table(L, s, c->page, n);
        c->sizes[s] = glyd_kvPageEncode(c->coded + s * bound, bound, c->page, n,
                                        &L->tables[(size_t)s * KV_TABLES_MAX + c->tableOf[s]]);
        assert(!GLYD_IS_ERROR(c->sizes[s]));
        total += c->sizes[s];
    }
    g->ends = (uint32_t*)malloc(streams * (sizeof(uint32_t) + 1) + total);
    RETURN_ERROR_IF(!g->ends, memory_allocation, "KV page group");
    g->tables = (uint8_t*)(g->ends + streams);
    g->bytes = g->tables + streams;
    for (s = 0, total = 0; s < streams; s++) {
        memcpy(g->bytes + total, c->coded + s * bound, c->sizes[s]);
        total += c->sizes[s];
        g->ends[s] = (uint32_t)total;
        g->tables[s] = c->tableOf[s];
    }
    c->codedBytes += total + 5 * (size_t)streams;
    L->pages++;
    return 0;
}

/* Page b of stream s decoded into page (position-major rows). */
static size_t decode_page(const glyd_kvPaged* c, const kv_layer* L, size_t b, unsigned s, uint16_t* page)
{
    const page_group* const g = &L->groups[b];
    size_t const start = s ? g->ends[s - 1] : 0;
    size_t const n = (size_t)GLYD_KV_PAGE_POSITIONS * c->headDim;
    size_t const r = glyd_kvPageDecode(page, n, g->bytes + start, g->ends[s] - start,
                                       &L->tables[(size_t)s * KV_TABLES_MAX + g->tables[s]]);
    FORWARD_IF_ERROR(r);
    return 0;
}

size_t glyd_kvPagedPut(glyd_kvPaged* c, unsigned layer, size_t pos, const uint16_t* k, const uint16_t* v)
{
    kv_layer* const L = &c->layers[layer];
    size_t const kvDim = (size_t)c->kvHeads * c->headDim, hd = c->headDim;
    size_t const page = pos / GLYD_KV_PAGE_POSITIONS, row = pos % GLYD_KV_PAGE_POSITIONS;
    RETURN_ERROR_IF(layer >= c->nbLayers || pos > L->filled || pos >= c->ctx, parameter_outOfBound,
                    "KV cache position");
    /* a page whose coding failed (memory) is not lost silently */
    RETURN_ERROR_IF(page > L->pages, memory_allocation, "KV cache page");
    if (page < L->pages) {
        /* rewound into a coded page: it becomes the tail again */
        unsigned s;
        size_t p;
        for (s = 0; s < 2 * c->kvHeads; s++) {
            uint16_t* const tail = (s & 1) ? L->tailV : L->tailK;
            FORWARD_IF_ERROR(decode_page(c, L, page, s, c->page));
            for (p = 0; p < GLYD_KV_PAGE_POSITIONS; p++)
                memcpy(tail + p * kvDim + (s / 2) * hd, c->page + p * hd, hd * sizeof(uint16_t));
        }
        drop_groups(c, L, page);
    }
    memcpy(L->tailK + row * kvDim, k, kvDim * sizeof(uint16_t));
    memcpy(L->tailV + row * kvDim, v, kvDim * sizeof(uint16_t));
    L->filled = pos + 1;
    if (row == GLYD_KV_PAGE_POSITIONS - 1) FORWARD_IF_ERROR(code_tail(c, L));
    return 0;
}

size_t glyd_kvPagedRead(const glyd_kvPaged* c, unsigned layer, unsigned head, size_t from, size_t end, uint16_t* k,
                        uint16_t* v)
{
    const kv_layer* const L = &c->layers[layer];
    size_t const hd = c->headDim, kvDim = (size_t)c->kvHeads * hd;
    size_t b, p;
    RETURN_ERROR_IF(layer >= c->nbLayers || head >= c->kvHeads || end > L->filled || from > end,
                    parameter_outOfBound, "KV cache positions");
    for (b = from / GLYD_KV_PAGE_POSITIONS; b * GLYD_KV_PAGE_POSITIONS < end; b++) {
        size_t const at = b * GLYD_KV_PAGE_POSITIONS * hd;
        if (b < L->pages) {
            FORWARD_IF_ERROR(decode_page(c, L, b, 2 * head, k + at));
            FORWARD_IF_ERROR(decode_page(c, L, b, 2 * head + 1, v + at));
            continue;
        }
        for (p = 0; p < end - b * GLYD_KV_PAGE_POSITIONS; p++) {
            memcpy(k + at + p * hd, L->tailK + p * kvDim + (size_t)head * hd, hd * sizeof(uint16_t));
            memcpy(v + at + p * hd, L->tailV + p * kvDim + (size_t)head * hd, hd * sizeof(uint16_t));
        }
    }
    return 0;
}

unsigned long long glyd_kvPagedBytesBf16(const glyd_kvPaged* c)
{
    unsigned long long positions = 0;
    unsigned l;
    for (l = 0; l < c->nbLayers; l++) positions += c->layers[l].filled;
    return positions * 2ULL * c->kvHeads * c->headDim * sizeof(uint16_t);
}

unsigned long long glyd_kvPagedBytes(const glyd_kvPaged* c)
{
    size_t const kvDim = (size_t)c->kvHeads * c->headDim;
    /* the page groups, each layer's tail, its groups' index and its tables */
    return c->codedBytes + (unsigned long long)c->nbLayers *
                               (2ULL * GLYD_KV_PAGE_POSITIONS * kvDim * sizeof(uint16_t) +
                                (c->ctx / GLYD_KV_PAGE_POSITIONS + 1) * sizeof(page_group) +
                                2ULL * c->kvHeads * (KV_TABLES_MAX * sizeof(glyd_kvTable) + 1));
}

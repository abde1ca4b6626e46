/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * decompress.c: the decompression context: one-shot decoding (segments in
 * parallel on worker threads when asked), streaming decoding through a
 * window buffer, and decoding of a content range through the seek table.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "frame.h"
#include "../dict/dict.h"
#include "../lz/fastblock.h"

enum { DS_HEADER = 0, DS_BLOCKHEADER, DS_BODY, DS_GROUPHEADER, DS_GROUPBODY, DS_CHECKSUM, DS_SKIP, DS_DONE };

struct glyd_DCtx_s {
    glyd_customMem mem;
    unsigned windowLogMax;
    int nbWorkers;
    int checksumCheck;
    glyd_lzDCtx lz;
    int lzReady;
    glyd_dictCopy dict;         /* a dictionary, or none */

    /* streaming */
    int stage;
    uint8_t hdr[GLYD_FRAMEHEADER_MAX];
    size_t hdrLen;
    glyd_frameHeader fh;
    size_t blockMax;
    size_t windowSize;
    unsigned long long segMax;
    glyd_blockHeader bh;
    glyd_rowGroupHeader gh;     /* records frames: the row group being read */
    glyd_rowGroupScratch rows;  /* records frames: what decoding a row group works in */
    size_t bodySize;
    uint8_t* body;              /* a block's payload (a row group's), when it arrives in pieces */
    size_t bodyCap, bodyLen;
    uint8_t* win;               /* decoded content: history, then unflushed bytes */
    size_t winCap, winSize, winPos, winFlushed, segStart;
    unsigned long long segFill;
    int firstBlock;
    int withDict;               /* the frame's history starts with the dictionary */
    glyd_csum xxh;
    unsigned long long decoded;
    uint64_t skipLeft;

    /* workers */
    glyd_pool* pool;
    glyd_lzDCtx* wlz;
    unsigned nbWlz;
};

/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

glyd_DCtx* glyd_createDCtx(void) { return glyd_createDCtx_advanced(glyd_defaultCMem); }

glyd_DCtx* glyd_createDCtx_advanced(glyd_customMem mem)
{
    glyd_DCtx* d;
    if (!glyd_customMemValid(mem)) return NULL;
    d = (glyd_DCtx*)glyd_calloc(sizeof(*d), mem);
    if (!d) return NULL;
    d->mem = mem;
    d->windowLogMax = GLYD_WINDOWLOG_DEFAULTMAX;
    d->checksumCheck = 1;
    return d;
}

static void free_dworkers(glyd_DCtx* d)
{
    unsigned i;
    glyd_poolFree(d->pool);
    d->pool = NULL;
    for (i = 0; i < d->nbWlz; i++) glyd_lzDFree(&d->wlz[i]);
    glyd_free(d->wlz, d->mem);
    d->wlz = NULL;
    d->nbWlz = 0;
}

size_t glyd_freeDCtx(glyd_DCtx* d)
{
    if (!d) return 0;
    free_dworkers(d);
    if (d->lzReady) glyd_lzDFree(&d->lz);
    glyd_free(d->body, d->mem);
    glyd_free(d->win, d->mem);
    glyd_rowGroupScratchFree(&d->rows, d->mem);
    glyd_dictFree(&d->dict, d->mem);
    glyd_free(d, d->mem);
    return 0;
}

glyd_bounds glyd_dParam_getBounds(glyd_dParameter param)
{
    glyd_bounds b = { 0, 0, 0 };
    switch (param) {
    case glyd_d_windowLogMax: b.lowerBound = GLYD_WINDOWLOG_MIN; b.upperBound = GLYD_WINDOWLOG_MAX; break;
    case glyd_d_nbWorkers: b.lowerBound = 0; b.upperBound = GLYD_THREADS_MAX; break;
    case glyd_d_checksumCheck: b.lowerBound = 0; b.upperBound = 1; break;
    default: b.error = GLYD_ERROR(parameter_unsupported); break;
    }
    return b;
}

size_t glyd_DCtx_setParameter(glyd_DCtx* d, glyd_dParameter param, int value)
{
    glyd_bounds const b = glyd_dParam_getBounds(param);
    FORWARD_IF_ERROR(b.error);
    RETURN_ERROR_IF(d->stage != DS_HEADER || d->hdrLen != 0, stage_wrong, "a frame is in progress");
    if (param == glyd_d_windowLogMax && value == 0) value = GLYD_WINDOWLOG_DEFAULTMAX;
    RETURN_ERROR_IF(value < b.lowerBound || value > b.upperBound, parameter_outOfBound, "value");
    switch (param) {
    case glyd_d_windowLogMax: d->windowLogMax = (unsigned)value; break;
    case glyd_d_nbWorkers: d->nbWorkers = value; break;
    case glyd_d_checksumCheck: d->checksumCheck = value; break;
    default: RETURN_ERROR(parameter_unsupported, "unknown parameter");
    }
    return 0;
}

size_t glyd_DCtx_reset(glyd_DCtx* d, glyd_ResetDirective reset)
{
    RETURN_ERROR_IF(reset < glyd_reset_session_only || reset > glyd_reset_session_and_parameters,
                    parameter_outOfBound, "reset directive");
    if (reset & glyd_reset_session_only) {
        d->stage = DS_HEADER;
        d->hdrLen = 0;
        d->winPos = d->winFlushed = 0;
    }
    if (reset & glyd_reset_parameters) {
        d->windowLogMax = GLYD_WINDOWLOG_DEFAULTMAX;
        d->nbWorkers = 0;
        d->checksumCheck = 1;
    }
    return 0;
}

size_t glyd_DCtx_loadDictionary(glyd_DCtx* d, const void* dict, size_t dictSize)
{
    RETURN_ERROR_IF(d->stage != DS_HEADER || d->hdrLen != 0, stage_wrong, "a frame is in progress");
    return glyd_dictLoad(&d->dict, dict, dictSize, d->mem);
}

/* Whether the frame is decoded with the loaded dictionary: one that names
 * an ID needs that dictionary; one that names none takes the loaded
 * dictionary, if any, as raw content. */
static size_t frame_uses_dict(const glyd_DCtx* d, const glyd_frameHeader* fh)
{
    if (fh->flags & GLYD_F_DICTID)
        RETURN_ERROR_IF(d->dict.size == 0 || d->dict.id != fh->dictID, dictionary_wrong,
                        "frame needs another dictionary");
    return d->dict.size > 0;
}

static size_t ensure_lz(glyd_DCtx* d)
{
    if (d->lzReady) return 0;
    FORWARD_IF_ERROR(glyd_lzDInit(&d->lz, d->mem));
    d->lzReady = 1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Blocks                                                                   */
/* ------------------------------------------------------------------------ */

/* Decodes consecutive blocks of a frame from src[0..srcSize) into
 * [ostart, oend), until a last block or the end of src. The first block
 * starts a fresh history. Returns the content size written; *used receives
 * the bytes of src consumed, *sawLast whether a last block was met. */
size_t glyd_decodeRun(glyd_lzDCtx* lz, const glyd_frameHeader* fh, uint8_t* ostart, uint8_t* oend,
                      const uint8_t* src, size_t srcSize, size_t* used, int* sawLast)
{
    size_t const blockMax = (size_t)1 << fh->blockLog;
    size_t const windowSize = (size_t)1 << fh->windowLog;
    unsigned long long const segMax = fh->segmentLog ? 1ULL << fh->segmentLog : ~0ULL;
    const uint8_t* ip = src;
    const uint8_t* const iend = src + srcSize;
    uint8_t* op = ostart;
    uint8_t* prefix = ostart;
    int first = 1;
    *sawLast = 0;
    while (ip < iend) {
        glyd_blockHeader bh;
        size_t body, n;
        RETURN_ERROR_IF((size_t)(iend - ip) < GLYD_BLOCKHEADER_SIZE, srcSize_truncated, "block header");
        bh = glyd_blockHeaderRead(ip);
        ip += GLYD_BLOCKHEADER_SIZE;
        RETURN_ERROR_IF(bh.size > blockMax, corruption_detected, "block larger than the frame allows");
        body = glyd_blockBodySize(bh);
        RETURN_ERROR_IF((size_t)(iend - ip) < body, srcSize_truncated, "block body");
        if (first || bh.restart) {
            glyd_lzDStartHistory(lz);
            prefix = op;
            first = 0;
        }
        switch (bh.type) {
        case GLYD_BLOCK_RAW:
            RETURN_ERROR_IF(bh.size > (size_t)(oend - op), dstSize_tooSmall, "raw block");
            if (bh.size) memcpy(op, ip, bh.size);
            n = bh.size;
            break;
        case GLYD_BLOCK_RLE:
            RETURN_ERROR_IF(bh.size > (size_t)(oend - op), dstSize_tooSmall, "run block");
            memset(op, ip[0], bh.size);
            n = bh.size;
            break;
        case GLYD_BLOCK_FAST:
            RETURN_ERROR_IF(body == 0, corruption_detected, "empty fast block");
            n = glyd_fastDecodeBlock(op, oend, prefix, windowSize, blockMax, ip, body);
            FORWARD_IF_ERROR(n);
            break;
        default:
            RETURN_ERROR_IF(body == 0, corruption_detected, "empty compressed block");
            n = glyd_lzDecodeBlock(lz, op, oend, prefix, windowSize, blockMax, ip, body);
            FORWARD_IF_ERROR(n);
            break;
        }
        op += n;
        ip += body;
        RETURN_ERROR_IF((unsigned long long)(op - prefix) > segMax, corruption_detected,
                        "segment larger than the frame allows");
        if (bh.last) {
            *sawLast = 1;
            break;
        }
    }
    *used = (size_t)(ip - src);
    return (size_t)(op - ostart);
}

/* ------------------------------------------------------------------------ */
/* One-shot, segments in parallel                                           */
/* ------------------------------------------------------------------------ */

typedef struct {
    const uint8_t* frame;
    const glyd_frameMap* map;
    uint8_t* ostart;
    atomic_size_t next;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint8_t* done;
    size_t* results;
} mt_dec;

typedef struct {
    mt_dec* m;
    glyd_lzDCtx* lz;
    glyd_rowGroupScratch rows;
    glyd_customMem mem;
} mt_worker;

/* One mapped segment (a row group in a records frame) into dst, which
 * holds its content; rows is scratch for row groups. */
static size_t decode_segment(glyd_lzDCtx* lz, const glyd_frameHeader* fh, const uint8_t* frame,
                             const glyd_segment* seg, uint8_t* dst, glyd_rowGroupScratch* rows, glyd_customMem mem)
{
    size_t used, n;
    int sawLast;
    if (fh->flags & GLYD_F_RECORDS) {
        glyd_rowGroupHeader gh;
        FORWARD_IF_ERROR(glyd_rowGroupHeaderRead(&gh, frame + seg->srcOffset, fh));
        RETURN_ERROR_IF(GLYD_ROWGROUP_HEADER_SIZE + (size_t)gh.bodySize != seg->srcSize ||
                        gh.textSize != seg->dstSize, corruption_detected, "row group unlike its map");
        return glyd_rowGroupDecode(lz, fh, &gh, frame + seg->srcOffset + GLYD_ROWGROUP_HEADER_SIZE, dst, rows,
                                   mem);
    }
    n = glyd_decodeRun(lz, fh, dst, dst + seg->dstSize, frame + seg->srcOffset, seg->srcSize, &used, &sawLast);
    FORWARD_IF_ERROR(n);
    RETURN_ERROR_IF(n != seg->dstSize || used != seg->srcSize, corruption_detected, "segment");
    return n;
}

static void mt_worker_run(void* arg)
{
    mt_worker* const w = (mt_worker*)arg;
    mt_dec* const m = w->m;
    for (;;) {
        size_t const i = atomic_fetch_add(&m->next, 1);
        const glyd_segment* seg;
        size_t r;
        if (i >= m->map->nbSegments) return;
        seg = &m->map->segments[i];
        r = decode_segment(w->lz, &m->map->fh, m->frame, seg, m->ostart + seg->dstOffset, &w->rows, w->mem);
        pthread_mutex_lock(&m->lock);
        m->results[i] = r;
        m->done[i] = 1;
        pthread_cond_broadcast(&m->cond);
        pthread_mutex_unlock(&m->lock);
    }
}

static size_t ensure_dworkers(glyd_DCtx* d, unsigned n)
{
    unsigned i;
    if (d->nbWlz == n) return 0;
    free_dworkers(d);
    d->wlz = (glyd_lzDCtx*)glyd_calloc(n * sizeof(glyd_lzDCtx), d->mem);
    RETURN_ERROR_IF(d->wlz == NULL, memory_allocation, "workers");
    for (i = 0; i < n; i++) {
        size_t const r = glyd_lzDInit(&d->wlz[i], d->mem);
        if (GLYD_IS_ERROR(r)) {
            d->nbWlz = i;
            free_dworkers(d);
            return r;
        }
    }
    d->nbWlz = n;
    d->pool = glyd_poolCreate(n, d->mem);
    if (d->pool == NULL) {
        free_dworkers(d);
        RETURN_ERROR(threads_unavailable, "thread pool");
    }
    return 0;
}

/* Decodes the segments of a mapped frame on the workers while this thread
 * checksums finished segments in order. Returns the content size. */
static size_t decode_frame_mt(glyd_DCtx* d, const glyd_frameMap* map, const uint8_t* frame,
                              uint8_t* ostart)
{
    size_t const nbSeg = map->nbSegments;
    unsigned const nbWorkers = (unsigned)GLYD_MIN((size_t)d->nbWorkers, nbSeg);
    int const check = (map->fh.flags & GLYD_F_CHECKSUM) && d->checksumCheck;
    mt_worker workers[GLYD_THREADS_MAX];
    mt_dec m;
    glyd_csum xxh;
    size_t err = 0, i;
    unsigned j;
    FORWARD_IF_ERROR(ensure_dworkers(d, (unsigned)d->nbWorkers));
    m.frame = frame;
    m.map = map;
    m.ostart = ostart;
    atomic_init(&m.next, 0);
    m.done = (uint8_t*)glyd_calloc(nbSeg, d->mem);
    m.results = (size_t*)glyd_calloc(nbSeg * sizeof(size_t), d->mem);
    if (!m.done || !m.results) {
        glyd_free(m.done, d->mem);
        glyd_free(m.results, d->mem);
        RETURN_ERROR(memory_allocation, "segment states");
    }
    pthread_mutex_init(&m.lock, NULL);
    pthread_cond_init(&m.cond, NULL);
    for (j = 0; j < nbWorkers; j++) {
        workers[j].m = &m;
        workers[j].lz = &d->wlz[j];
        memset(&workers[j].rows, 0, sizeof workers[j].rows);
        workers[j].mem = d->mem;
        glyd_poolAdd(d->pool, mt_worker_run, &workers[j]);
    }
    glyd_csumReset(&xxh, GLYD_CSUM_KIND(map->fh.flags));
    for (i = 0; i < nbSeg; i++) {
        pthread_mutex_lock(&m.lock);
        while (!m.done[i]) pthread_cond_wait(&m.cond, &m.lock);
        pthread_mutex_unlock(&m.lock);
        if (GLYD_IS_ERROR(m.results[i])) {
            err = m.results[i];
            atomic_store(&m.next, nbSeg); /* stop handing out segments */
            break;
        }
        if (check) glyd_csumUpdate(&xxh, ostart + map->segments[i].dstOffset, map->segments[i].dstSize);
    }
    glyd_poolWait(d->pool);
    for (j = 0; j < nbWorkers; j++) glyd_rowGroupScratchFree(&workers[j].rows, d->mem);
    pthread_mutex_destroy(&m.lock);
    pthread_cond_destroy(&m.cond);
    glyd_free(m.done, d->mem);
    glyd_free(m.results, d->mem);
    if (err) return err;
    if (check) {
        uint64_t const stored = glyd_read64(frame + map->frameSize - GLYD_CHECKSUM_SIZE);
        RETURN_ERROR_IF(stored != glyd_csumDigest(&xxh), checksum_wrong, "content checksum");
    }
    return (size_t)map->contentSize;
}

static size_t stream_step(glyd_DCtx* d, glyd_outBuffer* out, glyd_inBuffer* in);

/* One frame through the streaming path, whose window puts the dictionary
 * and the content side by side (the LZ decoder needs history contiguous). */
static size_t decode_frame_streamed(glyd_DCtx* d, uint8_t* dst, size_t cap, const uint8_t* src,
                                    size_t srcSize, size_t* srcUsed)
{
    glyd_inBuffer in = { src, srcSize, 0 };
    glyd_outBuffer out = { dst, cap, 0 };
    size_t const r = stream_step(d, &out, &in);
    if (r != 0) {
        int const full = out.pos == out.size && d->winFlushed < d->winPos;
        glyd_DCtx_reset(d, glyd_reset_session_only);
        FORWARD_IF_ERROR(r);
        RETURN_ERROR_IF(full, dstSize_tooSmall, "content larger than the destination");
        RETURN_ERROR(srcSize_truncated, "frame ends early");
    }
    *srcUsed = in.pos;
    return out.pos;
}

/* A records frame's row groups one after the other, in the calling
 * thread, from src (just past the frame header); *used receives their size. */
static size_t decode_row_groups(glyd_DCtx* d, const glyd_frameHeader* fh, uint8_t* dst, size_t cap,
                                const uint8_t* src, size_t srcSize, size_t* used)
{
    size_t pos = 0, op = 0;
    for (;;) {
        glyd_rowGroupHeader gh;
        size_t n;
        RETURN_ERROR_IF(srcSize - pos < GLYD_ROWGROUP_HEADER_SIZE, srcSize_truncated, "row group header");
        FORWARD_IF_ERROR(glyd_rowGroupHeaderRead(&gh, src + pos, fh));
        pos += GLYD_ROWGROUP_HEADER_SIZE;
        RETURN_ERROR_IF(srcSize - pos < gh.bodySize, srcSize_truncated, "row group");
        RETURN_ERROR_IF(gh.textSize > cap - op, dstSize_tooSmall, "content larger than the destination");
        n = glyd_rowGroupDecode(&d->lz, fh, &gh, src + pos, dst + op, &d->rows, d->mem);
        FORWARD_IF_ERROR(n);
        op += n;
        pos += gh.bodySize;
        if (gh.last) break;
    }
    *used = pos;
    return op;
}

/* Decodes the frame at src into dst; *srcUsed receives its size. */
static size_t decode_frame(glyd_DCtx* d, uint8_t* dst, size_t cap, const uint8_t* src, size_t srcSize,
                           size_t* srcUsed)
{
    glyd_frameHeader fh;
    size_t const hs = glyd_frameHeaderRead(&fh, src, srcSize);
    size_t used, n, withDict;
    int sawLast;
    FORWARD_IF_ERROR(hs);
    withDict = frame_uses_dict(d, &fh);
    FORWARD_IF_ERROR(withDict);
    if (withDict) return decode_frame_streamed(d, dst, cap, src, srcSize, srcUsed);
    RETURN_ERROR_IF(fh.contentSize != GLYD_CONTENTSIZE_UNKNOWN && fh.contentSize > cap,
                    dstSize_tooSmall, "content larger than the destination");
    if (d->nbWorkers > 0) {
        glyd_frameMap map;
        size_t const fsize = glyd_frameMapBuild(&map, src, srcSize, 1, d->mem);
        FORWARD_IF_ERROR(fsize);
        if (map.nbSegments > 1) {
            size_t r = GLYD_ERROR(dstSize_tooSmall);
            if (map.contentSize <= cap) r = decode_frame_mt(d, &map, src, dst);
            glyd_free(map.segments, d->mem);
            *srcUsed = fsize;
            return r;
        }
        glyd_free(map.segments, d->mem);
    }
    FORWARD_IF_ERROR(ensure_lz(d));
    if (fh.flags & GLYD_F_RECORDS) {
        n = decode_row_groups(d, &fh, dst, cap, src + hs, srcSize - hs, &used);
        FORWARD_IF_ERROR(n);
    } else {
        n = glyd_decodeRun(&d->lz, &fh, dst, dst + cap, src + hs, srcSize - hs, &used, &sawLast);
        FORWARD_IF_ERROR(n);
        RETURN_ERROR_IF(!sawLast, srcSize_truncated, "frame has no last block");
    }
    used += hs;
    if (fh.flags & GLYD_F_CHECKSUM) {
        RETURN_ERROR_IF(srcSize - used < GLYD_CHECKSUM_SIZE, srcSize_truncated, "checksum");
        RETURN_ERROR_IF(d->checksumCheck && glyd_read64(src + used) != glyd_csumOnce(GLYD_CSUM_KIND(fh.flags), dst, n),
                        checksum_wrong, "content checksum");
        used += GLYD_CHECKSUM_SIZE;
    }
    RETURN_ERROR_IF(fh.contentSize != GLYD_CONTENTSIZE_UNKNOWN && fh.contentSize != n,
                    contentSize_wrong, "decoded size differs from the header");
    *srcUsed = used;
    return n;
}

size_t glyd_decompressDCtx(glyd_DCtx* d, void* dst, size_t dstCapacity, const void* src, size_t srcSize)
{
    const uint8_t* ip = (const uint8_t*)src;
    uint8_t* const ostart = (uint8_t*)dst;
    size_t op = 0;
    RETURN_ERROR_IF(dst == NULL && dstCapacity > 0, dstBuffer_null, "dst");
    RETURN_ERROR_IF(src == NULL && srcSize > 0, GENERIC, "src is NULL");
    RETURN_ERROR_IF(srcSize == 0, srcSize_truncated, "empty input");
    glyd_DCtx_reset(d, glyd_reset_session_only);
    while (srcSize > 0) {
        size_t used = 0;
        RETURN_ERROR_IF(srcSize < 4, srcSize_truncated, "frame magic");
        if (glyd_isSkippableFrame(ip, srcSize)) {
            uint32_t size;
            RETURN_ERROR_IF(srcSize < GLYD_SKIPPABLE_HEADER, srcSize_truncated, "skippable header");
            size = glyd_read32(ip + 4);
            RETURN_ERROR_IF(size > srcSize - GLYD_SKIPPABLE_HEADER, srcSize_truncated, "skippable");
            used = GLYD_SKIPPABLE_HEADER + size;
        } else {
            size_t const n = decode_frame(d, ostart + op, dstCapacity - op, ip, srcSize, &used);
            FORWARD_IF_ERROR(n);
            op += n;
        }
        ip += used;
        srcSize -= used;
    }
    return op;
}

size_t glyd_decompress(void* dst, size_t dstCapacity, const void* src, size_t srcSize)
{
    glyd_DCtx* const d = glyd_createDCtx();
    size_t r;
    RETURN_ERROR_IF(d == NULL, memory_allocation, "context");
    r = glyd_decompressDCtx(d, dst, dstCapacity, src, srcSize);
    glyd_freeDCtx(d);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                */
/* ------------------------------------------------------------------------ */

size_t glyd_DStreamInSize(void) { return ((size_t)1 << GLYD_BLOCKLOG_DEFAULT) + GLYD_BLOCKHEADER_SIZE; }
size_t glyd_DStreamOutSize(void) { return (size_t)1 << GLYD_BLOCKLOG_DEFAULT; }

/* Moves up to `want - have` input bytes into buf; returns 1 when complete.
 * A stage re-entered with more than `want` bytes already held is complete. */
static int gather(uint8_t* buf, size_t* have, size_t want, glyd_inBuffer* in)
{
    size_t n;
    if (*have >= want) return 1;
    n = GLYD_MIN(want - *have, in->size - in->pos);
    memcpy(buf + *have, (const uint8_t*)in->src + in->pos, n);
    *have += n;
    in->pos += n;
    return *have == want;
}

static size_t grow(glyd_DCtx* d, uint8_t** buf, size_t* cap, size_t need)
{
    if (*cap >= need) return 0;
    glyd_free(*buf, d->mem);
    *buf = (uint8_t*)glyd_malloc(need, d->mem);
    *cap = *buf ? need : 0;
    RETURN_ERROR_IF(*buf == NULL, memory_allocation, "buffer");
    return 0;
}

/* Sets up the window for a frame whose header is in d->fh. */
static size_t start_frame(glyd_DCtx* d)
{
    glyd_frameHeader* const fh = &d->fh;
    unsigned long long hist, need;
    size_t const withDict = frame_uses_dict(d, fh);
    FORWARD_IF_ERROR(withDict);
    d->withDict = (int)withDict;
    d->blockMax = (size_t)1 << fh->blockLog;
    d->windowSize = (size_t)1 << fh->windowLog;
    d->segMax = fh->segmentLog ? 1ULL << fh->segmentLog : ~0ULL;
    if (fh->flags & GLYD_F_RECORDS) {
        /* a row group's text is decoded whole, then flushed: no history
         * between groups */
        need = d->segMax;
        if (fh->contentSize != GLYD_CONTENTSIZE_UNKNOWN && fh->contentSize < need) need = fh->contentSize;
        RETURN_ERROR_IF(need > (1ULL << d->windowLogMax), frameParameter_windowTooLarge,
                        "row groups larger than the window allowed");
        FORWARD_IF_ERROR(grow(d, &d->win, &d->winCap, (size_t)GLYD_MAX(need, 1)));
        FORWARD_IF_ERROR(ensure_lz(d));
        d->winSize = (size_t)GLYD_MAX(need, 1);
        d->winPos = d->winFlushed = d->segStart = 0;
        d->decoded = 0;
        d->firstBlock = 1;
        glyd_csumReset(&d->xxh, GLYD_CSUM_KIND(d->fh.flags));
        return 0;
    }
    hist = d->windowSize;
    if (d->segMax < hist) hist = d->segMax;
    if (fh->contentSize != GLYD_CONTENTSIZE_UNKNOWN && fh->contentSize < hist) hist = fh->contentSize;
    RETURN_ERROR_IF(hist > (1ULL << d->windowLogMax), frameParameter_windowTooLarge,
                    "window larger than allowed");
    need = hist + d->blockMax + GLYD_WILDCOPY_OVERLENGTH + GLYD_MIN(GLYD_MAX(hist, 4ULL << 20), 32ULL << 20);
    if (fh->contentSize != GLYD_CONTENTSIZE_UNKNOWN && fh->contentSize + GLYD_WILDCOPY_OVERLENGTH < need)
        need = fh->contentSize + GLYD_WILDCOPY_OVERLENGTH; /* everything fits: never moved */
    if (withDict) need += d->dict.size;
    RETURN_ERROR_IF(need > SIZE_MAX / 2, frameParameter_windowTooLarge, "window");
    FORWARD_IF_ERROR(grow(d, &d->win, &d->winCap, (size_t)need));
    FORWARD_IF_ERROR(grow(d, &d->body, &d->bodyCap, d->blockMax));
    FORWARD_IF_ERROR(ensure_lz(d));
    d->winSize = (size_t)need;
    d->winPos = d->winFlushed = d->segStart = 0;
    if (withDict) {
        /* history before the first block; never flushed to the output */
        memcpy(d->win, d->dict.content, d->dict.size);
        d->winPos = d->winFlushed = d->dict.size;
    }
    d->segFill = 0;
    d->firstBlock = 1;
    d->decoded = 0;
    glyd_csumReset(&d->xxh, GLYD_CSUM_KIND(d->fh.flags));
    return 0;
}

/* Decodes the block whose header is d->bh and payload `b`. */
static size_t stream_block(glyd_DCtx* d, const uint8_t* b)
{
    size_t regen, n;
    if (d->bh.type == GLYD_BLOCK_COMPRESSED || d->bh.type == GLYD_BLOCK_FAST) {
        RETURN_ERROR_IF(d->bodySize == 0, corruption_detected, "empty compressed block");
        regen = glyd_lzBlockContentSize(b, d->bodySize);
        FORWARD_IF_ERROR(regen);
        RETURN_ERROR_IF(regen > d->blockMax, corruption_detected, "block larger than the frame allows");
    } else {
        regen = d->bh.size;
    }
    if (d->firstBlock || d->bh.restart) {
        glyd_lzDStartHistory(&d->lz);
        if (d->firstBlock && d->withDict && d->dict.tablesSize)
            FORWARD_IF_ERROR(glyd_lzDLoadTables(&d->lz, d->dict.tables, d->dict.tablesSize));
        d->segStart = d->firstBlock && d->withDict ? 0 : d->winPos;
        d->segFill = 0;
        d->firstBlock = 0;
    }
    if (d->winSize - d->winPos < regen) {
        /* keep what matches may still reach; everything before is flushed */
        size_t keepFrom = d->winPos > d->windowSize ? d->winPos - d->windowSize : 0;
        if (keepFrom < d->segStart) keepFrom = d->segStart;
        assert(d->winFlushed == d->winPos);
        memmove(d->win, d->win + keepFrom, d->winPos - keepFrom);
        d->winPos -= keepFrom;
        d->winFlushed -= keepFrom;
        /* a segment that began before the kept window starts at its edge */
        d->segStart = d->segStart > keepFrom ? d->segStart - keepFrom : 0;
        RETURN_ERROR_IF(d->winSize - d->winPos < regen, corruption_detected,
                        "content beyond the declared size");
    }
    switch (d->bh.type) {
    case GLYD_BLOCK_RAW:
        if (regen) memcpy(d->win + d->winPos, b, regen);
        n = regen;
        break;
    case GLYD_BLOCK_RLE:
        memset(d->win + d->winPos, b[0], regen);
        n = regen;
        break;
    case GLYD_BLOCK_FAST:
        n = glyd_fastDecodeBlock(d->win + d->winPos, d->win + d->winSize, d->win + d->segStart,
                                 d->windowSize, d->blockMax, b, d->bodySize);
        FORWARD_IF_ERROR(n);
        break;
    default:
        n = glyd_lzDecodeBlock(&d->lz, d->win + d->winPos, d->win + d->winSize, d->win + d->segStart,
                               d->windowSize, d->blockMax, b, d->bodySize);
        FORWARD_IF_ERROR(n);
        break;
    }
    d->segFill += n;
    RETURN_ERROR_IF(d->segFill > d->segMax, corruption_detected, "segment larger than the frame allows");
    d->decoded += n;
    RETURN_ERROR_IF(d->fh.contentSize != GLYD_CONTENTSIZE_UNKNOWN && d->decoded > d->fh.contentSize,
                    contentSize_wrong, "content beyond the declared size");
    if ((d->fh.flags & GLYD_F_CHECKSUM) && d->checksumCheck) glyd_csumUpdate(&d->xxh, d->win + d->winPos, n);
    d->winPos += n;
    return 0;
}

/* Decodes the row group whose header is d->gh and body `b` into the
 * window, which holds it whole. */
static size_t stream_row_group(glyd_DCtx* d, const uint8_t* b)
{
    size_t n;
    assert(d->winFlushed == d->winPos);
    d->winPos = d->winFlushed = 0;
    RETURN_ERROR_IF(d->gh.textSize > d->winSize, contentSize_wrong, "content beyond the declared size");
    n = glyd_rowGroupDecode(&d->lz, &d->fh, &d->gh, b, d->win, &d->rows, d->mem);
    FORWARD_IF_ERROR(n);
    d->decoded += n;
    RETURN_ERROR_IF(d->fh.contentSize != GLYD_CONTENTSIZE_UNKNOWN && d->decoded > d->fh.contentSize,
                    contentSize_wrong, "content beyond the declared size");
    if ((d->fh.flags & GLYD_F_CHECKSUM) && d->checksumCheck) glyd_csumUpdate(&d->xxh, d->win, n);
    d->winPos = n;
    return 0;
}

static size_t end_frame(glyd_DCtx* d)
{
    RETURN_ERROR_IF(d->fh.contentSize != GLYD_CONTENTSIZE_UNKNOWN && d->decoded != d->fh.contentSize,
                    contentSize_wrong, "decoded size differs from the header");
    d->stage = DS_DONE;
    return 0;
}

/* The d->bodySize bytes of a block's or a row group's body: where they lie
 * in the input when it holds them all, else gathered into d->body. *b is
 * NULL while more input is needed; the result is then the bytes wanted. */
static size_t take_body(glyd_DCtx* d, glyd_inBuffer* in, const uint8_t** b)
{
    *b = NULL;
    if (d->bodyLen == 0 && in->size - in->pos >= d->bodySize) {
        *b = (const uint8_t*)in->src + in->pos; /* whole body at hand: no copy */
        in->pos += d->bodySize;
        return 0;
    }
    if (d->bodyLen == 0) FORWARD_IF_ERROR(grow(d, &d->body, &d->bodyCap, d->bodySize));
    if (!gather(d->body, &d->bodyLen, d->bodySize, in)) return d->bodySize - d->bodyLen;
    *b = d->body;
    return 0;
}

static size_t stream_step(glyd_DCtx* d, glyd_outBuffer* out, glyd_inBuffer* in)
{
    for (;;) {
        if (d->winFlushed < d->winPos) {
            size_t const n = GLYD_MIN(d->winPos - d->winFlushed, out->size - out->pos);
            memcpy((uint8_t*)out->dst + out->pos, d->win + d->winFlushed, n);
            out->pos += n;
            d->winFlushed += n;
            if (d->winFlushed < d->winPos) return 1; /* output is full */
        }
        switch (d->stage) {
        case DS_DONE:
            d->stage = DS_HEADER;
            d->hdrLen = 0;
            return 0;
        case DS_HEADER: {
            size_t need = 4;
            if (!gather(d->hdr, &d->hdrLen, need, in)) return need - d->hdrLen;
            if ((glyd_read32(d->hdr) & GLYD_MAGIC_SKIPPABLE_MASK) == GLYD_MAGIC_SKIPPABLE_START) {
                if (!gather(d->hdr, &d->hdrLen, GLYD_SKIPPABLE_HEADER, in))
                    return GLYD_SKIPPABLE_HEADER - d->hdrLen;
                d->skipLeft = glyd_read32(d->hdr + 4);
                d->stage = DS_SKIP;
                continue;
            }
            RETURN_ERROR_IF(glyd_read32(d->hdr) != GLYD_MAGIC, prefix_unknown, "not a glyd frame");
            if (!gather(d->hdr, &d->hdrLen, 6, in)) return 6 - d->hdrLen;
            need = glyd_frameHeaderSize(d->hdr, d->hdrLen);
            FORWARD_IF_ERROR(need);
            if (!gather(d->hdr, &d->hdrLen, need, in)) return need - d->hdrLen;
            FORWARD_IF_ERROR(glyd_frameHeaderRead(&d->fh, d->hdr, d->hdrLen));
            FORWARD_IF_ERROR(start_frame(d));
            d->hdrLen = 0;
            d->stage = (d->fh.flags & GLYD_F_RECORDS) ? DS_GROUPHEADER : DS_BLOCKHEADER;
            continue;
        }
        case DS_GROUPHEADER:
            if (!gather(d->hdr, &d->hdrLen, GLYD_ROWGROUP_HEADER_SIZE, in))
                return GLYD_ROWGROUP_HEADER_SIZE - d->hdrLen;
            d->hdrLen = 0;
            FORWARD_IF_ERROR(glyd_rowGroupHeaderRead(&d->gh, d->hdr, &d->fh));
            d->bodySize = d->gh.bodySize;
            d->bodyLen = 0;
            d->stage = DS_GROUPBODY;
            continue;
        case DS_BLOCKHEADER:
            if (!gather(d->hdr, &d->hdrLen, GLYD_BLOCKHEADER_SIZE, in))
                return GLYD_BLOCKHEADER_SIZE - d->hdrLen;
            d->hdrLen = 0;
            d->bh = glyd_blockHeaderRead(d->hdr);
            RETURN_ERROR_IF(d->bh.size > d->blockMax, corruption_detected, "block larger than the frame allows");
            d->bodySize = glyd_blockBodySize(d->bh);
            d->bodyLen = 0;
            d->stage = DS_BODY;
            continue;
        case DS_BODY:
        case DS_GROUPBODY: {
            const uint8_t* b;
            size_t const want = take_body(d, in, &b);
            int last;
            FORWARD_IF_ERROR(want);
            if (!b) return want;
            if (d->stage == DS_BODY) {
                FORWARD_IF_ERROR(stream_block(d, b));
                last = (int)d->bh.last;
            } else {
                FORWARD_IF_ERROR(stream_row_group(d, b));
                last = (int)d->gh.last;
            }
            if (!last) d->stage = d->stage == DS_BODY ? DS_BLOCKHEADER : DS_GROUPHEADER;
            else if (d->fh.flags & GLYD_F_CHECKSUM) d->stage = DS_CHECKSUM;
            else FORWARD_IF_ERROR(end_frame(d));
            continue;
        }
        case DS_CHECKSUM:
            if (!gather(d->hdr, &d->hdrLen, GLYD_CHECKSUM_SIZE, in)) return GLYD_CHECKSUM_SIZE - d->hdrLen;
            d->hdrLen = 0;
            RETURN_ERROR_IF(d->checksumCheck && glyd_read64(d->hdr) != glyd_csumDigest(&d->xxh),
                            checksum_wrong, "content checksum");
            FORWARD_IF_ERROR(end_frame(d));
            continue;
        case DS_SKIP:
        default: {
            size_t const n = (size_t)GLYD_MIN(d->skipLeft, (uint64_t)(in->size - in->pos));
            in->pos += n;
            d->skipLeft -= n;
            if (d->skipLeft) return (size_t)GLYD_MIN(d->skipLeft, (uint64_t)1 << 20);
            d->hdrLen = 0;
            d->stage = DS_DONE;
            continue;
        }
        }
    }
}

size_t glyd_decompressStream(glyd_DCtx* d, glyd_outBuffer* output, glyd_inBuffer* input)
{
    size_t r;
    RETURN_ERROR_IF(output->pos > output->size, GENERIC, "output position past its size");
    RETURN_ERROR_IF(input->pos > input->size, GENERIC, "input position past its size");
    RETURN_ERROR_IF(output->dst == NULL && output->size > 0, dstBuffer_null, "output");
    RETURN_ERROR_IF(input->src == NULL && input->size > 0, GENERIC, "input is NULL");
    r = stream_step(d, output, input);
    if (GLYD_IS_ERROR(r)) {
        /* the frame cannot be resumed: the next call starts afresh */
        d->stage = DS_HEADER;
        d->hdrLen = 0;
        d->winPos = d->winFlushed = 0;
    }
    return r;
}

/* ------------------------------------------------------------------------ */
/* Random access                                                            */
/* ------------------------------------------------------------------------ */

/* Lists the segments of the frame at src from the seek table that follows
 * it at the end of src, if there is one that agrees with the frame. */
static int map_from_seek_table(glyd_frameMap* map, const uint8_t* src, size_t srcSize, glyd_customMem mem)
{
    size_t nb, tsize, i, pos;
    unsigned long long dst = 0;
    if (srcSize < 17 || glyd_read32(src + srcSize - 4) != GLYD_SEEKTABLE_FOOTER) return 0;
    nb = glyd_read32(src + srcSize - 9);
    if (src[srcSize - 5] != 0 || nb == 0 || nb > (srcSize - 17) / 8) return 0;
    tsize = glyd_seekTableSize(nb);
    if (tsize > srcSize) return 0;
    if (glyd_read32(src + srcSize - tsize) != GLYD_MAGIC_SEEKTABLE ||
        glyd_read32(src + srcSize - tsize + 4) != tsize - GLYD_SKIPPABLE_HEADER)
        return 0;
    if (GLYD_IS_ERROR(glyd_frameHeaderRead(&map->fh, src, srcSize - tsize)) || !map->fh.segmentLog ||
        (map->fh.flags & GLYD_F_RECORDS))
        return 0; /* records frames carry no seek table: their row groups are walked */
    map->segments = (glyd_segment*)glyd_malloc(nb * sizeof(glyd_segment), mem);
    if (!map->segments) return 0;
    pos = map->fh.headerSize;
    for (i = 0; i < nb; i++) {
        const uint8_t* const e = src + srcSize - tsize + GLYD_SKIPPABLE_HEADER + 8 * i;
        map->segments[i].srcOffset = pos;
        map->segments[i].srcSize = glyd_read32(e);
        map->segments[i].dstOffset = dst;
        map->segments[i].dstSize = glyd_read32(e + 4);
        if (map->segments[i].dstSize > (1ULL << map->fh.segmentLog)) break;
        pos += map->segments[i].srcSize;
        dst += map->segments[i].dstSize;
        if (pos > srcSize - tsize) break;
    }
    if (i < nb || pos + ((map->fh.flags & GLYD_F_CHECKSUM) ? GLYD_CHECKSUM_SIZE : 0) != srcSize - tsize) {
        glyd_free(map->segments, mem);
        map->segments = NULL;
        return 0;
    }
    map->nbSegments = nb;
    map->contentSize = dst;
    map->frameSize = srcSize - tsize;
    return 1;
}

size_t glyd_decompressRange(glyd_DCtx* d, void* dst, size_t dstCapacity, const void* src,
                            size_t srcSize, unsigned long long offset)
{
    const uint8_t* const in = (const uint8_t*)src;
    uint8_t* const out = (uint8_t*)dst;
    glyd_frameMap map;
    uint8_t* tmp = NULL;
    size_t tmpCap = 0, written = 0, i, err = 0;
    RETURN_ERROR_IF(dst == NULL && dstCapacity > 0, dstBuffer_null, "dst");
    RETURN_ERROR_IF(src == NULL, GENERIC, "src is NULL");
    FORWARD_IF_ERROR(ensure_lz(d));
    memset(&map, 0, sizeof(map));
    if (!map_from_seek_table(&map, in, srcSize, d->mem)) {
        size_t const r = glyd_frameMapBuild(&map, src, srcSize, 1, d->mem);
        FORWARD_IF_ERROR(r);
    }
    if (!map.fh.segmentLog) {
        /* one history: decode from the start, as a stream, until dst is full */
        glyd_outBuffer ob = { dst, dstCapacity, 0 };
        glyd_inBuffer ib = { src, map.frameSize, 0 };
        glyd_free(map.segments, d->mem);
        RETURN_ERROR_IF(offset > 0, seekTable_missing, "frame is not segmented");
        glyd_DCtx_reset(d, glyd_reset_session_only);
        while (ob.pos < ob.size) {
            size_t const r = glyd_decompressStream(d, &ob, &ib);
            FORWARD_IF_ERROR(r);
            if (r == 0) break;
            RETURN_ERROR_IF(ib.pos == ib.size && ob.pos < ob.size, srcSize_truncated, "frame ends early");
        }
        glyd_DCtx_reset(d, glyd_reset_session_only);
        return ob.pos;
    }
    RETURN_ERROR_IF(map.fh.flags & GLYD_F_DICTID, dictionary_wrong, "frame needs a dictionary");
    for (i = 0; i < map.nbSegments && written < dstCapacity; i++) {
        const glyd_segment* const seg = &map.segments[i];
        unsigned long long const want = offset + written;
        size_t n, skip, take;
        if (seg->dstOffset + seg->dstSize <= want) continue;
        /* a segment decodes only from its start: into place when it lies
         * wholly inside the range, else through a scratch buffer */
        skip = (size_t)(want - seg->dstOffset);
        take = GLYD_MIN(seg->dstSize - skip, dstCapacity - written);
        if (skip == 0 && take == seg->dstSize) {
            n = decode_segment(&d->lz, &map.fh, in, seg, out + written, &d->rows, d->mem);
        } else {
            if (tmpCap < seg->dstSize) {
                glyd_free(tmp, d->mem);
                tmp = (uint8_t*)glyd_malloc(seg->dstSize, d->mem);
                tmpCap = tmp ? seg->dstSize : 0;
            }
            if (!tmp) { err = GLYD_ERROR(memory_allocation); break; }
            n = decode_segment(&d->lz, &map.fh, in, seg, tmp, &d->rows, d->mem);
            if (!GLYD_IS_ERROR(n)) memcpy(out + written, tmp + skip, take);
        }
        if (GLYD_IS_ERROR(n)) { err = n; break; }
        written += take;
    }
    glyd_free(tmp, d->mem);
    glyd_free(map.segments, d->mem);
    if (err) return err;
    return written;
}

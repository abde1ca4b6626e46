/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * compress.c: the compression context: parameters, one-shot and streaming
 * compression, and compression of independent segments on worker threads.
 *
 * A frame is a header, blocks, an optional checksum, and (when it has more
 * than one independent segment) a seek table in a skippable frame after it.
 * Streaming in the calling thread keeps a window of history in `inBuf` and
 * codes one block at a time; with workers, it gathers whole segments and
 * codes them in parallel.
 */
#include "frame.h"
#include "../lz/fastblock.h"
#include "../dict/dict.h"
#include "../lz/ldm.h"

enum { STAGE_IDLE = 0, STAGE_ONGOING, STAGE_ENDING };

typedef struct {
    int level;
    int windowLog;     /* 0 = from the level */
    int checksum;
    int contentSize;
    int nbWorkers;
    int segmentLog;    /* -1 off, 0 auto */
    int blockLog;      /* 0 = default */
    int longMatching;
    int records;       /* records frames: row groups as text or log columns */
} cparams;

static const cparams kDefaultParams = { GLYD_LEVEL_DEFAULT, 0, 1, 1, 0, 0, 0, 0, 0 };

/* The window that long-distance matching opens when none is asked for. */
#define LONG_WINDOWLOG_DEFAULT 27

/* The coder of a frame's blocks: the entropy-coded LZ coder, or for the
 * --fast levels (negative) the fast block coder; exactly one is set. */
typedef struct {
    glyd_lzCCtx* lz;
    glyd_fastCCtx* fast;
} block_coder;

static void coder_free(block_coder* bc)
{
    glyd_lzFreeCCtx(bc->lz);
    glyd_fastFreeCCtx(bc->fast);
    bc->lz = NULL;
    bc->fast = NULL;
}

static void coder_start(block_coder* bc, const uint8_t* start)
{
    if (bc->fast) glyd_fastStartHistory(bc->fast, start);
    else glyd_lzStartHistory(bc->lz, start);
}

/* Indexes a dictionary's content, which starts the history. */
static void coder_load(block_coder* bc, const uint8_t* start, size_t size)
{
    if (bc->fast) glyd_fastLoadHistory(bc->fast, start, size);
    else glyd_lzLoadHistory(bc->lz, start, size);
}

static void coder_rebase(block_coder* bc, size_t shift)
{
    if (bc->fast) glyd_fastRebase(bc->fast, shift);
    else glyd_lzRebase(bc->lz, shift);
}

typedef struct {
    block_coder* zc;
    const uint8_t* src;
    size_t srcSize;
    uint8_t* dst;
    size_t cap;
    size_t blockMax;
    int last;
    size_t result;
} seg_job;

struct glyd_CCtx_s {
    glyd_customMem mem;
    cparams req;
    unsigned long long pledged;
    int stage;

    /* the frame in progress */
    glyd_lzParams lp;
    unsigned blockLog;
    unsigned segLog;            /* 0: one history for the whole frame */
    size_t blockMax;
    size_t segMax;              /* SIZE_MAX when not segmented */
    int mt;                     /* segments are coded by workers */
    glyd_csum xxh;
    unsigned long long consumed;

    glyd_dictCopy dict;         /* a dictionary, or none */
    int dictPending;            /* streaming: inBuf starts with the dictionary, not yet loaded */

    block_coder zc;             /* the calling thread's coder */
    glyd_rowGroupCoder rc;      /* records frames: row groups through zc */
    block_coder* wz;            /* one coder per worker */
    seg_job* jobs;
    unsigned nbWz;
    glyd_pool* pool;
    uint8_t* scratch;           /* workers' output: nbWz x segment bound */
    size_t scratchCap;

    uint8_t* inBuf;             /* streaming input: history, then pending bytes */
    size_t inBufCap;            /* allocated */
    size_t inBufSize;           /* used for this frame */
    size_t inStart;             /* first byte not yet coded */
    size_t inEnd;               /* end of buffered input */
    size_t histStart;           /* start of the current segment, or 0 */
    size_t segFill;             /* content bytes of the current segment coded so far */
    int segOpen;

    uint8_t* outBuf;            /* coded bytes waiting for the caller's buffer */
    size_t outBufCap, outPos, outEnd;

    uint32_t* segC;             /* per segment: coded size (blocks), content size */
    uint32_t* segD;
    size_t nbSeg, segCap;
    size_t curSegC;
};

/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

glyd_CCtx* glyd_createCCtx(void) { return glyd_createCCtx_advanced(glyd_defaultCMem); }

glyd_CCtx* glyd_createCCtx_advanced(glyd_customMem mem)
{
    glyd_CCtx* c;
    if (!glyd_customMemValid(mem)) return NULL;
    c = (glyd_CCtx*)glyd_calloc(sizeof(*c), mem);
    if (!c) return NULL;
    c->mem = mem;
    c->req = kDefaultParams;
    c->pledged = GLYD_CONTENTSIZE_UNKNOWN;
    return c;
}

static void free_workers(glyd_CCtx* c)
{
    unsigned i;
    glyd_poolFree(c->pool);
    c->pool = NULL;
    for (i = 0; i < c->nbWz; i++) coder_free(&c->wz[i]);
    glyd_free(c->wz, c->mem);
    glyd_free(c->jobs, c->mem);
    c->wz = NULL;
    c->jobs = NULL;
    c->nbWz = 0;
}

size_t glyd_freeCCtx(glyd_CCtx* c)
{
    if (!c) return 0;
    free_workers(c);
    coder_free(&c->zc);
    glyd_rowGroupCoderFree(&c->rc);
    glyd_dictFree(&c->dict, c->mem);
    glyd_free(c->scratch, c->mem);
    glyd_free(c->inBuf, c->mem);
    glyd_free(c->outBuf, c->mem);
    glyd_free(c->segC, c->mem);
    glyd_free(c->segD, c->mem);
    glyd_free(c, c->mem);
    return 0;
}

glyd_bounds glyd_cParam_getBounds(glyd_cParameter param)
{
    glyd_bounds b = { 0, 0, 0 };
    switch (param) {
    case glyd_c_compressionLevel: b.lowerBound = GLYD_LEVEL_MIN; b.upperBound = GLYD_LEVEL_MAX; break;
    case glyd_c_windowLog: b.lowerBound = GLYD_WINDOWLOG_MIN; b.upperBound = GLYD_WINDOWLOG_MAX; break;
    case glyd_c_checksumFlag:
    case glyd_c_contentSizeFlag:
    case glyd_c_records:
    case glyd_c_longMatching: b.lowerBound = 0; b.upperBound = 1; break;
    case glyd_c_nbWorkers: b.lowerBound = 0; b.upperBound = GLYD_THREADS_MAX; break;
    case glyd_c_segmentLog: b.lowerBound = -1; b.upperBound = GLYD_SEGMENTLOG_MAX; break;
    case glyd_c_blockLog: b.lowerBound = 12; b.upperBound = GLYD_BLOCKLOG_MAX; break;
    default: b.error = GLYD_ERROR(parameter_unsupported); break;
    }
    return b;
}

size_t glyd_CCtx_setParameter(glyd_CCtx* c, glyd_cParameter param, int value)
{
    glyd_bounds const b = glyd_cParam_getBounds(param);
    FORWARD_IF_ERROR(b.error);
    RETURN_ERROR_IF(c->stage != STAGE_IDLE, stage_wrong, "a frame is in progress");
    /* 0 selects the default wherever it is not itself a valid value */
    RETURN_ERROR_IF((value < b.lowerBound || value > b.upperBound) && value != 0,
                    parameter_outOfBound, "value out of range");
    switch (param) {
    case glyd_c_compressionLevel: c->req.level = value ? value : GLYD_LEVEL_DEFAULT; break;
    case glyd_c_windowLog: c->req.windowLog = value; break;
    case glyd_c_checksumFlag: c->req.checksum = value; break;
    case glyd_c_contentSizeFlag: c->req.contentSize = value; break;
    case glyd_c_nbWorkers: c->req.nbWorkers = value; break;
    case glyd_c_segmentLog:
        RETURN_ERROR_IF(value > 0 && value < GLYD_SEGMENTLOG_MIN, parameter_outOfBound, "segment log");
        c->req.segmentLog = value;
        break;
    case glyd_c_blockLog: c->req.blockLog = value; break;
    case glyd_c_longMatching: c->req.longMatching = value; break;
    case glyd_c_records: c->req.records = value; break;
    default: RETURN_ERROR(parameter_unsupported, "unknown parameter");
    }
    return 0;
}

size_t glyd_CCtx_getParameter(const glyd_CCtx* c, glyd_cParameter param, int* value)
{
    switch (param) {
    case glyd_c_compressionLevel: *value = c->req.level; break;
    case glyd_c_windowLog: *value = c->req.windowLog; break;
    case glyd_c_checksumFlag: *value = c->req.checksum; break;
    case glyd_c_contentSizeFlag: *value = c->req.contentSize; break;
    case glyd_c_nbWorkers: *value = c->req.nbWorkers; break;
    case glyd_c_segmentLog: *value = c->req.segmentLog; break;
    case glyd_c_blockLog: *value = c->req.blockLog; break;
    case glyd_c_longMatching: *value = c->req.longMatching; break;
    case glyd_c_records: *value = c->req.records; break;
    default: RETURN_ERROR(parameter_unsupported, "unknown parameter");
    }
    return 0;
}

size_t glyd_CCtx_loadDictionary(glyd_CCtx* c, const void* dict, size_t dictSize)
{
    RETURN_ERROR_IF(c->stage != STAGE_IDLE, stage_wrong, "a frame is in progress");
    return glyd_dictLoad(&c->dict, dict, dictSize, c->mem);
}

size_t glyd_CCtx_setPledgedSrcSize(glyd_CCtx* c, unsigned long long pledgedSrcSize)
{
    RETURN_ERROR_IF(c->stage != STAGE_IDLE, stage_wrong, "a frame is in progress");
    RETURN_ERROR_IF(pledgedSrcSize == GLYD_CONTENTSIZE_ERROR, parameter_outOfBound, "pledged size");
    c->pledged = pledgedSrcSize;
    return 0;
}

size_t glyd_CCtx_reset(glyd_CCtx* c, glyd_ResetDirective reset)
{
    RETURN_ERROR_IF(reset < glyd_reset_session_only || reset > glyd_reset_session_and_parameters,
                    parameter_outOfBound, "reset directive");
    if (reset & glyd_reset_session_only) {
        c->stage = STAGE_IDLE;
        c->pledged = GLYD_CONTENTSIZE_UNKNOWN;
        c->outPos = c->outEnd = 0;
    }
    if (reset & glyd_reset_parameters) {
        RETURN_ERROR_IF(c->stage != STAGE_IDLE, stage_wrong, "a frame is in progress");
        c->req = kDefaultParams;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Frame set-up                                                             */
/* ------------------------------------------------------------------------ */

/* Makes *slot a coder for the frame's parameters, reusing it if it fits. */
static size_t get_coder(glyd_CCtx* c, block_coder* slot)
{
    if (c->req.level < 0 && !c->req.longMatching) {
        /* --fast: byte-aligned fast blocks (docs/FORMAT.md, section 16);
         * long-distance matching exists only in the entropy-coded coder */
        if (glyd_fastCCtxFits(slot->fast, &c->lp, c->blockLog)) return 0;
        coder_free(slot);
        slot->fast = glyd_fastCreateCCtx(&c->lp, c->blockLog, c->mem);
        RETURN_ERROR_IF(slot->fast == NULL, memory_allocation, "block coder");
        return 0;
    }
    if (glyd_lzCCtxFits(slot->lz, &c->lp, c->blockLog)) return glyd_lzSetLongMatching(slot->lz, c->req.longMatching);
    coder_free(slot);
    slot->lz = glyd_lzCreateCCtx(&c->lp, c->blockLog, c->mem);
    RETURN_ERROR_IF(slot->lz == NULL, memory_allocation, "block coder");
    return glyd_lzSetLongMatching(slot->lz, c->req.longMatching);
}

static size_t seg_bound(const glyd_CCtx* c)
{
    size_t const seg = GLYD_MIN(c->segMax, (size_t)1 << 30);
    return seg + (seg / c->blockMax + 1) * GLYD_BLOCKHEADER_SIZE + 16;
}

/* Grows a byte buffer to at least `need`, keeping nothing. */
static size_t ensure_buffer(glyd_CCtx* c, uint8_t** buf, size_t* cap, size_t need)
{
    if (*cap >= need) return 0;
    glyd_free(*buf, c->mem);
    *buf = (uint8_t*)glyd_malloc(need, c->mem);
    *cap = *buf ? need : 0;
    RETURN_ERROR_IF(*buf == NULL, memory_allocation, "buffer");
    return 0;
}

static size_t code_run(void* cctx, uint8_t* dst, size_t cap, const uint8_t* src, size_t n);

/* Settles the parameters of the next frame; srcSize may be unknown. */
static size_t resolve_frame(glyd_CCtx* c, unsigned long long srcSize)
{
    int const known = srcSize != GLYD_CONTENTSIZE_UNKNOWN;
    /* a dictionary is history too: the window must reach back over it */
    glyd_lzParamsForLevel(&c->lp, c->req.level, known ? GLYD_MAX(srcSize + c->dict.size, 1) : 0);
    if (c->req.windowLog) {
        c->lp.windowLog = (unsigned)c->req.windowLog;
    } else if (c->req.longMatching) {
        /* as large as the input needs, up to the default long window */
        unsigned w = LONG_WINDOWLOG_DEFAULT;
        while (known && w > c->lp.windowLog && (1ULL << (w - 1)) >= srcSize) w--;
        c->lp.windowLog = GLYD_MAX(c->lp.windowLog, w);
    }
    c->blockLog = c->req.blockLog ? (unsigned)c->req.blockLog : GLYD_BLOCKLOG_DEFAULT;
    /* a block never exceeds the window, so that a block's matches stay
     * inside history the decoder keeps */
    if (c->blockLog > c->lp.windowLog) c->blockLog = c->lp.windowLog;
    c->blockMax = (size_t)1 << c->blockLog;
    if (c->req.records) {
        /* row groups are segments, always announced: they bound a group */
        RETURN_ERROR_IF(c->dict.size, parameter_unsupported, "records frames take no dictionary");
        c->segLog = c->req.segmentLog > 0 ? (unsigned)GLYD_MIN(c->req.segmentLog, 30) : GLYD_ROWGROUP_LOG_DEFAULT;
    } else {
        if (c->req.segmentLog < 0) c->segLog = 0;
        else if (c->req.segmentLog == 0) c->segLog = glyd_autoSegmentLog(c->lp.windowLog);
        else c->segLog = (unsigned)c->req.segmentLog;
        /* the dictionary precedes the frame's first block only: one segment */
        if (c->dict.size) c->segLog = 0;
        /* one segment holds everything: no need to announce segments */
        if (c->segLog && known && srcSize <= (1ULL << c->segLog)) c->segLog = 0;
    }
    if (c->segLog && c->lp.windowLog > c->segLog) c->lp.windowLog = c->segLog;
    if (c->blockLog > c->lp.windowLog) {
        c->blockLog = c->lp.windowLog;
        c->blockMax = (size_t)1 << c->blockLog;
    }
    c->segMax = c->segLog ? (size_t)GLYD_MIN(1ULL << c->segLog, (unsigned long long)SIZE_MAX) : SIZE_MAX;
    /* records frames code their row groups in the calling thread */
    c->mt = c->req.nbWorkers >= 1 && c->segLog != 0 && !c->req.records;
    c->nbSeg = 0;
    c->curSegC = 0;
    c->consumed = 0;
    glyd_csumReset(&c->xxh, glyd_csum_xxh3);
    if (c->mt) {
        unsigned const n = (unsigned)c->req.nbWorkers;
        unsigned i;
        if (c->nbWz != n) {
            free_workers(c);
            c->wz = (block_coder*)glyd_calloc(n * sizeof(block_coder), c->mem);
            c->jobs = (seg_job*)glyd_calloc(n * sizeof(seg_job), c->mem);
            RETURN_ERROR_IF(!c->wz || !c->jobs, memory_allocation, "workers");
            c->nbWz = n;
            if (n > 1) {
                c->pool = glyd_poolCreate(n, c->mem);
                RETURN_ERROR_IF(c->pool == NULL, threads_unavailable, "thread pool");
            }
        }
        for (i = 0; i < n; i++) FORWARD_IF_ERROR(get_coder(c, &c->wz[i]));
        FORWARD_IF_ERROR(ensure_buffer(c, &c->scratch, &c->scratchCap, n * seg_bound(c)));
    } else {
        FORWARD_IF_ERROR(get_coder(c, &c->zc));
    }
    if (c->req.records) {
        c->rc.codeRun = code_run;
        c->rc.coder = c;
        c->rc.contextMixing = c->req.level >= GLYD_ROWGROUP_CM_LEVEL;
        c->rc.mem = c->mem;
    }
    return 0;
}

static size_t write_header(glyd_CCtx* c, uint8_t* dst, size_t cap, unsigned long long srcSize)
{
    glyd_frameHeader fh;
    fh.flags = 0;
    if (c->req.checksum) fh.flags |= GLYD_F_CHECKSUM | GLYD_F_XXH3;
    if (c->req.contentSize && srcSize != GLYD_CONTENTSIZE_UNKNOWN) fh.flags |= GLYD_F_CONTENTSIZE;
    if (c->segLog) fh.flags |= GLYD_F_SEGMENTED;
    if (c->req.records) fh.flags |= GLYD_F_RECORDS;
    fh.windowLog = c->lp.windowLog;
    fh.blockLog = c->blockLog;
    fh.segmentLog = c->segLog;
    fh.contentSize = srcSize;
    fh.dictID = c->dict.id;
    if (c->dict.id) fh.flags |= GLYD_F_DICTID;
    return glyd_frameHeaderWrite(dst, cap, &fh);
}

static size_t push_segment(glyd_CCtx* c, size_t cSize, size_t dSize)
{
    if (c->nbSeg == c->segCap) {
        size_t const newCap = c->segCap ? 2 * c->segCap : 64;
        uint32_t* const nc = (uint32_t*)glyd_malloc(newCap * sizeof(uint32_t), c->mem);
        uint32_t* const nd = (uint32_t*)glyd_malloc(newCap * sizeof(uint32_t), c->mem);
        if (!nc || !nd) {
            glyd_free(nc, c->mem);
            glyd_free(nd, c->mem);
            RETURN_ERROR(memory_allocation, "seek table");
        }
        if (c->nbSeg) {
            memcpy(nc, c->segC, c->nbSeg * sizeof(uint32_t));
            memcpy(nd, c->segD, c->nbSeg * sizeof(uint32_t));
        }
        glyd_free(c->segC, c->mem);
        glyd_free(c->segD, c->mem);
        c->segC = nc;
        c->segD = nd;
        c->segCap = newCap;
    }
    /* a segment is at most 2^30 bytes, whose coded size fits too */
    c->segC[c->nbSeg] = (uint32_t)cSize;
    c->segD[c->nbSeg] = (uint32_t)dSize;
    c->nbSeg++;
    return 0;
}

/* Checksum and seek table after the last block. */
static size_t trailer_size(const glyd_CCtx* c)
{
    return (c->req.checksum ? GLYD_CHECKSUM_SIZE : 0) +
           (c->segLog && c->nbSeg > 1 ? glyd_seekTableSize(c->nbSeg) : 0);
}

static size_t write_trailer(glyd_CCtx* c, uint8_t* dst, size_t cap)
{
    size_t pos = 0;
    RETURN_ERROR_IF(cap < trailer_size(c), dstSize_tooSmall, "frame trailer");
    if (c->req.checksum) {
        glyd_write64(dst, glyd_csumDigest(&c->xxh));
        pos += GLYD_CHECKSUM_SIZE;
    }
    if (c->segLog && c->nbSeg > 1) {
        size_t const r = glyd_seekTableWrite(dst + pos, cap - pos, c->segC, c->segD, c->nbSeg);
        FORWARD_IF_ERROR(r);
        pos += r;
    }
    return pos;
}

/* ------------------------------------------------------------------------ */
/* Blocks and segments                                                      */
/* ------------------------------------------------------------------------ */

/* Codes src[0..n) as one block (a run, compressed, or raw, whichever is
 * smallest). Returns the bytes written or an error. */
static size_t write_block(block_coder* zc, uint8_t* dst, size_t cap, const uint8_t* src, size_t n,
                          int last, int restart)
{
    size_t c;
    RETURN_ERROR_IF(cap < GLYD_BLOCKHEADER_SIZE, dstSize_tooSmall, "block header");
    if (n == 0) {
        glyd_blockHeaderWrite(dst, (unsigned)last, GLYD_BLOCK_RAW, (unsigned)restart, 0);
        return GLYD_BLOCKHEADER_SIZE;
    }
    if (n > 1 && glyd_isRun(src, n)) {
        RETURN_ERROR_IF(cap < GLYD_BLOCKHEADER_SIZE + 1, dstSize_tooSmall, "run block");
        glyd_blockHeaderWrite(dst, (unsigned)last, GLYD_BLOCK_RLE, (unsigned)restart, (uint32_t)n);
        dst[GLYD_BLOCKHEADER_SIZE] = src[0];
        return GLYD_BLOCKHEADER_SIZE + 1;
    }
    c = zc->fast ? glyd_fastCompressBlock(zc->fast, dst + GLYD_BLOCKHEADER_SIZE, cap - GLYD_BLOCKHEADER_SIZE, src, n)
                 : glyd_lzCompressBlock(zc->lz, dst + GLYD_BLOCKHEADER_SIZE, cap - GLYD_BLOCKHEADER_SIZE, src, n);
    FORWARD_IF_ERROR(c);
    if (c > 0 && !zc->fast && glyd_lzBlockCovered(zc->lz, n) < n) {
        /* the coder split the block where that was smaller: several blocks */
        size_t done = glyd_lzBlockCovered(zc->lz, n), written = GLYD_BLOCKHEADER_SIZE + c;
        glyd_blockHeaderWrite(dst, 0, GLYD_BLOCK_COMPRESSED, (unsigned)restart, (uint32_t)c);
        while (done < n) {
            size_t part, r;
            RETURN_ERROR_IF(cap - written < GLYD_BLOCKHEADER_SIZE, dstSize_tooSmall, "block header");
            r = glyd_lzCompressRest(zc->lz, dst + written + GLYD_BLOCKHEADER_SIZE,
                                    cap - written - GLYD_BLOCKHEADER_SIZE, &part);
            FORWARD_IF_ERROR(r);
            done += part;
            glyd_blockHeaderWrite(dst + written, (unsigned)(last && done == n), GLYD_BLOCK_COMPRESSED, 0,
                                  (uint32_t)r);
            written += GLYD_BLOCKHEADER_SIZE + r;
        }
        return written;
    }
    if (c > 0) {
        glyd_blockHeaderWrite(dst, (unsigned)last, zc->fast ? GLYD_BLOCK_FAST : GLYD_BLOCK_COMPRESSED,
                              (unsigned)restart, (uint32_t)c);
        return GLYD_BLOCKHEADER_SIZE + c;
    }
    RETURN_ERROR_IF(cap - GLYD_BLOCKHEADER_SIZE < n, dstSize_tooSmall, "raw block");
    glyd_blockHeaderWrite(dst, (unsigned)last, GLYD_BLOCK_RAW, (unsigned)restart, (uint32_t)n);
    memcpy(dst + GLYD_BLOCKHEADER_SIZE, src, n);
    return GLYD_BLOCKHEADER_SIZE + n;
}

/* Codes src[0..n) as blocks with a fresh history. restart marks the first
 * block; last marks the final block as the frame's last. */
static size_t compress_segment(block_coder* zc, uint8_t* dst, size_t cap, const uint8_t* src,
                               size_t n, size_t blockMax, int last, int restart)
{
    size_t pos = 0, op = 0;
    coder_start(zc, src);
    do {
        size_t const bs = GLYD_MIN(blockMax, n - pos);
        size_t const r = write_block(zc, dst + op, cap - op, src + pos, bs, last && pos + bs == n,
                                     restart && pos == 0);
        FORWARD_IF_ERROR(r);
        op += r;
        pos += bs;
    } while (pos < n);
    return op;
}

/* A row group's run of blocks, through the calling thread's coder. */
static size_t code_run(void* cctx, uint8_t* dst, size_t cap, const uint8_t* src, size_t n)
{
    glyd_CCtx* const c = (glyd_CCtx*)cctx;
    return compress_segment(&c->zc, dst, cap, src, n, c->blockMax, 1, 1);
}

/* Codes src[0..n) as row groups, the last of them marked last when `last`. */
static size_t code_row_groups(glyd_CCtx* c, uint8_t* dst, size_t cap, const uint8_t* src, size_t n, int last)
{
    size_t pos = 0, op = 0;
    do {
        size_t const len = glyd_rowGroupCut(src + pos, n - pos, c->segMax);
        size_t const r = glyd_rowGroupCode(&c->rc, dst + op, cap - op, src + pos, len, last && pos + len == n);
        FORWARD_IF_ERROR(r);
        op += r;
        pos += len;
    } while (pos < n);
    return op;
}

static void seg_job_run(void* arg)
{
    seg_job* const j = (seg_job*)arg;
    j->result = compress_segment(j->zc, j->dst, j->cap, j->src, j->srcSize, j->blockMax, j->last, 1);
}

/* Codes src[0..n) as segments of segMax on the workers, appending to dst.
 * Returns the bytes written or an error. */
static size_t mt_compress(glyd_CCtx* c, uint8_t* dst, size_t cap, const uint8_t* src, size_t n, int last)
{
    size_t const segBound = seg_bound(c);
    size_t done = 0, op = 0;
    do {
        unsigned nbJobs = 0, j;
        size_t round = 0;
        while (nbJobs < c->nbWz && (done + round < n || (n == 0 && nbJobs == 0))) {
            seg_job* const job = &c->jobs[nbJobs];
            size_t const len = GLYD_MIN(c->segMax, n - done - round);
            job->zc = &c->wz[nbJobs];
            job->src = src + done + round;
            job->srcSize = len;
            job->dst = c->scratch + nbJobs * segBound;
            job->cap = segBound;
            job->blockMax = c->blockMax;
            job->last = last && done + round + len == n;
            round += len;
            nbJobs++;
        }
        if (nbJobs == 1 || c->pool == NULL) {
            for (j = 0; j < nbJobs; j++) seg_job_run(&c->jobs[j]);
        } else {
            for (j = 0; j < nbJobs; j++) glyd_poolAdd(c->pool, seg_job_run, &c->jobs[j]);
            glyd_poolWait(c->pool);
        }
        for (j = 0; j < nbJobs; j++) {
            seg_job* const job = &c->jobs[j];
            FORWARD_IF_ERROR(job->result);
            RETURN_ERROR_IF(cap - op < job->result, dstSize_tooSmall, "destination");
            memcpy(dst + op, job->dst, job->result);
            op += job->result;
            FORWARD_IF_ERROR(push_segment(c, job->result, job->srcSize));
        }
        done += round;
    } while (done < n);
    return op;
}

/* ------------------------------------------------------------------------ */
/* One-shot                                                                 */
/* ------------------------------------------------------------------------ */

/* One shot through the streaming path, whose buffer puts the dictionary
 * and the input side by side (the LZ coder needs history contiguous). */
static size_t compress_streamed(glyd_CCtx* c, uint8_t* dst, size_t cap, const uint8_t* src, size_t n)
{
    glyd_inBuffer in = { src, n, 0 };
    glyd_outBuffer out = { dst, cap, 0 };
    size_t r;
    c->pledged = n;
    r = glyd_compressStream(c, &out, &in, glyd_e_end);
    FORWARD_IF_ERROR(r);
    if (r != 0) {
        glyd_CCtx_reset(c, glyd_reset_session_only);
        RETURN_ERROR(dstSize_tooSmall, "frame larger than the destination");
    }
    return out.pos;
}

size_t glyd_compress2(glyd_CCtx* c, void* dst, size_t dstCapacity, const void* src, size_t srcSize)
{
    static const uint8_t empty[1] = { 0 };
    uint8_t* const out = (uint8_t*)dst;
    /* an empty input may come as NULL; history needs a real address */
    const uint8_t* const in = src ? (const uint8_t*)src : empty;
    size_t op, r;
    RETURN_ERROR_IF(dst == NULL && dstCapacity > 0, dstBuffer_null, "dst");
    RETURN_ERROR_IF(src == NULL && srcSize > 0, GENERIC, "src is NULL");
    glyd_CCtx_reset(c, glyd_reset_session_only);
    if (c->dict.size) return compress_streamed(c, out, dstCapacity, in, srcSize);
    FORWARD_IF_ERROR(resolve_frame(c, srcSize));
    op = write_header(c, out, dstCapacity, srcSize);
    FORWARD_IF_ERROR(op);
    if (c->req.records) {
        r = code_row_groups(c, out + op, dstCapacity - op, in, srcSize, 1);
        FORWARD_IF_ERROR(r);
        op += r;
    } else if (c->mt) {
        r = mt_compress(c, out + op, dstCapacity - op, in, srcSize, 1);
        FORWARD_IF_ERROR(r);
        op += r;
    } else {
        size_t pos = 0;
        do {
            size_t const len = GLYD_MIN(c->segMax, srcSize - pos);
            r = compress_segment(&c->zc, out + op, dstCapacity - op, in + pos, len, c->blockMax,
                                 pos + len == srcSize, c->segLog != 0);
            FORWARD_IF_ERROR(r);
            if (c->segLog) FORWARD_IF_ERROR(push_segment(c, r, len));
            op += r;
            pos += len;
        } while (pos < srcSize);
    }
    if (c->req.checksum) glyd_csumUpdate(&c->xxh, in, srcSize);
    r = write_trailer(c, out + op, dstCapacity - op);
    FORWARD_IF_ERROR(r);
    return op + r;
}

size_t glyd_compress(void* dst, size_t dstCapacity, const void* src, size_t srcSize, int level)
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t r;
    RETURN_ERROR_IF(c == NULL, memory_allocation, "context");
    r = glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level);
    if (!GLYD_IS_ERROR(r)) r = glyd_compress2(c, dst, dstCapacity, src, srcSize);
    glyd_freeCCtx(c);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                */
/* ------------------------------------------------------------------------ */

size_t glyd_CStreamInSize(void) { return (size_t)1 << GLYD_BLOCKLOG_DEFAULT; }
size_t glyd_CStreamOutSize(void)
{
    return GLYD_COMPRESSBOUND((size_t)1 << GLYD_BLOCKLOG_DEFAULT) + GLYD_FRAMEHEADER_MAX;
}

static size_t init_stream(glyd_CCtx* c)
{
    size_t inNeed, outNeed, h;
    FORWARD_IF_ERROR(resolve_frame(c, c->pledged));
    if (c->req.records) {
        inNeed = c->segMax;
        if (c->pledged != GLYD_CONTENTSIZE_UNKNOWN && c->pledged < inNeed) inNeed = (size_t)GLYD_MAX(c->pledged, 1);
        outNeed = GLYD_ROWGROUP_HEADER_SIZE + glyd_rowGroupBodyMax(inNeed);
    } else if (c->mt) {
        inNeed = c->nbWz * c->segMax;
        outNeed = c->nbWz * seg_bound(c);
    } else {
        size_t const window = (size_t)1 << c->lp.windowLog;
        /* Room beyond window + block sets how often history is moved down:
         * once per `slack` bytes of input, moving `window` bytes. */
        size_t const slack = GLYD_MAX(window, (size_t)4 << 20);
        inNeed = window + c->blockMax + GLYD_MIN(slack, (size_t)32 << 20);
        outNeed = GLYD_BLOCKHEADER_SIZE + c->blockMax + 64;
    }
    if (c->pledged != GLYD_CONTENTSIZE_UNKNOWN && c->pledged < inNeed)
        inNeed = (size_t)GLYD_MAX(c->pledged, 1);
    inNeed += c->dict.size;
    outNeed += GLYD_FRAMEHEADER_MAX + 64;
    FORWARD_IF_ERROR(ensure_buffer(c, &c->inBuf, &c->inBufCap, inNeed));
    FORWARD_IF_ERROR(ensure_buffer(c, &c->outBuf, &c->outBufCap, outNeed));
    c->inBufSize = inNeed;
    c->inStart = c->inEnd = c->histStart = c->segFill = 0;
    c->segOpen = 0;
    c->dictPending = c->dict.size > 0;
    if (c->dictPending) {
        memcpy(c->inBuf, c->dict.content, c->dict.size);
        c->inStart = c->inEnd = c->dict.size;
    }
    h = write_header(c, c->outBuf, c->outBufCap, c->pledged);
    FORWARD_IF_ERROR(h);
    c->outPos = 0;
    c->outEnd = h;
    c->stage = STAGE_ONGOING;
    return 0;
}

static void flush_out(glyd_CCtx* c, glyd_outBuffer* out)
{
    size_t const n = GLYD_MIN(c->outEnd - c->outPos, out->size - out->pos);
    if (n) {
        memcpy((uint8_t*)out->dst + out->pos, c->outBuf + c->outPos, n);
        out->pos += n;
        c->outPos += n;
    }
    if (c->outPos == c->outEnd) c->outPos = c->outEnd = 0;
}

/* Copies input into inBuf (at most `room` bytes), checking the pledge. */
static size_t take_input(glyd_CCtx* c, glyd_inBuffer* in, size_t room)
{
    size_t const take = GLYD_MIN(room, in->size - in->pos);
    if (take == 0) return 0;
    RETURN_ERROR_IF(c->pledged != GLYD_CONTENTSIZE_UNKNOWN && c->consumed + take > c->pledged,
                    srcSize_wrong, "more input than pledged");
    memcpy(c->inBuf + c->inEnd, (const uint8_t*)in->src + in->pos, take);
    if (c->req.checksum) glyd_csumUpdate(&c->xxh, c->inBuf + c->inEnd, take);
    in->pos += take;
    c->inEnd += take;
    c->consumed += take;
    return 0;
}

static size_t finish_frame(glyd_CCtx* c)
{
    size_t const need = c->outEnd + trailer_size(c);
    size_t r;
    RETURN_ERROR_IF(c->pledged != GLYD_CONTENTSIZE_UNKNOWN && c->consumed != c->pledged,
                    srcSize_wrong, "less input than pledged");
    if (need > c->outBufCap) {
        /* a long stream's seek table can outgrow the output buffer */
        uint8_t* const grown = (uint8_t*)glyd_malloc(need, c->mem);
        RETURN_ERROR_IF(grown == NULL, memory_allocation, "output buffer");
        memcpy(grown, c->outBuf, c->outEnd);
        glyd_free(c->outBuf, c->mem);
        c->outBuf = grown;
        c->outBufCap = need;
    }
    r = write_trailer(c, c->outBuf + c->outEnd, c->outBufCap - c->outEnd);
    FORWARD_IF_ERROR(r);
    c->outEnd += r;
    c->stage = STAGE_ENDING;
    return 0;
}

/* Moves history down to make room, keeping what matches may still use. */
static void make_room(glyd_CCtx* c)
{
    size_t const window = (size_t)1 << c->lp.windowLog;
    size_t keepFrom = c->dictPending ? 0 : c->inStart;
    if (c->segOpen) {
        keepFrom = c->inStart > window ? c->inStart - window : 0;
        if (keepFrom < c->histStart) keepFrom = c->histStart;
    }
    if (keepFrom == 0) return;
    memmove(c->inBuf, c->inBuf + keepFrom, c->inEnd - keepFrom);
    c->inStart -= keepFrom;
    c->inEnd -= keepFrom;
    c->histStart = c->histStart > keepFrom ? c->histStart - keepFrom : 0;
    if (c->segOpen) coder_rebase(&c->zc, keepFrom);
}

/* Codes the buffered input [inStart, inEnd) as one block. */
static size_t emit_block(glyd_CCtx* c, int last)
{
    size_t const n = c->inEnd - c->inStart;
    int restart = 0;
    size_t r;
    if (!c->segOpen) {
        size_t const hist = c->dictPending ? c->dict.size : 0;
        coder_start(&c->zc, c->inBuf + c->inStart - hist);
        if (hist) {
            coder_load(&c->zc, c->inBuf + c->inStart - hist, hist);
            /* (checked when loaded: cannot fail) */
            if (c->dict.tablesSize && c->zc.lz) glyd_lzLoadTables(c->zc.lz, c->dict.tables, c->dict.tablesSize);
        }
        c->dictPending = 0;
        c->segOpen = 1;
        c->histStart = c->inStart - hist;
        c->segFill = 0;
        c->curSegC = 0;
        restart = c->segLog != 0;
    }
    r = write_block(&c->zc, c->outBuf + c->outEnd, c->outBufCap - c->outEnd,
                    c->inBuf + c->inStart, n, last, restart);
    FORWARD_IF_ERROR(r);
    c->outEnd += r;
    c->inStart += n;
    c->segFill += n;
    c->curSegC += r;
    if (c->segLog && (c->segFill == c->segMax || last)) {
        FORWARD_IF_ERROR(push_segment(c, c->curSegC, c->segFill));
        c->segOpen = 0;
    }
    return 0;
}

/* The frame's last bytes have reached the caller: ready for the next. */
static size_t frame_done(glyd_CCtx* c)
{
    c->stage = STAGE_IDLE;
    c->pledged = GLYD_CONTENTSIZE_UNKNOWN;
    return 0;
}

static size_t stream_single(glyd_CCtx* c, glyd_outBuffer* out, glyd_inBuffer* in, glyd_EndDirective endOp)
{
    for (;;) {
        size_t target;
        flush_out(c, out);
        if (c->outEnd > c->outPos) return c->outEnd - c->outPos;
        if (c->stage == STAGE_ENDING) return frame_done(c);
        target = GLYD_MIN(c->blockMax, c->segMax - c->segFill);
        {
            size_t const want = target - (c->inEnd - c->inStart);
            if (want && in->pos < in->size) {
                if (c->inBufSize - c->inEnd < GLYD_MIN(want, in->size - in->pos)) make_room(c);
                /* the buffer holds window + block; only a broken pledge
                 * (caught by take_input) could leave it without room */
                RETURN_ERROR_IF(c->inBufSize == c->inEnd && c->pledged == GLYD_CONTENTSIZE_UNKNOWN,
                                GENERIC, "stream buffer exhausted");
                FORWARD_IF_ERROR(take_input(c, in, GLYD_MIN(want, c->inBufSize - c->inEnd)));
                RETURN_ERROR_IF(c->inBufSize == c->inEnd && in->pos < in->size &&
                                c->inEnd - c->inStart < target, srcSize_wrong, "more input than pledged");
            }
        }
        if (c->inEnd - c->inStart == target) {
            int const last = endOp == glyd_e_end && in->pos == in->size &&
                             (c->pledged == GLYD_CONTENTSIZE_UNKNOWN || c->consumed == c->pledged);
            FORWARD_IF_ERROR(emit_block(c, last));
            if (last) FORWARD_IF_ERROR(finish_frame(c));
            continue;
        }
        if (in->pos < in->size) continue; /* the buffer had to make room */
        switch (endOp) {
        case glyd_e_continue:
            return target - (c->inEnd - c->inStart);
        case glyd_e_flush:
            if (c->inEnd == c->inStart) return 0;
            FORWARD_IF_ERROR(emit_block(c, 0));
            continue;
        default:
            FORWARD_IF_ERROR(emit_block(c, 1));
            FORWARD_IF_ERROR(finish_frame(c));
            continue;
        }
    }
}

/* Codes buffered input with workers: a full buffer, or all of it
 * (`all`), as segments. Returns the bytes of inBuf it took. */
static size_t code_segments(glyd_CCtx* c, int all, int last)
{
    size_t const r = mt_compress(c, c->outBuf + c->outEnd, c->outBufCap - c->outEnd, c->inBuf, c->inEnd, last);
    (void)all;
    FORWARD_IF_ERROR(r);
    c->outEnd += r;
    return c->inEnd;
}

/* Codes buffered input of records: a full buffer's whole lines as one row
 * group, or all of it (`all`: a flush or the end). Returns the bytes of
 * inBuf it took. */
static size_t code_row_group(glyd_CCtx* c, int all, int last)
{
    size_t const len = all ? c->inEnd : glyd_rowGroupCut(c->inBuf, c->inEnd, c->segMax);
    size_t const r = glyd_rowGroupCode(&c->rc, c->outBuf + c->outEnd, c->outBufCap - c->outEnd, c->inBuf, len, last);
    FORWARD_IF_ERROR(r);
    c->outEnd += r;
    return len;
}

/* Streams through a buffer coded a piece at a time: with workers, up to one
 * segment per worker, coded all at once; records, a row group's bound of
 * text, its whole lines one group and the rest kept for the next. A flush
 * codes what is there. */
static size_t stream_buffered(glyd_CCtx* c, glyd_outBuffer* out, glyd_inBuffer* in, glyd_EndDirective endOp,
                              size_t (*code)(glyd_CCtx*, int all, int last))
{
    for (;;) {
        size_t taken;
        flush_out(c, out);
        if (c->outEnd > c->outPos) return c->outEnd - c->outPos;
        if (c->stage == STAGE_ENDING) return frame_done(c);
        FORWARD_IF_ERROR(take_input(c, in, c->inBufSize - c->inEnd));
        if (c->inEnd == c->inBufSize && !(in->pos == in->size && endOp == glyd_e_end)) {
            taken = code(c, 0, 0);
        } else if (endOp == glyd_e_continue) {
            return c->inBufSize - c->inEnd;
        } else if (endOp == glyd_e_flush) {
            if (c->inEnd == 0) return 0;
            taken = code(c, 1, 0);
        } else {
            RETURN_ERROR_IF(c->pledged != GLYD_CONTENTSIZE_UNKNOWN && c->consumed != c->pledged,
                            srcSize_wrong, "less input than pledged");
            taken = code(c, 1, 1);
            FORWARD_IF_ERROR(taken);
            FORWARD_IF_ERROR(finish_frame(c));
        }
        FORWARD_IF_ERROR(taken);
        memmove(c->inBuf, c->inBuf + taken, c->inEnd - taken);
        c->inEnd -= taken;
    }
}

size_t glyd_compressStream(glyd_CCtx* c, glyd_outBuffer* output, glyd_inBuffer* input,
                           glyd_EndDirective endOp)
{
    size_t r;
    RETURN_ERROR_IF(output->pos > output->size, GENERIC, "output position past its size");
    RETURN_ERROR_IF(input->pos > input->size, GENERIC, "input position past its size");
    RETURN_ERROR_IF(output->dst == NULL && output->size > 0, dstBuffer_null, "output");
    RETURN_ERROR_IF(input->src == NULL && input->size > 0, GENERIC, "input is NULL");
    RETURN_ERROR_IF(endOp < glyd_e_continue || endOp > glyd_e_end, parameter_outOfBound, "endOp");
    if (c->stage == STAGE_IDLE) {
        if (endOp == glyd_e_continue && input->pos == input->size) return glyd_CStreamInSize();
        FORWARD_IF_ERROR(init_stream(c));
    }
    r = c->req.records ? stream_buffered(c, output, input, endOp, code_row_group)
        : c->mt        ? stream_buffered(c, output, input, endOp, code_segments)
                       : stream_single(c, output, input, endOp);
    if (GLYD_IS_ERROR(r)) {
        /* the frame cannot be continued coherently */
        c->stage = STAGE_IDLE;
        c->pledged = GLYD_CONTENTSIZE_UNKNOWN;
        c->outPos = c->outEnd = 0;
    }
    return r;
}

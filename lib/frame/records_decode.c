/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * records_decode.c: a row group of a records frame back to its text
 * (docs/FORMAT.md, section 18): the text's own run of blocks or
 * context-mixing stream, or its log columns (seven runs, or one stream)
 * rebuilt into lines.
 */
#include "frame.h"
#include "../entropy/cm.h"
#include "../records/records.h"

/* One run of blocks that must end inside the body, its content inside
 * [dst, dstEnd), which bounds it (a run of columns may pass the segment
 * size that bounds the text); returns its content size. */
static size_t decode_run(glyd_lzDCtx* lz, const glyd_frameHeader* fh, uint8_t* dst, uint8_t* dstEnd,
                         const uint8_t* src, size_t srcSize, size_t* srcUsed)
{
    glyd_frameHeader unbounded = *fh;
    int sawLast;
    size_t n;
    unbounded.segmentLog = 0;
    n = glyd_decodeRun(lz, &unbounded, dst, dstEnd, src, srcSize, srcUsed, &sawLast);
    if (GLYD_IS_ERROR(n)) {
        /* the body is whole and the room is what its header promises: a
         * run that wants more of either is damaged */
        RETURN_ERROR_IF(n == GLYD_ERROR(dstSize_tooSmall) || n == GLYD_ERROR(srcSize_truncated),
                        corruption_detected, "run of blocks past its row group");
        return n;
    }
    RETURN_ERROR_IF(!sawLast, corruption_detected, "run of blocks past its row group");
    return n;
}

/* A column set back to the row group's text. */
static size_t rebuild(const glyd_rowGroupHeader* gh, uint8_t* dst, const uint8_t* cols, size_t size,
                      glyd_rowGroupScratch* scratch, glyd_customMem mem)
{
    size_t const n = glyd_logFromColumnsIn(dst, gh->textSize, cols, size, &scratch->rebuild, mem);
    if (GLYD_IS_ERROR(n)) RETURN_ERROR(corruption_detected, "log columns that do not hold together");
    RETURN_ERROR_IF(n != gh->textSize, corruption_detected, "log columns of another size than their row group");
    return n;
}

/* A body of log columns in one context-mixing stream: their size, then
 * the stream. */
static size_t decode_cm_columns(const glyd_rowGroupHeader* gh, const uint8_t* body, uint8_t* dst,
                                glyd_rowGroupScratch* scratch, glyd_customMem mem)
{
    glyd_buffer* const cols = &scratch->columns;
    uint64_t size;
    size_t const prefix = glyd_readVarint(body, gh->bodySize, &size);
    size_t n;
    RETURN_ERROR_IF(!prefix || size > glyd_rowGroupColumnsMax(gh->textSize), corruption_detected,
                    "size of a row group's columns");
    FORWARD_IF_ERROR(glyd_bufferReserve(cols, (size_t)size, mem));
    n = glyd_cmDecompress(cols->buf, (size_t)size, body + prefix, gh->bodySize - prefix);
    FORWARD_IF_ERROR(n);
    return rebuild(gh, dst, cols->buf, n, scratch, mem);
}

void glyd_rowGroupScratchFree(glyd_rowGroupScratch* s, glyd_customMem mem)
{
    glyd_bufferFree(&s->columns, mem);
    glyd_logScratchFree(&s->rebuild, mem);
}

size_t glyd_rowGroupDecode(glyd_lzDCtx* lz, const glyd_frameHeader* fh, const glyd_rowGroupHeader* gh,
                           const uint8_t* body, uint8_t* dst, glyd_rowGroupScratch* scratch, glyd_customMem mem)
{
    glyd_buffer* const cols = &scratch->columns;
    size_t pos = 0, used, n, filled = 0, runs;
    switch (gh->kind) {
    case GLYD_ROWGROUP_TEXT:
        n = decode_run(lz, fh, dst, dst + gh->textSize, body, gh->bodySize, &used);
        FORWARD_IF_ERROR(n);
        RETURN_ERROR_IF(n != gh->textSize || used != gh->bodySize, corruption_detected,
                        "row group of another size than its header says");
        return n;
    case GLYD_ROWGROUP_TEXT_CM:
        return glyd_cmDecompress(dst, gh->textSize, body, gh->bodySize);
    case GLYD_ROWGROUP_LOGCOLUMNS_CM:
        return decode_cm_columns(gh, body, dst, scratch, mem);
    default:
        break;
    }
    {
        size_t const colMax = glyd_rowGroupColumnsMax(gh->textSize);
        FORWARD_IF_ERROR(glyd_bufferReserve(cols, colMax, mem));
        for (runs = 0; runs < GLYD_ROWGROUP_RUNS_LOGCOLUMNS; runs++) {
            n = decode_run(lz, fh, cols->buf + filled, cols->buf + colMax, body + pos, gh->bodySize - pos, &used);
            FORWARD_IF_ERROR(n);
            filled += n;
            pos += used;
        }
    }
    RETURN_ERROR_IF(pos != gh->bodySize, corruption_detected, "row group body with bytes past its runs");
    return rebuild(gh, dst, cols->buf, filled, scratch, mem);
}

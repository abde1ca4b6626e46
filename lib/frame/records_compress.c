/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * records_compress.c: a row group of a records frame from its text
 * (docs/FORMAT.md, section 18): the text as one run of blocks, or its log
 * columns as seven runs (the header and each part with tables of its own),
 * whichever takes less.
 */
#include "frame.h"
#include "../records/records.h"

/* Texts shorter than this stay text: columns' own header and runs cost
 * more than they could save. */
#define COLUMNS_MIN_TEXT 256

size_t glyd_rowGroupCut(const uint8_t* text, size_t n, size_t max)
{
    size_t i;
    if (n <= max) return n;
    /* a group ends with a whole line where one ends inside the bound */
    for (i = max; i > 0; i--)
        if (text[i - 1] == '\n') return i;
    return max;
}

void glyd_rowGroupCoderFree(glyd_rowGroupCoder* rc)
{
    glyd_bufferFree(&rc->cols, rc->mem);
    glyd_bufferFree(&rc->alt, rc->mem);
}

/* The text's log columns coded into rc->alt in fewer than `budget` bytes;
 * 0 where they would not fit in it (or are refused), else their size. */
static size_t code_columns(glyd_rowGroupCoder* rc, const uint8_t* text, size_t n, size_t budget)
{
    size_t const colMax = glyd_rowGroupColumnsMax(n);
    size_t pieces[GLYD_LOGCOL_PIECES], cols, pos = 0, op = 0;
    unsigned k;
    FORWARD_IF_ERROR(glyd_bufferReserve(&rc->cols, colMax, rc->mem));
    FORWARD_IF_ERROR(glyd_bufferReserve(&rc->alt, budget, rc->mem));
    cols = glyd_logToColumns(rc->cols.buf, colMax, text, n);
    if (cols == GLYD_ERROR(dstSize_tooSmall)) return 0;
    FORWARD_IF_ERROR(cols);
    FORWARD_IF_ERROR(glyd_logColumnPieces(rc->cols.buf, cols, pieces));
    for (k = 0; k < GLYD_LOGCOL_PIECES; k++) {
        size_t const r = rc->codeRun(rc->coder, rc->alt.buf + op, budget - op, rc->cols.buf + pos, pieces[k]);
        if (r == GLYD_ERROR(dstSize_tooSmall)) return 0;
        FORWARD_IF_ERROR(r);
        op += r;
        pos += pieces[k];
    }
    return op < budget ? op : 0;
}

size_t glyd_rowGroupCode(glyd_rowGroupCoder* rc, uint8_t* dst, size_t cap, const uint8_t* text, size_t n,
                         int last)
{
    glyd_rowGroupHeader gh;
    size_t body, cols = 0;
    RETURN_ERROR_IF(cap < GLYD_ROWGROUP_HEADER_SIZE, dstSize_tooSmall, "row group header");
    body = rc->codeRun(rc->coder, dst + GLYD_ROWGROUP_HEADER_SIZE, cap - GLYD_ROWGROUP_HEADER_SIZE, text, n);
    FORWARD_IF_ERROR(body);
    /* decoders refuse a larger body: never write one */
    RETURN_ERROR_IF(body > glyd_rowGroupBodyMax(n), GENERIC, "row group body past its bound");
    if (n >= COLUMNS_MIN_TEXT) cols = code_columns(rc, text, n, body);
    FORWARD_IF_ERROR(cols);
    gh.last = (unsigned)last;
    gh.kind = GLYD_ROWGROUP_TEXT;
    gh.textSize = (uint32_t)n;
    if (cols) {
        memcpy(dst + GLYD_ROWGROUP_HEADER_SIZE, rc->alt.buf, cols);
        body = cols;
        gh.kind = GLYD_ROWGROUP_LOGCOLUMNS;
    }
    gh.bodySize = (uint32_t)body;
    glyd_rowGroupHeaderWrite(dst, gh);
    return GLYD_ROWGROUP_HEADER_SIZE + body;
}

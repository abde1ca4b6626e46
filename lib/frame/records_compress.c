/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * records_compress.c: a row group of a records frame from its text
 * (docs/FORMAT.md, section 18): the text as one run of blocks, or its log
 * columns as seven runs (the header and each part with tables of its own),
 * or, at the highest levels, either as one context-mixing stream: whichever
 * takes less.
 */
#include "frame.h"
#include "../entropy/cm.h"
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
    glyd_bufferFree(&rc->trial, rc->mem);
}

/* The text's log columns into rc->cols; their size, or 0 where they would
 * pass their bound. */
static size_t make_columns(glyd_rowGroupCoder* rc, const uint8_t* text, size_t n)
{
    size_t const colMax = glyd_rowGroupColumnsMax(n);
    size_t cols;
    FORWARD_IF_ERROR(glyd_bufferReserve(&rc->cols, colMax, rc->mem));
    cols = glyd_logToColumns(rc->cols.buf, colMax, text, n);
    return cols == GLYD_ERROR(dstSize_tooSmall) ? 0 : cols;
}

/* The columns rc->cols[0..cols) as seven runs of blocks into rc->trial, in
 * fewer than `budget` bytes; 0 where they do not fit, else their size. */
static size_t code_column_runs(glyd_rowGroupCoder* rc, size_t cols, size_t budget)
{
    size_t pieces[GLYD_LOGCOL_PIECES], pos = 0, op = 0;
    unsigned k;
    FORWARD_IF_ERROR(glyd_logColumnPieces(rc->cols.buf, cols, pieces));
    for (k = 0; k < GLYD_LOGCOL_PIECES; k++) {
        size_t const r = rc->codeRun(rc->coder, rc->trial.buf + op, budget - op, rc->cols.buf + pos, pieces[k]);
        if (r == GLYD_ERROR(dstSize_tooSmall)) return 0;
        FORWARD_IF_ERROR(r);
        op += r;
        pos += pieces[k];
    }
    return op < budget ? op : 0;
}

/* src[0..n) as one context-mixing stream into rc->trial after a prefix of
 * `prefixSize` bytes already there, in fewer than `budget` bytes in all;
 * 0 where it does not fit, else the body's size. */
static size_t code_cm(glyd_rowGroupCoder* rc, size_t prefixSize, const uint8_t* src, size_t n, size_t budget)
{
    size_t r;
    if (prefixSize + 4 >= budget) return 0;
    r = glyd_cmCompress(rc->trial.buf + prefixSize, budget - 1 - prefixSize, src, n);
    if (r == GLYD_ERROR(dstSize_tooSmall)) return 0;
    FORWARD_IF_ERROR(r);
    return prefixSize + r;
}

/* rc->trial, of `size` bytes, becomes the best body so far. */
static void keep_trial(glyd_rowGroupCoder* rc, size_t size, unsigned kind, size_t* best, unsigned* bestKind)
{
    glyd_buffer const t = rc->alt;
    rc->alt = rc->trial;
    rc->trial = t;
    *best = size;
    *bestKind = kind;
}

size_t glyd_rowGroupCode(glyd_rowGroupCoder* rc, uint8_t* dst, size_t cap, const uint8_t* text, size_t n,
                         int last)
{
    glyd_rowGroupHeader gh;
    size_t body, cols = 0, r;
    unsigned kind = GLYD_ROWGROUP_TEXT;
    RETURN_ERROR_IF(cap < GLYD_ROWGROUP_HEADER_SIZE, dstSize_tooSmall, "row group header");
    body = rc->codeRun(rc->coder, dst + GLYD_ROWGROUP_HEADER_SIZE, cap - GLYD_ROWGROUP_HEADER_SIZE, text, n);
    FORWARD_IF_ERROR(body);
    /* decoders refuse a larger body: never write one */
    RETURN_ERROR_IF(body > glyd_rowGroupBodyMax(n), GENERIC, "row group body past its bound");
    if (n >= COLUMNS_MIN_TEXT) {
        /* each other kind is kept where it takes less than the best so far */
        FORWARD_IF_ERROR(glyd_bufferReserve(&rc->alt, body, rc->mem));
        FORWARD_IF_ERROR(glyd_bufferReserve(&rc->trial, body, rc->mem));
        cols = make_columns(rc, text, n);
        FORWARD_IF_ERROR(cols);
        if (cols) {
            r = code_column_runs(rc, cols, body);
            FORWARD_IF_ERROR(r);
            if (r) keep_trial(rc, r, GLYD_ROWGROUP_LOGCOLUMNS, &body, &kind);
        }
        if (rc->contextMixing) {
            r = code_cm(rc, 0, text, n, body);
            FORWARD_IF_ERROR(r);
            if (r) keep_trial(rc, r, GLYD_ROWGROUP_TEXT_CM, &body, &kind);
            if (cols) {
                size_t const prefix = glyd_writeVarint(rc->trial.buf, GLYD_MIN(body, GLYD_VARINT_MAX), cols);
                r = prefix ? code_cm(rc, prefix, rc->cols.buf, cols, body) : 0;
                FORWARD_IF_ERROR(r);
                if (r) keep_trial(rc, r, GLYD_ROWGROUP_LOGCOLUMNS_CM, &body, &kind);
            }
        }
        if (kind != GLYD_ROWGROUP_TEXT) memcpy(dst + GLYD_ROWGROUP_HEADER_SIZE, rc->alt.buf, body);
    }
    gh.last = (unsigned)last;
    gh.kind = kind;
    gh.textSize = (uint32_t)n;
    gh.bodySize = (uint32_t)body;
    glyd_rowGroupHeaderWrite(dst, gh);
    return GLYD_ROWGROUP_HEADER_SIZE + body;
}

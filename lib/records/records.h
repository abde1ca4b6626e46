/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * records.h: text of records (log lines) turned into columns and back, a
 * reversible transform whose output the block coder then compresses far
 * better than the text (docs/FORMAT.md, "Log columns").
 *
 * Each line is split at delimiters into tokens; a token holding a decimal
 * digit is a variable and the rest of the line its template (the static
 * text, CLP's "log type"). Variables are typed: integers, runs of digits
 * (a value and its leading zeros) and other strings. A token whose digits
 * sit among punctuation only (dates, times, addresses, decimals) is split
 * into its runs of digits, the punctuation kept in the template. The output
 * holds the templates once, each line's template number, then every
 * variable grouped by template and slot, integers as deltas from the same
 * slot's previous value, so that the values of one field of one kind of
 * line sit together. Any bytes round-trip exactly: lines that are not
 * text only make templates that do not repeat.
 *
 * Not yet in the frame or the CLI (`-r`): the transform, its format, and
 * its checks stand alone for now.
 */
#ifndef GLYD_RECORDS_H
#define GLYD_RECORDS_H

#include "../common/common.h"

#define GLYD_LOGCOL_VERSION 1

/* Bytes in a template: an escape for a literal byte among these four, an
 * integer, a run of digits, a string. */
enum { GLYD_LOGCOL_ESCAPE = 0x10, GLYD_LOGCOL_INT = 0x11, GLYD_LOGCOL_DIGITS = 0x12, GLYD_LOGCOL_STRING = 0x13 };

/* Digits a run may have, its leading zeros included: its value then fits
 * 64 bits. Longer runs are strings. */
#define GLYD_LOGCOL_DIGITS_MAX 18

/* Bytes that end a token: what separates fields in the logs seen. '.',
 * '-', '_' and '/' stay inside tokens, so that versions, dates, names and
 * paths stay whole. */
static inline int glyd_logIsDelimiter(uint8_t c)
{
    switch (c) {
    case ' ': case '\t': case '\r': case ',': case ':': case ';': case '=': case '[': case ']':
    case '(': case ')': case '{': case '}': case '"': case '\'': case '<': case '>': case '|':
        return 1;
    default:
        return 0;
    }
}

/* Which token positions vary, by line shape (log_shapes.c): lines with the
 * same delimiters in the same order share a shape, and a position varies
 * when the shape's lines do not all hold the same token there. */
typedef struct glyd_logShapes_s glyd_logShapes;
/* Over the lines of src; NULL when memory runs out. */
glyd_logShapes* glyd_logShapesLearn(const uint8_t* src, size_t size);
/* For line [p, end): a flag per token, nonzero where it varies; NULL for
 * a shape of one line. */
const uint8_t* glyd_logShapesOf(const glyd_logShapes* s, const uint8_t* p, const uint8_t* end);
void glyd_logShapesFree(glyd_logShapes* s); /* NULL is fine */

/* src as columns into dst. Returns the size written, or an error
 * (dstSize_tooSmall where they do not fit: a caller that gives srcSize
 * bytes learns that the columns would not pay; memory_allocation). */
size_t glyd_logToColumns(void* dst, size_t dstCapacity, const void* src, size_t srcSize);

/* The size of the text that columns (a glyd_logToColumns output) rebuild,
 * from their header, or an error (corruption_detected). */
size_t glyd_logRebuiltSize(const void* columns, size_t size);

/* The text back from its columns into dst. Returns its size, or an error
 * (corruption_detected for columns that do not hold together,
 * dstSize_tooSmall, memory_allocation). Never reads or writes out of
 * bounds, whatever the input. */
size_t glyd_logFromColumns(void* dst, size_t dstCapacity, const void* columns, size_t size);

#endif

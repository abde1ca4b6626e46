/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * records.h: text of records (log lines, tables) turned into columns and
 * back, a reversible transform whose output the block coder then
 * compresses better than the text where lines repeat their kinds
 * (docs/FORMAT.md, "Log columns"; docs/RECORDS.md has where it wins and
 * where it loses).
 *
 * Each line is split into tokens (a table's fields, or at a log's
 * delimiters; an SQL dump's lines of many rows are first cut into a line
 * a row, which the columns mark so that the rebuild joins them); a token holding a decimal digit, or a word where lines of
 * the same shape differ, is a variable and the rest of the line its
 * template (the static text, CLP's "log type"). Variables are typed:
 * numbers (integers and decimals, a value at its slot's scale and the
 * form that writes it back), longer runs of digits and integers, and
 * other strings. A token whose digits sit among punctuation only (dates,
 * times, addresses) is split into its runs of digits, the punctuation kept
 * in the template. The output holds the templates once, each line's
 * template number, then every variable grouped by template and slot,
 * numbers as deltas from the same slot's previous value (or from another
 * number of the same line, where that pays), so that the values of one
 * field of one kind of line sit together. Any bytes
 * round-trip exactly: lines that are not text only make templates that
 * do not repeat.
 *
 * Records frames (lib/frame/records_*.c, `glyd -r`) hold these columns
 * row group by row group, where they take less than the text.
 */
#ifndef GLYD_RECORDS_H
#define GLYD_RECORDS_H

#include "../common/common.h"

/* Version 2 added numbers, version 3 packed their forms in bits, version
 * 4 lines cut from the next (a flag of the header); columns of versions 1
 * (no numbers, 0x14 a literal byte) to 3 still rebuild. */
#define GLYD_LOGCOL_VERSION 4

/* The header's flags byte: the text lacks a final newline; lines carry
 * whether they were cut from the next (version 4). */
#define GLYD_LOGCOL_FLAG_NO_FINAL_NEWLINE 1
#define GLYD_LOGCOL_FLAG_JOINED 2

/* Bytes in a template: an escape for a literal byte among these five, an
 * integer, a run of digits, a string, a decimal. */
enum {
    GLYD_LOGCOL_ESCAPE = 0x10,
    GLYD_LOGCOL_INT = 0x11,
    GLYD_LOGCOL_DIGITS = 0x12,
    GLYD_LOGCOL_STRING = 0x13,
    GLYD_LOGCOL_DECIMAL = 0x14
};

/* A decimal's digits before (leading zeros aside) and after its point:
 * at most this many each, so that a slot's values scaled to its longest
 * fraction fit 64 bits. */
#define GLYD_LOGCOL_DECIMAL_DIGITS 9

/* 10^e for e in 0..GLYD_LOGCOL_DECIMAL_DIGITS: a number's scales. */
static inline uint64_t glyd_logPow10(uint64_t e)
{
    static const uint64_t k[GLYD_LOGCOL_DECIMAL_DIGITS + 1] = { 1,       10,       100,       1000,      10000,
                                                                100000,  1000000,  10000000,  100000000, 1000000000 };
    return k[e];
}

/* Bits a number's form takes at most: leading zeros (up to
 * GLYD_LOGCOL_DIGITS_MAX) times (scale + 1), plus the digits dropped. */
#define GLYD_LOGCOL_FORM_BITS 8

/* Digits a run may have, its leading zeros included: its value then fits
 * 64 bits. Longer runs are strings. */
#define GLYD_LOGCOL_DIGITS_MAX 18

/* A string slot's values seen most recently, that a value may name
 * instead of repeating its bytes. */
#define GLYD_LOGCOL_RECENT 64

/* How lines split into tokens: at delimiters, a quoted field (where
 * quotes counts) one token up to its closing quote. */
enum {
    GLYD_LOGTOK_QUOTES_NONE = 0,
    GLYD_LOGTOK_QUOTES_CSV = 1, /* a token in double quotes, "" a quote inside */
    GLYD_LOGTOK_QUOTES_SQL = 2  /* in single quotes, a backslash escaping the byte after it */
};
typedef struct {
    uint8_t delimiter[256]; /* nonzero: ends a token */
    int quotes;             /* GLYD_LOGTOK_QUOTES_*: a quoted token runs past delimiters to its closing quote */
    int sqlRows;            /* lines of SQL INSERT ... VALUES (...),(...): a record a row */
} glyd_logTokens;

/* The split for src (log_tokens.c): a table's when a comma or a tab
 * (outside quotes) comes as many times in nearly every line and the text
 * is not JSON, its fields then the tokens; else a log's, whose delimiters are
 * what separates fields in the logs seen (space, tab, CR and
 * ",:;=[](){}\"'<>|"; '.', '-', '_' and '/' stay inside tokens, so that
 * versions, dates, names and paths stay whole). */
void glyd_logTokensSniff(glyd_logTokens* t, const uint8_t* src, size_t size);

/* The record of text that starts at p (< end): a line, or where the
 * split cuts lines (an SQL dump's rows, t->sqlRows), a row. Its bytes are
 * [p, *stop) and the next starts at *next; returns 1 where it was cut
 * (joined to the next: no newline between them), else 0 (a newline or
 * the end follows). `inRow` is whether the record before was cut. */
int glyd_logNextRecord(const glyd_logTokens* t, const uint8_t* p, const uint8_t* end, int inRow,
                       const uint8_t** stop, const uint8_t** next);

/* The end of the token that starts at p (p < end, not a delimiter). */
static inline const uint8_t* glyd_logTokenEnd(const glyd_logTokens* t, const uint8_t* p, const uint8_t* end)
{
    if (t->quotes == GLYD_LOGTOK_QUOTES_CSV && *p == '"') {
        for (p++; p < end; p++) {
            if (*p != '"') continue;
            if (p + 1 < end && p[1] == '"') { p++; continue; }
            p++;
            break;
        }
    } else if (t->quotes == GLYD_LOGTOK_QUOTES_SQL && *p == '\'') {
        for (p++; p < end; p++) {
            if (*p == '\\' && p + 1 < end) { p++; continue; }
            if (*p != '\'') continue;
            p++;
            break;
        }
    }
    while (p < end && !t->delimiter[*p]) p++;
    return p;
}

/* Which token positions vary, by line shape (log_shapes.c): lines with the
 * same delimiters in the same order share a shape, and a position varies
 * when the shape's lines do not all hold the same token there. */
typedef struct glyd_logShapes_s glyd_logShapes;
/* Over the first `lines` lines of src, split by t; NULL when memory runs
 * out. */
glyd_logShapes* glyd_logShapesLearn(const glyd_logTokens* t, const uint8_t* src, size_t size, size_t lines);
/* (lines: records, as glyd_logNextRecord cuts them) */
/* For line `line` (from 0): a flag per token, nonzero where it varies;
 * NULL for a shape of one line. */
const uint8_t* glyd_logShapesOf(const glyd_logShapes* s, size_t line);
void glyd_logShapesFree(glyd_logShapes* s); /* NULL is fine */

/* src as columns into dst. Returns the size written, or an error
 * (dstSize_tooSmall where they do not fit: a caller that gives srcSize
 * bytes learns that the columns would not pay; memory_allocation). */
size_t glyd_logToColumns(void* dst, size_t dstCapacity, const void* src, size_t srcSize);

/* The size of the text that columns (a glyd_logToColumns output) rebuild,
 * from their header, or an error (corruption_detected). */
size_t glyd_logRebuiltSize(const void* columns, size_t size);

/* A column set's pieces, in order: its header, then its six parts
 * (templates, lines, integers, zeros, references, strings), each of which
 * the frame codes apart. Returns 0 or an error (corruption_detected). */
#define GLYD_LOGCOL_PIECES 7
size_t glyd_logColumnPieces(const void* columns, size_t size, size_t pieces[GLYD_LOGCOL_PIECES]);

/* The text back from its columns into dst. Returns its size, or an error
 * (corruption_detected for columns that do not hold together,
 * dstSize_tooSmall, memory_allocation). Never reads or writes out of
 * bounds, whatever the input. */
size_t glyd_logFromColumns(void* dst, size_t dstCapacity, const void* columns, size_t size);

/* The arrays a rebuild works in (templates, lines, values), kept from one
 * rebuild to the next: fresh ones for every row group would be pages the
 * kernel must fault in and clear, a quarter of decoding a table's time.
 * Zero it before its first use; glyd_logScratchFree gives it back. */
enum {
    GLYD_LOGSCRATCH_TEMPLATES,
    GLYD_LOGSCRATCH_PIECES,
    GLYD_LOGSCRATCH_LITERAL,
    GLYD_LOGSCRATCH_LINES,
    GLYD_LOGSCRATCH_JOINED,
    GLYD_LOGSCRATCH_INTS,
    GLYD_LOGSCRATCH_ZEROS,
    GLYD_LOGSCRATCH_SCALES,
    GLYD_LOGSCRATCH_STRINGS,
    GLYD_LOGSCRATCH_SLOTS,
    GLYD_LOGSCRATCH_ARRAYS
};
typedef struct {
    glyd_buffer array[GLYD_LOGSCRATCH_ARRAYS];
} glyd_logScratch;
void glyd_logScratchFree(glyd_logScratch* s, glyd_customMem mem);

/* glyd_logFromColumns in scratch's arrays, allocated through mem. */
size_t glyd_logFromColumnsIn(void* dst, size_t dstCapacity, const void* columns, size_t size, glyd_logScratch* scratch,
                             glyd_customMem mem);

#endif

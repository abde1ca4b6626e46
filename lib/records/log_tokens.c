/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_tokens.c: how a text's lines split into tokens (records.h): as a
 * table's fields when a comma or a tab comes as many times in nearly
 * every line (and the text is not JSON), else at a log's delimiters; and
 * where an SQL dump's lines of many rows are cut into a record a row.
 */
#include "records.h"

/* Lines looked at, and the share of them that must agree. */
#define SNIFF_LINES 1000
#define SNIFF_AGREE 0.9

/* Times c comes in line [p, end) outside double quotes. */
static size_t count_outside_quotes(const uint8_t* p, const uint8_t* end, uint8_t c)
{
    size_t n = 0;
    int quoted = 0;
    for (; p < end; p++) {
        if (*p == '"') quoted = !quoted;
        else if (*p == c && !quoted) n++;
    }
    return n;
}

/* Whether separator c comes k >= 1 times in at least SNIFF_AGREE of the
 * first non-empty lines (k: as often as in the first of them); *agree: how
 * many do. */
static int table_separator(const uint8_t* src, size_t size, uint8_t c, size_t* agree)
{
    const uint8_t* const end = src + size;
    const uint8_t* p = src;
    size_t lines = 0, same = 0, k = 0;
    while (p < end && lines < SNIFF_LINES) {
        const uint8_t* const nl = (const uint8_t*)memchr(p, '\n', (size_t)(end - p));
        const uint8_t* const stop = nl ? nl : end;
        if (stop > p) {
            size_t const n = count_outside_quotes(p, stop, c);
            if (!lines) k = n;
            lines++;
            same += n == k;
        }
        p = nl ? nl + 1 : end;
    }
    *agree = same;
    return k >= 1 && lines >= 2 && (double)same >= SNIFF_AGREE * (double)lines;
}

static const char kInsert[] = "INSERT INTO ";
static const char kValues[] = " VALUES (";

static int starts_with(const uint8_t* p, const uint8_t* end, const char* s)
{
    size_t const n = strlen(s);
    return (size_t)(end - p) >= n && !memcmp(p, s, n);
}

/* Whether one of the first lines is an INSERT of rows. */
static int has_inserts(const uint8_t* src, size_t size)
{
    const uint8_t* const end = src + size;
    const uint8_t* p = src;
    size_t lines;
    for (lines = 0; p < end && lines < SNIFF_LINES; lines++) {
        const uint8_t* const nl = (const uint8_t*)memchr(p, '\n', (size_t)(end - p));
        if (starts_with(p, nl ? nl : end, kInsert)) return 1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* The line that starts at p: its end in *stop, the next line's start in
 * *next. */
static void line_at(const uint8_t* p, const uint8_t* end, const uint8_t** stop, const uint8_t** next)
{
    const uint8_t* const nl = (const uint8_t*)memchr(p, '\n', (size_t)(end - p));
    *stop = nl ? nl : end;
    *next = nl ? nl + 1 : end;
}

int glyd_logNextRecord(const glyd_logTokens* t, const uint8_t* p, const uint8_t* end, int inRow,
                       const uint8_t** stop, const uint8_t** next)
{
    const uint8_t* q = p;
    int quoted = 0;
    if (!t->sqlRows) {
        line_at(p, end, stop, next);
        return 0;
    }
    if (!inRow) {
        /* INSERT INTO name VALUES (: the first row starts at its '(' */
        static const size_t kValuesSize = sizeof kValues - 1;
        line_at(p, end, stop, next);
        if (!starts_with(p, *stop, kInsert)) return 0;
        for (q = p; q + kValuesSize <= *stop && memcmp(q, kValues, kValuesSize); q++) continue;
        if (q + kValuesSize > *stop) return 0;
        q += kValuesSize;
    }
    /* to the next "),(" outside single quotes (a backslash escapes), or
     * the line's end: never past the row, so that a line of many rows
     * costs its length once */
    for (; q < end && *q != '\n'; q++) {
        if (quoted) {
            if (*q == '\\' && q + 1 < end && q[1] != '\n') q++;
            else if (*q == '\'') quoted = 0;
        } else if (*q == '\'') {
            quoted = 1;
        } else if (*q == ')' && end - q >= 3 && q[1] == ',' && q[2] == '(') {
            *stop = *next = q + 2;
            return 1;
        }
    }
    *stop = q;
    *next = q < end ? q + 1 : end;
    return 0;
}

void glyd_logTokensSniff(glyd_logTokens* t, const uint8_t* src, size_t size)
{
    /* ';' and '|' measured better split as a log's (UnicodeData.txt,
     * HealthApp_2k.log), and so did JSON lines */
    static const uint8_t kSeparators[] = { ',', '\t' };
    static const char kLogDelimiters[] = " \t\r,:;=[](){}\"'<>|";
    size_t best = 0, k;
    int separator = -1;
    memset(t, 0, sizeof *t);
    if (has_inserts(src, size)) {
        /* an SQL dump: a string one token, in single quotes */
        static const char kSqlDelimiters[] = " \t\r,()";
        for (k = 0; kSqlDelimiters[k]; k++) t->delimiter[(uint8_t)kSqlDelimiters[k]] = 1;
        t->quotes = GLYD_LOGTOK_QUOTES_SQL;
        t->sqlRows = 1;
        return;
    }
    for (k = 0; k < sizeof kSeparators && !(size && (src[0] == '{' || src[0] == '[')); k++) {
        size_t agree;
        if (table_separator(src, size, kSeparators[k], &agree) && agree > best) {
            best = agree;
            separator = kSeparators[k];
        }
    }
    if (separator >= 0) {
        t->delimiter[separator] = 1;
        t->delimiter['\r'] = 1;
        t->quotes = GLYD_LOGTOK_QUOTES_CSV;
        return;
    }
    for (k = 0; kLogDelimiters[k]; k++) t->delimiter[(uint8_t)kLogDelimiters[k]] = 1;
}

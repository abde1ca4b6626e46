/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_tokens.c: how a text's lines split into tokens (records.h): as a
 * table's fields when a comma or a tab comes as many times in nearly
 * every line (and the text is not JSON), else at a log's delimiters.
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

void glyd_logTokensSniff(glyd_logTokens* t, const uint8_t* src, size_t size)
{
    /* ';' and '|' measured better split as a log's (UnicodeData.txt,
     * HealthApp_2k.log), and so did JSON lines */
    static const uint8_t kSeparators[] = { ',', '\t' };
    static const char kLogDelimiters[] = " \t\r,:;=[](){}\"'<>|";
    size_t best = 0, k;
    int separator = -1;
    memset(t, 0, sizeof *t);
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
        t->quotes = 1;
        return;
    }
    for (k = 0; kLogDelimiters[k]; k++) t->delimiter[(uint8_t)kLogDelimiters[k]] = 1;
}

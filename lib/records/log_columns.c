/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_columns.c: log lines into templates and typed columns (records.h).
 * One pass splits every line into its template and variables and numbers
 * the templates as they first appear; a second writes the variables out
 * grouped by template and slot.
 */
#include <stdlib.h>
#include <xxhash.h>

#include "records.h"

/* Bytes that end a token: what separates fields in the logs seen. '.',
 * '-', '_' and '/' stay inside tokens, so that versions, dates, names and
 * paths stay whole. */
static int is_delimiter(uint8_t c)
{
    switch (c) {
    case ' ': case '\t': case '\r': case ',': case ':': case ';': case '=': case '[': case ']':
    case '(': case ')': case '{': case '}': case '"': case '\'': case '<': case '>': case '|':
        return 1;
    default:
        return 0;
    }
}

/* A growing byte buffer; `failed` once an allocation failed. */
typedef struct {
    uint8_t* p;
    size_t size, cap;
    int failed;
} byte_buf;

static int buf_reserve(byte_buf* b, size_t more)
{
    if (b->failed) return 0;
    if (b->size + more > b->cap || !b->p) { /* allocated even for nothing: p + 0 must be valid */
        size_t cap = b->cap ? b->cap : 4096;
        uint8_t* p;
        while (cap < b->size + more) cap *= 2;
        p = (uint8_t*)realloc(b->p, cap);
        if (!p) { b->failed = 1; return 0; }
        b->p = p;
        b->cap = cap;
    }
    return 1;
}

static void buf_put(byte_buf* b, const void* src, size_t n)
{
    if (buf_reserve(b, n) && n) { memcpy(b->p + b->size, src, n); b->size += n; }
}

static void buf_varint(byte_buf* b, uint64_t v)
{
    if (buf_reserve(b, GLYD_VARINT_MAX)) b->size += glyd_writeVarint(b->p + b->size, GLYD_VARINT_MAX, v);
}

/* A variable of a line. */
typedef struct {
    const uint8_t* text; /* a string's bytes */
    uint64_t len;
    int64_t value;       /* an integer's */
} variable;

/* The templates seen, by their bytes (open addressing). */
typedef struct {
    byte_buf bytes;      /* every template, one after the other */
    size_t* start;       /* template k: bytes [start[k], start[k + 1]) */
    size_t count, startCap;
    uint32_t* slot;      /* hash table: template number + 1, 0 empty */
    uint64_t* hash;
    size_t tableSize;    /* a power of 2 */
} template_set;

static int set_grow(template_set* s)
{
    size_t const size = s->tableSize ? 2 * s->tableSize : 1024;
    uint32_t* slot = (uint32_t*)calloc(size, sizeof(uint32_t));
    uint64_t* hash = (uint64_t*)malloc(size * sizeof(uint64_t));
    size_t i;
    if (!slot || !hash) { free(slot); free(hash); return 0; }
    for (i = 0; i < s->tableSize; i++) {
        if (s->slot[i]) {
            size_t j = (size_t)s->hash[i] & (size - 1);
            while (slot[j]) j = (j + 1) & (size - 1);
            slot[j] = s->slot[i];
            hash[j] = s->hash[i];
        }
    }
    free(s->slot);
    free(s->hash);
    s->slot = slot;
    s->hash = hash;
    s->tableSize = size;
    return 1;
}

/* The number of template t[0..n), added if new; (size_t)-1 when memory ran
 * out. */
static size_t set_find(template_set* s, const uint8_t* t, size_t n)
{
    uint64_t const h = XXH3_64bits(t, n);
    size_t j;
    if (2 * (s->count + 1) > s->tableSize && !set_grow(s)) return (size_t)-1;
    for (j = (size_t)h & (s->tableSize - 1); s->slot[j]; j = (j + 1) & (s->tableSize - 1)) {
        size_t const k = s->slot[j] - 1;
        if (s->hash[j] == h && s->start[k + 1] - s->start[k] == n && !memcmp(s->bytes.p + s->start[k], t, n))
            return k;
    }
    if (s->count + 2 > s->startCap) {
        size_t const cap = s->startCap ? 2 * s->startCap : 1024;
        size_t* start = (size_t*)realloc(s->start, cap * sizeof(size_t));
        if (!start) return (size_t)-1;
        if (!s->startCap) start[0] = 0;
        s->start = start;
        s->startCap = cap;
    }
    buf_put(&s->bytes, t, n);
    if (s->bytes.failed || s->count >= UINT32_MAX - 1) return (size_t)-1;
    s->start[s->count + 1] = s->bytes.size;
    s->slot[j] = (uint32_t)(s->count + 1);
    s->hash[j] = h;
    return s->count++;
}

/* An integer token: -?(0|[1-9][0-9]{0,17}), "-0" excepted. */
static int as_integer(const uint8_t* t, size_t n, int64_t* v)
{
    size_t i = t[0] == '-';
    int64_t x = 0;
    if (n - i < 1 || n - i > 18 || (t[i] == '0' && n - i > 1) || (i && t[1] == '0')) return 0;
    for (; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return 0;
        x = 10 * x + (t[i] - '0');
    }
    *v = t[0] == '-' ? -x : x;
    return 1;
}

/* Digits only, a leading zero, 2..18 of them. */
static int as_padded(const uint8_t* t, size_t n, int64_t* v)
{
    size_t i;
    int64_t x = 0;
    if (n < 2 || n > 18 || t[0] != '0') return 0;
    for (i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return 0;
        x = 10 * x + (t[i] - '0');
    }
    *v = x;
    return 1;
}

/* Line [p, end) into its template (tpl, at least 2 * (end - p) bytes) and
 * variables (appended to vars); returns the template's size. */
static size_t split_line(const uint8_t* p, const uint8_t* end, uint8_t* tpl, variable* vars, size_t* nbVars)
{
    size_t n = 0;
    while (p < end) {
        const uint8_t* q = p;
        int digit = 0;
        if (is_delimiter(*p)) { tpl[n++] = *p++; continue; }
        while (q < end && !is_delimiter(*q)) digit |= *q >= '0' && *q <= '9', q++;
        if (digit) {
            variable* const v = &vars[(*nbVars)++];
            size_t const len = (size_t)(q - p);
            v->text = p;
            v->len = len;
            v->value = 0;
            if (as_integer(p, len, &v->value)) {
                tpl[n++] = GLYD_LOGCOL_INT;
            } else if (as_padded(p, len, &v->value)) {
                tpl[n++] = GLYD_LOGCOL_PADDED;
                tpl[n++] = (uint8_t)len;
            } else {
                tpl[n++] = GLYD_LOGCOL_STRING;
            }
        } else {
            for (; p < q; p++) {
                if (*p >= GLYD_LOGCOL_ESCAPE && *p <= GLYD_LOGCOL_STRING) tpl[n++] = GLYD_LOGCOL_ESCAPE;
                tpl[n++] = *p;
            }
        }
        p = q;
    }
    return n;
}

/* The kind of each variable of template t[0..n), in order: INT (padded
 * ones too) or STRING. Returns their count. */
static size_t template_kinds(const uint8_t* t, size_t n, uint8_t* kinds)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++) {
        if (t[i] == GLYD_LOGCOL_ESCAPE) i++;
        else if (t[i] == GLYD_LOGCOL_INT) kinds[k++] = GLYD_LOGCOL_INT;
        else if (t[i] == GLYD_LOGCOL_PADDED) kinds[k++] = GLYD_LOGCOL_INT, i++;
        else if (t[i] == GLYD_LOGCOL_STRING) kinds[k++] = GLYD_LOGCOL_STRING;
    }
    return k;
}

/* Everything the split keeps. */
typedef struct {
    template_set set;
    uint32_t* lineTemplate; /* per line */
    size_t* firstVar;       /* per line, and one past the last */
    variable* vars;
    size_t nbLines, nbVars;
} log_split;

static void split_free(log_split* s)
{
    free(s->set.bytes.p);
    free(s->set.start);
    free(s->set.slot);
    free(s->set.hash);
    free(s->lineTemplate);
    free(s->firstVar);
    free(s->vars);
}

static size_t split_text(log_split* s, const uint8_t* src, size_t size)
{
    const uint8_t* const end = src + size;
    const uint8_t* p = src;
    uint8_t* tpl;
    size_t lines = 0, longest = 0, i;
    memset(s, 0, sizeof *s);
    /* lines, and the longest, for the arrays */
    while (p < end) {
        const uint8_t* const nl = (const uint8_t*)memchr(p, '\n', (size_t)(end - p));
        const uint8_t* const stop = nl ? nl : end;
        longest = GLYD_MAX(longest, (size_t)(stop - p));
        lines++;
        p = nl ? nl + 1 : end;
    }
    s->lineTemplate = (uint32_t*)malloc((lines + 1) * sizeof(uint32_t));
    s->firstVar = (size_t*)malloc((lines + 1) * sizeof(size_t));
    /* a variable takes a token and the delimiter after it, but the last */
    s->vars = (variable*)malloc((size / 2 + lines + 1) * sizeof(variable));
    tpl = (uint8_t*)malloc(2 * longest + 1);
    if (!s->lineTemplate || !s->firstVar || !s->vars || !tpl) { free(tpl); RETURN_ERROR(memory_allocation, "log columns"); }
    for (p = src, i = 0; i < lines; i++) {
        const uint8_t* const nl = (const uint8_t*)memchr(p, '\n', (size_t)(end - p));
        const uint8_t* const stop = nl ? nl : end;
        size_t n, t;
        s->firstVar[i] = s->nbVars;
        n = split_line(p, stop, tpl, s->vars, &s->nbVars);
        t = set_find(&s->set, tpl, n);
        if (t == (size_t)-1) { free(tpl); RETURN_ERROR(memory_allocation, "log templates"); }
        s->lineTemplate[i] = (uint32_t)t;
        p = nl ? nl + 1 : end;
    }
    s->firstVar[lines] = s->nbVars;
    s->nbLines = lines;
    free(tpl);
    return 0;
}

/* The variables, by template, slot and line: integers as zigzag deltas
 * from the slot's previous value into ints, strings (length, bytes) into
 * strs. */
static size_t write_columns(const log_split* s, byte_buf* ints, byte_buf* strs)
{
    size_t const nbT = s->set.count;
    size_t* const first = (size_t*)calloc(nbT + 1, sizeof(size_t));
    size_t* const order = (size_t*)malloc((s->nbLines + 1) * sizeof(size_t));
    uint8_t* kinds = NULL;
    size_t t, i, longest = 0;
    if (!first || !order) { free(first); free(order); RETURN_ERROR(memory_allocation, "log columns"); }
    /* the lines of each template, in order */
    for (i = 0; i < s->nbLines; i++) first[s->lineTemplate[i] + 1]++;
    for (t = 0; t < nbT; t++) first[t + 1] += first[t];
    for (i = 0; i < s->nbLines; i++) order[first[s->lineTemplate[i]]++] = i;
    for (t = nbT; t > 0; t--) first[t] = first[t - 1];
    first[0] = 0;
    for (t = 0; t < nbT; t++) longest = GLYD_MAX(longest, s->set.start[t + 1] - s->set.start[t]);
    kinds = (uint8_t*)malloc(longest + 1);
    if (!kinds) { free(first); free(order); RETURN_ERROR(memory_allocation, "log columns"); }
    for (t = 0; t < nbT; t++) {
        size_t const nbSlots =
            template_kinds(s->set.bytes.p + s->set.start[t], s->set.start[t + 1] - s->set.start[t], kinds);
        size_t slot;
        for (slot = 0; slot < nbSlots; slot++) {
            int64_t previous = 0;
            for (i = first[t]; i < first[t + 1]; i++) {
                const variable* const v = &s->vars[s->firstVar[order[i]] + slot];
                if (kinds[slot] == GLYD_LOGCOL_INT) {
                    uint64_t const d = (uint64_t)v->value - (uint64_t)previous;
                    buf_varint(ints, (d << 1) ^ (uint64_t)-(int64_t)(d >> 63));
                    previous = v->value;
                } else {
                    buf_varint(strs, v->len);
                    buf_put(strs, v->text, (size_t)v->len);
                }
            }
        }
    }
    free(first);
    free(order);
    free(kinds);
    RETURN_ERROR_IF(ints->failed || strs->failed, memory_allocation, "log columns");
    return 0;
}

size_t glyd_logToColumns(void* dst, size_t dstCapacity, const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    log_split s;
    byte_buf head = { 0 }, tpls = { 0 }, lines = { 0 }, ints = { 0 }, strs = { 0 };
    size_t r, t, i, total = 0;
    r = split_text(&s, in, srcSize);
    if (!GLYD_IS_ERROR(r)) r = write_columns(&s, &ints, &strs);
    if (!GLYD_IS_ERROR(r)) {
        for (t = 0; t < s.set.count; t++) {
            buf_varint(&tpls, s.set.start[t + 1] - s.set.start[t]);
            buf_put(&tpls, s.set.bytes.p + s.set.start[t], s.set.start[t + 1] - s.set.start[t]);
        }
        for (i = 0; i < s.nbLines; i++) buf_varint(&lines, s.lineTemplate[i]);
        buf_put(&head, (const uint8_t[]){ GLYD_LOGCOL_VERSION }, 1);
        buf_varint(&head, srcSize);
        buf_varint(&head, s.nbLines);
        buf_put(&head, (const uint8_t[]){ (uint8_t)(srcSize && in[srcSize - 1] != '\n') }, 1);
        buf_varint(&head, s.set.count);
        buf_varint(&head, tpls.size);
        buf_varint(&head, lines.size);
        buf_varint(&head, ints.size);
        buf_varint(&head, strs.size);
        if (head.failed || tpls.failed || lines.failed) r = GLYD_ERROR(memory_allocation);
    }
    if (!GLYD_IS_ERROR(r)) {
        const byte_buf* const parts[5] = { &head, &tpls, &lines, &ints, &strs };
        total = head.size + tpls.size + lines.size + ints.size + strs.size;
        if (total > dstCapacity) {
            r = GLYD_ERROR(dstSize_tooSmall);
        } else {
            uint8_t* op = (uint8_t*)dst;
            for (i = 0; i < 5; i++) {
                if (parts[i]->size) memcpy(op, parts[i]->p, parts[i]->size);
                op += parts[i]->size;
            }
            r = total;
        }
    }
    split_free(&s);
    free(head.p); free(tpls.p); free(lines.p); free(ints.p); free(strs.p);
    return r;
}

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

static inline void buf_varint(byte_buf* b, uint64_t v)
{
    if (v < 0x80 && b->size < b->cap) {
        b->p[b->size++] = (uint8_t)v; /* most values: one byte */
        return;
    }
    if (buf_reserve(b, GLYD_VARINT_MAX)) b->size += glyd_writeVarint(b->p + b->size, GLYD_VARINT_MAX, v);
}

/* A variable of a line. */
typedef struct {
    const uint8_t* text; /* a string's bytes */
    uint64_t len;
    int64_t value;       /* an integer's, a run of digits', a decimal's digits as one integer */
    uint64_t zeros;      /* a run of digits' or a decimal's leading zeros */
    uint64_t fraction;   /* a decimal's digits after its point */
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

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

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

/* Digits only, 1..GLYD_LOGCOL_DIGITS_MAX of them: the value, and the zeros
 * before it ("007": 7 and 2; "00": 0 and 1). */
static int as_digits(const uint8_t* t, size_t n, int64_t* v, uint64_t* zeros)
{
    size_t i, z = 0;
    int64_t x = 0;
    if (n < 1 || n > GLYD_LOGCOL_DIGITS_MAX) return 0;
    for (i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return 0;
        x = 10 * x + (t[i] - '0');
    }
    while (z + 1 < n && t[z] == '0') z++;
    *v = x;
    *zeros = z;
    return 1;
}

/* A number as a decimal: -?[0-9]+(\.[0-9]+)?, at most
 * GLYD_LOGCOL_DECIMAL_DIGITS digits each side of the point besides leading
 * zeros, "-0" and "-0.0" excepted (a sign their value cannot keep). Its
 * value is its digits as one integer, signed ("-007.50": -750, 2 zeros, a
 * fraction of 2 digits). */
static int as_decimal(const uint8_t* t, size_t n, variable* v)
{
    size_t const neg = t[0] == '-';
    size_t i = neg, z = 0, digits = 0, fraction = 0;
    int64_t x = 0;
    while (i + 1 < n && t[i] == '0' && is_digit(t[i + 1])) { z++; i++; }
    for (; i < n && is_digit(t[i]); i++, digits++) {
        if (digits == GLYD_LOGCOL_DECIMAL_DIGITS) return 0;
        x = 10 * x + (t[i] - '0');
    }
    if (digits == 0 || z > GLYD_LOGCOL_DIGITS_MAX) return 0;
    if (i < n) {
        if (t[i] != '.') return 0;
        for (i++; i < n && is_digit(t[i]); i++, fraction++) {
            if (fraction == GLYD_LOGCOL_DECIMAL_DIGITS) return 0;
            x = 10 * x + (t[i] - '0');
        }
        if (i != n || fraction == 0) return 0;
    }
    if (neg && x == 0) return 0;
    v->text = t;
    v->len = n;
    v->value = neg ? -x : x;
    v->zeros = z;
    v->fraction = fraction;
    return 1;
}

/* Bytes of a token that the template keeps as they are. */
static size_t put_literal(const uint8_t* p, const uint8_t* q, uint8_t* tpl)
{
    size_t n = 0;
    for (; p < q; p++) {
        if (*p >= GLYD_LOGCOL_ESCAPE && *p <= GLYD_LOGCOL_DECIMAL) tpl[n++] = GLYD_LOGCOL_ESCAPE;
        tpl[n++] = *p;
    }
    return n;
}

/* A variable [p, p + len): its placeholder into tpl (returns its size),
 * the variable into *v. Digits alone are DIGITS whatever their width and
 * leading zeros, so that a field of fixed width keeps one template; a
 * negative number is an INT; anything else a STRING. */
static size_t put_variable(const uint8_t* p, size_t len, uint8_t* tpl, variable* v)
{
    v->text = p;
    v->len = len;
    v->value = 0;
    v->zeros = 0;
    v->fraction = 0;
    if (as_digits(p, len, &v->value, &v->zeros)) tpl[0] = GLYD_LOGCOL_DIGITS;
    else if (as_integer(p, len, &v->value)) tpl[0] = GLYD_LOGCOL_INT;
    else tpl[0] = GLYD_LOGCOL_STRING;
    return 1;
}

/* A number [p, p + len) as a variable: a decimal where it can be one (an
 * integer too, so that a column of both keeps one template), else as
 * put_variable has it. Returns the placeholder's size. */
static size_t put_number(const uint8_t* p, size_t len, uint8_t* tpl, variable* v)
{
    if (!as_decimal(p, len, v)) return put_variable(p, len, tpl, v);
    tpl[0] = GLYD_LOGCOL_DECIMAL;
    return 1;
}

/* A byte's class: a digit, or a letter (or a byte beyond ASCII), or else.
 * Tokens with letters ("R02-M1-NE-C", "core.45943", "kernel32.dll",
 * hexadecimal ids) stay one string, as splitting them measured worse;
 * digits among punctuation only (dates, times, addresses, decimals) split
 * into their runs. */
enum { CLASS_DIGIT = 1, CLASS_LETTER = 2 };
static const uint8_t kClass[256] = /* 1 for a digit, 2 for a letter or a byte beyond ASCII */
    "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
    "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
    "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"
    "\1\1\1\1\1\1\1\1\1\1\0\0\0\0\0\0"
    "\0\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\0\0\0\0\0"
    "\0\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\0\0\0\0\0"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2"
    "\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2\2";

/* Digit runs a token may be split into; more, and it stays one string. */
#define TOKEN_RUNS_MAX 8

/* Token [p, q) into the template (tpl) and variables (appended to vars),
 * a variable if it varies (a word), and as below if it has digits;
 * returns the template bytes written. A token with digits is one variable
 * if it is a number, has letters or has many runs of digits; else each
 * run of digits in it is a variable and the punctuation between them
 * stays in the template ("2015-10-18", "10.251.35.1", "0.2477829"). */
static size_t split_token(const uint8_t* p, const uint8_t* q, int varies, uint8_t* tpl, variable* vars,
                          size_t* nbVars)
{
    const uint8_t* c;
    size_t runs = 0, n = 0;
    unsigned classes = 0, previous = 0;
    int64_t value;
    for (c = p; c < q; c++) {
        unsigned const k = kClass[*c];
        runs += k & ~previous & CLASS_DIGIT;
        classes |= k;
        previous = k;
    }
    if (!runs && !varies) return put_literal(p, q, tpl);
    if (!runs || (classes & CLASS_LETTER) || runs > TOKEN_RUNS_MAX)
        return put_variable(p, (size_t)(q - p), tpl, &vars[(*nbVars)++]);
    if (runs == 1 && as_integer(p, (size_t)(q - p), &value)) return put_number(p, (size_t)(q - p), tpl, &vars[(*nbVars)++]);
    if (runs == 2 && as_decimal(p, (size_t)(q - p), &vars[*nbVars])) {
        tpl[0] = GLYD_LOGCOL_DECIMAL; /* the variable is parsed already */
        (*nbVars)++;
        return 1;
    }
    while (p < q) {
        const uint8_t* r = p;
        if (is_digit(*p)) {
            while (r < q && is_digit(*r)) r++;
            n += put_number(p, (size_t)(r - p), tpl + n, &vars[(*nbVars)++]);
        } else {
            while (r < q && !is_digit(*r)) r++;
            n += put_literal(p, r, tpl + n);
        }
        p = r;
    }
    return n;
}

/* Line [p, end) into its template (tpl, at least 2 * (end - p) bytes) and
 * variables (appended to vars), its tokens as split says and varies (NULL:
 * none) marks; returns the template's size. An SQL string's quotes stay
 * in the template, its inside is the token ('0.23' a number). */
static size_t split_line(const glyd_logTokens* split, const uint8_t* p, const uint8_t* end, const uint8_t* varies,
                         uint8_t* tpl, variable* vars, size_t* nbVars)
{
    size_t n = 0, token = 0;
    while (p < end) {
        const uint8_t* q;
        int const vary = varies && varies[token];
        if (split->delimiter[*p]) { tpl[n++] = *p++; continue; }
        q = glyd_logTokenEnd(split, p, end);
        if (split->quotes == GLYD_LOGTOK_QUOTES_SQL && *p == '\'' && q - p >= 2 && q[-1] == '\'') {
            tpl[n++] = '\'';
            n += split_token(p + 1, q - 1, vary, tpl + n, vars, nbVars);
            tpl[n++] = '\'';
        } else {
            n += split_token(p, q, vary, tpl + n, vars, nbVars);
        }
        p = q;
        token++;
    }
    return n;
}

/* The kind of each variable of template t[0..n), in order: INT, DIGITS
 * or STRING. Returns their count. */
static size_t template_kinds(const uint8_t* t, size_t n, uint8_t* kinds)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++) {
        if (t[i] == GLYD_LOGCOL_ESCAPE) i++;
        else if (t[i] >= GLYD_LOGCOL_INT && t[i] <= GLYD_LOGCOL_DECIMAL) kinds[k++] = t[i];
    }
    return k;
}

/* Everything the split keeps. */
typedef struct {
    glyd_logTokens split;
    template_set set;
    uint32_t* lineTemplate; /* per line */
    uint8_t* joined;        /* per line: 1 where it was cut from the next */
    size_t nbJoined;
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
    free(s->joined);
    free(s->firstVar);
    free(s->vars);
}

static size_t split_text(log_split* s, const uint8_t* src, size_t size)
{
    const uint8_t* const end = src + size;
    const uint8_t* p = src;
    uint8_t* tpl;
    glyd_logShapes* shapes;
    size_t lines = 0, longest = 0, i;
    int inRow = 0;
    memset(s, 0, sizeof *s);
    glyd_logTokensSniff(&s->split, src, size);
    /* records, and the longest, for the arrays */
    while (p < end) {
        const uint8_t *stop, *next;
        inRow = glyd_logNextRecord(&s->split, p, end, inRow, &stop, &next);
        longest = GLYD_MAX(longest, (size_t)(stop - p));
        s->nbJoined += (size_t)inRow;
        lines++;
        p = next;
    }
    s->joined = (uint8_t*)malloc(lines + 1);
    s->lineTemplate = (uint32_t*)malloc((lines + 1) * sizeof(uint32_t));
    s->firstVar = (size_t*)malloc((lines + 1) * sizeof(size_t));
    /* a variable takes a token and the delimiter after it, but the last */
    s->vars = (variable*)malloc((size / 2 + lines + 1) * sizeof(variable));
    tpl = (uint8_t*)malloc(2 * longest + 1);
    shapes = glyd_logShapesLearn(&s->split, src, size, lines);
    if (!s->joined || !s->lineTemplate || !s->firstVar || !s->vars || !tpl || !shapes) {
        free(tpl);
        glyd_logShapesFree(shapes);
        RETURN_ERROR(memory_allocation, "log columns");
    }
    for (p = src, i = 0, inRow = 0; i < lines; i++) {
        const uint8_t *stop, *next;
        size_t n, t;
        inRow = glyd_logNextRecord(&s->split, p, end, inRow, &stop, &next);
        s->joined[i] = (uint8_t)inRow;
        s->firstVar[i] = s->nbVars;
        n = split_line(&s->split, p, stop, glyd_logShapesOf(shapes, i), tpl, s->vars, &s->nbVars);
        t = set_find(&s->set, tpl, n);
        if (t == (size_t)-1) {
            free(tpl);
            glyd_logShapesFree(shapes);
            RETURN_ERROR(memory_allocation, "log templates");
        }
        s->lineTemplate[i] = (uint32_t)t;
        p = next;
    }
    s->firstVar[lines] = s->nbVars;
    s->nbLines = lines;
    free(tpl);
    glyd_logShapesFree(shapes);
    return 0;
}

/* A string slot's last GLYD_LOGCOL_RECENT distinct values, the most recent
 * first. */
typedef struct {
    const variable* value[GLYD_LOGCOL_RECENT];
    size_t count;
} recent_values;

/* v's rank among r's values (1 for the most recent), 0 if absent; then v
 * moved, or added, to the front. */
static size_t recent_use(recent_values* r, const variable* v)
{
    size_t k, hit = 0;
    for (k = 0; k < r->count; k++) {
        const variable* const w = r->value[k];
        if (w->len == v->len && !memcmp(w->text, v->text, (size_t)v->len)) { hit = k + 1; break; }
    }
    k = hit ? hit - 1 : r->count < GLYD_LOGCOL_RECENT ? r->count++ : GLYD_LOGCOL_RECENT - 1;
    for (; k > 0; k--) r->value[k] = r->value[k - 1];
    r->value[0] = v;
    return hit;
}

/* The variables, by template, slot and line: integers and runs of digits
 * as zigzag deltas from the slot's previous value into ints, the runs'
 * leading zeros into zeros, strings as their rank among the slot's recent
 * values into refs, and a new one's length and bytes into strs. A
 * decimal slot's values go to ints scaled to its longest fraction, as
 * deltas from its base: the slot's previous value, or the value of a
 * number k slots before it on the same line (x and y of a point), the
 * cheapest; zeros get the scale and base first (as one number), then each
 * value's leading zeros and (for a scale above 0) the digits it drops from
 * that scale, as one number. */
#define BASE_REACH 3
#define BASE_LINES_MIN 256

static uint64_t zigzag(uint64_t d) { return (d << 1) ^ (uint64_t)-(int64_t)(d >> 63); }

/* Bits the deltas of values[0..n) from bases[0..n) (NULL: from each
 * previous value) take, their zigzag forms' lengths: a cost that follows
 * what the entropy coder makes of them better than their varints' bytes. */
static uint64_t delta_bits(const int64_t* values, const int64_t* bases, size_t n)
{
    uint64_t total = 0, previous = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        uint64_t const d = zigzag((uint64_t)values[i] - (bases ? (uint64_t)bases[i] : previous));
        total += glyd_highbit64(d | 1) + 1;
        previous = (uint64_t)values[i];
    }
    return total;
}

/* A number's form: its leading zeros and the digits it drops from the
 * slot's scale, as one number under 2^GLYD_LOGCOL_FORM_BITS. */
static uint64_t number_form(const variable* v, uint64_t scale)
{
    return scale ? v->zeros * (scale + 1) + (scale - v->fraction) : v->zeros;
}

/* A decimal slot's header (its base and scale as `code`, and the bits
 * its forms take), then its forms packed in those bits, low ones first. */
static void write_forms(const log_split* s, const size_t* lines, size_t nbLines, size_t slot, uint64_t code,
                        uint64_t scale, byte_buf* zeros)
{
    uint64_t most = 0, width = 0, acc = 0, held = 0;
    size_t i;
    for (i = 0; i < nbLines; i++) most |= number_form(&s->vars[s->firstVar[lines[i]] + slot], scale);
    while (most >> width) width++;
    buf_varint(zeros, code * (GLYD_LOGCOL_FORM_BITS + 1) + width);
    for (i = 0; i < nbLines && width; i++) {
        acc |= number_form(&s->vars[s->firstVar[lines[i]] + slot], scale) << held;
        held += width;
        for (; held >= 8; held -= 8, acc >>= 8) buf_put(zeros, (const uint8_t[]){ (uint8_t)acc }, 1);
    }
    if (held) buf_put(zeros, (const uint8_t[]){ (uint8_t)acc }, 1);
}

/* A template's number slots' values (scaled for decimals), slot by slot. */
typedef struct {
    int64_t* values;
    size_t cap;
} number_slots;

static int write_template(const log_split* s, const size_t* lines, size_t nbLines, const uint8_t* kinds,
                          size_t nbSlots, number_slots* ns, byte_buf* ints, byte_buf* zeros, byte_buf* refs,
                          byte_buf* strs)
{
    size_t slot, i, number = 0;
    if (nbSlots * nbLines > ns->cap) {
        free(ns->values);
        ns->cap = nbSlots * nbLines;
        ns->values = (int64_t*)malloc(ns->cap * sizeof(int64_t) + 1);
        if (!ns->values) return 0;
    }
    for (slot = 0; slot < nbSlots; slot++) {
        if (kinds[slot] == GLYD_LOGCOL_STRING) {
            recent_values recent;
            recent.count = 0;
            for (i = 0; i < nbLines; i++) {
                const variable* const v = &s->vars[s->firstVar[lines[i]] + slot];
                size_t const rank = recent_use(&recent, v);
                buf_varint(refs, rank);
                if (!rank) {
                    buf_varint(strs, v->len);
                    buf_put(strs, v->text, (size_t)v->len);
                }
            }
            continue;
        }
        {
            int64_t* const values = ns->values + number * nbLines;
            uint64_t scale = 0, base = 0;
            if (kinds[slot] == GLYD_LOGCOL_DECIMAL) {
                uint64_t best, k;
                for (i = 0; i < nbLines; i++) scale = GLYD_MAX(scale, s->vars[s->firstVar[lines[i]] + slot].fraction);
                for (i = 0; i < nbLines; i++) {
                    const variable* const v = &s->vars[s->firstVar[lines[i]] + slot];
                    values[i] = v->value * (int64_t)glyd_logPow10(scale - v->fraction);
                }
                /* another slot only where it saves a good share of many lines */
                best = number && nbLines >= BASE_LINES_MIN ? delta_bits(values, NULL, nbLines) : 0;
                best -= best / 4;
                for (k = 1; k <= BASE_REACH && k <= number && nbLines >= BASE_LINES_MIN; k++) {
                    uint64_t const cost = delta_bits(values, values - k * nbLines, nbLines);
                    if (cost < best) best = cost, base = k;
                }
                write_forms(s, lines, nbLines, slot, base * (GLYD_LOGCOL_DECIMAL_DIGITS + 1) + scale, scale, zeros);
            } else {
                for (i = 0; i < nbLines; i++) {
                    const variable* const v = &s->vars[s->firstVar[lines[i]] + slot];
                    values[i] = v->value;
                    if (kinds[slot] == GLYD_LOGCOL_DIGITS) buf_varint(zeros, v->zeros);
                }
            }
            for (i = 0; i < nbLines; i++) {
                uint64_t const from = base ? (uint64_t)values[i - base * nbLines] : i ? (uint64_t)values[i - 1] : 0;
                buf_varint(ints, zigzag((uint64_t)values[i] - from));
            }
            number++;
        }
    }
    return 1;
}

static size_t write_columns(const log_split* s, byte_buf* ints, byte_buf* zeros, byte_buf* refs, byte_buf* strs)
{
    size_t const nbT = s->set.count;
    size_t* const first = (size_t*)calloc(nbT + 1, sizeof(size_t));
    size_t* const order = (size_t*)malloc((s->nbLines + 1) * sizeof(size_t));
    number_slots ns = { NULL, 0 };
    uint8_t* kinds = NULL;
    size_t t, i, longest = 0;
    int ok = 1;
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
    for (t = 0; t < nbT && ok; t++) {
        size_t const nbSlots =
            template_kinds(s->set.bytes.p + s->set.start[t], s->set.start[t + 1] - s->set.start[t], kinds);
        ok = write_template(s, order + first[t], first[t + 1] - first[t], kinds, nbSlots, &ns, ints, zeros, refs,
                            strs);
    }
    free(first);
    free(order);
    free(kinds);
    free(ns.values);
    RETURN_ERROR_IF(!ok || ints->failed || zeros->failed || refs->failed || strs->failed, memory_allocation,
                    "log columns");
    return 0;
}

size_t glyd_logToColumns(void* dst, size_t dstCapacity, const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    log_split s;
    byte_buf head = { 0 }, tpls = { 0 }, lines = { 0 }, ints = { 0 }, zeros = { 0 }, refs = { 0 }, strs = { 0 };
    size_t r, t, i, total = 0;
    r = split_text(&s, in, srcSize);
    if (!GLYD_IS_ERROR(r)) r = write_columns(&s, &ints, &zeros, &refs, &strs);
    if (!GLYD_IS_ERROR(r)) {
        for (t = 0; t < s.set.count; t++) {
            buf_varint(&tpls, s.set.start[t + 1] - s.set.start[t]);
            buf_put(&tpls, s.set.bytes.p + s.set.start[t], s.set.start[t + 1] - s.set.start[t]);
        }
        /* lines cut from the next (an SQL dump's rows) say so in the low bit */
        for (i = 0; i < s.nbLines; i++)
            buf_varint(&lines, s.nbJoined ? (uint64_t)s.lineTemplate[i] << 1 | s.joined[i] : s.lineTemplate[i]);
        buf_put(&head, (const uint8_t[]){ GLYD_LOGCOL_VERSION }, 1);
        buf_varint(&head, srcSize);
        buf_varint(&head, s.nbLines);
        buf_put(&head,
                (const uint8_t[]){ (uint8_t)((srcSize && in[srcSize - 1] != '\n') |
                                             (s.nbJoined ? GLYD_LOGCOL_FLAG_JOINED : 0)) },
                1);
        buf_varint(&head, s.set.count);
        buf_varint(&head, tpls.size);
        buf_varint(&head, lines.size);
        buf_varint(&head, ints.size);
        buf_varint(&head, zeros.size);
        buf_varint(&head, refs.size);
        buf_varint(&head, strs.size);
        if (head.failed || tpls.failed || lines.failed) r = GLYD_ERROR(memory_allocation);
    }
    if (!GLYD_IS_ERROR(r)) {
        const byte_buf* const parts[7] = { &head, &tpls, &lines, &ints, &zeros, &refs, &strs };
        total = head.size + tpls.size + lines.size + ints.size + zeros.size + refs.size + strs.size;
        if (total > dstCapacity) {
            r = GLYD_ERROR(dstSize_tooSmall);
        } else {
            uint8_t* op = (uint8_t*)dst;
            for (i = 0; i < 7; i++) {
                if (parts[i]->size) memcpy(op, parts[i]->p, parts[i]->size);
                op += parts[i]->size;
            }
            r = total;
        }
    }
    split_free(&s);
    free(head.p); free(tpls.p); free(lines.p); free(ints.p); free(zeros.p); free(refs.p); free(strs.p);
    return r;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jinja_render.c: renders a parsed chat template over jansson values, with
 * Python's semantics where the templates rely on them (str() of values,
 * json.dumps for tojson, codepoint indexing and slicing of strings, floor
 * division, deep equality). A value is a json_t*; NULL is Jinja's
 * undefined. Every evaluation counts against a budget, and values, output
 * and nesting have bounds, so a hostile template ends with a reason rather
 * than running away.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja.h"

typedef struct {
    char* p;
    size_t n, cap;
} sbuf;

typedef struct {
    const jinja_options* o;
    char* err;
    size_t errCap;
    int failed;
    unsigned long steps;
    int depth;
    json_t* scopes[JINJA_MAX_DEPTH * 2 + 8];
    int nbScopes;
    int floor;              /* a macro's body sees its own scopes and the template's (0 and 1) */
    json_t* undef;          /* stored in a scope for a name set to undefined */
    json_t* namespaces;     /* the namespace() objects: only they take `set ns.attr` */
    const jinja_node* macros[256];
    int nbMacros;
    int brk, cont;          /* {% break %}, {% continue %} pending */
    sbuf* out;
} ctx;

static json_t* fail(ctx* c, int line, const char* fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        jinja_reason(c->err, c->errCap, line, fmt, ap);
        va_end(ap);
    }
    c->failed = 1;
    return NULL;
}

static int sb_put(ctx* c, sbuf* b, const char* s, size_t n, int line)
{
    if (b->n + n > JINJA_MAX_OUTPUT) { fail(c, line, "the output exceeds %u bytes", JINJA_MAX_OUTPUT); return 1; }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char* p;
        while (cap < b->n + n + 1) cap *= 2;
        p = (char*)realloc(b->p, cap);
        if (!p) { fail(c, line, "out of memory"); return 1; }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}
static int sb_str(ctx* c, sbuf* b, const char* s, int line) { return sb_put(c, b, s, strlen(s), line); }

/* ------------------------------------------------------------------------ */
/* Values                                                                   */
/* ------------------------------------------------------------------------ */

static const char* type_name(const json_t* v)
{
    if (!v) return "undefined";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "dict";
    case JSON_ARRAY: return "list";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "int";
    case JSON_REAL: return "float";
    case JSON_TRUE: case JSON_FALSE: return "bool";
    default: return "none";
    }
}

static int is_num(const json_t* v) { return v && (json_is_integer(v) || json_is_real(v)); }
static double num(const json_t* v) { return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v); }

static json_t* mkstr(ctx* c, const char* s, size_t n, int line)
{
    json_t* v;
    if (n > JINJA_MAX_OUTPUT) return fail(c, line, "a string exceeds %u bytes", JINJA_MAX_OUTPUT);
    v = json_stringn_nocheck(s, n);
    if (!v) return fail(c, line, "out of memory");
    return v;
}

static json_t* sb_value(ctx* c, sbuf* b, int line)
{
    json_t* const v = mkstr(c, b->p ? b->p : "", b->n, line);
    free(b->p);
    return v;
}

/* Nesting of lists and dicts, to a bound (a template can nest values in a
 * loop; printing, comparing and freeing them recurse). */
static int depth_of(const json_t* v, int limit)
{
    int d = 0;
    if (limit <= 0) return 1;
    if (json_is_array(v)) {
        size_t i;
        for (i = 0; i < json_array_size(v); i++) {
            int const e = depth_of(json_array_get(v, i), limit - 1);
            if (e > d) d = e;
        }
        return d + 1;
    }
    if (json_is_object(v)) {
        const char* k;
        json_t* e;
        json_object_foreach((json_t*)v, k, e) {
            int const x = depth_of(e, limit - 1);
            if (x > d) d = x;
        }
        return d + 1;
    }
    return 0;
}

static json_t* check_depth(ctx* c, json_t* v, int line)
{
    if (v && depth_of(v, JINJA_MAX_DEPTH) >= JINJA_MAX_DEPTH) {
        json_decref(v);
        return fail(c, line, "values nested deeper than %d", JINJA_MAX_DEPTH);
    }
    return v;
}

static int truthy(const json_t* v)
{
    if (!v) return 0;
    switch (json_typeof(v)) {
    case JSON_OBJECT: return json_object_size(v) > 0;
    case JSON_ARRAY: return json_array_size(v) > 0;
    case JSON_STRING: return json_string_length(v) > 0;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_TRUE: return 1;
    default: return 0;
    }
}

/* Python's ==: numbers by value (1 == 1.0, True == 1), containers deeply */
static int equal(const json_t* a, const json_t* b, int depth)
{
    if (!a || !b) return !a && !b;
    if (depth > JINJA_MAX_DEPTH) return 0;
    if ((is_num(a) || json_is_boolean(a)) && (is_num(b) || json_is_boolean(b))) {
        double const x = json_is_boolean(a) ? (double)json_is_true(a) : num(a);
        double const y = json_is_boolean(b) ? (double)json_is_true(b) : num(b);
        if (json_is_integer(a) && json_is_integer(b)) return json_integer_value(a) == json_integer_value(b);
        return x == y;
    }
    if (json_typeof(a) != json_typeof(b)) return 0;
    if (json_is_string(a))
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    if (json_is_array(a)) {
        size_t i;
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!equal(json_array_get(a, i), json_array_get(b, i), depth + 1)) return 0;
        return 1;
    }
    if (json_is_object(a)) {
        const char* k;
        json_t* e;
        if (json_object_size(a) != json_object_size(b)) return 0;
        json_object_foreach((json_t*)a, k, e) if (!equal(e, json_object_get(b, k), depth + 1)) return 0;
        return 1;
    }
    return 1; /* null */
}

/* UTF-8: the number of codepoints, and the byte offset of codepoint i */
static size_t cp_count(const char* s, size_t n)
{
    size_t i, k = 0;
    for (i = 0; i < n; i++) if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
    return k;
}
static size_t cp_offset(const char* s, size_t n, size_t cp)
{
    size_t i = 0, k = 0;
    for (; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (k == cp) return i;
            k++;
        }
    }
    return n;
}
static unsigned long cp_at(const char* s, size_t n, size_t* i)
{
    unsigned char const b = (unsigned char)s[*i];
    unsigned long cp;
    int extra, k;
    if (b < 0x80) { (*i)++; return b; }
    extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
    cp = b & (0x3F >> extra);
    (*i)++;
    for (k = 0; k < extra && *i < n && ((unsigned char)s[*i] & 0xC0) == 0x80; k++) cp = (cp << 6) | ((unsigned char)s[(*i)++] & 0x3F);
    return cp;
}

/* Python's str.isspace() */
static int py_space(unsigned long cp)
{
    return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

/* Python's repr() of a float: the shortest digits that read back */
static void float_repr(double d, char* out, size_t cap)
{
    char buf[40];
    int p, exp10, nd, k;
    char digits[24];
    if (d != d) { snprintf(out, cap, "nan"); return; }
    if (isinf(d)) { snprintf(out, cap, d > 0 ? "inf" : "-inf"); return; }
    for (p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, d);
        if (strtod(buf, NULL) == d) break;
    }
    /* buf: [-]D.DDDDe[+-]XX */
    {
        const char* s = buf;
        char* e;
        int neg = 0;
        nd = 0;
        if (*s == '-') { neg = 1; s++; }
        for (; *s && *s != 'e'; s++) if (*s != '.') digits[nd++] = *s;
        exp10 = (int)strtol(s + 1, &e, 10);
        while (nd > 1 && digits[nd - 1] == '0') nd--;
        digits[nd] = 0;
        k = 0;
        if (neg) out[k++] = '-';
        if (exp10 >= 16 || exp10 < -4) {
            int i;
            out[k++] = digits[0];
            if (nd > 1) { out[k++] = '.'; for (i = 1; i < nd; i++) out[k++] = digits[i]; }
            snprintf(out + k, cap - (size_t)k, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
            return;
        }
        if (exp10 < 0) {
            int i;
            out[k++] = '0';
            out[k++] = '.';
            for (i = 0; i < -exp10 - 1; i++) out[k++] = '0';
            for (i = 0; i < nd; i++) out[k++] = digits[i];
        } else {
            int i;
            for (i = 0; i <= exp10; i++) out[k++] = i < nd ? digits[i] : '0';
            out[k++] = '.';
            if (nd > exp10 + 1) for (i = exp10 + 1; i < nd; i++) out[k++] = digits[i];
            else out[k++] = '0';
        }
        out[k] = 0;
    }
}

/* json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sortKeys) */
static int dump_json(ctx* c, sbuf* b, const json_t* v, const char* indent, int level, int sortKeys, int line)
{
    char num_[48];
    if (level > JINJA_MAX_DEPTH) { fail(c, line, "tojson: values nested too deep"); return 1; }
    if (!v) { fail(c, line, "tojson: an undefined value"); return 1; }
    switch (json_typeof(v)) {
    case JSON_NULL: return sb_str(c, b, "null", line);
    case JSON_TRUE: return sb_str(c, b, "true", line);
    case JSON_FALSE: return sb_str(c, b, "false", line);
    case JSON_INTEGER: snprintf(num_, sizeof num_, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); return sb_str(c, b, num_, line);
    case JSON_REAL: {
        double const d = json_real_value(v);
        if (d != d) return sb_str(c, b, "NaN", line);
        if (isinf(d)) return sb_str(c, b, d > 0 ? "Infinity" : "-Infinity", line);
        float_repr(d, num_, sizeof num_);
        return sb_str(c, b, num_, line);
    }
    case JSON_STRING: {
        const char* const s = json_string_value(v);
        size_t const n = json_string_length(v);
        size_t i, run = 0;
        if (sb_put(c, b, "\"", 1, line)) return 1;
        for (i = 0; i < n; i++) {
            unsigned char const x = (unsigned char)s[i];
            char esc[8];
            if (x >= 0x20 && x != '"' && x != '\\') continue;
            if (sb_put(c, b, s + run, i - run, line)) return 1;
            run = i + 1;
            if (x == '"') strcpy(esc, "\\\"");
            else if (x == '\\') strcpy(esc, "\\\\");
            else if (x == '\n') strcpy(esc, "\\n");
            else if (x == '\r') strcpy(esc, "\\r");
            else if (x == '\t') strcpy(esc, "\\t");
            else if (x == '\b') strcpy(esc, "\\b");
            else if (x == '\f') strcpy(esc, "\\f");
            else snprintf(esc, sizeof esc, "\\u%04x", x);
            if (sb_str(c, b, esc, line)) return 1;
        }
        return sb_put(c, b, s + run, n - run, line) || sb_put(c, b, "\"", 1, line);
    }
    case JSON_ARRAY:
    case JSON_OBJECT: {
        int const isObj = json_is_object(v);
        size_t const n = isObj ? json_object_size(v) : json_array_size(v);
        const char** keys = NULL;
        size_t i;
        int l;
        if (n == 0) return sb_str(c, b, isObj ? "{}" : "[]", line);
        if (sb_put(c, b, isObj ? "{" : "[", 1, line)) return 1;
        if (isObj) {
            const char* k;
            json_t* e;
            keys = (const char**)malloc(n * sizeof *keys);
            if (!keys) { fail(c, line, "out of memory"); return 1; }
            i = 0;
            json_object_foreach((json_t*)v, k, e) keys[i++] = k;
            if (sortKeys) {
                size_t a, z;
                for (a = 1; a < n; a++)
                    for (z = a; z > 0 && strcmp(keys[z - 1], keys[z]) > 0; z--) {
                        const char* const t = keys[z]; keys[z] = keys[z - 1]; keys[z - 1] = t;
                    }
            }
        }
        for (i = 0; i < n; i++) {
            const json_t* const e = isObj ? json_object_get(v, keys[i]) : json_array_get(v, i);
            int r = 0;
            if (i) r = sb_str(c, b, indent ? "," : ", ", line);
            if (!r && indent) {
                r = sb_str(c, b, "\n", line);
                for (l = 0; !r && l <= level; l++) r = sb_str(c, b, indent, line);
            }
            if (!r && isObj) {
                json_t* const k = json_string(keys[i]);
                r = !k || dump_json(c, b, k, indent, level + 1, sortKeys, line) || sb_str(c, b, ": ", line);
                json_decref(k);
            }
            if (r || dump_json(c, b, e, indent, level + 1, sortKeys, line)) { free(keys); return 1; }
        }
        free(keys);
        if (indent) {
            if (sb_str(c, b, "\n", line)) return 1;
            for (l = 0; l < level; l++) if (sb_str(c, b, indent, line)) return 1;
        }
        return sb_put(c, b, isObj ? "}" : "]", 1, line);
    }
    }
    return 0;
}

/* Python's repr() of a string */
static int repr_string(ctx* c, sbuf* b, const char* s, size_t n, int line)
{
    char const q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    size_t i;
    if (sb_put(c, b, &q, 1, line)) return 1;
    for (i = 0; i < n; i++) {
        unsigned char const x = (unsigned char)s[i];
        char esc[8];
        if (x == (unsigned char)q || x == '\\') { esc[0] = '\\'; esc[1] = (char)x; esc[2] = 0; }
        else if (x == '\n') strcpy(esc, "\\n");
        else if (x == '\r') strcpy(esc, "\\r");
        else if (x == '\t') strcpy(esc, "\\t");
        else if (x < 0x20 || x == 0x7F) snprintf(esc, sizeof esc, "\\x%02x", x);
        else { if (sb_put(c, b, (const char*)&s[i], 1, line)) return 1; continue; }
        if (sb_str(c, b, esc, line)) return 1;
    }
    return sb_put(c, b, &q, 1, line);
}

/* Python's str() (repr() inside containers), as {{ }} and ~ write values */
static int to_str(ctx* c, sbuf* b, const json_t* v, int inner, int line)
{
    char num_[48];
    if (!v) return 0; /* undefined prints nothing */
    switch (json_typeof(v)) {
    case JSON_NULL: return sb_str(c, b, "None", line);
    case JSON_TRUE: return sb_str(c, b, "True", line);
    case JSON_FALSE: return sb_str(c, b, "False", line);
    case JSON_INTEGER: snprintf(num_, sizeof num_, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); return sb_str(c, b, num_, line);
    case JSON_REAL: float_repr(json_real_value(v), num_, sizeof num_); return sb_str(c, b, num_, line);
    case JSON_STRING:
        if (inner) return repr_string(c, b, json_string_value(v), json_string_length(v), line);
        return sb_put(c, b, json_string_value(v), json_string_length(v), line);
    case JSON_ARRAY: {
        size_t i;
        if (inner > JINJA_MAX_DEPTH) { fail(c, line, "values nested too deep"); return 1; }
        if (sb_str(c, b, "[", line)) return 1;
        for (i = 0; i < json_array_size(v); i++)
            if ((i && sb_str(c, b, ", ", line)) || to_str(c, b, json_array_get(v, i), inner + 1, line)) return 1;
        return sb_str(c, b, "]", line);
    }
    case JSON_OBJECT: {
        const char* k;
        json_t* e;
        int first = 1;
        if (inner > JINJA_MAX_DEPTH) { fail(c, line, "values nested too deep"); return 1; }
        if (sb_str(c, b, "{", line)) return 1;
        json_object_foreach((json_t*)v, k, e) {
            if ((!first && sb_str(c, b, ", ", line)) || repr_string(c, b, k, strlen(k), line) || sb_str(c, b, ": ", line) ||
                to_str(c, b, e, inner + 1, line))
                return 1;
            first = 0;
        }
        return sb_str(c, b, "}", line);
    }
    }
    return 0;
}

static json_t* str_of(ctx* c, const json_t* v, int line)
{
    sbuf b = { NULL, 0, 0 };
    if (v && json_is_string(v)) return json_incref((json_t*)v);
    if (to_str(c, &b, v, 0, line)) { free(b.p); return NULL; }
    return sb_value(c, &b, line);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                    */
/* ------------------------------------------------------------------------ */

static json_t* lookup(ctx* c, const char* name, int* found)
{
    int i;
    for (i = c->nbScopes - 1; i >= 0; i--) {
        json_t* v;
        if (i < c->floor && i > 1) continue;
        v = json_object_get(c->scopes[i], name);
        if (v) {
            if (found) *found = 1;
            return v == c->undef ? NULL : v;
        }
    }
    if (found) *found = 0;
    return NULL;
}

static int push_scope(ctx* c, int line)
{
    if (c->nbScopes >= (int)(sizeof c->scopes / sizeof c->scopes[0])) { fail(c, line, "nested too deep"); return 1; }
    c->scopes[c->nbScopes] = json_object();
    if (!c->scopes[c->nbScopes]) { fail(c, line, "out of memory"); return 1; }
    c->nbScopes++;
    return 0;
}

static void pop_scope(ctx* c) { json_decref(c->scopes[--c->nbScopes]); }

/* takes v */
static int assign(ctx* c, const char* name, json_t* v, int line)
{
    if (json_object_set_new(c->scopes[c->nbScopes - 1], name, v ? v : json_incref(c->undef))) {
        fail(c, line, "out of memory");
        return 1;
    }
    return 0;
}

static int is_namespace(ctx* c, const json_t* v)
{
    size_t i;
    for (i = 0; i < json_array_size(c->namespaces); i++) if (json_array_get(c->namespaces, i) == v) return 1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Evaluation                                                               */
/* ------------------------------------------------------------------------ */

static json_t* eval(ctx* c, const jinja_node* d);
static int exec(ctx* c, const jinja_node* d);

static int tick(ctx* c, int line)
{
    if (++c->steps > JINJA_MAX_STEPS) { fail(c, line, "the template runs longer than %lu steps", JINJA_MAX_STEPS); return 1; }
    return 0;
}

/* Evaluated arguments of a call, filter or test */
typedef struct {
    json_t* v[16];
    const char* kw[16];
    size_t n;
} args_t;

static int eval_args(ctx* c, const jinja_node* d, args_t* a)
{
    size_t i;
    a->n = 0;
    if (d->nbArgs > 16) { fail(c, d->line, "more than 16 arguments"); return 1; }
    for (i = 0; i < d->nbArgs; i++) {
        a->v[i] = eval(c, d->args[i]);
        a->kw[i] = d->kwNames[i];
        a->n = i + 1;
        if (c->failed) return 1;
    }
    return 0;
}

static void free_args(args_t* a)
{
    size_t i;
    for (i = 0; i < a->n; i++) json_decref(a->v[i]);
    a->n = 0;
}

/* The argument at position pos, or named name; NULL when not given */
static json_t* arg(const args_t* a, size_t pos, const char* name, int* given)
{
    size_t i, p = 0;
    for (i = 0; i < a->n; i++) {
        if (a->kw[i]) {
            if (name && !strcmp(a->kw[i], name)) { if (given) *given = 1; return a->v[i]; }
        } else if (p++ == pos) {
            if (given) *given = 1;
            return a->v[i];
        }
    }
    if (given) *given = 0;
    return NULL;
}

static int check_args(ctx* c, const args_t* a, size_t maxPos, const char* const* names, const char* what, int line)
{
    size_t i, p = 0;
    for (i = 0; i < a->n; i++) {
        if (a->kw[i]) {
            size_t k;
            int ok = 0;
            for (k = 0; names && names[k]; k++) if (!strcmp(names[k], a->kw[i])) ok = 1;
            if (!ok) { fail(c, line, "%s: unsupported argument '%s'", what, a->kw[i]); return 1; }
        } else if (++p > maxPos) {
            fail(c, line, "%s: too many arguments", what);
            return 1;
        }
    }
    return 0;
}

static json_t* need_str(ctx* c, json_t* v, const char* what, int line)
{
    if (v && json_is_string(v)) return v;
    return fail(c, line, "%s: expected a string, got %s", what, type_name(v));
}

/* Whether strip() removes code point cp: one of set's (setLen bytes of
 * UTF-8), or Python's whitespace when set is NULL. */
static int strip_takes(unsigned long cp, const char* set, size_t setLen)
{
    size_t k = 0;
    if (!set) return py_space(cp);
    while (k < setLen) if (cp_at(set, setLen, &k) == cp) return 1;
    return 0;
}

/* Python's str.strip/lstrip/rstrip(chars) */
static json_t* strip(ctx* c, json_t* s, const json_t* chars, int left, int right, int line)
{
    const char* const p = json_string_value(s);
    size_t const n = json_string_length(s);
    size_t a = 0, z = n;
    const char* set = chars && json_is_string(chars) ? json_string_value(chars) : NULL;
    size_t const setLen = set ? json_string_length(chars) : 0;
    if (chars && !json_is_null(chars) && !set) return fail(c, line, "strip: expected a string");
    for (;;) {
        size_t i = a;
        unsigned long cp;
        if (!left || a >= z) break;
        cp = cp_at(p, n, &i);
        if (!strip_takes(cp, set, setLen)) break;
        a = i;
    }
    while (right && z > a) {
        size_t s0 = z - 1, i;
        unsigned long cp;
        while (s0 > a && ((unsigned char)p[s0] & 0xC0) == 0x80) s0--;
        i = s0;
        cp = cp_at(p, n, &i);
        if (!strip_takes(cp, set, setLen)) break;
        z = s0;
    }
    return mkstr(c, p + a, z - a, line);
}

static json_t* split(ctx* c, json_t* s, const json_t* sep, long maxsplit, int line)
{
    const char* const p = json_string_value(s);
    size_t const n = json_string_length(s);
    json_t* const out = json_array();
    size_t i = 0;
    long splits = 0;
    if (!out) return fail(c, line, "out of memory");
    if (!sep || json_is_null(sep)) {
        /* runs of whitespace, none empty */
        while (i < n) {
            size_t start, k;
            while (i < n) { k = i; if (!py_space(cp_at(p, n, &k))) break; i = k; }
            if (i >= n) break;
            start = i;
            if (maxsplit >= 0 && splits >= maxsplit) {
                size_t e = n;
                while (e > start) {
                    size_t s0 = e - 1, q;
                    while (s0 > start && ((unsigned char)p[s0] & 0xC0) == 0x80) s0--;
                    q = s0;
                    if (!py_space(cp_at(p, n, &q))) break;
                    e = s0;
                }
                if (json_array_append_new(out, mkstr(c, p + start, e - start, line))) break;
                i = n;
                break;
            }
            while (i < n) { k = i; if (py_space(cp_at(p, n, &k))) break; i = k; }
            if (json_array_append_new(out, mkstr(c, p + start, i - start, line))) break;
            splits++;
            if (tick(c, line)) break;
        }
    } else {
        const char* const q = json_string_value(sep);
        size_t const m = json_string_length(sep);
        size_t start = 0;
        if (!json_is_string(sep) || m == 0) { json_decref(out); return fail(c, line, "split: empty separator"); }
        for (i = 0; i + m <= n;) {
            if ((maxsplit < 0 || splits < maxsplit) && !memcmp(p + i, q, m)) {
                if (json_array_append_new(out, mkstr(c, p + start, i - start, line))) break;
                i += m;
                start = i;
                splits++;
                if (tick(c, line)) break;
            } else {
                i++;
            }
        }
        if (!c->failed && json_array_append_new(out, mkstr(c, p + start, n - start, line))) fail(c, line, "out of memory");
    }
    if (c->failed) { json_decref(out); return NULL; }
    return out;
}

static json_t* replace(ctx* c, json_t* s, json_t* from, json_t* to, long count, int line)
{
    sbuf b = { NULL, 0, 0 };
    const char* const p = json_string_value(s);
    size_t const n = json_string_length(s), m = json_string_length(from), r = json_string_length(to);
    size_t i = 0, run = 0;
    long done = 0;
    if (m == 0) {
        /* Python inserts `to` between every character and at both ends */
        while (i <= n && (count < 0 || done < count)) {
            if (sb_put(c, &b, json_string_value(to), r, line)) break;
            done++;
            if (i == n) { i++; break; }
            cp_at(p, n, &i);
            if (sb_put(c, &b, p + run, i - run, line)) break;
            run = i;
        }
        if (!c->failed && run < n) sb_put(c, &b, p + run, n - run, line);
    } else {
        while (i + m <= n) {
            if ((count < 0 || done < count) && !memcmp(p + i, json_string_value(from), m)) {
                if (sb_put(c, &b, p + run, i - run, line) || sb_put(c, &b, json_string_value(to), r, line)) break;
                i += m;
                run = i;
                done++;
            } else {
                i++;
            }
        }
        if (!c->failed) sb_put(c, &b, p + run, n - run, line);
    }
    if (c->failed) { free(b.p); return NULL; }
    return sb_value(c, &b, line);
}

static json_t* change_case(ctx* c, json_t* s, int mode, int line)
{
    /* ASCII letters only: 0 lower, 1 upper, 2 capitalize, 3 title */
    size_t const n = json_string_length(s);
    char* const p = (char*)malloc(n + 1);
    size_t i;
    int word = 0;
    json_t* v;
    if (!p) return fail(c, line, "out of memory");
    memcpy(p, json_string_value(s), n);
    for (i = 0; i < n; i++) {
        char const ch = p[i];
        int const alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
        int up = mode == 1 || (mode == 2 && i == 0) || (mode == 3 && !word);
        if (mode == 0) up = 0;
        if (alpha) p[i] = up ? (char)(ch & ~0x20) : (char)(ch | 0x20);
        word = mode == 3 ? alpha || (unsigned char)ch >= 0x80 || (ch >= '0' && ch <= '9') || ch == '\'' : 1;
    }
    v = mkstr(c, p, n, line);
    free(p);
    return v;
}

static json_t* length_of(ctx* c, const json_t* v, int line)
{
    if (!v) return json_integer(0);
    if (json_is_string(v)) return json_integer((json_int_t)cp_count(json_string_value(v), json_string_length(v)));
    if (json_is_array(v)) return json_integer((json_int_t)json_array_size(v));
    if (json_is_object(v)) return json_integer((json_int_t)json_object_size(v));
    return fail(c, line, "length: a %s has no length", type_name(v));
}

/* An iterable as a list (new reference): lists, dict keys, string characters */
static json_t* as_list(ctx* c, const json_t* v, int line)
{
    json_t* out;
    if (!v) return json_array();
    if (json_is_array(v)) return json_copy((json_t*)v);
    out = json_array();
    if (!out) return fail(c, line, "out of memory");
    if (json_is_object(v)) {
        const char* k;
        json_t* e;
        json_object_foreach((json_t*)v, k, e) if (json_array_append_new(out, json_string(k))) break;
        return out;
    }
    if (json_is_string(v)) {
        const char* const p = json_string_value(v);
        size_t const n = json_string_length(v);
        size_t i = 0;
        while (i < n) {
            size_t const s = i;
            cp_at(p, n, &i);
            if (json_array_append_new(out, mkstr(c, p + s, i - s, line))) break;
        }
        return out;
    }
    json_decref(out);
    return fail(c, line, "a %s is not iterable", type_name(v));
}

static json_t* items_of(ctx* c, const json_t* v, int line)
{
    json_t* const out = json_array();
    const char* k;
    json_t* e;
    if (!out) return fail(c, line, "out of memory");
    if (!v) return out;
    if (!json_is_object(v)) { json_decref(out); return fail(c, line, "items: a %s is not a mapping", type_name(v)); }
    json_object_foreach((json_t*)v, k, e) json_array_append_new(out, json_pack("[sO]", k, e));
    return out;
}

static json_t* get_item(ctx* c, const json_t* obj, const json_t* key, int line)
{
    if (!obj) return fail(c, line, "indexing an undefined value");
    if (json_is_object(obj)) {
        json_t* v;
        if (!json_is_string(key)) return NULL;
        v = json_object_get(obj, json_string_value(key));
        return v ? json_incref(v) : NULL;
    }
    if ((json_is_array(obj) || json_is_string(obj)) && json_is_integer(key)) {
        json_int_t i = json_integer_value(key);
        size_t const n = json_is_array(obj) ? json_array_size(obj) : cp_count(json_string_value(obj), json_string_length(obj));
        if (i < 0) i += (json_int_t)n;
        if (i < 0 || (size_t)i >= n) return NULL;
        if (json_is_array(obj)) return json_incref(json_array_get(obj, (size_t)i));
        {
            const char* const p = json_string_value(obj);
            size_t const len = json_string_length(obj), a = cp_offset(p, len, (size_t)i);
            size_t z = a;
            cp_at(p, len, &z);
            return mkstr(c, p + a, z - a, line);
        }
    }
    return NULL;
}

static int slice_bound(ctx* c, const json_t* v, long long n, long long step, int isStart, long long* out, int line)
{
    long long x;
    if (!v || json_is_null(v)) {
        *out = step > 0 ? (isStart ? 0 : n) : (isStart ? n - 1 : -1);
        return 0;
    }
    if (!json_is_integer(v)) { fail(c, line, "slice indices must be integers"); return 1; }
    x = json_integer_value(v);
    if (x < 0) x += n;
    if (step > 0) { if (x < 0) x = 0; if (x > n) x = n; }
    else { if (x < -1) x = -1; if (x > n - 1) x = n - 1; }
    *out = x;
    return 0;
}

static json_t* slice(ctx* c, const json_t* obj, json_t** parts, int line)
{
    long long n, step = 1, a, z, i;
    json_t* out;
    int const isStr = obj && json_is_string(obj);
    const char* p = NULL;
    size_t len = 0;
    if (!obj || !(json_is_array(obj) || isStr)) return fail(c, line, "slicing a %s", type_name(obj));
    if (parts[2] && !json_is_null(parts[2])) {
        if (!json_is_integer(parts[2]) || json_integer_value(parts[2]) == 0) return fail(c, line, "a bad slice step");
        step = json_integer_value(parts[2]);
    }
    if (isStr) { p = json_string_value(obj); len = json_string_length(obj); n = (long long)cp_count(p, len); }
    else n = (long long)json_array_size(obj);
    if (slice_bound(c, parts[0], n, step, 1, &a, line) || slice_bound(c, parts[1], n, step, 0, &z, line)) return NULL;
    if (isStr) {
        sbuf b = { NULL, 0, 0 };
        if (sb_put(c, &b, "", 0, line)) return NULL;
        if (step == 1) {
            if (a < z) { size_t const s = cp_offset(p, len, (size_t)a), e = cp_offset(p, len, (size_t)z); sb_put(c, &b, p + s, e - s, line); }
        } else {
            for (i = a; step > 0 ? i < z : i > z; i += step) {
                size_t const s = cp_offset(p, len, (size_t)i);
                size_t e = s;
                cp_at(p, len, &e);
                if (sb_put(c, &b, p + s, e - s, line) || tick(c, line)) break;
            }
        }
        if (c->failed) { free(b.p); return NULL; }
        return sb_value(c, &b, line);
    }
    out = json_array();
    if (!out) return fail(c, line, "out of memory");
    for (i = a; step > 0 ? i < z : i > z; i += step)
        if (json_array_append(out, json_array_get(obj, (size_t)i))) { json_decref(out); return fail(c, line, "out of memory"); }
    return out;
}

static int compare_values(ctx* c, int op, const json_t* a, const json_t* b, int line)
{
    int r;
    if (is_num(a) && is_num(b)) {
        double const x = num(a), y = num(b);
        r = x < y ? -1 : x > y ? 1 : 0;
        if (json_is_integer(a) && json_is_integer(b))
            r = json_integer_value(a) < json_integer_value(b) ? -1 : json_integer_value(a) > json_integer_value(b);
    } else if (a && b && json_is_string(a) && json_is_string(b)) {
        size_t const n = json_string_length(a) < json_string_length(b) ? json_string_length(a) : json_string_length(b);
        r = memcmp(json_string_value(a), json_string_value(b), n);
        if (r == 0) r = json_string_length(a) < json_string_length(b) ? -1 : json_string_length(a) > json_string_length(b);
    } else {
        fail(c, line, "cannot compare a %s with a %s", type_name(a), type_name(b));
        return -1;
    }
    switch (op) {
    case JOP_LT: return r < 0;
    case JOP_LE: return r <= 0;
    case JOP_GT: return r > 0;
    default: return r >= 0;
    }
}

static int contains(ctx* c, const json_t* hay, const json_t* needle, int line)
{
    if (hay && json_is_string(hay)) {
        const char* const h = json_string_value(hay);
        size_t const n = json_string_length(hay), m = json_string_length(needle);
        size_t i;
        if (!needle || !json_is_string(needle)) { fail(c, line, "'in <string>' needs a string, not a %s", type_name(needle)); return -1; }
        if (m == 0) return 1;
        for (i = 0; i + m <= n; i++) if (!memcmp(h + i, json_string_value(needle), m)) return 1;
        return 0;
    }
    if (hay && json_is_array(hay)) {
        size_t i;
        for (i = 0; i < json_array_size(hay); i++) if (equal(json_array_get(hay, i), needle, 0)) return 1;
        return 0;
    }
    if (hay && json_is_object(hay)) return needle && json_is_string(needle) && json_object_get(hay, json_string_value(needle));
    fail(c, line, "'in' a %s", type_name(hay));
    return -1;
}

static json_t* arith(ctx* c, int op, json_t* a, json_t* b, int line)
{
    if (!a || !b) return fail(c, line, "an undefined value in arithmetic");
    if (op == JOP_ADD) {
        if (json_is_string(a) && json_is_string(b)) {
            sbuf s = { NULL, 0, 0 };
            if (sb_put(c, &s, json_string_value(a), json_string_length(a), line) ||
                sb_put(c, &s, json_string_value(b), json_string_length(b), line)) { free(s.p); return NULL; }
            return sb_value(c, &s, line);
        }
        if (json_is_array(a) && json_is_array(b)) {
            json_t* const out = json_copy(a);
            if (!out || json_array_extend(out, b)) { json_decref(out); return fail(c, line, "out of memory"); }
            return check_depth(c, out, line);
        }
    }
    if (op == JOP_MUL && json_is_integer(b) && (json_is_string(a) || json_is_array(a))) {
        json_int_t k, times = json_integer_value(b);
        if (json_is_string(a)) {
            sbuf s = { NULL, 0, 0 };
            if (sb_put(c, &s, "", 0, line)) return NULL;
            for (k = 0; k < times; k++) if (sb_put(c, &s, json_string_value(a), json_string_length(a), line)) { free(s.p); return NULL; }
            return sb_value(c, &s, line);
        } else {
            json_t* const out = json_array();
            for (k = 0; out && k < times; k++)
                if (json_array_extend(out, a) || tick(c, line)) { json_decref(out); return c->failed ? NULL : fail(c, line, "out of memory"); }
            return out;
        }
    }
    if ((is_num(a) || json_is_boolean(a)) && (is_num(b) || json_is_boolean(b))) {
        int const ints = !json_is_real(a) && !json_is_real(b);
        double const x = json_is_boolean(a) ? json_is_true(a) : num(a), y = json_is_boolean(b) ? json_is_true(b) : num(b);
        long long const i = json_is_boolean(a) ? json_is_true(a) : json_is_integer(a) ? json_integer_value(a) : 0;
        long long const j = json_is_boolean(b) ? json_is_true(b) : json_is_integer(b) ? json_integer_value(b) : 0;
        long long r;
        switch (op) {
        case JOP_ADD: if (ints) { if (__builtin_add_overflow(i, j, &r)) return fail(c, line, "integer overflow"); return json_integer(r); } return json_real(x + y);
        case JOP_SUB: if (ints) { if (__builtin_sub_overflow(i, j, &r)) return fail(c, line, "integer overflow"); return json_integer(r); } return json_real(x - y);
        case JOP_MUL: if (ints) { if (__builtin_mul_overflow(i, j, &r)) return fail(c, line, "integer overflow"); return json_integer(r); } return json_real(x * y);
        case JOP_DIV: if (y == 0) return fail(c, line, "division by zero"); return json_real(x / y);
        case JOP_FLOORDIV:
        case JOP_MOD:
            if (y == 0) return fail(c, line, "division by zero");
            if (ints) {
                long long q, m;
                if (i == (long long)-0x7fffffffffffffffLL - 1 && j == -1) return fail(c, line, "integer overflow");
                q = i / j;
                m = i % j;
                if (m != 0 && ((m < 0) != (j < 0))) { q--; m += j; }
                return json_integer(op == JOP_MOD ? m : q);
            } else {
                double const q = floor(x / y);
                return json_real(op == JOP_MOD ? x - q * y : q);
            }
        case JOP_POW:
            if (ints && j >= 0) {
                long long acc = 1, k;
                for (k = 0; k < j; k++) if (__builtin_mul_overflow(acc, i, &acc)) return fail(c, line, "integer overflow");
                return json_integer(acc);
            }
            return json_real(pow(x, y));
        }
    }
    return fail(c, line, "unsupported operand types: %s and %s", type_name(a), type_name(b));
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                    */
/* ------------------------------------------------------------------------ */

static const char* const kTests[] = { "defined", "undefined", "none", "string", "mapping", "iterable", "sequence",
                                      "number", "integer", "float", "boolean", "true", "false", "eq", "equalto", "==",
                                      "ne", "!=", "lt", "<", "gt", ">", "odd", "even", "divisibleby", "sameas", "in",
                                      "lower", "upper", NULL };

int jinja_knownTest(const char* name)
{
    size_t i;
    for (i = 0; kTests[i]; i++) if (!strcmp(kTests[i], name)) return 1;
    return 0;
}

/* 1, 0, or -1 after an error */
static int run_test(ctx* c, const char* name, json_t* v, const args_t* a, int line)
{
    json_t* const x = arg(a, 0, NULL, NULL);
    if (!strcmp(name, "defined")) return v != NULL;
    if (!strcmp(name, "undefined")) return v == NULL;
    if (!strcmp(name, "none")) return v && json_is_null(v);
    if (!strcmp(name, "string")) return v && json_is_string(v);
    if (!strcmp(name, "mapping")) return v && json_is_object(v) && !is_namespace(c, v);
    if (!strcmp(name, "iterable")) return v && (json_is_array(v) || json_is_object(v) || json_is_string(v));
    if (!strcmp(name, "sequence")) return v && (json_is_array(v) || json_is_object(v) || json_is_string(v));
    if (!strcmp(name, "number")) return is_num(v) || (v && json_is_boolean(v));
    if (!strcmp(name, "integer")) return v && json_is_integer(v);
    if (!strcmp(name, "float")) return v && json_is_real(v);
    if (!strcmp(name, "boolean")) return v && json_is_boolean(v);
    if (!strcmp(name, "true")) return v && json_is_true(v);
    if (!strcmp(name, "false")) return v && json_is_false(v);
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==")) return equal(v, x, 0);
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) return !equal(v, x, 0);
    if (!strcmp(name, "lt") || !strcmp(name, "<")) return compare_values(c, JOP_LT, v, x, line);
    if (!strcmp(name, "gt") || !strcmp(name, ">")) return compare_values(c, JOP_GT, v, x, line);
    if (!strcmp(name, "odd") || !strcmp(name, "even") || !strcmp(name, "divisibleby")) {
        json_int_t const d = !strcmp(name, "divisibleby") ? (x && json_is_integer(x) ? json_integer_value(x) : 0) : 2;
        if (!v || !json_is_integer(v) || d == 0) { fail(c, line, "%s: expected integers", name); return -1; }
        return !strcmp(name, "odd") ? json_integer_value(v) % 2 != 0 : json_integer_value(v) % d == 0;
    }
    if (!strcmp(name, "sameas"))
        return (v == x) || (v && x && json_typeof(v) == json_typeof(x) && (json_is_null(v) || json_is_boolean(v)));
    if (!strcmp(name, "in")) return contains(c, x, v, line);
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        size_t i;
        if (!v || !json_is_string(v)) return 0;
        for (i = 0; i < json_string_length(v); i++) {
            char const ch = json_string_value(v)[i];
            if (name[0] == 'l' ? (ch >= 'A' && ch <= 'Z') : (ch >= 'a' && ch <= 'z')) return 0;
        }
        return 1;
    }
    fail(c, line, "unsupported test '%s'", name);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Filters                                                                  */
/* ------------------------------------------------------------------------ */

static const char* const kFilters[] = { "trim", "length", "count", "tojson", "upper", "lower", "capitalize", "title",
                                        "string", "int", "float", "first", "last", "join", "default", "d", "items",
                                        "list", "reverse", "replace", "selectattr", "rejectattr", "select", "reject",
                                        "map", "safe", "abs", "unique", NULL };

int jinja_knownFilter(const char* name)
{
    size_t i;
    for (i = 0; kFilters[i]; i++) if (!strcmp(kFilters[i], name)) return 1;
    return 0;
}

static json_t* attr_of(const json_t* v, const char* name)
{
    /* "a.b" walks dicts, as Jinja's attribute= arguments do */
    char part[128];
    while (v && *name) {
        const char* const dot = strchr(name, '.');
        size_t const n = dot ? (size_t)(dot - name) : strlen(name);
        if (n >= sizeof part || !json_is_object(v)) return NULL;
        memcpy(part, name, n);
        part[n] = 0;
        v = json_object_get(v, part);
        name += n + (dot ? 1 : 0);
    }
    return (json_t*)v;
}

static json_t* select_items(ctx* c, json_t* v, const args_t* a, int byAttr, int keep, int line)
{
    json_t* const list = as_list(c, v, line);
    json_t* out;
    const char* attr = NULL;
    const char* test = NULL;
    args_t rest;
    size_t i, first = 0;
    if (!list) return NULL;
    if (byAttr) {
        json_t* const an = arg(a, 0, NULL, NULL);
        if (!an || !json_is_string(an)) { json_decref(list); return fail(c, line, "selectattr: expected an attribute name"); }
        attr = json_string_value(an);
        first = 1;
    }
    {
        json_t* const tn = arg(a, first, NULL, NULL);
        if (tn && !json_is_string(tn)) { json_decref(list); return fail(c, line, "select: expected a test name"); }
        test = tn ? json_string_value(tn) : NULL;
        if (test && !jinja_knownTest(test)) { json_decref(list); return fail(c, line, "unsupported test '%s'", test); }
    }
    rest.n = 0;
    for (i = first + 1; i < a->n; i++) { rest.v[rest.n] = a->v[i]; rest.kw[rest.n] = NULL; rest.n++; }
    out = json_array();
    for (i = 0; out && i < json_array_size(list); i++) {
        json_t* const item = json_array_get(list, i);
        json_t* const subject = attr ? attr_of(item, attr) : item;
        int const r = test ? run_test(c, test, subject, &rest, line) : truthy(subject);
        if (r < 0 || tick(c, line)) { json_decref(out); out = NULL; break; }
        if ((r != 0) == keep) json_array_append(out, item);
    }
    json_decref(list);
    return out;
}

static json_t* apply_filter(ctx* c, const char* name, json_t* v, args_t* a, int line);

static json_t* filter_map(ctx* c, json_t* v, args_t* a, int line)
{
    int given;
    json_t* const attr = arg(a, 99, "attribute", &given);
    json_t* const fname = arg(a, 0, NULL, NULL);
    json_t* const list = as_list(c, v, line);
    json_t* out;
    size_t i;
    if (!list) return NULL;
    out = json_array();
    for (i = 0; out && i < json_array_size(list); i++) {
        json_t* const item = json_array_get(list, i);
        json_t* r;
        if (given) {
            r = attr && json_is_string(attr) ? attr_of(item, json_string_value(attr)) : NULL;
            if (!r) r = arg(a, 99, "default", NULL);
            r = r ? json_incref(r) : NULL;
        } else if (fname && json_is_string(fname) && jinja_knownFilter(json_string_value(fname))) {
            args_t none;
            none.n = 0;
            r = apply_filter(c, json_string_value(fname), item, &none, line);
        } else {
            r = fail(c, line, "map: expected attribute= or a filter name");
        }
        if (c->failed || tick(c, line)) { json_decref(out); out = NULL; break; }
        json_array_append_new(out, r ? r : json_null());
    }
    json_decref(list);
    return out;
}

static json_t* apply_filter(ctx* c, const char* name, json_t* v, args_t* a, int line)
{
    static const char* const kToJson[] = { "indent", "sort_keys", "ensure_ascii", NULL };
    static const char* const kDefault[] = { "default_value", "boolean", NULL };
    static const char* const kJoin[] = { "d", "attribute", NULL };
    if (!strcmp(name, "trim")) {
        if (check_args(c, a, 1, NULL, name, line) || !need_str(c, v, name, line)) return NULL;
        return strip(c, v, arg(a, 0, NULL, NULL), 1, 1, line);
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) return length_of(c, v, line);
    if (!strcmp(name, "tojson")) {
        sbuf b = { NULL, 0, 0 };
        char ind[64];
        const char* indent = NULL;
        json_t* const i = arg(a, 0, "indent", NULL);
        json_t* const sk = arg(a, 99, "sort_keys", NULL);
        json_t* const ea = arg(a, 99, "ensure_ascii", NULL);
        if (check_args(c, a, 1, kToJson, name, line)) return NULL;
        if (ea && truthy(ea)) return fail(c, line, "tojson: ensure_ascii is not supported");
        if (i && json_is_integer(i) && json_integer_value(i) >= 0 && json_integer_value(i) < 32) {
            memset(ind, ' ', (size_t)json_integer_value(i));
            ind[json_integer_value(i)] = 0;
            indent = ind;
        } else if (i && json_is_string(i) && json_string_length(i) < sizeof ind) {
            strcpy(ind, json_string_value(i));
            indent = ind;
        } else if (i && !json_is_null(i)) {
            return fail(c, line, "tojson: a bad indent");
        }
        if (dump_json(c, &b, v, indent, 0, sk && truthy(sk), line)) { free(b.p); return NULL; }
        return sb_value(c, &b, line);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") || !strcmp(name, "title")) {
        json_t* const s = str_of(c, v, line);
        json_t* r;
        if (!s) return NULL;
        r = change_case(c, s, name[0] == 'l' ? 0 : name[0] == 'u' ? 1 : name[0] == 'c' ? 2 : 3, line);
        json_decref(s);
        return r;
    }
    if (!strcmp(name, "string") || !strcmp(name, "safe")) return str_of(c, v, line);
    if (!strcmp(name, "int")) {
        if (v && json_is_integer(v)) return json_incref(v);
        if (v && json_is_real(v)) return json_integer((json_int_t)json_real_value(v));
        if (v && json_is_boolean(v)) return json_integer(json_is_true(v));
        if (v && json_is_string(v)) {
            char* e;
            long long const x = strtoll(json_string_value(v), &e, 10);
            if (*e == 0 && e != json_string_value(v)) return json_integer(x);
        }
        return json_integer(0);
    }
    if (!strcmp(name, "float")) {
        if (is_num(v)) return json_real(num(v));
        if (v && json_is_string(v)) {
            char* e;
            double const x = strtod(json_string_value(v), &e);
            if (*e == 0 && e != json_string_value(v)) return json_real(x);
        }
        return json_real(0);
    }
    if (!strcmp(name, "abs")) {
        if (v && json_is_integer(v)) return json_integer(json_integer_value(v) < 0 ? -json_integer_value(v) : json_integer_value(v));
        if (v && json_is_real(v)) return json_real(fabs(json_real_value(v)));
        return fail(c, line, "abs: expected a number");
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        json_t* const list = as_list(c, v, line);
        json_t* r = NULL;
        size_t const n = list ? json_array_size(list) : 0;
        if (n) r = json_incref(json_array_get(list, name[0] == 'f' ? 0 : n - 1));
        json_decref(list);
        return r;
    }
    if (!strcmp(name, "join")) {
        json_t* const list = as_list(c, v, line);
        json_t* const sep = arg(a, 0, "d", NULL);
        json_t* const attr = arg(a, 1, "attribute", NULL);
        sbuf b = { NULL, 0, 0 };
        size_t i;
        if (!list || check_args(c, a, 2, kJoin, name, line)) { json_decref(list); return NULL; }
        if (sep && !json_is_string(sep)) { json_decref(list); return fail(c, line, "join: expected a string separator"); }
        sb_put(c, &b, "", 0, line);
        for (i = 0; !c->failed && i < json_array_size(list); i++) {
            json_t* const item = attr ? attr_of(json_array_get(list, i), json_string_value(attr)) : json_array_get(list, i);
            if (i && sep) sb_put(c, &b, json_string_value(sep), json_string_length(sep), line);
            if (!c->failed) to_str(c, &b, item, 0, line);
        }
        json_decref(list);
        if (c->failed) { free(b.p); return NULL; }
        return sb_value(c, &b, line);
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        json_t* const dv = arg(a, 0, "default_value", NULL);
        json_t* const boolean = arg(a, 1, "boolean", NULL);
        if (check_args(c, a, 2, kDefault, name, line)) return NULL;
        if (!v || (boolean && truthy(boolean) && !truthy(v))) return dv ? json_incref(dv) : json_string("");
        return json_incref(v);
    }
    if (!strcmp(name, "items")) return items_of(c, v, line);
    if (!strcmp(name, "list")) return as_list(c, v, line);
    if (!strcmp(name, "reverse")) {
        json_t* list;
        json_t* out;
        size_t i, n;
        if (v && json_is_string(v)) {
            json_t* parts[3];
            json_t* step = json_integer(-1);
            json_t* r;
            parts[0] = NULL; parts[1] = NULL; parts[2] = step;
            r = slice(c, v, parts, line);
            json_decref(step);
            return r;
        }
        list = as_list(c, v, line);
        if (!list) return NULL;
        n = json_array_size(list);
        out = json_array();
        for (i = 0; out && i < n; i++) json_array_append(out, json_array_get(list, n - 1 - i));
        json_decref(list);
        return out;
    }
    if (!strcmp(name, "replace")) {
        json_t* const from = arg(a, 0, NULL, NULL);
        json_t* const to = arg(a, 1, NULL, NULL);
        json_t* const count = arg(a, 2, "count", NULL);
        json_t* s;
        json_t* r;
        if (!from || !to || !json_is_string(from) || !json_is_string(to)) return fail(c, line, "replace: expected two strings");
        s = str_of(c, v, line);
        if (!s) return NULL;
        r = replace(c, s, from, to, count && json_is_integer(count) ? (long)json_integer_value(count) : -1, line);
        json_decref(s);
        return r;
    }
    if (!strcmp(name, "selectattr") || !strcmp(name, "rejectattr")) return select_items(c, v, a, 1, name[0] == 's', line);
    if (!strcmp(name, "select") || !strcmp(name, "reject")) return select_items(c, v, a, 0, name[2] == 'l', line);
    if (!strcmp(name, "map")) return filter_map(c, v, a, line);
    if (!strcmp(name, "unique")) {
        json_t* const list = as_list(c, v, line);
        json_t* out;
        size_t i, k;
        if (!list) return NULL;
        out = json_array();
        for (i = 0; out && i < json_array_size(list); i++) {
            int seen = 0;
            for (k = 0; k < json_array_size(out) && !seen; k++) seen = equal(json_array_get(out, k), json_array_get(list, i), 0);
            if (!seen) json_array_append(out, json_array_get(list, i));
            if (tick(c, line)) { json_decref(out); out = NULL; }
        }
        json_decref(list);
        return out;
    }
    return fail(c, line, "unsupported filter '%s'", name);
}

/* ------------------------------------------------------------------------ */
/* Calls: methods, global functions, macros                                 */
/* ------------------------------------------------------------------------ */

static json_t* call_method(ctx* c, json_t* obj, const char* name, args_t* a, int line)
{
    json_t* const x = arg(a, 0, NULL, NULL);
    if (obj && json_is_string(obj)) {
        if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip"))
            return strip(c, obj, x, name[0] != 'r', name[0] != 'l', line);
        if (!strcmp(name, "split")) {
            json_t* const m = arg(a, 1, "maxsplit", NULL);
            json_t* const sep = x ? x : arg(a, 99, "sep", NULL);
            return split(c, obj, sep, m && json_is_integer(m) ? (long)json_integer_value(m) : -1, line);
        }
        if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
            size_t const n = json_string_length(obj);
            size_t i, count;
            if (!x || !(json_is_string(x) || json_is_array(x))) return fail(c, line, "%s: expected a string", name);
            count = json_is_array(x) ? json_array_size(x) : 1;
            for (i = 0; i < count; i++) {
                json_t* const p = json_is_array(x) ? json_array_get(x, i) : x;
                size_t m;
                if (!json_is_string(p)) return fail(c, line, "%s: expected strings", name);
                m = json_string_length(p);
                if (m <= n && !memcmp(json_string_value(obj) + (name[0] == 's' ? 0 : n - m), json_string_value(p), m))
                    return json_true();
            }
            return json_false();
        }
        if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") || !strcmp(name, "title"))
            return change_case(c, obj, name[0] == 'l' ? 0 : name[0] == 'u' ? 1 : name[0] == 'c' ? 2 : 3, line);
        if (!strcmp(name, "replace")) {
            json_t* const to = arg(a, 1, NULL, NULL);
            json_t* const count = arg(a, 2, NULL, NULL);
            if (!x || !to || !json_is_string(x) || !json_is_string(to)) return fail(c, line, "replace: expected two strings");
            return replace(c, obj, x, to, count && json_is_integer(count) ? (long)json_integer_value(count) : -1, line);
        }
        if (!strcmp(name, "join")) {
            json_t* const list = as_list(c, x, line);
            sbuf b = { NULL, 0, 0 };
            size_t i;
            if (!list) return NULL;
            sb_put(c, &b, "", 0, line);
            for (i = 0; !c->failed && i < json_array_size(list); i++) {
                json_t* const item = json_array_get(list, i);
                if (!json_is_string(item)) { fail(c, line, "join: expected strings"); break; }
                if (i) sb_put(c, &b, json_string_value(obj), json_string_length(obj), line);
                if (!c->failed) sb_put(c, &b, json_string_value(item), json_string_length(item), line);
            }
            json_decref(list);
            if (c->failed) { free(b.p); return NULL; }
            return sb_value(c, &b, line);
        }
    }
    if (obj && json_is_object(obj) && !is_namespace(c, obj)) {
        if (!strcmp(name, "get")) {
            json_t* r;
            if (!x || !json_is_string(x)) return fail(c, line, "get: expected a string key");
            r = json_object_get(obj, json_string_value(x));
            if (!r) r = arg(a, 1, NULL, NULL);
            return r ? json_incref(r) : json_null();
        }
        if (!strcmp(name, "items")) return items_of(c, obj, line);
        if (!strcmp(name, "keys")) return as_list(c, obj, line);
        if (!strcmp(name, "values")) {
            json_t* const out = json_array();
            const char* k;
            json_t* e;
            json_object_foreach(obj, k, e) json_array_append(out, e);
            return out;
        }
    }
    return fail(c, line, "unsupported method '%s' of a %s", name, type_name(obj));
}

static json_t* call_macro(ctx* c, const jinja_node* m, args_t* a, int line)
{
    sbuf b = { NULL, 0, 0 };
    sbuf* const saved = c->out;
    int const savedFloor = c->floor, savedScopes = c->nbScopes;
    size_t i, pos = 0;
    if (c->depth >= JINJA_MAX_DEPTH) return fail(c, line, "macro calls nested deeper than %d", JINJA_MAX_DEPTH);
    for (i = 0; i < a->n; i++) if (!a->kw[i]) pos++;
    if (pos > m->nbTargets) return fail(c, line, "macro '%s' takes %zu arguments", m->name, m->nbTargets);
    if (push_scope(c, line)) return NULL;
    c->floor = c->nbScopes - 1;
    for (i = 0; i < m->nbTargets && !c->failed; i++) {
        int given;
        json_t* v = arg(a, i, m->targets[i], &given);
        if (given) v = v ? json_incref(v) : NULL;
        else v = m->args[i]->kind == JN_CONST && !m->args[i]->value ? NULL : eval(c, m->args[i]);
        assign(c, m->targets[i], v, line);
    }
    for (i = 0; i < a->n && !c->failed; i++) {
        size_t k;
        int ok = 0;
        for (k = 0; a->kw[i] && k < m->nbTargets; k++) if (!strcmp(a->kw[i], m->targets[k])) ok = 1;
        if (a->kw[i] && !ok) fail(c, line, "macro '%s' has no parameter '%s'", m->name, a->kw[i]);
    }
    c->depth++;
    c->out = &b;
    if (!c->failed) sb_put(c, &b, "", 0, line);
    if (!c->failed) exec(c, m->body);
    c->out = saved;
    c->depth--;
    while (c->nbScopes > savedScopes) pop_scope(c);
    c->floor = savedFloor;
    if (c->failed) { free(b.p); return NULL; }
    return sb_value(c, &b, line);
}

static json_t* call_global(ctx* c, const char* name, args_t* a, int line)
{
    int i;
    for (i = c->nbMacros - 1; i >= 0; i--) if (!strcmp(c->macros[i]->name, name)) return call_macro(c, c->macros[i], a, line);
    if (!strcmp(name, "raise_exception")) {
        json_t* const m = arg(a, 0, NULL, NULL);
        return fail(c, line, "the template raised: %s", m && json_is_string(m) ? json_string_value(m) : "(no message)");
    }
    if (!strcmp(name, "strftime_now")) {
        json_t* const f = arg(a, 0, NULL, NULL);
        char buf[256];
        struct tm tm;
        time_t t;
        size_t n;
        if (!f || !json_is_string(f)) return fail(c, line, "strftime_now: expected a format");
        if (c->o && c->o->fixedTime) {
            t = (time_t)c->o->time;
            if (!gmtime_r(&t, &tm)) return fail(c, line, "strftime_now: a bad time");
        } else {
            t = time(NULL);
            if (!localtime_r(&t, &tm)) return fail(c, line, "strftime_now: no clock");
        }
        n = strftime(buf, sizeof buf, json_string_value(f), &tm);
        return mkstr(c, buf, n, line);
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        json_t* const o = json_object();
        size_t k;
        if (!o) return fail(c, line, "out of memory");
        for (k = 0; k < a->n; k++) {
            if (a->kw[k]) json_object_set(o, a->kw[k], a->v[k] ? a->v[k] : json_null());
            else if (a->v[k] && json_is_object(a->v[k])) json_object_update(o, a->v[k]);
            else { json_decref(o); return fail(c, line, "%s: expected keyword arguments", name); }
        }
        if (name[0] == 'n') json_array_append(c->namespaces, o);
        return check_depth(c, o, line);
    }
    if (!strcmp(name, "range")) {
        json_t* const x = arg(a, 0, NULL, NULL);
        json_t* const y = arg(a, 1, NULL, NULL);
        json_t* const z = arg(a, 2, NULL, NULL);
        long long start = 0, stop, step = 1, v;
        json_t* out;
        if (!x || !json_is_integer(x) || (y && !json_is_integer(y)) || (z && !json_is_integer(z)))
            return fail(c, line, "range: expected integers");
        stop = json_integer_value(x);
        if (y) { start = stop; stop = json_integer_value(y); }
        if (z) step = json_integer_value(z);
        if (step == 0) return fail(c, line, "range: a zero step");
        if ((step > 0 ? (stop - start) / step : (start - stop) / -step) > 1000000) return fail(c, line, "range: over a million items");
        out = json_array();
        for (v = start; out && (step > 0 ? v < stop : v > stop); v += step) json_array_append_new(out, json_integer(v));
        return out;
    }
    return fail(c, line, "unsupported function '%s'", name);
}

/* ------------------------------------------------------------------------ */

static json_t* eval(ctx* c, const jinja_node* d)
{
    json_t *a = NULL, *b = NULL, *r = NULL;
    args_t args;
    args.n = 0;
    if (c->failed || tick(c, d->line)) return NULL;
    if (c->depth > JINJA_MAX_DEPTH * 2) return fail(c, d->line, "nested too deep");
    switch (d->kind) {
    case JN_CONST: return d->value ? json_incref(d->value) : NULL;
    case JN_NAME: {
        static const char* const kFunctions[] = { "raise_exception", "strftime_now", "namespace", "range", "dict", NULL };
        int found, k;
        json_t* const v = lookup(c, d->name, &found);
        if (found) return v ? json_incref(v) : NULL;
        /* functions and macros are defined, as templates test them */
        for (k = 0; kFunctions[k]; k++)
            if (!strcmp(kFunctions[k], d->name)) return json_pack("s++", "<function ", d->name, ">");
        for (k = 0; k < c->nbMacros; k++)
            if (!strcmp(c->macros[k]->name, d->name)) return json_pack("s++", "<macro ", d->name, ">");
        return NULL;
    }
    case JN_ATTR:
        a = eval(c, d->a);
        if (c->failed) return NULL;
        if (!a) return fail(c, d->line, "'%s' of an undefined value", d->name);
        if (json_is_object(a)) { r = json_object_get(a, d->name); r = r ? json_incref(r) : NULL; }
        json_decref(a);
        return r;
    case JN_ITEM:
        a = eval(c, d->a);
        b = c->failed ? NULL : eval(c, d->b);
        if (!c->failed) r = get_item(c, a, b, d->line);
        json_decref(a);
        json_decref(b);
        return r;
    case JN_SLICE: {
        json_t* parts[3] = { NULL, NULL, NULL };
        int k;
        a = eval(c, d->a);
        for (k = 0; k < 3 && !c->failed; k++) parts[k] = eval(c, d->args[k]);
        if (!c->failed) r = slice(c, a, parts, d->line);
        for (k = 0; k < 3; k++) json_decref(parts[k]);
        json_decref(a);
        return r;
    }
    case JN_CALL:
        if (d->a->kind == JN_ATTR) {
            a = eval(c, d->a->a);
            if (!c->failed && !eval_args(c, d, &args)) r = call_method(c, a, d->a->name, &args, d->line);
            free_args(&args);
            json_decref(a);
            return r;
        }
        if (d->a->kind != JN_NAME) return fail(c, d->line, "only functions, macros and methods can be called");
        if (!eval_args(c, d, &args)) {
            c->depth++;
            r = call_global(c, d->a->name, &args, d->line);
            c->depth--;
        }
        free_args(&args);
        return r;
    case JN_FILTER:
        a = eval(c, d->a);
        if (!c->failed && !eval_args(c, d, &args)) r = apply_filter(c, d->name, a, &args, d->line);
        free_args(&args);
        json_decref(a);
        return r;
    case JN_TEST: {
        int t = -1;
        a = eval(c, d->a);
        if (!c->failed && !eval_args(c, d, &args)) t = run_test(c, d->name, a, &args, d->line);
        free_args(&args);
        json_decref(a);
        if (t < 0) return NULL;
        return json_boolean(d->op ? !t : t);
    }
    case JN_NEG:
        a = eval(c, d->a);
        if (a && json_is_integer(a)) r = json_integer(-json_integer_value(a));
        else if (a && json_is_real(a)) r = json_real(-json_real_value(a));
        else if (!c->failed) fail(c, d->line, "negating a %s", type_name(a));
        json_decref(a);
        return r;
    case JN_NOT:
        a = eval(c, d->a);
        if (c->failed) return NULL;
        r = json_boolean(!truthy(a));
        json_decref(a);
        return r;
    case JN_AND:
    case JN_OR:
        a = eval(c, d->a);
        if (c->failed) return NULL;
        if ((d->kind == JN_AND) != (truthy(a) != 0)) return a;
        json_decref(a);
        return eval(c, d->b);
    case JN_COND:
        a = eval(c, d->a);
        if (c->failed) return NULL;
        r = truthy(a) ? eval(c, d->b) : d->c ? eval(c, d->c) : NULL;
        json_decref(a);
        return r;
    case JN_CONCAT: {
        sbuf s = { NULL, 0, 0 };
        size_t k;
        sb_put(c, &s, "", 0, d->line);
        for (k = 0; k < d->nbArgs && !c->failed; k++) {
            a = eval(c, d->args[k]);
            if (!c->failed) to_str(c, &s, a, 0, d->line);
            json_decref(a);
        }
        if (c->failed) { free(s.p); return NULL; }
        return sb_value(c, &s, d->line);
    }
    case JN_LIST:
    case JN_DICT: {
        size_t k;
        r = d->kind == JN_LIST ? json_array() : json_object();
        if (!r) return fail(c, d->line, "out of memory");
        for (k = 0; k < d->nbArgs && !c->failed; k += d->kind == JN_LIST ? 1 : 2) {
            a = eval(c, d->args[k]);
            if (c->failed) break;
            if (d->kind == JN_LIST) json_array_append_new(r, a ? a : json_null());
            else {
                b = eval(c, d->args[k + 1]);
                if (!a || !json_is_string(a)) fail(c, d->line, "dict keys must be strings");
                else json_object_set_new(r, json_string_value(a), b ? b : json_null());
                if (c->failed) json_decref(b);
                json_decref(a);
            }
        }
        if (c->failed) { json_decref(r); return NULL; }
        return check_depth(c, r, d->line);
    }
    case JN_BINARY: {
        int t = -1;
        a = eval(c, d->a);
        b = c->failed ? NULL : eval(c, d->b);
        if (c->failed) { json_decref(a); json_decref(b); return NULL; }
        switch (d->op) {
        case JOP_EQ: r = json_boolean(equal(a, b, 0)); break;
        case JOP_NE: r = json_boolean(!equal(a, b, 0)); break;
        case JOP_LT: case JOP_LE: case JOP_GT: case JOP_GE:
            t = compare_values(c, d->op, a, b, d->line);
            if (t >= 0) r = json_boolean(t);
            break;
        case JOP_IN: case JOP_NOTIN:
            t = contains(c, b, a, d->line);
            if (t >= 0) r = json_boolean(d->op == JOP_IN ? t : !t);
            break;
        default: r = arith(c, d->op, a, b, d->line);
        }
        json_decref(a);
        json_decref(b);
        return r;
    }
    default: return fail(c, d->line, "a statement where a value was expected");
    }
}

/* ------------------------------------------------------------------------ */
/* Statements                                                               */
/* ------------------------------------------------------------------------ */

static int bind_targets(ctx* c, const jinja_node* d, json_t* item)
{
    size_t k;
    if (d->nbTargets == 1) return assign(c, d->targets[0], item ? json_incref(item) : NULL, d->line);
    if (!item || !json_is_array(item) || json_array_size(item) != d->nbTargets) {
        fail(c, d->line, "cannot unpack a %s into %zu loop variables", type_name(item), d->nbTargets);
        return 1;
    }
    for (k = 0; k < d->nbTargets; k++) if (assign(c, d->targets[k], json_incref(json_array_get(item, k)), d->line)) return 1;
    return 0;
}

static int exec_for(ctx* c, const jinja_node* d)
{
    json_t* const seq = eval(c, d->a);
    json_t *items, *loop;
    size_t i, n;
    if (c->failed) return 1;
    if (seq && json_is_null(seq)) { json_decref(seq); fail(c, d->line, "a none value is not iterable"); return 1; }
    items = as_list(c, seq, d->line);
    json_decref(seq);
    if (!items) return 1;
    if (d->b) {
        /* the loop's filter sees the loop variables, not `loop` */
        json_t* const kept = json_array();
        for (i = 0; kept && i < json_array_size(items) && !c->failed; i++) {
            json_t* v;
            if (push_scope(c, d->line)) break;
            if (!bind_targets(c, d, json_array_get(items, i)) && (v = eval(c, d->b), !c->failed)) {
                if (truthy(v)) json_array_append(kept, json_array_get(items, i));
                json_decref(v);
            }
            pop_scope(c);
        }
        json_decref(items);
        items = kept;
        if (c->failed || !items) { json_decref(items); return 1; }
    }
    n = json_array_size(items);
    /* one scope and one `loop` for the whole loop, emptied and updated at
     * each iteration (Jinja's loop is one object as well) */
    loop = json_object();
    if (!loop || push_scope(c, d->line)) { json_decref(loop); json_decref(items); return 1; }
    for (i = 0; i < n && !c->failed; i++) {
        json_t* const item = json_array_get(items, i);
        if (tick(c, d->line)) break;
        json_object_clear(c->scopes[c->nbScopes - 1]);
        json_object_set_new(loop, "index0", json_integer((json_int_t)i));
        json_object_set_new(loop, "index", json_integer((json_int_t)i + 1));
        json_object_set_new(loop, "revindex0", json_integer((json_int_t)(n - 1 - i)));
        json_object_set_new(loop, "revindex", json_integer((json_int_t)(n - i)));
        json_object_set_new(loop, "first", json_boolean(i == 0));
        json_object_set_new(loop, "last", json_boolean(i + 1 == n));
        json_object_set_new(loop, "length", json_integer((json_int_t)n));
        if (i) json_object_set(loop, "previtem", json_array_get(items, i - 1));
        if (i + 1 < n) json_object_set(loop, "nextitem", json_array_get(items, i + 1));
        else json_object_del(loop, "nextitem");
        assign(c, "loop", json_incref(loop), d->line);
        if (!bind_targets(c, d, item)) exec(c, d->body);
        c->cont = 0;
        if (c->brk) { c->brk = 0; break; }
    }
    pop_scope(c);
    json_object_clear(loop); /* it may hold itself, through previtem */
    json_decref(loop);
    json_decref(items);
    if (!c->failed && n == 0 && d->orelse) exec(c, d->orelse);
    return c->failed;
}

static int exec(ctx* c, const jinja_node* d)
{
    for (; d && !c->failed && !c->brk && !c->cont; d = d->next) {
        json_t* v;
        if (tick(c, d->line)) return 1;
        switch (d->kind) {
        case JN_TEXT: sb_put(c, c->out, json_string_value(d->value), json_string_length(d->value), d->line); break;
        case JN_OUTPUT:
            v = eval(c, d->a);
            if (!c->failed) to_str(c, c->out, v, 0, d->line);
            json_decref(v);
            break;
        case JN_IF:
            v = eval(c, d->a);
            if (!c->failed) exec(c, truthy(v) ? d->body : d->orelse);
            json_decref(v);
            break;
        case JN_FOR:
            c->depth++;
            exec_for(c, d);
            c->depth--;
            break;
        case JN_SET:
            v = eval(c, d->a);
            if (!c->failed) assign(c, d->name, v, d->line);
            else json_decref(v);
            break;
        case JN_SETATTR: {
            json_t* const ns = lookup(c, d->name, NULL);
            if (!ns || !is_namespace(c, ns)) { fail(c, d->line, "'%s' is not a namespace", d->name); break; }
            v = eval(c, d->a);
            if (c->failed) { json_decref(v); break; }
            v = check_depth(c, v ? v : json_null(), d->line);
            if (v == ns) { json_decref(v); fail(c, d->line, "a namespace cannot hold itself"); break; }
            if (v && json_object_set_new(ns, d->attr, v)) fail(c, d->line, "out of memory");
            break;
        }
        case JN_SETBLOCK: {
            sbuf b = { NULL, 0, 0 };
            sbuf* const saved = c->out;
            c->out = &b;
            sb_put(c, &b, "", 0, d->line);
            exec(c, d->body);
            c->out = saved;
            if (c->failed) { free(b.p); break; }
            v = sb_value(c, &b, d->line);
            if (v) assign(c, d->name, v, d->line);
            break;
        }
        case JN_MACRO:
            if (c->nbMacros == (int)(sizeof c->macros / sizeof c->macros[0])) { fail(c, d->line, "too many macros"); break; }
            c->macros[c->nbMacros++] = d;
            break;
        case JN_BREAK: c->brk = 1; break;
        case JN_CONTINUE: c->cont = 1; break;
        default: fail(c, d->line, "a value where a statement was expected");
        }
    }
    return c->failed;
}

char* jinja_render(const jinja_template* t, json_t* vars, const jinja_options* o, size_t* size, char* err,
                   size_t errCap)
{
    ctx c;
    sbuf out = { NULL, 0, 0 };
    char dummy[8];
    memset(&c, 0, sizeof c);
    c.o = o;
    c.err = err ? err : dummy;
    c.errCap = err ? errCap : sizeof dummy;
    c.out = &out;
    c.undef = json_object();
    c.namespaces = json_array();
    c.scopes[0] = json_incref(vars);
    c.scopes[1] = json_object();
    c.nbScopes = 2;
    if (!c.undef || !c.namespaces || !c.scopes[1]) fail(&c, 0, "out of memory");
    else if (!sb_put(&c, &out, "", 0, 0)) exec(&c, t->root);
    while (c.nbScopes > 0) pop_scope(&c);
    /* a namespace can hold itself (set ns.x = ns): empty them before freeing */
    {
        size_t i;
        for (i = 0; i < json_array_size(c.namespaces); i++) json_object_clear(json_array_get(c.namespaces, i));
    }
    json_decref(c.namespaces);
    json_decref(c.undef);
    if (c.failed) { free(out.p); return NULL; }
    *size = out.n;
    return out.p;
}

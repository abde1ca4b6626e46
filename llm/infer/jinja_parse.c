/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jinja_parse.c: a chat template's text to a tree of jinja_node: the lexer
 * (Jinja's, with trim_blocks and lstrip_blocks as transformers sets them)
 * and a recursive-descent parser with Jinja's precedence. Tags, filters and
 * tests outside the subset are refused here, with their line, so that a
 * template is never rendered in part.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja.h"

typedef enum { TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END, TK_NAME, TK_STRING, TK_INT, TK_FLOAT,
               TK_OP, TK_EOF } tok_type;

typedef struct {
    tok_type type;
    int line;
    char* text;  /* data, a name, an operator, a string's decoded value (malloc'ed) */
    size_t len;
    long long i;
    double f;
} token;

typedef struct {
    token* toks;
    size_t n, cap, pos;
    int depth;
    int failed;
    char* err;
    size_t errCap;
    jinja_node* all;
} parser;

void jinja_reason(char* err, size_t errCap, int line, const char* fmt, va_list ap)
{
    char msg[300];
    char* p;
    if (!err || !errCap) return;
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (p = msg; *p; p++) if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
    snprintf(err, errCap, "chat template line %d: %s", line, msg);
}

static int fail(parser* P, int line, const char* fmt, ...)
{
    if (!P->failed) {
        va_list ap;
        va_start(ap, fmt);
        jinja_reason(P->err, P->errCap, line, fmt, ap);
        va_end(ap);
    }
    P->failed = 1;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The lexer                                                                */
/* ------------------------------------------------------------------------ */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static token* push(parser* P, tok_type type, int line, const char* text, size_t len)
{
    token* t;
    if (P->n == P->cap) {
        size_t const cap = P->cap ? 2 * P->cap : 256;
        token* const d = (token*)realloc(P->toks, cap * sizeof(token));
        if (!d) { fail(P, line, "out of memory"); return NULL; }
        P->toks = d;
        P->cap = cap;
    }
    t = &P->toks[P->n++];
    memset(t, 0, sizeof *t);
    t->type = type;
    t->line = line;
    t->text = (char*)malloc(len + 1);
    if (!t->text) { P->n--; fail(P, line, "out of memory"); return NULL; }
    if (len) memcpy(t->text, text, len);
    t->text[len] = 0;
    t->len = len;
    return t;
}

static size_t put_utf8(char* o, unsigned long cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63)); o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string literal's body, decoded as Python's unicode-escape does (what
 * Jinja applies): unknown escapes keep their backslash. */
static int decode_string(parser* P, int line, const char* s, size_t n, token* t)
{
    char* o = (char*)malloc(n + 1);
    size_t i = 0, k = 0;
    if (!o) return fail(P, line, "out of memory");
    while (i < n) {
        char c = s[i++];
        if (c != '\\' || i == n) { o[k++] = c; continue; }
        c = s[i++];
        switch (c) {
        case '\n': break;
        case '\\': o[k++] = '\\'; break;
        case '\'': o[k++] = '\''; break;
        case '"': o[k++] = '"'; break;
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'v': o[k++] = '\v'; break;
        case 'x': case 'u': case 'U': {
            int const digits = c == 'x' ? 2 : c == 'u' ? 4 : 8, d0 = (int)i;
            unsigned long cp = 0;
            int d;
            for (d = 0; d < digits; d++) {
                int const h = i < n ? hexval(s[i]) : -1;
                if (h < 0) break;
                cp = cp * 16 + (unsigned long)h;
                i++;
            }
            if (d < digits || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
                free(o);
                (void)d0;
                return fail(P, line, "a bad \\%c escape in a string", c);
            }
            k += put_utf8(o + k, cp);
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                unsigned long cp = (unsigned long)(c - '0');
                int d;
                for (d = 1; d < 3 && i < n && s[i] >= '0' && s[i] <= '7'; d++) cp = cp * 8 + (unsigned long)(s[i++] - '0');
                k += put_utf8(o + k, cp);
            } else {
                o[k++] = '\\';
                o[k++] = c;
            }
        }
    }
    free(t->text);
    t->text = o;
    t->len = k;
    o[k] = 0;
    return 0;
}

/* The tokens inside {{ }} or {% %}, up to the tag's end at bracket depth 0.
 * Returns where the source goes on, or 0 after an error. */
static size_t lex_tag(parser* P, const char* s, size_t n, size_t i, int* line, int block, int* lineStarting)
{
    static const char* const kOps2[] = { "//", "**", "==", "!=", ">=", "<=" };
    char stack[JINJA_MAX_DEPTH];
    int depth = 0;
    int const open = *line;
    for (;;) {
        char c;
        size_t k;
        if (i >= n) { fail(P, open, "unclosed %s tag", block ? "{%" : "{{"); return 0; }
        c = s[i];
        if (depth == 0) {
            /* the end: "-%}" strips the whitespace after it, "%}" (trim_blocks) one newline */
            const char* const end = block ? "%}" : "}}";
            size_t const m = (c == '-' || (block && c == '+')) ? 1 : 0;
            if (i + m + 2 <= n && !memcmp(s + i + m, end, 2)) {
                if (!push(P, block ? TK_BLOCK_END : TK_VAR_END, *line, "", 0)) return 0;
                i += m + 2;
                *lineStarting = 0;
                if (m && c == '-') {
                    while (i < n && is_space(s[i])) { if (s[i] == '\n') (*line)++; *lineStarting = 1; i++; }
                    /* Jinja's rule: whether the match ends with a newline */
                    *lineStarting = i > 0 && s[i - 1] == '\n';
                } else if (block && !m && i < n && s[i] == '\n') {
                    i++;
                    (*line)++;
                    *lineStarting = 1;
                }
                return i;
            }
        }
        if (is_space(c)) { if (c == '\n') (*line)++; i++; continue; }
        if (is_alpha(c)) {
            for (k = i + 1; k < n && (is_alpha(s[k]) || is_digit(s[k])); k++) {}
            if (!push(P, TK_NAME, *line, s + i, k - i)) return 0;
            i = k;
            continue;
        }
        if (is_digit(c)) {
            token* t;
            int isFloat = 0;
            char buf[64];
            for (k = i; k < n && (is_digit(s[k]) || s[k] == '_'); k++) {}
            if (k + 1 < n && s[k] == '.' && is_digit(s[k + 1])) {
                isFloat = 1;
                for (k++; k < n && (is_digit(s[k]) || s[k] == '_'); k++) {}
            }
            if (k < n && (s[k] == 'e' || s[k] == 'E')) {
                size_t e = k + 1;
                if (e < n && (s[e] == '+' || s[e] == '-')) e++;
                if (e < n && is_digit(s[e])) {
                    isFloat = 1;
                    for (k = e; k < n && is_digit(s[k]); k++) {}
                }
            }
            if (k - i >= sizeof buf) { fail(P, *line, "a number too long"); return 0; }
            {
                size_t a, b = 0;
                for (a = i; a < k; a++) if (s[a] != '_') buf[b++] = s[a];
                buf[b] = 0;
            }
            t = push(P, isFloat ? TK_FLOAT : TK_INT, *line, s + i, k - i);
            if (!t) return 0;
            if (isFloat) t->f = strtod(buf, NULL);
            else {
                char* e;
                t->i = strtoll(buf, &e, 10);
                if (strlen(buf) > 18) { fail(P, *line, "an integer too large"); return 0; }
            }
            i = k;
            continue;
        }
        if (c == '\'' || c == '"') {
            int const l0 = *line;
            token* t;
            for (k = i + 1; k < n && s[k] != c; k++) {
                if (s[k] == '\\' && k + 1 < n) k++;
                if (s[k] == '\n') (*line)++;
            }
            if (k >= n) { fail(P, l0, "unclosed string"); return 0; }
            t = push(P, TK_STRING, l0, "", 0);
            if (!t || decode_string(P, l0, s + i + 1, k - i - 1, t)) return 0;
            i = k + 1;
            continue;
        }
        for (k = 0; k < sizeof kOps2 / sizeof kOps2[0]; k++)
            if (i + 1 < n && s[i] == kOps2[k][0] && s[i + 1] == kOps2[k][1]) break;
        if (k < sizeof kOps2 / sizeof kOps2[0]) {
            if (!push(P, TK_OP, *line, s + i, 2)) return 0;
            i += 2;
            continue;
        }
        if (!strchr("+-*/%~()[]{},.:|=<>", c)) { fail(P, *line, "unexpected character '%c'", c); return 0; }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == JINJA_MAX_DEPTH) { fail(P, *line, "brackets nested too deep"); return 0; }
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0 || stack[depth - 1] != c) { fail(P, *line, "unbalanced '%c'", c); return 0; }
            depth--;
        }
        if (!push(P, TK_OP, *line, s + i, 1)) return 0;
        i++;
    }
}

static int lex(parser* P, const char* s, size_t n)
{
    size_t i = 0;
    int line = 1, lineStarting = 1;
    while (i < n) {
        size_t t = i, dataEnd;
        char kind = 0, sign = 0;
        int const dataLine = line;
        /* the next tag */
        for (; t + 1 < n; t++)
            if (s[t] == '{' && (s[t + 1] == '{' || s[t + 1] == '%' || s[t + 1] == '#')) { kind = s[t + 1]; break; }
        if (!kind) t = n;
        dataEnd = t;
        if (kind && t + 2 < n && (s[t + 2] == '-' || s[t + 2] == '+')) sign = s[t + 2];
        if (sign == '-') {
            while (dataEnd > i && is_space(s[dataEnd - 1])) dataEnd--;
        } else if (kind && kind != '{' && sign != '+') {
            /* lstrip_blocks: the spaces before a block or comment tag alone on its line */
            size_t l = dataEnd;
            while (l > i && s[l - 1] != '\n') l--;
            if ((l > i || lineStarting) && l < dataEnd) {
                size_t k;
                for (k = l; k < dataEnd && is_space(s[k]); k++) {}
                if (k == dataEnd) dataEnd = l;
            }
        }
        {
            size_t k;
            for (k = i; k < t; k++) if (s[k] == '\n') line++;
        }
        if (dataEnd > i && !push(P, TK_DATA, dataLine, s + i, dataEnd - i)) return 1;
        if (!kind) break;
        i = t + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            size_t e = i;
            int const open = line;
            while (e + 1 < n && !(s[e] == '#' && s[e + 1] == '}')) { if (s[e] == '\n') line++; e++; }
            if (e + 1 >= n) return fail(P, open, "unclosed comment");
            lineStarting = 0;
            if (e > i && s[e - 1] == '-') {
                e += 2;
                while (e < n && is_space(s[e])) { if (s[e] == '\n') line++; e++; }
                lineStarting = s[e - 1] == '\n';
            } else if (e > i && s[e - 1] == '+') {
                e += 2;
            } else {
                e += 2;
                if (e < n && s[e] == '\n') { e++; line++; lineStarting = 1; }
            }
            i = e;
            continue;
        }
        if (!push(P, kind == '%' ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, line, "", 0)) return 1;
        i = lex_tag(P, s, n, i, &line, kind == '%', &lineStarting);
        if (!i) return 1;
    }
    return push(P, TK_EOF, line, "", 0) ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* The parser                                                               */
/* ------------------------------------------------------------------------ */

static token* cur(parser* P) { return &P->toks[P->pos]; }
static int is_op(parser* P, const char* op) { return cur(P)->type == TK_OP && !strcmp(cur(P)->text, op); }
static int is_name(parser* P, const char* name) { return cur(P)->type == TK_NAME && !strcmp(cur(P)->text, name); }
static int skip_op(parser* P, const char* op) { if (!is_op(P, op)) return 0; P->pos++; return 1; }
static int skip_name(parser* P, const char* name) { if (!is_name(P, name)) return 0; P->pos++; return 1; }

static const char* describe(const token* t)
{
    switch (t->type) {
    case TK_EOF: return "the end of the template";
    case TK_DATA: return "text";
    case TK_VAR_END: return "'}}'";
    case TK_BLOCK_END: return "'%}'";
    case TK_VAR_BEGIN: return "'{{'";
    case TK_BLOCK_BEGIN: return "'{%'";
    case TK_STRING: return "a string";
    default: return t->text;
    }
}

static int expect_op(parser* P, const char* op)
{
    if (skip_op(P, op)) return 0;
    return fail(P, cur(P)->line, "expected '%s', got %s", op, describe(cur(P)));
}

static int expect(parser* P, tok_type type, const char* what)
{
    if (cur(P)->type == type) { P->pos++; return 0; }
    return fail(P, cur(P)->line, "expected %s, got %s", what, describe(cur(P)));
}

static jinja_node* node(parser* P, jinja_kind kind, int line)
{
    jinja_node* const d = (jinja_node*)calloc(1, sizeof(jinja_node));
    if (!d) { fail(P, line, "out of memory"); return NULL; }
    d->kind = kind;
    d->line = line;
    d->all = P->all;
    P->all = d;
    return d;
}

static char* dup(parser* P, const char* s)
{
    size_t const n = strlen(s);
    char* const d = (char*)malloc(n + 1);
    if (!d) { fail(P, 0, "out of memory"); return NULL; }
    memcpy(d, s, n + 1);
    return d;
}

static int add_arg(parser* P, jinja_node* d, jinja_node* a, const char* kw)
{
    jinja_node** args;
    char** kws;
    if (!a) return 1;
    args = (jinja_node**)realloc(d->args, (d->nbArgs + 1) * sizeof *args);
    if (!args) return fail(P, d->line, "out of memory");
    d->args = args;
    kws = (char**)realloc(d->kwNames, (d->nbArgs + 1) * sizeof *kws);
    if (!kws) return fail(P, d->line, "out of memory");
    d->kwNames = kws;
    d->args[d->nbArgs] = a;
    d->kwNames[d->nbArgs] = NULL;
    d->nbArgs++;
    if (kw && !(d->kwNames[d->nbArgs - 1] = dup(P, kw))) return 1;
    return 0;
}

static int add_target(parser* P, jinja_node* d, const char* name)
{
    char** t = (char**)realloc(d->targets, (d->nbTargets + 1) * sizeof *t);
    if (!t) return fail(P, d->line, "out of memory");
    d->targets = t;
    d->targets[d->nbTargets] = dup(P, name);
    if (!d->targets[d->nbTargets]) return 1;
    d->nbTargets++;
    return 0;
}

static jinja_node* expr(parser* P, int withCond);
static jinja_node* unary(parser* P, int withFilter);

static int enter(parser* P)
{
    if (++P->depth > JINJA_MAX_DEPTH) return fail(P, cur(P)->line, "nested deeper than %d", JINJA_MAX_DEPTH);
    return 0;
}

/* (args) of a call, a filter or a test, after its '(' */
static int call_args(parser* P, jinja_node* d)
{
    while (!skip_op(P, ")")) {
        const char* kw = NULL;
        if (d->nbArgs && expect_op(P, ",")) return 1;
        if (skip_op(P, ")")) break;
        if (is_op(P, "*") || is_op(P, "**")) return fail(P, cur(P)->line, "*args and **kwargs are not supported");
        if (cur(P)->type == TK_NAME && P->toks[P->pos + 1].type == TK_OP && !strcmp(P->toks[P->pos + 1].text, "=")) {
            kw = cur(P)->text;
            P->pos += 2;
        } else if (d->nbArgs && d->kwNames[d->nbArgs - 1]) {
            return fail(P, cur(P)->line, "a positional argument after a keyword argument");
        }
        if (add_arg(P, d, expr(P, 1), kw)) return 1;
    }
    return 0;
}

static jinja_node* constant(parser* P, json_t* v, int line)
{
    jinja_node* const d = node(P, JN_CONST, line);
    if (!v) { fail(P, line, "out of memory"); return NULL; }
    if (!d) { json_decref(v); return NULL; }
    d->value = v;
    return d;
}

static jinja_node* primary(parser* P)
{
    token* const t = cur(P);
    jinja_node* d;
    if (t->type == TK_NAME) {
        P->pos++;
        if (!strcmp(t->text, "true") || !strcmp(t->text, "True")) return constant(P, json_true(), t->line);
        if (!strcmp(t->text, "false") || !strcmp(t->text, "False")) return constant(P, json_false(), t->line);
        if (!strcmp(t->text, "none") || !strcmp(t->text, "None")) return constant(P, json_null(), t->line);
        d = node(P, JN_NAME, t->line);
        if (d && !(d->name = dup(P, t->text))) return NULL;
        return d;
    }
    if (t->type == TK_STRING) {
        /* adjacent strings are one */
        size_t len = 0, k;
        char* s;
        json_t* v;
        for (k = P->pos; P->toks[k].type == TK_STRING; k++) len += P->toks[k].len;
        s = (char*)malloc(len + 1);
        if (!s) { fail(P, t->line, "out of memory"); return NULL; }
        len = 0;
        for (; cur(P)->type == TK_STRING; P->pos++) {
            memcpy(s + len, cur(P)->text, cur(P)->len);
            len += cur(P)->len;
        }
        v = json_stringn_nocheck(s, len);
        free(s);
        return constant(P, v, t->line);
    }
    if (t->type == TK_INT) { P->pos++; return constant(P, json_integer(t->i), t->line); }
    if (t->type == TK_FLOAT) { P->pos++; return constant(P, json_real(t->f), t->line); }
    if (skip_op(P, "(")) {
        jinja_node* e;
        if (skip_op(P, ")")) return constant(P, json_array(), t->line); /* () */
        e = expr(P, 1);
        if (!e) return NULL;
        if (is_op(P, ",")) {
            /* a tuple: a list to the renderer */
            d = node(P, JN_LIST, t->line);
            if (!d || add_arg(P, d, e, NULL)) return NULL;
            while (skip_op(P, ",") && !is_op(P, ")"))
                if (add_arg(P, d, expr(P, 1), NULL)) return NULL;
            e = d;
        }
        return expect_op(P, ")") ? NULL : e;
    }
    if (skip_op(P, "[")) {
        d = node(P, JN_LIST, t->line);
        if (!d) return NULL;
        while (!skip_op(P, "]")) {
            if (d->nbArgs && expect_op(P, ",")) return NULL;
            if (skip_op(P, "]")) break;
            if (add_arg(P, d, expr(P, 1), NULL)) return NULL;
        }
        return d;
    }
    if (skip_op(P, "{")) {
        d = node(P, JN_DICT, t->line);
        if (!d) return NULL;
        while (!skip_op(P, "}")) {
            if (d->nbArgs && expect_op(P, ",")) return NULL;
            if (skip_op(P, "}")) break;
            if (add_arg(P, d, expr(P, 1), NULL) || expect_op(P, ":") || add_arg(P, d, expr(P, 1), NULL)) return NULL;
        }
        return d;
    }
    fail(P, t->line, "unexpected %s", describe(t));
    return NULL;
}

static jinja_node* postfix(parser* P, jinja_node* d)
{
    while (d) {
        int const line = cur(P)->line;
        if (skip_op(P, ".")) {
            token* const t = cur(P);
            jinja_node* const e = node(P, t->type == TK_INT ? JN_ITEM : JN_ATTR, line);
            if (!e) return NULL;
            e->a = d;
            if (t->type == TK_NAME) { if (!(e->name = dup(P, t->text))) return NULL; }
            else if (t->type == TK_INT) { if (!(e->b = constant(P, json_integer(t->i), line))) return NULL; }
            else { fail(P, line, "expected an attribute name after '.'"); return NULL; }
            P->pos++;
            d = e;
        } else if (skip_op(P, "[")) {
            jinja_node* parts[3] = { NULL, NULL, NULL };
            int colons = 0;
            jinja_node* e;
            if (!is_op(P, ":") && !(parts[0] = expr(P, 1))) return NULL;
            while (colons < 2 && skip_op(P, ":")) {
                colons++;
                if (!is_op(P, ":") && !is_op(P, "]") && !(parts[colons] = expr(P, 1))) return NULL;
            }
            if (is_op(P, ",")) { fail(P, line, "tuple subscripts are not supported"); return NULL; }
            if (expect_op(P, "]")) return NULL;
            e = node(P, colons ? JN_SLICE : JN_ITEM, line);
            if (!e) return NULL;
            e->a = d;
            if (colons) {
                int k;
                for (k = 0; k < 3; k++) {
                    /* absent parts are null constants */
                    jinja_node* const p = parts[k] ? parts[k] : constant(P, json_null(), line);
                    if (add_arg(P, e, p, NULL)) return NULL;
                }
            } else {
                e->b = parts[0];
            }
            d = e;
        } else if (skip_op(P, "(")) {
            jinja_node* const e = node(P, JN_CALL, line);
            if (!e) return NULL;
            e->a = d;
            if (call_args(P, e)) return NULL;
            d = e;
        } else {
            break;
        }
    }
    return d;
}

static jinja_node* filters(parser* P, jinja_node* d)
{
    while (d) {
        int const line = cur(P)->line;
        if (skip_op(P, "|")) {
            jinja_node* const e = node(P, JN_FILTER, line);
            if (!e) return NULL;
            if (cur(P)->type != TK_NAME) { fail(P, line, "expected a filter name after '|'"); return NULL; }
            if (!jinja_knownFilter(cur(P)->text)) { fail(P, line, "unsupported filter '%s'", cur(P)->text); return NULL; }
            if (!(e->name = dup(P, cur(P)->text))) return NULL;
            P->pos++;
            e->a = d;
            if (skip_op(P, "(") && call_args(P, e)) return NULL;
            d = e;
        } else if (skip_name(P, "is")) {
            jinja_node* const e = node(P, JN_TEST, line);
            token* t;
            if (!e) return NULL;
            e->op = skip_name(P, "not");
            t = cur(P);
            if (t->type != TK_NAME && !(t->type == TK_OP && (!strcmp(t->text, "==") || !strcmp(t->text, "!=") ||
                                                            !strcmp(t->text, "<") || !strcmp(t->text, ">"))))
                { fail(P, line, "expected a test name after 'is'"); return NULL; }
            if (!jinja_knownTest(t->text)) { fail(P, line, "unsupported test '%s'", t->text); return NULL; }
            if (!(e->name = dup(P, t->text))) return NULL;
            P->pos++;
            e->a = d;
            if (skip_op(P, "(")) {
                if (call_args(P, e)) return NULL;
            } else {
                t = cur(P);
                if ((t->type == TK_NAME || t->type == TK_STRING || t->type == TK_INT || t->type == TK_FLOAT ||
                     (t->type == TK_OP && (!strcmp(t->text, "(") || !strcmp(t->text, "[") || !strcmp(t->text, "{")))) &&
                    !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and")) {
                    if (is_name(P, "is")) { fail(P, line, "'is' after a test"); return NULL; }
                    if (add_arg(P, e, postfix(P, primary(P)), NULL)) return NULL;
                }
            }
            d = e;
        } else if (skip_op(P, "(")) {
            jinja_node* const e = node(P, JN_CALL, line);
            if (!e) return NULL;
            e->a = d;
            if (call_args(P, e)) return NULL;
            d = e;
        } else {
            break;
        }
    }
    return d;
}

static jinja_node* unary(parser* P, int withFilter)
{
    int const line = cur(P)->line;
    jinja_node* d;
    if (enter(P)) return NULL;
    if (skip_op(P, "-")) {
        d = node(P, JN_NEG, line);
        if (d && !(d->a = unary(P, 0))) d = NULL;
    } else if (skip_op(P, "+")) {
        d = unary(P, 0);
    } else {
        d = postfix(P, primary(P));
    }
    if (withFilter) d = filters(P, d);
    P->depth--;
    return d;
}

static jinja_node* binary(parser* P, int op, jinja_node* a, jinja_node* b, int line)
{
    jinja_node* d;
    if (!a || !b) return NULL;
    d = node(P, JN_BINARY, line);
    if (!d) return NULL;
    d->op = op;
    d->a = a;
    d->b = b;
    return d;
}

static jinja_node* power(parser* P)
{
    jinja_node* d = unary(P, 1);
    while (d && is_op(P, "**")) {
        int const line = cur(P)->line;
        P->pos++;
        d = binary(P, JOP_POW, d, unary(P, 1), line);
    }
    return d;
}

static jinja_node* math2(parser* P)
{
    jinja_node* d = power(P);
    for (;;) {
        int const line = cur(P)->line;
        int op;
        if (skip_op(P, "*")) op = JOP_MUL;
        else if (skip_op(P, "/")) op = JOP_DIV;
        else if (skip_op(P, "//")) op = JOP_FLOORDIV;
        else if (skip_op(P, "%")) op = JOP_MOD;
        else return d;
        d = binary(P, op, d, power(P), line);
    }
}

static jinja_node* concat(parser* P)
{
    jinja_node* d = math2(P);
    jinja_node* c;
    if (!d || !is_op(P, "~")) return d;
    c = node(P, JN_CONCAT, cur(P)->line);
    if (!c || add_arg(P, c, d, NULL)) return NULL;
    while (skip_op(P, "~")) if (add_arg(P, c, math2(P), NULL)) return NULL;
    return c;
}

static jinja_node* math1(parser* P)
{
    jinja_node* d = concat(P);
    for (;;) {
        int const line = cur(P)->line;
        int op;
        if (skip_op(P, "+")) op = JOP_ADD;
        else if (skip_op(P, "-")) op = JOP_SUB;
        else return d;
        d = binary(P, op, d, concat(P), line);
    }
}

static jinja_node* compare(parser* P)
{
    jinja_node* d = math1(P);
    jinja_node* last = d; /* a < b < c: (a < b) and (b < c) */
    jinja_node* chain = NULL;
    for (;;) {
        int const line = cur(P)->line;
        int op;
        jinja_node *right, *cmp;
        if (skip_op(P, "==")) op = JOP_EQ;
        else if (skip_op(P, "!=")) op = JOP_NE;
        else if (skip_op(P, "<")) op = JOP_LT;
        else if (skip_op(P, "<=")) op = JOP_LE;
        else if (skip_op(P, ">")) op = JOP_GT;
        else if (skip_op(P, ">=")) op = JOP_GE;
        else if (skip_name(P, "in")) op = JOP_IN;
        else if (is_name(P, "not") && P->toks[P->pos + 1].type == TK_NAME && !strcmp(P->toks[P->pos + 1].text, "in")) {
            P->pos += 2;
            op = JOP_NOTIN;
        } else {
            return chain ? chain : d;
        }
        right = math1(P);
        cmp = binary(P, op, last, right, line);
        if (!cmp) return NULL;
        if (!chain) chain = cmp;
        else {
            jinja_node* const a = node(P, JN_AND, line);
            if (!a) return NULL;
            a->a = chain;
            a->b = cmp;
            chain = a;
        }
        last = right;
    }
}

static jinja_node* not_(parser* P)
{
    if (is_name(P, "not")) {
        jinja_node* const d = node(P, JN_NOT, cur(P)->line);
        P->pos++;
        if (!d || enter(P)) return NULL;
        d->a = not_(P);
        P->depth--;
        return d->a ? d : NULL;
    }
    return compare(P);
}

static jinja_node* logic(parser* P, jinja_kind kind)
{
    jinja_node* d = kind == JN_OR ? logic(P, JN_AND) : not_(P);
    while (d && is_name(P, kind == JN_OR ? "or" : "and")) {
        jinja_node* const e = node(P, kind, cur(P)->line);
        P->pos++;
        if (!e) return NULL;
        e->a = d;
        if (!(e->b = kind == JN_OR ? logic(P, JN_AND) : not_(P))) return NULL;
        d = e;
    }
    return d;
}

static jinja_node* expr(parser* P, int withCond)
{
    jinja_node* d;
    if (enter(P)) return NULL;
    d = logic(P, JN_OR);
    while (withCond && d && is_name(P, "if")) {
        jinja_node* const e = node(P, JN_COND, cur(P)->line);
        P->pos++;
        if (!e) return NULL;
        e->b = d; /* the value when true */
        if (!(e->a = logic(P, JN_OR))) return NULL;
        if (skip_name(P, "else") && !(e->c = expr(P, 1))) return NULL;
        d = e;
    }
    P->depth--;
    return d;
}

/* ------------------------------------------------------------------------ */
/* Statements                                                               */
/* ------------------------------------------------------------------------ */

/* Statements up to a {% NAME %} with NAME among ends (the tag's name is left
 * current), or to the end of the template when ends is NULL. */
static jinja_node* statements(parser* P, const char* const* ends, const char* opener, int openLine);

static int block_end(parser* P) { return expect(P, TK_BLOCK_END, "'%}'"); }

static jinja_node* stmt_if(parser* P, int line)
{
    static const char* const kEnds[] = { "elif", "else", "endif", NULL };
    jinja_node* const d = node(P, JN_IF, line);
    if (!d || !(d->a = expr(P, 1)) || block_end(P)) return NULL;
    d->body = statements(P, kEnds, "if", line);
    if (P->failed) return NULL;
    if (skip_name(P, "elif")) {
        if (!(d->orelse = stmt_if(P, cur(P)->line))) return NULL;
        return d; /* the innermost elif consumed endif */
    }
    if (skip_name(P, "else")) {
        static const char* const kEnd[] = { "endif", NULL };
        if (block_end(P)) return NULL;
        d->orelse = statements(P, kEnd, "if", line);
        if (P->failed) return NULL;
    }
    if (!skip_name(P, "endif") || block_end(P)) return NULL;
    return d;
}

static jinja_node* stmt_for(parser* P, int line)
{
    static const char* const kEnds[] = { "else", "endfor", NULL };
    jinja_node* const d = node(P, JN_FOR, line);
    if (!d) return NULL;
    do {
        if (cur(P)->type != TK_NAME) { fail(P, cur(P)->line, "expected a loop variable"); return NULL; }
        if (add_target(P, d, cur(P)->text)) return NULL;
        P->pos++;
    } while (skip_op(P, ","));
    if (!skip_name(P, "in")) { fail(P, cur(P)->line, "expected 'in' in a for loop"); return NULL; }
    if (!(d->a = expr(P, 0))) return NULL;
    if (skip_name(P, "if") && !(d->b = expr(P, 1))) return NULL;
    if (is_name(P, "recursive")) { fail(P, cur(P)->line, "recursive loops are not supported"); return NULL; }
    if (block_end(P)) return NULL;
    d->body = statements(P, kEnds, "for", line);
    if (P->failed) return NULL;
    if (skip_name(P, "else")) {
        static const char* const kEnd[] = { "endfor", NULL };
        if (block_end(P)) return NULL;
        d->orelse = statements(P, kEnd, "for", line);
        if (P->failed) return NULL;
    }
    if (!skip_name(P, "endfor") || block_end(P)) return NULL;
    return d;
}

static jinja_node* stmt_set(parser* P, int line)
{
    jinja_node* d;
    token* const t = cur(P);
    if (t->type != TK_NAME) { fail(P, line, "expected a name after 'set'"); return NULL; }
    P->pos++;
    if (skip_op(P, ".")) {
        d = node(P, JN_SETATTR, line);
        if (!d || !(d->name = dup(P, t->text))) return NULL;
        if (cur(P)->type != TK_NAME) { fail(P, line, "expected an attribute name"); return NULL; }
        if (!(d->attr = dup(P, cur(P)->text))) return NULL;
        P->pos++;
        if (expect_op(P, "=") || !(d->a = expr(P, 1))) return NULL;
    } else if (is_op(P, ",")) {
        fail(P, line, "'set' of several names is not supported");
        return NULL;
    } else if (cur(P)->type == TK_BLOCK_END) {
        static const char* const kEnd[] = { "endset", NULL };
        d = node(P, JN_SETBLOCK, line);
        if (!d || !(d->name = dup(P, t->text))) return NULL;
        P->pos++;
        d->body = statements(P, kEnd, "set", line);
        if (P->failed || !skip_name(P, "endset")) return NULL;
    } else {
        d = node(P, JN_SET, line);
        if (!d || !(d->name = dup(P, t->text))) return NULL;
        if (is_op(P, "|")) { fail(P, line, "filtered 'set' blocks are not supported"); return NULL; }
        if (expect_op(P, "=") || !(d->a = expr(P, 1))) return NULL;
        if (is_op(P, ",")) { fail(P, line, "'set' of a tuple is not supported"); return NULL; }
    }
    return block_end(P) ? NULL : d;
}

static jinja_node* stmt_macro(parser* P, int line)
{
    static const char* const kEnd[] = { "endmacro", NULL };
    jinja_node* const d = node(P, JN_MACRO, line);
    if (!d) return NULL;
    if (cur(P)->type != TK_NAME) { fail(P, line, "expected a macro name"); return NULL; }
    if (!(d->name = dup(P, cur(P)->text))) return NULL;
    P->pos++;
    if (expect_op(P, "(")) return NULL;
    while (!skip_op(P, ")")) {
        jinja_node* def;
        if (d->nbTargets && expect_op(P, ",")) return NULL;
        if (cur(P)->type != TK_NAME) { fail(P, cur(P)->line, "expected a parameter name"); return NULL; }
        if (add_target(P, d, cur(P)->text)) return NULL;
        P->pos++;
        if (skip_op(P, "=")) def = expr(P, 1);
        else def = node(P, JN_CONST, line); /* no default: value stays NULL, undefined */
        if (add_arg(P, d, def, NULL)) return NULL;
    }
    if (block_end(P)) return NULL;
    d->body = statements(P, kEnd, "macro", line);
    if (P->failed || !skip_name(P, "endmacro")) return NULL;
    /* {% endmacro name %} is allowed by Jinja */
    if (cur(P)->type == TK_NAME) P->pos++;
    return block_end(P) ? NULL : d;
}

static jinja_node* statements(parser* P, const char* const* ends, const char* opener, int openLine)
{
    jinja_node *head = NULL, **tail = &head;
    if (enter(P)) return NULL;
    for (;;) {
        token* const t = cur(P);
        jinja_node* d = NULL;
        if (t->type == TK_EOF) {
            if (ends) fail(P, openLine, "unclosed '%s' tag (no 'end%s')", opener, opener);
            break;
        }
        if (t->type == TK_DATA) {
            d = node(P, JN_TEXT, t->line);
            if (d) d->value = json_stringn_nocheck(t->text, t->len);
            if (d && !d->value) { fail(P, t->line, "out of memory"); d = NULL; }
            P->pos++;
        } else if (t->type == TK_VAR_BEGIN) {
            P->pos++;
            d = node(P, JN_OUTPUT, t->line);
            if (d && (!(d->a = expr(P, 1)) || expect(P, TK_VAR_END, "'}}'"))) d = NULL;
        } else if (t->type == TK_BLOCK_BEGIN) {
            token* const name = &P->toks[P->pos + 1];
            size_t k;
            if (name->type != TK_NAME) { fail(P, name->line, "expected a tag name after '{%%'"); break; }
            for (k = 0; ends && ends[k]; k++)
                if (!strcmp(name->text, ends[k])) { P->pos++; P->depth--; return head; }
            P->pos += 2;
            if (!strcmp(name->text, "if")) d = stmt_if(P, name->line);
            else if (!strcmp(name->text, "for")) d = stmt_for(P, name->line);
            else if (!strcmp(name->text, "set")) d = stmt_set(P, name->line);
            else if (!strcmp(name->text, "macro")) d = stmt_macro(P, name->line);
            else if (!strcmp(name->text, "break") || !strcmp(name->text, "continue")) {
                d = node(P, name->text[0] == 'b' ? JN_BREAK : JN_CONTINUE, name->line);
                if (d && block_end(P)) d = NULL;
            } else if (!strncmp(name->text, "end", 3) || !strcmp(name->text, "else") || !strcmp(name->text, "elif")) {
                fail(P, name->line, "'%s' without its opening tag", name->text);
            } else {
                fail(P, name->line, "unsupported tag '%s'", name->text);
            }
        } else {
            fail(P, t->line, "unexpected %s", describe(t));
        }
        if (!d || P->failed) { fail(P, t->line, "cannot parse"); break; }
        *tail = d;
        tail = &d->next;
    }
    P->depth--;
    return head;
}

/* ------------------------------------------------------------------------ */

void jinja_free(jinja_template* t)
{
    jinja_node* d;
    if (!t) return;
    d = t->all;
    while (d) {
        jinja_node* const next = d->all;
        size_t k;
        json_decref(d->value);
        free(d->name);
        free(d->attr);
        for (k = 0; k < d->nbArgs; k++) free(d->kwNames[k]);
        free(d->args);
        free(d->kwNames);
        for (k = 0; k < d->nbTargets; k++) free(d->targets[k]);
        free(d->targets);
        free(d);
        d = next;
    }
    free(t);
}

jinja_template* jinja_parse(const char* source, size_t size, char* err, size_t errCap)
{
    parser P;
    jinja_template* t = NULL;
    char* src = (char*)malloc(size + 1);
    size_t i, n = 0;
    char dummy[8];
    memset(&P, 0, sizeof P);
    P.err = err ? err : dummy;
    P.errCap = err ? errCap : sizeof dummy;
    if (!src) { fail(&P, 0, "out of memory"); return NULL; }
    /* Jinja's newlines: \r\n and \r become \n; one trailing newline goes */
    for (i = 0; i < size; i++) {
        if (source[i] == '\r') {
            src[n++] = '\n';
            if (i + 1 < size && source[i + 1] == '\n') i++;
        } else {
            src[n++] = source[i];
        }
    }
    if (n && src[n - 1] == '\n') n--;
    t = (jinja_template*)calloc(1, sizeof *t);
    if (!t) fail(&P, 0, "out of memory");
    else if (!lex(&P, src, n)) t->root = statements(&P, NULL, NULL, 0);
    if (t) t->all = P.all;
    if (t && P.failed) {
        jinja_free(t);
        t = NULL;
    }
    for (i = 0; i < P.n; i++) free(P.toks[i].text);
    free(P.toks);
    free(src);
    return t;
}

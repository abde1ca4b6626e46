/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jinja.h: the subset of Jinja that models' chat templates are written in,
 * parsed (jinja_parse.c) and rendered over jansson values (jinja_render.c)
 * as transformers' apply_chat_template renders them: trim_blocks and
 * lstrip_blocks on, a single trailing newline of the source dropped.
 * What the subset lacks is refused with a one-line reason naming the
 * construct and its line, at parse time where it can be seen there.
 */
#ifndef GLYD_JINJA_H
#define GLYD_JINJA_H

#include <stdarg.h>
#include <stddef.h>

#include <jansson.h>

/* Bounds against hostile templates. */
#define JINJA_MAX_DEPTH 64          /* nesting of statements, expressions, values, macro calls */
#define JINJA_MAX_OUTPUT (16u << 20) /* bytes rendered, and any one string built */
#define JINJA_MAX_STEPS 1000000UL   /* expressions evaluated and loop iterations, together */

typedef enum {
    /* statements */
    JN_TEXT, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SETATTR, JN_SETBLOCK, JN_MACRO, JN_BREAK, JN_CONTINUE,
    /* expressions */
    JN_CONST, JN_NAME, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST, JN_NEG, JN_NOT, JN_BINARY,
    JN_AND, JN_OR, JN_COND, JN_LIST, JN_DICT, JN_CONCAT
} jinja_kind;

/* JN_BINARY's operators */
enum { JOP_ADD, JOP_SUB, JOP_MUL, JOP_DIV, JOP_FLOORDIV, JOP_MOD, JOP_POW, JOP_EQ, JOP_NE, JOP_LT, JOP_LE, JOP_GT,
       JOP_GE, JOP_IN, JOP_NOTIN };

typedef struct jinja_node jinja_node;
struct jinja_node {
    jinja_kind kind;
    int op;            /* JN_BINARY: JOP_*; JN_TEST: 1 when negated */
    int line;
    json_t* value;     /* JN_CONST */
    char* name;        /* a variable, attribute, filter, test, macro or set target */
    char* attr;        /* JN_SETATTR: the attribute set */
    jinja_node *a, *b, *c; /* operands; JN_IF: condition; JN_FOR: iterable, b its filter */
    jinja_node** args; /* call, filter and test arguments; list items; dict keys and values in turn */
    char** kwNames;    /* per argument: its keyword, or NULL when positional */
    size_t nbArgs;
    char** targets;    /* JN_FOR's loop variables; JN_MACRO's parameters (defaults in args) */
    size_t nbTargets;
    jinja_node* body;  /* statements, chained by next */
    jinja_node* orelse;
    jinja_node* next;
    jinja_node* all;   /* every node of a template, for freeing */
};

typedef struct {
    jinja_node* root;
    jinja_node* all;
} jinja_template;

/** Parses a template; NULL with a one-line reason in err on failure. */
jinja_template* jinja_parse(const char* source, size_t size, char* err, size_t errCap);
void jinja_free(jinja_template* t);
/* Whether the renderer knows a filter, a test (checked as they are parsed). */
int jinja_knownFilter(const char* name);
int jinja_knownTest(const char* name);
/* err (errCap bytes) = "chat template line LINE: " and the message of fmt,
 * on one line: a control character (a newline in a string the template
 * raised, say) becomes a space. */
void jinja_reason(char* err, size_t errCap, int line, const char* fmt, va_list ap);

typedef struct {
    int fixedTime;        /* strftime_now formats `time` (seconds since the epoch, as UTC) */
    long long time;       /* ...rather than the local time now */
} jinja_options;

/** Renders with vars (a JSON object: the template's variables, not
 *  changed). Returns the text (malloc'ed, NUL-terminated, *size bytes), or
 *  NULL with a one-line reason in err. */
char* jinja_render(const jinja_template* t, json_t* vars, const jinja_options* o, size_t* size, char* err,
                   size_t errCap);

#endif /* GLYD_JINJA_H */

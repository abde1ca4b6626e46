/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_shapes.c: which tokens of a line vary, learned from the text. Lines
 * with the same delimiters in the same order share a shape; a token
 * position of a shape varies when its lines do not all hold the same
 * token there. A word there (a package's name, a character's) is then a
 * variable, as a number always is, instead of making a template of each
 * line. Only the encoder asks: the columns do not depend on how variables
 * were chosen.
 */
#include <stdlib.h>

#include "records.h"

typedef struct {
    uint64_t key;        /* the delimiters' hash */
    size_t tokens;       /* per line */
    size_t lines;
    size_t first;        /* its positions' first values and flags: [first, first + tokens) */
} shape;

struct glyd_logShapes_s {
    uint32_t* lineShape; /* per line, its shape */
    shape* shapes;
    size_t count, cap;
    uint32_t* table;     /* shape number + 1, 0 empty */
    size_t tableSize;    /* a power of 2 */
    const uint8_t** value; /* per position of a shape: its first line's token */
    size_t* length;
    uint8_t* varies;
    size_t positions, positionCap;
};

/* The line's delimiters in order, tokens marked, hashed; its token count.
 * The first `cap` tokens' starts and ends go to bounds, two by two. */
static uint64_t skeleton(const glyd_logTokens* t, const uint8_t* p, const uint8_t* end, size_t* tokens,
                         const uint8_t** bounds, size_t cap)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    size_t n = 0;
    while (p < end) {
        if (t->delimiter[*p]) {
            h = (h ^ *p) * 0x100000001B3ULL;
            p++;
        } else {
            const uint8_t* const start = p;
            p = glyd_logTokenEnd(t, p, end);
            if (n < cap) {
                bounds[2 * n] = start;
                bounds[2 * n + 1] = p;
            }
            h = (h ^ 0x100) * 0x100000001B3ULL;
            n++;
        }
    }
    *tokens = n;
    return h ^ n;
}

static int grow_table(glyd_logShapes* s)
{
    size_t const size = s->tableSize ? 2 * s->tableSize : 1024;
    uint32_t* const table = (uint32_t*)calloc(size, sizeof(uint32_t));
    size_t i;
    if (!table) return 0;
    for (i = 0; i < s->count; i++) {
        size_t j = (size_t)s->shapes[i].key & (size - 1);
        while (table[j]) j = (j + 1) & (size - 1);
        table[j] = (uint32_t)(i + 1);
    }
    free(s->table);
    s->table = table;
    s->tableSize = size;
    return 1;
}

/* The shape of key with `tokens` tokens, or NULL; *slot: where in the
 * table it is, or would go. */
static shape* lookup(const glyd_logShapes* s, uint64_t key, size_t tokens, size_t* slot)
{
    size_t j;
    if (!s->tableSize) return NULL;
    for (j = (size_t)key & (s->tableSize - 1); s->table[j]; j = (j + 1) & (s->tableSize - 1)) {
        shape* const sh = &s->shapes[s->table[j] - 1];
        if (sh->key == key && sh->tokens == tokens) return sh;
    }
    *slot = j;
    return NULL;
}

/* The shape of key with `tokens` tokens, made if new; NULL when memory
 * runs out. */
static shape* find_or_add(glyd_logShapes* s, uint64_t key, size_t tokens)
{
    size_t j = 0;
    shape* sh;
    if (2 * (s->count + 1) > s->tableSize && (s->count >= UINT32_MAX - 1 || !grow_table(s))) return NULL;
    sh = lookup(s, key, tokens, &j);
    if (sh) return sh;
    if (s->count == s->cap) {
        size_t const cap = s->cap ? 2 * s->cap : 256;
        shape* const shapes = (shape*)realloc(s->shapes, cap * sizeof(shape));
        if (!shapes) return NULL;
        s->shapes = shapes;
        s->cap = cap;
    }
    if (s->positions + tokens > s->positionCap) {
        size_t cap = s->positionCap ? s->positionCap : 1024;
        const uint8_t** value;
        size_t* length;
        uint8_t* varies;
        while (cap < s->positions + tokens) cap *= 2;
        value = (const uint8_t**)realloc(s->value, cap * sizeof(*value));
        if (value) s->value = value;
        length = (size_t*)realloc(s->length, cap * sizeof(*length));
        if (length) s->length = length;
        varies = (uint8_t*)realloc(s->varies, cap);
        if (varies) s->varies = varies;
        if (!value || !length || !varies) return NULL;
        s->positionCap = cap;
    }
    sh = &s->shapes[s->count];
    sh->key = key;
    sh->tokens = tokens;
    sh->lines = 0;
    sh->first = s->positions;
    if (tokens) memset(s->varies + s->positions, 0, tokens);
    s->positions += tokens;
    s->table[j] = (uint32_t)(++s->count);
    return sh;
}

void glyd_logShapesFree(glyd_logShapes* s)
{
    if (!s) return;
    free(s->lineShape);
    free(s->shapes);
    free(s->table);
    free(s->value);
    free(s->length);
    free(s->varies);
    free(s);
}

glyd_logShapes* glyd_logShapesLearn(const glyd_logTokens* t, const uint8_t* src, size_t size, size_t lines)
{
    const uint8_t* const end = src + size;
    const uint8_t* p = src;
    glyd_logShapes* const s = (glyd_logShapes*)calloc(1, sizeof(glyd_logShapes));
    const uint8_t** bounds = NULL; /* the line's tokens, from its skeleton */
    size_t boundsCap = 256, line = 0;
    int inRow = 0;
    if (!s) return NULL;
    s->lineShape = (uint32_t*)malloc(lines * sizeof(uint32_t) + 1);
    bounds = (const uint8_t**)malloc(2 * boundsCap * sizeof(*bounds));
    if (!s->lineShape || !bounds) goto failed;
    for (; p < end && line < lines; line++) {
        const uint8_t *stop, *next;
        size_t tokens, k;
        uint64_t key;
        shape* sh;
        inRow = glyd_logNextRecord(t, p, end, inRow, &stop, &next);
        key = skeleton(t, p, stop, &tokens, bounds, boundsCap);
        if (tokens > boundsCap) {
            const uint8_t** const grown = (const uint8_t**)realloc(bounds, 2 * tokens * sizeof(*bounds));
            if (!grown) goto failed;
            bounds = grown;
            boundsCap = tokens;
            key = skeleton(t, p, stop, &tokens, bounds, boundsCap);
        }
        sh = find_or_add(s, key, tokens);
        if (!sh) goto failed;
        s->lineShape[line] = (uint32_t)(sh - s->shapes);
        for (k = 0; k < tokens; k++) {
            const uint8_t* const q = bounds[2 * k];
            size_t const len = (size_t)(bounds[2 * k + 1] - q);
            size_t const at = sh->first + k;
            if (!sh->lines) {
                s->value[at] = q;
                s->length[at] = len;
            } else if (!s->varies[at] && (s->length[at] != len || memcmp(s->value[at], q, len))) {
                s->varies[at] = 1;
            }
        }
        sh->lines++;
        p = next;
    }
    free(bounds);
    return s;
failed:
    free(bounds);
    glyd_logShapesFree(s);
    return NULL;
}

const uint8_t* glyd_logShapesOf(const glyd_logShapes* s, size_t line)
{
    const shape* const sh = &s->shapes[s->lineShape[line]];
    return sh->lines > 1 && sh->tokens ? s->varies + sh->first : NULL;
}

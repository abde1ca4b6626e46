/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dict.h: dictionaries: content that frames may refer to as if it preceded
 * them (docs/FORMAT.md, "Dictionaries"), and training from samples.
 */
#ifndef GLYD_DICT_H
#define GLYD_DICT_H

#include "../common/common.h"

/* A dictionary file: magic, ID, the size of its entropy tables, the
 * tables, then its content. Any other bytes are a raw-content dictionary
 * with no ID and no tables. */
#define GLYD_DICT_MAGIC        0x444C47F7u /* bytes F7 47 4C 44: "\xF7GLD" */
#define GLYD_DICT_HEADER_SIZE  12
#define GLYD_DICT_CONTENT_MAX  ((size_t)1 << 31)

typedef struct {
    const uint8_t* content;
    size_t size;
    const uint8_t* tables; /* described as in a block (lz.h, glyd_lzLoadTables) */
    size_t tablesSize;     /* 0: none */
    uint32_t id;           /* 0: raw content */
} glyd_dictView;

/* Points *v into dict[0..size). Returns 0 or an error (dictionary_corrupted). */
size_t glyd_dictParse(glyd_dictView* v, const void* dict, size_t size);

/* A context's own copy of a dictionary's content. */
typedef struct {
    uint8_t* content; /* NULL when no dictionary is loaded */
    size_t size;
    uint8_t* tables;  /* NULL when it has none */
    size_t tablesSize;
    uint32_t id;
} glyd_dictCopy;

/* Replaces *c by a copy of dict[0..size) (size 0: no dictionary). Returns 0
 * or an error: dictionary_corrupted (*c unchanged), memory_allocation (*c
 * empty). */
size_t glyd_dictLoad(glyd_dictCopy* c, const void* dict, size_t size, glyd_customMem mem);
void glyd_dictFree(glyd_dictCopy* c, glyd_customMem mem);

#endif /* GLYD_DICT_H */

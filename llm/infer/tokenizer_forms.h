/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tokenizer_forms.h: what tokenizer.c, sentencepiece.c and added_tokens.c
 * share: the tokenizer's state and the steps each file gives the others.
 * A tokenizer.json is byte-level BPE (a ByteLevel pre-tokenizer: GPT-2,
 * Qwen, Llama 3) or BPE over characters with byte fallback (SentencePiece's
 * layout: Llama 2, Mistral, Gemma); its normalizer, pre-tokenizer and
 * decoder are read as declared, and a component that is not built here is
 * refused by name.
 */
#ifndef GLYD_TOKENIZER_FORMS_H
#define GLYD_TOKENIZER_FORMS_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>

#include "infer.h"

typedef struct {
    uint32_t* slots;            /* id + 1, 0 = empty */
    size_t mask;
} str_map;

/* A merge: (left id, right id) -> its rank, the merged id; in one entry so
 * that a lookup touches one cache line. */
typedef struct {
    uint64_t key;               /* left << 32 | right, +1; 0 = empty */
    uint32_t rank, id;
} merge_entry;

/* The normalizer's steps, in order (a Sequence flattened) */
typedef enum { NORM_NFC, NORM_PREPEND, NORM_REPLACE } norm_kind;
typedef struct {
    norm_kind kind;
    char* arg;                  /* Prepend's text, Replace's pattern */
    char* to;                   /* Replace's content */
} norm_step;
#define TOK_MAX_STEPS 8

/* The decoder's steps, in order */
typedef enum { DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE, DEC_BYTE_LEVEL } dec_kind;
typedef struct {
    dec_kind kind;
    char* arg;                  /* Replace's pattern, Metaspace's replacement */
    char* to;                   /* Replace's content */
    uint32_t ch;                /* Strip's character */
    int start, stop;            /* Strip's counts; Metaspace: start = 1 unless prepend_scheme is never */
} dec_step;

typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;

/* An added token's flags, as tokenizer.json declares them */
typedef struct {
    uint32_t id;
    uint32_t len;               /* of its text as matched (normalized when `normalized`) */
    char* match;                /* that text, also the token's text for decoding */
    char* content;              /* as tokenizer.json writes it */
    uint8_t special, lstrip, rstrip, normalized, singleWord;
} added_token;

/* A set of added tokens matched in a text, longest first */
typedef struct {
    added_token** tok;
    size_t n;
    uint8_t first[256];         /* 1 for the bytes one of them starts with */
} added_set;

struct glyd_tokenizer_s {
    /* every token's text as the vocabulary spells it and the bytes it stands for */
    char** text;
    uint8_t** bytes;
    uint32_t* nbBytes;
    size_t nbIds;               /* the largest id + 1 */
    str_map vocab;
    merge_entry* merges;
    size_t mergeMask;
    int ignoreMerges;
    /* the model over characters: byte fallback, <unk> (-1: none), fused */
    int byteLevel;
    int byteFallback, fuseUnk;
    long unkId;
    uint32_t fallback[256];     /* the id of <0xXX> for each byte */
    /* added tokens: all of them; those matched in the raw text and in the
     * normalized text */
    added_token* added;
    size_t nbAdded;
    added_set raw, normed;
    uint8_t* isAdded;           /* by id: 1 for an added token */
    /* the normalizer */
    norm_step norm[TOK_MAX_STEPS];
    size_t nbNorm;
    /* the pre-tokenizer: a split pattern (NULL: none), Metaspace */
    pcre2_code* split;
    pcre2_match_data* match;
    pcre2_match_context* limits;
    int metaspace, metaSplit;
    prepend_scheme metaPrepend;
    char metaRep[8];            /* the replacement character, UTF-8 */
    /* the decoder; hasDecoder 0: tokens joined by spaces */
    dec_step dec[TOK_MAX_STEPS];
    size_t nbDec;
    int hasDecoder;
    uint32_t byteChar[256];     /* the byte-level character of each byte */
    uint32_t charToken[256];    /* the id of each byte's one-character token */
};

typedef struct { int* ids; size_t n, cap; } id_list;
size_t glyd_tokPush(id_list* l, int id);

/* The id of a vocabulary string, SIZE_MAX when none */
size_t glyd_tokFind(const glyd_tokenizer* t, const char* s, size_t n);

/* BPE over ids[0, n) (changed in place): the merge of lowest rank first,
 * the leftmost of equals; the ids that remain go to out */
size_t glyd_tokMerge(const glyd_tokenizer* t, uint32_t* ids, size_t n, id_list* out);

/* sentencepiece.c: the normalizer, pre-tokenizer, model and decoder
 * options of tokenizer.json (a one-line reason in why for what is not
 * built), the normalizer applied, one piece of the model over characters,
 * the Metaspace pre-tokenizer, the bytes of a token */
size_t glyd_tokReadForms(glyd_tokenizer* t, const json_t* root, char* why, size_t whyCap);
void glyd_tokFreeForms(glyd_tokenizer* t);
size_t glyd_tokNormalize(const glyd_tokenizer* t, const char* text, size_t n, uint8_t** out, size_t* outLen);
size_t glyd_tokCharPiece(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out);
size_t glyd_tokMetaspace(const glyd_tokenizer* t, const uint8_t* s, size_t n, int atStart, id_list* out);
size_t glyd_tokPiece(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out);
size_t glyd_tokSetBytes(glyd_tokenizer* t, size_t id);

/* added_tokens.c: the added tokens read, with their flags; the text split
 * around those of a set, each stretch between them given to fn */
size_t glyd_tokReadAdded(glyd_tokenizer* t, const json_t* added, char* why, size_t whyCap);
void glyd_tokFreeAdded(glyd_tokenizer* t);
typedef size_t (*glyd_tokStretch)(const glyd_tokenizer* t, const char* s, size_t n, int atStart, id_list* out);
size_t glyd_tokSplitAdded(const glyd_tokenizer* t, const added_set* set, const char* s, size_t n, int atStart,
                          glyd_tokStretch fn, id_list* out);

#endif /* GLYD_TOKENIZER_FORMS_H */

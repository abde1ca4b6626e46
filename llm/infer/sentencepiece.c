/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentencepiece.c: the parts of tokenizer.json around the BPE model, read
 * as declared: the normalizer (NFC, Prepend, Replace, Sequence), the
 * pre-tokenizer (Split, ByteLevel, Metaspace, Sequence), the decoder, and
 * the model over characters that SentencePiece's conversions use (Llama 2,
 * Mistral, Gemma): a piece's characters start as their tokens, a character
 * not in the vocabulary as its bytes' <0xXX> tokens (byte_fallback) or as
 * <unk> (consecutive ones fused with fuse_unk), then merged by rank. Any
 * other component is refused in one line naming it.
 */
#include <stdlib.h>
#include <utf8proc.h>

#include "tokenizer_forms.h"

/* GPT-2's split, for a ByteLevel pre-tokenizer with use_regex */
static const char kGpt2Pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static size_t refuse(char* why, size_t cap, const char* what, const char* type)
{
    if (why && cap) snprintf(why, cap, "tokenizer.json: %s %.60s is not supported", what, type ? type : "(without a type)");
    return GLYD_ERROR(model_unsupported);
}

static const char* type_of(const json_t* o) { return json_string_value(json_object_get(o, "type")); }
static int is_type(const json_t* o, const char* type) { return type_of(o) && !strcmp(type_of(o), type); }

/* A Replace's pattern: only a plain string is built */
static const char* string_pattern(const json_t* o)
{
    const json_t* const p = json_object_get(o, "pattern");
    return json_string_value(json_object_get(p, "String"));
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                  */
/* ------------------------------------------------------------------------ */

static size_t read_normalizer(glyd_tokenizer* t, const json_t* n, char* why, size_t cap)
{
    size_t i;
    if (json_is_null(n) || !n) return 0;
    if (is_type(n, "Sequence")) {
        const json_t* const list = json_object_get(n, "normalizers");
        for (i = 0; i < json_array_size(list); i++) FORWARD_IF_ERROR(read_normalizer(t, json_array_get(list, i), why, cap));
        return 0;
    }
    if (t->nbNorm == TOK_MAX_STEPS) return refuse(why, cap, "a normalizer with so many steps:", "Sequence");
    {
        norm_step* const s = &t->norm[t->nbNorm];
        if (is_type(n, "NFC")) {
            s->kind = NORM_NFC;
        } else if (is_type(n, "Prepend") && json_is_string(json_object_get(n, "prepend"))) {
            s->kind = NORM_PREPEND;
            s->arg = strdup(json_string_value(json_object_get(n, "prepend")));
            RETURN_ERROR_IF(!s->arg, memory_allocation, "normalizer");
        } else if (is_type(n, "Replace") && string_pattern(n) && *string_pattern(n) &&
                   json_is_string(json_object_get(n, "content"))) {
            s->kind = NORM_REPLACE;
            s->arg = strdup(string_pattern(n));
            s->to = strdup(json_string_value(json_object_get(n, "content")));
            RETURN_ERROR_IF(!s->arg || !s->to, memory_allocation, "normalizer");
        } else if (is_type(n, "Replace")) {
            return refuse(why, cap, "the normalizer", "Replace with a regex pattern");
        } else {
            return refuse(why, cap, "the normalizer", type_of(n));
        }
        t->nbNorm++;
    }
    return 0;
}

static size_t compile_split(glyd_tokenizer* t, const char* pattern, char* why, size_t cap)
{
    int code;
    PCRE2_SIZE off;
    t->split = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &off, NULL);
    if (!t->split) {
        if (why && cap) snprintf(why, cap, "tokenizer.json: the pre-tokenizer's regex does not compile");
        return GLYD_ERROR(model_unsupported);
    }
    /* when JIT is there; the interpreter otherwise */
    pcre2_jit_compile(t->split, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD);
    t->match = pcre2_match_data_create_from_pattern(t->split, NULL);
    t->limits = pcre2_match_context_create(NULL);
    RETURN_ERROR_IF(!t->match || !t->limits, memory_allocation, "regex");
    return 0;
}

/* The pre-tokenizers built: Split (Isolated, a regex) and ByteLevel after
 * it, ByteLevel alone (GPT-2's split with use_regex), Metaspace alone, or
 * none; each as one step or in a Sequence. */
static size_t read_pre_tokenizer(glyd_tokenizer* t, const json_t* p, char* why, size_t cap)
{
    const json_t* steps[TOK_MAX_STEPS];
    size_t n = 0, i;
    const char* pattern = NULL;
    int byteLevelRegex = 0;
    if (!p || json_is_null(p)) return 0;
    if (is_type(p, "Sequence")) {
        const json_t* const list = json_object_get(p, "pretokenizers");
        for (i = 0; i < json_array_size(list); i++) {
            if (n == TOK_MAX_STEPS || is_type(json_array_get(list, i), "Sequence"))
                return refuse(why, cap, "the pre-tokenizer", "Sequence nested or this long");
            steps[n++] = json_array_get(list, i);
        }
    } else {
        steps[n++] = p;
    }
    for (i = 0; i < n; i++) {
        const json_t* const s = steps[i];
        if (is_type(s, "Split")) {
            const char* const behavior = json_string_value(json_object_get(s, "behavior"));
            const char* const regex = json_string_value(json_object_get(json_object_get(s, "pattern"), "Regex"));
            if (!regex) return refuse(why, cap, "the pre-tokenizer", "Split with a string pattern");
            if (!behavior || strcmp(behavior, "Isolated") != 0 || json_is_true(json_object_get(s, "invert")))
                return refuse(why, cap, "the pre-tokenizer", "Split other than Isolated, not inverted");
            if (pattern || t->byteLevel || t->metaspace) return refuse(why, cap, "the pre-tokenizer", "Sequence in this order");
            pattern = regex;
        } else if (is_type(s, "ByteLevel")) {
            if (json_is_true(json_object_get(s, "add_prefix_space")))
                return refuse(why, cap, "the pre-tokenizer", "ByteLevel with add_prefix_space");
            if (t->byteLevel || t->metaspace) return refuse(why, cap, "the pre-tokenizer", "Sequence in this order");
            /* use_regex is true unless written false */
            byteLevelRegex = !json_is_false(json_object_get(s, "use_regex"));
            if (byteLevelRegex && pattern) return refuse(why, cap, "the pre-tokenizer", "Split then ByteLevel with use_regex");
            t->byteLevel = 1;
        } else if (is_type(s, "Metaspace")) {
            const char* const rep = json_string_value(json_object_get(s, "replacement"));
            const char* const scheme = json_string_value(json_object_get(s, "prepend_scheme"));
            if (pattern || t->byteLevel || t->metaspace) return refuse(why, cap, "the pre-tokenizer", "Sequence in this order");
            if (!rep || strlen(rep) >= sizeof t->metaRep || utf8proc_iterate((const utf8proc_uint8_t*)rep, -1, &(utf8proc_int32_t){0}) != (utf8proc_ssize_t)strlen(rep))
                return refuse(why, cap, "the pre-tokenizer", "Metaspace with a replacement that is not one character");
            strcpy(t->metaRep, rep);
            t->metaspace = 1;
            t->metaSplit = !json_is_false(json_object_get(s, "split"));
            if (!scheme || !strcmp(scheme, "always")) t->metaPrepend = PREPEND_ALWAYS;
            else if (!strcmp(scheme, "first")) t->metaPrepend = PREPEND_FIRST;
            else if (!strcmp(scheme, "never")) t->metaPrepend = PREPEND_NEVER;
            else return refuse(why, cap, "the Metaspace prepend_scheme", scheme);
        } else {
            return refuse(why, cap, "the pre-tokenizer", type_of(s));
        }
    }
    if (byteLevelRegex) pattern = kGpt2Pattern;
    return pattern ? compile_split(t, pattern, why, cap) : 0;
}

static size_t read_decoder(glyd_tokenizer* t, const json_t* d, char* why, size_t cap)
{
    size_t i;
    if (!d || json_is_null(d)) return 0;
    t->hasDecoder = 1;
    if (is_type(d, "Sequence")) {
        const json_t* const list = json_object_get(d, "decoders");
        for (i = 0; i < json_array_size(list); i++) FORWARD_IF_ERROR(read_decoder(t, json_array_get(list, i), why, cap));
        return 0;
    }
    if (t->nbDec == TOK_MAX_STEPS) return refuse(why, cap, "a decoder with so many steps:", "Sequence");
    {
        dec_step* const s = &t->dec[t->nbDec];
        if (is_type(d, "Replace") && string_pattern(d) && *string_pattern(d) &&
            json_is_string(json_object_get(d, "content"))) {
            s->kind = DEC_REPLACE;
            s->arg = strdup(string_pattern(d));
            s->to = strdup(json_string_value(json_object_get(d, "content")));
            RETURN_ERROR_IF(!s->arg || !s->to, memory_allocation, "decoder");
        } else if (is_type(d, "ByteFallback")) {
            s->kind = DEC_BYTE_FALLBACK;
        } else if (is_type(d, "Fuse")) {
            s->kind = DEC_FUSE;
        } else if (is_type(d, "Strip")) {
            const char* const c = json_string_value(json_object_get(d, "content"));
            utf8proc_int32_t ch = -1;
            if (!c || utf8proc_iterate((const utf8proc_uint8_t*)c, -1, &ch) != (utf8proc_ssize_t)strlen(c) || ch < 0 ||
                !json_is_integer(json_object_get(d, "start")) || !json_is_integer(json_object_get(d, "stop")))
                return refuse(why, cap, "the decoder", "Strip of other than one character");
            s->kind = DEC_STRIP;
            s->ch = (uint32_t)ch;
            s->start = (int)GLYD_MIN(json_integer_value(json_object_get(d, "start")), 1 << 20);
            s->stop = (int)GLYD_MIN(json_integer_value(json_object_get(d, "stop")), 1 << 20);
            if (s->start < 0 || s->stop < 0) return refuse(why, cap, "the decoder", "Strip with negative counts");
        } else if (is_type(d, "Metaspace")) {
            const char* const rep = json_string_value(json_object_get(d, "replacement"));
            const char* const scheme = json_string_value(json_object_get(d, "prepend_scheme"));
            if (!rep || !*rep) return refuse(why, cap, "the decoder", "Metaspace without a replacement");
            s->kind = DEC_METASPACE;
            s->arg = strdup(rep);
            RETURN_ERROR_IF(!s->arg, memory_allocation, "decoder");
            s->start = !(scheme && !strcmp(scheme, "never"));
        } else if (is_type(d, "ByteLevel")) {
            s->kind = DEC_BYTE_LEVEL;
        } else if (is_type(d, "Replace")) {
            return refuse(why, cap, "the decoder", "Replace with a regex pattern");
        } else {
            return refuse(why, cap, "the decoder", type_of(d));
        }
        t->nbDec++;
    }
    return 0;
}

static size_t read_model(glyd_tokenizer* t, const json_t* m, char* why, size_t cap)
{
    const json_t* const unk = json_object_get(m, "unk_token");
    const json_t* const dropout = json_object_get(m, "dropout");
    const char* const prefix = json_string_value(json_object_get(m, "continuing_subword_prefix"));
    const char* const suffix = json_string_value(json_object_get(m, "end_of_word_suffix"));
    unsigned b;
    if (dropout && !json_is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0))
        return refuse(why, cap, "the BPE option", "dropout");
    if (prefix && *prefix) return refuse(why, cap, "the BPE option", "continuing_subword_prefix");
    if (suffix && *suffix) return refuse(why, cap, "the BPE option", "end_of_word_suffix");
    t->byteFallback = json_is_true(json_object_get(m, "byte_fallback"));
    t->fuseUnk = json_is_true(json_object_get(m, "fuse_unk"));
    t->unkId = -1;
    if (json_is_string(unk)) {
        size_t const id = glyd_tokFind(t, json_string_value(unk), strlen(json_string_value(unk)));
        if (id == SIZE_MAX) {
            if (why && cap) snprintf(why, cap, "tokenizer.json: the unk_token is not in the vocabulary");
            return GLYD_ERROR(model_invalid);
        }
        t->unkId = (long)id;
    }
    for (b = 0; b < 256; b++) {
        char name[8];
        size_t id;
        snprintf(name, sizeof name, "<0x%02X>", b);
        id = glyd_tokFind(t, name, 6);
        t->fallback[b] = id == SIZE_MAX ? UINT32_MAX : (uint32_t)id;
    }
    return 0;
}

size_t glyd_tokReadForms(glyd_tokenizer* t, const json_t* root, char* why, size_t whyCap)
{
    FORWARD_IF_ERROR(read_model(t, json_object_get(root, "model"), why, whyCap));
    FORWARD_IF_ERROR(read_normalizer(t, json_object_get(root, "normalizer"), why, whyCap));
    FORWARD_IF_ERROR(read_pre_tokenizer(t, json_object_get(root, "pre_tokenizer"), why, whyCap));
    return read_decoder(t, json_object_get(root, "decoder"), why, whyCap);
}

void glyd_tokFreeForms(glyd_tokenizer* t)
{
    size_t i;
    for (i = 0; i < t->nbNorm; i++) { free(t->norm[i].arg); free(t->norm[i].to); }
    for (i = 0; i < t->nbDec; i++) { free(t->dec[i].arg); free(t->dec[i].to); }
    t->nbNorm = t->nbDec = 0;
}

/* ------------------------------------------------------------------------ */
/* Normalizing                                                              */
/* ------------------------------------------------------------------------ */

/* Whether s[0, n) is UTF-8 (as utf8proc reads it) */
static int is_utf8(const uint8_t* s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k;
        if (s[i] < 0x80) { i++; continue; }
        k = utf8proc_iterate(s + i, (utf8proc_ssize_t)GLYD_MIN(n - i, 4), &c);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* Every `from` in s replaced by `to`, left to right (a new string) */
static size_t replace_all(const uint8_t* s, size_t n, const char* from, const char* to, uint8_t** out, size_t* outLen)
{
    size_t const fl = strlen(from), tl = strlen(to);
    size_t count = 0, i, k = 0;
    uint8_t* d;
    for (i = 0; i + fl <= n; ) {
        if (memcmp(s + i, from, fl) == 0) { count++; i += fl; } else i++;
    }
    d = (uint8_t*)malloc(n - count * fl + count * tl + 1);
    RETURN_ERROR_IF(!d, memory_allocation, "normalized text");
    for (i = 0; i < n; ) {
        if (i + fl <= n && memcmp(s + i, from, fl) == 0) {
            memcpy(d + k, to, tl);
            k += tl;
            i += fl;
        } else {
            d[k++] = s[i++];
        }
    }
    *out = d;
    *outLen = k;
    return 0;
}

size_t glyd_tokNormalize(const glyd_tokenizer* t, const char* text, size_t n, uint8_t** out, size_t* outLen)
{
    uint8_t* cur = NULL;
    size_t len = n, i;
    int nfc = 0;
    *out = NULL;
    for (i = 0; i < t->nbNorm; i++) nfc |= t->norm[i].kind == NORM_NFC;
    RETURN_ERROR_IF(!nfc && !is_utf8((const uint8_t*)text, n), GENERIC, "text that is not UTF-8");
    cur = (uint8_t*)malloc(n + 1);
    RETURN_ERROR_IF(!cur, memory_allocation, "normalized text");
    memcpy(cur, text, n);
    for (i = 0; i < t->nbNorm; i++) {
        const norm_step* const s = &t->norm[i];
        uint8_t* next = NULL;
        size_t nextLen = 0, r = 0;
        if (s->kind == NORM_NFC) {
            r = glyd_textNfc(cur, len, &next, &nextLen);
        } else if (s->kind == NORM_PREPEND) {
            size_t const pl = strlen(s->arg);
            if (len == 0) continue; /* nothing is put before an empty text */
            next = (uint8_t*)malloc(len + pl + 1);
            r = next ? 0 : GLYD_ERROR(memory_allocation);
            if (next) {
                memcpy(next, s->arg, pl);
                memcpy(next + pl, cur, len);
                nextLen = len + pl;
            }
        } else {
            r = replace_all(cur, len, s->arg, s->to, &next, &nextLen);
        }
        free(cur);
        if (glyd_isError(r)) return r;
        cur = next;
        len = nextLen;
    }
    *out = cur;
    *outLen = len;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The model over characters                                                */
/* ------------------------------------------------------------------------ */

/* The initial symbols of a piece, as the BPE model of tokenizers makes them
 * (a pending <unk> waits past byte-fallback tokens, as it does there) */
static size_t char_symbols(const glyd_tokenizer* t, const uint8_t* s, size_t n, uint32_t* ids, size_t* m)
{
    size_t i = 0, k = 0;
    int pending = 0;
    while (i < n) {
        utf8proc_int32_t c;
        utf8proc_ssize_t const len = utf8proc_iterate(s + i, (utf8proc_ssize_t)GLYD_MIN(n - i, 4), &c);
        size_t id, b, cl;
        RETURN_ERROR_IF(len <= 0, GENERIC, "text that is not UTF-8");
        cl = (size_t)len;
        id = glyd_tokFind(t, (const char*)s + i, cl);
        if (id != SIZE_MAX) {
            if (pending) ids[k++] = (uint32_t)t->unkId;
            pending = 0;
            ids[k++] = (uint32_t)id;
        } else {
            int fallback = t->byteFallback;
            for (b = 0; b < cl && fallback; b++) fallback = t->fallback[s[i + b]] != UINT32_MAX;
            if (fallback) {
                for (b = 0; b < cl; b++) ids[k++] = t->fallback[s[i + b]];
            } else if (t->unkId >= 0) {
                if (pending && !t->fuseUnk) ids[k++] = (uint32_t)t->unkId;
                pending = 1;
            }
            /* no <unk> and no fallback: the character is dropped, as there */
        }
        i += cl;
    }
    if (pending) ids[k++] = (uint32_t)t->unkId;
    *m = k;
    return 0;
}

size_t glyd_tokCharPiece(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out)
{
    uint32_t stack[64];
    uint32_t* ids = stack;
    size_t m = 0, r;
    if (t->ignoreMerges) {
        size_t const id = glyd_tokFind(t, (const char*)s, n);
        if (id != SIZE_MAX) return glyd_tokPush(out, (int)id);
    }
    /* a symbol per byte at most */
    if (n > sizeof stack / sizeof stack[0]) {
        ids = (uint32_t*)malloc(n * sizeof(uint32_t));
        RETURN_ERROR_IF(!ids, memory_allocation, "piece");
    }
    r = char_symbols(t, s, n, ids, &m);
    if (!glyd_isError(r)) r = glyd_tokMerge(t, ids, m, out);
    if (ids != stack) free(ids);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Metaspace                                                                */
/* ------------------------------------------------------------------------ */

/* Spaces become the replacement, which is put first (always; first: only
 * at the start of the input) unless already there; with split, each
 * replacement starts a piece. */
size_t glyd_tokMetaspace(const glyd_tokenizer* t, const uint8_t* s, size_t n, int atStart, id_list* out)
{
    size_t const rl = strlen(t->metaRep);
    uint8_t* d;
    size_t k = 0, i, start, r = 0;
    int prepend;
    d = (uint8_t*)malloc(n * rl + rl + 1);
    RETURN_ERROR_IF(!d, memory_allocation, "pre-tokenized text");
    for (i = 0; i < n; i++) {
        if (s[i] == ' ') { memcpy(d + k, t->metaRep, rl); k += rl; }
        else d[k++] = s[i];
    }
    prepend = t->metaPrepend == PREPEND_ALWAYS || (t->metaPrepend == PREPEND_FIRST && atStart);
    if (prepend && !(k >= rl && memcmp(d, t->metaRep, rl) == 0)) {
        memmove(d + rl, d, k);
        memcpy(d, t->metaRep, rl);
        k += rl;
    }
    if (!t->metaSplit) {
        r = glyd_tokPiece(t, d, k, out);
    } else {
        for (start = 0, i = 0; i < k && !glyd_isError(r); i++) {
            if ((d[i] & 0xC0) == 0x80 || i == start || i + rl > k || memcmp(d + i, t->metaRep, rl) != 0) continue;
            r = glyd_tokPiece(t, d + start, i - start, out);
            start = i;
        }
        if (!glyd_isError(r) && start < k) r = glyd_tokPiece(t, d + start, k - start, out);
    }
    free(d);
    return glyd_isError(r) ? r : 0;
}

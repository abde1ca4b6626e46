/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * added_tokens.c: the added tokens of tokenizer.json with their flags, and
 * the text split around them as Hugging Face's tokenizers does it: those
 * not `normalized` are found in the raw text, the others in the normalized
 * text between those; at each position the longest that starts there (the
 * leftmost first); `single_word` ones only between non-word characters;
 * `lstrip` and `rstrip` ones take the whitespace before or after them.
 */
#include <stdlib.h>
#include <utf8proc.h>

#include "tokenizer_forms.h"

/* Rust's char::is_whitespace: Unicode's White_Space */
static int is_white(int32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* A word character for single_word: a letter, digit, mark or connector
 * (`\w` in Unicode) */
static int is_word(int32_t c)
{
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return 0;
    }
}

/* The character that starts at s[0, n), -1 when none or not UTF-8 */
static int32_t char_at(const char* s, size_t n, size_t* len)
{
    utf8proc_int32_t c = -1;
    utf8proc_ssize_t const k = utf8proc_iterate((const utf8proc_uint8_t*)s, (utf8proc_ssize_t)GLYD_MIN(n, 4), &c);
    *len = k > 0 ? (size_t)k : 1;
    return k > 0 ? c : -1;
}

/* The character that ends at s[end] (exclusive), not looking before `low` */
static int32_t char_before(const char* s, size_t low, size_t end, size_t* len)
{
    size_t b = end;
    while (b > low && end - b < 4) {
        b--;
        if (((uint8_t)s[b] & 0xC0) != 0x80) break;
    }
    if (b == end) { *len = 0; return -1; }
    {
        size_t k;
        int32_t const c = char_at(s + b, end - b, &k);
        *len = end - b;
        return k == end - b ? c : -1;
    }
}

static void sort_set(added_set* set)
{
    size_t i, j;
    for (i = 1; i < set->n; i++) {
        added_token* const v = set->tok[i];
        for (j = i; j > 0 && set->tok[j - 1]->len < v->len; j--) set->tok[j] = set->tok[j - 1];
        set->tok[j] = v;
    }
    for (i = 0; i < set->n; i++) set->first[(uint8_t)set->tok[i]->match[0]] = 1;
}

static size_t fail(char* why, size_t cap, const char* text, size_t err)
{
    if (why && cap) snprintf(why, cap, "%s", text);
    return err;
}

/* A flag that tokenizer.json may leave out: `dflt` then */
static int flag(const json_t* a, const char* name, int dflt)
{
    const json_t* const v = json_object_get(a, name);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

size_t glyd_tokReadAdded(glyd_tokenizer* t, const json_t* added, char* why, size_t whyCap)
{
    size_t const n = json_array_size(added);
    size_t i;
    t->added = (added_token*)calloc(n + 1, sizeof(added_token));
    t->raw.tok = (added_token**)calloc(n + 1, sizeof(added_token*));
    t->normed.tok = (added_token**)calloc(n + 1, sizeof(added_token*));
    RETURN_ERROR_IF(!t->added || !t->raw.tok || !t->normed.tok, memory_allocation, "added tokens");
    for (i = 0; i < n; i++) {
        const json_t* const a = json_array_get(added, i);
        const json_t* const id = json_object_get(a, "id");
        const json_t* const content = json_object_get(a, "content");
        added_token* const k = &t->added[t->nbAdded];
        size_t len;
        if (!json_is_integer(id) || !json_is_string(content) || json_integer_value(id) < 0 ||
            (size_t)json_integer_value(id) >= t->nbIds || !*json_string_value(content))
            return fail(why, whyCap, "tokenizer.json: an added token lacks its id or content", GLYD_ERROR(model_invalid));
        k->id = (uint32_t)json_integer_value(id);
        k->special = (uint8_t)flag(a, "special", 0);
        k->lstrip = (uint8_t)flag(a, "lstrip", 0);
        k->rstrip = (uint8_t)flag(a, "rstrip", 0);
        k->singleWord = (uint8_t)flag(a, "single_word", 0);
        k->normalized = (uint8_t)flag(a, "normalized", !k->special);
        free(t->text[k->id]);
        t->text[k->id] = strdup(json_string_value(content));
        RETURN_ERROR_IF(!t->text[k->id], memory_allocation, "added token");
        t->isAdded[k->id] = 1;
        t->nbAdded++;
        /* a normalized token is looked for as the normalizer writes it */
        if (k->normalized) {
            uint8_t* norm;
            if (glyd_isError(glyd_tokNormalize(t, t->text[k->id], strlen(t->text[k->id]), &norm, &len)))
                return fail(why, whyCap, "tokenizer.json: an added token is not UTF-8", GLYD_ERROR(model_invalid));
            k->match = (char*)realloc(norm, len + 1);
            if (!k->match) { free(norm); return GLYD_ERROR(memory_allocation); }
            k->match[len] = 0;
        } else {
            k->match = strdup(t->text[k->id]);
            RETURN_ERROR_IF(!k->match, memory_allocation, "added token");
            len = strlen(k->match);
        }
        k->len = (uint32_t)len;
        /* tokenizers decodes a normalized token from its normalized text */
        k->content = t->text[k->id];
        t->text[k->id] = strdup(k->match);
        RETURN_ERROR_IF(!t->text[k->id], memory_allocation, "added token");
        if (len == 0 || memchr(k->match, 0, len)) continue;
        if (k->normalized) t->normed.tok[t->normed.n++] = k;
        else t->raw.tok[t->raw.n++] = k;
    }
    sort_set(&t->raw);
    sort_set(&t->normed);
    return 0;
}

void glyd_tokFreeAdded(glyd_tokenizer* t)
{
    size_t i;
    for (i = 0; t->added && i < t->nbAdded; i++) {
        free(t->added[i].match);
        free(t->added[i].content);
    }
    free(t->added);
    free(t->raw.tok);
    free(t->normed.tok);
}

/* The longest token of the set that starts at s[pos], NULL when none */
static const added_token* find_at(const added_set* set, const char* s, size_t n, size_t pos)
{
    size_t k;
    if (!set->first[(uint8_t)s[pos]]) return NULL;
    for (k = 0; k < set->n; k++) {
        const added_token* const a = set->tok[k];
        if (a->len <= n - pos && memcmp(s + pos, a->match, a->len) == 0) return a;
    }
    return NULL;
}

/* Matches are found in one pass, each after the end of the one before (as
 * written: an rstrip's whitespace does not hide a match in it). A token's
 * whitespace taken by lstrip reaches back no further than where the text
 * before it starts, so each byte is looked at a bounded number of times. */
size_t glyd_tokSplitAdded(const glyd_tokenizer* t, const added_set* set, const char* s, size_t n, int atStart,
                          glyd_tokStretch fn, id_list* out)
{
    size_t pos = 0, from = 0, r = 0, runFrom = 1, runEnd = 0;
    while (pos < n && set->n) {
        const added_token* const a = find_at(set, s, n, pos);
        size_t start = pos, stop, len;
        if (!a) { pos++; continue; }
        stop = pos + a->len;
        pos = stop;
        if (a->singleWord) {
            int const before = start > 0 && is_word(char_before(s, 0, start, &len));
            int const after = stop < n && is_word(char_at(s + stop, n - stop, &len));
            if (before || after) continue;
        }
        if (a->lstrip) {
            int32_t c;
            while (start > from && (c = char_before(s, from, start, &len)) >= 0 && is_white(c)) start -= len;
        }
        if (a->rstrip) {
            /* a run of whitespace is walked once, also when tokens that
             * start with whitespace follow each other in it */
            int32_t c;
            if (stop >= runFrom && stop <= runEnd) {
                stop = runEnd;
            } else {
                runFrom = stop;
                while (stop < n && (c = char_at(s + stop, n - stop, &len)) >= 0 && is_white(c)) stop += len;
                runEnd = stop;
            }
        }
        if (from < start) {
            r = fn(t, s + from, start - from, atStart && from == 0, out);
            if (glyd_isError(r)) return r;
        }
        FORWARD_IF_ERROR(glyd_tokPush(out, (int)a->id));
        from = stop;
    }
    if (from < n || n == 0) r = fn(t, s + from, n - from, atStart && from == 0, out);
    return glyd_isError(r) ? r : 0;
}

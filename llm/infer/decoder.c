/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * decoder.c: ids back to text as tokenizer.json's decoder has it: each
 * id's token text (an added token's content), then the decoder's steps in
 * order over the list of strings (Replace, ByteFallback, Fuse, Strip,
 * Metaspace, ByteLevel), then the strings joined; with no decoder, joined
 * by spaces. Also the bytes that one token stands for on its own, for
 * printing tokens as they come.
 */
#include <ctype.h>
#include <stdlib.h>
#include <utf8proc.h>

#include "tokenizer_forms.h"

typedef struct {
    char** s;
    size_t* len;
    size_t n, cap;
} str_list;

static void list_free(str_list* l)
{
    size_t i;
    for (i = 0; i < l->n; i++) free(l->s[i]);
    free(l->s);
    free(l->len);
    memset(l, 0, sizeof *l);
}

/* Appends a copy of p[0, n) */
static size_t list_add(str_list* l, const char* p, size_t n)
{
    char* c;
    if (l->n == l->cap) {
        size_t const cap = l->cap ? 2 * l->cap : 16;
        char** const s = (char**)realloc(l->s, cap * sizeof(char*));
        size_t* len;
        RETURN_ERROR_IF(!s, memory_allocation, "decoded text");
        l->s = s;
        len = (size_t*)realloc(l->len, cap * sizeof(size_t));
        RETURN_ERROR_IF(!len, memory_allocation, "decoded text");
        l->len = len;
        l->cap = cap;
    }
    c = (char*)malloc(n + 1);
    RETURN_ERROR_IF(!c, memory_allocation, "decoded text");
    memcpy(c, p, n);
    c[n] = 0;
    l->s[l->n] = c;
    l->len[l->n++] = n;
    return 0;
}

/* A growing byte buffer */
typedef struct { char* p; size_t n, cap; } buf;

static size_t buf_put(buf* b, const void* p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char* q;
        while (cap < b->n + n + 1) cap *= 2;
        q = (char*)realloc(b->p, cap);
        RETURN_ERROR_IF(!q, memory_allocation, "decoded text");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static const char kReplacementChar[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Bytes as UTF-8 text, each maximal invalid subpart as one U+FFFD (what
 * Rust's String::from_utf8_lossy gives) */
static size_t put_lossy(buf* b, const uint8_t* s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t const c = s[i];
        size_t need, k;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c < 0x80) { FORWARD_IF_ERROR(buf_put(b, s + i, 1)); i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
        else { FORWARD_IF_ERROR(buf_put(b, kReplacementChar, 3)); i++; continue; }
        for (k = 1; k <= need && i + k < n; k++) {
            uint8_t const x = s[i + k];
            if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) break;
        }
        if (k == need + 1) FORWARD_IF_ERROR(buf_put(b, s + i, k));
        else FORWARD_IF_ERROR(buf_put(b, kReplacementChar, 3));
        i += k; /* the character, or the invalid subpart read so far */
    }
    return 0;
}

/* The byte of a byte-fallback token "<0xXX>", -1 for another token (Rust's
 * u8::from_str_radix reads the two characters, a leading '+' included) */
static int fallback_byte(const char* s, size_t n)
{
    int hi, lo;
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    lo = isxdigit((unsigned char)s[4]) ? (isdigit((unsigned char)s[4]) ? s[4] - '0' : (tolower((unsigned char)s[4]) - 'a' + 10)) : -1;
    if (lo < 0) return -1;
    if (s[3] == '+') return lo;
    hi = isxdigit((unsigned char)s[3]) ? (isdigit((unsigned char)s[3]) ? s[3] - '0' : (tolower((unsigned char)s[3]) - 'a' + 10)) : -1;
    return hi < 0 ? -1 : hi * 16 + lo;
}

static int valid_utf8(const uint8_t* s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t c;
        utf8proc_ssize_t const k = utf8proc_iterate(s + i, (utf8proc_ssize_t)GLYD_MIN(n - i, 4), &c);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* Every `from` replaced by `to` */
static size_t replace_into(buf* b, const char* s, size_t n, const char* from, const char* to)
{
    size_t const fl = strlen(from), tl = strlen(to);
    size_t i = 0, run = 0;
    while (i < n) {
        if (i + fl <= n && memcmp(s + i, from, fl) == 0) {
            FORWARD_IF_ERROR(buf_put(b, s + run, i - run));
            FORWARD_IF_ERROR(buf_put(b, to, tl));
            i += fl;
            run = i;
        } else {
            i++;
        }
    }
    return buf_put(b, s + run, n - run);
}

/* One step over the list, into `next` */
static size_t step(const glyd_tokenizer* t, const dec_step* d, const str_list* in, str_list* next)
{
    size_t i;
    buf b = { NULL, 0, 0 };
    size_t r = 0;
    if (d->kind == DEC_FUSE || d->kind == DEC_BYTE_LEVEL) {
        /* the byte of each byte-level character (all are below 512) */
        int16_t inv[512];
        for (i = 0; i < 512; i++) inv[i] = -1;
        for (i = 0; i < 256; i++) if (t->byteChar[i] < 512) inv[t->byteChar[i]] = (int16_t)i;
        for (i = 0; i < in->n && !glyd_isError(r); i++) {
            const uint8_t* const s = (const uint8_t*)in->s[i];
            size_t const n = in->len[i];
            size_t pos = 0, mark = b.n;
            /* ByteLevel: a token whose characters are all of the 256 as
             * their bytes, another as it is */
            while (d->kind == DEC_BYTE_LEVEL && pos < n && !glyd_isError(r)) {
                utf8proc_int32_t c;
                utf8proc_ssize_t const l = utf8proc_iterate(s + pos, (utf8proc_ssize_t)(n - pos), &c);
                uint8_t byte;
                if (l <= 0 || c >= 512 || inv[c] < 0) break;
                byte = (uint8_t)inv[c];
                r = buf_put(&b, &byte, 1);
                pos += (size_t)l;
            }
            if (d->kind == DEC_BYTE_LEVEL && pos == n) continue;
            b.n = mark;
            if (!glyd_isError(r)) r = buf_put(&b, s, n);
        }
        if (!glyd_isError(r) && d->kind == DEC_BYTE_LEVEL) {
            buf lossy = { NULL, 0, 0 };
            r = put_lossy(&lossy, (const uint8_t*)(b.p ? b.p : ""), b.n);
            free(b.p);
            b = lossy;
        }
        if (!glyd_isError(r)) r = list_add(next, b.p ? b.p : "", b.n);
        free(b.p);
        return r;
    }
    if (d->kind == DEC_BYTE_FALLBACK) {
        /* runs of <0xXX> tokens: their bytes when UTF-8, else a U+FFFD each */
        size_t runStart = 0, j;
        for (i = 0; i <= in->n && !glyd_isError(r); i++) {
            int const v = i < in->n ? fallback_byte(in->s[i], in->len[i]) : -1;
            if (v >= 0) {
                uint8_t const c = (uint8_t)v;
                if (b.n == 0) runStart = i;
                r = buf_put(&b, &c, 1);
                continue;
            }
            if (b.n) {
                if (valid_utf8((const uint8_t*)b.p, b.n)) r = list_add(next, b.p, b.n);
                else for (j = runStart; j < i && !glyd_isError(r); j++) r = list_add(next, kReplacementChar, 3);
                b.n = 0;
            }
            if (i < in->n && !glyd_isError(r)) r = list_add(next, in->s[i], in->len[i]);
        }
        free(b.p);
        return r;
    }
    for (i = 0; i < in->n && !glyd_isError(r); i++) {
        const char* const s = in->s[i];
        size_t const n = in->len[i];
        b.n = 0;
        if (d->kind == DEC_REPLACE) {
            r = replace_into(&b, s, n, d->arg, d->to);
        } else if (d->kind == DEC_METASPACE) {
            /* the replacement becomes a space; in the first token it goes
             * (unless nothing was prepended) */
            r = replace_into(&b, s, n, d->arg, i == 0 && d->start ? "" : " ");
        } else { /* DEC_STRIP: up to `start` of the character at the start, `stop` at the end */
            size_t a = 0, e = n;
            int k;
            char c[8];
            size_t const cl = (size_t)utf8proc_encode_char((utf8proc_int32_t)d->ch, (utf8proc_uint8_t*)c);
            for (k = 0; k < d->start && a + cl <= n && memcmp(s + a, c, cl) == 0; k++) a += cl;
            for (k = 0; k < d->stop && e >= a + cl && memcmp(s + e - cl, c, cl) == 0; k++) e -= cl;
            r = buf_put(&b, s + a, e - a);
        }
        if (!glyd_isError(r)) r = list_add(next, b.p ? b.p : "", b.n);
    }
    free(b.p);
    return r;
}

size_t glyd_tokenizerDecode(const glyd_tokenizer* t, const int* ids, size_t n, char** text, size_t* size)
{
    str_list cur = { NULL, NULL, 0, 0 };
    buf out = { NULL, 0, 0 };
    size_t i, r = 0;
    *text = NULL;
    *size = 0;
    for (i = 0; i < n && !glyd_isError(r); i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->nbIds || !t->text[ids[i]]) {
            list_free(&cur);
            RETURN_ERROR(parameter_outOfBound, "token id");
        }
        r = list_add(&cur, t->text[ids[i]], strlen(t->text[ids[i]]));
    }
    for (i = 0; i < t->nbDec && !glyd_isError(r); i++) {
        str_list next = { NULL, NULL, 0, 0 };
        r = step(t, &t->dec[i], &cur, &next);
        list_free(&cur);
        cur = next;
    }
    for (i = 0; i < cur.n && !glyd_isError(r); i++) {
        if (i && !t->hasDecoder) r = buf_put(&out, " ", 1);
        if (!glyd_isError(r)) r = buf_put(&out, cur.s[i], cur.len[i]);
    }
    list_free(&cur);
    if (!glyd_isError(r) && !out.p) r = buf_put(&out, "", 0);
    if (glyd_isError(r)) { free(out.p); return r; }
    *text = out.p;
    *size = out.n;
    return 0;
}

size_t glyd_tokSetBytes(glyd_tokenizer* t, size_t id)
{
    const char* const s = t->text[id];
    buf b = { NULL, 0, 0 };
    size_t r = 0, i;
    {
        int done = 0;
        for (i = 0; i < t->nbDec && !done; i++)
            if (t->dec[i].kind == DEC_BYTE_FALLBACK && fallback_byte(s, strlen(s)) >= 0) {
                uint8_t const c = (uint8_t)fallback_byte(s, strlen(s));
                r = buf_put(&b, &c, 1);
                done = 1;
            }
        if (!done) {
            /* the decoder's replacements, as they apply to one token */
            char* cur = strdup(s);
            RETURN_ERROR_IF(!cur, memory_allocation, "token");
            for (i = 0; i < t->nbDec && !glyd_isError(r); i++) {
                const dec_step* const d = &t->dec[i];
                if (d->kind != DEC_REPLACE && d->kind != DEC_METASPACE) continue;
                b.n = 0;
                r = replace_into(&b, cur, strlen(cur), d->arg, d->kind == DEC_REPLACE ? d->to : " ");
                if (!glyd_isError(r)) {
                    char* const c = strdup(b.p ? b.p : "");
                    free(cur);
                    cur = c;
                    if (!cur) r = GLYD_ERROR(memory_allocation);
                }
            }
            b.n = 0;
            if (!glyd_isError(r)) r = buf_put(&b, cur, strlen(cur));
            free(cur);
        }
    }
    if (glyd_isError(r)) { free(b.p); return r; }
    free(t->bytes[id]);
    t->bytes[id] = (uint8_t*)(b.p ? b.p : strdup(""));
    RETURN_ERROR_IF(!t->bytes[id], memory_allocation, "token");
    t->nbBytes[id] = (uint32_t)b.n;
    return 0;
}

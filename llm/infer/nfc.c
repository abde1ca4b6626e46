/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nfc.c: Unicode NFC of UTF-8 text in time and memory linear in its
 * length, byte for byte what utf8proc_map gives with UTF8PROC_STABLE |
 * UTF8PROC_COMPOSE (and refused where it refuses: not UTF-8).
 *
 * utf8proc_map holds the whole text as 32-bit code points and puts the
 * combining marks of each run in canonical order with an exchange sort,
 * quadratic in the run's length (80 KB of marks in the wrong order take
 * 3 s, a megabyte about ten minutes). Here utf8proc still decomposes each
 * character and composes the result; the text goes through in segments
 * cut before ASCII characters, and long runs of marks are ordered by a
 * stable counting sort.
 *
 * Why the cuts are exact: an ASCII character has combining class 0, no
 * decomposition, and is never the second character of a composition, so
 * no mark after it reorders or composes with anything before it, and it
 * composes with nothing before it.
 */
#include <stdlib.h>
#include <utf8proc.h>

#include "infer.h"

#define NFC_OPTIONS ((utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE))

/* Runs of marks up to this length are ordered by insertion, longer ones by
 * counting (whose 257 counters cost more than a few exchanges). */
#define NFC_SHORT_RUN 32

typedef struct {
    utf8proc_int32_t* cp;       /* a segment's code points, decomposed */
    utf8proc_int32_t* tmp;      /* scratch for ordering a long run of marks */
    size_t cap, tmpCap;
    uint8_t* out;               /* the normalized text so far */
    size_t outLen, outCap;
} nfc_state;

/* Room for `need` items of `unit` bytes at *p, doubling; NULL when memory
 * runs out (then *p is left as it was). */
static void* enlarge(void* p, size_t* cap, size_t need, size_t unit)
{
    size_t c = *cap ? *cap : 256;
    void* q;
    if (need <= *cap) return p;
    while (c < need) c *= 2;
    q = realloc(p, c * unit);
    if (q) *cap = c;
    return q;
}

static size_t reserve_points(nfc_state* st, size_t need)
{
    utf8proc_int32_t* const p = (utf8proc_int32_t*)enlarge(st->cp, &st->cap, need, sizeof *p);
    RETURN_ERROR_IF(!p, memory_allocation, "nfc");
    st->cp = p;
    return 0;
}

static size_t reserve_tmp(nfc_state* st, size_t need)
{
    utf8proc_int32_t* const p = (utf8proc_int32_t*)enlarge(st->tmp, &st->tmpCap, need, sizeof *p);
    RETURN_ERROR_IF(!p, memory_allocation, "nfc");
    st->tmp = p;
    return 0;
}

static size_t reserve_out(nfc_state* st, size_t need)
{
    uint8_t* const p = (uint8_t*)enlarge(st->out, &st->outCap, need, 1);
    RETURN_ERROR_IF(!p, memory_allocation, "nfc");
    st->out = p;
    return 0;
}

static size_t append(nfc_state* st, const uint8_t* s, size_t n)
{
    FORWARD_IF_ERROR(reserve_out(st, st->outLen + n));
    memcpy(st->out + st->outLen, s, n);
    st->outLen += n;
    return 0;
}

static int combining_class(utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; }

/* Marks in canonical order: a stable sort by combining class (as utf8proc's
 * exchange sort leaves them). Short runs by insertion. */
static void order_by_insertion(utf8proc_int32_t* run, size_t n)
{
    size_t i;
    for (i = 1; i < n; i++) {
        utf8proc_int32_t const c = run[i];
        int const k = combining_class(c);
        size_t j = i;
        for (; j > 0 && combining_class(run[j - 1]) > k; j--) run[j] = run[j - 1];
        run[j] = c;
    }
}

/* Long runs by counting: linear in the run's length. */
static size_t order_by_counting(nfc_state* st, utf8proc_int32_t* run, size_t n)
{
    size_t start[257] = { 0 }; /* where each class goes, by class + 1 */
    size_t i;
    FORWARD_IF_ERROR(reserve_tmp(st, n));
    for (i = 0; i < n; i++) start[combining_class(run[i]) + 1]++;
    for (i = 1; i < 257; i++) start[i] += start[i - 1];
    for (i = 0; i < n; i++) st->tmp[start[combining_class(run[i])]++] = run[i];
    memcpy(run, st->tmp, n * sizeof *run);
    return 0;
}

static size_t order_marks(nfc_state* st, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && combining_class(st->cp[j]) != 0) j++;
        if (j - i > NFC_SHORT_RUN) FORWARD_IF_ERROR(order_by_counting(st, st->cp + i, j - i));
        else order_by_insertion(st->cp + i, j - i);
        i = j + 1;
    }
    return 0;
}

/* One segment: decompose, order the marks, compose, back to UTF-8. */
static size_t normalize_segment(nfc_state* st, const uint8_t* s, size_t n)
{
    size_t pos = 0, len = 0, i;
    utf8proc_ssize_t composed;
    while (pos < n) {
        utf8proc_int32_t c;
        utf8proc_ssize_t const k = utf8proc_iterate(s + pos, (utf8proc_ssize_t)(n - pos), &c);
        utf8proc_ssize_t got;
        int bound = 0;
        RETURN_ERROR_IF(k <= 0, GENERIC, "text is not valid UTF-8");
        /* a canonical decomposition is at most 4 code points; the loop
         * makes room for any longer one all the same */
        for (got = 4;; ) {
            FORWARD_IF_ERROR(reserve_points(st, len + (size_t)got));
            got = utf8proc_decompose_char(c, st->cp + len, (utf8proc_ssize_t)(st->cap - len), NFC_OPTIONS, &bound);
            RETURN_ERROR_IF(got < 0, GENERIC, "not a code point");
            if ((size_t)got <= st->cap - len) break;
        }
        len += (size_t)got;
        pos += (size_t)k;
    }
    FORWARD_IF_ERROR(order_marks(st, len));
    composed = utf8proc_normalize_utf32(st->cp, (utf8proc_ssize_t)len, NFC_OPTIONS);
    RETURN_ERROR_IF(composed < 0, GENERIC, "nfc");
    FORWARD_IF_ERROR(reserve_out(st, st->outLen + 4 * (size_t)composed));
    for (i = 0; i < (size_t)composed; i++)
        st->outLen += (size_t)utf8proc_encode_char(st->cp[i], st->out + st->outLen);
    return 0;
}

static size_t nfc_all(nfc_state* st, const uint8_t* s, size_t n)
{
    size_t pos = 0;
    while (pos < n) {
        size_t ascii = pos, start, end;
        while (ascii < n && s[ascii] < 0x80) ascii++;
        if (ascii == n) return append(st, s + pos, n - pos);
        /* the last ASCII character goes with the run after it, whose marks
         * may compose with it */
        start = ascii > pos ? ascii - 1 : pos;
        FORWARD_IF_ERROR(append(st, s + pos, start - pos));
        for (end = ascii; end < n && s[end] >= 0x80; end++) {}
        FORWARD_IF_ERROR(normalize_segment(st, s + start, end - start));
        pos = end;
    }
    return 0;
}

size_t glyd_textNfc(const uint8_t* text, size_t n, uint8_t** nfc, size_t* nfcLen)
{
    nfc_state st;
    size_t r;
    memset(&st, 0, sizeof st);
    *nfc = NULL;
    *nfcLen = 0;
    r = reserve_out(&st, n + 1);
    if (!glyd_isError(r)) r = nfc_all(&st, text, n);
    free(st.cp);
    free(st.tmp);
    if (glyd_isError(r)) { free(st.out); return r; }
    *nfc = st.out;
    *nfcLen = st.outLen;
    return 0;
}

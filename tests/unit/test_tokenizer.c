/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tokenizer.c: the Qwen3 tokenizer on inputs made to find worst cases
 * (megabytes of digits, of one emoji, of random bytes, of one line without
 * spaces, of combining marks), each within a generous time bound, with
 * its ids checked for sense; its ids on corpus files and on text mixing
 * scripts, against those of the earlier implementation; NFC against
 * utf8proc_map. */
#include <stdlib.h>
#include <time.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "../../llm/infer/infer.h"
#include "harness.h"

/* What each of the worst-case inputs may take: about 100 times what it
 * takes here, so that only a blow-up (a quadratic step) fails it. */
#define TIME_BOUND_S 10.0

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static glyd_tokenizer* open_qwen3(void)
{
    char path[1024], msg[256] = "";
    size_t err;
    glyd_tokenizer* t;
    snprintf(path, sizeof path, "%s/../fixtures/qwen3-tokenizer", corpus_dir());
    t = glyd_tokenizerOpen(path, msg, sizeof msg, &err);
    if (!t) fprintf(stderr, "# %s\n", msg);
    CHECK(t != NULL);
    return t;
}

/* Whether the bytes of the ids, end to end, are want[0, n). */
static int ids_spell(const glyd_tokenizer* t, const int* ids, size_t nbIds, const uint8_t* want, size_t n)
{
    size_t pos = 0, i;
    for (i = 0; i < nbIds; i++) {
        const unsigned char* b;
        size_t bn;
        if (glyd_isError(glyd_tokenizerBytes(t, ids[i], &b, &bn))) return 0;
        if (bn > n - pos || memcmp(want + pos, b, bn) != 0) return 0;
        pos += bn;
    }
    return pos == n;
}

/* Whether the ids spell utf8proc's NFC of the text (utf8proc_map: the
 * reference, for texts without long runs of combining marks). */
static int ids_spell_nfc(const glyd_tokenizer* t, const int* ids, size_t nbIds, const uint8_t* text, size_t n)
{
    utf8proc_uint8_t* nfc = NULL;
    utf8proc_ssize_t const len =
        utf8proc_map(text, (utf8proc_ssize_t)n, &nfc, (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    int const ok = len >= 0 && ids_spell(t, ids, nbIds, nfc, (size_t)len);
    free(nfc);
    return ok;
}

/* Encodes, checks the time bound; NULL when refused (*err says why). */
static int* encode_timed(const glyd_tokenizer* t, const char* what, const void* text, size_t n, size_t* nbIds,
                         size_t* err)
{
    int* ids = NULL;
    double const t0 = seconds();
    double took;
    *err = glyd_tokenizerEncode(t, (const char*)text, n, &ids, nbIds);
    took = seconds() - t0;
    if (took > TIME_BOUND_S) fprintf(stderr, "# %s: %zu bytes took %.1f s\n", what, n, took);
    CHECK(took <= TIME_BOUND_S);
    return ids;
}

/* Sizes of the worst-case inputs: tens of megabytes, one under the
 * sanitizers; a single piece of that size (a run of letters or spaces,
 * merged through the heap) a few megabytes. */
static size_t big_size(void) { return harness_quick() ? 1u << 20 : 32u << 20; }
static size_t piece_size(void) { return harness_quick() ? 1u << 20 : 4u << 20; }

/* `unit` (len bytes) again and again up to n bytes (a multiple of len). */
static uint8_t* repeated(const char* unit, size_t len, size_t n)
{
    uint8_t* const p = (uint8_t*)malloc(n);
    size_t i;
    CHECK(p != NULL);
    for (i = 0; p && i < n; i += len) memcpy(p + i, unit, len);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Worst cases                                                              */
/* ------------------------------------------------------------------------ */

TEST(tokenizer_megabytes_of_digits_one_token_a_digit)
{
    size_t const n = big_size() + 4; /* not a multiple of 10: the last piece is short */
    glyd_tokenizer* const t = open_qwen3();
    uint8_t* const text = (uint8_t*)malloc(n);
    size_t nb = 0, err, i, digits = 1;
    int* ids;
    if (!t || !text) { glyd_tokenizerFree(t); free(text); return; }
    for (i = 0; i < n; i++) text[i] = (uint8_t)('0' + (i * 7 + i / 10) % 10);
    ids = encode_timed(t, "digits", text, n, &nb, &err);
    CHECK_OK(err);
    /* Qwen3's pattern splits numbers into single digits (\p{N}) */
    CHECK(nb == n);
    for (i = 0; ids && i < nb && digits; i++) {
        const unsigned char* b;
        size_t bn;
        digits = !glyd_isError(glyd_tokenizerBytes(t, ids[i], &b, &bn)) && bn == 1 && b[0] == text[i];
    }
    CHECK(digits);
    free(ids);
    free(text);
    glyd_tokenizerFree(t);
}

TEST(tokenizer_megabytes_of_one_emoji)
{
    static const char kEmoji[] = "\xF0\x9F\x98\x80"; /* U+1F600, one piece of megabytes */
    size_t const n = big_size();
    glyd_tokenizer* const t = open_qwen3();
    uint8_t* const text = repeated(kEmoji, 4, n);
    size_t nb = 0, err;
    int* ids;
    if (!t || !text) { glyd_tokenizerFree(t); free(text); return; }
    ids = encode_timed(t, "emoji", text, n, &nb, &err);
    CHECK_OK(err);
    CHECK(nb > 0 && nb <= n / 4); /* the vocabulary has the emoji as one token */
    CHECK(ids_spell(t, ids, nb, text, n));
    free(ids);
    free(text);
    glyd_tokenizerFree(t);
}

TEST(tokenizer_megabytes_of_random_bytes_refused)
{
    size_t const n = big_size();
    glyd_tokenizer* const t = open_qwen3();
    uint8_t* const text = (uint8_t*)malloc(n);
    test_rng rng = { 0x9E3779B97F4A7C15ULL };
    size_t nb = 0, err;
    int* ids;
    if (!t || !text) { glyd_tokenizerFree(t); free(text); return; }
    rng_fill(&rng, text, n);
    /* not UTF-8: refused as a whole, never tokenized in part */
    ids = encode_timed(t, "random bytes", text, n, &nb, &err);
    CHECK_ERR(err, GLYD_error_GENERIC);
    CHECK(ids == NULL && nb == 0);
    /* and a text valid up to its last byte */
    memset(text, 'a', n);
    text[n - 1] = 0xC3;
    ids = encode_timed(t, "one bad byte at the end", text, n, &nb, &err);
    CHECK_ERR(err, GLYD_error_GENERIC);
    CHECK(ids == NULL);
    free(text);
    glyd_tokenizerFree(t);
}

/* Random code points of every plane, marks among them: not NFC, so the ids
 * spell the text's NFC. */
TEST(tokenizer_megabytes_of_random_code_points)
{
    size_t const chars = big_size() / 3;
    glyd_tokenizer* const t = open_qwen3();
    uint8_t* const text = (uint8_t*)malloc(4 * chars);
    test_rng rng = { 0x2545F4914F6CDD1DULL };
    size_t n = 0, nb = 0, err, i;
    int* ids;
    if (!t || !text) { glyd_tokenizerFree(t); free(text); return; }
    for (i = 0; i < chars; i++) {
        uint64_t const r = rng_next(&rng);
        utf8proc_int32_t c;
        switch (r % 4) {
        case 0: c = (utf8proc_int32_t)(0x20 + (r >> 8) % 0x60); break;   /* ASCII */
        case 1: c = (utf8proc_int32_t)(0x300 + (r >> 8) % 0x70); break;  /* combining marks */
        default: c = (utf8proc_int32_t)((r >> 8) % 0x110000); break;
        }
        if ((c >= 0xD800 && c < 0xE000) || c == 0) c = 'x';
        n += (size_t)utf8proc_encode_char(c, text + n);
    }
    ids = encode_timed(t, "random code points", text, n, &nb, &err);
    CHECK_OK(err);
    CHECK(ids_spell_nfc(t, ids, nb, text, n));
    free(ids);
    free(text);
    glyd_tokenizerFree(t);
}

/* alice29.txt without its spaces and line breaks, over and over: one line
 * of long pieces (words run together); then megabytes of one letter and of
 * spaces, single pieces; then a run of vertical tabs (whitespace that does
 * not merge) long enough to pass PCRE2's default match limit. */
TEST(tokenizer_megabytes_of_one_line_and_long_runs)
{
    char path[1100];
    size_t const n = big_size();
    glyd_tokenizer* const t = open_qwen3();
    size_t size = 0, len = 0, nb = 0, err, i;
    uint8_t* alice;
    uint8_t* text;
    int* ids;
    snprintf(path, sizeof path, "%s/text/alice29.txt", corpus_dir());
    alice = read_file(path, &size);
    text = (uint8_t*)malloc(n);
    if (!t || !alice || !text) { glyd_tokenizerFree(t); free(alice); free(text); return; }
    for (i = 0; len < n; i = (i + 1) % size)
        if (alice[i] != ' ' && alice[i] != '\n' && alice[i] != '\r') text[len++] = alice[i];
    ids = encode_timed(t, "one line", text, n, &nb, &err);
    CHECK_OK(err);
    CHECK(nb > n / 8 && nb < n / 2);
    CHECK(ids_spell(t, ids, nb, text, n));
    free(ids);
    for (i = 0; i < 2; i++) {
        size_t const run = piece_size();
        memset(text, i ? ' ' : 'a', run);
        ids = encode_timed(t, i ? "spaces" : "letters", text, run, &nb, &err);
        CHECK_OK(err);
        CHECK(nb > 0 && nb <= run / 8); /* tokens of 8 letters, of up to 128 spaces */
        CHECK(ids_spell(t, ids, nb, text, run));
        free(ids);
    }
    free(text);
    {
        size_t const runLen = 12u << 20; /* \s*[\r\n]+ takes a step a byte; the limit is 10M steps */
        text = (uint8_t*)malloc(runLen);
        if (text) {
            memset(text, '\v', runLen);
            ids = encode_timed(t, "vertical tabs", text, runLen, &nb, &err);
            CHECK_OK(err);
            CHECK(nb == runLen && ids_spell(t, ids, nb, text, runLen));
            free(ids);
        }
    }
    free(text);
    free(alice);
    glyd_tokenizerFree(t);
}

/* ------------------------------------------------------------------------ */
/* NFC                                                                      */
/* ------------------------------------------------------------------------ */

/* Whether glyd_textNfc gives what utf8proc_map gives. */
static int nfc_as_utf8proc(const uint8_t* text, size_t n)
{
    utf8proc_uint8_t* want = NULL;
    uint8_t* got = NULL;
    size_t gotLen = 0;
    utf8proc_ssize_t const wantLen =
        utf8proc_map(text, (utf8proc_ssize_t)n, &want, (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    size_t const r = glyd_textNfc(text, n, &got, &gotLen);
    int const same = wantLen >= 0 && !glyd_isError(r) && gotLen == (size_t)wantLen && memcmp(got, want, gotLen) == 0;
    free(want);
    free(got);
    return same;
}

/* Code points where NFC has work to do: marks of several classes, letters
 * they compose with, Hangul jamo and syllables, singletons, characters
 * excluded from composition, and ASCII between them. */
static const utf8proc_int32_t kNfcPalette[] = {
    'a', 'e', 'A', 'o', 'u', 'q', ' ', '.', '1', 0x300, 0x301, 0x302, 0x308, 0x30A, 0x316, 0x323, 0x327, 0x328,
    0x345, 0x344, 0x340, 0x1DCE, 0x05B0, 0x0F71, 0x0F72, 0x0F74, 0x093C, 0x0915, 0x0958, 0x212B, 0x2126, 0x00C5,
    0x00E9, 0x1E0B, 0x1E63, 0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x3099, 0x304B, 0x0CC6, 0x0CD5, 0x0CC2,
    0x0DD9, 0x0DCF, 0x0DCA, 0x1F600, 0x4E00, 0x03B1, 0x0313, 0x1F00,
};

TEST(tokenizer_nfc_as_utf8proc_on_mixed_marks)
{
    size_t const nbPalette = sizeof kNfcPalette / sizeof kNfcPalette[0];
    test_rng rng = { 0xD1B54A32D192ED03ULL };
    uint8_t text[4 * 64];
    int round, same = 1;
    for (round = 0; round < 20000 && same; round++) {
        size_t const chars = 1 + rng_next(&rng) % 64;
        size_t n = 0, i;
        for (i = 0; i < chars; i++)
            n += (size_t)utf8proc_encode_char(kNfcPalette[rng_next(&rng) % nbPalette], text + n);
        same = nfc_as_utf8proc(text, n);
        if (!same) fprintf(stderr, "# NFC differs from utf8proc_map on round %d\n", round);
    }
    CHECK(same);
}

/* A run of marks in the wrong order: utf8proc_map's exchange sort takes
 * time quadratic in its length. */
TEST(tokenizer_nfc_long_run_of_marks)
{
    static const char kPair[] = "\xCC\x81\xCC\x96"; /* U+0301 (class 230), U+0316 (class 220) */
    size_t const pairs = harness_quick() ? 100000 : 500000;
    size_t const n = 1 + 4 * pairs;
    uint8_t* const text = (uint8_t*)malloc(n);
    uint8_t* nfc = NULL;
    size_t len = 0, i, ok;
    double t0, took;
    if (!text) { CHECK(text != NULL); return; }
    text[0] = 'a';
    for (i = 0; i < pairs; i++) memcpy(text + 1 + 4 * i, kPair, 4);
    CHECK(nfc_as_utf8proc(text, 1 + 4 * 50)); /* where utf8proc_map is quick */
    t0 = seconds();
    CHECK_OK(glyd_textNfc(text, n, &nfc, &len));
    took = seconds() - t0;
    CHECK(took <= TIME_BOUND_S);
    /* a + U+0301 compose to U+00E1; the U+0316 come first, then the rest of
     * the U+0301 */
    ok = nfc && len == n - 1 && !memcmp(nfc, "\xC3\xA1", 2);
    for (i = 0; ok && i < pairs; i++) ok = !memcmp(nfc + 2 + 2 * i, "\xCC\x96", 2);
    for (i = 0; ok && i + 1 < pairs; i++) ok = !memcmp(nfc + 2 + 2 * pairs + 2 * i, "\xCC\x81", 2);
    CHECK(ok);
    free(nfc);
    /* a long run of marks of a few classes, several marks to a class: their
     * order within a class is kept */
    {
        static const utf8proc_int32_t kMarks[] = { 0x300, 0x301, 0x302, 0x316, 0x317, 0x323, 0x327, 0x345, 0x5B0 };
        test_rng rng = { 0xA0761D6478BD642FULL };
        size_t m = 0;
        text[m++] = 'o';
        for (i = 0; i < 2000; i++)
            m += (size_t)utf8proc_encode_char(kMarks[rng_next(&rng) % (sizeof kMarks / sizeof kMarks[0])], text + m);
        CHECK(nfc_as_utf8proc(text, m));
    }
    free(text);
}

/* ------------------------------------------------------------------------ */
/* The same ids as the earlier implementation                               */
/* ------------------------------------------------------------------------ */

/* GENERATOR BEGIN (the earlier ids below came from this text) */
/* Text that mixes what tokenizers meet: words, contractions, numbers,
 * punctuation, runs of spaces, tabs and line breaks, letters with accents
 * composed and not, Greek, Cyrillic, Arabic, Devanagari, Thai, CJK, Hangul
 * syllables and jamo, emoji with modifiers and joiners, marks out of
 * order, added tokens written in the text, and long runs (pieces of
 * hundreds of bytes). */
static const char* const kFragments[] = {
    "the", "quick", "brown", "fox", "Alice", "tokenizer", "na\xC3\xAFve", "caf\xC3\xA9", "cafe\xCC\x81",
    "\xC3\x85ngstr\xC3\xB6m", "A\xCC\x8A", "\xE2\x84\xAB", "r\xC3\xA9sum\xC3\xA9", "I'm", "they've", "you'd",
    "John's", "WE'LL", "don't", "\xCE\x93\xCE\xB5\xCE\xB9\xCE\xAC", "\xCE\xBA\xCF\x8C\xCF\x83\xCE\xBC\xCE\xB5",
    "\xD0\x97\xD0\xB4\xD1\x80\xD0\xB0\xD0\xB2\xD1\x81\xD1\x82\xD0\xB2\xD1\x83\xD0\xB9", "\xD0\xBC\xD0\xB8\xD1\x80",
    "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7", "\xE4\xBD\xA0\xE5\xA5\xBD", "\xE4\xB8\x96\xE7\x95\x8C",
    "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF", "\xEC\x95\x88\xEB\x85\x95",
    "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
    "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5", "Ti\xE1\xBA\xBFng", "Vi\xE1\xBB\x87t",
    "\xF0\x9F\xA4\x96", "\xF0\x9F\x9A\x80", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
    "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7", "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7",
    "a\xCC\x81\xCC\xA3", "q\xCC\x87\xCC\xA3", "\xCC\x81", "\xCD\x84", "\xE0\xA5\x98", "\xE2\x84\xA6",
    "3.14159", "-42", "1e-10", "1,234,567", "2+2=4", "!", "?", "...", "--", "=>", "(", ")", "{", "}", "\"",
    "\xC2\xAB", "\xC2\xBB", "\xE2\x80\x94", "\xE2\x80\x9C", "\xE2\x80\x9D", "#", "@", "$", "%", "&&", "||",
    " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\xA8",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_", "<|", "<think>", "</think>",
};

/* One of the long runs: a character or a short unit repeated. */
static const char* const kRunUnits[] = {
    "a", " ", "-", "=", "7", "\n", " \n", "\xF0\x9F\x98\x80", "\xC3\xA9", "\xE5\xAD\x97", "ab", ".,", "\t ",
};

static size_t mixed_word(uint64_t r, char* out)
{
    size_t const len = 300 + r % 700, nbUnits = sizeof kRunUnits / sizeof kRunUnits[0];
    size_t i, n = 0;
    if ((r >> 20) % 3 == 0) { /* letters at random: one long word */
        uint64_t x = r | 1;
        for (i = 0; i < len; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            out[n++] = (char)('a' + x % 26);
        }
        return n;
    }
    {
        const char* const unit = kRunUnits[(r >> 24) % nbUnits];
        size_t const ul = strlen(unit);
        for (i = 0; i < len; i++, n += ul) memcpy(out + n, unit, ul);
    }
    return n;
}

/* About `target` bytes of it (malloc'd, *n bytes). */
static char* mixed_text(size_t target, size_t* n)
{
    size_t const nbFragments = sizeof kFragments / sizeof kFragments[0];
    char* const text = (char*)malloc(target + 8192);
    test_rng rng = { 0x853C49E6748FEA9BULL };
    *n = 0;
    while (text && *n < target) {
        uint64_t const r = rng_next(&rng);
        if (r % 150 == 0) {
            *n += mixed_word(r >> 8, text + *n);
        } else if (r % 7 == 0) { /* a number of 1 to 30 digits */
            size_t const digits = 1 + (r >> 8) % 30;
            size_t i;
            for (i = 0; i < digits; i++) text[(*n)++] = (char)('0' + (r >> (12 + i)) % 10);
        } else {
            const char* const f = kFragments[(r >> 8) % nbFragments];
            memcpy(text + *n, f, strlen(f));
            *n += strlen(f);
        }
        if ((r >> 40) % 4 != 0) text[(*n)++] = ' ';
    }
    return text;
}
/* GENERATOR END */

/* The ids' count and XXH64 (of them as 32-bit integers, as stored here)
 * that the implementation before this one gave. */
typedef struct {
    const char* name;           /* under the corpus folder; NULL: mixed_text */
    size_t count;
    uint64_t hash;
} earlier_ids;

static const earlier_ids kEarlier[] = {
    { NULL, 148816, 0x0a8a7d91d440423cULL },
    { "text/asyoulik.txt", 35227, 0x908494f76cd9c2f2ULL },
    { "text/lcet10.txt", 90051, 0x088ae8e863594449ULL },
    { "text/plrabn12.txt", 120615, 0x12534b794f7cac50ULL },
    { "text/html", 36149, 0x0619bd09e62a4f92ULL },
    { "text/urls.10K", 311627, 0x13c7c1fef74ec503ULL },
    { "text/kppkn.gtb", 183861, 0x0931472b2a952c3dULL },
    { "logs/Android_2k.log", 128819, 0xf7a4fb501c232aceULL },
    { "logs/Windows_2k.log", 118907, 0x631a7f0f59c00da3ULL },
};

TEST(tokenizer_ids_as_before_on_corpus_and_mixed_text)
{
    glyd_tokenizer* const t = open_qwen3();
    size_t k;
    if (!t) return;
    for (k = 0; k < sizeof kEarlier / sizeof kEarlier[0]; k++) {
        char path[1100];
        size_t n = 0, nb = 0;
        int* ids = NULL;
        uint8_t* text;
        if (kEarlier[k].name) {
            snprintf(path, sizeof path, "%s/%s", corpus_dir(), kEarlier[k].name);
            text = read_file(path, &n);
        } else {
            text = (uint8_t*)mixed_text(300000, &n);
        }
        if (!text) { CHECK(text != NULL); continue; }
        CHECK_OK(glyd_tokenizerEncode(t, (const char*)text, n, &ids, &nb));
        if (nb != kEarlier[k].count || XXH64(ids, nb * sizeof *ids, 0) != kEarlier[k].hash) {
            fprintf(stderr, "# %s: %zu ids, %016llx\n", kEarlier[k].name ? kEarlier[k].name : "mixed text", nb,
                    (unsigned long long)XXH64(ids, nb * sizeof *ids, 0));
            CHECK(!"the ids differ from the earlier ones");
        }
        CHECK(ids_spell_nfc(t, ids, nb, text, n));
        if (!kEarlier[k].name) CHECK(nfc_as_utf8proc(text, n));
        free(ids);
        free(text);
    }
    glyd_tokenizerFree(t);
}

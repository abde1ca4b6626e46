/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tokenizer_forms.c: the tokenizer.json forms of Llama 2 and Mistral
 * (Prepend and Replace normalizers, byte fallback, <unk>), of Mistral's
 * Metaspace conversions (prepend_scheme always, first, never; split or
 * not), of Gemma 3 (a Replace normalizer, no pre-tokenizer), of Llama 3
 * (byte-level, its split pattern, ignore_merges) and added tokens with
 * each flag: trained small with the tokenizers library over the corpus
 * (tools/tokenizer_forms.py), their ids and decoded texts checked id for
 * id against the library's over corpus lines, log lines and hostile
 * strings; components not built refused in one line naming them. */
#include <stdlib.h>
#include <jansson.h>
#include <time.h>

#include "../../llm/infer/infer.h"
#include "harness.h"

#define FORMS_DIR "tests/data/tokenizers"

static glyd_tokenizer* open_form(const char* name)
{
    char path[256], msg[256] = "";
    size_t err;
    glyd_tokenizer* t;
    snprintf(path, sizeof path, FORMS_DIR "/%s", name);
    t = glyd_tokenizerOpen(path, msg, sizeof msg, &err);
    if (!t) fprintf(stderr, "# %s: %s\n", name, msg);
    return t;
}

/* Every case of one form: the ids, and the text decoded from them */
static void check_form(const char* name, size_t wantCases)
{
    json_error_t e;
    json_t* const ref = json_load_file(FORMS_DIR "/reference.json", JSON_ALLOW_NUL, &e);
    const json_t* const cases = json_object_get(ref, name);
    glyd_tokenizer* const t = open_form(name);
    size_t k, idsSeen = 0, badIds = 0, badText = 0;
    CHECK(t != NULL && json_array_size(cases) == wantCases);
    for (k = 0; t && k < json_array_size(cases); k++) {
        const json_t* const c = json_array_get(cases, k);
        const json_t* const want = json_object_get(c, "ids");
        const char* const text = json_string_value(json_object_get(c, "text"));
        const char* const decoded = json_string_value(json_object_get(c, "decoded"));
        int* ids = NULL;
        int* wantIds;
        char* back = NULL;
        size_t n = 0, i, size = 0, same;
        CHECK_OK(glyd_tokenizerEncode(t, text, json_string_length(json_object_get(c, "text")), &ids, &n));
        same = n == json_array_size(want);
        for (i = 0; same && i < n; i++) same = ids[i] == (int)json_integer_value(json_array_get(want, i));
        if (!same && badIds++ < 3) {
            fprintf(stderr, "# %s case %zu ids differ:", name, k);
            for (i = 0; i < n && i < 24; i++) fprintf(stderr, " %d", ids[i]);
            fprintf(stderr, "\n#   want:");
            for (i = 0; i < json_array_size(want) && i < 24; i++)
                fprintf(stderr, " %d", (int)json_integer_value(json_array_get(want, i)));
            fprintf(stderr, "\n");
        }
        idsSeen += json_array_size(want);
        /* decoding the reference ids */
        wantIds = (int*)malloc((json_array_size(want) + 1) * sizeof(int));
        for (i = 0; wantIds && i < json_array_size(want); i++) wantIds[i] = (int)json_integer_value(json_array_get(want, i));
        CHECK(wantIds != NULL);
        CHECK_OK(glyd_tokenizerDecode(t, wantIds, json_array_size(want), &back, &size));
        if (!back || size != json_string_length(json_object_get(c, "decoded")) || memcmp(back, decoded, size) != 0) {
            if (badText++ < 3) fprintf(stderr, "# %s case %zu decodes to [%s], want [%s]\n", name, k, back ? back : "", decoded);
        }
        free(back);
        free(wantIds);
        free(ids);
    }
    CHECK(badIds == 0);
    CHECK(badText == 0);
    CHECK(idsSeen > 5000);
    glyd_tokenizerFree(t);
    json_decref(ref);
}

TEST(tokenizer_forms_llama2) { check_form("llama2", 203); }
TEST(tokenizer_forms_gemma3) { check_form("gemma3", 203); }
TEST(tokenizer_forms_metaspace_first) { check_form("metaspace-first", 203); }
TEST(tokenizer_forms_metaspace_always_split) { check_form("metaspace-always-split", 203); }
TEST(tokenizer_forms_metaspace_never) { check_form("metaspace-never", 203); }
TEST(tokenizer_forms_added_flags) { check_form("flags", 203); }
TEST(tokenizer_forms_llama3) { check_form("llama3", 203); }

/* The llama2 form with one member replaced (a JSON value), loaded: NULL,
 * and the reason, one line naming what is refused */
static void check_refused(const char* member, const char* value, const char* inModel, const char* named)
{
    json_error_t e;
    json_t* const root = json_load_file(FORMS_DIR "/llama2/tokenizer.json", 0, &e);
    json_t* const v = json_loads(value, JSON_DECODE_ANY, &e);
    char why[256] = "", *text;
    size_t err;
    glyd_tokenizer* t;
    CHECK(root && v);
    if (!root || !v) { json_decref(root); json_decref(v); return; }
    json_object_set_new(inModel ? json_object_get(root, "model") : root, member, v);
    text = json_dumps(root, JSON_COMPACT);
    t = glyd_tokenizerLoad(text, strlen(text), why, sizeof why, &err);
    if (t || !strstr(why, named) || strchr(why, '\n')) fprintf(stderr, "# %s: [%s]\n", value, why);
    CHECK(t == NULL && glyd_isError(err));
    CHECK(strstr(why, named) != NULL && strchr(why, '\n') == NULL);
    glyd_tokenizerFree(t);
    free(text);
    json_decref(root);
}

TEST(tokenizer_forms_refuse_what_is_not_built)
{
    check_refused("normalizer", "{\"type\": \"NFKC\"}", NULL, "NFKC");
    check_refused("normalizer", "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"}]}", NULL, "Lowercase");
    check_refused("normalizer", "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \" +\"}, \"content\": \"x\"}", NULL,
                  "Replace with a regex");
    check_refused("normalizer", "{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"\"}", NULL, "Precompiled");
    check_refused("pre_tokenizer", "{\"type\": \"Whitespace\"}", NULL, "Whitespace");
    check_refused("pre_tokenizer", "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", NULL, "add_prefix_space");
    check_refused("pre_tokenizer", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Removed\"}",
                  NULL, "Split");
    check_refused("pre_tokenizer", "{\"type\": \"Metaspace\", \"replacement\": \"_\", \"prepend_scheme\": \"often\"}",
                  NULL, "often");
    check_refused("pre_tokenizer", "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\"}]}", NULL, "Digits");
    check_refused("decoder", "{\"type\": \"WordPiece\", \"prefix\": \"##\"}", NULL, "WordPiece");
    check_refused("decoder", "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"CTC\"}]}", NULL, "CTC");
    check_refused("type", "\"Unigram\"", "model", "Unigram");
    check_refused("dropout", "0.1", "model", "dropout");
    check_refused("continuing_subword_prefix", "\"##\"", "model", "continuing_subword_prefix");
    check_refused("end_of_word_suffix", "\"</w>\"", "model", "end_of_word_suffix");
    check_refused("unk_token", "\"<nope>\"", "model", "unk_token");
}

/* What each large input may take: about 100 times what it takes here, so
 * that only a blow-up (a quadratic step) fails it. */
#define TIME_BOUND_S 10.0

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Megabytes that are one piece (no pre-tokenizer) or long runs of one
 * character, in time, and decoded back to the text (Gemma 3's form loses
 * nothing but U+2581, which decodes as a space; Llama 3's nothing) */
static void check_large(const char* form, const char* unit, size_t times)
{
    int const rep = !strcmp(unit, "\xE2\x96\x81");
    glyd_tokenizer* const t = open_form(form);
    size_t const ul = strlen(unit), n = ul * times;
    char* const text = (char*)malloc(n + 1);
    char* back = NULL;
    int* ids = NULL;
    size_t nb = 0, size = 0, i;
    double t0;
    CHECK(t && text);
    if (!t || !text) { glyd_tokenizerFree(t); free(text); return; }
    for (i = 0; i < times; i++) memcpy(text + i * ul, unit, ul);
    t0 = seconds();
    CHECK_OK(glyd_tokenizerEncode(t, text, n, &ids, &nb));
    CHECK_OK(glyd_tokenizerDecode(t, ids, nb, &back, &size));
    if (seconds() - t0 > TIME_BOUND_S) fprintf(stderr, "# %s: %zu bytes took %.1f s\n", form, n, seconds() - t0);
    CHECK(seconds() - t0 < TIME_BOUND_S);
    if (rep) {
        for (i = 0; back && i < size && back[i] == ' '; i++) {}
        CHECK(back && size == times && i == size);
    } else {
        if (!(nb > 0 && back && size == n && memcmp(back, text, n) == 0))
            fprintf(stderr, "# %s: %zu bytes of [%.20s] decode to %zu bytes\n", form, n, unit, size);
        CHECK(nb > 0 && back && size == n && memcmp(back, text, n) == 0);
    }
    free(back);
    free(ids);
    free(text);
    glyd_tokenizerFree(t);
}

TEST(tokenizer_forms_megabytes_as_one_piece)
{
    char* alice = NULL;
    size_t size = 0;
    check_large("gemma3", " ", 1 << 20);
    check_large("gemma3", "\n", 1 << 20);
    check_large("gemma3", "\xE2\x96\x81", 1 << 18);        /* U+2581 itself */
    check_large("gemma3", "\xF0\x9F\x98\x80", 1 << 18);    /* one emoji, byte fallback */
    check_large("gemma3", "\xE4\xB8\xAD\xE6\x96\x87", 1 << 18); /* CJK, byte fallback */
    check_large("gemma3", "e\xCC\x81 ", 1 << 18);          /* combining marks */
    check_large("llama3", " ", 1 << 20);
    check_large("llama3", " \n", 1 << 19);
    check_large("llama3", "7", 1 << 20);
    CHECK_OK(glyd_readFile("tests/data/../../samples/alice29.txt", &alice, &size));
    if (alice) {
        /* alice29.txt without its spaces and line breaks, as one piece */
        size_t i, k = 0;
        for (i = 0; i < size; i++)
            if (alice[i] != ' ' && alice[i] != '\n' && alice[i] != '\r') alice[k++] = alice[i];
        alice[k] = 0;
        check_large("gemma3", alice, 8);
        check_large("llama3", alice, 8);
    }
    free(alice);
}

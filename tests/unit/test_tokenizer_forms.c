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

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_tokenizer.c: hostile tokenizer.json files and texts. The input is a
 * tokenizer.json, a NUL byte, then a text to encode. The text's NFC must be
 * utf8proc_map's, and refused where utf8proc_map refuses it (not UTF-8);
 * so must the encoding, and every id that comes out must name a token
 * whose bytes can be read; the ids must decode to UTF-8 text. The seeds
 * hold each form built: byte-level (Qwen's, Llama 3's), SentencePiece-style
 * with byte fallback (Llama 2's, Gemma 3's, Metaspace), added tokens with
 * each flag. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "../../llm/infer/infer.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* Whether the text is UTF-8, after checking glyd_textNfc against
 * utf8proc_map (quadratic in a run of marks, fine at fuzzing sizes). */
static int nfc_checked(const uint8_t* text, size_t n)
{
    utf8proc_uint8_t* want = NULL;
    uint8_t* got = NULL;
    size_t gotLen = 0;
    utf8proc_ssize_t const wantLen =
        utf8proc_map(text, (utf8proc_ssize_t)n, &want, (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    size_t const r = glyd_textNfc(text, n, &got, &gotLen);
    if (wantLen < 0) {
        if (!glyd_isError(r) || got) abort();
    } else if (glyd_isError(r) || gotLen != (size_t)wantLen || memcmp(got, want, gotLen) != 0) {
        abort();
    }
    free(want);
    free(got);
    return wantLen >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const uint8_t* const nul = (const uint8_t*)memchr(data, 0, size);
    size_t const jsonSize = nul ? (size_t)(nul - data) : size;
    const char* const text = nul ? (const char*)nul + 1 : "";
    size_t const textSize = nul ? size - jsonSize - 1 : 0;
    int const utf8 = nfc_checked((const uint8_t*)text, textSize);
    char why[256];
    size_t err, n = 0, i, r;
    int* ids = NULL;
    glyd_tokenizer* const t = glyd_tokenizerLoad((const char*)data, jsonSize, why, sizeof why, &err);
    if (!t) return 0;
    r = glyd_tokenizerEncode(t, text, textSize, &ids, &n);
    /* GENERIC is the refusal of text that is not UTF-8, and only that */
    if (utf8 == (glyd_getErrorCode(r) == GLYD_error_GENERIC)) abort();
    if (!glyd_isError(r)) {
        for (i = 0; i < n; i++) {
            const unsigned char* b;
            size_t bn;
            if (glyd_isError(glyd_tokenizerBytes(t, ids[i], &b, &bn))) abort();
        }
        {
            char* back = NULL;
            size_t backSize = 0, pos = 0;
            if (glyd_isError(glyd_tokenizerDecode(t, ids, n, &back, &backSize)) || !back || back[backSize]) abort();
            while (pos < backSize) {
                utf8proc_int32_t c;
                utf8proc_ssize_t const k =
                    utf8proc_iterate((const utf8proc_uint8_t*)back + pos, (utf8proc_ssize_t)(backSize - pos), &c);
                if (k <= 0) abort();
                pos += (size_t)k;
            }
            free(back);
        }
    }
    free(ids);
    glyd_tokenizerFree(t);
    return 0;
}

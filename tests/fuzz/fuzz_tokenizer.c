/* fuzz_tokenizer.c: hostile tokenizer.json files and texts. The input is a
 * tokenizer.json, a NUL byte, then a text to encode; every id that comes
 * out must name a token whose bytes can be read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/infer/infer.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const uint8_t* const nul = (const uint8_t*)memchr(data, 0, size);
    size_t const jsonSize = nul ? (size_t)(nul - data) : size;
    const char* const text = nul ? (const char*)nul + 1 : "";
    size_t const textSize = nul ? size - jsonSize - 1 : 0;
    char why[256];
    size_t err, n = 0, i;
    int* ids = NULL;
    glyd_tokenizer* const t = glyd_tokenizerLoad((const char*)data, jsonSize, why, sizeof why, &err);
    if (!t) return 0;
    if (!glyd_isError(glyd_tokenizerEncode(t, text, textSize, &ids, &n))) {
        for (i = 0; i < n; i++) {
            const unsigned char* b;
            size_t bn;
            if (glyd_isError(glyd_tokenizerBytes(t, ids[i], &b, &bn))) abort();
        }
    }
    free(ids);
    glyd_tokenizerFree(t);
    return 0;
}

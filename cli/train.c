/* SPDX-License-Identifier: BSD-3-Clause */
/* train.c: glyd --train FILES -o DICT: a dictionary from sample files. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_train(const cli_options* o, const char* const* inputs, int nbInputs)
{
    size_t const cap = o->maxDict ? o->maxDict : (size_t)112640; /* 110 KiB, as zstd */
    size_t* sizes = (size_t*)calloc((size_t)nbInputs, sizeof(size_t));
    uint8_t* all = NULL;
    uint8_t* dict = (uint8_t*)malloc(cap);
    size_t total = 0, r;
    const char* const name = o->output ? o->output : "dictionary";
    cli_outRules rules;
    cli_out out;
    int i, err = 1;

    if (!sizes || !dict) { cli_error("out of memory"); goto done; }
    if (o->toStdout) { cli_error("--train writes a file: name it with -o"); goto done; }
    rules.force = o->force;
    rules.input = NULL;
    rules.sync = 0;
    /* refused before the work if it cannot be written */
    if (cli_outPlan(&out, name, &rules)) goto done;
    for (i = 0; i < nbInputs; i++) {
        size_t n;
        uint8_t* const data = cli_readFile(inputs[i], &n);
        uint8_t* grown;
        if (!data) goto done;
        grown = (uint8_t*)realloc(all, total + n + 1);
        if (!grown) { free(data); cli_error("out of memory"); goto done; }
        all = grown;
        memcpy(all + total, data, n);
        free(data);
        sizes[i] = n;
        total += n;
    }
    r = glyd_trainDictionary(dict, cap, all, sizes, (unsigned)nbInputs);
    if (glyd_isError(r)) {
        if (glyd_getErrorCode(r) == GLYD_error_srcSize_wrong)
            cli_error("cannot train on %d file(s), %zu bytes: give more samples (hundreds of small files)",
                      nbInputs, total);
        else cli_error("training failed: %s", glyd_getErrorName(r));
        goto done;
    }
    if (cli_outOpen(&out, name, &rules)) goto done;
    if (cli_outClose(&out, cli_outWrite(&out, dict, r) == 0, NULL)) goto done;
    cli_note(o, 1, "%s: dictionary of %zu bytes (ID %u) from %d samples, %zu bytes\n", name, r,
             glyd_getDictID(dict, r), nbInputs, total);
    err = 0;
done:
    free(sizes);
    free(all);
    free(dict);
    return err;
}

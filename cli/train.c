/* train.c: glyd --train FILES -o DICT: a dictionary from sample files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cli_train(const cli_options* o, const char* const* inputs, int nbInputs)
{
    size_t const cap = o->maxDict ? o->maxDict : (size_t)112640; /* 110 KiB, as zstd */
    size_t* sizes = (size_t*)calloc((size_t)nbInputs, sizeof(size_t));
    uint8_t* all = NULL;
    uint8_t* dict = (uint8_t*)malloc(cap);
    size_t total = 0, r;
    const char* const out = o->output ? o->output : "dictionary";
    struct stat st;
    FILE* f;
    int i, err = 1;

    if (!sizes || !dict) { cli_error("out of memory"); goto done; }
    if (o->toStdout) { cli_error("--train writes a file: name it with -o"); goto done; }
    if (!o->force && stat(out, &st) == 0) {
        cli_error("%s already exists (use -f to overwrite)", out);
        goto done;
    }
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
    f = fopen(out, "wb");
    if (!f) { cli_error("%s: %s", out, strerror(errno)); goto done; }
    if (fwrite(dict, 1, r, f) != r || fclose(f) != 0) {
        cli_error("%s: write error", out);
        remove(out);
        goto done;
    }
    cli_note(o, 1, "%s: dictionary of %zu bytes (ID %u) from %d samples, %zu bytes\n", out, r,
             glyd_getDictID(dict, r), nbInputs, total);
    err = 0;
done:
    free(sizes);
    free(all);
    free(dict);
    return err;
}

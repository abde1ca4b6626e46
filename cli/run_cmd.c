/*
 * run_cmd.c: glyd run MODEL: runs a model from its compressed weights.
 * Token ids in, logits or greedy continuations out; the chat (tokenizer,
 * template, sampling) builds on it.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE* f)
{
    fprintf(f,
        "Usage: glyd run MODEL [OPTIONS]\n"
        "Runs a model (a Hugging Face folder or a packed model) with its weights kept\n"
        "compressed in memory; a folder's weights are packed on the fly.\n"
        "\n"
        "  --tokens \"IDS\"       token ids, space-separated, fed in order\n"
        "  --dump-logits FILE   write every fed token's logits to FILE (float32,\n"
        "                       little-endian, [tokens][vocab])\n"
        "  -n N                 then generate N tokens greedily and print their ids\n"
        "  --kv-dtype f32|bf16  KV cache precision (default bf16)\n"
        "  --ctx N              context length: positions the KV cache holds\n"
        "                       (default: the model's, or what the tokens need)\n"
        "  --plain              use a folder's weights as plain bf16 (no compression)\n"
        "  --exact              logits bit-identical to the engine on plain bf16 weights\n"
        "                       (what the CPU engine always gives)\n"
        "  -T#, --threads=#     threads (default: every core)\n"
        "  -v                   print the model's memory figures\n"
        "  -h, --help           this help\n"
        "\n"
        "The chat (template, sampling) is not built yet: give token ids (glyd tokenize).\n");
}

typedef struct {
    const char* model;
    const char* tokens;
    const char* dump;
    long generate;
    int kvF32;
    unsigned long long ctx;
    int plain;
    unsigned threads;
    int verbose;
} run_opts;

static int parse_ull(const char* s, unsigned long long* v)
{
    char* end;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno || end == s || *end;
}

static int parse(int argc, char** argv, run_opts* o)
{
    int i;
    memset(o, 0, sizeof(*o));
    for (i = 2; i < argc; i++) {
        const char* const a = argv[i];
        unsigned long long v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
        else if (!strcmp(a, "--tokens") && i + 1 < argc) o->tokens = argv[++i];
        else if (!strcmp(a, "--dump-logits") && i + 1 < argc) o->dump = argv[++i];
        else if (!strcmp(a, "-n") && i + 1 < argc) {
            if (parse_ull(argv[++i], &v) || v > 1000000) { cli_error("-n: expected a count, got %s", argv[i]); return 1; }
            o->generate = (long)v;
        } else if (!strcmp(a, "--kv-dtype") && i + 1 < argc) {
            const char* const d = argv[++i];
            if (!strcmp(d, "f32")) o->kvF32 = 1;
            else if (!strcmp(d, "bf16")) o->kvF32 = 0;
            else { cli_error("--kv-dtype: expected f32 or bf16, got %s", d); return 1; }
        } else if (!strcmp(a, "--ctx") && i + 1 < argc) {
            if (parse_ull(argv[++i], &v) || v == 0) { cli_error("--ctx: expected a length, got %s", argv[i]); return 1; }
            o->ctx = v;
        } else if (!strcmp(a, "--plain")) o->plain = 1;
        else if (!strcmp(a, "--exact")) { /* the CPU engine always sums in one order */ }
        else if (!strncmp(a, "-T", 2) && a[2]) {
            if (parse_ull(a + 2, &v) || v > 256) { cli_error("-T: expected 0..256, got %s", a + 2); return 1; }
            o->threads = (unsigned)v;
        } else if (!strncmp(a, "--threads=", 10)) {
            if (parse_ull(a + 10, &v) || v > 256) { cli_error("--threads: expected 0..256, got %s", a + 10); return 1; }
            o->threads = (unsigned)v;
        } else if (!strcmp(a, "-v")) o->verbose = 1;
        else if (a[0] == '-' && a[1]) { cli_error("run: unknown option %s (see glyd run --help)", a); return 1; }
        else if (!o->model) o->model = a;
        else { cli_error("run: one model only (got %s and %s)", o->model, a); return 1; }
    }
    if (!o->model) { usage(stderr); return 1; }
    return 0;
}

/* Parses "1 2 3" into ids; returns the count, -1 after an error. */
static long parse_ids(const char* s, int** ids)
{
    long n = 0, cap = 16;
    *ids = (int*)malloc((size_t)cap * sizeof(int));
    if (!*ids) { cli_error("out of memory"); return -1; }
    for (;;) {
        char* end;
        long v;
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == ',') s++;
        if (!*s) break;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || v < 0 || v > INT_MAX) {
            cli_error("--tokens: not a token id at \"%.20s\"", s);
            free(*ids);
            return -1;
        }
        if (n == cap) {
            int* const d = (int*)realloc(*ids, (size_t)(cap *= 2) * sizeof(int));
            if (!d) { cli_error("out of memory"); free(*ids); return -1; }
            *ids = d;
        }
        (*ids)[n++] = (int)v;
        s = end;
    }
    return n;
}

static void on_progress(void* opaque, unsigned long long done, unsigned long long total)
{
    cli_progress* const p = (cli_progress*)opaque;
    (void)total;
    cli_progressUpdate(p, done, 0);
}

static int argmax(const float* v, unsigned n)
{
    unsigned i, best = 0;
    for (i = 1; i < n; i++) if (v[i] > v[best]) best = i;
    return (int)best;
}

int cli_run(int argc, char** argv)
{
    run_opts o;
    glyd_llmParams p;
    glyd_llmInfo info;
    glyd_llm* llm;
    char message[512] = "";
    cli_options co;
    cli_progress prog;
    int* ids = NULL;
    long nbIds = 0, i;
    float* logits = NULL;
    size_t err;
    int rc = 1;

    if (parse(argc, argv, &o)) return 1;
    if (!o.tokens) {
        cli_error("run: the chat is not built yet: give --tokens \"IDS\" (glyd tokenize MODEL --file F gives them)");
        return 1;
    }
    nbIds = parse_ids(o.tokens, &ids);
    if (nbIds < 0) return 1;
    if (nbIds == 0) { cli_error("--tokens: no token id"); free(ids); return 1; }

    memset(&co, 0, sizeof(co));
    co.verbosity = 1;
    co.progress = -1;
    memset(&p, 0, sizeof(p));
    p.nbThreads = o.threads;
    p.kvF32 = o.kvF32;
    p.plainWeights = o.plain;
    p.contextLength = o.ctx;
    p.message = message;
    p.messageCapacity = sizeof message;
    cli_progressStart(&prog, &co, "packing weights", 0);
    p.progress = on_progress;
    p.opaque = &prog;
    llm = glyd_llmOpen(o.model, &p, &err);
    cli_progressEnd(&prog);
    if (!llm) {
        cli_error("%s", message[0] ? message : glyd_getErrorName(err));
        free(ids);
        return 1;
    }
    glyd_llmGetInfo(llm, &info);
    if (o.verbose) {
        char a[32], b[32], c[32];
        fprintf(stderr, "%s: %s, %u layers, vocabulary %u; weights %s in memory (bf16: %s, %.1f%%); "
                        "KV cache %s for %llu positions\n",
                o.model, info.architecture, info.nbLayers, info.vocabSize,
                cli_size(a, sizeof a, info.weightBytes), cli_size(b, sizeof b, info.weightBytesBf16),
                100.0 * (double)info.weightBytes / (double)info.weightBytesBf16,
                cli_size(c, sizeof c, info.kvBytes), info.contextLength);
    }
    if ((unsigned long long)nbIds + (unsigned long long)o.generate > info.contextLength) {
        cli_error("run: %ld tokens do not fit the context of %llu positions (--ctx)", nbIds + o.generate,
                  info.contextLength);
        goto done;
    }
    for (i = 0; i < nbIds; i++) {
        if (ids[i] < 0 || (unsigned)ids[i] >= info.vocabSize) {
            cli_error("--tokens: id %d is outside the vocabulary (%u)", ids[i], info.vocabSize);
            goto done;
        }
    }
    logits = (float*)malloc((size_t)(o.dump ? nbIds : 1) * info.vocabSize * sizeof(float));
    if (!logits) { cli_error("out of memory"); goto done; }
    err = glyd_llmForward(llm, ids, (size_t)nbIds, 0, logits, o.dump != NULL);
    if (glyd_isError(err)) { cli_error("run: %s", glyd_getErrorName(err)); goto done; }
    if (o.dump) {
        /* written whole under a temporary name, then renamed */
        char tmp[4200];
        FILE* f;
        size_t const count = (size_t)nbIds * info.vocabSize;
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", o.dump, (long)getpid());
        f = fopen(tmp, "wb");
        if (!f || fwrite(logits, sizeof(float), count, f) != count || fclose(f) != 0) {
            cli_error("%s: %s", o.dump, strerror(errno));
            remove(tmp);
            goto done;
        }
        if (rename(tmp, o.dump) != 0) { cli_error("%s: %s", o.dump, strerror(errno)); remove(tmp); goto done; }
    }
    if (o.generate > 0) {
        const float* last = logits + (o.dump ? (size_t)(nbIds - 1) * info.vocabSize : 0);
        int next = argmax(last, info.vocabSize);
        long g;
        for (g = 0; g < o.generate; g++) {
            printf(g ? " %d" : "%d", next);
            if (g + 1 == o.generate) break;
            err = glyd_llmForward(llm, &next, 1, (size_t)(nbIds + g), logits, 0);
            if (glyd_isError(err)) { printf("\n"); cli_error("run: %s", glyd_getErrorName(err)); goto done; }
            next = argmax(logits, info.vocabSize);
        }
        printf("\n");
    }
    rc = 0;
done:
    free(logits);
    free(ids);
    glyd_llmClose(llm);
    return rc;
}

/* glyd tokenize MODEL --file F: F's token ids, space-separated, one line. */
int cli_tokenize(int argc, char** argv)
{
    const char* model = NULL;
    const char* file = NULL;
    glyd_tokenizer* tok;
    char message[512] = "";
    uint8_t* text;
    size_t size = 0, err, nb = 0, i;
    int* ids = NULL;
    int k;
    for (k = 2; k < argc; k++) {
        if (!strcmp(argv[k], "-h") || !strcmp(argv[k], "--help")) {
            printf("Usage: glyd tokenize MODEL --file FILE\n"
                   "Prints the token ids of FILE's text (UTF-8), space-separated, on one line.\n"
                   "MODEL: a model folder (tokenizer.json is enough), a packed model, or a\n"
                   "tokenizer.json file. Special tokens written in the text count as one token.\n");
            return 0;
        } else if (!strcmp(argv[k], "--file") && k + 1 < argc) file = argv[++k];
        else if (argv[k][0] == '-' && argv[k][1]) { cli_error("tokenize: unknown option %s", argv[k]); return 1; }
        else if (!model) model = argv[k];
        else { cli_error("tokenize: one model only"); return 1; }
    }
    if (!model || !file) { cli_error("usage: glyd tokenize MODEL --file FILE"); return 1; }
    text = cli_readFile(file, &size);
    if (!text) return 1;
    tok = glyd_tokenizerOpen(model, message, sizeof message, &err);
    if (!tok) { cli_error("%s", message); free(text); return 1; }
    err = glyd_tokenizerEncode(tok, (const char*)text, size, &ids, &nb);
    if (glyd_isError(err)) {
        cli_error("%s: %s", file, glyd_getErrorCode(err) == GLYD_error_GENERIC ? "not valid UTF-8 text" : glyd_getErrorName(err));
    } else {
        for (i = 0; i < nb; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    }
    free(ids);
    free(text);
    glyd_tokenizerFree(tok);
    return glyd_isError(err) ? 1 : 0;
}

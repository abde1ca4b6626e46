/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * run_cmd.c: glyd run MODEL: runs a model from its compressed weights.
 * Token ids in, logits or greedy continuations out; the chat (tokenizer,
 * template, sampling) builds on it.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
        "                       (in the chat: at most N tokens per reply)\n"
        "  --kv bf16|lossless|f32  the KV cache: bf16 (default), bf16 in coded pages\n"
        "                       (about 0.68 of the bytes, every value exact; the\n"
        "                       CPU only), or fp32 (--kv-dtype is the same option)\n"
        "  --ctx N              context length: positions the KV cache holds\n"
        "                       (default: the model's, or what the tokens need)\n"
        "  --plain              use a folder's weights as plain bf16 (no compression)\n"
        "  --compact            weights in the entropy layout: less memory, slower\n"
        "  --code-bits 3|4      the fast layout's exponent codes: 3 (less memory) or 4\n"
        "                       (faster on AVX2); default: this CPU's faster\n"
        "  --no-verify          skip checking a packed model's tensors against its\n"
        "                       checksums as they load (for a pack just verified)\n"
        "  --exact              logits bit-identical to the engine on plain bf16 weights\n"
        "                       (what the engine always gives, on either backend)\n"
        "  --chunked-prompts    Qwen3.5: a prompt's Gated DeltaNet layers in the chunked\n"
        "                       form, 16 tokens at a time (faster; its logits then differ\n"
        "                       from the tokens one at a time in the last bits)\n"
        "  --bf16-prompts       a prompt's products in bf16 pairs where the CPU has\n"
        "                       AVX512_BF16 (about twice as fast; activations rounded\n"
        "                       to bf16, as llama.cpp's bf16 does; decoding stays fp32)\n"
        "  --bf16-decode        a token's products in bf16 pairs too, where the CPU has\n"
        "                       AVX512_BF16 (faster decoding, the same rounding)\n"
        "  --gpu                run on a CUDA GPU: weights (fast layout or --plain) and\n"
        "                       KV cache in GPU memory; needs libglyd_cuda.so (make cuda)\n"
        "  --gpu=emulated       the GPU backend's kernels emulated on the CPU (slow; a check)\n"
        "  -T#, --threads=#     threads (default: every core)\n"
        "  -v                   print the model's memory figures\n"
        "  -h, --help           this help\n"
        "\n"
        "\n"
        "Without --tokens: a chat in the terminal, written by the model's chat template\n"
        "(ChatML when it has none), replies streamed; /reset forgets the conversation,\n"
        "/exit (or Ctrl-D) quits, Ctrl-C stops a reply. The model needs its tokenizer.json.\n"
        "  -p PROMPT            answer PROMPT once and exit\n"
        "  --system TEXT        a system prompt\n"
        "  --no-think           no thinking before the answer (enable_thinking=false:\n"
        "                       Qwen3, Qwen3.5)\n"
        "  --temp T             temperature (default 0.6; 0 = greedy)\n"
        "  --top-k K, --top-p P, --min-p P   (defaults 20, 0.95, 0)\n"
        "  --repeat-penalty R   (default 1: none)\n"
        "  --seed S             the sampler's seed (default: from the clock)\n");
}

typedef struct {
    const char* model;
    const char* tokens;
    const char* dump;
    long generate;
    int kvF32;
    int kvLossless;
    int chunkedPrompts;
    int bf16Prompts;
    int bf16Decode;
    unsigned long long ctx;
    int plain;
    int compact;
    unsigned codeBits;
    int noVerify;
    int gpu;
    unsigned threads;
    int verbose;
    /* the chat */
    const char* prompt;       /* -p: one answer, then exit */
    const char* system;
    int noThink;
    glyd_samplerParams sampling;
    int seeded;
} run_opts;

/* The longest context --ctx may ask for: the engine's bound on a model's
 * own (GLYD_MAX_POSITIONS), under which the cache's size cannot overflow. */
#define MAX_CTX (1ULL << 24)

/* A whole number in [lo, hi], digits only: strtoull alone would take "-5"
 * as 2^64 - 5, and " 5" or "5abc" in part. */
static int parse_count(const char* name, const char* s, unsigned long long lo, unsigned long long hi,
                       unsigned long long* v)
{
    char* end = NULL;
    errno = 0;
    if (*s >= '0' && *s <= '9') *v = strtoull(s, &end, 10);
    if (!end || errno || *end || *v < lo || *v > hi) {
        cli_error("%s: expected a whole number in %llu..%llu, got \"%s\"", name, lo, hi, s);
        return 1;
    }
    return 0;
}

static int parse_float(const char* name, const char* s, float lo, float hi, float* v)
{
    char* end;
    double d;
    errno = 0;
    d = strtod(s, &end);
    if (!((*s >= '0' && *s <= '9') || *s == '.') || errno || *end || !(d >= lo && d <= hi)) {
        cli_error("%s: expected a number in %g..%g, got \"%s\"", name, lo, hi, s);
        return 1;
    }
    *v = (float)d;
    return 0;
}

/* Options followed by a value. */
static int takes_value(const char* a)
{
    static const char* const kNames[] = { "-p", "--system", "--temp", "--top-k", "--top-p", "--min-p",
                                          "--repeat-penalty", "--seed", "--tokens", "--dump-logits", "-n",
                                          "--kv", "--kv-dtype", "--ctx" };
    size_t i;
    for (i = 0; i < sizeof kNames / sizeof kNames[0]; i++) if (!strcmp(a, kNames[i])) return 1;
    return 0;
}

static int parse(int argc, char** argv, run_opts* o)
{
    int i;
    memset(o, 0, sizeof(*o));
    /* Qwen3's recommended sampling for chat */
    o->sampling.temperature = 0.6f;
    o->sampling.topK = 20;
    o->sampling.topP = 0.95f;
    o->sampling.repetitionPenalty = 1.0f;
    o->generate = -1;
    for (i = 2; i < argc; i++) {
        const char* const a = argv[i];
        unsigned long long v;
        if (takes_value(a) && i + 1 == argc) { cli_error("%s: expects a value (see glyd run --help)", a); return 1; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
        else if (!strcmp(a, "-p") && i + 1 < argc) o->prompt = argv[++i];
        else if (!strcmp(a, "--system") && i + 1 < argc) o->system = argv[++i];
        else if (!strcmp(a, "--no-think")) o->noThink = 1;
        else if (!strcmp(a, "--temp") && i + 1 < argc) {
            if (parse_float("--temp", argv[++i], 0, 100, &o->sampling.temperature)) return 1;
        } else if (!strcmp(a, "--top-k") && i + 1 < argc) {
            if (parse_count("--top-k", argv[++i], 0, 1000000, &v)) return 1;
            o->sampling.topK = (int)v;
        } else if (!strcmp(a, "--top-p") && i + 1 < argc) {
            if (parse_float("--top-p", argv[++i], 0, 1, &o->sampling.topP)) return 1;
        } else if (!strcmp(a, "--min-p") && i + 1 < argc) {
            if (parse_float("--min-p", argv[++i], 0, 1, &o->sampling.minP)) return 1;
        } else if (!strcmp(a, "--repeat-penalty") && i + 1 < argc) {
            if (parse_float("--repeat-penalty", argv[++i], 0.01f, 100, &o->sampling.repetitionPenalty)) return 1;
        } else if (!strcmp(a, "--seed") && i + 1 < argc) {
            if (parse_count("--seed", argv[++i], 0, ULLONG_MAX, &v)) return 1;
            o->sampling.seed = v;
            o->seeded = 1;
        }
        else if (!strcmp(a, "--tokens") && i + 1 < argc) o->tokens = argv[++i];
        else if (!strcmp(a, "--dump-logits") && i + 1 < argc) o->dump = argv[++i];
        else if (!strcmp(a, "-n") && i + 1 < argc) {
            if (parse_count("-n", argv[++i], 0, 1000000, &v)) return 1;
            o->generate = (long)v;
        } else if ((!strcmp(a, "--kv") || !strcmp(a, "--kv-dtype")) && i + 1 < argc) {
            const char* const d = argv[++i];
            o->kvF32 = !strcmp(d, "f32");
            o->kvLossless = !strcmp(d, "lossless");
            if (!o->kvF32 && !o->kvLossless && strcmp(d, "bf16")) {
                cli_error("%s: expected bf16, lossless or f32, got %s", a, d);
                return 1;
            }
        } else if (!strcmp(a, "--ctx") && i + 1 < argc) {
            if (parse_count("--ctx", argv[++i], 1, MAX_CTX, &v)) return 1;
            o->ctx = v;
        } else if (!strcmp(a, "--plain")) o->plain = 1;
        else if (!strcmp(a, "--compact")) o->compact = 1;
        else if (!strcmp(a, "--code-bits") && i + 1 < argc) {
            if (parse_count("--code-bits", argv[++i], 3, 4, &v)) return 1;
            o->codeBits = (unsigned)v;
        }
        else if (!strcmp(a, "--no-verify")) o->noVerify = 1;
        else if (!strcmp(a, "--chunked-prompts")) o->chunkedPrompts = 1;
        else if (!strcmp(a, "--bf16-prompts")) o->bf16Prompts = 1;
        else if (!strcmp(a, "--bf16-decode")) o->bf16Decode = 1;
        else if (!strcmp(a, "--gpu") || !strcmp(a, "--gpu=cuda")) o->gpu = GLYD_GPU_CUDA;
        else if (!strcmp(a, "--gpu=emulated")) o->gpu = GLYD_GPU_EMULATED;
        else if (!strcmp(a, "--exact")) { /* the CPU engine always sums in one order */ }
        else if (!strncmp(a, "-T", 2) && a[2]) {
            if (parse_count("-T", a + 2, 0, GLYD_THREADS_MAX, &v)) return 1;
            o->threads = (unsigned)v;
        } else if (!strncmp(a, "--threads=", 10)) {
            if (parse_count("--threads", a + 10, 0, GLYD_THREADS_MAX, &v)) return 1;
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

/* The model o names, opened with o's options, the weights' packing shown
 * as it goes; NULL after saying why in one line. */
static glyd_llm* open_model(const run_opts* o)
{
    glyd_llmParams p;
    cli_options co;
    cli_progress prog;
    char message[512] = "";
    size_t err;
    glyd_llm* llm;
    memset(&co, 0, sizeof(co));
    co.verbosity = 1;
    co.progress = -1;
    memset(&p, 0, sizeof(p));
    p.nbThreads = o->threads;
    p.kvF32 = o->kvF32;
    p.kvLossless = o->kvLossless;
    p.chunkedPrompts = o->chunkedPrompts;
    p.bf16Prompts = o->bf16Prompts;
    p.bf16Decode = o->bf16Decode;
    p.plainWeights = o->plain;
    p.compactWeights = o->compact;
    p.fastCodeBits = o->codeBits;
    p.skipWeightChecks = o->noVerify;
    p.gpu = o->gpu;
    p.contextLength = o->ctx;
    p.message = message;
    p.messageCapacity = sizeof message;
    cli_progressStart(&prog, &co, "packing weights", 0);
    p.progress = on_progress;
    p.opaque = &prog;
    llm = glyd_llmOpen(o->model, &p, &err);
    cli_progressEnd(&prog);
    if (!llm) cli_error("%s", message[0] ? message : glyd_getErrorName(err));
    return llm;
}

static int argmax(const float* v, unsigned n)
{
    unsigned i, best = 0;
    for (i = 1; i < n; i++) if (v[i] > v[best]) best = i;
    return (int)best;
}

/* ------------------------------------------------------------------------ */
/* The chat                                                                 */
/* ------------------------------------------------------------------------ */

static volatile sig_atomic_t g_interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

#define MAX_STOPS 16

typedef struct {
    glyd_llm* llm;
    glyd_tokenizer* tok;
    glyd_sampler* sampler;
    glyd_chatTemplate* tmpl;
    glyd_llmInfo info;
    const run_opts* o;
    int* hist;                /* every token in the cache, in order */
    size_t nbHist, capHist;
    glyd_chatMessage* msgs;   /* the conversation (strings owned), the system prompt first */
    size_t nbMsgs, capMsgs, nbFixed;
    int stops[MAX_STOPS];     /* tokens that end a reply */
    size_t nbStops;
    unsigned char pending[8]; /* the start of a UTF-8 character not printed yet */
    size_t nbPending;
} chat;

/* Prints a token's bytes, holding back an unfinished UTF-8 character. */
static void put_bytes(chat* c, const unsigned char* b, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char const x = b[i];
        size_t need;
        if (c->nbPending == 0 && x < 0x80) { putchar(x); continue; }
        if (c->nbPending == sizeof c->pending) { fwrite(c->pending, 1, c->nbPending, stdout); c->nbPending = 0; }
        c->pending[c->nbPending++] = x;
        need = c->pending[0] >= 0xF0 ? 4 : c->pending[0] >= 0xE0 ? 3 : c->pending[0] >= 0xC0 ? 2 : 1;
        if (c->nbPending >= need) {
            fwrite(c->pending, 1, c->nbPending, stdout);
            c->nbPending = 0;
        }
    }
    cli_stdoutFlush(); /* a failure is said once; turn() checks for it */
}

static void flush_bytes(chat* c)
{
    fwrite(c->pending, 1, c->nbPending, stdout);
    c->nbPending = 0;
    cli_stdoutFlush(); /* a failure is said once; turn() checks for it */
}

/* Feeds ids after the cache's tokens; with next, then draws the next token
 * (on the GPU, the sampler's candidates are picked there). */
static int feed(chat* c, const int* ids, size_t n, int* next)
{
    size_t err;
    if (c->nbHist + n > c->info.contextLength) {
        cli_error("run: the conversation fills the context (%llu positions): /reset, or a larger --ctx",
                  c->info.contextLength);
        return 1;
    }
    if (c->nbHist + n > c->capHist) {
        size_t const cap = (c->nbHist + n) * 2;
        int* const h = (int*)realloc(c->hist, cap * sizeof(int));
        if (!h) { cli_error("out of memory"); return 1; }
        c->hist = h;
        c->capHist = cap;
    }
    /* the penalty sees the tokens fed now as well */
    memcpy(c->hist + c->nbHist, ids, n * sizeof(int));
    if (next) err = glyd_llmSample(c->llm, ids, n, c->nbHist, c->sampler, c->hist, c->nbHist + n, next);
    else err = glyd_llmForward(c->llm, ids, n, c->nbHist, NULL, 0);
    if (glyd_isError(err)) { cli_error("run: %s", glyd_getErrorName(err)); return 1; }
    c->nbHist += n;
    return 0;
}

static int add_message(chat* c, const char* role, const char* content, size_t size)
{
    char* text;
    if (c->nbMsgs == c->capMsgs) {
        size_t const cap = c->capMsgs ? 2 * c->capMsgs : 8;
        glyd_chatMessage* const m = (glyd_chatMessage*)realloc(c->msgs, cap * sizeof *m);
        if (!m) { cli_error("out of memory"); return 1; }
        c->msgs = m;
        c->capMsgs = cap;
    }
    text = (char*)malloc(size + 1);
    if (!text) { cli_error("out of memory"); return 1; }
    memcpy(text, content, size);
    text[size] = 0;
    c->msgs[c->nbMsgs].role = role;
    c->msgs[c->nbMsgs].content = text;
    c->nbMsgs++;
    return 0;
}

/* Forgets messages from the n-th on. */
static void drop_messages(chat* c, size_t n)
{
    while (c->nbMsgs > n) free((char*)c->msgs[--c->nbMsgs].content);
}

/* Brings the cache to the conversation's tokens ids[0..n) and draws the
 * token that follows. The cache keeps the longest prefix it shares with
 * them and the rest is fed: the whole conversation is rendered each turn,
 * and where the template writes the history otherwise than it was fed
 * (Qwen3 drops a reply's thinking; a reply's text tokenizes otherwise
 * than it was drawn), the cache goes back to the first token that differs
 * and is overwritten from there. This is the one place the cache goes
 * back; a model whose state cannot rewind (Qwen3.5's recurrent layers)
 * runs the conversation again from its start instead. */
static int sync_cache(chat* c, const int* ids, size_t n, int* next)
{
    size_t p = 0;
    if (n == 0) { cli_error("run: the chat template rendered nothing"); return 1; }
    while (p < c->nbHist && p < n && c->hist[p] == ids[p]) p++;
    if (p == n) p--; /* the last token is fed again: its logits give the reply's first */
    if (p < c->nbHist && c->info.recurrent) p = 0;
    if (c->o->verbose) fprintf(stderr, "(cache: %zu tokens kept, %zu fed)\n", p, n - p);
    c->nbHist = p;
    return feed(c, ids + p, n - p, next);
}

static int is_stop(const chat* c, int id)
{
    size_t i;
    for (i = 0; i < c->nbStops; i++) if (c->stops[i] == id) return 1;
    return 0;
}

static void add_stop(chat* c, int id)
{
    if (id >= 0 && !is_stop(c, id) && c->nbStops < MAX_STOPS) c->stops[c->nbStops++] = id;
}

/* One user message and the streamed reply. Returns 0, or 1 after an error. */
static int turn(chat* c, const char* message)
{
    glyd_chatOptions opt;
    char why[512] = "";
    char* text = NULL;
    char* reply = NULL;
    size_t textSize = 0, replySize = 0, replyCap = 0, nbIds = 0, err;
    int* ids = NULL;
    long produced = 0;
    int next, rc;
    size_t const before = c->nbMsgs;
    if (add_message(c, "user", message, strlen(message))) return 1;
    memset(&opt, 0, sizeof opt);
    opt.addGenerationPrompt = 1;
    opt.enableThinking = c->o->noThink ? 0 : 1;
    err = glyd_chatTemplateRender(c->tmpl, c->msgs, c->nbMsgs, &opt, &text, &textSize, why, sizeof why);
    if (glyd_isError(err)) { cli_error("run: %s", why); drop_messages(c, before); return 1; }
    err = glyd_tokenizerEncode(c->tok, text, textSize, &ids, &nbIds);
    free(text);
    if (glyd_isError(err)) { cli_error("run: the message is not valid UTF-8"); drop_messages(c, before); return 1; }
    rc = sync_cache(c, ids, nbIds, &next);
    free(ids);
    if (rc) { drop_messages(c, before); return 1; }
    g_interrupted = 0;
    while (!g_interrupted && (c->o->generate < 0 || produced < c->o->generate)) {
        const unsigned char* b;
        size_t n;
        int const fed = next;
        if (is_stop(c, next)) break;
        if (!glyd_isError(glyd_tokenizerBytes(c->tok, next, &b, &n))) {
            put_bytes(c, b, n);
            if (replySize + n + 1 > replyCap) {
                char* const r = (char*)realloc(reply, replyCap = 2 * (replySize + n + 1));
                if (!r) { free(reply); cli_error("out of memory"); return 1; }
                reply = r;
            }
            memcpy(reply + replySize, b, n);
            replySize += n;
        }
        if (cli_stdoutFlush()) { free(reply); return 1; } /* nobody reads the reply */
        if (feed(c, &fed, 1, &next)) { flush_bytes(c); break; }
        produced++;
    }
    flush_bytes(c);
    /* the reply, as far as it went, is the assistant's message */
    rc = add_message(c, "assistant", reply ? reply : "", replySize);
    free(reply);
    printf("\n");
    return rc | cli_stdoutFlush();
}

/* A line of standard input, without its newline; NULL at the end. An
 * interrupted read returns "" with *interrupted set. */
static char* read_line(int* interrupted)
{
    size_t cap = 256, n = 0;
    char* line = (char*)malloc(cap);
    int ch;
    *interrupted = 0;
    if (!line) return NULL;
    for (;;) {
        errno = 0;
        ch = getchar();
        if (ch == EOF) {
            if (errno == EINTR || g_interrupted) {
                clearerr(stdin);
                g_interrupted = 0;
                *interrupted = 1;
                n = 0;
                break;
            }
            if (n == 0) { free(line); return NULL; }
            break;
        }
        if (ch == '\n') break;
        if (n + 1 == cap) {
            char* const l2 = (char*)realloc(line, cap *= 2);
            if (!l2) { free(line); return NULL; }
            line = l2;
        }
        line[n++] = (char)ch;
    }
    line[n] = 0;
    return line;
}

static int chat_main(const run_opts* o)
{
    chat c;
    char message[512] = "";
    size_t err;
    int rc = 1;
    int const tty = isatty(0);
    struct sigaction sa;
    glyd_samplerParams sp = o->sampling;

    memset(&c, 0, sizeof c);
    c.o = o;
    c.tok = glyd_tokenizerOpen(o->model, message, sizeof message, &err);
    if (!c.tok) { cli_error("%s (the chat needs the model's tokenizer; --tokens IDS runs without one)", message); return 1; }
    /* the template before the weights: a template refused is said at once */
    c.tmpl = glyd_chatTemplateOpen(o->model, message, sizeof message, &err);
    if (!c.tmpl) { cli_error("%s", message); goto done; }
    if (glyd_chatTemplateIsBuiltin(c.tmpl) &&
        (glyd_tokenizerFind(c.tok, "<|im_end|>") < 0 || glyd_tokenizerFind(c.tok, "<|im_start|>") < 0)) {
        cli_error("run: the model has no chat template and its tokenizer no <|im_start|> and <|im_end|> for ChatML");
        goto done;
    }
    c.llm = open_model(o);
    if (!c.llm) goto done;
    glyd_llmGetInfo(c.llm, &c.info);
    {
        char a[32], b[32], k[32];
        fprintf(stderr, "%s: %s; weights %s in memory, %.0f%% of their %s in bf16; KV cache %s for "
                        "%llu positions\n",
                o->model, c.info.architecture, cli_size(a, sizeof a, c.info.weightBytes),
                100.0 * (double)c.info.weightBytes / (double)c.info.weightBytesBf16,
                cli_size(b, sizeof b, c.info.weightBytesBf16), cli_size(k, sizeof k, c.info.kvBytes),
                c.info.contextLength);
    }
    {
        int ids[MAX_STOPS];
        size_t n = 0, i;
        glyd_chatStopTokens(o->model, ids, MAX_STOPS, &n);
        for (i = 0; i < n && i < MAX_STOPS; i++) add_stop(&c, ids[i]);
        /* the template ends a reply with its eos_token (ChatML: <|im_end|>) */
        if (glyd_chatTemplateEosToken(c.tmpl)[0]) add_stop(&c, glyd_tokenizerFind(c.tok, glyd_chatTemplateEosToken(c.tmpl)));
        if (!n && c.info.eosToken >= 0 && c.info.eosToken <= INT_MAX) add_stop(&c, (int)c.info.eosToken);
    }
    if (o->verbose)
        fprintf(stderr, "chat template: %s\n", glyd_chatTemplateIsBuiltin(c.tmpl) ? "ChatML (the model has none)" : "the model's");
    if (o->system && add_message(&c, "system", o->system, strlen(o->system))) goto done;
    c.nbFixed = c.nbMsgs;
    if (!o->seeded) sp.seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    c.sampler = glyd_samplerCreate(&sp, c.info.vocabSize);
    if (!c.sampler) { cli_error("out of memory"); goto done; }

    /* Ctrl-C stops the reply, not the program */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    if (o->prompt) {
        rc = turn(&c, o->prompt);
        goto done;
    }
    if (tty) fprintf(stderr, "/reset forgets the conversation, /exit quits; Ctrl-C stops a reply.\n");
    for (;;) {
        int interrupted;
        char* line;
        if (tty) { fputs("> ", stdout); fflush(stdout); }
        line = read_line(&interrupted);
        if (!line) break;
        if (interrupted) { free(line); printf("\n(/exit quits)\n"); continue; }
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) { free(line); break; }
        if (!strcmp(line, "/reset")) {
            c.nbHist = 0;
            drop_messages(&c, c.nbFixed);
            free(line);
            fprintf(stderr, "(conversation forgotten)\n");
            continue;
        }
        if (line[0] && turn(&c, line) && ferror(stdout)) {
            free(line);
            goto done;
        }
        /* any other failure is a full context: the user can /reset */
        free(line);
    }
    rc = 0;
done:
    free(c.hist);
    drop_messages(&c, 0);
    free(c.msgs);
    glyd_chatTemplateFree(c.tmpl);
    glyd_samplerFree(c.sampler);
    glyd_llmClose(c.llm);
    glyd_tokenizerFree(c.tok);
    return rc;
}

/* --dump-logits FILE: written by cli_outOpen's rules; an existing file is
 * replaced, as a run's results are meant to be. */
static int dump_logits(const char* path, const float* logits, size_t count)
{
    cli_outRules rules;
    cli_out out;
    rules.force = 1;
    rules.input = NULL;
    rules.sync = 0;
    if (cli_outOpen(&out, path, &rules)) return 1;
    return cli_outClose(&out, cli_outWrite(&out, logits, count * sizeof(float)) == 0, NULL);
}

int cli_run(int argc, char** argv)
{
    run_opts o;
    glyd_llmInfo info;
    glyd_llm* llm;
    int* ids = NULL;
    long nbIds = 0, i;
    float* logits = NULL;
    int next = 0;
    size_t err;
    int rc = 1;

    if (parse(argc, argv, &o)) return 1;
    if (o.dump && !o.dump[0]) { cli_error("--dump-logits: the output name is empty"); return 1; }
    if (!o.tokens) return chat_main(&o);
    nbIds = parse_ids(o.tokens, &ids);
    if (nbIds < 0) return 1;
    if (nbIds == 0) { cli_error("--tokens: no token id"); free(ids); return 1; }

    llm = open_model(&o);
    if (!llm) {
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
        if (info.deviceWeightBytes)
            fprintf(stderr, "%s: on the GPU (%s): weights %s in GPU memory (%.1f%% of bf16)\n", o.model,
                    info.backend, cli_size(a, sizeof a, info.deviceWeightBytes),
                    100.0 * (double)info.deviceWeightBytes / (double)info.weightBytesBf16);
        if (info.ignoredTensors)
            fprintf(stderr, "%s: note: %llu tensors (a vision tower, an MTP head) are not used: the text model "
                            "runs\n", o.model, info.ignoredTensors);
    }
    if (o.generate < 0) o.generate = 0;
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
    if (o.dump || o.generate <= 0) {
        logits = (float*)malloc((size_t)(o.dump ? nbIds : 1) * info.vocabSize * sizeof(float));
        if (!logits) { cli_error("out of memory"); goto done; }
        err = glyd_llmForward(llm, ids, (size_t)nbIds, 0, logits, o.dump != NULL);
    } else {
        /* the first token picked where the logits are, as the next ones */
        err = glyd_llmGreedy(llm, ids, (size_t)nbIds, 0, &next);
    }
    if (glyd_isError(err)) { cli_error("run: %s", glyd_getErrorName(err)); goto done; }
    if (o.dump && dump_logits(o.dump, logits, (size_t)nbIds * info.vocabSize)) goto done;
    if (o.generate > 0) {
        long g;
        if (o.dump) next = argmax(logits + (size_t)(nbIds - 1) * info.vocabSize, info.vocabSize);
        for (g = 0; g < o.generate; g++) {
            printf(g ? " %d" : "%d", next);
            if (cli_stdoutFlush()) goto done; /* nobody reads the rest */
            if (g + 1 == o.generate) break;
            {
                /* picked where the logits are: on a GPU, only the token comes back */
                int const fed = next;
                err = glyd_llmGreedy(llm, &fed, 1, (size_t)(nbIds + g), &next);
            }
            if (glyd_isError(err)) { printf("\n"); cli_error("run: %s", glyd_getErrorName(err)); goto done; }
        }
        printf("\n");
    }
    if (o.verbose && o.kvLossless) {
        char a[32], b[32];
        glyd_llmGetInfo(llm, &info);
        fprintf(stderr, "%s: KV cache %s for the %ld positions run, %.1f%% of their %s in bf16\n", o.model,
                cli_size(a, sizeof a, info.kvBytes), nbIds + (o.generate > 0 ? o.generate - 1 : 0),
                100.0 * (double)info.kvBytes / (double)info.kvBytesBf16, cli_size(b, sizeof b, info.kvBytesBf16));
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

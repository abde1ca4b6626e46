/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_engine.c: the engine's GPU backend on a CUDA GPU (tests/gpu/run.sh).
 *
 *   build/gpu_engine check FIXTURES_DIR [--emulated]
 *     stories260K on the GPU against the CPU engine and the reference
 *     logits, prompts (cuBLAS on decoded tiles), one token at a time and
 *     8 tokens as a prompt (the fused product, at batch 1 and 8); coded
 *     weights against plain ones bit for bit (--exact), both paths; the
 *     greedy continuation from BOS, picked on the device; 500 positions
 *     against the CPU engine (attention in chunks, merged); sampling with
 *     candidates picked on the device; the Huffman layout (--compact) bit
 *     for bit as well; the tiny Qwen2, Qwen3 and Llama models
 *     (tests/data) against transformers' logits.
 *   build/gpu_engine bench MODEL [--prompt N] [--tokens N] [--rounds R] [--no-compact] [--emulated]
 *     compressed (fast layout, and the entropy layout of --compact) against
 *     plain bf16 weights, all on the GPU, in turns in this process: prompt
 *     and decode tokens/s (greedy, one token at a time), weights in GPU
 *     memory; a Markdown table and the ratios. --no-compact leaves the
 *     entropy layout out.
 *
 * Lives in build/ so that the engine finds build/cuda/libglyd_cuda.so.
 * Exits 1 when a check fails, 2 when the GPU cannot be used.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glyd_llm.h"

static int g_failures;
static int g_gpu = GLYD_GPU_CUDA; /* --emulated: the check on the CPU's emulation */

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            g_failures++;                                                     \
            printf("- **FAILED** (line %d): ", __LINE__);                     \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
        }                                                                     \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static glyd_llm* open_on(const char* path, int gpu, int plain, unsigned long long ctx)
{
    glyd_llmParams p;
    char msg[512] = "";
    size_t err;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.gpu = gpu;
    p.plainWeights = plain == 1;
    p.compactWeights = plain == 2; /* the entropy (Huffman) layout */
    p.kvF32 = 1;
    p.contextLength = ctx;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen(path, &p, &err);
    if (!m) {
        printf("cannot open %s (%s%s): %s\n", path, gpu ? "GPU" : "CPU",
               plain == 1 ? ", plain" : plain ? ", compact" : "", msg);
        if (gpu) exit(2);
    }
    return m;
}

static double max_diff(const float* a, const float* b, size_t n)
{
    double worst = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        double const d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
    return worst;
}

static float* read_floats(const char* path, size_t n)
{
    FILE* const f = fopen(path, "rb");
    float* const v = (float*)malloc(n * sizeof(float));
    size_t got = 0;
    if (f && v) got = fread(v, sizeof(float), n, f);
    if (f) fclose(f);
    if (got != n) { free(v); return NULL; }
    return v;
}

/* Token ids of a reference.json's array. */
static size_t read_tokens(const char* path, const char* key, int* out, size_t cap)
{
    json_error_t e;
    json_t* const root = json_load_file(path, 0, &e);
    json_t* const a = root ? json_object_get(root, key) : NULL;
    size_t n = 0;
    while (a && n < json_array_size(a) && n < cap) {
        out[n] = (int)json_integer_value(json_array_get(a, n));
        n++;
    }
    json_decref(root);
    return n;
}

/* Every fed token's logits: all at once (prompt path), or one at a time. */
static float* logits_of(glyd_llm* m, const int* tokens, size_t n, size_t vocab, int oneByOne)
{
    float* const out = (float*)malloc(n * vocab * sizeof(float));
    size_t i, r = 0;
    if (!out) return NULL;
    if (!oneByOne) r = glyd_llmForward(m, tokens, n, 0, out, 1);
    for (i = 0; oneByOne && i < n && !glyd_isError(r); i++)
        r = glyd_llmForward(m, tokens + i, 1, i, out + i * vocab, 0);
    if (glyd_isError(r)) {
        printf("forward: %s\n", glyd_getErrorName(r));
        free(out);
        return NULL;
    }
    return out;
}

static void check_model(const char* dir, const char* name, size_t vocab, const float* reference, double bound,
                        const int* tokens, size_t n)
{
    glyd_llm* const cpu = open_on(dir, GLYD_GPU_NONE, 0, 0);
    glyd_llm* const gpu = open_on(dir, g_gpu, 0, 0);
    glyd_llm* const plain = open_on(dir, g_gpu, 1, 0);
    glyd_llm* const compact = open_on(dir, g_gpu, 2, 0);
    /* the whole prompt (cuBLAS on decoded tiles), one token at a time (the
     * fused product at batch 1), and its first 8 tokens as a prompt (the
     * fused product at batch 8) */
    static const char* const kHow[] = { "as a prompt", "one token at a time", "its first 8 as a prompt" };
    int mode;
    for (mode = 0; mode < 3; mode++) {
        int const oneByOne = mode == 1;
        size_t const fed = mode == 2 && n > 8 ? 8 : n;
        float* const c = logits_of(cpu, tokens, fed, vocab, oneByOne);
        float* const g = logits_of(gpu, tokens, fed, vocab, oneByOne);
        float* const p = logits_of(plain, tokens, fed, vocab, oneByOne);
        float* const h = logits_of(compact, tokens, fed, vocab, oneByOne);
        const char* const how = kHow[mode];
        CHECK(c && g && p && h, "%s: no logits", name);
        if (c && g && p && h) {
            double const dCpu = max_diff(g, c, fed * vocab), dRef = max_diff(g, reference, fed * vocab);
            int const exact = memcmp(g, p, fed * vocab * sizeof(float)) == 0 &&
                              memcmp(h, p, fed * vocab * sizeof(float)) == 0;
            printf("| %s | %s | %.3g | %.3g | %s |\n", name, how, dCpu, dRef, exact ? "yes" : "**no**");
            CHECK(dCpu < bound && dRef < bound, "%s %s: max |difference| %g from the CPU, %g from the reference",
                  name, how, dCpu, dRef);
            CHECK(exact, "%s %s: coded (fast or Huffman) and plain weights differ on the GPU", name, how);
        }
        free(c);
        free(g);
        free(p);
        free(h);
    }
    glyd_llmClose(cpu);
    glyd_llmClose(gpu);
    glyd_llmClose(plain);
    glyd_llmClose(compact);
}

static int check(const char* fixtures)
{
    char dir[1024], path[1200];
    int tokens[512], greedy[512];
    size_t n, nbGreedy, i;
    float* ref;
    static const char* const kTiny[] = { "tiny-qwen2", "tiny-qwen3", "tiny-qwen3-yarn", "tiny-llama3" };
    printf("## The engine on the GPU against the CPU engine\n\n");
    printf("| model | tokens fed | max diff from CPU | from reference | fast == Huffman == plain |\n");
    printf("| --- | --- | ---: | ---: | --- |\n");
    snprintf(dir, sizeof dir, "%s/stories260K", fixtures);
    snprintf(path, sizeof path, "%s/reference.json", dir);
    n = read_tokens(path, "tokens", tokens, 64);
    nbGreedy = read_tokens(path, "greedy_from_bos", greedy, 512);
    snprintf(path, sizeof path, "%s/reference_logits.f32", dir);
    ref = read_floats(path, n * 512);
    CHECK(n == 64 && ref, "stories260K reference");
    if (n == 64 && ref) check_model(dir, "stories260K", 512, ref, 2e-4, tokens, n);
    free(ref);
    for (i = 0; i < sizeof kTiny / sizeof kTiny[0]; i++) {
        snprintf(dir, sizeof dir, "tests/data/%s", kTiny[i]);
        snprintf(path, sizeof path, "%s/reference.json", dir);
        n = read_tokens(path, "tokens", tokens, sizeof tokens / sizeof tokens[0]);
        snprintf(path, sizeof path, "%s/reference_logits.f32", dir);
        ref = n ? read_floats(path, n * 256) : NULL;
        CHECK(ref != NULL, "%s reference", kTiny[i]);
        if (ref) check_model(dir, kTiny[i], 256, ref, 1e-3, tokens, n);
        free(ref);
    }
    /* greedy decoding on the device, across several pages of the cache */
    snprintf(dir, sizeof dir, "%s/stories260K", fixtures);
    {
        glyd_llm* const m = open_on(dir, g_gpu, 0, 0);
        int tok = greedy[0], ok = nbGreedy > 1;
        size_t pos;
        for (pos = 0; pos + 1 < nbGreedy && ok; pos++) {
            int next = -1;
            ok = !glyd_isError(glyd_llmGreedy(m, &tok, 1, pos, &next)) && next == greedy[pos + 1];
            tok = next;
        }
        printf("\nGreedy continuation from BOS, picked on the GPU: %zu of %zu tokens as the reference.\n", pos,
               nbGreedy - 1);
        CHECK(ok, "greedy continuation differs at %zu", pos);
        glyd_llmClose(m);
    }
    /* a long context: 500 positions, attention in two chunks and their
     * merge, for a prompt in batches of 100 and then token by token */
    {
        glyd_llm* const cpu = open_on(dir, GLYD_GPU_NONE, 0, 0);
        glyd_llm* const gpu = open_on(dir, g_gpu, 0, 0);
        static float a[100 * 512], b[100 * 512];
        int seq[506];
        double most = 0, mag = 0;
        size_t k;
        int ok = cpu && gpu;
        for (i = 0; i < 506; i++) seq[i] = (int)((i * 37 + 11) % 512);
        for (i = 0; i < 506 && ok; i += i < 500 ? 100 : 1) {
            size_t const T = i < 500 ? 100 : 1;
            ok = !glyd_isError(glyd_llmForward(cpu, seq + i, T, i, a, 0)) &&
                 !glyd_isError(glyd_llmForward(gpu, seq + i, T, i, b, 0));
            for (k = 0; ok && k < T * 512; k++) {
                most = fmax(most, fabs((double)a[k] - b[k]));
                mag = fmax(mag, fabs((double)a[k]));
            }
        }
        printf("\n500 positions (attention in chunks of 256, merged): max difference from the CPU %.3g, logits up "
               "to %.3g.\n", most, mag);
        CHECK(ok && mag > 1 && most < 1e-4 * mag, "long context differs from the CPU");
        glyd_llmClose(cpu);
        glyd_llmClose(gpu);
    }
    /* sampling: candidates picked on the device, drawn on the host, against
     * the sampler over the same backend's logits */
    {
        static const glyd_samplerParams kParams[2] = { { 0.7f, 20, 0.9f, 0.0f, 1.1f, 8 },
                                                       { 1.0f, 256, 0.0f, 0.05f, 1.3f, 9 } };
        int c, total = 0, agree = 0;
        for (c = 0; c < 2; c++) {
            glyd_llm* const a = open_on(dir, g_gpu, 0, 0);
            glyd_llm* const b = open_on(dir, g_gpu, 0, 0);
            glyd_sampler* const sa = glyd_samplerCreate(&kParams[c], 512);
            glyd_sampler* const sb = glyd_samplerCreate(&kParams[c], 512);
            int hist[128];
            float logits[512];
            size_t pos;
            hist[0] = 1;
            for (pos = 1; pos < 128; pos++) {
                int ta = -1, tb;
                if (glyd_isError(glyd_llmSample(a, &hist[pos - 1], 1, pos - 1, sa, hist, pos, &ta)) ||
                    glyd_isError(glyd_llmForward(b, &hist[pos - 1], 1, pos - 1, logits, 0)))
                    break;
                tb = glyd_samplerSample(sb, logits, hist, pos);
                total++;
                if (ta != tb) break;
                agree++;
                hist[pos] = ta;
            }
            glyd_samplerFree(sa);
            glyd_samplerFree(sb);
            glyd_llmClose(a);
            glyd_llmClose(b);
        }
        printf("Sampling with candidates picked on the GPU (top-k 20 and 256, penalties): %d of %d draws as the "
               "sampler over the logits.\n", agree, total);
        CHECK(total == 2 * 127 && agree == total, "sampling on the device differs");
    }
    printf("\n%s\n\n", g_failures ? "**Engine checks FAILED.**" : "Engine checks passed.");
    return g_failures ? 1 : 0;
}

typedef struct {
    double prompt, decode;          /* tokens/s */
    unsigned long long deviceBytes, bf16Bytes;
} figures;

/* A prompt, then nbDecode tokens one at a time (greedy), timed; the
 * tokens generated into out. */
static void time_tokens(glyd_llm* m, const int* prompt, int nbPrompt, int nbDecode, int* out, figures* best)
{
    int tok, i;
    double t0, tp, td;
    t0 = now_s();
    CHECK(!glyd_isError(glyd_llmGreedy(m, prompt, (size_t)nbPrompt, 0, &tok)), "prompt");
    tp = now_s() - t0;
    t0 = now_s();
    for (i = 0; i < nbDecode; i++) {
        CHECK(!glyd_isError(glyd_llmGreedy(m, &tok, 1, (size_t)(nbPrompt + i), &out[i])), "decode");
        tok = out[i];
    }
    td = now_s() - t0;
    if (nbPrompt / tp > best->prompt) best->prompt = nbPrompt / tp;
    if (nbDecode / td > best->decode) best->decode = nbDecode / td;
}

/* The model opened with weights as `plain` says, timed into best. */
static void measure(const char* model, int plain, int nbPrompt, int nbDecode, figures* best)
{
    glyd_llm* const m = open_on(model, g_gpu, plain, (unsigned long long)(nbPrompt + nbDecode + 8));
    glyd_llmInfo info;
    int* const prompt = (int*)malloc(sizeof(int) * (size_t)nbPrompt);
    int* const toks = (int*)malloc(sizeof(int) * (size_t)nbDecode);
    int tok, i;
    glyd_llmGetInfo(m, &info);
    for (i = 0; i < nbPrompt; i++) prompt[i] = 1 + (i * 7919) % (int)(info.vocabSize - 1);
    /* a warm-up: the first launches load the kernels */
    CHECK(!glyd_isError(glyd_llmGreedy(m, prompt, 1, 0, &tok)), "warm-up");
    time_tokens(m, prompt, nbPrompt, nbDecode, toks, best);
    best->deviceBytes = info.deviceWeightBytes;
    best->bf16Bytes = info.weightBytesBf16;
    free(toks);
    free(prompt);
    glyd_llmClose(m);
}

static int bench(int argc, char** argv)
{
    const char* const model = argv[2];
    int nbPrompt = 256, nbDecode = 128, rounds = 2, withCompact = 1, a, r;
    figures coded, compact, plain;
    for (a = 3; a < argc; a++) {
        if (!strcmp(argv[a], "--prompt") && a + 1 < argc) nbPrompt = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--tokens") && a + 1 < argc) nbDecode = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--no-compact")) withCompact = 0;
        else if (!strcmp(argv[a], "--emulated")) g_gpu = GLYD_GPU_EMULATED;
        else {
            fprintf(stderr, "gpu_engine bench: unknown option %s\n", argv[a]);
            return 1;
        }
    }
    if (nbPrompt < 1 || nbDecode < 1 || rounds < 1) return 1;
    memset(&coded, 0, sizeof coded);
    memset(&compact, 0, sizeof compact);
    memset(&plain, 0, sizeof plain);
    for (r = 0; r < rounds; r++) {
        measure(model, 0, nbPrompt, nbDecode, &coded);
        measure(model, 1, nbPrompt, nbDecode, &plain);
        /* once: its load codes the entropy layout and indexes its runs */
        if (r == 0 && withCompact) measure(model, 2, nbPrompt, nbDecode, &compact);
    }
    printf("## The engine on the GPU: %s\n\n", model);
    printf("%d prompt tokens, then %d generated one at a time (greedy, picked on the GPU); best of %d (the entropy "
           "layout: one run).\n\n", nbPrompt, nbDecode, rounds);
    printf("| weights | prompt tok/s | decode tok/s | weights in GPU memory | of bf16 |\n");
    printf("| --- | ---: | ---: | ---: | ---: |\n");
    printf("| compressed | %.1f | %.1f | %.1f MiB | %.4f |\n", coded.prompt, coded.decode,
           coded.deviceBytes / 1048576.0, (double)coded.deviceBytes / (double)coded.bf16Bytes);
    if (withCompact)
        printf("| compressed, entropy layout (--compact) | %.1f | %.1f | %.1f MiB | %.4f |\n", compact.prompt,
               compact.decode, compact.deviceBytes / 1048576.0,
               (double)compact.deviceBytes / (double)compact.bf16Bytes);
    printf("| plain bf16 | %.1f | %.1f | %.1f MiB | %.4f |\n", plain.prompt, plain.decode,
           plain.deviceBytes / 1048576.0, (double)plain.deviceBytes / (double)plain.bf16Bytes);
    printf("\ncompressed / plain: decode %.3fx, prompt %.3fx, GPU memory for weights %.4fx\n",
           coded.decode / plain.decode, coded.prompt / plain.prompt,
           (double)coded.deviceBytes / (double)plain.deviceBytes);
    if (withCompact)
        printf("entropy layout / plain: decode %.3fx, prompt %.3fx, GPU memory for weights %.4fx\n",
               compact.decode / plain.decode, compact.prompt / plain.prompt,
               (double)compact.deviceBytes / (double)plain.deviceBytes);
    printf("\n");
    return g_failures ? 1 : 0;
}

int main(int argc, char** argv)
{
    if (argc >= 4 && !strcmp(argv[3], "--emulated")) g_gpu = GLYD_GPU_EMULATED;
    if (argc >= 3 && !strcmp(argv[1], "check")) return check(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "bench")) return bench(argc, argv);
    fprintf(stderr, "usage: gpu_engine check FIXTURES_DIR | bench MODEL [--prompt N] [--tokens N] [--rounds R] "
                    "[--no-compact]\n");
    return 1;
}

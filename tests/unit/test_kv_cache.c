/* SPDX-License-Identifier: BSD-3-Clause */
/* test_kv_cache.c: the engine's lossless KV cache (kvLossless, coded
 * pages): the logits are the bf16 cache's bit for bit, on the stories260K
 * fixture and every tiny model (sliding windows, Gated DeltaNet layers and
 * experts among them), batched and a position at a time, across pages,
 * rewound into a coded page, restarted, and over the whole context; it
 * holds fewer bytes than bf16 would; it refuses fp32 and the GPU. */
#include <jansson.h>
#include <stdlib.h>

#include "../../llm/infer/infer.h"
#include "harness.h"

static glyd_llm* open_kv(const char* path, int lossless, unsigned threads, unsigned long long ctx)
{
    glyd_llmParams p;
    char msg[256] = "";
    size_t err;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.nbThreads = threads;
    p.kvLossless = lossless;
    p.contextLength = ctx;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen(path, &p, &err);
    if (!m) fprintf(stderr, "# open %s: %s\n", path, msg);
    CHECK(m != NULL);
    return m;
}

/* Up to max tokens of a reference.json list (key), *n their count. */
static int* json_tokens(const char* path, const char* key, size_t max, size_t* n)
{
    json_error_t e;
    json_t* const root = json_load_file(path, 0, &e);
    const json_t* const list = root ? json_object_get(root, key) : NULL;
    int* const t = (int*)malloc(max * sizeof(int) + 1);
    size_t i;
    *n = 0;
    CHECK(list != NULL && t != NULL);
    for (i = 0; t && i < json_array_size(list) && i < max; i++) t[(*n)++] = (int)json_integer_value(json_array_get(list, i));
    json_decref(root);
    return t;
}

/* The two caches' logits for tokens[0..n) fed from pos 0: at once (every
 * position's logits), then a position at a time (each position's). */
static void check_same(const char* path, const int* tokens, size_t n, unsigned vocab, unsigned long long ctx)
{
    glyd_llm* const plain = open_kv(path, 0, 2, ctx);
    glyd_llm* const coded = open_kv(path, 1, 2, ctx);
    float* const a = (float*)malloc(n * vocab * sizeof(float));
    float* const b = (float*)malloc(n * vocab * sizeof(float));
    size_t i, differ = 0;
    if (plain && coded && a && b) {
        CHECK_OK(glyd_llmForward(plain, tokens, n, 0, a, 1));
        CHECK_OK(glyd_llmForward(coded, tokens, n, 0, b, 1));
        CHECK(memcmp(a, b, n * vocab * sizeof(float)) == 0);
        for (i = 0; i < n; i++) {
            CHECK_OK(glyd_llmForward(coded, tokens + i, 1, i, b, 0));
            differ += memcmp(b, a + i * vocab, vocab * sizeof(float)) != 0;
        }
        if (differ) fprintf(stderr, "# %s: %zu positions differ one at a time\n", path, differ);
        CHECK(differ == 0);
    }
    free(a);
    free(b);
    glyd_llmClose(plain);
    glyd_llmClose(coded);
}

static const char* stories(const char* name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../fixtures/stories260K%s%s", corpus_dir(), *name ? "/" : "", name);
    return path;
}

TEST(kv_lossless_stories260k_logits_are_bf16s)
{
    size_t n;
    int* const t = json_tokens(stories("reference.json"), "greedy_from_bos", 512, &n);
    CHECK(n > 100); /* pages of 16 positions: eleven and more */
    if (t && n) check_same(stories(""), t, n, 512, 0);
    free(t);
}

static void check_tiny(const char* name)
{
    char dir[256], path[300];
    size_t n;
    int* t;
    snprintf(dir, sizeof dir, "tests/data/%s", name);
    snprintf(path, sizeof path, "%s/reference.json", dir);
    t = json_tokens(path, "tokens", 256, &n);
    CHECK(n >= 48);
    if (t && n) check_same(dir, t, n, 256, 0);
    free(t);
}

TEST(kv_lossless_tiny_models_logits_are_bf16s)
{
    /* sliding windows (Mistral, Gemma 3), Gated DeltaNet layers between the
     * cached ones (Qwen3.5), experts (Mixtral, Qwen3-MoE) */
    static const char* const kModels[] = { "tiny-qwen2",   "tiny-qwen3",  "tiny-llama3",  "tiny-mistral",
                                           "tiny-gemma3",  "tiny-qwen3-5", "tiny-mixtral", "tiny-qwen3-moe" };
    size_t i;
    for (i = 0; i < sizeof kModels / sizeof kModels[0]; i++) check_tiny(kModels[i]);
}

TEST(kv_lossless_rewound_and_restarted)
{
    /* 100 positions, then from 37 (inside the third coded page) other
     * tokens, then from 0 again: each cache as the bf16 one */
    size_t n, i;
    int* const t = json_tokens(stories("reference.json"), "greedy_from_bos", 512, &n);
    glyd_llm* const plain = open_kv(stories(""), 0, 1, 0);
    glyd_llm* const coded = open_kv(stories(""), 1, 1, 0);
    float a[512], b[512];
    int other[80];
    if (t && n >= 100 && plain && coded) {
        for (i = 0; i < 80; i++) other[i] = t[(i * 7) % n];
        CHECK_OK(glyd_llmForward(plain, t, 100, 0, a, 0));
        CHECK_OK(glyd_llmForward(coded, t, 100, 0, b, 0));
        CHECK(memcmp(a, b, sizeof a) == 0);
        CHECK_OK(glyd_llmForward(plain, other, 80, 37, a, 0));
        CHECK_OK(glyd_llmForward(coded, other, 80, 37, b, 0));
        CHECK(memcmp(a, b, sizeof a) == 0);
        /* rewound to a page's first position, a position at a time */
        for (i = 0; i < 20; i++) {
            CHECK_OK(glyd_llmForward(plain, other + i, 1, 48 + i, a, 0));
            CHECK_OK(glyd_llmForward(coded, other + i, 1, 48 + i, b, 0));
            CHECK(memcmp(a, b, sizeof a) == 0);
        }
        CHECK_OK(glyd_llmForward(plain, t, 64, 0, a, 0));
        CHECK_OK(glyd_llmForward(coded, t, 64, 0, b, 0));
        CHECK(memcmp(a, b, sizeof a) == 0);
    }
    free(t);
    glyd_llmClose(plain);
    glyd_llmClose(coded);
}

TEST(kv_lossless_whole_context_in_fewer_bytes)
{
    /* every position of a 512-position context (the fixture's greedy
     * tokens over and over), and what the cache then holds */
    size_t n, i;
    int* const g = json_tokens(stories("reference.json"), "greedy_from_bos", 512, &n);
    int t[512];
    glyd_llmInfo info;
    glyd_llm* m;
    if (!g || n == 0) { free(g); return; }
    for (i = 0; i < 512; i++) t[i] = g[i % n];
    check_same(stories(""), t, 512, 512, 512);
    m = open_kv(stories(""), 1, 2, 512);
    if (m) {
        float logits[512];
        CHECK_OK(glyd_llmForward(m, t, 512, 0, logits, 0));
        CHECK_OK(glyd_llmGetInfo(m, &info));
        /* 5 layers, 512 positions, 4 KV heads of 8, keys and values */
        CHECK(info.kvBytesBf16 == 5ULL * 512 * 2 * 4 * 8 * 2);
        CHECK(info.kvBytes < 0.85 * (double)info.kvBytesBf16);
        /* a position past the context is refused */
        CHECK(glyd_isError(glyd_llmForward(m, t, 1, 512, logits, 0)));
    }
    glyd_llmClose(m);
    free(g);
}

TEST(kv_lossless_refuses_fp32_and_the_gpu)
{
    glyd_llmParams p;
    size_t err;
    char msg[256] = "";
    memset(&p, 0, sizeof p);
    p.kvLossless = 1;
    p.kvF32 = 1;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    CHECK(glyd_llmOpen(stories(""), &p, &err) == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_parameter_outOfBound && strstr(msg, "fp32") != NULL);
    p.kvF32 = 0;
    p.gpu = GLYD_GPU_EMULATED;
    msg[0] = 0;
    CHECK(glyd_llmOpen(stories(""), &p, &err) == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_parameter_outOfBound && strstr(msg, "GPU") != NULL);
}

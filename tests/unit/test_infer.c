/* SPDX-License-Identifier: BSD-3-Clause */
/* test_infer.c: the engine against reference logits of the stories260K
 * Llama (from an independent implementation), from its folder and from a
 * packed model; coded against plain weights bit for bit; greedy decoding;
 * threads; configurations and models it must refuse. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../llm/infer/infer.h"
#include "../../lib/tensor/tensor.h"
#include "harness.h"

static const char* fixture(const char* name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../fixtures/stories260K%s%s", corpus_dir(), *name ? "/" : "", name);
    return path;
}

/* reference.json: the 64 tokens fed, and the greedy continuation from BOS. */
typedef struct {
    int tokens[64];
    size_t nbTokens;
    int greedy[512];
    size_t nbGreedy;
} reference;

static int load_reference(reference* r)
{
    json_error_t e;
    json_t* const root = json_load_file(fixture("reference.json"), 0, &e);
    json_t *t, *g;
    size_t i;
    memset(r, 0, sizeof(*r));
    CHECK(root != NULL);
    if (!root) return 0;
    t = json_object_get(root, "tokens");
    g = json_object_get(root, "greedy_from_bos");
    CHECK(json_array_size(t) == 64 && json_array_size(g) > 1 && json_array_size(g) <= 512);
    for (i = 0; i < json_array_size(t) && i < 64; i++) r->tokens[r->nbTokens++] = (int)json_integer_value(json_array_get(t, i));
    for (i = 0; i < json_array_size(g) && i < 512; i++) r->greedy[r->nbGreedy++] = (int)json_integer_value(json_array_get(g, i));
    json_decref(root);
    return r->nbTokens == 64;
}

/* glyd_llmParams.fastCodeBits of the models the tests open (0: the CPU's choice) */
static unsigned g_codeBits;
/* and their chunkedPrompts, bf16Prompts, bf16Decode */
static int g_chunkedPrompts, g_bf16Prompts, g_bf16Decode;

/* plain: 1 bf16 weights as they are, 2 coded in the entropy layout
 * (compactWeights), 0 coded in the fast layout */
static glyd_llm* open_model_on(const char* path, int plain, unsigned threads, int kvF32, int gpu)
{
    glyd_llmParams p;
    char msg[256] = "";
    size_t err;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.nbThreads = threads;
    p.kvF32 = kvF32;
    p.plainWeights = plain == 1;
    p.compactWeights = plain == 2;
    p.fastCodeBits = g_codeBits;
    p.chunkedPrompts = g_chunkedPrompts;
    p.bf16Prompts = g_bf16Prompts;
    p.bf16Decode = g_bf16Decode;
    p.gpu = gpu;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen(path, &p, &err);
    if (!m) fprintf(stderr, "# open %s: %s\n", path, msg);
    CHECK(m != NULL);
    return m;
}

static glyd_llm* open_model(const char* path, int plain, unsigned threads, int kvF32)
{
    return open_model_on(path, plain, threads, kvF32, GLYD_GPU_NONE);
}

/* The 64 x 512 logits of the reference tokens, teacher-forced. */
static float* run_reference(glyd_llm* m, const reference* r)
{
    float* const logits = (float*)malloc(64 * 512 * sizeof(float));
    if (!m || !logits) { free(logits); return NULL; }
    CHECK_OK(glyd_llmForward(m, r->tokens, r->nbTokens, 0, logits, 1));
    return logits;
}

static double max_diff_to_reference(const float* logits)
{
    size_t size, i;
    uint8_t* const ref = read_file(fixture("reference_logits.f32"), &size);
    double worst = INFINITY;
    CHECK(size == 64 * 512 * 4);
    if (ref && size == 64 * 512 * 4) {
        worst = 0;
        for (i = 0; i < 64 * 512; i++) {
            float v;
            memcpy(&v, ref + 4 * i, 4);
            if (fabs((double)v - logits[i]) > worst || isnan(logits[i])) worst = isnan(logits[i]) ? INFINITY : fabs((double)v - logits[i]);
        }
    }
    free(ref);
    return worst;
}

TEST(engine_stories260k_logits_from_folder)
{
    reference r;
    glyd_llm* m;
    float* logits;
    glyd_llmInfo info;
    if (!load_reference(&r)) return;
    m = open_model(fixture(""), 0, 1, 1);
    if (!m) return;
    glyd_llmGetInfo(m, &info);
    CHECK(!strcmp(info.architecture, "LlamaForCausalLM"));
    CHECK(info.vocabSize == 512 && info.nbLayers == 5 && info.hiddenSize == 64 && info.nbKvHeads == 4);
    CHECK(info.contextLength == 512 && info.bosToken == 1);
    /* coded weights: about 11.4 bits of 16, or 12 with 4-bit codes */
    CHECK(info.weightBytes < info.weightBytesBf16 * (glyd_fusedCodes() == GLYD_TENSOR_NIBBLE_CODES ? 76 : 72) / 100);
    logits = run_reference(m, &r);
    if (logits) {
        double const d = max_diff_to_reference(logits);
        if (d >= 1e-4) fprintf(stderr, "# max |difference| %g\n", d);
        CHECK(d < 1e-4);
    }
    free(logits);
    glyd_llmClose(m);
}

/* How far got is from want, nbTok rows of 512 logits: the largest
 * difference, the largest |want|, and at how many rows the argmax agrees. */
static size_t compare_logits(const float* want, const float* got, size_t nbTok, double* worst, double* mag)
{
    size_t i, t, agree = 0;
    *worst = 0, *mag = 0;
    for (i = 0; i < nbTok * 512; i++)
        *worst = fmax(*worst, fabs((double)got[i] - want[i])), *mag = fmax(*mag, fabs(want[i]));
    for (t = 0; t < nbTok; t++) {
        size_t a = 0, b = 0;
        for (i = 1; i < 512; i++) {
            if (want[t * 512 + i] > want[t * 512 + a]) a = i;
            if (got[t * 512 + i] > got[t * 512 + b]) b = i;
        }
        agree += a == b;
    }
    return agree;
}

/* Prompts in bf16 pairs (glyd_llmParams.bf16Prompts): plain, coded and
 * compact weights give the same bits; near the fp32 logits where the CPU
 * has AVX512_BF16 (the fixture is a small model, on which rounding its
 * activations to bf16 moves the logits by a few percent), the fp32 logits
 * themselves where it does not; a token decoded alone, fp32 either way. */
TEST(engine_bf16_prompts_coded_as_plain)
{
    reference r;
    glyd_llm *exact, *m[3];
    float *want, *got[3], one[2][512];
    int k;
    if (!load_reference(&r)) return;
    exact = open_model(fixture(""), 1, 2, 0);
    want = run_reference(exact, &r);
    g_bf16Prompts = 1;
    for (k = 0; k < 3; k++) {
        m[k] = open_model(fixture(""), k, 2, 0); /* coded, plain, compact */
        got[k] = run_reference(m[k], &r);
    }
    g_bf16Prompts = 0;
    if (want && got[0] && got[1] && got[2]) {
        double worst, mag;
        size_t const agree = compare_logits(want, got[0], 64, &worst, &mag);
        CHECK(memcmp(got[0], got[1], 64 * 512 * sizeof(float)) == 0);
        CHECK(memcmp(got[2], got[1], 64 * 512 * sizeof(float)) == 0);
        if (glyd_bf16PairsUsable()) {
            if (!(worst < 0.1 * mag && agree >= 56))
                fprintf(stderr, "# bf16 prompts: %g of logits up to %g, %zu of 64 argmax the same\n", worst, mag, agree);
            CHECK(worst > 0 && worst < 0.1 * mag && agree >= 56);
        } else {
            CHECK(worst == 0);
        }
        /* one token: decoding's fp32 products */
        CHECK_OK(glyd_llmForward(exact, r.tokens, 1, 0, one[0], 0));
        CHECK_OK(glyd_llmForward(m[0], r.tokens, 1, 0, one[1], 0));
        CHECK(memcmp(one[0], one[1], sizeof one[0]) == 0);
    }
    free(want);
    glyd_llmClose(exact);
    for (k = 0; k < 3; k++) { free(got[k]); glyd_llmClose(m[k]); }
}

/* Decoding in bf16 pairs (glyd_llmParams.bf16Decode): the reference's
 * tokens one at a time; plain, coded (either codes) and compact weights
 * give the same bits; near the fp32 logits where the CPU has AVX512_BF16,
 * the fp32 logits themselves where it does not. */
TEST(engine_bf16_decode_coded_as_plain)
{
    enum { TOKENS = 24 };
    reference r;
    glyd_llm *exact, *m[4];
    float *want, *got[4];
    int k;
    size_t t;
    if (!load_reference(&r)) return;
    want = (float*)malloc(TOKENS * 512 * sizeof(float));
    for (k = 0; k < 4; k++) got[k] = (float*)malloc(TOKENS * 512 * sizeof(float));
    exact = open_model(fixture(""), 1, 2, 0);
    g_bf16Decode = 1;
    for (k = 0; k < 4; k++) {
        g_codeBits = k == 3 ? 4 : 3;
        m[k] = open_model(fixture(""), k == 3 ? 0 : k, 2, 0); /* coded, plain, compact, 4-bit codes */
    }
    g_bf16Decode = 0;
    g_codeBits = 0;
    if (want && got[0] && got[1] && got[2] && got[3] && exact && m[0] && m[1] && m[2] && m[3]) {
        double worst, mag;
        size_t agree;
        for (t = 0; t < TOKENS; t++) {
            CHECK_OK(glyd_llmForward(exact, &r.tokens[t], 1, t, want + t * 512, 0));
            for (k = 0; k < 4; k++) CHECK_OK(glyd_llmForward(m[k], &r.tokens[t], 1, t, got[k] + t * 512, 0));
        }
        for (k = 0; k < 4; k++) CHECK(memcmp(got[k], got[1], TOKENS * 512 * sizeof(float)) == 0);
        agree = compare_logits(want, got[0], TOKENS, &worst, &mag);
        if (glyd_bf16PairsUsable()) {
            if (!(worst < 0.1 * mag && agree >= TOKENS - 3))
                fprintf(stderr, "# bf16 decode: %g of logits up to %g, %zu of %d argmax the same\n", worst, mag, agree,
                        TOKENS);
            CHECK(worst > 0 && worst < 0.1 * mag && agree >= TOKENS - 3);
        } else {
            CHECK(worst == 0);
        }
    }
    free(want);
    glyd_llmClose(exact);
    for (k = 0; k < 4; k++) { free(got[k]); glyd_llmClose(m[k]); }
}

TEST(engine_coded_weights_are_bit_identical_to_plain)
{
    /* both coded layouts, the fast one with either codes, each on the
     * decoder paths this CPU has */
    reference r;
    glyd_llm *coded[2], *compact, *plain;
    float *a[2], *b, *c;
    int simd, k;
    if (!load_reference(&r)) return;
    plain = open_model(fixture(""), 1, 1, 0);
    b = run_reference(plain, &r);
    for (simd = GLYD_SIMD_NONE; simd <= GLYD_SIMD_BEST; simd++) {
        glyd_tensorSimdLimit(simd);
        for (k = 0; k < 2; k++) {
            g_codeBits = 3 + (unsigned)k;
            coded[k] = open_model(fixture(""), 0, 2, 0);
            a[k] = run_reference(coded[k], &r);
            CHECK(a[k] && b && memcmp(a[k], b, 64 * 512 * sizeof(float)) == 0);
        }
        g_codeBits = 0;
        compact = open_model(fixture(""), 2, 3, 0);
        c = run_reference(compact, &r);
        CHECK(c && b && memcmp(c, b, 64 * 512 * sizeof(float)) == 0);
        if (coded[0] && coded[1] && compact) {
            glyd_llmInfo bits3, bits4, small;
            glyd_llmGetInfo(coded[0], &bits3);
            glyd_llmGetInfo(coded[1], &bits4);
            glyd_llmGetInfo(compact, &small);
            CHECK(small.weightBytes < bits3.weightBytes && bits3.weightBytes < bits3.weightBytesBf16 * 72 / 100);
            CHECK(bits3.weightBytes < bits4.weightBytes && bits4.weightBytes < bits4.weightBytesBf16 * 76 / 100);
        }
        for (k = 0; k < 2; k++) {
            free(a[k]);
            glyd_llmClose(coded[k]);
        }
        free(c);
        glyd_llmClose(compact);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    if (plain) {
        glyd_llmInfo info;
        glyd_llmGetInfo(plain, &info);
        CHECK(info.weightBytes == info.weightBytesBf16);
    }
    free(b);
    glyd_llmClose(plain);
}

TEST(engine_stories260k_logits_from_packed_model)
{
    reference r;
    char dir[64], out[128];
    glyd_llm *packed, *folder;
    float *a, *b;
    if (!load_reference(&r)) return;
    snprintf(dir, sizeof dir, "/tmp/glyd-test-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(out, sizeof out, "%s/s.glyd", dir);
    folder = open_model(fixture(""), 0, 1, 1);
    b = run_reference(folder, &r);
    {
        /* entropy-coded blobs recoded at load, or used where they lie
         * (compact); fast-layout blobs (3-bit codes) used where they lie,
         * or recoded into 4-bit codes: the same logits as from the folder,
         * bit for bit */
        static const struct { glyd_tensorLayout layout; int form; unsigned bits; } kCases[] = {
            { glyd_tensor_auto, 0, 0 }, { glyd_tensor_auto, 2, 0 }, { glyd_tensor_fast, 0, 3 },
            { glyd_tensor_fast, 0, 4 }, { glyd_tensor_auto, 0, 4 }
        };
        size_t k;
        for (k = 0; k < sizeof kCases / sizeof kCases[0]; k++) {
            glyd_packParams pp;
            memset(&pp, 0, sizeof pp);
            pp.layout = kCases[k].layout;
            CHECK_OK(glyd_packModel(fixture(""), out, &pp));
            g_codeBits = kCases[k].bits;
            packed = open_model(out, kCases[k].form, 3, 1);
            g_codeBits = 0;
            a = run_reference(packed, &r);
            if (a) CHECK(max_diff_to_reference(a) < 1e-4);
            CHECK(a && b && memcmp(a, b, 64 * 512 * sizeof(float)) == 0);
            free(a);
            glyd_llmClose(packed);
        }
    }
    free(b);
    glyd_llmClose(folder);
    remove(out);
    rmdir(dir);
}

TEST(engine_greedy_from_bos_matches_reference)
{
    reference r;
    glyd_llm* m;
    float logits[512];
    int tok;
    size_t i, pos = 0;
    if (!load_reference(&r)) return;
    m = open_model(fixture(""), 0, 2, 1);
    if (!m) return;
    /* the reference stops when it samples BOS again */
    tok = r.greedy[0];
    for (i = 1; i <= r.nbGreedy; i++) {
        unsigned k, best = 0;
        CHECK_OK(glyd_llmForward(m, &tok, 1, pos++, logits, 0));
        for (k = 1; k < 512; k++) if (logits[k] > logits[best]) best = k;
        tok = (int)best;
        if (i < r.nbGreedy) {
            CHECK(tok == r.greedy[i]);
            if (tok != r.greedy[i]) break;
        } else {
            CHECK(tok == 1);
        }
    }
    glyd_llmClose(m);
}

TEST(engine_prompt_in_pieces_equals_prompt_at_once)
{
    reference r;
    glyd_llm *a, *b;
    float la[512], lb[512];
    if (!load_reference(&r)) return;
    a = open_model(fixture(""), 0, 1, 0);
    b = open_model(fixture(""), 0, 2, 0);
    if (!a || !b) { glyd_llmClose(a); glyd_llmClose(b); return; }
    CHECK_OK(glyd_llmForward(a, r.tokens, 64, 0, la, 0));
    CHECK_OK(glyd_llmForward(b, r.tokens, 20, 0, lb, 0));
    CHECK_OK(glyd_llmForward(b, r.tokens + 20, 44, 20, lb, 0));
    CHECK(memcmp(la, lb, sizeof la) == 0);
    /* restarting at 0 forgets the earlier tokens */
    CHECK_OK(glyd_llmForward(b, r.tokens, 64, 0, lb, 0));
    CHECK(memcmp(la, lb, sizeof la) == 0);
    {   /* prompts run in batches; one token at a time gives the same bits */
        size_t i;
        for (i = 0; i < 64; i++) CHECK_OK(glyd_llmForward(b, r.tokens + i, 1, i, lb, 0));
        CHECK(memcmp(la, lb, sizeof la) == 0);
    }
    glyd_llmClose(a);
    glyd_llmClose(b);
}

TEST(engine_refuses_bad_tokens_and_full_context)
{
    glyd_llmParams p;
    size_t err;
    glyd_llm* m;
    float logits[512];
    int tok = 512, ok = 1;
    memset(&p, 0, sizeof p);
    p.contextLength = 4;
    p.nbThreads = 1;
    m = glyd_llmOpen(fixture(""), &p, &err);
    CHECK(m != NULL);
    if (!m) return;
    CHECK_ERR(glyd_llmForward(m, &tok, 1, 0, logits, 0), GLYD_error_parameter_outOfBound);
    tok = -1;
    CHECK_ERR(glyd_llmForward(m, &tok, 1, 0, logits, 0), GLYD_error_parameter_outOfBound);
    CHECK_OK(glyd_llmForward(m, &ok, 1, 3, logits, 0));
    CHECK_ERR(glyd_llmForward(m, &ok, 1, 4, logits, 0), GLYD_error_parameter_outOfBound);
    CHECK_ERR(glyd_llmForward(m, &ok, 0, 0, logits, 0), GLYD_error_parameter_outOfBound);
    glyd_llmClose(m);
}

/* A backend outside glyd_gpuBackend is refused, named, before anything
 * is read. */
TEST(engine_refuses_an_unknown_backend)
{
    glyd_llmParams p;
    char msg[256] = "";
    size_t err;
    memset(&p, 0, sizeof p);
    p.gpu = (glyd_gpuBackend)7;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    CHECK(glyd_llmOpen(fixture(""), &p, &err) == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_parameter_outOfBound);
    CHECK(strstr(msg, "backend 7") != NULL);
    /* fast codes of 3 or 4 bits only, and 3 on a GPU */
    p.gpu = GLYD_GPU_NONE;
    p.fastCodeBits = 5;
    CHECK(glyd_llmOpen(fixture(""), &p, &err) == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_parameter_outOfBound);
    CHECK(strstr(msg, "fast codes of 5 bits") != NULL);
    p.gpu = GLYD_GPU_EMULATED;
    p.fastCodeBits = 4;
    CHECK(glyd_llmOpen(fixture(""), &p, &err) == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_parameter_outOfBound);
    CHECK(strstr(msg, "3-bit codes") != NULL);
}

/* A copy of the fixture folder with another config.json. */
static void folder_with_config(char* dir, size_t cap, const char* config)
{
    char path[256];
    size_t size;
    uint8_t* const st = read_file(fixture("model.safetensors"), &size);
    FILE* f;
    snprintf(dir, cap, "/tmp/glyd-test-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    CHECK(f && st && fwrite(st, 1, size, f) == size);
    if (f) fclose(f);
    free(st);
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) { fputs(config, f); fclose(f); }
}

static void remove_folder(const char* dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
}

static size_t open_error(const char* path, char* msg, size_t cap)
{
    glyd_llmParams p;
    size_t err;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    p.message = msg;
    p.messageCapacity = cap;
    msg[0] = 0;
    m = glyd_llmOpen(path, &p, &err);
    CHECK(m == NULL);
    glyd_llmClose(m);
    return err;
}

TEST(engine_refuses_what_it_cannot_run)
{
    static const char* const base =
        "{\"architectures\": [\"%s\"], \"hidden_size\": 64, \"intermediate_size\": %d, "
        "\"num_hidden_layers\": 5, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, "
        "\"vocab_size\": 512, \"max_position_embeddings\": 512, \"rms_norm_eps\": 1e-05, "
        "\"tie_word_embeddings\": true%s}";
    char config[1024], dir[64], msg[256];
    /* an architecture the engine lacks */
    snprintf(config, sizeof config, base, "GPT2LMHeadModel", 172, "");
    folder_with_config(dir, sizeof dir, config);
    CHECK_ERR(open_error(dir, msg, sizeof msg), GLYD_error_model_unsupported);
    CHECK(strstr(msg, "GPT2LMHeadModel") != NULL);
    remove_folder(dir);
    /* shapes that do not match the tensors */
    snprintf(config, sizeof config, base, "LlamaForCausalLM", 200, "");
    folder_with_config(dir, sizeof dir, config);
    CHECK_ERR(open_error(dir, msg, sizeof msg), GLYD_error_model_invalid);
    CHECK(strstr(msg, "mlp.gate_proj") != NULL);
    remove_folder(dir);
    /* Qwen2 wants q/k/v biases the file does not have */
    snprintf(config, sizeof config, base, "Qwen2ForCausalLM", 172, "");
    folder_with_config(dir, sizeof dir, config);
    CHECK_ERR(open_error(dir, msg, sizeof msg), GLYD_error_model_invalid);
    CHECK(strstr(msg, "bias") != NULL);
    remove_folder(dir);
    /* an unknown rope scaling */
    snprintf(config, sizeof config, base, "LlamaForCausalLM", 172,
             ", \"rope_scaling\": {\"rope_type\": \"longrope\", \"factor\": 4}");
    folder_with_config(dir, sizeof dir, config);
    CHECK_ERR(open_error(dir, msg, sizeof msg), GLYD_error_model_unsupported);
    remove_folder(dir);
    /* not JSON */
    folder_with_config(dir, sizeof dir, "{\"architectures\": [");
    CHECK_ERR(open_error(dir, msg, sizeof msg), GLYD_error_model_invalid);
    remove_folder(dir);
    /* no model there at all */
    CHECK_ERR(open_error("/nonexistent/model", msg, sizeof msg), GLYD_error_io_failed);
    CHECK(strstr(msg, "/nonexistent/model") != NULL);
    CHECK_ERR(open_error(fixture("reference.json"), msg, sizeof msg), GLYD_error_pack_invalid);
}

TEST(engine_rope_frequencies)
{
    glyd_llmConfig c;
    float f[64], scale;
    memset(&c, 0, sizeof c);
    c.headDim = 128;
    c.ropeTheta = 1000000.0;
    glyd_ropeFrequencies(&c, f, &scale);
    CHECK(scale == 1.0f && f[0] == 1.0f);
    CHECK(fabs(f[1] - pow(1e6, -2.0 / 128)) < 1e-7 && fabs(f[63] / pow(1e6, -126.0 / 128) - 1) < 1e-5);
    c.rope = GLYD_ROPE_LINEAR;
    c.ropeFactor = 4;
    glyd_ropeFrequencies(&c, f, &scale);
    CHECK(f[0] == 0.25f && scale == 1.0f);
    /* yarn: fast pairs kept, slow pairs divided by the factor, cos and sin
     * scaled by 0.1 ln(factor) + 1 */
    c.rope = GLYD_ROPE_YARN;
    c.ropeFactor = 4;
    c.ropeOriginalMax = 32768;
    c.yarnBetaFast = 32;
    c.yarnBetaSlow = 1;
    glyd_ropeFrequencies(&c, f, &scale);
    CHECK(f[0] == 1.0f);
    CHECK(fabs(f[63] * 4 / pow(1e6, -126.0 / 128) - 1) < 1e-5);
    CHECK(fabs(scale - (0.1 * log(4.0) + 1)) < 1e-6);
}

/* llama3 on Llama 3.2 1B's settings, to the bit as transformers' float32
 * gives them: pairs 0-14 kept, 15-17 smoothed, 18-31 divided by 32 */
TEST(engine_rope_frequencies_llama3)
{
    static const float kSmoothed[3] = { 0x1.524f36p-10f, 0x1.c26c4p-12f, 0x1.9731eep-14f };
    glyd_llmConfig c;
    float f[32], scale = 0;
    memset(&c, 0, sizeof c);
    c.headDim = 64;
    c.ropeTheta = 500000.0;
    c.rope = GLYD_ROPE_LLAMA3;
    c.ropeFactor = 32;
    c.ropeOriginalMax = 8192;
    c.llama3LowFreqFactor = 1;
    c.llama3HighFreqFactor = 4;
    glyd_ropeFrequencies(&c, f, &scale);
    CHECK(scale == 1.0f && f[0] == 1.0f && f[1] == 0x1.53c38cp-1f && f[14] == 0x1.a4ee4p-9f);
    CHECK(!memcmp(f + 15, kSmoothed, sizeof kSmoothed));
    CHECK(f[18] == 0x1.46831ap-16f && f[31] == 0x1.94836p-24f);
}

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                */
/* ------------------------------------------------------------------------ */

static const char* qwen_dir(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../fixtures/qwen3-tokenizer", corpus_dir());
    return path;
}

static glyd_tokenizer* open_qwen(void)
{
    char msg[256] = "";
    size_t err;
    glyd_tokenizer* const t = glyd_tokenizerOpen(qwen_dir(), msg, sizeof msg, &err);
    if (!t) fprintf(stderr, "# %s\n", msg);
    CHECK(t != NULL);
    return t;
}

TEST(tokenizer_qwen3_reference_lines)
{
    char path[1100];
    FILE* f;
    char line[65536];
    int lines = 0;
    glyd_tokenizer* const t = open_qwen();
    if (!t) return;
    CHECK(glyd_tokenizerVocabSize(t) == 151669);
    CHECK(glyd_tokenizerFind(t, "<|im_end|>") == 151645 && glyd_tokenizerFind(t, "no such token") == -1);
    snprintf(path, sizeof path, "%s/reference_ids.jsonl", qwen_dir());
    f = fopen(path, "r");
    CHECK(f != NULL);
    while (f && fgets(line, sizeof line, f)) {
        json_error_t e;
        json_t* const o = json_loads(line, 0, &e);
        const json_t* const want = json_object_get(o, "ids");
        const char* const text = json_string_value(json_object_get(o, "text"));
        int* ids = NULL;
        size_t n = 0, i, same;
        CHECK(o && text && json_is_array(want));
        if (!o || !text) { json_decref(o); break; }
        CHECK_OK(glyd_tokenizerEncode(t, text, json_string_length(json_object_get(o, "text")), &ids, &n));
        same = n == json_array_size(want);
        for (i = 0; same && i < n; i++) same = ids[i] == (int)json_integer_value(json_array_get(want, i));
        if (!same) fprintf(stderr, "# line %d differs\n", lines + 1);
        CHECK(same);
        /* and back: the bytes of the ids are the text */
        {
            size_t pos = 0, len = strlen(text), ok = 1;
            for (i = 0; i < n && ok; i++) {
                const unsigned char* b;
                size_t bn;
                CHECK_OK(glyd_tokenizerBytes(t, ids[i], &b, &bn));
                ok = pos + bn <= len && memcmp(text + pos, b, bn) == 0;
                pos += bn;
            }
            CHECK(ok && pos == len);
        }
        free(ids);
        json_decref(o);
        lines++;
    }
    if (f) fclose(f);
    CHECK(lines == 15);
    glyd_tokenizerFree(t);
}

TEST_SLOW(tokenizer_qwen3_alice29)
{
    char path[1100];
    size_t size, refSize, n = 0, i, count = 0;
    uint8_t* text;
    char* ref;
    char* p;
    int* ids = NULL;
    int same = 1;
    glyd_tokenizer* const t = open_qwen();
    snprintf(path, sizeof path, "%s/text/alice29.txt", corpus_dir());
    text = read_file(path, &size);
    snprintf(path, sizeof path, "%s/alice29.ids", qwen_dir());
    ref = (char*)read_file(path, &refSize);
    if (!t || !text || !ref) { glyd_tokenizerFree(t); free(text); free(ref); return; }
    ref = (char*)realloc(ref, refSize + 1);
    ref[refSize] = 0;
    CHECK_OK(glyd_tokenizerEncode(t, (const char*)text, size, &ids, &n));
    for (p = ref, i = 0; *p; ) {
        char* end;
        long const v = strtol(p, &end, 10);
        if (end == p) break;
        if (i >= n || ids[i] != (int)v) same = 0;
        i++;
        count++;
        p = end;
    }
    CHECK(same && count == n && n > 30000);
    free(ids);
    free(text);
    free(ref);
    glyd_tokenizerFree(t);
}

TEST(tokenizer_from_packed_model_and_bad_input)
{
    char dir[64], out[128], msg[256];
    size_t err;
    glyd_tokenizer* t;
    int* ids = NULL;
    size_t n;
    snprintf(dir, sizeof dir, "/tmp/glyd-test-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(out, sizeof out, "%s/q.glyd", dir);
    CHECK_OK(glyd_packModel(qwen_dir(), out, NULL));
    t = glyd_tokenizerOpen(out, msg, sizeof msg, &err);
    CHECK(t != NULL);
    if (t) {
        static const char text[] = "<|im_start|>user\nHi!<|im_end|>";
        CHECK_OK(glyd_tokenizerEncode(t, text, sizeof text - 1, &ids, &n));
        CHECK(n >= 4 && ids[0] == 151644 && ids[n - 1] == 151645);
        free(ids);
        /* invalid UTF-8 is refused, not guessed at */
        CHECK(glyd_isError(glyd_tokenizerEncode(t, "a\xff" "b", 3, &ids, &n)));
        CHECK(ids == NULL);
        CHECK_OK(glyd_tokenizerEncode(t, "", 0, &ids, &n));
        CHECK(n == 0);
        free(ids);
        {   /* a long run of letters and one of spaces (pieces of 100 KB) come
             * back byte for byte */
            size_t const len = 200000;
            char* const text2 = (char*)malloc(len);
            size_t i, pos = 0, ok = 1;
            if (text2) {
                for (i = 0; i < len; i++) text2[i] = i < len / 2 ? ' ' : (char)('a' + (i % 7 == 0));
                CHECK_OK(glyd_tokenizerEncode(t, text2, len, &ids, &n));
                CHECK(n > 0 && n < len / 2);
                for (i = 0; i < n && ok; i++) {
                    const unsigned char* b;
                    size_t bn;
                    ok = !glyd_isError(glyd_tokenizerBytes(t, ids[i], &b, &bn)) && pos + bn <= len &&
                         memcmp(text2 + pos, b, bn) == 0;
                    pos += bn;
                }
                CHECK(ok && pos == len);
                free(ids);
                free(text2);
            }
        }
        CHECK(glyd_isError(glyd_tokenizerBytes(t, 999999, (const unsigned char**)&ids, &n)));
        glyd_tokenizerFree(t);
    }
    remove(out);
    rmdir(dir);
    /* no tokenizer there, or not a tokenizer */
    CHECK(glyd_tokenizerOpen(fixture(""), msg, sizeof msg, &err) == NULL);
    CHECK(strstr(msg, "tokenizer.json") != NULL);
    CHECK(glyd_tokenizerOpen(fixture("config.json"), msg, sizeof msg, &err) == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_model_unsupported);
}

/* ------------------------------------------------------------------------ */
/* Sampler                                                                  */
/* ------------------------------------------------------------------------ */

static int sample_once(const glyd_samplerParams* p, const float* logits, size_t n, const int* hist, size_t nh)
{
    float tmp[16];
    glyd_sampler* const s = glyd_samplerCreate(p, n);
    int t;
    CHECK(s != NULL && n <= 16);
    if (!s) return -1;
    memcpy(tmp, logits, n * sizeof(float));
    t = glyd_samplerSample(s, tmp, hist, nh);
    glyd_samplerFree(s);
    return t;
}

TEST(sampler_rules)
{
    static const float logits[5] = { 1.0f, 3.0f, 2.9f, -1.0f, 0.5f };
    glyd_samplerParams p;
    int const hist[3] = { 1, 1, 4 };
    memset(&p, 0, sizeof p);
    /* greedy */
    CHECK(sample_once(&p, logits, 5, NULL, 0) == 1);
    /* a repetition penalty of 2 halves the positive logit of token 1 */
    p.repetitionPenalty = 2.0f;
    CHECK(sample_once(&p, logits, 5, hist, 3) == 2);
    p.repetitionPenalty = 1.0f;
    /* top-k 1, top-p tiny and min-p 1 leave only the best */
    p.temperature = 1.0f;
    p.topK = 1;
    CHECK(sample_once(&p, logits, 5, NULL, 0) == 1);
    p.topK = 0;
    p.topP = 0.01f;
    CHECK(sample_once(&p, logits, 5, NULL, 0) == 1);
    p.topP = 0;
    p.minP = 1.0f;
    CHECK(sample_once(&p, logits, 5, NULL, 0) == 1);
    CHECK(glyd_samplerCreate(&p, 0) == NULL);
}

TEST(sampler_draws_follow_the_distribution)
{
    /* softmax(0, ln 2, ln 3) = 1/6, 2/6, 3/6; top-k 2 leaves 2/5, 3/5;
     * top-p 0.5 leaves the best only after it, min-p 0.6 drops token 0 */
    float const logits[3] = { 0.0f, 0.69314718f, 1.09861229f };
    static const struct { int topK; float topP, minP; double want[3]; } cases[] = {
        { 0, 0, 0, { 1.0 / 6, 2.0 / 6, 3.0 / 6 } },
        { 2, 0, 0, { 0, 0.4, 0.6 } },
        { 0, 0.5f, 0, { 0, 0, 1 } },
        { 0, 0.8f, 0, { 0, 0.4, 0.6 } },
        { 0, 0, 0.6f, { 0, 0.4, 0.6 } },
    };
    size_t c;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        glyd_samplerParams p;
        glyd_sampler* s;
        int count[3] = { 0, 0, 0 }, i, k, draws = 30000;
        memset(&p, 0, sizeof p);
        p.temperature = 1.0f;
        p.topK = cases[c].topK;
        p.topP = cases[c].topP;
        p.minP = cases[c].minP;
        p.seed = 42;
        s = glyd_samplerCreate(&p, 3);
        CHECK(s != NULL);
        if (!s) return;
        for (i = 0; i < draws; i++) {
            float tmp[3];
            int t;
            memcpy(tmp, logits, sizeof tmp);
            t = glyd_samplerSample(s, tmp, NULL, 0);
            CHECK(t >= 0 && t < 3);
            if (t >= 0 && t < 3) count[t]++;
        }
        for (k = 0; k < 3; k++) {
            double const got = (double)count[k] / draws;
            if (fabs(got - cases[c].want[k]) > 0.015) fprintf(stderr, "# case %zu token %d: %.3f\n", c, k, got);
            CHECK(fabs(got - cases[c].want[k]) <= 0.015);
        }
        glyd_samplerFree(s);
    }
    {   /* the same seed, the same draws; temperature sharpens */
        glyd_samplerParams p;
        glyd_sampler *a, *b;
        int i, same = 1, best = 0;
        memset(&p, 0, sizeof p);
        p.temperature = 0.1f;
        p.seed = 7;
        a = glyd_samplerCreate(&p, 3);
        b = glyd_samplerCreate(&p, 3);
        for (i = 0; a && b && i < 1000; i++) {
            float x[3], y[3];
            int ta, tb;
            memcpy(x, logits, sizeof x);
            memcpy(y, logits, sizeof y);
            ta = glyd_samplerSample(a, x, NULL, 0);
            tb = glyd_samplerSample(b, y, NULL, 0);
            same &= ta == tb;
            best += ta == 2;
        }
        CHECK(same && best > 950);
        glyd_samplerFree(a);
        glyd_samplerFree(b);
    }
}

/* ------------------------------------------------------------------------ */
/* Tiny random models against transformers                                  */
/* ------------------------------------------------------------------------ */

/* tests/data/NAME: made by tools/tiny_models.py with transformers, whose
 * fp32 logits on the bf16 weights are the reference, over all its tokens;
 * on the CPU, the same tokens a position at a time give the same bits. */
/* A tiny model's reference: its tokens (at most 256) into tokens, their
 * count into *n; returns transformers' logits for them (n x 256 floats,
 * little-endian), NULL when missing. */
static uint8_t* tiny_reference(const char* dir, int* tokens, size_t* n)
{
    char path[600];
    json_error_t e;
    json_t* ref;
    const json_t* list;
    size_t i, size = 0;
    uint8_t* want;
    *n = 0;
    snprintf(path, sizeof path, "%s/reference.json", dir);
    ref = json_load_file(path, 0, &e);
    CHECK(ref != NULL);
    if (!ref) return NULL;
    list = json_object_get(ref, "tokens");
    for (i = 0; i < json_array_size(list) && *n < 256; i++) tokens[(*n)++] = (int)json_integer_value(json_array_get(list, i));
    json_decref(ref);
    snprintf(path, sizeof path, "%s/reference_logits.f32", dir);
    want = read_file(path, &size);
    CHECK(want && size == *n * 256 * 4);
    if (want && size == *n * 256 * 4) return want;
    free(want);
    return NULL;
}

/* max |logits - want| over n x 256, infinite where a logit is NaN */
static double worst_difference(const float* logits, const uint8_t* want, size_t n)
{
    double worst = 0;
    size_t i;
    for (i = 0; i < n * 256; i++) {
        float v;
        memcpy(&v, want + 4 * i, 4);
        if (!(fabs((double)v - logits[i]) <= worst)) worst = isnan(logits[i]) ? INFINITY : fabs((double)v - logits[i]);
    }
    return worst;
}

static void check_tiny(const char* name, int packed, int gpu)
{
    char dir[512], out[128], tmp[64] = "";
    int tokens[256];
    size_t n = 0, i;
    float* logits;
    uint8_t* want;
    glyd_llm* m;
    double worst = 0;
    snprintf(dir, sizeof dir, "tests/data/%s", name);
    want = tiny_reference(dir, tokens, &n);
    if (!want) return;
    if (packed) {
        snprintf(tmp, sizeof tmp, "/tmp/glyd-test-XXXXXX");
        CHECK(mkdtemp(tmp) != NULL);
        snprintf(out, sizeof out, "%s/m.glyd", tmp);
        CHECK_OK(glyd_packModel(dir, out, NULL));
    }
    /* a packed model recoded at load into 4-bit codes (on the CPU), a
     * folder coded into the codes this CPU's products run fastest */
    g_codeBits = packed && !gpu ? 4 : 0;
    m = open_model_on(packed ? out : dir, 0, 2, 1, gpu);
    g_codeBits = 0;
    logits = (float*)malloc(n * 256 * sizeof(float));
    if (m && logits) {
        CHECK_OK(glyd_llmForward(m, tokens, n, 0, logits, 1));
        worst = worst_difference(logits, want, n);
        if (worst >= 1e-4) fprintf(stderr, "# %s: max |difference| %g\n", name, worst);
        CHECK(worst < 1e-4);
        /* a position at a time, as decoding runs, gives the batch's bits */
        if (!gpu) {
            float* const one = (float*)malloc(256 * sizeof(float));
            size_t differ = 0;
            CHECK(one != NULL);
            for (i = 0; one && i < n; i++) {
                CHECK_OK(glyd_llmForward(m, tokens + i, 1, i, one, 0));
                differ += memcmp(one, logits + i * 256, 256 * sizeof(float)) != 0;
            }
            if (differ) fprintf(stderr, "# %s: %zu positions differ one at a time\n", name, differ);
            CHECK(differ == 0);
            free(one);
        }
    }
    free(logits);
    free(want);
    glyd_llmClose(m);
    if (packed) { remove(out); rmdir(tmp); }
}

TEST(engine_tiny_qwen2_against_transformers) { check_tiny("tiny-qwen2", 0, 0); check_tiny("tiny-qwen2", 1, 0); }
TEST(engine_tiny_qwen3_against_transformers) { check_tiny("tiny-qwen3", 0, 0); check_tiny("tiny-qwen3", 1, 0); }
TEST(engine_tiny_qwen3_yarn_against_transformers) { check_tiny("tiny-qwen3-yarn", 0, 0); }
/* llama3 rope scaling, 160 positions: five times the original context */
TEST(engine_tiny_llama3_against_transformers) { check_tiny("tiny-llama3", 0, 0); check_tiny("tiny-llama3", 1, 0); }

/* ------------------------------------------------------------------------ */
/* The GPU backend, on the CPU's emulation of a GPU                          */
/* ------------------------------------------------------------------------ */

/* The GPU backend's logic (uploads, paged cache, the products' two paths)
 * and its kernels' per-thread work, emulated; CUDA itself runs them in
 * tests/gpu/run.sh. */

TEST(gpu_backend_emulated_stories260k_logits)
{
    /* 64 tokens at once: prompt products through decoded tiles (batches
     * of 32); one at a time: the fused product */
    reference r;
    glyd_llm* m;
    float* logits;
    glyd_llmInfo info;
    if (!load_reference(&r)) return;
    m = open_model_on(fixture(""), 0, 1, 1, GLYD_GPU_EMULATED);
    if (!m) return;
    glyd_llmGetInfo(m, &info);
    CHECK(!strcmp(info.backend, "emulated"));
    CHECK(info.deviceWeightBytes > 0 && info.deviceWeightBytes < info.weightBytesBf16 * 72 / 100);
    logits = run_reference(m, &r);
    if (logits) {
        /* the prompt's products add in cuBLAS's order (here, the plain
         * order of the emulation), not in the units' pieces */
        double d = max_diff_to_reference(logits);
        size_t i;
        if (d >= 2e-4) fprintf(stderr, "# prompt: max |difference| %g\n", d);
        CHECK(d < 2e-4);
        for (i = 0; i < 64; i++) CHECK_OK(glyd_llmForward(m, r.tokens + i, 1, i, logits + i * 512, 0));
        d = max_diff_to_reference(logits);
        if (d >= 1e-4) fprintf(stderr, "# one at a time: max |difference| %g\n", d);
        CHECK(d < 1e-4);
    }
    free(logits);
    glyd_llmClose(m);
}

TEST(gpu_backend_emulated_long_context_in_chunks)
{
    /* 500 positions: attention in two chunks of 256 and their merge, for a
     * prompt (batches of 100) and then token by token, against the CPU
     * engine. An fp32 cache: with bf16, keys and values that the two
     * engines round one way and the other drift apart over 500 positions
     * (to 3e-4 of the largest logit). */
    glyd_llm* const cpu = open_model_on(fixture(""), 0, 1, 1, GLYD_GPU_NONE);
    glyd_llm* const gpu = open_model_on(fixture(""), 0, 1, 1, GLYD_GPU_EMULATED);
    static float a[100 * 512], b[100 * 512];
    int tokens[506];
    size_t i, k;
    double most = 0, mag = 0;
    for (i = 0; i < 506; i++) tokens[i] = (int)((i * 37 + 11) % 512);
    if (cpu && gpu) {
        for (i = 0; i < 500; i += 100) {
            CHECK_OK(glyd_llmForward(cpu, tokens + i, 100, i, a, 0));
            CHECK_OK(glyd_llmForward(gpu, tokens + i, 100, i, b, 0));
        }
        for (k = 0; k < 100 * 512; k++) most = fmax(most, fabs((double)a[k] - b[k])), mag = fmax(mag, fabs(a[k]));
        for (i = 500; i < 506; i++) {
            CHECK_OK(glyd_llmForward(cpu, tokens + i, 1, i, a, 0));
            CHECK_OK(glyd_llmForward(gpu, tokens + i, 1, i, b, 0));
            for (k = 0; k < 512; k++) most = fmax(most, fabs((double)a[k] - b[k])), mag = fmax(mag, fabs(a[k]));
        }
        if (most >= 1e-4 * mag) fprintf(stderr, "# max |difference| %g of logits up to %g\n", most, mag);
        CHECK(mag > 1 && most < 1e-4 * mag);
    }
    glyd_llmClose(cpu);
    glyd_llmClose(gpu);
}

TEST(gpu_backend_emulated_coded_is_bit_identical_to_plain)
{
    /* the fast and the Huffman (--compact) layouts against plain bf16, on
     * both products' paths, bf16 and fp32 caches */
    reference r;
    int kvF32;
    if (!load_reference(&r)) return;
    for (kvF32 = 0; kvF32 <= 1; kvF32++) {
        glyd_llm* const coded = open_model_on(fixture(""), 0, 1, kvF32, GLYD_GPU_EMULATED);
        glyd_llm* const compact = open_model_on(fixture(""), 2, 1, kvF32, GLYD_GPU_EMULATED);
        glyd_llm* const plain = open_model_on(fixture(""), 1, 1, kvF32, GLYD_GPU_EMULATED);
        float* const a = run_reference(coded, &r);
        float* const c = run_reference(compact, &r);
        float* const b = run_reference(plain, &r);
        float la[512], lb[512], lc[512];
        CHECK(a && b && memcmp(a, b, 64 * 512 * sizeof(float)) == 0);
        CHECK(c && b && memcmp(c, b, 64 * 512 * sizeof(float)) == 0);
        if (coded && plain && compact) {
            glyd_llmInfo ci, pi;
            CHECK_OK(glyd_llmForward(coded, r.tokens, 5, 0, la, 0));
            CHECK_OK(glyd_llmForward(plain, r.tokens, 5, 0, lb, 0));
            CHECK_OK(glyd_llmForward(compact, r.tokens, 5, 0, lc, 0));
            CHECK(memcmp(la, lb, sizeof la) == 0 && memcmp(lc, lb, sizeof lc) == 0);
            glyd_llmGetInfo(coded, &ci);
            glyd_llmGetInfo(plain, &pi);
            CHECK(ci.deviceWeightBytes < pi.deviceWeightBytes * 72 / 100);
        }
        free(a);
        free(b);
        free(c);
        glyd_llmClose(coded);
        glyd_llmClose(compact);
        glyd_llmClose(plain);
    }
}

TEST(gpu_backend_emulated_greedy_matches_reference)
{
    /* the largest logit picked on the device; a long continuation crosses
     * pages of the cache and the steps that take them */
    reference r;
    glyd_llm* m;
    int tok;
    size_t i, pos = 0;
    if (!load_reference(&r)) return;
    CHECK(r.nbGreedy > 2 * GK_PAGE);
    m = open_model_on(fixture(""), 0, 1, 1, GLYD_GPU_EMULATED);
    if (!m) return;
    tok = r.greedy[0];
    for (i = 1; i <= r.nbGreedy; i++) {
        int next = -1;
        CHECK_OK(glyd_llmGreedy(m, &tok, 1, pos++, &next));
        tok = next;
        if (i < r.nbGreedy) {
            CHECK(tok == r.greedy[i]);
            if (tok != r.greedy[i]) { fprintf(stderr, "# differs at %zu\n", i); break; }
        } else {
            CHECK(tok == 1);
        }
    }
    glyd_llmClose(m);
}

TEST(gpu_backend_emulated_tiny_qwen_against_transformers)
{
    check_tiny("tiny-qwen2", 0, GLYD_GPU_EMULATED);
    check_tiny("tiny-qwen2", 1, GLYD_GPU_EMULATED);
    check_tiny("tiny-qwen3", 0, GLYD_GPU_EMULATED);
    check_tiny("tiny-qwen3-yarn", 0, GLYD_GPU_EMULATED);
}

/* the backend takes the engine's rotary frequencies: llama3's as well */
TEST(gpu_backend_emulated_tiny_llama3_against_transformers)
{
    check_tiny("tiny-llama3", 0, GLYD_GPU_EMULATED);
    check_tiny("tiny-llama3", 1, GLYD_GPU_EMULATED);
}

TEST(gpu_backend_on_cuda_without_a_gpu_says_why)
{
    glyd_llmParams p;
    char msg[512] = "";
    size_t err;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    /* CUDA: the library is not beside the test program; or, where it is
     * and no GPU answers, a reason all the same */
    p.compactWeights = 0;
    p.gpu = GLYD_GPU_CUDA;
    msg[0] = 0;
    m = glyd_llmOpen(fixture(""), &p, &err);
    if (m) {
        glyd_llmInfo info;
        glyd_llmGetInfo(m, &info);
        CHECK(!strcmp(info.backend, "cuda"));
        glyd_llmClose(m);
    } else {
        CHECK(glyd_isError(err) && strstr(msg, "GPU") != NULL);
    }
}

/* A conversation as `glyd run` leaves it in the cache: each turn appended,
 * the previous reply first rewritten to its answer (glyd_chatAnswerStart). */
static int render_chat(json_t* c, char* out, size_t cap)
{
    json_t* const turns = json_object_get(c, "turns");
    const char* const system = json_string_value(json_object_get(c, "system"));
    int const think = json_is_true(json_object_get(c, "think"));
    size_t len = 0, replyStart = 0, t;
    int open = 0;
    out[0] = 0;
#define APPEND(s) do { size_t const n_ = strlen(s); if (len + n_ >= cap) return 0; memcpy(out + len, s, n_ + 1); len += n_; } while (0)
    for (t = 0; t < json_array_size(turns); t++) {
        json_t* const turn = json_array_get(turns, t);
        const char* const user = json_string_value(json_array_get(turn, 0));
        const char* const reply = json_string_value(json_array_get(turn, 1));
        if (open) {
            size_t const a = glyd_chatAnswerStart(out + replyStart, len - replyStart);
            if (a) {
                memmove(out + replyStart, out + replyStart + a, len - replyStart - a + 1);
                len -= a;
            }
            APPEND("<|im_end|>\n");
        }
        if (t == 0 && system) { APPEND("<|im_start|>system\n"); APPEND(system); APPEND("<|im_end|>\n"); }
        APPEND("<|im_start|>user\n");
        APPEND(user);
        APPEND("<|im_end|>\n<|im_start|>assistant\n");
        replyStart = len;
        if (!think) APPEND("<think>\n\n</think>\n\n");
        if (reply) { APPEND(reply); open = 1; }
    }
#undef APPEND
    return 1;
}

TEST(chat_history_is_written_as_qwen3_template_writes_it)
{
    /* tests/data/chat/qwen3_history.json: conversations rendered by Qwen3's
     * own template (tools/chat_reference.py): thinking kept out of the
     * history, a reply cut before </think> kept whole, --no-think */
    json_error_t e;
    json_t* const cases = json_load_file("tests/data/chat/qwen3_history.json", 0, &e);
    size_t k;
    char got[4096];
    CHECK(json_array_size(cases) == 3);
    for (k = 0; k < json_array_size(cases); k++) {
        json_t* const c = json_array_get(cases, k);
        const char* const want = json_string_value(json_object_get(c, "expected"));
        CHECK(render_chat(c, got, sizeof got));
        CHECK(want != NULL);
        if (!want) continue;
        if (strcmp(got, want) != 0) fprintf(stderr, "# case %zu:\n# got  %s\n# want %s\n", k, got, want);
        CHECK(strcmp(got, want) == 0);
    }
    json_decref(cases);
    CHECK(glyd_chatAnswerStart("", 0) == 0);
    CHECK(glyd_chatAnswerStart("no thinking", 11) == 0);
    CHECK(glyd_chatAnswerStart("</think>", 8) == 8);
    CHECK(glyd_chatAnswerStart("</think>\n\nA", 9) == 9); /* within size only */
    CHECK(glyd_chatAnswerStart("</thin", 6) == 0);
}

typedef struct { float key; int id; } scored;

static int by_key_desc(const void* a, const void* b)
{
    const scored* const x = (const scored*)a;
    const scored* const y = (const scored*)b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

TEST(gpu_backend_emulated_top_k_is_the_sorted_best)
{
    /* the device's selection against a sort, on values with many ties,
     * negatives and zeros, k from 1 to its most */
    glyd_gpuDevice* const d = glyd_gpuEmulated();
    static const size_t kSizes[] = { 300, 4097, 151936 };
    static const unsigned kKs[] = { 1, 2, 20, 255, GLYD_SAMPLER_DEVICE_K };
    uint64_t state = 12345;
    size_t s;
    CHECK(d != NULL);
    for (s = 0; d && s < sizeof kSizes / sizeof kSizes[0]; s++) {
        size_t const n = kSizes[s];
        float* const x = (float*)malloc(n * sizeof(float));
        scored* const all = (scored*)malloc(n * sizeof(scored));
        float keys[GLYD_SAMPLER_DEVICE_K];
        int ids[GLYD_SAMPLER_DEVICE_K];
        size_t i, k;
        if (!x || !all) { free(x); free(all); CHECK(0); break; }
        for (i = 0; i < n; i++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            /* few distinct values: ties everywhere */
            x[i] = (float)((int)(state >> 58) - 20) * 0.5f;
        }
        for (k = 0; k < sizeof kKs / sizeof kKs[0]; k++) {
            float const temperature = k % 2 ? 0.7f : 1.0f;
            unsigned j;
            int same = 1;
            for (i = 0; i < n; i++) { all[i].key = x[i] / temperature; all[i].id = (int)i; }
            qsort(all, n, sizeof(scored), by_key_desc);
            CHECK_OK(d->topk(d, x, n, temperature, kKs[k], keys, ids));
            for (j = 0; j < kKs[k]; j++) same &= keys[j] == all[j].key && ids[j] == all[j].id;
            if (!same) fprintf(stderr, "# n %zu, k %u: differs\n", n, kKs[k]);
            CHECK(same);
        }
        free(x);
        free(all);
    }
    if (d) d->release(d);
}

TEST(gpu_backend_emulated_sampling_draws_what_the_cpu_sampler_draws)
{
    /* candidates picked by the device, drawn on the host: the same tokens
     * as the sampler over every logit, with the same seed, token by token */
    static const glyd_samplerParams kParams[] = {
        { 0.0f, 0, 0.0f, 0.0f, 1.3f, 7 },     /* greedy, with a penalty */
        { 0.7f, 20, 0.9f, 0.0f, 1.1f, 8 },    /* the chat's kind */
        { 1.0f, 256, 0.0f, 0.05f, 1.0f, 9 },  /* the most candidates the device gives */
        { 1.2f, 1, 0.0f, 0.0f, 1.0f, 10 },
        { 0.8f, 0, 0.95f, 0.0f, 1.0f, 11 },   /* no top-k: every logit leaves the device */
    };
    size_t c;
    for (c = 0; c < sizeof kParams / sizeof kParams[0]; c++) {
        glyd_llm* const a = open_model_on(fixture(""), 0, 1, 1, GLYD_GPU_EMULATED);
        glyd_llm* const b = open_model_on(fixture(""), 0, 1, 1, GLYD_GPU_EMULATED);
        glyd_sampler* const sa = glyd_samplerCreate(&kParams[c], 512);
        glyd_sampler* const sb = glyd_samplerCreate(&kParams[c], 512);
        int hist[64], same = 1, distinct = 0;
        float logits[512];
        size_t i;
        hist[0] = 1;
        for (i = 1; a && b && sa && sb && i < 64 && same; i++) {
            int ta = -1, tb;
            CHECK_OK(glyd_llmSample(a, &hist[i - 1], 1, i - 1, sa, hist, i, &ta));
            CHECK_OK(glyd_llmForward(b, &hist[i - 1], 1, i - 1, logits, 0));
            tb = glyd_samplerSample(sb, logits, hist, i);
            same = ta == tb;
            if (!same) fprintf(stderr, "# sampler %zu, token %zu: %d against %d\n", c, i, ta, tb);
            distinct += i > 1 && ta != hist[i - 1];
            hist[i] = ta;
        }
        CHECK(same && distinct > 0);
        glyd_samplerFree(sa);
        glyd_samplerFree(sb);
        glyd_llmClose(a);
        glyd_llmClose(b);
    }
}

/* ------------------------------------------------------------------------ */
/* Mixtures of experts (Qwen3-MoE, Mixtral)                                  */
/* ------------------------------------------------------------------------ */

/* 8 experts, 2 for each token, over 160 positions; Qwen3-MoE with a dense
 * layer between two of experts */
TEST(engine_tiny_qwen3_moe_against_transformers)
{
    check_tiny("tiny-qwen3-moe", 0, 0);
    check_tiny("tiny-qwen3-moe", 1, 0);
}

TEST(engine_tiny_mixtral_against_transformers)
{
    check_tiny("tiny-mixtral", 0, 0);
    check_tiny("tiny-mixtral", 1, 0);
}

/* The experts' logits from plain bf16, from the fast layout (coded at load
 * or mapped from a model packed in it) and from the entropy layout: the
 * same bits, on 1 thread and on 3. */
TEST(engine_moe_weights_in_every_form_agree)
{
    static const char* const kModels[] = { "tests/data/tiny-qwen3-moe", "tests/data/tiny-mixtral" };
    char tmp[64] = "/tmp/glyd-test-XXXXXX", packed[128];
    int tokens[100];
    size_t i, k;
    float *base, *other;
    glyd_packParams pp;
    for (i = 0; i < 100; i++) tokens[i] = (int)((i * 53 + 7) % 256);
    base = (float*)malloc(100 * 256 * sizeof(float));
    other = (float*)malloc(100 * 256 * sizeof(float));
    CHECK(base && other && mkdtemp(tmp) != NULL);
    snprintf(packed, sizeof packed, "%s/fast.glyd", tmp);
    memset(&pp, 0, sizeof pp);
    pp.layout = glyd_tensor_fast;
    for (k = 0; base && other && k < 2; k++) {
        struct { const char* path; int plain; unsigned threads; } const forms[] = {
            { kModels[k], 0, 3 }, { kModels[k], 2, 1 }, { packed, 0, 1 }
        };
        glyd_llm* m = open_model_on(kModels[k], 1, 1, 1, GLYD_GPU_NONE);
        size_t f;
        if (!m) continue;
        CHECK_OK(glyd_llmForward(m, tokens, 100, 0, base, 1));
        glyd_llmClose(m);
        CHECK_OK(glyd_packModel(kModels[k], packed, &pp));
        for (f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            m = open_model_on(forms[f].path, forms[f].plain, forms[f].threads, 1, GLYD_GPU_NONE);
            if (!m) continue;
            CHECK_OK(glyd_llmForward(m, tokens, 100, 0, other, 1));
            if (memcmp(base, other, 100 * 256 * sizeof(float)) != 0)
                fprintf(stderr, "# %s, form %zu: logits differ from plain bf16's\n", kModels[k], f);
            CHECK(memcmp(base, other, 100 * 256 * sizeof(float)) == 0);
            glyd_llmClose(m);
        }
        remove(packed);
    }
    rmdir(tmp);
    free(base);
    free(other);
}

/* The experts' products run on the CPU only: the GPU backend says so in
 * one line, before anything reaches the device. */
TEST(gpu_backend_refuses_mixtures_of_experts)
{
    glyd_llmParams p;
    char msg[512] = "";
    size_t err = 0;
    glyd_llm* m;
    static const char kWant[] = "GPU: mixtures of experts are not supported on the GPU (layer 0 has 8 experts): "
                                "run on the CPU";
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    p.gpu = GLYD_GPU_EMULATED;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen("tests/data/tiny-mixtral", &p, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_model_unsupported);
    if (strcmp(msg, kWant) != 0) fprintf(stderr, "# message: %s\n", msg);
    CHECK(!strcmp(msg, kWant));
    glyd_llmClose(m);
}

/* Experts fused in 3-D tensors (transformers' form in memory) are refused
 * in one line naming the tensor: a copy of tiny-qwen3-moe whose first
 * expert's gate is renamed to the fused tensor's name in the safetensors
 * header (padded with spaces, which JSON allows). */
TEST(engine_refuses_fused_experts)
{
    static const char kFrom[] = "\"model.layers.0.mlp.experts.0.gate_proj.weight\"";
    static const char kTo[] = "\"model.layers.0.mlp.experts.gate_up_proj\"";
    char dir[64] = "/tmp/glyd-test-XXXXXX", path[128], msg[512] = "", want[512];
    size_t size, cfgSize, err = 0, i;
    uint8_t* const st = read_file("tests/data/tiny-qwen3-moe/model.safetensors", &size);
    uint8_t* const cfg = read_file("tests/data/tiny-qwen3-moe/config.json", &cfgSize);
    glyd_llmParams p;
    glyd_llm* m;
    FILE* f;
    CHECK(st && cfg && size > 8 && mkdtemp(dir) != NULL);
    if (!st || !cfg || size <= 8) { free(st); free(cfg); return; }
    for (i = 8; i + sizeof kFrom - 1 <= size && memcmp(st + i, kFrom, sizeof kFrom - 1) != 0; i++) continue;
    CHECK(i + sizeof kFrom - 1 <= size);
    if (i + sizeof kFrom - 1 <= size) {
        memset(st + i, ' ', sizeof kFrom - 1);
        memcpy(st + i, kTo, sizeof kTo - 1);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK((f = fopen(path, "wb")) != NULL && fwrite(st, 1, size, f) == size && fclose(f) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK((f = fopen(path, "wb")) != NULL && fwrite(cfg, 1, cfgSize, f) == cfgSize && fclose(f) == 0);
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen(dir, &p, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_model_unsupported);
    snprintf(want, sizeof want, "%s: tensor model.layers.0.mlp.experts.gate_up_proj: experts fused in one tensor "
             "are not supported (one tensor per expert, as checkpoints on the hub hold them, is)", dir);
    if (strcmp(msg, want) != 0) fprintf(stderr, "# message: %s\n", msg);
    CHECK(!strcmp(msg, want));
    glyd_llmClose(m);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
    free(st);
    free(cfg);
}

/* ------------------------------------------------------------------------ */
/* Qwen3.5: Gated DeltaNet layers and gated full attention                   */
/* ------------------------------------------------------------------------ */

/* 200 positions, three linear layers and a full-attention one: batches of
 * GLYD_BATCH through the recurrence, and one token at a time, to the same bits; on
 * the widest kernels and on the portable code */
TEST(engine_tiny_qwen3_5_against_transformers)
{
    check_tiny("tiny-qwen3-5", 0, 0);
    check_tiny("tiny-qwen3-5", 1, 0);
    glyd_tensorSimdLimit(GLYD_SIMD_NONE);
    check_tiny("tiny-qwen3-5", 0, 0);
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

/* the released multimodal form: text_config, model.language_model., a
 * vision tower and an MTP head that the text model leaves alone */
TEST(engine_tiny_qwen3_5_vl_against_transformers)
{
    glyd_llm* m;
    check_tiny("tiny-qwen3-5-vl", 0, 0);
    check_tiny("tiny-qwen3-5-vl", 1, 0);
    m = open_model("tests/data/tiny-qwen3-5-vl", 0, 1, 1);
    if (m) {
        glyd_llmInfo info;
        glyd_llmGetInfo(m, &info);
        CHECK(!strcmp(info.architecture, "Qwen3_5ForConditionalGeneration"));
        CHECK(info.recurrent == 1);
        CHECK(info.ignoredTensors == 23); /* 21 of the vision tower, 2 of the MTP head */
        /* the cache holds the one full-attention layer of four */
        CHECK(info.kvBytes == 1ULL * 2 * info.contextLength * 1 * 32 * 4);
        glyd_llmClose(m);
    }
}

/* Prompts in the chunked form (glyd_llmParams.chunkedPrompts): batches of
 * GLYD_BATCH in blocks of 16, from the folder and the packed file, on the widest
 * kernels and the portable code, within transformers' 1e-4 over 200
 * positions; a 160-token prompt then decoded a token at a time (the
 * recurrence going on from the chunked state) as close; and the
 * recurrence's own prompt logits near, but rounded otherwise. */
static void check_chunked(int packed)
{
    char out[128], tmp[64] = "";
    int tokens[256];
    size_t n = 0, i, differ = 0;
    uint8_t* const want = tiny_reference("tests/data/tiny-qwen3-5", tokens, &n);
    float* const chunked = (float*)malloc(256 * 256 * sizeof(float));
    float* const recurrent = (float*)malloc(256 * 256 * sizeof(float));
    glyd_llm *m, *r;
    double near = 0;
    CHECK(chunked && recurrent && n == 200);
    if (!want || !chunked || !recurrent || n != 200) goto out;
    if (packed) {
        snprintf(tmp, sizeof tmp, "/tmp/glyd-test-XXXXXX");
        CHECK(mkdtemp(tmp) != NULL);
        snprintf(out, sizeof out, "%s/m.glyd", tmp);
        CHECK_OK(glyd_packModel("tests/data/tiny-qwen3-5", out, NULL));
    }
    g_chunkedPrompts = 1;
    m = open_model(packed ? out : "tests/data/tiny-qwen3-5", 0, 2, 1);
    g_chunkedPrompts = 0;
    r = open_model(packed ? out : "tests/data/tiny-qwen3-5", 0, 2, 1);
    if (m && r) {
        double worst;
        CHECK_OK(glyd_llmForward(m, tokens, n, 0, chunked, 1));
        worst = worst_difference(chunked, want, n);
        if (worst >= 1e-4) fprintf(stderr, "# chunked prompt: max |difference| %g\n", worst);
        CHECK(worst < 1e-4);
        CHECK_OK(glyd_llmForward(r, tokens, n, 0, recurrent, 1));
        for (i = 0; i < n * 256; i++) {
            near = fmax(near, fabs((double)chunked[i] - recurrent[i]));
            differ += chunked[i] != recurrent[i];
        }
        if (!(near < 1e-5)) fprintf(stderr, "# chunked against the recurrence: %g\n", near);
        CHECK(near < 1e-5);
        CHECK(differ > 0); /* the chunked form did run */
        /* 160 tokens of prompt, then 40 decoded */
        CHECK_OK(glyd_llmForward(m, tokens, 160, 0, chunked, 1));
        for (i = 160; i < n; i++) CHECK_OK(glyd_llmForward(m, tokens + i, 1, i, chunked + i * 256, 0));
        worst = worst_difference(chunked, want, n);
        if (worst >= 1e-4) fprintf(stderr, "# chunked prompt, then decoding: max |difference| %g\n", worst);
        CHECK(worst < 1e-4);
    }
    glyd_llmClose(m);
    glyd_llmClose(r);
    if (packed) { remove(out); rmdir(tmp); }
out:
    free(want);
    free(chunked);
    free(recurrent);
}

TEST(engine_qwen3_5_chunked_prompts)
{
    check_chunked(0);
    check_chunked(1);
    glyd_tensorSimdLimit(GLYD_SIMD_NONE);
    check_chunked(0);
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

/* The recurrent state goes on from one call to the next: a prompt in two
 * calls (split inside a batch) gives the bits of the prompt at once; a
 * call that would rewind it is refused, and pos 0 starts afresh. */
TEST(engine_qwen3_5_state_carries_across_calls)
{
    static float whole[200 * 256], parts[200 * 256];
    int tokens[200];
    size_t i;
    glyd_llm* const m = open_model("tests/data/tiny-qwen3-5", 0, 2, 0);
    if (!m) return;
    for (i = 0; i < 200; i++) tokens[i] = (int)((i * 53 + 7) % 256);
    CHECK_OK(glyd_llmForward(m, tokens, 200, 0, whole, 1));
    CHECK_OK(glyd_llmForward(m, tokens, 77, 0, parts, 1));
    CHECK_OK(glyd_llmForward(m, tokens + 77, 123, 77, parts + 77 * 256, 1));
    CHECK(memcmp(whole, parts, sizeof whole) == 0);
    /* not where the state stands (200): refused, the state left as it was */
    CHECK(glyd_getErrorCode(glyd_llmForward(m, tokens, 5, 150, parts, 0)) == GLYD_error_stage_wrong);
    CHECK(glyd_getErrorCode(glyd_llmForward(m, tokens, 5, 201, parts, 0)) == GLYD_error_stage_wrong);
    /* from 0 again: the state reset, the same logits */
    CHECK_OK(glyd_llmForward(m, tokens, 150, 0, parts, 1));
    CHECK(memcmp(whole, parts, 150 * 256 * sizeof(float)) == 0);
    CHECK_OK(glyd_llmForward(m, tokens + 150, 50, 150, parts + 150 * 256, 1));
    CHECK(memcmp(whole, parts, sizeof whole) == 0);
    glyd_llmClose(m);
}

/* The GPU backend does not run Gated DeltaNet: it says so in one line,
 * before the weights load */
TEST(gpu_backend_refuses_qwen3_5)
{
    glyd_llmParams p;
    char msg[512] = "";
    size_t err;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    p.gpu = GLYD_GPU_EMULATED;
    m = glyd_llmOpen("tests/data/tiny-qwen3-5", &p, &err);
    CHECK(m == NULL);
    CHECK(glyd_getErrorCode(err) == GLYD_error_model_unsupported);
    CHECK(!strcmp(msg, "tests/data/tiny-qwen3-5: GPU: Qwen3.5 (its Gated DeltaNet layers) runs on the CPU only: "
                       "glyd run without --gpu"));
    if (strchr(msg, '\n')) CHECK(0);
    glyd_llmClose(m);
}

/* ------------------------------------------------------------------------ */
/* Mistral and Gemma 3                                                       */
/* ------------------------------------------------------------------------ */

/* a window of 48 under 160 positions; head_dim given, unlike hidden / heads */
TEST(engine_tiny_mistral_against_transformers) { check_tiny("tiny-mistral", 0, 0); check_tiny("tiny-mistral", 1, 0); }
/* sliding and full layers, two rotations (linear scaling on the full
 * ones), sandwich norms, GELU-tanh, the scaled embedding, the soft cap */
TEST(engine_tiny_gemma3_against_transformers) { check_tiny("tiny-gemma3", 0, 0); check_tiny("tiny-gemma3", 1, 0); }
/* the text model of a multimodal checkpoint: text_config, language_model.model. */
TEST(engine_tiny_gemma3_multimodal_text_against_transformers)
{
    check_tiny("tiny-gemma3-mm", 0, 0);
    check_tiny("tiny-gemma3-mm", 1, 0);
}

/* Opens a tiny model on the emulated GPU with a context of ctx positions
 * (0: the model's): NULL, the message in msg, when refused. */
static glyd_llm* open_tiny_on_gpu(const char* name, unsigned long long ctx, char* msg, size_t cap, size_t* err)
{
    glyd_llmParams p;
    char dir[256];
    snprintf(dir, sizeof dir, "tests/data/%s", name);
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    p.kvF32 = 1;
    p.contextLength = ctx;
    p.gpu = GLYD_GPU_EMULATED;
    p.message = msg;
    p.messageCapacity = cap;
    msg[0] = 0;
    return glyd_llmOpen(dir, &p, err);
}

TEST(gpu_backend_refuses_gemma3_and_sliding_windows)
{
    char msg[512];
    size_t err = 0;
    glyd_llm* m = open_tiny_on_gpu("tiny-gemma3", 0, msg, sizeof msg, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_model_unsupported);
    CHECK(!strcmp(msg, "tests/data/tiny-gemma3: GPU: Gemma 3 runs on the CPU only (the GPU backend has no "
                       "Gemma norms, GELU or sliding windows)"));
    glyd_llmClose(m);
    m = open_tiny_on_gpu("tiny-gemma3-mm", 0, msg, sizeof msg, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_model_unsupported);
    CHECK(!strcmp(msg, "tests/data/tiny-gemma3-mm: GPU: Gemma 3 runs on the CPU only (the GPU backend has no "
                       "Gemma norms, GELU or sliding windows)"));
    glyd_llmClose(m);
    m = open_tiny_on_gpu("tiny-mistral", 49, msg, sizeof msg, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_model_unsupported);
    CHECK(!strcmp(msg, "tests/data/tiny-mistral: GPU: sliding_window 48 under a context of 49 positions runs on the "
                       "CPU only (the GPU backend has no sliding windows)"));
    glyd_llmClose(m);
}

/* A context within Mistral's window masks nothing: the GPU runs it, and its
 * 48 positions' logits are transformers'. */
TEST(gpu_backend_emulated_tiny_mistral_within_its_window)
{
    char msg[512];
    size_t err = 0, n = 0, i, size = 0;
    glyd_llm* const m = open_tiny_on_gpu("tiny-mistral", 48, msg, sizeof msg, &err);
    json_error_t e;
    json_t* const ref = json_load_file("tests/data/tiny-mistral/reference.json", 0, &e);
    uint8_t* const want = read_file("tests/data/tiny-mistral/reference_logits.f32", &size);
    static float logits[48 * 256];
    int tokens[48];
    double worst = 0;
    if (!m) fprintf(stderr, "# %s\n", msg);
    CHECK(m != NULL && ref != NULL && want != NULL && size >= sizeof logits);
    for (i = 0; ref && i < 48 && i < json_array_size(json_object_get(ref, "tokens")); i++)
        tokens[n++] = (int)json_integer_value(json_array_get(json_object_get(ref, "tokens"), i));
    if (m && want && n == 48 && size >= sizeof logits) {
        glyd_llmInfo info;
        glyd_llmGetInfo(m, &info);
        CHECK(!strcmp(info.backend, "emulated"));
        CHECK_OK(glyd_llmForward(m, tokens, n, 0, logits, 1));
        for (i = 0; i < 48 * 256; i++) {
            float v;
            memcpy(&v, want + 4 * i, 4);
            worst = fmax(worst, isnan(logits[i]) ? INFINITY : fabs((double)v - logits[i]));
        }
        if (worst >= 1e-4) fprintf(stderr, "# max |difference| %g\n", worst);
        CHECK(worst < 1e-4);
    }
    json_decref(ref);
    free(want);
    glyd_llmClose(m);
}

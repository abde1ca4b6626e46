/* SPDX-License-Identifier: BSD-3-Clause */
/* test_config.c: config.json as the engine reads it. Real configs (the
 * stories260K fixture, the tiny models of tests/data, and those of Qwen3,
 * Qwen2.5 and Llama 3 models in tests/data/configs) give the fields
 * transformers would; every value the engine cannot use is refused in one
 * line naming the key and the value, checked word for word through
 * glyd_llmOpen on a copy of the stories260K fixture with its config.json
 * edited. Also the messages of JSON that does not parse, in config.json
 * and in a packed model's index. */
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../llm/infer/infer.h"
#include "harness.h"

static const char* fixture(const char* name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/../fixtures/stories260K/%s", corpus_dir(), name);
    return path;
}

/* Parses the config file at path; why receives the reason of a refusal. */
static size_t parse_file(const char* path, glyd_llmConfig* c, char* why, size_t cap)
{
    size_t size;
    char* const text = (char*)read_file(path, &size);
    size_t r;
    why[0] = 0;
    if (!text) return GLYD_ERROR(io_failed);
    r = glyd_llmConfigParse(c, text, size, why, cap);
    free(text);
    return r;
}

static size_t parse_text(const char* text, glyd_llmConfig* c, char* why, size_t cap)
{
    why[0] = 0;
    return glyd_llmConfigParse(c, text, strlen(text), why, cap);
}

TEST(hf_config_fields_of_real_models)
{
    glyd_llmConfig c;
    char why[256];
    CHECK_OK(parse_file(fixture("config.json"), &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_LLAMA && c.dim == 64 && c.hidden == 172 && c.nbLayers == 5);
    CHECK(c.nbHeads == 8 && c.nbKvHeads == 4 && c.headDim == 8 && c.vocab == 512 && c.maxPositions == 512);
    CHECK(c.normEps == 1e-5f && c.ropeTheta == 10000.0 && c.rope == GLYD_ROPE_NONE && c.tied && !c.qkvBias);
    CHECK(c.bos == 1 && c.eos == 2);

    CHECK_OK(parse_file("tests/data/configs/qwen3-0.6b.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_QWEN3 && c.dim == 1024 && c.nbHeads == 16 && c.nbKvHeads == 8 && c.headDim == 128);
    CHECK(c.qkNorm && c.tied && c.ropeTheta == 1e6 && c.rope == GLYD_ROPE_NONE && c.maxPositions == 40960);
    CHECK(c.vocab == 151936 && c.bos == 151643 && c.eos == 151645 && c.normEps == 1e-6f);

    /* no head_dim: hidden_size / num_attention_heads */
    CHECK_OK(parse_file("tests/data/configs/llama3-8b-instruct.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_LLAMA && c.dim == 4096 && c.headDim == 128 && c.nbKvHeads == 8 && !c.tied);
    CHECK(c.ropeTheta == 500000.0 && c.hidden == 14336 && c.vocab == 128256 && c.eos == 128009);

    /* yarn under the older key "type"; Qwen2's q/k/v biases */
    CHECK_OK(parse_file("tests/data/configs/qwen2.5-7b-instruct-yarn.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_QWEN2 && c.qkvBias && c.headDim == 128 && c.nbKvHeads == 4);
    CHECK(c.rope == GLYD_ROPE_YARN && c.ropeFactor == 4.0 && c.ropeOriginalMax == 32768);
    CHECK(c.yarnBetaFast == 32.0 && c.yarnBetaSlow == 1.0 && c.yarnAttentionFactor == 0.0);

    /* transformers 5: rope_parameters, with rope_theta inside */
    CHECK_OK(parse_file("tests/data/tiny-qwen3-yarn/config.json", &c, why, sizeof why));
    CHECK(c.rope == GLYD_ROPE_YARN && c.ropeTheta == 10000.0 && c.ropeOriginalMax == 32 && c.ropeFactor == 4.0);
    CHECK_OK(parse_file("tests/data/tiny-qwen3/config.json", &c, why, sizeof why));
    CHECK(c.rope == GLYD_ROPE_NONE && c.ropeTheta == 1e6 && c.headDim == 16);
    CHECK_OK(parse_file("tests/data/tiny-qwen2/config.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_QWEN2 && c.headDim == 16 && !c.tied);

    /* Llama 3.2: eos_token_id a list (all in the vocabulary), llama3 rope
     * scaling */
    CHECK_OK(parse_file("tests/data/configs/llama3.2-1b-instruct.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_LLAMA && c.headDim == 64 && c.tied && c.eos == 128001 && c.maxPositions == 131072);
    CHECK(c.rope == GLYD_ROPE_LLAMA3 && c.ropeTheta == 500000.0 && c.ropeFactor == 32.0);
    CHECK(c.llama3LowFreqFactor == 1.0 && c.llama3HighFreqFactor == 4.0 && c.ropeOriginalMax == 8192);
    /* the same in rope_parameters, as transformers 5 writes it */
    CHECK_OK(parse_file("tests/data/tiny-llama3/config.json", &c, why, sizeof why));
    CHECK(c.rope == GLYD_ROPE_LLAMA3 && c.ropeTheta == 10000.0 && c.ropeFactor == 8.0 && c.ropeOriginalMax == 32);
    CHECK(c.llama3LowFreqFactor == 1.0 && c.llama3HighFreqFactor == 4.0 && c.headDim == 16 && c.tied);
}

TEST(hf_config_defaults_as_transformers_has_them)
{
    glyd_llmConfig c;
    char why[256];
    static const char* const qwen3 =
        "{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 96, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 300, \"eos_token_id\": [7, 8], "
        "\"bos_token_id\": null, \"rope_scaling\": null, \"head_dim\": null}";
    static const char* const llama =
        "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 96, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 300, \"eos_token_id\": [], "
        "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}";
    static const char* const llama3 =
        "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"intermediate_size\": 96, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 300, "
        "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 0.5, "
        "\"high_freq_factor\": 2}}";
    CHECK_OK(parse_text(qwen3, &c, why, sizeof why));
    /* Qwen3's head_dim defaults to 128, not hidden_size / heads; its
     * context to 32768, Llama's to 2048 */
    CHECK(c.headDim == 128 && c.nbKvHeads == 4 && c.maxPositions == 32768 && c.normEps == 1e-6f);
    CHECK(c.ropeTheta == 10000.0 && c.rope == GLYD_ROPE_NONE && c.bos == -1 && c.eos == 7 && !c.tied);
    CHECK_OK(parse_text(llama, &c, why, sizeof why));
    CHECK(c.headDim == 16 && c.eos == -1 && c.rope == GLYD_ROPE_LINEAR && c.ropeFactor == 2.0);
    CHECK(c.maxPositions == 2048);
    /* llama3's original context defaults to the model's */
    CHECK_OK(parse_text(llama3, &c, why, sizeof why));
    CHECK(c.rope == GLYD_ROPE_LLAMA3 && c.ropeOriginalMax == 2048 && c.ropeFactor == 8.0);
    CHECK(c.llama3LowFreqFactor == 0.5 && c.llama3HighFreqFactor == 2.0);
}

/* A copy of the fixture folder (config.json and model.safetensors). */
static int copy_fixture(char* dir, size_t cap)
{
    char path[256];
    size_t size;
    uint8_t* const st = read_file(fixture("model.safetensors"), &size);
    FILE* f;
    int ok;
    snprintf(dir, cap, "/tmp/glyd-config-XXXXXX");
    if (!st || !mkdtemp(dir)) { free(st); CHECK(0); return 0; }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    ok = f && fwrite(st, 1, size, f) == size;
    if (f) ok &= fclose(f) == 0;
    free(st);
    CHECK(ok);
    return ok;
}

/* Writes the fixture's config.json with patch (a JSON object) merged in
 * (a null value stands for a key left out: the reader takes both alike). */
static void write_config(const char* dir, const char* patch)
{
    char path[256];
    json_error_t e;
    json_t* const root = json_load_file(fixture("config.json"), 0, &e);
    json_t* const p = json_loads(patch, 0, &e);
    CHECK(root && p && json_object_update(root, p) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0);
    json_decref(root);
    json_decref(p);
}

static void write_config_text(const char* dir, const char* text)
{
    char path[256];
    FILE* f;
    snprintf(path, sizeof path, "%s/config.json", dir);
    f = fopen(path, "wb");
    CHECK(f && fputs(text, f) >= 0);
    if (f) fclose(f);
}

static void remove_copy(const char* dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
}

/* Opens dir and expects the refusal `message` (after "DIR: ") and `code`. */
static void expect_refusal(const char* dir, const char* what, size_t code, const char* message)
{
    glyd_llmParams p;
    char msg[512] = "", want[512];
    size_t err = 0;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen(dir, &p, &err);
    snprintf(want, sizeof want, "%s: %s", dir, message);
    if (m || glyd_getErrorCode(err) != code || strcmp(msg, want) != 0) {
        char line[1400];
        snprintf(line, sizeof line, "%s: %s, error %d, message \"%s\"; expected error %d, \"%s\"", what,
                 m ? "opened" : "refused", (int)glyd_getErrorCode(err), msg, (int)code, want);
        harness_fail(__FILE__, __LINE__, line);
    }
    glyd_llmClose(m);
}

typedef struct {
    const char* patch;   /* merged into the fixture's config.json */
    const char* message; /* the refusal, after "FOLDER: " */
} bad_config;

#define INVALID GLYD_error_model_invalid
#define UNSUPPORTED GLYD_error_model_unsupported
#define FLOAT_RULE "it must be a positive number within float range"
#define THETA_RULE "it must be a number above 1 within float range"
/* the architectures the engine runs, as its refusals list them */
#define ARCHS                                                                                              \
    "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, MixtralForCausalLM, "           \
    "Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, MistralForCausalLM, Gemma3ForCausalLM and "         \
    "Gemma3ForConditionalGeneration"
/* llama3's type and factor, for the cases that vary the rest */
#define LLAMA3 "\"rope_type\": \"llama3\", \"factor\": 8, "

static void expect_refusals(const char* dir, const bad_config* cases, size_t n, size_t code)
{
    size_t i;
    for (i = 0; i < n; i++) {
        write_config(dir, cases[i].patch);
        expect_refusal(dir, cases[i].patch, code, cases[i].message);
    }
}

static glyd_llm* open_plain(const char* dir)
{
    glyd_llmParams p;
    size_t err;
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    return glyd_llmOpen(dir, &p, &err);
}

TEST(engine_refuses_config_values)
{
    static const bad_config kInvalid[] = {
        /* the norm's epsilon */
        { "{\"rms_norm_eps\": -1}", "config.json: rms_norm_eps is -1: " FLOAT_RULE },
        { "{\"rms_norm_eps\": 0}", "config.json: rms_norm_eps is 0: " FLOAT_RULE },
        { "{\"rms_norm_eps\": 1e-60}", "config.json: rms_norm_eps is 1e-60: " FLOAT_RULE },
        { "{\"rms_norm_eps\": 1e300}", "config.json: rms_norm_eps is 1e300: " FLOAT_RULE },
        { "{\"rms_norm_eps\": \"1e-5\"}", "config.json: rms_norm_eps is \"1e-5\": " FLOAT_RULE },
        /* the rotary base, at the top level or in rope_parameters */
        { "{\"rope_theta\": \"big\"}", "config.json: rope_theta is \"big\": " THETA_RULE },
        { "{\"rope_theta\": 1}", "config.json: rope_theta is 1: " THETA_RULE },
        { "{\"rope_theta\": -10000.0}", "config.json: rope_theta is -10000.0: " THETA_RULE },
        { "{\"rope_theta\": 1e39}", "config.json: rope_theta is 1e39: " THETA_RULE },
        { "{\"rope_theta\": [10000]}", "config.json: rope_theta is [10000]: " THETA_RULE },
        { "{\"rope_theta\": null, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 0.5}}",
          "config.json: rope_parameters.rope_theta is 0.5: " THETA_RULE },
        /* rope scaling */
        { "{\"rope_scaling\": \"yarn\"}", "config.json: rope_scaling is \"yarn\": it must be an object" },
        { "{\"rope_scaling\": {\"rope_type\": 5}}", "config.json: rope_scaling.rope_type is 5: it must be a string" },
        { "{\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 0}}",
          "config.json: rope_scaling.factor is 0: it must be a number in 1..16777216" },
        { "{\"rope_scaling\": {\"type\": \"linear\", \"factor\": -2.0}}",
          "config.json: rope_scaling.factor is -2.0: it must be a number in 1..16777216" },
        { "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": \"4\"}}",
          "config.json: rope_scaling.factor is \"4\": it must be a number in 1..16777216" },
        { "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 1e30}}",
          "config.json: rope_scaling.factor is 1e30: it must be a number in 1..16777216" },
        { "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"original_max_position_embeddings\": 0}}",
          "config.json: rope_scaling.original_max_position_embeddings is 0: it must be an integer in 1..16777216" },
        { "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"beta_fast\": 0.5}}",
          "config.json: rope_scaling.beta_fast is 0.5: it must exceed beta_slow (1)" },
        { "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"beta_slow\": -1}}",
          "config.json: rope_scaling.beta_slow is -1: " FLOAT_RULE },
        { "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"attention_factor\": 0}}",
          "config.json: rope_scaling.attention_factor is 0: " FLOAT_RULE },
        /* llama3: its band of wavelengths, the factor, the original context */
        { "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"high_freq_factor\": 4}}",
          "config.json: rope_scaling.low_freq_factor is missing" },
        { "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1}}",
          "config.json: rope_scaling.high_freq_factor is missing" },
        { "{\"rope_scaling\": {" LLAMA3 "\"low_freq_factor\": 0, \"high_freq_factor\": 4}}",
          "config.json: rope_scaling.low_freq_factor is 0: " FLOAT_RULE },
        { "{\"rope_scaling\": {" LLAMA3 "\"low_freq_factor\": \"1\", \"high_freq_factor\": 4}}",
          "config.json: rope_scaling.low_freq_factor is \"1\": " FLOAT_RULE },
        { "{\"rope_scaling\": {" LLAMA3 "\"low_freq_factor\": 1, \"high_freq_factor\": -4}}",
          "config.json: rope_scaling.high_freq_factor is -4: " FLOAT_RULE },
        { "{\"rope_scaling\": {" LLAMA3 "\"low_freq_factor\": 1, \"high_freq_factor\": 1e39}}",
          "config.json: rope_scaling.high_freq_factor is 1e39: " FLOAT_RULE },
        { "{\"rope_scaling\": {" LLAMA3 "\"low_freq_factor\": 1, \"high_freq_factor\": 1.0}}",
          "config.json: rope_scaling.high_freq_factor is 1.0: it must exceed low_freq_factor (1)" },
        { "{\"rope_scaling\": {" LLAMA3 "\"low_freq_factor\": 4, \"high_freq_factor\": 1}}",
          "config.json: rope_scaling.high_freq_factor is 1: it must exceed low_freq_factor (4)" },
        { "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 0.5, \"low_freq_factor\": 1, "
          "\"high_freq_factor\": 4}}",
          "config.json: rope_scaling.factor is 0.5: it must be a number in 1..16777216" },
        { "{\"rope_scaling\": {" LLAMA3 "\"original_max_position_embeddings\": 0}}",
          "config.json: rope_scaling.original_max_position_embeddings is 0: it must be an integer in 1..16777216" },
        { "{\"rope_scaling\": {" LLAMA3 "\"original_max_position_embeddings\": 8192.5}}",
          "config.json: rope_scaling.original_max_position_embeddings is 8192.5: it must be an integer in "
          "1..16777216" },
        { "{\"rope_scaling\": {" LLAMA3 "\"original_max_position_embeddings\": \"8192\"}}",
          "config.json: rope_scaling.original_max_position_embeddings is \"8192\": it must be an integer in "
          "1..16777216" },
        { "{\"rope_theta\": null, \"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 500000.0, "
          "\"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 0.5, "
          "\"original_max_position_embeddings\": 256}}",
          "config.json: rope_parameters.high_freq_factor is 0.5: it must exceed low_freq_factor (1)" },
        /* sizes: missing, not positive, not integers, too large */
        { "{\"hidden_size\": null}", "config.json: hidden_size is missing" },
        { "{\"hidden_size\": -64}", "config.json: hidden_size is -64: it must be an integer in 1..1048576" },
        { "{\"hidden_size\": 64.0}", "config.json: hidden_size is 64.0: it must be an integer in 1..1048576" },
        { "{\"hidden_size\": \"64\"}", "config.json: hidden_size is \"64\": it must be an integer in 1..1048576" },
        { "{\"intermediate_size\": 0}", "config.json: intermediate_size is 0: it must be an integer in 1..4194304" },
        { "{\"intermediate_size\": 4194305}",
          "config.json: intermediate_size is 4194305: it must be an integer in 1..4194304" },
        { "{\"num_attention_heads\": 0}",
          "config.json: num_attention_heads is 0: it must be an integer in 1..1048576" },
        { "{\"num_key_value_heads\": 0}", "config.json: num_key_value_heads is 0: it must be an integer in 1..8" },
        { "{\"num_key_value_heads\": 16}", "config.json: num_key_value_heads is 16: it must be an integer in 1..8" },
        { "{\"head_dim\": -8}", "config.json: head_dim is -8: it must be an integer in 1..1048576" },
        { "{\"vocab_size\": 99999999999}",
          "config.json: vocab_size is 99999999999: it must be an integer in 1..16777216" },
        { "{\"num_hidden_layers\": 4097}", "config.json: num_hidden_layers is 4097: it must be an integer in 1..4096" },
        { "{\"num_hidden_layers\": true}", "config.json: num_hidden_layers is true: it must be an integer in 1..4096" },
        { "{\"max_position_embeddings\": 0}",
          "config.json: max_position_embeddings is 0: it must be an integer in 1..16777216" },
        { "{\"max_position_embeddings\": 4294967297}",
          "config.json: max_position_embeddings is 4294967297: it must be an integer in 1..16777216" },
        /* sizes that disagree */
        { "{\"num_key_value_heads\": 3}",
          "config.json: num_key_value_heads is 3: it must divide num_attention_heads (8)" },
        { "{\"head_dim\": 7}",
          "config.json: head_dim is 7: it must be even (the rotary embedding turns pairs of values)" },
        { "{\"head_dim\": null, \"num_attention_heads\": 7, \"num_key_value_heads\": 7}",
          "config.json: num_attention_heads is 7: it must divide hidden_size (64) when head_dim is not given" },
        { "{\"head_dim\": null, \"num_attention_heads\": 64, \"num_key_value_heads\": 64}",
          "config.json: head_dim (hidden_size / num_attention_heads) is 1: it must be even (the rotary embedding "
          "turns pairs of values)" },
        { "{\"head_dim\": 4096, \"num_attention_heads\": 512, \"num_key_value_heads\": 512}",
          "config.json: num_attention_heads x head_dim is 512 x 4096: it must be at most 1048576" },
        /* flags and names of the wrong type */
        { "{\"tie_word_embeddings\": \"yes\"}",
          "config.json: tie_word_embeddings is \"yes\": it must be true or false" },
        { "{\"attention_bias\": 0}", "config.json: attention_bias is 0: it must be true or false" },
        { "{\"hidden_act\": 5}", "config.json: hidden_act is 5: it must be a string" },
        { "{\"architectures\": \"LlamaForCausalLM\"}",
          "config.json: architectures is \"LlamaForCausalLM\": it must be a list of class names" },
        { "{\"architectures\": [7]}", "config.json: architectures is [7]: it must be a list of class names" },
        /* token ids outside the vocabulary */
        { "{\"bos_token_id\": 512}",
          "config.json: bos_token_id is 512: it must be a token id below vocab_size (512), or a list of them" },
        { "{\"eos_token_id\": -1}",
          "config.json: eos_token_id is -1: it must be a token id below vocab_size (512), or a list of them" },
        { "{\"eos_token_id\": [2, 600]}",
          "config.json: eos_token_id is [2,600]: it must be a token id below vocab_size (512), or a list of them" },
        { "{\"eos_token_id\": \"2\"}",
          "config.json: eos_token_id is \"2\": it must be a token id below vocab_size (512), or a list of them" },
        /* a value too long to show whole is cut */
        { "{\"hidden_act\": [\"0123456789012345678901234567890123456789012345678901234567890123456789\"]}",
          "config.json: hidden_act is [\"0123456789012345678901234567890123456789012345678901234567...: it must be "
          "a string" },
        /* control characters in a value stay escaped: one line */
        { "{\"rope_theta\": \"a\\nb\\u001b[31m\"}", "config.json: rope_theta is \"a\\nb\\u001B[31m\": " THETA_RULE },
    };
    static const bad_config kUnsupported[] = {
        { "{\"architectures\": [\"GPT2LMHeadModel\"]}",
          "config.json: architectures is [\"GPT2LMHeadModel\"]: it is not supported (" ARCHS " are)" },
        { "{\"architectures\": []}", "config.json: architectures is []: it is not supported (" ARCHS " are)" },
        { "{\"architectures\": null}",
          "config.json: architectures is missing (" ARCHS " are supported)" },
        { "{\"hidden_act\": \"gelu\"}", "config.json: hidden_act is \"gelu\": it is not supported (silu is)" },
        { "{\"mlp_bias\": true}", "config.json: mlp_bias is true: MLP biases are not supported" },
        { "{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2}}",
          "config.json: rope_scaling.type is \"dynamic\": it is not supported (default, linear, yarn and llama3 "
          "are)" },
    };
    char dir[64];
    glyd_llm* m;
    if (!copy_fixture(dir, sizeof dir)) return;
    /* the copy as it is opens: each refusal below is its edit's */
    write_config(dir, "{}");
    m = open_plain(dir);
    CHECK(m != NULL);
    glyd_llmClose(m);
    expect_refusals(dir, kInvalid, sizeof kInvalid / sizeof kInvalid[0], INVALID);
    expect_refusals(dir, kUnsupported, sizeof kUnsupported / sizeof kUnsupported[0], UNSUPPORTED);
    /* values that are sound, though not the fixture's, still open */
    write_config(dir, "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2, \"beta_fast\": 16, "
                      "\"attention_factor\": 1.2}, \"eos_token_id\": [2, 1], \"rms_norm_eps\": 1}");
    m = open_plain(dir);
    CHECK(m != NULL);
    glyd_llmClose(m);
    write_config(dir, "{\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 1, \"low_freq_factor\": 0.25, "
                      "\"high_freq_factor\": 0.5}}");
    m = open_plain(dir);
    CHECK(m != NULL);
    glyd_llmClose(m);
    remove_copy(dir);
}

TEST(engine_refuses_config_json_that_does_not_parse)
{
    char dir[64];
    if (!copy_fixture(dir, sizeof dir)) return;
    write_config_text(dir, "{\"architectures\": [\"LlamaForCausalLM\"],\n \"hidden_size\": 9223372036854775808}");
    expect_refusal(dir, "too big", INVALID,
                   "config.json: line 2 column 35: too big integer near '9223372036854775808'");
    write_config_text(dir, "{\"hidden_size\": 64, \"hidden_size\": 64}");
    expect_refusal(dir, "duplicate", INVALID,
                   "config.json: line 1 column 33: duplicate object key near '\"hidden_size\"'");
    write_config_text(dir, "{\"rope_theta\": 1e999}");
    expect_refusal(dir, "overflow", INVALID, "config.json: line 1 column 20: real number overflow near '1e999'");
    write_config_text(dir, "");
    expect_refusal(dir, "empty", INVALID, "config.json: line 1 column 0: '[' or '{' expected near end of file");
    write_config_text(dir, "[{\"hidden_size\": 64}]");
    expect_refusal(dir, "array", INVALID, "config.json: not a JSON object");
    remove_copy(dir);
}

/* ------------------------------------------------------------------------ */
/* A packed model's index                                                   */
/* ------------------------------------------------------------------------ */

/* A packed file around an index text: header, no blobs, index, trailer
 * with the index's XXH3 (so that only the index's content is judged). */
static uint8_t* packed_around(const char* index, size_t* size)
{
    size_t const n = strlen(index);
    uint8_t* const buf = (uint8_t*)calloc(1, GLYD_PACK_HEADER + n + GLYD_PACK_TRAILER);
    uint8_t* const t = buf + GLYD_PACK_HEADER + n;
    memcpy(buf, GLYD_PACK_MAGIC, 8);
    glyd_write32(buf + 8, GLYD_PACK_VERSION);
    memcpy(buf + GLYD_PACK_HEADER, index, n);
    glyd_write64(t, GLYD_PACK_HEADER);
    glyd_write64(t + 8, n);
    glyd_write64(t + 16, XXH3_64bits(index, n));
    memcpy(t + 24, GLYD_PACK_MAGIC, 8);
    *size = GLYD_PACK_HEADER + n + GLYD_PACK_TRAILER;
    return buf;
}

static void expect_index_message(const char* index, const char* message)
{
    glyd_packParams p;
    char msg[512] = "";
    size_t size, err;
    uint8_t* const buf = packed_around(index, &size);
    glyd_model* m;
    memset(&p, 0, sizeof p);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_modelOpenBytes(buf, size, &p, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_pack_invalid);
    if (strcmp(msg, message) != 0) {
        char line[1200];
        snprintf(line, sizeof line, "message \"%s\", expected \"%s\"", msg, message);
        harness_fail(__FILE__, __LINE__, line);
    }
    glyd_modelClose(m);
    free(buf);
}

TEST(packed_index_json_errors_say_where)
{
    glyd_model* m;
    size_t size, err;
    uint8_t* const ok = packed_around("{\"format\": \"glyd-packed-model\", \"version\": 1, \"files\": []}", &size);
    /* the frame the index sits in is sound: an empty model opens */
    m = glyd_modelOpenBytes(ok, size, NULL, &err);
    CHECK(m != NULL && glyd_modelNbFiles(m) == 0);
    glyd_modelClose(m);
    free(ok);
    expect_index_message("{\"format\": \"glyd-packed-model\", \"version\": 1, \"files\": [{\"path\": \"a\", "
                         "\"size\": 9223372036854775808}]}",
                         "packed model index: line 1 column 97: too big integer near '9223372036854775808'");
    expect_index_message("{\"format\": \"glyd-packed-model\",\n\"format\": 1}",
                         "packed model index: line 2 column 8: duplicate object key near '\"format\"'");
    expect_index_message("{\"files\": [", "packed model index: line 1 column 11: ']' expected near end of file");
}

/* A context asked through the API is bounded as the config's is, so that
 * the cache's sizes cannot overflow. */
TEST(engine_refuses_a_context_beyond_reach)
{
    glyd_llmParams p;
    char msg[256] = "";
    size_t err = 0;
    glyd_llm* m;
    memset(&p, 0, sizeof p);
    p.nbThreads = 1;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    p.contextLength = (unsigned long long)GLYD_MAX_POSITIONS + 1;
    m = glyd_llmOpen(fixture(""), &p, &err);
    CHECK(m == NULL && glyd_getErrorCode(err) == GLYD_error_parameter_outOfBound);
    CHECK(strstr(msg, "context length 16777217: at most 16777216 positions") != NULL);
    glyd_llmClose(m);
    p.contextLength = GLYD_MAX_POSITIONS >> 8;
    m = glyd_llmOpen(fixture(""), &p, &err);
    CHECK(m != NULL);
    glyd_llmClose(m);
}

/* ------------------------------------------------------------------------ */
/* Mixtures of experts                                                      */
/* ------------------------------------------------------------------------ */

#define MOE_BASE "\"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 4, " \
                 "\"num_attention_heads\": 4, \"vocab_size\": 300"

TEST(hf_config_mixtures_of_experts)
{
    static const char kSaved[] =
        "{\"architectures\": [\"Qwen3MoeForCausalLM\"], " MOE_BASE ", \"num_local_experts\": 16, "
        "\"num_experts_per_tok\": 4, \"moe_intermediate_size\": 32, \"norm_topk_prob\": true, "
        "\"decoder_sparse_step\": 2, \"mlp_only_layers\": [3]}";
    glyd_llmConfig c;
    char why[256];
    /* Qwen3-MoE with transformers' defaults: 128 experts, 8 chosen, 768
     * wide, every layer sparse, no renormalisation; head_dim is
     * hidden_size / heads, as its attention derives it */
    CHECK_OK(parse_text("{\"architectures\": [\"Qwen3MoeForCausalLM\"], " MOE_BASE "}", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_QWEN3_MOE && c.nbExperts == 128 && c.nbExpertsUsed == 8 && c.moeHidden == 768);
    CHECK(!c.moeNormTopk && c.headDim == 16 && c.qkNorm && c.hidden == 96);
    CHECK(c.ropeTheta == 10000.0 && c.normEps == 1e-6f && c.maxPositions == 32768);
    CHECK(glyd_moeSparse(&c, 0) && glyd_moeSparse(&c, 3));
    /* as save_pretrained writes it (num_local_experts), with dense layers
     * by decoder_sparse_step and by mlp_only_layers */
    CHECK_OK(parse_text(kSaved, &c, why, sizeof why));
    CHECK(c.nbExperts == 16 && c.nbExpertsUsed == 4 && c.moeHidden == 32 && c.moeNormTopk);
    CHECK(!glyd_moeSparse(&c, 0) && glyd_moeSparse(&c, 1) && !glyd_moeSparse(&c, 2) && !glyd_moeSparse(&c, 3));
    /* no experts: a dense model */
    CHECK_OK(parse_text("{\"architectures\": [\"Qwen3MoeForCausalLM\"], " MOE_BASE ", \"num_experts\": 0}", &c, why,
                        sizeof why));
    CHECK(c.nbExperts == 0 && !glyd_moeSparse(&c, 0));
    /* Mixtral: 8 experts, 2 chosen, intermediate_size wide, renormalised;
     * a sliding window as long as the context never slides */
    CHECK_OK(parse_text("{\"architectures\": [\"MixtralForCausalLM\"], " MOE_BASE ", \"sliding_window\": null}", &c,
                        why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_MIXTRAL && c.nbExperts == 8 && c.nbExpertsUsed == 2 && c.moeHidden == 96);
    CHECK(c.moeNormTopk && !c.qkNorm && c.maxPositions == 131072 && glyd_moeSparse(&c, 2));
    CHECK(c.ropeTheta == 1e6 && c.normEps == 1e-5f && c.headDim == 16);
    CHECK_OK(parse_text("{\"architectures\": [\"MixtralForCausalLM\"], " MOE_BASE ", \"sliding_window\": 4096, "
                        "\"max_position_embeddings\": 4096}", &c, why, sizeof why));
    /* the tiny models' */
    CHECK_OK(parse_file("tests/data/tiny-qwen3-moe/config.json", &c, why, sizeof why));
    CHECK(c.nbExperts == 8 && c.nbExpertsUsed == 2 && c.moeHidden == 16 && c.hidden == 160 && !c.moeNormTopk);
    CHECK(glyd_moeSparse(&c, 0) && !glyd_moeSparse(&c, 1) && glyd_moeSparse(&c, 2));
    CHECK_OK(parse_file("tests/data/tiny-mixtral/config.json", &c, why, sizeof why));
    CHECK(c.nbExperts == 8 && c.nbExpertsUsed == 2 && c.moeHidden == 16 && c.moeNormTopk && c.maxPositions == 512);
}

/* What the engine does not build, or cannot make sense of, is refused in
 * one line naming the key. */
TEST(hf_config_mixtures_of_experts_refused)
{
    static const struct { const char* extra; size_t code; const char* why; } kCases[] = {
        { "\"num_experts\": 8, \"num_experts_per_tok\": 9", GLYD_error_model_invalid,
          "config.json: num_experts_per_tok is 9: it must be an integer in 1..8" },
        { "\"num_experts\": 4", GLYD_error_model_invalid,
          "config.json: num_experts_per_tok is missing: its default, 8, exceeds num_experts (4)" },
        { "\"num_experts\": 8, \"num_local_experts\": 4", GLYD_error_model_invalid,
          "config.json: num_local_experts is 4: it must equal num_experts (8)" },
        { "\"num_experts\": 5000", GLYD_error_model_invalid,
          "config.json: num_experts is 5000: it must be an integer in 0..4096" },
        { "\"moe_intermediate_size\": 0", GLYD_error_model_invalid,
          "config.json: moe_intermediate_size is 0: it must be an integer in 1..4194304" },
        { "\"decoder_sparse_step\": 0", GLYD_error_model_invalid,
          "config.json: decoder_sparse_step is 0: it must be an integer in 1..4096" },
        { "\"mlp_only_layers\": [0, 4]", GLYD_error_model_invalid,
          "config.json: mlp_only_layers is [0,4]: it must be a list of layer indices below num_hidden_layers (4)" },
        { "\"mlp_only_layers\": 1", GLYD_error_model_invalid,
          "config.json: mlp_only_layers is 1: it must be a list of layer indices below num_hidden_layers (4)" },
        { "\"norm_topk_prob\": 1", GLYD_error_model_invalid,
          "config.json: norm_topk_prob is 1: it must be true or false" },
        { "\"use_sliding_window\": true", GLYD_error_model_unsupported,
          "config.json: use_sliding_window is true: sliding-window attention is not supported" },
    };
    glyd_llmConfig c;
    char text[512], why[256];
    size_t i, r;
    for (i = 0; i < sizeof kCases / sizeof kCases[0]; i++) {
        snprintf(text, sizeof text, "{\"architectures\": [\"Qwen3MoeForCausalLM\"], " MOE_BASE ", %s}",
                 kCases[i].extra);
        r = parse_text(text, &c, why, sizeof why);
        if (glyd_getErrorCode(r) != kCases[i].code || strcmp(why, kCases[i].why) != 0)
            fprintf(stderr, "# %s: error %d, \"%s\"\n", kCases[i].extra, (int)glyd_getErrorCode(r), why);
        CHECK(glyd_getErrorCode(r) == kCases[i].code && !strcmp(why, kCases[i].why));
    }
    /* the experts' bytes, bounded so that sums of sizes cannot overflow */
    r = parse_text("{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 1048576, \"intermediate_size\": 96, "
                   "\"num_hidden_layers\": 64, \"num_attention_heads\": 4, \"head_dim\": 2, \"vocab_size\": 300, "
                   "\"num_experts\": 4096, \"num_experts_per_tok\": 1, \"moe_intermediate_size\": 4194304}", &c, why,
                   sizeof why);
    CHECK(glyd_getErrorCode(r) == GLYD_error_model_invalid);
    CHECK(!strcmp(why, "config.json: num_experts is 4096: 64 layers of experts 4194304 wide would exceed 2^60 bytes"));
    /* Mixtral: a window shorter than the context would slide */
    r = parse_text("{\"architectures\": [\"MixtralForCausalLM\"], " MOE_BASE ", \"sliding_window\": 4096}", &c, why,
                   sizeof why);
    CHECK(glyd_getErrorCode(r) == GLYD_error_model_unsupported);
    CHECK(!strcmp(why, "config.json: sliding_window is 4096: sliding-window attention is not supported (null, or at "
                       "least max_position_embeddings, is)"));
    r = parse_text("{\"architectures\": [\"MixtralForCausalLM\"], " MOE_BASE ", \"num_local_experts\": 0}", &c, why,
                   sizeof why);
    CHECK(!strcmp(why, "config.json: num_local_experts is 0: it must be an integer in 1..4096"));
}

/* Qwen3.5: the tiny models' configs, bare and nested under text_config,
 * give the layers' kinds and shapes; what the engine lacks is refused in
 * one line naming the key (under text_config where it is nested). */
TEST(hf_config_qwen3_5_fields_and_refusals)
{
#define QWEN3_5_BASE "\"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, " \
    "\"head_dim\": 32, \"num_hidden_layers\": 2, \"intermediate_size\": 96, \"vocab_size\": 256, " \
    "\"linear_num_key_heads\": 2, \"linear_key_head_dim\": 16, \"linear_value_head_dim\": 16"
    static const struct { const char* text; size_t code; const char* why; } kBad[] = {
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " QWEN3_5_BASE ", \"linear_num_value_heads\": 4, "
          "\"layer_types\": [\"linear_attention\", \"sliding_attention\"]}", GLYD_error_model_unsupported,
          "config.json: layer_types[1] is \"sliding_attention\": each must be linear_attention or "
          "full_attention (no other kind of layer is supported)" },
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " QWEN3_5_BASE ", \"linear_num_value_heads\": 4, "
          "\"layer_types\": [\"linear_attention\"]}", GLYD_error_model_invalid,
          "config.json: layer_types is [\"linear_attention\"]: it must be a list of num_hidden_layers (2) names" },
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " QWEN3_5_BASE ", \"linear_num_value_heads\": 3}",
          GLYD_error_model_invalid,
          "config.json: linear_num_value_heads is 3: it must be a multiple of linear_num_key_heads (2)" },
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " QWEN3_5_BASE ", \"rope_parameters\": "
          "{\"rope_type\": \"yarn\", \"factor\": 4}}", GLYD_error_model_unsupported,
          "config.json: rope_parameters is {\"rope_type\":\"yarn\",\"factor\":4}: Qwen3.5 runs with rope_type "
          "default only" },
        { "{\"architectures\": [\"Qwen3_5ForCausalLM\"], " QWEN3_5_BASE ", \"partial_rotary_factor\": 0.01}",
          GLYD_error_model_invalid,
          "config.json: partial_rotary_factor 0.01 of head_dim 32 turns 0 dims: it must be an even number, at "
          "least 2" },
        { "{\"architectures\": [\"Qwen3_5ForConditionalGeneration\"]}", GLYD_error_model_invalid,
          "config.json: text_config is missing" },
        { "{\"architectures\": [\"Qwen3_5ForConditionalGeneration\"], \"text_config\": {" QWEN3_5_BASE
          ", \"linear_num_value_heads\": 3}}", GLYD_error_model_invalid,
          "config.json: text_config.linear_num_value_heads is 3: it must be a multiple of linear_num_key_heads "
          "(2)" },
    };
    glyd_llmConfig c;
    char why[256];
    size_t i;
    for (i = 0; i < 2; i++) {
        CHECK_OK(parse_file(i ? "tests/data/tiny-qwen3-5-vl/config.json" : "tests/data/tiny-qwen3-5/config.json",
                            &c, why, sizeof why));
        CHECK(c.arch == GLYD_ARCH_QWEN3_5 && c.nestedText == (int)i && c.nbLayers == 4 && c.nbLinear == 3);
        CHECK(glyd_layerIsLinear(&c, 0) && glyd_layerIsLinear(&c, 2) && !glyd_layerIsLinear(&c, 3));
        CHECK(c.headDim == 32 && c.rotaryDim == 8 && c.attnGate && c.normOffset && c.qkNorm && !c.tied);
        CHECK(c.linearKeyHeads == 2 && c.linearValueHeads == 4 && c.linearKeyDim == 16 && c.linearValueDim == 16);
        CHECK(c.linearConv == 4 && c.ropeTheta == 1e7 && c.rope == GLYD_ROPE_NONE && c.eos == 2);
    }
    /* without layer_types: three linear layers, then one of full attention */
    CHECK_OK(parse_text("{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"hidden_size\": 64, \"num_attention_heads\": 4, "
                        "\"head_dim\": 32, \"num_hidden_layers\": 8, \"intermediate_size\": 96, \"vocab_size\": 256}",
                        &c, why, sizeof why));
    CHECK(c.nbLinear == 6 && !glyd_layerIsLinear(&c, 3) && !glyd_layerIsLinear(&c, 7) && glyd_layerIsLinear(&c, 4));
    CHECK(c.headDim == 32 && c.rotaryDim == 8); /* the quarter by default */
    for (i = 0; i < sizeof kBad / sizeof kBad[0]; i++) {
        size_t const r = parse_text(kBad[i].text, &c, why, sizeof why);
        CHECK((size_t)glyd_getErrorCode(r) == kBad[i].code);
        if (strcmp(why, kBad[i].why)) fprintf(stderr, "# %s\n#   said %s\n", kBad[i].text, why);
        CHECK(!strcmp(why, kBad[i].why));
    }
#undef QWEN3_5_BASE
}

/* ------------------------------------------------------------------------ */
/* Mistral and Gemma 3                                                       */
/* ------------------------------------------------------------------------ */

TEST(hf_config_mistral_and_gemma3_fields)
{
    glyd_llmConfig c;
    char why[256];
    unsigned l;
    /* Gemma 3 4B's text settings as its config.json gave them before
     * transformers 5: rope_theta, rope_local_base_freq and rope_scaling, and
     * the layers' pattern (five sliding, then one full) */
    static const char* const gemma3Legacy =
        "{\"architectures\": [\"Gemma3ForCausalLM\"], \"hidden_size\": 2560, \"intermediate_size\": 10240, "
        "\"num_hidden_layers\": 34, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"vocab_size\": 262208, "
        "\"head_dim\": 256, \"query_pre_attn_scalar\": 256, \"rope_theta\": 1000000.0, "
        "\"rope_local_base_freq\": 10000.0, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, "
        "\"sliding_window\": 1024, \"sliding_window_pattern\": 6, \"final_logit_softcapping\": null, "
        "\"attn_logit_softcapping\": null, \"hidden_activation\": \"gelu_pytorch_tanh\", \"rms_norm_eps\": 1e-06}";
    /* Mistral Nemo's shapes: head_dim 128, not 5120 / 32; no window */
    static const char* const nemo =
        "{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 5120, \"intermediate_size\": 14336, "
        "\"num_hidden_layers\": 40, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, "
        "\"vocab_size\": 131072, \"rope_theta\": 1000000.0, \"sliding_window\": null, "
        "\"max_position_embeddings\": 1024000, \"attention_bias\": true}";
    /* what transformers fills in: Mistral's window of 4096 and context of
     * 131072; Gemma 3's head_dim, scalar, bases, tied embeddings */
    static const char* const defaults =
        "{\"architectures\": [\"%s\"], \"hidden_size\": 64, \"intermediate_size\": 96, \"num_hidden_layers\": 7, "
        "\"num_attention_heads\": 4, \"vocab_size\": 300}";
    static const char* const gemma3Multimodal =
        "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"eos_token_id\": [1, 106], "
        "\"text_config\": {\"hidden_size\": 2560, \"intermediate_size\": 10240, \"model_type\": \"gemma3_text\", "
        "\"num_hidden_layers\": 34, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, "
        "\"sliding_window\": 1024}, \"vision_config\": {\"hidden_size\": 1152}}";
    char text[512];

    CHECK_OK(parse_file("tests/data/tiny-mistral/config.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_MISTRAL && c.headDim == 24 && c.dim == 64 && c.slidingWindow == 48 && !c.tied);
    CHECK(c.sliding[0] && c.sliding[1] && !c.gemma && !c.qkNorm && c.ropeTheta == 1e6 && c.rope == GLYD_ROPE_NONE);

    CHECK_OK(parse_file("tests/data/tiny-gemma3/config.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_GEMMA3 && c.gemma && c.qkNorm && c.tied && c.headDim == 16 && c.slidingWindow == 40);
    CHECK(c.sliding[0] && c.sliding[1] && !c.sliding[2] && c.sliding[3] && c.queryPreAttnScalar == 24.0);
    CHECK(c.rope == GLYD_ROPE_LINEAR && c.ropeFactor == 4.0 && c.ropeTheta == 1e6 && c.finalSoftcap == 4.0);
    CHECK(c.localRope == GLYD_ROPE_NONE && c.localRopeTheta == 1e4 && c.bos == 2 && c.eos == 1);

    CHECK_OK(parse_text(gemma3Legacy, &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_GEMMA3 && c.rope == GLYD_ROPE_LINEAR && c.ropeFactor == 8.0 && c.ropeTheta == 1e6);
    CHECK(c.localRope == GLYD_ROPE_NONE && c.localRopeTheta == 1e4 && c.slidingWindow == 1024 && c.finalSoftcap == 0);
    for (l = 0; l < 34; l++) CHECK(c.sliding[l] == ((l + 1) % 6 != 0));

    CHECK_OK(parse_text(nemo, &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_MISTRAL && c.headDim == 128 && c.slidingWindow == 0 && !c.sliding[0]);
    CHECK(c.maxPositions == 1024000 && !c.qkvBias);

    snprintf(text, sizeof text, defaults, "MistralForCausalLM");
    CHECK_OK(parse_text(text, &c, why, sizeof why));
    CHECK(c.slidingWindow == 4096 && c.sliding[6] && c.maxPositions == 131072 && c.headDim == 16 && !c.tied);
    snprintf(text, sizeof text, defaults, "Gemma3ForCausalLM");
    CHECK_OK(parse_text(text, &c, why, sizeof why));
    CHECK(c.slidingWindow == 4096 && c.headDim == 256 && c.queryPreAttnScalar == 256.0 && c.tied);
    CHECK(c.ropeTheta == 1e6 && c.localRopeTheta == 1e4 && c.rope == GLYD_ROPE_NONE && c.maxPositions == 131072);
    CHECK(c.sliding[4] && !c.sliding[5] && c.sliding[6]);

    /* Gemma3ForConditionalGeneration: its text model, from text_config */
    CHECK_OK(parse_file("tests/data/tiny-gemma3-mm/config.json", &c, why, sizeof why));
    CHECK(c.arch == GLYD_ARCH_GEMMA3 && c.multimodal && c.nbHeads == 8 && c.nbKvHeads == 4 && c.dim == 48);
    CHECK(c.rope == GLYD_ROPE_LINEAR && c.ropeFactor == 8.0 && c.sliding[0] && !c.sliding[1] && c.vocab == 256);
    /* as Gemma 3 4B's config.json gives it: the rest is transformers'
     * Gemma3TextConfig defaults */
    CHECK_OK(parse_text(gemma3Multimodal, &c, why, sizeof why));
    CHECK(c.multimodal && c.dim == 2560 && c.hidden == 10240 && c.nbLayers == 34 && c.vocab == 262208);
    CHECK(c.nbHeads == 8 && c.nbKvHeads == 4 && c.headDim == 256 && c.queryPreAttnScalar == 256.0 && c.tied);
    CHECK(c.rope == GLYD_ROPE_LINEAR && c.ropeFactor == 8.0 && c.ropeTheta == 1e6 && c.localRopeTheta == 1e4);
    CHECK(c.slidingWindow == 1024 && c.sliding[4] && !c.sliding[5] && c.bos == 2 && c.eos == 1);
    CHECK(c.maxPositions == 131072 && c.normEps == 1e-6f);
    CHECK_OK(parse_file("tests/data/tiny-gemma3/config.json", &c, why, sizeof why));
    CHECK(!c.multimodal);
}

TEST(engine_refuses_mistral_and_gemma3_config_values)
{
#define GEMMA "\"architectures\": [\"Gemma3ForCausalLM\"], "
    static const bad_config kInvalid[] = {
        { "{\"architectures\": [\"MistralForCausalLM\"], \"sliding_window\": 0}",
          "config.json: sliding_window is 0: it must be an integer in 1..16777216" },
        { "{\"architectures\": [\"MistralForCausalLM\"], \"sliding_window\": \"4096\"}",
          "config.json: sliding_window is \"4096\": it must be an integer in 1..16777216" },
        { "{" GEMMA "\"sliding_window\": null}",
          "config.json: sliding_window is null: it must be an integer in 1..16777216 when a layer is "
          "sliding_attention" },
        { "{" GEMMA "\"layer_types\": [\"full_attention\"]}",
          "config.json: layer_types is [\"full_attention\"]: it must be a list of num_hidden_layers (5) layer types" },
        { "{" GEMMA "\"sliding_window_pattern\": 0}",
          "config.json: sliding_window_pattern is 0: it must be an integer in 1..4096" },
        { "{" GEMMA "\"query_pre_attn_scalar\": 0}",
          "config.json: query_pre_attn_scalar is 0: it must be a positive number within float range" },
        { "{" GEMMA "\"final_logit_softcapping\": -30}",
          "config.json: final_logit_softcapping is -30: it must be a positive number within float range" },
        { "{" GEMMA "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000}}",
          "config.json: rope_parameters is {\"rope_type\":\"default\",\"rope_theta\":10000}: it must be an object "
          "of full_attention and sliding_attention" },
        { "{" GEMMA "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 0.5}}}",
          "config.json: rope_parameters.full_attention.factor is 0.5: it must be a number in 1..16777216" },
        { "{" GEMMA "\"rope_local_base_freq\": 1}",
          "config.json: rope_local_base_freq is 1: it must be a number above 1 within float range" },
        { "{\"architectures\": [\"Gemma3ForConditionalGeneration\"]}", "config.json: text_config is missing" },
        { "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"text_config\": [1]}",
          "config.json: text_config is [1]: it must be an object" },
        { "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"text_config\": {\"rope_scaling\": "
          "{\"rope_type\": \"linear\", \"factor\": 0}}}",
          "config.json: text_config.rope_scaling.factor is 0: it must be a number in 1..16777216" },
    };
    static const bad_config kUnsupported[] = {
        { "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], "
          "\"text_config\": {\"hidden_activation\": \"gelu\"}}",
          "config.json: text_config.hidden_activation is \"gelu\": it is not supported (gelu_pytorch_tanh is)" },
        { "{" GEMMA "\"hidden_activation\": \"gelu\"}",
          "config.json: hidden_activation is \"gelu\": it is not supported (gelu_pytorch_tanh is)" },
        { "{" GEMMA "\"attention_bias\": true}",
          "config.json: attention_bias is true: Gemma 3's attention biases are not supported" },
        { "{" GEMMA "\"use_bidirectional_attention\": true}",
          "config.json: use_bidirectional_attention is true: only causal attention is supported" },
        { "{" GEMMA "\"attn_logit_softcapping\": 50.0}",
          "config.json: attn_logit_softcapping is 50.0: it is not supported (transformers' Gemma 3 does not apply "
          "it; null is)" },
        { "{" GEMMA "\"layer_types\": [\"full_attention\", \"chunked_attention\", \"full_attention\", "
          "\"full_attention\", \"full_attention\"]}",
          "config.json: layer_types is [\"full_attention\",\"chunked_attention\",\"full_attention\",\"full...: "
          "layer 1 is not supported (sliding_attention and full_attention are)" },
        { "{" GEMMA "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"yarn\", \"factor\": 2}}}",
          "config.json: rope_parameters.sliding_attention.rope_type is \"yarn\": it is not supported for sliding "
          "layers (default and linear are)" },
        { "{" GEMMA "\"rope_parameters\": {\"full_attention\": {}}, \"rope_scaling\": {\"rope_type\": \"linear\", "
          "\"factor\": 2}}",
          "config.json: rope_scaling is {\"rope_type\":\"linear\",\"factor\":2}: it is not supported beside "
          "rope_parameters" },
    };
#undef GEMMA
    char dir[64];
    if (!copy_fixture(dir, sizeof dir)) return;
    expect_refusals(dir, kInvalid, sizeof kInvalid / sizeof kInvalid[0], INVALID);
    expect_refusals(dir, kUnsupported, sizeof kUnsupported / sizeof kUnsupported[0], UNSUPPORTED);
    /* a Gemma 3 config that parses opens no further than its tensors */
    write_config(dir, "{\"architectures\": [\"Gemma3ForCausalLM\"], \"head_dim\": 8}");
    expect_refusal(dir, "gemma tensors", INVALID, "tensor model.layers.0.pre_feedforward_layernorm.weight is missing");
    remove_copy(dir);
}

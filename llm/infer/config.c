/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c: the fields of a Hugging Face config.json that the forward pass
 * needs, with the defaults transformers applies, and the rotary embedding's
 * frequencies (plain, linear, yarn and llama3 scaling) computed as
 * transformers computes them. Every key the engine reads is checked before
 * a model runs: its JSON type, its range, and its agreement with the
 * others, so that a config either runs or is refused in one line naming the
 * key and value.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "infer.h"

/* Where the one-line reason of a refusal goes. */
typedef struct {
    char* why;
    size_t cap;
} reason;

static void say(const reason* r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const reason* r, const char* fmt, ...)
{
    va_list ap;
    if (!r->why || !r->cap) return;
    va_start(ap, fmt);
    vsnprintf(r->why, r->cap, fmt, ap);
    va_end(ap);
}

/* A key's value, or NULL when it is absent or null: config.json writers
 * use both for "the default". */
static const json_t* get(const json_t* o, const char* key)
{
    const json_t* const j = json_object_get(o, key);
    return json_is_null(j) ? NULL : j;
}

/* A value as JSON text on one line (escaped, ASCII), cut short. */
static const char* shown(const json_t* j, char* buf, size_t cap)
{
    char* const text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(10));
    if (!text) snprintf(buf, cap, "(a value)");
    else if (strlen(text) < cap) snprintf(buf, cap, "%s", text);
    else snprintf(buf, cap, "%.*s...", (int)(cap - 4), text);
    free(text);
    return buf;
}

/* "config.json: KEY is VALUE: RULE", and the error. KEY is prefix.key
 * for the keys of a nested object. */
static size_t refuse(const reason* r, size_t err, const char* prefix, const char* key, const json_t* j,
                     const char* fmt, ...) __attribute__((format(printf, 6, 7)));
static size_t refuse(const reason* r, size_t err, const char* prefix, const char* key, const json_t* j,
                     const char* fmt, ...)
{
    char value[64], rule[384]; /* room for the list of supported classes */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof rule, fmt, ap);
    va_end(ap);
    say(r, "config.json: %s%s%s is %s: %s", prefix ? prefix : "", prefix ? "." : "", key,
        shown(j, value, sizeof value), rule);
    return err;
}

static size_t missing(const reason* r, const char* prefix, const char* key)
{
    say(r, "config.json: %s%s%s is missing", prefix ? prefix : "", prefix ? "." : "", key);
    return GLYD_ERROR(model_invalid);
}

/* An integer in [lo, hi]; *v keeps its default when the key is absent. */
static size_t get_int(const json_t* o, const char* prefix, const char* key, long long lo, long long hi,
                      long long* v, const reason* r)
{
    const json_t* const j = get(o, key);
    if (!j) return 0;
    if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
        return refuse(r, GLYD_ERROR(model_invalid), prefix, key, j, "it must be an integer in %lld..%lld", lo, hi);
    *v = (long long)json_integer_value(j);
    return 0;
}

/* The same for a key without a default. */
static size_t need_int(const json_t* o, const char* key, long long lo, long long hi, long long* v, const reason* r)
{
    if (!get(o, key)) return missing(r, NULL, key);
    return get_int(o, NULL, key, lo, hi, v, r);
}

/* A number (an integer will do, as Python reads it) in [lo, hi], with the
 * rule said in words for the message. */
static size_t get_num(const json_t* o, const char* prefix, const char* key, double lo, double hi, const char* rule,
                      double* v, const reason* r)
{
    const json_t* const j = get(o, key);
    if (!j) return 0;
    if (!json_is_number(j) || !(json_number_value(j) >= lo && json_number_value(j) <= hi))
        return refuse(r, GLYD_ERROR(model_invalid), prefix, key, j, "%s", rule);
    *v = json_number_value(j);
    return 0;
}

/* The same for a key without a default. */
static size_t need_num(const json_t* o, const char* prefix, const char* key, double lo, double hi, const char* rule,
                       double* v, const reason* r)
{
    if (!get(o, key)) return missing(r, prefix, key);
    return get_num(o, prefix, key, lo, hi, rule, v, r);
}

static size_t get_bool(const json_t* o, const char* key, int* v, const reason* r)
{
    const json_t* const j = get(o, key);
    if (!j) return 0;
    if (!json_is_boolean(j)) return refuse(r, GLYD_ERROR(model_invalid), NULL, key, j, "it must be true or false");
    *v = json_is_true(j);
    return 0;
}

static size_t get_string(const json_t* o, const char* prefix, const char* key, const char** v, const reason* r)
{
    const json_t* const j = get(o, key);
    if (!j) return 0;
    if (!json_is_string(j)) return refuse(r, GLYD_ERROR(model_invalid), prefix, key, j, "it must be a string");
    *v = json_string_value(j);
    return 0;
}

/* A token id, or a list of them (eos_token_id often is one), each in the
 * vocabulary: *v = the id, the first of the list, or -1 when none. */
static size_t get_token(const json_t* o, const char* key, unsigned vocab, long long* v, const reason* r)
{
    const json_t* const j = get(o, key);
    size_t i;
    *v = -1;
    if (!j) return 0;
    if (json_is_integer(j) && json_integer_value(j) >= 0 && json_integer_value(j) < vocab) {
        *v = (long long)json_integer_value(j);
        return 0;
    }
    for (i = 0; json_is_array(j) && i < json_array_size(j); i++) {
        const json_t* const id = json_array_get(j, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= vocab) break;
    }
    if (!json_is_array(j) || i < json_array_size(j))
        return refuse(r, GLYD_ERROR(model_invalid), NULL, key, j,
                      "it must be a token id below vocab_size (%u), or a list of them", vocab);
    if (json_array_size(j)) *v = (long long)json_integer_value(json_array_get(j, 0));
    return 0;
}

/* Numbers the engine keeps as floats: positive and normal in float, so that
 * neither a zero nor an infinity reaches the arithmetic. */
#define POSITIVE_FLOAT "it must be a positive number within float range"

static size_t read_architecture(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    static const char* const kNames[] = { "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                                          "Qwen3MoeForCausalLM", "MixtralForCausalLM", "Qwen3_5ForCausalLM",
                                          "MistralForCausalLM", "Gemma3ForCausalLM" };
    static const char kSupported[] = "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
                                     "MixtralForCausalLM, Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, "
                                     "MistralForCausalLM, Gemma3ForCausalLM and Gemma3ForConditionalGeneration are";
    const json_t* const arch = get(root, "architectures");
    const char* const name = json_string_value(json_array_get(arch, 0));
    unsigned i;
    if (name && !strcmp(name, "Qwen3_5ForConditionalGeneration")) {
        /* the released Qwen3.5: its text model is run, the vision tower not */
        c->arch = GLYD_ARCH_QWEN3_5;
        c->nestedText = 1;
        return 0;
    }
    if (!arch) {
        say(r, "config.json: architectures is missing (%s supported)", kSupported);
        return GLYD_ERROR(model_unsupported);
    }
    if (!json_is_array(arch) || (json_array_size(arch) && !name))
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "architectures", arch, "it must be a list of class names");
    for (i = 0; name && i < sizeof kNames / sizeof kNames[0]; i++) {
        if (strcmp(name, kNames[i]) == 0) {
            c->arch = (glyd_arch)i;
            return 0;
        }
    }
    return refuse(r, GLYD_ERROR(model_unsupported), NULL, "architectures", arch, "it is not supported (%s)",
                  kSupported);
}

/* The shapes: positive, in agreement (kv heads dividing the heads, an even
 * head for the rotation) and within the GLYD_MAX_ limits, under which
 * every product the engine forms from them fits 64 bits. */
static size_t read_sizes(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    long long dim = 0, heads = 0, kv, headDim = 0, layers = 0, hidden = 0, vocab = 0;
    long long maxPos = c->arch == GLYD_ARCH_LLAMA ? 2048 : 32768;
    if (c->arch == GLYD_ARCH_MISTRAL || c->arch == GLYD_ARCH_GEMMA3) maxPos = 131072;
    FORWARD_IF_ERROR(need_int(root, "hidden_size", 1, GLYD_MAX_WIDTH, &dim, r));
    FORWARD_IF_ERROR(need_int(root, "num_attention_heads", 1, GLYD_MAX_WIDTH, &heads, r));
    kv = heads;
    FORWARD_IF_ERROR(get_int(root, NULL, "num_key_value_heads", 1, heads, &kv, r));
    if (heads % kv != 0)
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "num_key_value_heads", get(root, "num_key_value_heads"),
                      "it must divide num_attention_heads (%lld)", heads);
    /* Llama and Qwen2 derive a head's width from the model's; Qwen3's
     * default is 128 */
    if (get(root, "head_dim")) {
        FORWARD_IF_ERROR(get_int(root, NULL, "head_dim", 1, GLYD_MAX_WIDTH, &headDim, r));
        if (headDim % 2 != 0)
            return refuse(r, GLYD_ERROR(model_invalid), NULL, "head_dim", get(root, "head_dim"),
                          "it must be even (the rotary embedding turns pairs of values)");
    } else if (c->arch == GLYD_ARCH_QWEN3) {
        headDim = 128;
    } else if (c->arch == GLYD_ARCH_QWEN3_5 || c->arch == GLYD_ARCH_GEMMA3) {
        headDim = 256;
    } else if (dim % heads != 0) {
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "num_attention_heads", get(root, "num_attention_heads"),
                      "it must divide hidden_size (%lld) when head_dim is not given", dim);
    } else if ((headDim = dim / heads) % 2 != 0) {
        say(r, "config.json: head_dim (hidden_size / num_attention_heads) is %lld: it must be even (the rotary "
               "embedding turns pairs of values)", headDim);
        return GLYD_ERROR(model_invalid);
    }
    if (heads * headDim > GLYD_MAX_WIDTH) {
        say(r, "config.json: num_attention_heads x head_dim is %lld x %lld: it must be at most %u", heads, headDim,
            GLYD_MAX_WIDTH);
        return GLYD_ERROR(model_invalid);
    }
    FORWARD_IF_ERROR(need_int(root, "num_hidden_layers", 1, GLYD_MAX_LAYERS, &layers, r));
    FORWARD_IF_ERROR(need_int(root, "intermediate_size", 1, GLYD_MAX_MLP, &hidden, r));
    FORWARD_IF_ERROR(need_int(root, "vocab_size", 1, GLYD_MAX_VOCAB, &vocab, r));
    FORWARD_IF_ERROR(get_int(root, NULL, "max_position_embeddings", 1, GLYD_MAX_POSITIONS, &maxPos, r));
    c->dim = (unsigned)dim;
    c->nbHeads = (unsigned)heads;
    c->nbKvHeads = (unsigned)kv;
    c->headDim = (unsigned)headDim;
    c->nbLayers = (unsigned)layers;
    c->hidden = (unsigned)hidden;
    c->vocab = (unsigned)vocab;
    c->maxPositions = (unsigned)maxPos;
    c->rotaryDim = c->headDim;
    return 0;
}

/* The activation, the biases, tied embeddings and the norm's epsilon. */
static size_t read_layers(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    const char* act = "silu";
    int attentionBias = 0, mlpBias = 0;
    double eps = 1e-6;
    /* Gemma 3 reads hidden_activation instead (read_gemma) */
    if (c->arch != GLYD_ARCH_GEMMA3) FORWARD_IF_ERROR(get_string(root, NULL, "hidden_act", &act, r));
    if (strcmp(act, "silu") != 0)
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "hidden_act", get(root, "hidden_act"),
                      "it is not supported (silu is)");
    FORWARD_IF_ERROR(get_bool(root, "mlp_bias", &mlpBias, r));
    if (mlpBias)
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "mlp_bias", get(root, "mlp_bias"),
                      "MLP biases are not supported");
    FORWARD_IF_ERROR(get_bool(root, "attention_bias", &attentionBias, r));
    c->tied = c->arch == GLYD_ARCH_GEMMA3; /* transformers' default */
    FORWARD_IF_ERROR(get_bool(root, "tie_word_embeddings", &c->tied, r));
    FORWARD_IF_ERROR(get_num(root, NULL, "rms_norm_eps", FLT_MIN, FLT_MAX, POSITIVE_FLOAT, &eps, r));
    c->normEps = (float)eps;
    c->qkvBias = c->arch == GLYD_ARCH_QWEN2 || attentionBias;
    c->qkNorm = c->arch == GLYD_ARCH_QWEN3 || c->arch == GLYD_ARCH_QWEN3_MOE;
    return 0;
}

/* yarn's ramp between the pairs it keeps and those it interpolates, and
 * its attention scaling (0: from the factor). */
static size_t read_yarn(glyd_llmConfig* c, const json_t* rs, const char* rsKey, const reason* r)
{
    c->yarnBetaFast = 32.0;
    c->yarnBetaSlow = 1.0;
    c->yarnAttentionFactor = 0.0;
    FORWARD_IF_ERROR(get_num(rs, rsKey, "beta_fast", FLT_MIN, FLT_MAX, POSITIVE_FLOAT, &c->yarnBetaFast, r));
    FORWARD_IF_ERROR(get_num(rs, rsKey, "beta_slow", FLT_MIN, FLT_MAX, POSITIVE_FLOAT, &c->yarnBetaSlow, r));
    if (!(c->yarnBetaFast > c->yarnBetaSlow))
        return refuse(r, GLYD_ERROR(model_invalid), rsKey, "beta_fast", get(rs, "beta_fast"),
                      "it must exceed beta_slow (%g)", c->yarnBetaSlow);
    return get_num(rs, rsKey, "attention_factor", FLT_MIN, FLT_MAX, POSITIVE_FLOAT, &c->yarnAttentionFactor, r);
}

/* llama3's band of wavelengths, which transformers reads without
 * defaults. The band's width divides in float: it must be a normal float,
 * so that the smoothing stays finite. */
static size_t read_llama3(glyd_llmConfig* c, const json_t* rs, const char* rsKey, const reason* r)
{
    double low = 0, high = 0;
    FORWARD_IF_ERROR(need_num(rs, rsKey, "low_freq_factor", FLT_MIN, FLT_MAX, POSITIVE_FLOAT, &low, r));
    FORWARD_IF_ERROR(need_num(rs, rsKey, "high_freq_factor", FLT_MIN, FLT_MAX, POSITIVE_FLOAT, &high, r));
    if (!(high - low >= FLT_MIN))
        return refuse(r, GLYD_ERROR(model_invalid), rsKey, "high_freq_factor", get(rs, "high_freq_factor"),
                      "it must exceed low_freq_factor (%g)", low);
    c->llama3LowFreqFactor = low;
    c->llama3HighFreqFactor = high;
    return 0;
}

static const char kBase[] = "it must be a number above 1 within float range";

/* The scaling of the rotary embedding that the object rs (named rsKey)
 * describes: its type and what that type reads. */
static size_t read_rope_kind(glyd_llmConfig* c, const json_t* rs, const char* rsKey, const reason* r)
{
    const char* kindKey = "rope_type";
    const char* kind = NULL;
    long long originalMax = c->maxPositions;
    char factorRule[64];
    c->rope = GLYD_ROPE_NONE;
    FORWARD_IF_ERROR(get_string(rs, rsKey, kindKey, &kind, r));
    if (!kind) FORWARD_IF_ERROR(get_string(rs, rsKey, kindKey = "type", &kind, r));
    if (!kind || !strcmp(kind, "default")) return 0;
    if (!strcmp(kind, "linear")) c->rope = GLYD_ROPE_LINEAR;
    else if (!strcmp(kind, "yarn")) c->rope = GLYD_ROPE_YARN;
    else if (!strcmp(kind, "llama3")) c->rope = GLYD_ROPE_LLAMA3;
    else
        return refuse(r, GLYD_ERROR(model_unsupported), rsKey, kindKey, get(rs, kindKey),
                      "it is not supported (default, linear, yarn and llama3 are)");
    /* transformers asks factor >= 1 (it stretches the context); the upper
     * bound keeps the frequencies and yarn's scale finite in float */
    snprintf(factorRule, sizeof factorRule, "it must be a number in 1..%u", GLYD_MAX_POSITIONS);
    c->ropeFactor = 1.0;
    FORWARD_IF_ERROR(get_num(rs, rsKey, "factor", 1.0, GLYD_MAX_POSITIONS, factorRule, &c->ropeFactor, r));
    if (c->rope == GLYD_ROPE_LINEAR) return 0;
    /* the context the model was trained on; transformers' default is the
     * model's own */
    FORWARD_IF_ERROR(get_int(rs, rsKey, "original_max_position_embeddings", 1, GLYD_MAX_POSITIONS, &originalMax, r));
    c->ropeOriginalMax = (unsigned)originalMax;
    return c->rope == GLYD_ROPE_YARN ? read_yarn(c, rs, rsKey, r) : read_llama3(c, rs, rsKey, r);
}

/* The rotary embedding: its base, and the scaling of rope_scaling (or of
 * rope_parameters, as transformers 5 writes it, with rope_theta inside). */
static size_t read_rope(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    double const above1 = nextafter(1.0, 2.0);
    const char* rsKey = "rope_scaling";
    const json_t* rs = get(root, rsKey);
    if (!rs) rs = get(root, rsKey = "rope_parameters");
    if (rs && !json_is_object(rs))
        return refuse(r, GLYD_ERROR(model_invalid), NULL, rsKey, rs, "it must be an object");
    c->ropeTheta = c->arch == GLYD_ARCH_MIXTRAL ? 1000000.0 : 10000.0; /* MixtralConfig's default_theta */
    FORWARD_IF_ERROR(get_num(rs, rsKey, "rope_theta", above1, FLT_MAX, kBase, &c->ropeTheta, r));
    FORWARD_IF_ERROR(get_num(root, NULL, "rope_theta", above1, FLT_MAX, kBase, &c->ropeTheta, r));
    c->rope = GLYD_ROPE_NONE;
    if (!rs) return 0;
    return read_rope_kind(c, rs, rsKey, r);
}

/* sliding_window: the keys a windowed layer's query sees, itself included
 * (transformers' mask: key positions above the query's minus the window).
 * Absent: transformers' default of 4096; null: none. */
static size_t read_window(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    const json_t* const j = json_object_get(root, "sliding_window");
    long long window = 4096;
    if (json_is_null(j)) return 0;
    FORWARD_IF_ERROR(get_int(root, NULL, "sliding_window", 1, GLYD_MAX_POSITIONS, &window, r));
    c->slidingWindow = (unsigned)window;
    return 0;
}

/* Mistral: Llama's layers, every one windowed when sliding_window is set,
 * and never biases (transformers' Mistral ignores attention_bias). */
static size_t read_mistral(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    FORWARD_IF_ERROR(read_window(c, root, r));
    memset(c->sliding, c->slidingWindow > 0, c->nbLayers);
    c->qkvBias = 0;
    return 0;
}

/* Gemma 3's rotations: the full layers' (rope_theta, default 1e6, and any
 * scaling) and the sliding layers' (their own base, default 1e4; none or
 * linear scaling), as rope_parameters holds them per layer type
 * (transformers 5), or as rope_theta, rope_scaling and rope_local_base_freq
 * did before. */
static size_t read_gemma_rope(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    static const char kFull[] = "rope_parameters.full_attention", kSliding[] = "rope_parameters.sliding_attention";
    double const above1 = nextafter(1.0, 2.0);
    const json_t* const rp = get(root, "rope_parameters");
    const json_t *full, *sliding;
    glyd_llmConfig local = *c;
    c->ropeTheta = 1e6;
    local.ropeTheta = 1e4;
    if (rp) {
        if (!json_is_object(rp) || (!get(rp, "full_attention") && !get(rp, "sliding_attention")))
            return refuse(r, GLYD_ERROR(model_invalid), NULL, "rope_parameters", rp,
                          "it must be an object of full_attention and sliding_attention");
        if (get(root, "rope_scaling"))
            return refuse(r, GLYD_ERROR(model_unsupported), NULL, "rope_scaling", get(root, "rope_scaling"),
                          "it is not supported beside rope_parameters");
        full = get(rp, "full_attention");
        sliding = get(rp, "sliding_attention");
        if (full && !json_is_object(full))
            return refuse(r, GLYD_ERROR(model_invalid), "rope_parameters", "full_attention", full,
                          "it must be an object");
        if (sliding && !json_is_object(sliding))
            return refuse(r, GLYD_ERROR(model_invalid), "rope_parameters", "sliding_attention", sliding,
                          "it must be an object");
        /* a base missing from an object is the top level's, as before */
        if (!get(full, "rope_theta"))
            FORWARD_IF_ERROR(get_num(root, NULL, "rope_theta", above1, FLT_MAX, kBase, &c->ropeTheta, r));
        FORWARD_IF_ERROR(get_num(full, kFull, "rope_theta", above1, FLT_MAX, kBase, &c->ropeTheta, r));
        if (full) FORWARD_IF_ERROR(read_rope_kind(c, full, kFull, r));
        if (!get(sliding, "rope_theta"))
            FORWARD_IF_ERROR(get_num(root, NULL, "rope_local_base_freq", above1, FLT_MAX, kBase, &local.ropeTheta, r));
        FORWARD_IF_ERROR(get_num(sliding, kSliding, "rope_theta", above1, FLT_MAX, kBase, &local.ropeTheta, r));
        if (sliding) FORWARD_IF_ERROR(read_rope_kind(&local, sliding, kSliding, r));
        if (local.rope != GLYD_ROPE_NONE && local.rope != GLYD_ROPE_LINEAR)
            return refuse(r, GLYD_ERROR(model_unsupported), kSliding, "rope_type", get(sliding, "rope_type"),
                          "it is not supported for sliding layers (default and linear are)");
    } else {
        const json_t* const rs = get(root, "rope_scaling");
        FORWARD_IF_ERROR(get_num(root, NULL, "rope_theta", above1, FLT_MAX, kBase, &c->ropeTheta, r));
        FORWARD_IF_ERROR(get_num(root, NULL, "rope_local_base_freq", above1, FLT_MAX, kBase, &local.ropeTheta, r));
        if (rs && !json_is_object(rs))
            return refuse(r, GLYD_ERROR(model_invalid), NULL, "rope_scaling", rs, "it must be an object");
        if (rs) FORWARD_IF_ERROR(read_rope_kind(c, rs, "rope_scaling", r));
    }
    c->localRopeTheta = local.ropeTheta;
    c->localRope = local.rope;
    c->localRopeFactor = local.rope == GLYD_ROPE_LINEAR ? local.ropeFactor : 1.0;
    return 0;
}

/* Which of Gemma 3's layers are windowed: layer_types, else one full layer
 * in every sliding_window_pattern (default 6), the last of each group. */
static size_t read_layer_types(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    const json_t* const types = get(root, "layer_types");
    long long pattern = 6;
    unsigned l;
    if (!types) {
        FORWARD_IF_ERROR(get_int(root, NULL, "sliding_window_pattern", 1, GLYD_MAX_LAYERS, &pattern, r));
        for (l = 0; l < c->nbLayers; l++) c->sliding[l] = (l + 1) % (unsigned)pattern != 0;
        return 0;
    }
    if (!json_is_array(types) || json_array_size(types) != c->nbLayers)
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "layer_types", types,
                      "it must be a list of num_hidden_layers (%u) layer types", c->nbLayers);
    for (l = 0; l < c->nbLayers; l++) {
        const char* const t = json_string_value(json_array_get(types, l));
        if (t && !strcmp(t, "sliding_attention")) c->sliding[l] = 1;
        else if (t && !strcmp(t, "full_attention")) c->sliding[l] = 0;
        else
            return refuse(r, GLYD_ERROR(model_unsupported), NULL, "layer_types", types,
                          "layer %u is not supported (sliding_attention and full_attention are)", l);
    }
    return 0;
}

/* Gemma 3 (text): its activation, norms, attention scale, windowed layers,
 * two rotations and the logits' soft cap; what transformers' Gemma 3 does
 * not do (attention soft-capping) or the engine does not (bidirectional
 * attention, biases) is refused. */
static size_t read_gemma(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    const char* act = "gelu_pytorch_tanh";
    int flag = 0;
    FORWARD_IF_ERROR(get_string(root, NULL, "hidden_activation", &act, r));
    if (strcmp(act, "gelu_pytorch_tanh") != 0)
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "hidden_activation", get(root, "hidden_activation"),
                      "it is not supported (gelu_pytorch_tanh is)");
    FORWARD_IF_ERROR(get_bool(root, "attention_bias", &flag, r));
    if (flag)
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "attention_bias", get(root, "attention_bias"),
                      "Gemma 3's attention biases are not supported");
    FORWARD_IF_ERROR(get_bool(root, "use_bidirectional_attention", &flag, r));
    if (flag)
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "use_bidirectional_attention",
                      get(root, "use_bidirectional_attention"), "only causal attention is supported");
    if (get(root, "attn_logit_softcapping"))
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "attn_logit_softcapping",
                      get(root, "attn_logit_softcapping"),
                      "it is not supported (transformers' Gemma 3 does not apply it; null is)");
    c->queryPreAttnScalar = 256;
    FORWARD_IF_ERROR(get_num(root, NULL, "query_pre_attn_scalar", FLT_MIN, FLT_MAX, POSITIVE_FLOAT,
                             &c->queryPreAttnScalar, r));
    FORWARD_IF_ERROR(get_num(root, NULL, "final_logit_softcapping", FLT_MIN, FLT_MAX, POSITIVE_FLOAT,
                             &c->finalSoftcap, r));
    FORWARD_IF_ERROR(read_layer_types(c, root, r));
    /* transformers cannot build a sliding layer's mask without a window */
    if (json_is_null(json_object_get(root, "sliding_window")) && memchr(c->sliding, 1, c->nbLayers))
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "sliding_window", json_object_get(root, "sliding_window"),
                      "it must be an integer in 1..%u when a layer is sliding_attention", GLYD_MAX_POSITIONS);
    FORWARD_IF_ERROR(read_window(c, root, r));
    c->gemma = 1;
    c->normOffset = 1;
    c->qkNorm = 1;
    return read_gemma_rope(c, root, r);
}

/* Gemma 3's text model as transformers configures it: Gemma3TextConfig's
 * defaults beneath the keys config.json gives, at its top level
 * (Gemma3ForCausalLM) or in text_config (Gemma3ForConditionalGeneration,
 * whose text model is what the engine runs). *text: the merged object,
 * the caller's to free; NULL for the other architectures. */
static size_t gemma_text(const json_t* root, json_t** text, int* multimodal, const reason* r)
{
    static const char kDefaults[] =
        "{\"vocab_size\": 262208, \"hidden_size\": 2304, \"intermediate_size\": 9216, \"num_hidden_layers\": 26, "
        "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"bos_token_id\": 2, \"eos_token_id\": 1}";
    const char* const name = json_string_value(json_array_get(get(root, "architectures"), 0));
    const json_t* src = root;
    *text = NULL;
    *multimodal = 0;
    if (name && !strcmp(name, "Gemma3ForConditionalGeneration")) {
        src = get(root, "text_config");
        if (!src) return missing(r, NULL, "text_config");
        if (!json_is_object(src))
            return refuse(r, GLYD_ERROR(model_invalid), NULL, "text_config", src, "it must be an object");
        *multimodal = 1;
    } else if (!name || strcmp(name, "Gemma3ForCausalLM") != 0) {
        return 0;
    }
    *text = json_loads(kDefaults, 0, NULL);
    if (!*text || json_object_update(*text, (json_t*)src) != 0 ||
        json_object_set_new(*text, "architectures", json_pack("[s]", "Gemma3ForCausalLM")) != 0) {
        json_decref(*text);
        *text = NULL;
        say(r, "config.json: out of memory");
        return GLYD_ERROR(memory_allocation);
    }
    return 0;
}

/* A refusal of a key of text_config, named as such. */
static void in_text_config(const reason* r)
{
    char said[512];
    if (!r->why || !r->cap || strncmp(r->why, "config.json: ", 13) != 0) return;
    snprintf(said, sizeof said, "%s", r->why + 13);
    say(r, "config.json: text_config.%s", said);
}

/* Qwen3-MoE's mlp_only_layers: layer indices, each a dense layer. */
static size_t read_dense_layers(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    const json_t* const j = get(root, "mlp_only_layers");
    char rule[96];
    size_t i;
    if (!j) return 0;
    snprintf(rule, sizeof rule, "it must be a list of layer indices below num_hidden_layers (%u)", c->nbLayers);
    if (!json_is_array(j)) return refuse(r, GLYD_ERROR(model_invalid), NULL, "mlp_only_layers", j, "%s", rule);
    for (i = 0; i < json_array_size(j); i++) {
        const json_t* const e = json_array_get(j, i);
        json_int_t l;
        if (!json_is_integer(e) || (l = json_integer_value(e)) < 0 || l >= (json_int_t)c->nbLayers)
            return refuse(r, GLYD_ERROR(model_invalid), NULL, "mlp_only_layers", j, "%s", rule);
        c->moeDense[l / 8] |= (uint8_t)(1u << (l % 8));
    }
    return 0;
}

/* The mixture of experts of Qwen3-MoE and Mixtral, with transformers'
 * defaults; attention over a sliding window is refused, not built. */
static size_t read_moe(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    int const qwen = c->arch == GLYD_ARCH_QWEN3_MOE;
    long long experts = qwen ? 128 : 8, used = qwen ? 8 : 2, hidden = qwen ? 768 : c->hidden, step = 1;
    long long other = -1;
    const char* const expertsKey = get(root, "num_experts") ? "num_experts" : "num_local_experts";
    int slidingOn = 0;
    if (c->arch != GLYD_ARCH_QWEN3_MOE && c->arch != GLYD_ARCH_MIXTRAL) return 0;
    /* Mixtral's default context and epsilon; the others' are read_sizes'
     * and read_layers' */
    if (!qwen && !get(root, "max_position_embeddings")) c->maxPositions = 4096 * 32;
    if (!qwen && !get(root, "rms_norm_eps")) c->normEps = 1e-5f;
    /* transformers reads either key (one is the other's alias) */
    FORWARD_IF_ERROR(get_int(root, NULL, expertsKey, qwen ? 0 : 1, GLYD_MAX_EXPERTS, &experts, r));
    if (get(root, "num_experts") && get(root, "num_local_experts")) {
        FORWARD_IF_ERROR(get_int(root, NULL, "num_local_experts", 0, GLYD_MAX_EXPERTS, &other, r));
        if (other != experts)
            return refuse(r, GLYD_ERROR(model_invalid), NULL, "num_local_experts", get(root, "num_local_experts"),
                          "it must equal num_experts (%lld)", experts);
    }
    FORWARD_IF_ERROR(get_int(root, NULL, "num_experts_per_tok", 1, GLYD_MAX(experts, 1), &used, r));
    if (experts && used > experts) {
        say(r, "config.json: num_experts_per_tok is missing: its default, %lld, exceeds %s (%lld)", used,
            expertsKey, experts);
        return GLYD_ERROR(model_invalid);
    }
    if (qwen) {
        FORWARD_IF_ERROR(get_int(root, NULL, "moe_intermediate_size", 1, GLYD_MAX_MLP, &hidden, r));
        FORWARD_IF_ERROR(get_int(root, NULL, "decoder_sparse_step", 1, GLYD_MAX_LAYERS, &step, r));
        FORWARD_IF_ERROR(get_bool(root, "norm_topk_prob", &c->moeNormTopk, r));
        FORWARD_IF_ERROR(read_dense_layers(c, root, r));
        FORWARD_IF_ERROR(get_bool(root, "use_sliding_window", &slidingOn, r));
        if (slidingOn)
            return refuse(r, GLYD_ERROR(model_unsupported), NULL, "use_sliding_window",
                          get(root, "use_sliding_window"), "sliding-window attention is not supported");
    } else {
        long long window = GLYD_MAX_POSITIONS;
        c->moeNormTopk = 1; /* Mixtral's router always divides by the sum */
        FORWARD_IF_ERROR(get_int(root, NULL, "sliding_window", 1, 1LL << 62, &window, r));
        /* a window as long as the context never slides */
        if (window < c->maxPositions)
            return refuse(r, GLYD_ERROR(model_unsupported), NULL, "sliding_window", get(root, "sliding_window"),
                          "sliding-window attention is not supported (null, or at least max_position_embeddings, "
                          "is)");
    }
    /* the experts' weights of every layer, in bf16: within 2^60 bytes,
     * so that the engine's sums of sizes cannot overflow */
    if ((double)c->nbLayers * (double)experts * 3.0 * (double)hidden * (double)c->dim * 2.0 > 0x1p60) {
        say(r, "config.json: %s is %lld: %u layers of experts %lld wide would exceed 2^60 bytes", expertsKey,
            experts, c->nbLayers, hidden);
        return GLYD_ERROR(model_invalid);
    }
    c->nbExperts = (unsigned)experts;
    c->nbExpertsUsed = (unsigned)used;
    c->moeHidden = (unsigned)hidden;
    c->moeSparseStep = (unsigned)step;
    return 0;
}

/* Qwen3.5: which layers are Gated DeltaNet, their shapes, the output gate,
 * (1 + w) norms and the rotation of a part of each head. */
static size_t read_qwen3_5(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    static const char kTypes[] = "each must be linear_attention or full_attention";
    const json_t* const types = get(root, "layer_types");
    const json_t* rp = get(root, "rope_parameters");
    long long kernel = 4, keyDim = 128, valueDim = 128, keyHeads = 16, valueHeads = 32, interval = 4;
    double partial = 0.25;
    unsigned l;
    if (types && (!json_is_array(types) || json_array_size(types) != c->nbLayers))
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "layer_types", types,
                      "it must be a list of num_hidden_layers (%u) names", c->nbLayers);
    FORWARD_IF_ERROR(get_int(root, NULL, "full_attention_interval", 1, GLYD_MAX_LAYERS, &interval, r));
    for (l = 0; l < c->nbLayers; l++) {
        int linear = (l + 1) % (unsigned long long)interval != 0; /* transformers' default pattern */
        if (types) {
            const char* const t = json_string_value(json_array_get(types, l));
            char key[32];
            snprintf(key, sizeof key, "layer_types[%u]", l);
            if (!t || (strcmp(t, "linear_attention") && strcmp(t, "full_attention")))
                return refuse(r, GLYD_ERROR(model_unsupported), NULL, key, json_array_get(types, l),
                              "%s (no other kind of layer is supported)", kTypes);
            linear = !strcmp(t, "linear_attention");
        }
        if (linear) { c->linearLayers[l / 8] |= (uint8_t)(1u << (l % 8)); c->nbLinear++; }
    }
    FORWARD_IF_ERROR(get_int(root, NULL, "linear_conv_kernel_dim", 1, 64, &kernel, r));
    FORWARD_IF_ERROR(get_int(root, NULL, "linear_key_head_dim", 1, 4096, &keyDim, r));
    FORWARD_IF_ERROR(get_int(root, NULL, "linear_value_head_dim", 1, 4096, &valueDim, r));
    FORWARD_IF_ERROR(get_int(root, NULL, "linear_num_key_heads", 1, 4096, &keyHeads, r));
    FORWARD_IF_ERROR(get_int(root, NULL, "linear_num_value_heads", 1, 4096, &valueHeads, r));
    if (valueHeads % keyHeads != 0)
        return refuse(r, GLYD_ERROR(model_invalid), NULL, "linear_num_value_heads", get(root, "linear_num_value_heads"),
                      "it must be a multiple of linear_num_key_heads (%lld)", keyHeads);
    if ((2 * keyHeads * keyDim + valueHeads * valueDim) > GLYD_MAX_WIDTH) {
        say(r, "config.json: the linear attention's q, k and v are %lld wide: at most %u", 2 * keyHeads * keyDim +
            valueHeads * valueDim, GLYD_MAX_WIDTH);
        return GLYD_ERROR(model_invalid);
    }
    c->linearConv = (unsigned)kernel;
    c->linearKeyDim = (unsigned)keyDim;
    c->linearValueDim = (unsigned)valueDim;
    c->linearKeyHeads = (unsigned)keyHeads;
    c->linearValueHeads = (unsigned)valueHeads;
    /* the rotation: transformers' default quarter of each head, from
     * rope_parameters or the top level; mrope's sections give every
     * section the same position for text, which is plain RoPE */
    if (c->rope != GLYD_ROPE_NONE)
        return refuse(r, GLYD_ERROR(model_unsupported), NULL, "rope_parameters", rp,
                      "Qwen3.5 runs with rope_type default only");
    FORWARD_IF_ERROR(get_num(root, NULL, "partial_rotary_factor", FLT_MIN, 1.0, "it must be a number in (0, 1]",
                             &partial, r));
    if (rp) FORWARD_IF_ERROR(get_num(rp, "rope_parameters", "partial_rotary_factor", FLT_MIN, 1.0,
                                     "it must be a number in (0, 1]", &partial, r));
    c->rotaryDim = (unsigned)(c->headDim * partial); /* Python's int(): toward zero */
    if (c->rotaryDim < 2 || c->rotaryDim % 2 != 0) {
        say(r, "config.json: partial_rotary_factor %g of head_dim %u turns %u dims: it must be an even number, "
               "at least 2", partial, c->headDim, c->rotaryDim);
        return GLYD_ERROR(model_invalid);
    }
    c->qkNorm = 1;
    c->attnGate = 1;
    c->normOffset = 1;
    return 0;
}

static size_t read_text(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    FORWARD_IF_ERROR(read_sizes(c, root, r));
    FORWARD_IF_ERROR(read_layers(c, root, r));
    FORWARD_IF_ERROR(read_moe(c, root, r));
    if (c->arch == GLYD_ARCH_GEMMA3) FORWARD_IF_ERROR(read_gemma(c, root, r));
    else FORWARD_IF_ERROR(read_rope(c, root, r));
    if (c->arch == GLYD_ARCH_MISTRAL) FORWARD_IF_ERROR(read_mistral(c, root, r));
    if (c->arch == GLYD_ARCH_QWEN3_5) FORWARD_IF_ERROR(read_qwen3_5(c, root, r));
    FORWARD_IF_ERROR(get_token(root, "bos_token_id", c->vocab, &c->bos, r));
    return get_token(root, "eos_token_id", c->vocab, &c->eos, r);
}

static size_t read_config(glyd_llmConfig* c, const json_t* root, const reason* r)
{
    const json_t* text;
    size_t err;
    FORWARD_IF_ERROR(read_architecture(c, root, r));
    if (!c->nestedText) return read_text(c, root, r);
    /* Qwen3_5ForConditionalGeneration: the text model's keys under
     * text_config; a reason names them there */
    text = get(root, "text_config");
    if (!json_is_object(text)) {
        if (!text) say(r, "config.json: text_config is missing");
        else refuse(r, GLYD_ERROR(model_invalid), NULL, "text_config", text, "it must be an object");
        return GLYD_ERROR(model_invalid);
    }
    err = read_text(c, text, r);
    if (glyd_isError(err)) {
        in_text_config(r);
        return err;
    }
    /* the top level's tying, where it says, is the model's */
    return get_bool(root, "tie_word_embeddings", &c->tied, r);
}

size_t glyd_llmConfigParse(glyd_llmConfig* c, const char* text, size_t size, char* why, size_t whyCap)
{
    reason const r = { why, whyCap };
    json_error_t jerr;
    json_t* const root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
    size_t err;
    memset(c, 0, sizeof(*c));
    if (!root) {
        char* p;
        say(&r, "config.json: line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        /* the parser quotes the input near the fault: keep it one line */
        for (p = why; p && whyCap && *p; p++) if ((unsigned char)*p < 0x20) *p = ' ';
        return GLYD_ERROR(model_invalid);
    }
    if (json_is_object(root)) {
        json_t* gemma = NULL;
        int multimodal = 0;
        err = gemma_text(root, &gemma, &multimodal, &r);
        if (!glyd_isError(err)) err = read_config(c, gemma ? gemma : root, &r);
        if (glyd_isError(err) && multimodal) in_text_config(&r);
        c->multimodal = multimodal;
        json_decref(gemma);
    } else {
        say(&r, "config.json: not a JSON object");
        err = GLYD_ERROR(model_invalid);
    }
    json_decref(root);
    if (glyd_isError(err)) memset(c, 0, sizeof(*c));
    return err;
}

#define PI 3.14159265358979323846 /* Python's math.pi */

/* yarn's correction range: the pair whose wavelength fits `rotations`
 * times in the original context (transformers' find_correction_dim) */
static double yarn_dim(double rotations, double dim, double base, double maxPos)
{
    return dim * log(maxPos / (rotations * 2 * PI)) / (2 * log(base));
}

/* llama3 divides the frequency of the pairs whose wavelength is longer
 * than original_max_position_embeddings / low_freq_factor by the factor,
 * keeps that of the pairs shorter than original_max_position_embeddings /
 * high_freq_factor, and blends the two in between. The arithmetic is
 * transformers' float32, step by step, so that the frequencies are its own
 * to the bit: torch rounds each Python number to float, and divides a
 * number by a tensor as the tensor's reciprocal times the number. */
static void llama3_frequencies(const glyd_llmConfig* c, float* invFreq, unsigned half)
{
    double const context = c->ropeOriginalMax;
    float const factor = (float)c->ropeFactor;
    float const lowFactor = (float)c->llama3LowFreqFactor;
    float const band = (float)(c->llama3HighFreqFactor - c->llama3LowFreqFactor);
    float const lowFreqWavelen = (float)(context / c->llama3LowFreqFactor);
    float const highFreqWavelen = (float)(context / c->llama3HighFreqFactor);
    unsigned i;
    for (i = 0; i < half; i++) {
        float const f = invFreq[i];
        float const wavelen = 1.0f / f * (float)(2 * PI);
        if (wavelen > lowFreqWavelen) {
            invFreq[i] = f / factor;
        } else if (!(wavelen < highFreqWavelen)) {
            /* a product and a sum in one expression may be fused into one
             * rounding (clang's default): keep them apart, as torch does */
            float const turns = 1.0f / wavelen * (float)context;
            float const smooth = (turns - lowFactor) / band;
            float const divided = (1.0f - smooth) * f / factor;
            float const kept = smooth * f;
            invFreq[i] = divided + kept;
        }
    }
}

void glyd_ropeFrequencies(const glyd_llmConfig* c, float* invFreq, float* scale)
{
    /* the whole head unless the config turns only a part (0: not said) */
    unsigned const rotary = c->rotaryDim ? c->rotaryDim : c->headDim;
    unsigned const half = rotary / 2;
    unsigned i;
    *scale = 1.0f;
    for (i = 0; i < half; i++) {
        /* as torch does it: base ** (2i / d) in float32, then its inverse */
        float const expo = (float)(2 * i) / (float)rotary;
        invFreq[i] = 1.0f / powf((float)c->ropeTheta, expo);
    }
    if (c->rope == GLYD_ROPE_LINEAR) {
        for (i = 0; i < half; i++) invFreq[i] /= (float)c->ropeFactor;
    } else if (c->rope == GLYD_ROPE_YARN) {
        double const factor = c->ropeFactor;
        double low = floor(yarn_dim(c->yarnBetaFast, c->headDim, c->ropeTheta, c->ropeOriginalMax));
        double high = ceil(yarn_dim(c->yarnBetaSlow, c->headDim, c->ropeTheta, c->ropeOriginalMax));
        low = GLYD_MAX(low, 0.0);
        high = GLYD_MIN(high, (double)c->headDim - 1);
        if (low == high) high += 0.001;
        for (i = 0; i < half; i++) {
            /* pairs below `low` keep their frequency (extrapolation), those
             * above `high` are divided by the factor (interpolation) */
            float const ramp = (float)GLYD_MIN(GLYD_MAX(((double)i - low) / (high - low), 0.0), 1.0);
            float const extrapolation = 1.0f - ramp;
            float const inter = invFreq[i] / (float)factor;
            invFreq[i] = inter * (1.0f - extrapolation) + invFreq[i] * extrapolation;
        }
        *scale = c->yarnAttentionFactor > 0 ? (float)c->yarnAttentionFactor
                                            : (float)(factor > 1 ? 0.1 * log(factor) + 1.0 : 1.0);
    } else if (c->rope == GLYD_ROPE_LLAMA3) {
        llama3_frequencies(c, invFreq, half);
    }
}

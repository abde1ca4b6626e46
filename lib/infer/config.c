/*
 * config.c: the fields of a Hugging Face config.json that the forward pass
 * needs, with the defaults transformers applies, and the rotary embedding's
 * frequencies (plain, linear and yarn scaling) computed as transformers
 * computes them.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "infer.h"

static void say(char* why, size_t cap, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char* why, size_t cap, const char* fmt, ...)
{
    va_list ap;
    if (!why || !cap) return;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

static long long get_int(const json_t* o, const char* key, long long dflt)
{
    const json_t* const j = json_object_get(o, key);
    return json_is_integer(j) ? (long long)json_integer_value(j) : dflt;
}

static double get_num(const json_t* o, const char* key, double dflt)
{
    const json_t* const j = json_object_get(o, key);
    return json_is_number(j) ? json_number_value(j) : dflt;
}

/* A token id, or the first of a list of them (eos_token_id may be either). */
static long long get_token(const json_t* o, const char* key)
{
    const json_t* const j = json_object_get(o, key);
    if (json_is_integer(j)) return (long long)json_integer_value(j);
    if (json_is_array(j) && json_is_integer(json_array_get(j, 0))) return (long long)json_integer_value(json_array_get(j, 0));
    return -1;
}

size_t glyd_llmConfigParse(glyd_llmConfig* c, const char* text, size_t size, char* why, size_t whyCap)
{
    json_error_t jerr;
    json_t* const root = json_loadb(text, size, 0, &jerr);
    const json_t* arch;
    const char* name = "";
    const json_t* rs;
    long long dim, heads, kv, headDim, layers, hidden, vocab;
    memset(c, 0, sizeof(*c));
    if (!root || !json_is_object(root)) {
        say(why, whyCap, "config.json is not a JSON object (line %d: %s)", jerr.line, jerr.text);
        json_decref(root);
        RETURN_ERROR(model_invalid, "config");
    }
    arch = json_object_get(root, "architectures");
    if (json_is_array(arch) && json_is_string(json_array_get(arch, 0))) name = json_string_value(json_array_get(arch, 0));
    if (!strcmp(name, "LlamaForCausalLM")) c->arch = GLYD_ARCH_LLAMA;
    else if (!strcmp(name, "Qwen2ForCausalLM")) c->arch = GLYD_ARCH_QWEN2;
    else if (!strcmp(name, "Qwen3ForCausalLM")) c->arch = GLYD_ARCH_QWEN3;
    else {
        say(why, whyCap, "architecture \"%s\" is not supported (LlamaForCausalLM, Qwen2ForCausalLM and "
                         "Qwen3ForCausalLM are)", *name ? name : "(none)");
        json_decref(root);
        RETURN_ERROR(model_unsupported, "architecture");
    }
    dim = get_int(root, "hidden_size", 0);
    heads = get_int(root, "num_attention_heads", 0);
    kv = get_int(root, "num_key_value_heads", heads);
    headDim = get_int(root, "head_dim", heads > 0 ? dim / heads : 0);
    layers = get_int(root, "num_hidden_layers", 0);
    hidden = get_int(root, "intermediate_size", 0);
    vocab = get_int(root, "vocab_size", 0);
    if (dim <= 0 || heads <= 0 || kv <= 0 || headDim <= 0 || layers <= 0 || hidden <= 0 || vocab <= 0 ||
        heads % kv != 0 || headDim % 2 != 0 || dim > (1 << 20) || hidden > (1 << 22) || vocab > (1 << 24) ||
        layers > 4096 || heads * headDim > (1 << 20)) {
        say(why, whyCap, "config.json: sizes missing or inconsistent (hidden_size %lld, heads %lld/%lld, "
                         "head_dim %lld, layers %lld, intermediate_size %lld, vocab_size %lld)",
            dim, heads, kv, headDim, layers, hidden, vocab);
        json_decref(root);
        RETURN_ERROR(model_invalid, "config sizes");
    }
    {
        const char* const act = json_string_value(json_object_get(root, "hidden_act"));
        if (act && strcmp(act, "silu") != 0) {
            say(why, whyCap, "activation \"%s\" is not supported (silu is)", act);
            json_decref(root);
            RETURN_ERROR(model_unsupported, "activation");
        }
    }
    c->dim = (unsigned)dim;
    c->nbHeads = (unsigned)heads;
    c->nbKvHeads = (unsigned)kv;
    c->headDim = (unsigned)headDim;
    c->nbLayers = (unsigned)layers;
    c->hidden = (unsigned)hidden;
    c->vocab = (unsigned)vocab;
    c->maxPositions = (unsigned)GLYD_MAX(get_int(root, "max_position_embeddings", 2048), 1);
    c->normEps = (float)get_num(root, "rms_norm_eps", 1e-6);
    c->tied = json_is_true(json_object_get(root, "tie_word_embeddings"));
    c->qkvBias = c->arch == GLYD_ARCH_QWEN2 || json_is_true(json_object_get(root, "attention_bias"));
    c->qkNorm = c->arch == GLYD_ARCH_QWEN3;
    /* transformers 5 writes rope_parameters, with rope_theta inside */
    rs = json_object_get(root, "rope_scaling");
    if (!json_is_object(rs)) rs = json_object_get(root, "rope_parameters");
    c->ropeTheta = get_num(root, "rope_theta", get_num(rs, "rope_theta", 10000.0));
    c->bos = get_token(root, "bos_token_id");
    c->eos = get_token(root, "eos_token_id");
    if (json_is_true(json_object_get(root, "mlp_bias"))) {
        say(why, whyCap, "MLP biases are not supported");
        json_decref(root);
        RETURN_ERROR(model_unsupported, "mlp bias");
    }
    c->rope = GLYD_ROPE_NONE;
    if (json_is_object(rs)) {
        const char* kind = json_string_value(json_object_get(rs, "rope_type"));
        if (!kind) kind = json_string_value(json_object_get(rs, "type"));
        c->ropeFactor = get_num(rs, "factor", 1.0);
        if (!kind || !strcmp(kind, "default")) {
            c->rope = GLYD_ROPE_NONE;
        } else if (!strcmp(kind, "linear")) {
            c->rope = GLYD_ROPE_LINEAR;
        } else if (!strcmp(kind, "yarn")) {
            c->rope = GLYD_ROPE_YARN;
            c->ropeOriginalMax = (unsigned)get_int(rs, "original_max_position_embeddings", c->maxPositions);
            c->yarnBetaFast = get_num(rs, "beta_fast", 32.0);
            c->yarnBetaSlow = get_num(rs, "beta_slow", 1.0);
            c->yarnAttentionFactor = get_num(rs, "attention_factor", 0.0);
        } else {
            say(why, whyCap, "rope_scaling \"%s\" is not supported (linear and yarn are)", kind);
            json_decref(root);
            RETURN_ERROR(model_unsupported, "rope scaling");
        }
        if (c->rope != GLYD_ROPE_NONE && !(c->ropeFactor > 0)) {
            say(why, whyCap, "rope_scaling: factor must be positive");
            json_decref(root);
            RETURN_ERROR(model_invalid, "rope factor");
        }
    }
    json_decref(root);
    return 0;
}

/* yarn's correction range: the pair whose wavelength fits `rotations`
 * times in the original context (transformers' find_correction_dim) */
static double yarn_dim(double rotations, double dim, double base, double maxPos)
{
    return dim * log(maxPos / (rotations * 2 * 3.14159265358979323846)) / (2 * log(base));
}

void glyd_ropeFrequencies(const glyd_llmConfig* c, float* invFreq, float* scale)
{
    unsigned const half = c->headDim / 2;
    unsigned i;
    *scale = 1.0f;
    for (i = 0; i < half; i++) {
        /* as torch does it: base ** (2i / d) in float32, then its inverse */
        float const expo = (float)(2 * i) / (float)c->headDim;
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
    }
}

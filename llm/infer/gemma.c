/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gemma.c: what Mistral and Gemma 3 add to the forward pass of Llama's
 * family, as transformers computes it:
 *
 *   - sliding-window attention (Mistral's every layer, Gemma 3's
 *     sliding_attention ones): the query at position q sees the keys of
 *     positions q - window + 1 .. q, the mask of transformers'
 *     masking_utils (kv_idx > q_idx - sliding_window);
 *   - Gemma 3: the embedding scaled by sqrt(hidden_size), norms of
 *     x * (1 + w), GELU (tanh form) in the gated MLP, the attention scaled by
 *     query_pre_attn_scalar, the sliding layers' own rotation, and the
 *     logits' soft cap.
 *
 * The cache still holds every position of every layer: a sliding layer
 * masks the keys before its window rather than dropping them, so that a
 * pass may start again at any earlier position (the chat rewrites replies)
 * and find the keys its window needs.
 */
#include <math.h>
#include <stdio.h>

#include "infer.h"

/* the config's table of sliding layers has room for every layer it allows */
typedef char glyd_sliding_table_fits[sizeof(((glyd_llmConfig*)0)->sliding) == GLYD_MAX_LAYERS ? 1 : -1];

size_t glyd_attendFrom(const glyd_llmConfig* c, unsigned l, size_t pos)
{
    if (!c->slidingWindow || !c->sliding[l] || pos < c->slidingWindow) return 0;
    return pos + 1 - c->slidingWindow;
}

float glyd_attendScale(const glyd_llmConfig* c)
{
    /* Gemma's scale is a Python float, query_pre_attn_scalar ** -0.5,
     * rounded to float where it multiplies */
    if (c->queryPreAttnScalar > 0) return (float)pow(c->queryPreAttnScalar, -0.5);
    return 1.0f / sqrtf((float)c->headDim);
}

void glyd_ropeLocalFrequencies(const glyd_llmConfig* c, float* invFreq, float* scale)
{
    glyd_llmConfig local = *c;
    local.ropeTheta = c->localRopeTheta;
    local.rope = c->localRope;
    local.ropeFactor = c->localRopeFactor;
    glyd_ropeFrequencies(&local, invFreq, scale);
}

float glyd_embedScale(const glyd_llmConfig* c)
{
    /* hidden_size ** 0.5 in double, made a float32 tensor: the fp32
     * reference's factor (a bf16 model would round it to bf16) */
    return c->gemma ? (float)sqrt((double)c->dim) : 1.0f;
}

/* transformers adds 1 in float32 too, so that (x * ss) * (1 + w) is the
 * engine's product of the same two floats */
static void plus_one(float* w, size_t n)
{
    size_t i;
    for (i = 0; w && i < n; i++) w[i] = 1.0f + w[i];
}

void glyd_offsetNorms(const glyd_llmConfig* c, glyd_layer* layers, float* finalNorm)
{
    unsigned l;
    if (!c->normOffset) return;
    for (l = 0; l < c->nbLayers; l++) {
        glyd_layer* const L = &layers[l];
        plus_one(L->attnNorm, c->dim);
        plus_one(L->mlpNorm, c->dim);
        plus_one(L->postAttnNorm, c->dim);
        plus_one(L->postMlpNorm, c->dim);
        plus_one(L->qNorm, c->headDim);
        plus_one(L->kNorm, c->headDim);
    }
    plus_one(finalNorm, c->dim);
}

/* torch's GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
static float gelu_tanh(float x)
{
    float const beta = 0.7978845608028654f; /* sqrt(2 / pi) */
    float const inner = beta * (x + 0.044715f * (x * x * x));
    return 0.5f * x * (1.0f + tanhf(inner));
}

void glyd_gatedActivation(const glyd_llmConfig* c, float* gate, const float* up, size_t n)
{
    size_t i;
    if (c->gemma) {
        for (i = 0; i < n; i++) gate[i] = gelu_tanh(gate[i]) * up[i];
    } else {
        glyd_swiglu(gate, up, n);
    }
}

void glyd_logitSoftcap(const glyd_llmConfig* c, float* x, size_t n)
{
    float const cap = (float)c->finalSoftcap;
    size_t i;
    if (!(c->finalSoftcap > 0)) return;
    for (i = 0; i < n; i++) x[i] = tanhf(x[i] / cap) * cap;
}

int glyd_gpuRefuses(const glyd_llmConfig* c, unsigned long long ctx, char* why, size_t whyCap)
{
    if (c->gemma) {
        snprintf(why, whyCap, "Gemma 3 runs on the CPU only (the GPU backend has no Gemma norms, "
                              "GELU or sliding windows)");
        return 1;
    }
    /* a window at least the context's length never masks anything */
    if (c->slidingWindow && c->slidingWindow < ctx) {
        snprintf(why, whyCap, "sliding_window %u under a context of %llu positions runs on the CPU only (the GPU "
                              "backend has no sliding windows)", c->slidingWindow, ctx);
        return 1;
    }
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_config.c: hostile config.json for the engine's reader. A refusal is
 * one line naming config.json; a config it accepts holds every invariant
 * the engine relies on (shapes in bounds and in agreement, 64-bit products
 * that do not overflow, token ids in the vocabulary, finite rotary
 * frequencies and norm epsilon), and aborts the fuzzer otherwise. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../llm/infer/infer.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

/* a * b into *p, false on overflow */
static int mul(uint64_t a, uint64_t b, uint64_t* p) { return !__builtin_mul_overflow(a, b, p); }

static void check_sizes(const glyd_llmConfig* c)
{
    uint64_t qDim, kvDim, perLayer, t, total, kv;
    REQUIRE(c->arch == GLYD_ARCH_LLAMA || c->arch == GLYD_ARCH_QWEN2 || c->arch == GLYD_ARCH_QWEN3 ||
            c->arch == GLYD_ARCH_QWEN3_MOE || c->arch == GLYD_ARCH_MIXTRAL || c->arch == GLYD_ARCH_QWEN3_5 ||
            c->arch == GLYD_ARCH_MISTRAL || c->arch == GLYD_ARCH_GEMMA3);
    REQUIRE(c->dim >= 1 && c->dim <= GLYD_MAX_WIDTH);
    REQUIRE(c->hidden >= 1 && c->hidden <= GLYD_MAX_MLP);
    REQUIRE(c->vocab >= 1 && c->vocab <= GLYD_MAX_VOCAB);
    REQUIRE(c->nbLayers >= 1 && c->nbLayers <= GLYD_MAX_LAYERS);
    REQUIRE(c->nbHeads >= 1 && c->nbKvHeads >= 1 && c->nbHeads % c->nbKvHeads == 0);
    REQUIRE(c->headDim >= 2 && c->headDim % 2 == 0);
    REQUIRE(c->rotaryDim >= 2 && c->rotaryDim % 2 == 0 && c->rotaryDim <= c->headDim);
    REQUIRE((uint64_t)c->nbHeads * c->headDim <= GLYD_MAX_WIDTH);
    REQUIRE(c->maxPositions >= 1 && c->maxPositions <= GLYD_MAX_POSITIONS);
    /* the weights' elements and the KV cache's bytes (fp32, at the model's
     * full context), as the engine sizes them */
    qDim = (uint64_t)c->nbHeads * c->headDim;
    kvDim = (uint64_t)c->nbKvHeads * c->headDim;
    REQUIRE(mul(c->dim, qDim + 2 * kvDim, &perLayer) && mul(qDim, c->dim, &t) && perLayer + t >= t);
    perLayer += t;
    REQUIRE(mul(3ULL * c->dim, c->hidden, &t) && perLayer + t >= t);
    perLayer += t;
    REQUIRE(mul(perLayer, c->nbLayers, &total) && mul(2ULL * c->vocab, c->dim, &t) && total + t >= t);
    total += t;
    REQUIRE(total < (1ULL << 62));
    REQUIRE(mul(2ULL * 4 * c->nbLayers, kvDim, &kv) && mul(kv, c->maxPositions, &kv) && kv < (1ULL << 62));
}

static void check_numbers(const glyd_llmConfig* c)
{
    unsigned const half = c->rotaryDim / 2; /* the pairs that turn */
    float* const invFreq = (float*)malloc(half * sizeof(float));
    float scale = 0;
    unsigned i;
    REQUIRE(isfinite(c->normEps) && c->normEps >= FLT_MIN);
    REQUIRE(c->ropeTheta > 1 && c->ropeTheta <= FLT_MAX);
    REQUIRE(c->rope == GLYD_ROPE_NONE || c->rope == GLYD_ROPE_LINEAR || c->rope == GLYD_ROPE_YARN ||
            c->rope == GLYD_ROPE_LLAMA3);
    if (c->rope != GLYD_ROPE_NONE) REQUIRE(c->ropeFactor >= 1 && c->ropeFactor <= GLYD_MAX_POSITIONS);
    if (c->rope == GLYD_ROPE_YARN || c->rope == GLYD_ROPE_LLAMA3)
        REQUIRE(c->ropeOriginalMax >= 1 && c->ropeOriginalMax <= GLYD_MAX_POSITIONS);
    if (c->rope == GLYD_ROPE_LLAMA3) {
        REQUIRE(c->llama3LowFreqFactor >= FLT_MIN && c->llama3HighFreqFactor <= FLT_MAX);
        REQUIRE(c->llama3HighFreqFactor - c->llama3LowFreqFactor >= FLT_MIN);
    }
    if (c->rope == GLYD_ROPE_YARN) {
        REQUIRE(isfinite(c->yarnBetaFast) && isfinite(c->yarnBetaSlow) && c->yarnBetaSlow > 0);
        REQUIRE(c->yarnBetaFast > c->yarnBetaSlow);
        REQUIRE(isfinite(c->yarnAttentionFactor) && c->yarnAttentionFactor >= 0);
    }
    REQUIRE(c->bos >= -1 && c->bos < (long long)c->vocab);
    REQUIRE(c->eos >= -1 && c->eos < (long long)c->vocab);
    /* every rotation angle, pos * invFreq up to the longest context, is
     * finite in float. The scalings lower the frequencies, but llama3's
     * smoothing, rounded as transformers rounds it, can step out of
     * [0, 1] at its band's edges (far out where the band is narrower than
     * float's precision). */
    REQUIRE(invFreq != NULL);
    glyd_ropeFrequencies(c, invFreq, &scale);
    REQUIRE(isfinite(scale) && scale > 0);
    for (i = 0; i < half; i++) {
        REQUIRE(isfinite(invFreq[i]) && fabsf(invFreq[i]) <= FLT_MAX / GLYD_MAX_POSITIONS);
        if (c->rope != GLYD_ROPE_LLAMA3) REQUIRE(invFreq[i] >= 0 && invFreq[i] <= 1);
    }
    free(invFreq);
}

/* The mixtures of experts' shapes, with every expert's bytes within the
 * 2^60 that keeps the engine's sums of sizes from overflowing; Qwen3.5's
 * linear layers and its part of a head that turns; nothing of either in
 * the other families. */
static void check_experts_and_linear(const glyd_llmConfig* c)
{
    int const moe = c->arch == GLYD_ARCH_QWEN3_MOE || c->arch == GLYD_ARCH_MIXTRAL;
    uint64_t bytes, width;
    unsigned l, linear = 0;
    REQUIRE(c->nbExperts <= GLYD_MAX_EXPERTS && (moe || c->nbExperts == 0));
    if (c->nbExperts) {
        REQUIRE(c->nbExpertsUsed >= 1 && c->nbExpertsUsed <= c->nbExperts);
        REQUIRE(c->moeHidden >= 1 && c->moeHidden <= GLYD_MAX_MLP && c->moeSparseStep >= 1);
        REQUIRE(mul(6ULL * c->nbLayers, c->nbExperts, &bytes) && mul(bytes, c->moeHidden, &bytes) &&
                mul(bytes, c->dim, &bytes) && bytes <= (1ULL << 60));
    }
    for (l = 0; l < GLYD_MAX_LAYERS; l++) {
        REQUIRE(l < c->nbLayers || !glyd_layerIsLinear(c, l));
        linear += glyd_layerIsLinear(c, l);
    }
    REQUIRE(linear == c->nbLinear);
    if (c->arch == GLYD_ARCH_QWEN3_5) {
        REQUIRE(c->linearKeyHeads >= 1 && c->linearValueHeads % c->linearKeyHeads == 0);
        REQUIRE(c->linearKeyDim >= 1 && c->linearValueDim >= 1 && c->linearConv >= 1);
        width = 2ULL * c->linearKeyHeads * c->linearKeyDim + (uint64_t)c->linearValueHeads * c->linearValueDim;
        REQUIRE(width <= GLYD_MAX_WIDTH);
        REQUIRE(c->rotaryDim >= 2 && c->rotaryDim % 2 == 0 && c->rotaryDim <= c->headDim);
    } else {
        REQUIRE(c->nbLinear == 0 && !c->attnGate && !c->nestedText && c->rotaryDim == c->headDim);
    }
    REQUIRE(c->normOffset == (c->arch == GLYD_ARCH_QWEN3_5 || c->arch == GLYD_ARCH_GEMMA3));
}

/* Mistral's and Gemma 3's: a window in range, sliding layers only where
 * there is one, and Gemma 3's scale, cap and local rotation finite. */
static void check_windows(const glyd_llmConfig* c)
{
    unsigned const half = c->headDim / 2;
    float* const invFreq = (float*)malloc(half * sizeof(float));
    float scale = 0;
    unsigned l, i;
    REQUIRE(c->slidingWindow <= GLYD_MAX_POSITIONS);
    for (l = 0; l < GLYD_MAX_LAYERS; l++) {
        REQUIRE(c->sliding[l] <= 1 && (l < c->nbLayers || !c->sliding[l]));
        if (c->arch == GLYD_ARCH_MISTRAL && l < c->nbLayers) REQUIRE(c->sliding[l] == (c->slidingWindow > 0));
        if (c->arch != GLYD_ARCH_MISTRAL && c->arch != GLYD_ARCH_GEMMA3) REQUIRE(!c->sliding[l]);
        if (c->sliding[l]) REQUIRE(c->slidingWindow >= 1);
    }
    REQUIRE(c->gemma == (c->arch == GLYD_ARCH_GEMMA3) && (!c->multimodal || c->gemma));
    REQUIRE(invFreq != NULL);
    if (c->gemma) {
        REQUIRE(c->queryPreAttnScalar >= FLT_MIN && c->queryPreAttnScalar <= FLT_MAX);
        REQUIRE(isfinite(glyd_attendScale(c)) && glyd_attendScale(c) > 0);
        REQUIRE(c->finalSoftcap == 0 || (c->finalSoftcap >= FLT_MIN && c->finalSoftcap <= FLT_MAX));
        REQUIRE(c->localRopeTheta > 1 && c->localRopeTheta <= FLT_MAX);
        REQUIRE(c->localRope == GLYD_ROPE_NONE || c->localRope == GLYD_ROPE_LINEAR);
        REQUIRE(c->localRopeFactor >= 1 && c->localRopeFactor <= GLYD_MAX_POSITIONS);
        glyd_ropeLocalFrequencies(c, invFreq, &scale);
        REQUIRE(scale == 1.0f);
        for (i = 0; i < half; i++) REQUIRE(isfinite(invFreq[i]) && invFreq[i] >= 0 && invFreq[i] <= 1);
    } else {
        REQUIRE(c->queryPreAttnScalar == 0 && c->finalSoftcap == 0);
    }
    free(invFreq);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    glyd_llmConfig c;
    char why[512] = "";
    if (glyd_isError(glyd_llmConfigParse(&c, (const char*)data, size, why, sizeof why))) {
        REQUIRE(strncmp(why, "config.json: ", 13) == 0 && strchr(why, '\n') == NULL);
        return 0;
    }
    check_sizes(&c);
    check_numbers(&c);
    check_experts_and_linear(&c);
    check_windows(&c);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * deltanet.c: Qwen3.5's Gated DeltaNet layers (linear attention), as
 * transformers' Qwen3_5GatedDeltaNet defines them, and the output gate of
 * its full-attention layers. For each token of a layer:
 *
 *   qkv = Wqkv h ; z = Wz h ; b = Wb h ; a = Wa h
 *   qkv = silu(causal depthwise conv1d of qkv over the last K tokens)
 *   q, k, v = split(qkv) ; q, k = l2norm of each key head ; q /= sqrt(dk)
 *   per value head (sharing key head h / (vHeads / kHeads)):
 *     S *= exp(-exp(A_log) * softplus(a + dt_bias))
 *     S += k (sigmoid(b) (v - S^T k))^T        (the delta rule)
 *     o = S^T q
 *   x += Wout (rmsnorm(o) * w * silu(z))        (per value head)
 *
 * The products of a batch of tokens run together (their rows decoded once);
 * the convolution runs token after token, and the recurrence (delta_rule.c)
 * each value head through the batch's tokens in turn, in prompts as in
 * decoding: a token's numbers are then the same whether it came in a batch
 * or alone, to the bit. Asked for, a prompt's batches run the chunked form
 * instead (delta_chunk.c: products over blocks of 16 tokens), which rounds
 * otherwise; `make bench-deltanet` measures the two.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"

struct glyd_deltaNet_s {
    unsigned* slot;     /* (nbLayers): a linear layer's index among them */
    float* convState;   /* (nbLinear, convDim, K - 1): the last K - 1 inputs, oldest first */
    float* state;       /* (nbLinear, vHeads, keyDim, valueDim) */
    size_t convStride, stateStride;
    unsigned nbLinear;
    float *qkv, *z, *b, *a; /* (batch, convDim) (batch, values) (batch, vHeads) x2 */
    float* core;        /* (batch, values): the heads' outputs, then gated */
    float* out;         /* (batch, dim) */
    float* scratch;     /* glyd_deltaRule's or glyd_deltaRuleChunked's */
    int chunked;        /* batches of more than one token in the chunked form */
};

static size_t conv_dim(const glyd_llmConfig* c)
{
    return 2 * (size_t)c->linearKeyHeads * c->linearKeyDim + (size_t)c->linearValueHeads * c->linearValueDim;
}

glyd_deltaNet* glyd_deltaNetCreate(const glyd_llmConfig* c, int chunked)
{
    glyd_deltaNet* const d = (glyd_deltaNet*)calloc(1, sizeof(glyd_deltaNet));
    size_t const cd = conv_dim(c), values = (size_t)c->linearValueHeads * c->linearValueDim;
    unsigned l, n = 0;
    if (!d) return NULL;
    d->convStride = cd * (c->linearConv - 1);
    d->stateStride = (size_t)c->linearValueHeads * c->linearKeyDim * c->linearValueDim;
    d->nbLinear = c->nbLinear;
    d->slot = (unsigned*)calloc(c->nbLayers, sizeof(unsigned));
    /* + 1: a kernel of 1 keeps no inputs */
    d->convState = (float*)calloc((size_t)c->nbLinear * d->convStride + 1, sizeof(float));
    d->state = (float*)calloc((size_t)c->nbLinear * d->stateStride + 1, sizeof(float));
    d->qkv = (float*)calloc((size_t)GLYD_BATCH * cd, sizeof(float));
    d->z = (float*)calloc((size_t)GLYD_BATCH * values, sizeof(float));
    d->b = (float*)calloc((size_t)GLYD_BATCH * c->linearValueHeads, sizeof(float));
    d->a = (float*)calloc((size_t)GLYD_BATCH * c->linearValueHeads, sizeof(float));
    d->core = (float*)calloc((size_t)GLYD_BATCH * values, sizeof(float));
    d->out = (float*)calloc((size_t)GLYD_BATCH * c->dim, sizeof(float));
    d->chunked = chunked;
    d->scratch = (float*)calloc(chunked ? glyd_deltaChunkWork(c->linearKeyDim, c->linearValueDim)
                                        : 3 * (size_t)c->linearValueDim,
                                sizeof(float));
    if (!d->slot || !d->convState || !d->state || !d->qkv || !d->z || !d->b || !d->a || !d->core || !d->out ||
        !d->scratch) {
        glyd_deltaNetFree(d);
        return NULL;
    }
    for (l = 0; l < c->nbLayers; l++) if (glyd_layerIsLinear(c, l)) d->slot[l] = n++;
    return d;
}

void glyd_deltaNetFree(glyd_deltaNet* d)
{
    if (!d) return;
    free(d->slot); free(d->convState); free(d->state);
    free(d->qkv); free(d->z); free(d->b); free(d->a); free(d->core); free(d->out); free(d->scratch);
    free(d);
}

void glyd_deltaNetReset(glyd_deltaNet* d)
{
    memset(d->convState, 0, (size_t)d->nbLinear * d->convStride * sizeof(float));
    memset(d->state, 0, (size_t)d->nbLinear * d->stateStride * sizeof(float));
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* torch's softplus: log(1 + e^x), and x itself above its threshold of 20 */
static float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* x / sqrt(sum x^2 + 1e-6), as transformers' l2norm (its own epsilon) */
static void l2norm(float* x, size_t n)
{
    float ss = 0, inv;
    size_t i;
    for (i = 0; i < n; i++) ss += x[i] * x[i];
    inv = 1.0f / sqrtf(ss + 1e-6f);
    for (i = 0; i < n; i++) x[i] *= inv;
}

/* The causal depthwise convolution of one token's x (convDim channels)
 * over the K - 1 inputs before it, then SiLU, into y; x joins the state. */
static void conv_step(float* y, const float* x, float* st, const float* w, size_t channels, unsigned K)
{
    size_t ch;
    unsigned j;
    for (ch = 0; ch < channels; ch++) {
        float* const s = st + ch * (K - 1);
        const float* const f = w + ch * K;
        float acc = 0;
        for (j = 0; j + 1 < K; j++) acc += f[j] * s[j];
        acc += f[K - 1] * x[ch];
        for (j = 0; j + 2 < K; j++) s[j] = s[j + 1];
        if (K > 1) s[K - 2] = x[ch];
        y[ch] = acc / (1.0f + expf(-acc));
    }
}

size_t glyd_deltaNetLayer(glyd_deltaNet* d, const glyd_llmConfig* c, const glyd_layer* L, unsigned layer,
                          const float* xn, float* x, size_t T, glyd_matmulsFn products, void* opaque)
{
    unsigned const kHeads = c->linearKeyHeads, vHeads = c->linearValueHeads;
    unsigned const dk = c->linearKeyDim, dv = c->linearValueDim, K = c->linearConv;
    unsigned const group = vHeads / kHeads;
    size_t const cd = conv_dim(c), keys = (size_t)kHeads * dk, values = (size_t)vHeads * dv;
    float* const convState = d->convState + d->slot[layer] * d->convStride;
    float* const state = d->state + d->slot[layer] * d->stateStride;
    float const qScale = 1.0f / sqrtf((float)dk);
    size_t t, i;
    unsigned h;
    {
        const glyd_matrix* const w3[3] = { &L->wQkv, &L->wZ, &L->wB };
        float* const y3[3] = { d->qkv, d->z, d->b };
        const glyd_matrix* const wa = &L->wA;
        FORWARD_IF_ERROR(products(opaque, w3, y3, 3, xn, T));
        FORWARD_IF_ERROR(products(opaque, &wa, &d->a, 1, xn, T));
    }
    /* each token's convolution, normalized queries and keys, decays
     * (their logarithms, over a) and betas (over b) */
    for (t = 0; t < T; t++) {
        float* const y = d->qkv + t * cd; /* convolved in place: x is copied into the state first */
        conv_step(y, y, convState, L->conv, cd, K);
        for (h = 0; h < kHeads; h++) {
            l2norm(y + (size_t)h * dk, dk);
            l2norm(y + keys + (size_t)h * dk, dk);
        }
        for (i = 0; i < keys; i++) y[i] *= qScale;
        for (h = 0; h < vHeads; h++) {
            float* const a = d->a + t * vHeads + h;
            float* const b = d->b + t * vHeads + h;
            *a = L->aNeg[h] * softplus(*a + L->dtBias[h]);
            *b = sigmoid(*b);
        }
    }
    /* each head through all the tokens, its state staying in cache */
    for (h = 0; h < vHeads; h++) {
        size_t const kh = (size_t)(h / group) * dk;
        glyd_deltaTokens const tokens = { d->qkv + kh, d->qkv + keys + kh, cd, d->qkv + 2 * keys + (size_t)h * dv, cd,
                                          d->a + h, d->b + h, vHeads, d->core + (size_t)h * dv, values };
        if (d->chunked && T > 1) glyd_deltaRuleChunked(state + (size_t)h * dk * dv, &tokens, T, dk, dv, d->scratch);
        else glyd_deltaRule(state + (size_t)h * dk * dv, &tokens, T, dk, dv, d->scratch);
    }
    /* the gated RMSNorm of each head's output: normalized, weighted, then
     * gated by silu(z) */
    for (t = 0; t < T; t++) {
        for (h = 0; h < vHeads; h++) {
            float* const oh = d->core + t * values + (size_t)h * dv;
            const float* const zh = d->z + t * values + (size_t)h * dv;
            float ss = 0, inv;
            unsigned j;
            for (j = 0; j < dv; j++) ss += oh[j] * oh[j];
            inv = 1.0f / sqrtf(ss / (float)dv + c->normEps);
            for (j = 0; j < dv; j++) oh[j] = gk_swiglu(zh[j], L->gateNorm[j] * (oh[j] * inv));
        }
    }
    {
        const glyd_matrix* const wo = &L->wOut;
        FORWARD_IF_ERROR(products(opaque, &wo, &d->out, 1, d->core, T));
    }
    for (i = 0; i < T * c->dim; i++) x[i] += d->out[i];
    return 0;
}

void glyd_splitQueryGate(float* q, float* gate, size_t T, unsigned nbHeads, unsigned headDim)
{
    size_t const qDim = (size_t)nbHeads * headDim;
    size_t t;
    unsigned h;
    /* token t's queries move down from 2t qDim to t qDim: never over a
     * part not yet read, going forward */
    for (t = 0; t < T; t++) {
        for (h = 0; h < nbHeads; h++) {
            const float* const src = q + 2 * t * qDim + 2 * (size_t)h * headDim;
            memcpy(gate + t * qDim + (size_t)h * headDim, src + headDim, headDim * sizeof(float));
            memmove(q + t * qDim + (size_t)h * headDim, src, headDim * sizeof(float));
        }
    }
}

void glyd_applyOutputGate(float* ao, const float* gate, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) ao[i] *= sigmoid(gate[i]);
}

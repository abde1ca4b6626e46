/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * moe.c: the mixture of experts of Qwen3-MoE and Mixtral, as transformers
 * computes it:
 *
 *   p = softmax(Wrouter h)                    (fp32, over every expert)
 *   the top num_experts_per_tok of p, w = p (Mixtral, and Qwen3-MoE with
 *   norm_topk_prob: divided by their sum)
 *   out = sum over the chosen experts e, in the experts' order, of
 *         w_e * Wdown_e (silu(Wgate_e h) * Wup_e h)
 *
 * Only the chosen experts' matrices are decoded: a batch's tokens are
 * grouped by expert, and each expert chosen by any of them runs once over
 * its group, so that each of its units is decoded once per batch. A
 * token's products are the same bits whatever else is in the batch
 * (glyd_matmulRows), and its sum runs in the experts' order, so a token
 * gets the same output in a batch as alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "infer.h"

int glyd_moeSparse(const glyd_llmConfig* c, unsigned l)
{
    if (!c->nbExperts) return 0;
    if (c->arch == GLYD_ARCH_MIXTRAL) return 1;
    if (c->arch != GLYD_ARCH_QWEN3_MOE || l >= GLYD_MAX_LAYERS) return 0;
    /* Qwen3-MoE: every decoder_sparse_step-th layer, but those of
     * mlp_only_layers */
    if ((c->moeDense[l / 8] >> (l % 8)) & 1) return 0;
    return (l + 1) % c->moeSparseStep == 0;
}

glyd_moeLayer* glyd_moeLayerAlloc(const glyd_llmConfig* c)
{
    glyd_moeLayer* const L = (glyd_moeLayer*)calloc(1, sizeof(glyd_moeLayer));
    if (!L) return NULL;
    L->nbExperts = c->nbExperts;
    L->gate = (glyd_matrix*)calloc(c->nbExperts, sizeof(glyd_matrix));
    L->up = (glyd_matrix*)calloc(c->nbExperts, sizeof(glyd_matrix));
    L->down = (glyd_matrix*)calloc(c->nbExperts, sizeof(glyd_matrix));
    if (!L->gate || !L->up || !L->down) {
        glyd_moeLayerFree(L);
        return NULL;
    }
    return L;
}

void glyd_moeLayerFree(glyd_moeLayer* L)
{
    unsigned e;
    if (!L) return;
    glyd_matrixFree(&L->router);
    for (e = 0; e < L->nbExperts; e++) {
        if (L->gate) glyd_matrixFree(&L->gate[e]);
        if (L->up) glyd_matrixFree(&L->up[e]);
        if (L->down) glyd_matrixFree(&L->down[e]);
    }
    free(L->gate);
    free(L->up);
    free(L->down);
    free(L);
}

void glyd_moeTensorName(const glyd_llmConfig* c, unsigned layer, int expert, unsigned which, char* name,
                        size_t cap)
{
    static const char* const kQwen[3] = { "gate_proj", "up_proj", "down_proj" };
    static const char* const kMixtral[3] = { "w1", "w3", "w2" }; /* w2 is the down projection */
    int const qwen = c->arch == GLYD_ARCH_QWEN3_MOE;
    if (which == 3) /* transformers' fused form, in memory (and in what some tools save) */
        snprintf(name, cap, "model.layers.%u.mlp.experts.gate_up_proj", layer);
    else if (expert < 0)
        snprintf(name, cap, "model.layers.%u.%s.gate.weight", layer, qwen ? "mlp" : "block_sparse_moe");
    else
        snprintf(name, cap, "model.layers.%u.%s.experts.%d.%s.weight", layer, qwen ? "mlp" : "block_sparse_moe",
                 expert, (qwen ? kQwen : kMixtral)[which % 3]);
}

size_t glyd_moeScratchReserve(glyd_decodeScratch* s, const glyd_moeLayer* L)
{
    unsigned e;
    FORWARD_IF_ERROR(glyd_scratchReserve(s, &L->router));
    for (e = 0; e < L->nbExperts; e++) {
        FORWARD_IF_ERROR(glyd_scratchReserve(s, &L->gate[e]));
        FORWARD_IF_ERROR(glyd_scratchReserve(s, &L->up[e]));
        FORWARD_IF_ERROR(glyd_scratchReserve(s, &L->down[e]));
    }
    return 0;
}

struct glyd_moeState_s {
    float* logits;      /* (GLYD_BATCH, nbExperts): the router's */
    unsigned* chosen;   /* (GLYD_BATCH, nbExpertsUsed): each token's experts */
    float* weight;      /* (GLYD_BATCH, nbExpertsUsed): and their weights */
    unsigned* group;    /* (GLYD_BATCH): one expert's tokens */
    float* groupWeight; /* (GLYD_BATCH): and their weights */
    float *xg, *yg;     /* (GLYD_BATCH, dim): their inputs and the expert's outputs */
    float *hg, *hu;     /* (GLYD_BATCH, moeHidden): the expert's gate and up */
};

void glyd_moeStateFree(glyd_moeState* s)
{
    if (!s) return;
    free(s->logits); free(s->chosen); free(s->weight); free(s->group); free(s->groupWeight);
    free(s->xg); free(s->yg); free(s->hg); free(s->hu);
    free(s);
}

glyd_moeState* glyd_moeStateAlloc(const glyd_llmConfig* c)
{
    size_t const B = GLYD_BATCH;
    glyd_moeState* const s = (glyd_moeState*)calloc(1, sizeof(glyd_moeState));
    if (!s) return NULL;
    s->logits = (float*)malloc(B * c->nbExperts * sizeof(float));
    s->chosen = (unsigned*)malloc(B * c->nbExpertsUsed * sizeof(unsigned));
    s->weight = (float*)malloc(B * c->nbExpertsUsed * sizeof(float));
    s->group = (unsigned*)malloc(B * sizeof(unsigned));
    s->groupWeight = (float*)malloc(B * sizeof(float));
    s->xg = (float*)malloc(B * c->dim * sizeof(float));
    s->yg = (float*)malloc(B * c->dim * sizeof(float));
    s->hg = (float*)malloc(B * c->moeHidden * sizeof(float));
    s->hu = (float*)malloc(B * c->moeHidden * sizeof(float));
    if (!s->logits || !s->chosen || !s->weight || !s->group || !s->groupWeight || !s->xg || !s->yg || !s->hg ||
        !s->hu) {
        glyd_moeStateFree(s);
        return NULL;
    }
    return s;
}

/* A token's router logits into its k experts and their weights: the
 * softmax in fp32 (in place: the row becomes probabilities), the k largest
 * probabilities (ties to the lower expert), divided by their sum when the
 * family does so. */
static void route(float* p, unsigned nbExperts, unsigned k, int normalize, unsigned* chosen, float* weight)
{
    float maxv = p[0], sum = 0, picked = 0;
    unsigned e, i;
    for (e = 1; e < nbExperts; e++) if (p[e] > maxv) maxv = p[e];
    for (e = 0; e < nbExperts; e++) { p[e] = expf(p[e] - maxv); sum += p[e]; }
    for (e = 0; e < nbExperts; e++) p[e] /= sum;
    for (i = 0; i < k; i++) {
        unsigned best = nbExperts;
        for (e = 0; e < nbExperts; e++) {
            unsigned j;
            for (j = 0; j < i && chosen[j] != e; j++) continue;
            if (j < i) continue; /* already chosen */
            if (best == nbExperts || p[e] > p[best]) best = e;
        }
        chosen[i] = best;
        weight[i] = p[best];
        picked += p[best];
    }
    if (normalize)
        for (i = 0; i < k; i++) weight[i] /= picked;
}

size_t glyd_moeForward(const glyd_moeLayer* L, const glyd_llmConfig* c, glyd_moeState* s, const float* xn, size_t T,
                       float* out, glyd_matmulsFn matmuls, void* opaque)
{
    size_t const dim = c->dim, K = c->nbExpertsUsed, H = c->moeHidden;
    size_t t, i, d;
    unsigned e;
    RETURN_ERROR_IF(T > GLYD_BATCH, parameter_outOfBound, "batch");
    {
        const glyd_matrix* const router = &L->router;
        float* const y = s->logits;
        FORWARD_IF_ERROR(matmuls(opaque, &router, &y, 1, xn, T));
    }
    for (t = 0; t < T; t++)
        route(s->logits + t * L->nbExperts, L->nbExperts, (unsigned)K, c->moeNormTopk, s->chosen + t * K,
              s->weight + t * K);
    memset(out, 0, T * dim * sizeof(float));
    for (e = 0; e < L->nbExperts; e++) {
        const glyd_matrix* const gateUp[2] = { &L->gate[e], &L->up[e] };
        float* const hs[2] = { s->hg, s->hu };
        const glyd_matrix* const down = &L->down[e];
        float* const yg = s->yg;
        size_t n = 0;
        for (t = 0; t < T; t++) {
            for (i = 0; i < K && s->chosen[t * K + i] != e; i++) continue;
            if (i == K) continue;
            s->group[n] = (unsigned)t;
            s->groupWeight[n] = s->weight[t * K + i];
            memcpy(s->xg + n * dim, xn + t * dim, dim * sizeof(float));
            n++;
        }
        if (!n) continue; /* no token chose it: its matrices are never decoded */
        FORWARD_IF_ERROR(matmuls(opaque, gateUp, hs, 2, s->xg, n));
        glyd_swiglu(s->hg, s->hu, n * H);
        FORWARD_IF_ERROR(matmuls(opaque, &down, &yg, 1, s->hg, n));
        for (i = 0; i < n; i++) {
            float* const o = out + (size_t)s->group[i] * dim;
            const float* const y = s->yg + i * dim;
            float const w = s->groupWeight[i];
            for (d = 0; d < dim; d++) o[d] += w * y[d];
        }
    }
    return 0;
}

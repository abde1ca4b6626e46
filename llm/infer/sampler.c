/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sampler.c: the next token from logits, as transformers' generate() picks
 * it: repetition penalty, then greedy (temperature 0) or temperature, top-k,
 * top-p and min-p, and a draw from what is left with a seeded generator.
 */
#include <math.h>
#include <stdlib.h>

#include "infer.h"

typedef struct { float logit; uint32_t id; } candidate;

struct glyd_sampler_s {
    glyd_samplerParams p;
    size_t vocab;
    uint64_t state;        /* splitmix64 */
    candidate* cand;       /* (vocab) best first, once sorted */
    float* prob;           /* (vocab) */
    uint32_t* penalized;   /* (vocab) the call that last penalized each token */
    int* distinct;         /* (vocab) the tokens the last call penalized */
    uint32_t call;
};

glyd_sampler* glyd_samplerCreate(const glyd_samplerParams* p, size_t vocab)
{
    glyd_sampler* const s = (glyd_sampler*)calloc(1, sizeof(glyd_sampler));
    if (!s || vocab == 0) { free(s); return NULL; }
    s->p = *p;
    s->vocab = vocab;
    s->state = p->seed;
    s->cand = (candidate*)malloc(vocab * sizeof(candidate));
    s->prob = (float*)malloc(vocab * sizeof(float));
    s->penalized = (uint32_t*)calloc(vocab, sizeof(uint32_t));
    s->distinct = (int*)malloc(vocab * sizeof(int));
    if (!s->cand || !s->prob || !s->penalized || !s->distinct) { glyd_samplerFree(s); return NULL; }
    return s;
}

void glyd_samplerFree(glyd_sampler* s)
{
    if (!s) return;
    free(s->cand);
    free(s->prob);
    free(s->penalized);
    free(s->distinct);
    free(s);
}

/* A uniform double in [0, 1). */
static double next_uniform(glyd_sampler* s)
{
    uint64_t z = (s->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int by_logit_desc(const void* a, const void* b)
{
    const candidate* const x = (const candidate*)a;
    const candidate* const y = (const candidate*)b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id; /* ties: the lower id first, as a stable sort would */
}

/* The draw from the first n candidates (their logits divided by the
 * temperature; best first when sorted), m the largest: softmax, top-p,
 * min-p. */
static int pick(glyd_sampler* s, size_t n, float m)
{
    double sum, cut, u, acc;
    size_t i;
    /* softmax over the candidates */
    {
        sum = 0;
        for (i = 0; i < n; i++) { s->prob[i] = expf(s->cand[i].logit - m); sum += s->prob[i]; }
        for (i = 0; i < n; i++) s->prob[i] = (float)(s->prob[i] / sum);
    }
    if (s->p.topP > 0 && s->p.topP < 1) {
        /* the fewest best tokens whose mass reaches p (always one) */
        acc = 0;
        for (i = 0; i < n; i++) {
            acc += s->prob[i];
            if (acc >= s->p.topP) { n = i + 1; break; }
        }
    }
    if (s->p.minP > 0) {
        /* tokens at least minP times as likely as the best; the best stays */
        float maxp = 0;
        size_t k = 0;
        for (i = 0; i < n; i++) if (s->prob[i] > maxp) maxp = s->prob[i];
        cut = (double)s->p.minP * maxp;
        for (i = 0; i < n; i++) if (s->prob[i] >= cut) k = i + 1;
        n = k ? k : 1;
    }
    sum = 0;
    for (i = 0; i < n; i++) sum += s->prob[i];
    u = next_uniform(s) * sum;
    acc = 0;
    for (i = 0; i + 1 < n; i++) {
        acc += s->prob[i];
        if (u < acc) break;
    }
    return (int)s->cand[i].id;
}

size_t glyd_samplerPenalized(glyd_sampler* s, const int* history, size_t nbHistory, const int** ids)
{
    float const penalty = s->p.repetitionPenalty;
    size_t i, n = 0;
    *ids = s->distinct;
    if (!(penalty > 0 && penalty != 1.0f)) return 0;
    /* once per token however often it occurred (transformers gathers, then
     * scatters the same values back): a mark per token, stamped with this
     * call's number, keeps the pass linear in the history */
    if (++s->call == 0) {
        memset(s->penalized, 0, s->vocab * sizeof(uint32_t));
        s->call = 1;
    }
    for (i = 0; i < nbHistory; i++) {
        int const t = history[i];
        if (t < 0 || (size_t)t >= s->vocab || s->penalized[t] == s->call) continue;
        s->penalized[t] = s->call;
        s->distinct[n++] = t;
    }
    return n;
}

int glyd_samplerSample(glyd_sampler* s, float* logits, const int* history, size_t nbHistory)
{
    size_t const V = s->vocab;
    size_t i, n, best = 0;
    float const penalty = s->p.repetitionPenalty;
    const int* ids;
    size_t const nbIds = glyd_samplerPenalized(s, history, nbHistory, &ids);
    for (i = 0; i < nbIds; i++) logits[ids[i]] = gk_penalized(logits[ids[i]], penalty);
    for (i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
    if (!(s->p.temperature > 0)) return (int)best;

    for (i = 0; i < V; i++) {
        s->cand[i].logit = logits[i] / s->p.temperature;
        s->cand[i].id = (uint32_t)i;
    }
    n = V;
    if ((s->p.topK > 0 && (size_t)s->p.topK < n) || (s->p.topP > 0 && s->p.topP < 1) || s->p.minP > 0) {
        /* best first: a sort is clearer than a selection, and costs well
         * under a forward pass */
        qsort(s->cand, V, sizeof(candidate), by_logit_desc);
        if (s->p.topK > 0 && (size_t)s->p.topK < n) n = (size_t)s->p.topK;
    }
    return pick(s, n, logits[best] / s->p.temperature);
}

unsigned glyd_samplerDeviceK(const glyd_sampler* s, size_t vocab)
{
    if (!(s->p.temperature > 0)) return 1;
    if (s->p.topK > 0 && (size_t)s->p.topK < vocab && s->p.topK <= GLYD_SAMPLER_DEVICE_K) return (unsigned)s->p.topK;
    return 0;
}

void glyd_samplerRules(const glyd_sampler* s, float* penalty, float* temperature)
{
    *penalty = s->p.repetitionPenalty > 0 && s->p.repetitionPenalty != 1.0f ? s->p.repetitionPenalty : 1.0f;
    *temperature = s->p.temperature;
}

int glyd_samplerPick(glyd_sampler* s, const float* logits, const int* ids, size_t k)
{
    size_t i;
    if (!(s->p.temperature > 0) || k == 0) return k ? ids[0] : 0;
    for (i = 0; i < k && i < s->vocab; i++) {
        s->cand[i].logit = logits[i];
        s->cand[i].id = (uint32_t)ids[i];
    }
    return pick(s, i, logits[0]);
}

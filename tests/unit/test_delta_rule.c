/* SPDX-License-Identifier: BSD-3-Clause */
/* test_delta_rule.c: the Gated DeltaNet recurrence (llm/infer/delta_rule.c)
 * on every path this CPU has, against the rule run in double precision:
 * head sizes the AVX2 path takes and one it leaves to the portable code,
 * strong and weak decays, and a run of tokens cut into calls anywhere
 * giving the bits of the run in one call. The chunked form
 * (delta_chunk.c) against the same reference, its blocks whole and cut. */
#include <math.h>
#include <stdlib.h>

#include "../../lib/tensor/tensor.h"
#include "../../llm/infer/infer.h"
#include "harness.h"

enum { TOKENS = 40 };

static float uniform(uint64_t* s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* x / |x|, as the layer normalizes queries and keys */
static void unit_vector(float* x, unsigned n, uint64_t* s)
{
    double ss = 0;
    unsigned i;
    for (i = 0; i < n; i++) { x[i] = uniform(s); ss += (double)x[i] * x[i]; }
    for (i = 0; i < n; i++) x[i] = (float)(x[i] / sqrt(ss));
}

/* The rule as transformers' recurrent form writes it, in double. */
static void reference(double* S, const float* q, const float* k, const float* v, const float* logDecay,
                      const float* beta, double* o, unsigned dk, unsigned dv)
{
    double* const kv = (double*)calloc(dv, sizeof(double));
    size_t t;
    unsigned i, j;
    for (t = 0; t < TOKENS; t++) {
        const float *qt = q + t * dk, *kt = k + t * dk, *vt = v + t * dv;
        double const a = exp((double)logDecay[t]);
        for (j = 0; j < dv; j++) kv[j] = 0;
        for (i = 0; i < dk; i++)
            for (j = 0; j < dv; j++) {
                S[i * dv + j] *= a;
                kv[j] += S[i * dv + j] * kt[i];
            }
        for (j = 0; j < dv; j++) kv[j] = (vt[j] - kv[j]) * beta[t];
        for (j = 0; j < dv; j++) o[t * dv + j] = 0;
        for (i = 0; i < dk; i++)
            for (j = 0; j < dv; j++) {
                S[i * dv + j] += kt[i] * kv[j];
                o[t * dv + j] += S[i * dv + j] * qt[i];
            }
    }
    free(kv);
}

/* The tokens through glyd_deltaRule (or, with chunked, the chunked form)
 * in calls of the given sizes (summing to TOKENS), from a zero state.
 * scratch: room for the chunked form's work. */
static void run(float* S, const float* q, const float* k, const float* v, const float* logDecay, const float* beta,
                float* o, unsigned dk, unsigned dv, const size_t* calls, float* scratch, int chunked)
{
    size_t t = 0, c;
    memset(S, 0, (size_t)dk * dv * sizeof(float));
    for (c = 0; t < TOKENS; c++) {
        glyd_deltaTokens const x = { q + t * dk, k + t * dk, dk, v + t * dv, dv, logDecay + t, beta + t, 1,
                                     o + t * dv, dv };
        if (chunked) glyd_deltaRuleChunked(S, &x, calls[c], dk, dv, scratch);
        else glyd_deltaRule(S, &x, calls[c], dk, dv, scratch);
        t += calls[c];
    }
}

static void check_case(unsigned dk, unsigned dv, float decayScale, uint64_t seed)
{
    static const size_t kWhole[] = { TOKENS }, kSplit[] = { 1, 6, 1, 32 };
    static const int kLevels[] = { GLYD_SIMD_NONE, GLYD_SIMD_AVX2, GLYD_SIMD_BEST };
    float *q = (float*)malloc((size_t)TOKENS * dk * sizeof(float)), *k = (float*)malloc((size_t)TOKENS * dk * sizeof(float));
    float *v = (float*)malloc((size_t)TOKENS * dv * sizeof(float)), *S = (float*)malloc((size_t)dk * dv * sizeof(float));
    float* const S1 = (float*)malloc((size_t)dk * dv * sizeof(float));
    float *o = (float*)malloc((size_t)TOKENS * dv * sizeof(float)), *o2 = (float*)malloc((size_t)TOKENS * dv * sizeof(float));
    float* const scratch = (float*)malloc(glyd_deltaChunkWork(dk, dv) * sizeof(float));
    double *RS = (double*)calloc((size_t)dk * dv, sizeof(double)), *ro = (double*)malloc((size_t)TOKENS * dv * sizeof(double));
    float logDecay[TOKENS], beta[TOKENS];
    size_t t, i, l, split;
    CHECK(q && k && v && S && S1 && o && o2 && scratch && RS && ro);
    if (!q || !k || !v || !S || !S1 || !o || !o2 || !scratch || !RS || !ro) goto out;
    for (t = 0; t < TOKENS; t++) {
        unit_vector(q + t * dk, dk, &seed);
        for (i = 0; i < dk; i++) q[t * dk + i] /= sqrtf((float)dk);
        unit_vector(k + t * dk, dk, &seed);
        for (i = 0; i < dv; i++) v[t * dv + i] = uniform(&seed);
        logDecay[t] = -decayScale * (uniform(&seed) + 1.0f);
        beta[t] = (uniform(&seed) + 1.0f) / 2.0f;
    }
    reference(RS, q, k, v, logDecay, beta, ro, dk, dv);
    for (l = 0; l < sizeof kLevels / sizeof kLevels[0]; l++) {
        double worst = 0;
        glyd_tensorSimdLimit(kLevels[l]);
        run(S, q, k, v, logDecay, beta, o, dk, dv, kWhole, scratch, 0);
        for (i = 0; i < (size_t)TOKENS * dv; i++) worst = fmax(worst, fabs(o[i] - ro[i]));
        for (i = 0; i < (size_t)dk * dv; i++) worst = fmax(worst, fabs(S[i] - RS[i]));
        if (!(worst < 2e-6)) fprintf(stderr, "# dk %u dv %u level %d: max |difference| %g\n", dk, dv, kLevels[l], worst);
        CHECK(worst < 2e-6);
        /* the same tokens in four calls: the same bits, state and outputs */
        memcpy(S1, S, (size_t)dk * dv * sizeof(float));
        run(S, q, k, v, logDecay, beta, o2, dk, dv, kSplit, scratch, 0);
        CHECK(memcmp(o, o2, (size_t)TOKENS * dv * sizeof(float)) == 0);
        CHECK(memcmp(S, S1, (size_t)dk * dv * sizeof(float)) == 0);
        /* the chunked form, in blocks of 16, 16 and 8, then of 1, 6, 1,
         * 16 and 16: the rule in another order, as close */
        for (split = 0; split < 2; split++) {
            worst = 0;
            run(S, q, k, v, logDecay, beta, o2, dk, dv, split ? kSplit : kWhole, scratch, 1);
            for (i = 0; i < (size_t)TOKENS * dv; i++) worst = fmax(worst, fabs(o2[i] - ro[i]));
            for (i = 0; i < (size_t)dk * dv; i++) worst = fmax(worst, fabs(S[i] - RS[i]));
            if (!(worst < 2e-6))
                fprintf(stderr, "# chunked, dk %u dv %u level %d: max |difference| %g\n", dk, dv, kLevels[l], worst);
            CHECK(worst < 2e-6);
        }
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
out:
    free(q); free(k); free(v); free(S); free(S1); free(o); free(o2); free(scratch); free(RS); free(ro);
}

TEST(delta_rule_matches_a_double_reference)
{
    check_case(128, 128, 0.05f, 1); /* Qwen3.5's heads, a slow decay */
    check_case(128, 128, 2.0f, 2);  /* a state that forgets fast */
    check_case(16, 16, 0.3f, 3);    /* the tiny test models' heads */
    check_case(16, 32, 0.3f, 4);
    check_case(24, 24, 0.3f, 5);    /* no multiple of 16: the portable path */
    check_case(1, 16, 0.3f, 6);
    check_case(32, 16, 40.0f, 7);   /* decays that underflow within a block */
}

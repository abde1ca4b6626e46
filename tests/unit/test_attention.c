/* SPDX-License-Identifier: BSD-3-Clause */
/* test_attention.c: the CPU attention kernel (llm/infer/attention.c)
 * against a plain double-precision attention on random data: head sizes
 * that fill no vector or leave a tail, one position and counts that are no
 * multiple of the kernels' blocks, fp32 and bf16 caches, heads of a group
 * sharing one cached head, and sliding windows that start past 0. */
#include <math.h>
#include <stdlib.h>

#include "../../lib/tensor/tensor.h"
#include "../../llm/infer/infer.h"
#include "harness.h"

static float uniform(uint64_t* s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static double from_cache(const glyd_kvHead* kv, const void* base, size_t i)
{
    if (kv->f32) return ((const float*)base)[i];
    {
        uint32_t const u = (uint32_t)((const uint16_t*)base)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
}

/* The same attention in double, one position after the other. */
static void attend_reference(const glyd_kvHead* kv, const float* q, size_t first, size_t pos, float scale,
                             double* out)
{
    double* const s = (double*)malloc((pos + 1) * sizeof(double));
    double maxv = -INFINITY, sum = 0;
    size_t t, i;
    for (t = first; t <= pos; t++) {
        double d = 0;
        for (i = 0; i < kv->headDim; i++) d += (double)q[i] * from_cache(kv, kv->k, t * kv->stride + i);
        s[t] = d * scale;
        if (s[t] > maxv) maxv = s[t];
    }
    for (t = first; t <= pos; t++) { s[t] = exp(s[t] - maxv); sum += s[t]; }
    for (i = 0; i < kv->headDim; i++) {
        double o = 0;
        for (t = first; t <= pos; t++) o += s[t] * from_cache(kv, kv->v, t * kv->stride + i);
        out[i] = o / sum;
    }
    free(s);
}

/* A cache of nbKv heads over `positions`, fp32 or bf16, and a query per
 * query head (group of them per cached head); each query head's output
 * against the reference and, computed twice, bit for bit against itself. */
static void check_case(unsigned headDim, size_t positions, size_t first, unsigned nbKv, unsigned group, int f32,
                       uint64_t seed)
{
    size_t const stride = (size_t)nbKv * headDim, n = positions * stride;
    float* const kf = (float*)malloc(n * sizeof(float));
    float* const vf = (float*)malloc(n * sizeof(float));
    uint16_t* const kb = (uint16_t*)malloc(n * sizeof(uint16_t));
    uint16_t* const vb = (uint16_t*)malloc(n * sizeof(uint16_t));
    float* const q = (float*)malloc((size_t)headDim * sizeof(float));
    float* const att = (float*)malloc(positions * sizeof(float));
    float* const out = (float*)malloc((size_t)headDim * sizeof(float));
    float* const again = (float*)malloc((size_t)headDim * sizeof(float));
    double* const ref = (double*)malloc((size_t)headDim * sizeof(double));
    float const scale = 1.0f / sqrtf((float)headDim);
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    size_t i;
    unsigned h;
    for (i = 0; i < n; i++) {
        /* keys of a few units, so that the weights spread from near 0 to near 1 */
        kf[i] = 3.0f * uniform(&s);
        vf[i] = uniform(&s);
        kb[i] = to_bf16(kf[i]);
        vb[i] = to_bf16(vf[i]);
    }
    for (h = 0; h < nbKv * group; h++) {
        size_t const off = (size_t)(h / group) * headDim;
        glyd_kvHead kv;
        double worst = 0;
        kv.f32 = f32;
        kv.k = f32 ? (const void*)(kf + off) : (const void*)(kb + off);
        kv.v = f32 ? (const void*)(vf + off) : (const void*)(vb + off);
        kv.stride = stride;
        kv.headDim = headDim;
        for (i = 0; i < headDim; i++) q[i] = uniform(&s);
        glyd_attendHead(&kv, q, first, positions - 1, scale, att, out);
        glyd_attendHead(&kv, q, first, positions - 1, scale, att, again);
        attend_reference(&kv, q, first, positions - 1, scale, ref);
        for (i = 0; i < headDim; i++) worst = fmax(worst, fabs(out[i] - ref[i]));
        CHECK(worst < 2e-6);
        CHECK(memcmp(out, again, headDim * sizeof(float)) == 0);
        if (!(worst < 2e-6))
            printf("    head dim %u, positions %zu from %zu, %s, head %u: max |difference| %g\n", headDim,
                   positions, first, f32 ? "fp32" : "bf16", h, worst);
    }
    free(kf); free(vf); free(kb); free(vb); free(q); free(att); free(out); free(again); free(ref);
}

/* Every path this CPU has: portable, AVX2 and AVX-512. */
static const int kLevels[] = { GLYD_SIMD_NONE, GLYD_SIMD_AVX2, GLYD_SIMD_BEST };

TEST(attention_matches_a_double_reference)
{
    static const unsigned kDims[] = { 1, 3, 7, 8, 9, 16, 17, 31, 33, 64, 80, 96, 128, 130, 256 };
    static const size_t kPositions[] = { 1, 2, 3, 4, 5, 7, 16, 17, 63, 130, 1000 };
    size_t l, d, p;
    int f32;
    for (l = 0; l < sizeof kLevels / sizeof kLevels[0]; l++) {
        glyd_attendSimdLimit(kLevels[l]);
        for (f32 = 0; f32 < 2; f32++)
            for (d = 0; d < sizeof kDims / sizeof kDims[0]; d++)
                for (p = 0; p < sizeof kPositions / sizeof kPositions[0]; p++)
                    check_case(kDims[d], kPositions[p], 0, 2, 3, f32, d * 100 + p);
    }
    glyd_attendSimdLimit(GLYD_SIMD_BEST);
}

TEST(attention_in_a_sliding_window)
{
    static const size_t kFirst[] = { 1, 2, 3, 5, 100, 999 };
    size_t l, f;
    int f32;
    for (l = 0; l < sizeof kLevels / sizeof kLevels[0]; l++) {
        glyd_attendSimdLimit(kLevels[l]);
        for (f32 = 0; f32 < 2; f32++)
            for (f = 0; f < sizeof kFirst / sizeof kFirst[0]; f++) {
                check_case(64, 1000, kFirst[f], 2, 7, f32, f + 7);
                check_case(17, 1000, kFirst[f], 1, 1, f32, f + 11);
            }
    }
    glyd_attendSimdLimit(GLYD_SIMD_BEST);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vexp.c: e^x over arrays (llm/infer/vexp.c) on every path this CPU
 * has: within 2 ulp of e^x in double over the whole float range that
 * neither overflows nor underflows to 0, the edges (infinities, NaN,
 * subnormal results) as libm's, and an element's bits the same wherever it
 * sits in an array; SiLU through it against SiLU in double. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/tensor/tensor.h"
#include "../../llm/infer/infer.h"
#include "harness.h"

static const int kLevels[] = { GLYD_SIMD_NONE, GLYD_SIMD_AVX2, GLYD_SIMD_BEST };

/* ulps between a float and the float nearest to exact (both finite) */
static double ulps(float got, double exact)
{
    float const want = (float)exact;
    double const step = fabs((double)nextafterf(want, INFINITY) - want);
    return fabs((double)got - exact) / step;
}

TEST(vexp_within_two_ulp_over_the_range)
{
    enum { N = 1 << 16 };
    float* const x = (float*)malloc(N * sizeof(float));
    float* const y = (float*)malloc(N * sizeof(float));
    size_t l, i, r;
    CHECK(x && y);
    for (l = 0; x && y && l < sizeof kLevels / sizeof kLevels[0]; l++) {
        double worst = 0;
        glyd_tensorSimdLimit(kLevels[l]);
        /* 64 runs of 65536 inputs, evenly over [-103.9, 88.7] with an odd
         * step, so every binade of the result is hit */
        for (r = 0; r < 64; r++) {
            for (i = 0; i < N; i++) x[i] = (float)(-103.9 + (192.6 * ((double)r * N + i)) / (64.0 * N - 1.0));
            memcpy(y, x, N * sizeof(float));
            glyd_expShifted(y, N, 0.0f);
            for (i = 0; i < N; i++) {
                double const e = exp((double)x[i]);
                double const u = e < FLT_MIN ? fabs((double)y[i] - e) / 1.401298464e-45 : ulps(y[i], e);
                if (u > worst) worst = u;
            }
        }
        if (!(worst <= 2.0)) fprintf(stderr, "# level %d: %g ulp\n", kLevels[l], worst);
        CHECK(worst <= 2.0);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    free(x);
    free(y);
}

TEST(vexp_edges_as_libm)
{
    size_t l;
    for (l = 0; l < sizeof kLevels / sizeof kLevels[0]; l++) {
        float v[9] = { -INFINITY, INFINITY, NAN, 0.0f, -0.0f, 88.8f, 1000.0f, -105.0f, -1e30f };
        glyd_tensorSimdLimit(kLevels[l]);
        glyd_expShifted(v, 9, 0.0f);
        CHECK(v[0] == 0.0f);
        CHECK(isinf(v[1]) && v[1] > 0);
        CHECK(isnan(v[2]));
        CHECK(v[3] == 1.0f && v[4] == 1.0f);
        CHECK(isinf(v[5]) && isinf(v[6]));
        CHECK(v[7] == 0.0f && v[8] == 0.0f);
        {
            /* the shift is taken before e^x: softmax's e^(x - max) */
            float s[3] = { 5.0f, 4.0f, -INFINITY };
            glyd_expShifted(s, 3, 5.0f);
            CHECK(s[0] == 1.0f && fabs(s[1] - 0.36787944) < 1e-7 && s[2] == 0.0f);
        }
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

/* An element's value does not depend on the array's length or its place. */
TEST(vexp_same_bits_wherever_an_element_sits)
{
    float x[37], whole[37], up[37], g[37];
    size_t l, i;
    for (i = 0; i < 37; i++) { x[i] = (float)i * 0.73f - 12.0f; up[i] = 1.0f + (float)i / 8.0f; }
    for (l = 0; l < sizeof kLevels / sizeof kLevels[0]; l++) {
        size_t differ = 0;
        glyd_tensorSimdLimit(kLevels[l]);
        memcpy(whole, x, sizeof x);
        glyd_expShifted(whole, 37, 0.5f);
        memcpy(g, x, sizeof x);
        glyd_swiglu(g, up, 37);
        for (i = 0; i < 37; i++) {
            float one = x[i], gone = x[i];
            glyd_expShifted(&one, 1, 0.5f);
            glyd_swiglu(&gone, &up[i], 1);
            differ += memcmp(&one, &whole[i], sizeof one) != 0;
            differ += memcmp(&gone, &g[i], sizeof gone) != 0;
        }
        CHECK(differ == 0);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

TEST(vexp_swiglu_against_double)
{
    enum { N = 4099 };
    static float g[N], u[N];
    size_t l, i;
    for (l = 0; l < sizeof kLevels / sizeof kLevels[0]; l++) {
        double worst = 0;
        glyd_tensorSimdLimit(kLevels[l]);
        for (i = 0; i < N; i++) {
            g[i] = (float)(((double)i - N / 2) / 20.0); /* -102.5 .. 102.5 */
            u[i] = (float)(0.5 + (double)(i % 7) / 3.0);
        }
        glyd_swiglu(g, u, N);
        for (i = 0; i < N; i++) {
            double const x = (float)(((double)i - N / 2) / 20.0), uu = (float)(0.5 + (double)(i % 7) / 3.0);
            double const want = x / (1.0 + exp(-x)) * uu;
            double const err = fabs(g[i] - want) / fmax(fabs(want), 1e-30);
            if (fabs(want) > 1e-30 && err > worst) worst = err;
        }
        if (!(worst < 1e-6)) fprintf(stderr, "# level %d: relative %g\n", kLevels[l], worst);
        CHECK(worst < 1e-6);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
}

/* The portable steps and the vectors' give the same bits, as the engine's
 * products do, so logits do not depend on the SIMD level. */
TEST(vexp_every_path_gives_the_same_bits)
{
    enum { N = 1 << 16 };
    float* const x = (float*)malloc(N * sizeof(float));
    float* const e[2] = { (float*)malloc(N * sizeof(float)), (float*)malloc(N * sizeof(float)) };
    float* const g[2] = { (float*)malloc(N * sizeof(float)), (float*)malloc(N * sizeof(float)) };
    size_t i, k;
    CHECK(x && e[0] && e[1] && g[0] && g[1]);
    if (x && e[0] && e[1] && g[0] && g[1]) {
        for (i = 0; i < N; i++) x[i] = (float)(-110.0 + 210.0 * (double)i / N);
        for (k = 0; k < 2; k++) {
            glyd_tensorSimdLimit(k ? GLYD_SIMD_BEST : GLYD_SIMD_NONE);
            memcpy(e[k], x, N * sizeof(float));
            glyd_expShifted(e[k], N, 0.25f);
            memcpy(g[k], x, N * sizeof(float));
            glyd_swiglu(g[k], x, N);
        }
        CHECK(memcmp(e[0], e[1], N * sizeof(float)) == 0);
        CHECK(memcmp(g[0], g[1], N * sizeof(float)) == 0);
    }
    glyd_tensorSimdLimit(GLYD_SIMD_BEST);
    free(x); free(e[0]); free(e[1]); free(g[0]); free(g[1]);
}

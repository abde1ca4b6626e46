/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * synth_weights.h: the GPU benchmark's synthetic weights, for the benchmark
 * (gpu_check.cu) and for its model on the CPU (bench/gpu_model.c), which
 * must see the same matrices.
 */
#ifndef GLYD_SYNTH_WEIGHTS_H
#define GLYD_SYNTH_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

/* n bf16 weights with trained weights' exponents (around 2^-5), random
 * signs and mantissas. */
static inline void glyd_synthWeights(uint16_t* w, size_t n, uint64_t seed)
{
    static const unsigned kExp[] = { 123, 124, 122, 121, 125, 120, 119, 126, 118, 117, 116, 115, 114, 113 };
    static const unsigned kCum[] = { 2676, 5053, 6893, 7919, 8717, 9254, 9527, 9727, 9864, 9931, 9964, 9979, 9990,
                                     10000 };
    uint64_t s = seed | 1;
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned u, k = 0;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        u = (unsigned)((s >> 8) % 10000);
        while (kCum[k] <= u) k++;
        w[i] = (uint16_t)(((s >> 40) & 0x8000) | kExp[k] << 7 | ((s >> 48) & 0x7F));
    }
}

#endif /* GLYD_SYNTH_WEIGHTS_H */

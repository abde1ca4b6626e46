/* SPDX-License-Identifier: BSD-3-Clause */
/* histogram.c: symbol counting, the first step of every entropy coder. */
#include "entropy.h"

unsigned glyd_histBytes(unsigned count[256], unsigned* maxSymbol, const uint8_t* src, size_t n)
{
    /* four sub-histograms break the store-to-load dependency on repeated
     * bytes, which otherwise serializes the loop */
    unsigned c[4][256];
    size_t i = 0;
    unsigned s, maxCount = 0;
    memset(c, 0, sizeof(c));
    for (; i + 4 <= n; i += 4) {
        uint32_t const w = glyd_read32(src + i);
        c[0][w & 0xFF]++;
        c[1][(w >> 8) & 0xFF]++;
        c[2][(w >> 16) & 0xFF]++;
        c[3][w >> 24]++;
    }
    for (; i < n; i++) c[0][src[i]]++;
    *maxSymbol = 0;
    for (s = 0; s < 256; s++) {
        count[s] = c[0][s] + c[1][s] + c[2][s] + c[3][s];
        if (count[s]) *maxSymbol = s;
        if (count[s] > maxCount) maxCount = count[s];
    }
    return maxCount;
}

unsigned glyd_histSmall(unsigned* count, unsigned* maxSymbol, const uint8_t* src, size_t n)
{
    /* sequence codes repeat even more than bytes: four sub-histograms, as
     * in glyd_histBytes */
    unsigned c[4][256];
    unsigned s, maxCount = 0, top = *maxSymbol;
    size_t i = 0;
    assert(top < 256);
    memset(c, 0, 4 * sizeof(c[0][0]) * 256);
    for (; i + 4 <= n; i += 4) {
        assert(src[i] <= top && src[i + 1] <= top && src[i + 2] <= top && src[i + 3] <= top);
        c[0][src[i]]++;
        c[1][src[i + 1]]++;
        c[2][src[i + 2]]++;
        c[3][src[i + 3]]++;
    }
    for (; i < n; i++) c[0][src[i]]++;
    *maxSymbol = 0;
    for (s = 0; s <= top; s++) {
        count[s] = c[0][s] + c[1][s] + c[2][s] + c[3][s];
        if (count[s]) *maxSymbol = s;
        if (count[s] > maxCount) maxCount = count[s];
    }
    return maxCount;
}

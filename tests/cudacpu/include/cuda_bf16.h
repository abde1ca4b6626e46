/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_bf16.h of cudacpu: the bf16 type, as storage, and the host's conversion to it. */
#ifndef CUDACPU_BF16_H
#define CUDACPU_BF16_H

#include <stdint.h>
#include <string.h>

typedef struct {
    uint16_t x;
} __nv_bfloat16;

/* rounded to nearest, ties to even, as CUDA's; a NaN stays a NaN */
static inline __nv_bfloat16 __float2bfloat16(float f)
{
    uint32_t u;
    __nv_bfloat16 h;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) h.x = (uint16_t)(u >> 16 | 0x40);
    else h.x = (uint16_t)((u + 0x7FFFu + (u >> 16 & 1)) >> 16);
    return h;
}

#endif /* CUDACPU_BF16_H */

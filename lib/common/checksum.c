/* SPDX-License-Identifier: BSD-3-Clause */
/* checksum.c: frame checksums, XXH64 or XXH3-64, with the AVX2 build of
 * XXH3 chosen at run time where the CPU has it. */
#include "common.h"

/* Whether XXH3 goes through checksum_avx2.c. Asked on each call (a read of
 * what the runtime learnt at start-up): no cache for threads to race on. */
static int use_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(GLYD_NO_SIMD)
    return glyd_xxh3Avx2Built() && __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

static XXH3_state_t* x3_state(glyd_csum* c)
{
    return (XXH3_state_t*)(((uintptr_t)c->x3 + 63) & ~(uintptr_t)63);
}

void glyd_csumReset(glyd_csum* c, glyd_csumKind kind)
{
    c->kind = kind;
    if (kind == glyd_csum_xxh64) XXH64_reset(&c->x64, 0);
    else if (use_avx2()) glyd_xxh3Avx2Reset(x3_state(c));
    else XXH3_64bits_reset(x3_state(c));
}

void glyd_csumUpdate(glyd_csum* c, const void* src, size_t size)
{
    if (c->kind == glyd_csum_xxh64) XXH64_update(&c->x64, src, size);
    else if (use_avx2()) glyd_xxh3Avx2Update(x3_state(c), src, size);
    else XXH3_64bits_update(x3_state(c), src, size);
}

uint64_t glyd_csumDigest(glyd_csum* c)
{
    if (c->kind == glyd_csum_xxh64) return XXH64_digest(&c->x64);
    if (use_avx2()) return glyd_xxh3Avx2Digest(x3_state(c));
    return XXH3_64bits_digest(x3_state(c));
}

uint64_t glyd_csumOnce(glyd_csumKind kind, const void* src, size_t size)
{
    if (kind == glyd_csum_xxh64) return XXH64(src, size, 0);
    if (use_avx2()) return glyd_xxh3Avx2(src, size);
    return XXH3_64bits(src, size);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* checksum_avx2.c: XXH3-64 inlined from xxhash.h and compiled with -mavx2
 * (the Makefile gives this file that flag on x86-64), so that its vector
 * loop runs 256 bits wide: about 3x the speed of the SSE2 build that
 * libxxhash ships. Called only where the CPU has AVX2. A build without the
 * flag compiles the stubs below and never calls them. */
#include <stddef.h>
#include <stdint.h>

int glyd_xxh3Avx2Built(void);
uint64_t glyd_xxh3Avx2(const void* src, size_t size);
void glyd_xxh3Avx2Reset(void* state);
void glyd_xxh3Avx2Update(void* state, const void* src, size_t size);
uint64_t glyd_xxh3Avx2Digest(const void* state);

#if defined(__AVX2__) && !defined(GLYD_NO_SIMD)
#  define XXH_INLINE_ALL
#  include <xxhash.h>

int glyd_xxh3Avx2Built(void) { return 1; }
uint64_t glyd_xxh3Avx2(const void* src, size_t size) { return XXH3_64bits(src, size); }
void glyd_xxh3Avx2Reset(void* state) { XXH3_64bits_reset((XXH3_state_t*)state); }
void glyd_xxh3Avx2Update(void* state, const void* src, size_t size)
{
    XXH3_64bits_update((XXH3_state_t*)state, src, size);
}
uint64_t glyd_xxh3Avx2Digest(const void* state) { return XXH3_64bits_digest((const XXH3_state_t*)state); }
#else
int glyd_xxh3Avx2Built(void) { return 0; }
uint64_t glyd_xxh3Avx2(const void* src, size_t size) { (void)src; (void)size; return 0; }
void glyd_xxh3Avx2Reset(void* state) { (void)state; }
void glyd_xxh3Avx2Update(void* state, const void* src, size_t size) { (void)state; (void)src; (void)size; }
uint64_t glyd_xxh3Avx2Digest(const void* state) { (void)state; return 0; }
#endif

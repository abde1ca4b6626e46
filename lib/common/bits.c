/* SPDX-License-Identifier: BSD-3-Clause */
/* bits.c: the out-of-line parts of the bit streams and varints. */
#include "common.h"

size_t glyd_varintSize(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

size_t glyd_writeVarint(uint8_t* dst, size_t cap, uint64_t v)
{
    size_t n = 0;
    if (cap < glyd_varintSize(v)) return 0;
    while (v >= 0x80) {
        dst[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    dst[n++] = (uint8_t)v;
    return n;
}

size_t glyd_readVarint(const uint8_t* src, size_t size, uint64_t* v)
{
    uint64_t r = 0;
    size_t i;
    for (i = 0; i < size && i < GLYD_VARINT_MAX; i++) {
        uint64_t const b = src[i];
        if (i == 9 && b > 1) return 0;  /* beyond 64 bits */
        r |= (b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            /* a zero final group after the first byte is a non-canonical
             * (longer than needed) encoding: refused, so that each value has
             * exactly one representation */
            if (i > 0 && b == 0) return 0;
            *v = r;
            return i + 1;
        }
    }
    return 0;
}

size_t glyd_bitReaderInit(glyd_bitReader* br, const void* src, size_t size)
{
    const uint8_t* const s = (const uint8_t*)src;
    uint8_t lastByte;
    RETURN_ERROR_IF(size == 0, corruption_detected, "empty bit stream");
    lastByte = s[size - 1];
    RETURN_ERROR_IF(lastByte == 0, corruption_detected, "bit stream lacks its end marker");
    br->start = s;
    if (size >= 8) {
        br->ptr = s + size - 8;
        br->bits = glyd_read64(br->ptr);
        br->consumed = 8 - glyd_highbit32(lastByte);
    } else {
        size_t i;
        br->ptr = s;
        br->bits = 0;
        for (i = 0; i < size; i++) br->bits |= (uint64_t)s[i] << (8 * i);
        br->consumed = (unsigned)(8 - size) * 8 + 8 - glyd_highbit32(lastByte);
    }
    return 0;
}

void glyd_fwdWriterInit(glyd_fwdWriter* w, void* dst, size_t cap)
{
    w->dst = (uint8_t*)dst;
    w->cap = cap;
    w->pos = 0;
    w->acc = 0;
    w->nbBits = 0;
    w->overflow = 0;
}

void glyd_fwdWrite(glyd_fwdWriter* w, uint32_t v, unsigned nb)
{
    assert(nb <= 24);
    assert(nb == 0 || (v >> nb) == 0);
    w->acc |= v << w->nbBits;
    w->nbBits += nb;
    while (w->nbBits >= 8) {
        if (w->pos < w->cap) w->dst[w->pos] = (uint8_t)w->acc;
        else w->overflow = 1;
        w->pos++;
        w->acc >>= 8;
        w->nbBits -= 8;
    }
}

size_t glyd_fwdWriterClose(glyd_fwdWriter* w)
{
    if (w->nbBits) glyd_fwdWrite(w, 0, 8 - w->nbBits);
    return w->overflow ? 0 : w->pos;
}

void glyd_fwdReaderInit(glyd_fwdReader* r, const void* src, size_t size)
{
    r->src = (const uint8_t*)src;
    r->size = size;
    r->bitPos = 0;
}

uint32_t glyd_fwdRead(glyd_fwdReader* r, unsigned nb)
{
    uint32_t v = 0;
    unsigned i;
    assert(nb <= 24);
    for (i = 0; i < nb; i++) {
        size_t const byte = (r->bitPos + i) >> 3;
        if (byte < r->size) v |= (uint32_t)((r->src[byte] >> ((r->bitPos + i) & 7)) & 1) << i;
    }
    r->bitPos += nb;
    return v;
}

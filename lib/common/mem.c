/* SPDX-License-Identifier: BSD-3-Clause */
/* mem.c: allocation through the caller's glyd_customMem, or malloc/free. */
#include <stdlib.h>

#include "common.h"

int glyd_customMemValid(glyd_customMem mem)
{
    return (mem.customAlloc == NULL) == (mem.customFree == NULL);
}

void* glyd_malloc(size_t size, glyd_customMem mem)
{
    if (mem.customAlloc) return mem.customAlloc(mem.opaque, size);
    return malloc(size);
}

void* glyd_calloc(size_t size, glyd_customMem mem)
{
    if (mem.customAlloc) {
        void* const p = mem.customAlloc(mem.opaque, size);
        if (p) memset(p, 0, size);
        return p;
    }
    return calloc(1, size);
}

void glyd_free(void* ptr, glyd_customMem mem)
{
    if (ptr == NULL) return;
    if (mem.customFree) mem.customFree(mem.opaque, ptr);
    else free(ptr);
}

size_t glyd_bufferReserve(glyd_buffer* b, size_t need, glyd_customMem mem)
{
    if (b->cap >= need) return 0;
    glyd_bufferFree(b, mem);
    b->buf = (uint8_t*)glyd_malloc(need, mem);
    RETURN_ERROR_IF(b->buf == NULL, memory_allocation, "scratch buffer");
    b->cap = need;
    return 0;
}

void glyd_bufferFree(glyd_buffer* b, glyd_customMem mem)
{
    glyd_free(b->buf, mem);
    b->buf = NULL;
    b->cap = 0;
}

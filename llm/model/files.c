/* SPDX-License-Identifier: BSD-3-Clause */
/* files.c: whole files in memory: mapped when regular, read otherwise. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

size_t glyd_mapFile(glyd_mappedFile* f, const char* path)
{
    struct stat st;
    int const fd = open(path, O_RDONLY);
    memset(f, 0, sizeof(*f));
    RETURN_ERROR_IF(fd < 0, io_failed, "open");
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        RETURN_ERROR(io_failed, "not a regular file");
    }
    f->size = (size_t)st.st_size;
    if (f->size > 0) {
        void* const p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            RETURN_ERROR(io_failed, "mmap");
        }
        f->data = (uint8_t*)p;
        f->mapped = 1;
    } else {
        /* an empty file has nothing to map; a valid pointer all the same */
        f->data = (uint8_t*)malloc(1);
        if (!f->data) { close(fd); RETURN_ERROR(memory_allocation, "empty file"); }
    }
    close(fd);
    return 0;
}

void glyd_unmapFile(glyd_mappedFile* f)
{
    if (f->mapped) munmap(f->data, f->size);
    else free(f->data);
    memset(f, 0, sizeof(*f));
}

void glyd_mappedRelease(const glyd_mappedFile* f, const void* p, size_t n)
{
    /* a fault maps the pages around it too (64 KiB by default): those
     * beside the range go as well, within the mapping */
    uintptr_t const page = (uintptr_t)sysconf(_SC_PAGESIZE), around = 64 << 10;
    uintptr_t const lo = (uintptr_t)f->data, hi = lo + f->size;
    uintptr_t a = (uintptr_t)p, b = a + n;
    if (!f->mapped || n == 0 || a < lo || b > hi) return;
    a = a - lo > around ? a - around : lo;
    b = hi - b > around ? b + around : hi;
    /* whole pages: a read-only mapping's pages are read again from the file
     * should anything touch them later */
    a &= ~(page - 1);
    b = (b + page - 1) & ~(page - 1);
    madvise((void*)a, (size_t)(b - a), MADV_DONTNEED);
}

size_t glyd_readFile(const char* path, char** data, size_t* size)
{
    glyd_mappedFile f;
    *data = NULL;
    *size = 0;
    FORWARD_IF_ERROR(glyd_mapFile(&f, path));
    *data = (char*)malloc(f.size + 1);
    if (*data) {
        memcpy(*data, f.data, f.size);
        (*data)[f.size] = 0;
        *size = f.size;
    }
    glyd_unmapFile(&f);
    RETURN_ERROR_IF(!*data, memory_allocation, "file");
    return 0;
}

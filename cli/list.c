/* SPDX-License-Identifier: BSD-3-Clause */
/* list.c: `glyd -l`, the facts of each frame in compressed files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Maps a file (or reads standard input) whole. */
static uint8_t* load_all(const char* path, size_t* size, int* mapped)
{
    *mapped = 0;
    if (strcmp(path, "-") != 0) {
        FILE* const f = fopen(path, "rb");
        struct stat st;
        void* p;
        if (!f) { cli_error("%s: %s", path, strerror(errno)); return NULL; }
        if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
            cli_error("%s: not a regular file", path);
            fclose(f);
            return NULL;
        }
        *size = (size_t)st.st_size;
        if (*size == 0) { fclose(f); return (uint8_t*)malloc(1); }
        p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        fclose(f);
        if (p == MAP_FAILED) { cli_error("%s: %s", path, strerror(errno)); return NULL; }
        *mapped = 1;
        return (uint8_t*)p;
    }
    {
        size_t cap = 1 << 20, n = 0;
        uint8_t* buf = (uint8_t*)malloc(cap);
        while (buf) {
            size_t const r = fread(buf + n, 1, cap - n, stdin);
            n += r;
            if (r == 0) break;
            if (n == cap) {
                uint8_t* const grown = (uint8_t*)realloc(buf, cap * 2);
                if (!grown) { free(buf); buf = NULL; break; }
                buf = grown;
                cap *= 2;
            }
        }
        if (!buf) cli_error("stdin: out of memory");
        *size = n;
        return buf;
    }
}

/* Walks the frames of data, printing per-frame lines when `print`.
 * Returns 0 and fills the totals, or 1 after an error message. */
typedef struct {
    unsigned long long frames, skips, content, segments;
    int allChecked;
    unsigned kinds; /* bit k: a frame with checksum kind k (glyd_frameInfo.hasChecksum) */
} list_totals;

static int walk_frames(const cli_options* o, const char* path, const uint8_t* data, size_t size,
                       int print, list_totals* t)
{
    char a[32], b[32];
    size_t pos = 0;
    memset(t, 0, sizeof(*t));
    t->allChecked = 1;
    while (pos < size) {
        glyd_frameInfo fi;
        size_t const r = glyd_getFrameInfo(&fi, data + pos, size - pos);
        if (glyd_isError(r)) {
            if (glyd_getErrorCode(r) == GLYD_error_prefix_unknown && t->frames + t->skips == 0)
                cli_error("%s: not in glyd format", path);
            else
                cli_error("%s: frame %llu at byte %zu: %s", path, t->frames + t->skips + 1, pos,
                          glyd_getErrorName(r));
            return 1;
        }
        if (fi.isSkippable) {
            t->skips++;
            if (print && o->verbosity >= 2)
                printf("  skippable frame at byte %zu: %llu bytes\n", pos, fi.compressedSize);
        } else {
            t->frames++;
            t->content += fi.contentSize;
            t->segments += fi.nbSegments;
            if (!fi.hasChecksum) t->allChecked = 0;
            t->kinds |= 1u << fi.hasChecksum;
            if (print && o->verbosity >= 2 && fi.isRecords)
                printf("  frame %llu at byte %zu: %s => %s, records: %llu row group(s) of up to 2^%u bytes, "
                       "blocks of up to 2^%u, header %u bytes, checksum %s\n",
                       t->frames, pos, cli_size(a, sizeof a, fi.compressedSize),
                       cli_size(b, sizeof b, fi.contentSize), fi.nbBlocks, fi.segmentLog, fi.blockLog,
                       fi.headerSize, fi.hasChecksum == 2 ? "XXH3" : fi.hasChecksum ? "XXH64" : "none");
            else if (print && o->verbosity >= 2)
                printf("  frame %llu at byte %zu: %s => %s, window 2^%u, %llu block(s) of up to 2^%u, "
                       "%llu segment(s)%s, header %u bytes, checksum %s\n",
                       t->frames, pos, cli_size(a, sizeof a, fi.compressedSize),
                       cli_size(b, sizeof b, fi.contentSize), fi.windowLog, fi.nbBlocks, fi.blockLog,
                       fi.nbSegments, fi.segmentLog ? " (independent)" : "", fi.headerSize,
                       fi.hasChecksum == 2 ? "XXH3" : fi.hasChecksum ? "XXH64" : "none");
        }
        pos += r;
    }
    return 0;
}

static int list_one(const cli_options* o, const char* path, int* header)
{
    char a[32], b[32];
    size_t size;
    int mapped, err = 0;
    list_totals t;
    uint8_t* const data = load_all(path, &size, &mapped);
    if (!data) return 1;
    if (size == 0) {
        cli_error("%s: empty file (not a glyd frame)", path);
        err = 1;
    } else if (size >= 8 && memcmp(data, "\xF8GLYPACK", 8) == 0) {
        cli_error("%s: a packed model: see glyd info %s", path, path);
        err = 1;
    } else if (walk_frames(o, path, data, size, 0, &t)) {
        err = 1;
    } else {
        /* a listable file: now the header, the frame lines, the row */
        if (*header)
            printf("%6s %5s %12s %14s %7s %6s %8s  %s\n", "Frames", "Skips", "Compressed",
                   "Uncompressed", "Ratio", "Check", "Segments", "Filename");
        *header = 0;
        walk_frames(o, path, data, size, 1, &t);
        printf("%6llu %5llu %12s %14s %7.3f %6s %8llu  %s\n", t.frames, t.skips,
               cli_size(a, sizeof a, size), cli_size(b, sizeof b, t.content),
               (double)t.content / (double)size,
               !t.frames ? "-" : !t.allChecked ? "none" : t.kinds == 4 ? "XXH3" : t.kinds == 2 ? "XXH64" : "mixed",
               t.segments, path);
    }
    if (mapped) munmap(data, size);
    else free(data);
    return err;
}

int cli_listFiles(const cli_options* o, const char* const* inputs, int nbInputs)
{
    int i, err = 0, header = 1;
    for (i = 0; i < nbInputs; i++) {
        if (list_one(o, inputs[i], &header)) err = 1;
        if (cli_stdoutFlush()) return 1;
    }
    return err;
}

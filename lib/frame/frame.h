/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.h: the container (docs/FORMAT.md, "Frames"): frame header, block
 * headers, content checksum, independent segments and their seek table,
 * skippable frames. Shared by the compression and decompression contexts.
 */
#ifndef GLYD_FRAME_H
#define GLYD_FRAME_H

#include "../lz/lz.h"

#define GLYD_MAGIC               0x594C47F7U /* bytes F7 'G' 'L' 'Y' */
#define GLYD_FORMAT_VERSION      1
#define GLYD_MAGIC_SEEKTABLE     (GLYD_MAGIC_SKIPPABLE_START + 0xE)
#define GLYD_SEEKTABLE_FOOTER    0x8F92EAB1U
#define GLYD_FRAMEHEADER_MIN     9
#define GLYD_FRAMEHEADER_MAX     22
#define GLYD_BLOCKHEADER_SIZE    4
#define GLYD_CHECKSUM_SIZE       8
#define GLYD_SKIPPABLE_HEADER    8
#define GLYD_SEGMENTLOG_MIN      16
#define GLYD_SEGMENTLOG_MAX      40
#define GLYD_WINDOWLOG_DEFAULTMAX 27

/* Frame header flags */
#define GLYD_F_CONTENTSIZE 0x01
#define GLYD_F_CHECKSUM    0x02
#define GLYD_F_SEGMENTED   0x04
#define GLYD_F_DICTID      0x08
#define GLYD_F_XXH3        0x10 /* the checksum is XXH3-64, not XXH64 */
#define GLYD_F_RESERVED    0xE0

/* The checksum a frame with these flags carries. */
#define GLYD_CSUM_KIND(flags) (((flags) & GLYD_F_XXH3) ? glyd_csum_xxh3 : glyd_csum_xxh64)

typedef struct {
    unsigned long long contentSize; /* GLYD_CONTENTSIZE_UNKNOWN if absent */
    unsigned windowLog;
    unsigned blockLog;
    unsigned segmentLog;            /* 0 when not segmented */
    unsigned flags;
    uint32_t dictID;
    size_t headerSize;
} glyd_frameHeader;

/* Header size announced by the first bytes (at least 6 are needed), or an
 * error: srcSize_truncated if fewer than 6 bytes are given. */
size_t glyd_frameHeaderSize(const void* src, size_t srcSize);
/* Parses and validates a frame header (magic, version, ranges, check byte).
 * Returns its size or an error (srcSize_truncated if src is too short). */
size_t glyd_frameHeaderRead(glyd_frameHeader* fh, const void* src, size_t srcSize);
/* Writes fh (fh->headerSize is set). Returns the size or an error. */
size_t glyd_frameHeaderWrite(void* dst, size_t cap, glyd_frameHeader* fh);

/* Block header: bit 0 last block, bits 1-2 type, bit 3 history restart,
 * bits 4-31 size (content size for raw and run-length blocks, payload size
 * for compressed and fast ones). Compressed and fast blocks both open with
 * the varint of their content size. */
enum { GLYD_BLOCK_RAW = 0, GLYD_BLOCK_RLE = 1, GLYD_BLOCK_COMPRESSED = 2, GLYD_BLOCK_FAST = 3 };
#define GLYD_BLOCKSIZE_FIELD_MAX ((1u << 28) - 1)

typedef struct {
    unsigned last;
    unsigned type;
    unsigned restart;
    uint32_t size;
} glyd_blockHeader;

GLYD_FORCE_INLINE glyd_blockHeader glyd_blockHeaderRead(const void* p)
{
    uint32_t const v = glyd_read32(p);
    glyd_blockHeader bh;
    bh.last = v & 1;
    bh.type = (v >> 1) & 3;
    bh.restart = (v >> 3) & 1;
    bh.size = v >> 4;
    return bh;
}

GLYD_FORCE_INLINE void glyd_blockHeaderWrite(void* p, unsigned last, unsigned type,
                                             unsigned restart, uint32_t size)
{
    assert(size <= GLYD_BLOCKSIZE_FIELD_MAX);
    glyd_write32(p, last | (type << 1) | (restart << 3) | (size << 4));
}

/* Bytes of the block body that follows a header (payload in the input). */
GLYD_FORCE_INLINE size_t glyd_blockBodySize(glyd_blockHeader bh)
{
    return bh.type == GLYD_BLOCK_RLE ? 1 : bh.size;
}

/* One independent segment of a frame, as found by walking its blocks. */
typedef struct {
    size_t srcOffset;            /* of its first block header, from frame start */
    size_t srcSize;              /* its blocks, headers included */
    unsigned long long dstOffset;/* of its content, from frame content start */
    size_t dstSize;
} glyd_segment;

typedef struct {
    glyd_frameHeader fh;
    size_t frameSize;            /* header, blocks and checksum */
    unsigned long long contentSize; /* sum of the blocks' content sizes */
    unsigned long long nbBlocks;
    size_t nbSegments;
    glyd_segment* segments;      /* when asked for; caller frees with mem */
} glyd_frameMap;

/* Walks the blocks of the frame at src without decoding them, checking
 * block types and sizes against the header's limits. If wantSegments, also
 * lists the segments (allocated with mem). Returns the frame size or an
 * error. */
size_t glyd_frameMapBuild(glyd_frameMap* map, const void* src, size_t srcSize,
                          int wantSegments, glyd_customMem mem);

/* Seek table: a skippable frame after the frame it indexes. */
size_t glyd_seekTableSize(size_t nbSegments);
size_t glyd_seekTableWrite(void* dst, size_t cap, const uint32_t* cSizes, const uint32_t* dSizes,
                           size_t nbSegments);

/* Default segment log for a window: big enough that restarting history
 * costs little ratio, small enough to give threads work. */
GLYD_FORCE_INLINE unsigned glyd_autoSegmentLog(unsigned windowLog)
{
    unsigned const s = windowLog + 2;
    return s < 20 ? 20 : s > 30 ? 30 : s;
}

/* True if src[0..n) is one byte repeated (n > 0). */
int glyd_isRun(const uint8_t* src, size_t n);

#endif /* GLYD_FRAME_H */

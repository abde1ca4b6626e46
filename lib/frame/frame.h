/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.h: the container (docs/FORMAT.md, "Frames"): frame header, block
 * headers, content checksum, independent segments and their seek table,
 * skippable frames. Shared by the compression and decompression contexts.
 */
#ifndef GLYD_FRAME_H
#define GLYD_FRAME_H

#include "../lz/lz.h"
#include "../records/records.h"

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
#define GLYD_F_RECORDS     0x20 /* row groups of records, not blocks (docs/FORMAT.md, section 18) */
#define GLYD_F_RESERVED    0xC0

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

/* Row groups of a records frame: a tag (bit 0 last, bits 1-3 kind), the
 * group's text size and its body's size. A row group's text is at most
 * 2^segmentLog bytes; the column set of a group of log columns at most
 * twice its text and 1 KiB more (docs/FORMAT.md, section 18). The text or
 * the columns as runs of blocks, or as one context-mixing stream. */
#define GLYD_ROWGROUP_HEADER_SIZE 9
enum {
    GLYD_ROWGROUP_TEXT = 0,
    GLYD_ROWGROUP_LOGCOLUMNS = 1,
    GLYD_ROWGROUP_TEXT_CM = 2,
    GLYD_ROWGROUP_LOGCOLUMNS_CM = 3
};
/* Levels from which row groups are also tried through the context-mixing
 * coder (lib/entropy/cm.h): it gains most, at a few MB/s each way. */
#define GLYD_ROWGROUP_CM_LEVEL 20
#define GLYD_ROWGROUP_RUNS_LOGCOLUMNS 7
#define GLYD_ROWGROUP_LOG_DEFAULT 24

typedef struct {
    unsigned last;
    unsigned kind;
    uint32_t textSize;
    uint32_t bodySize;
} glyd_rowGroupHeader;

GLYD_FORCE_INLINE size_t glyd_rowGroupColumnsMax(size_t textSize) { return 2 * textSize + 1024; }
/* A body is never larger than this: its text as blocks, had it been
 * stored raw, takes less, and columns are kept only where they take less. */
GLYD_FORCE_INLINE size_t glyd_rowGroupBodyMax(size_t textSize) { return textSize + (textSize >> 6) + 4096; }

/* Reads and checks a row group header against the frame's segment bound
 * and its body against glyd_rowGroupBodyMax; only a last row group, of
 * text, may be empty (a stream that ended after a flush). */
size_t glyd_rowGroupHeaderRead(glyd_rowGroupHeader* gh, const uint8_t* p, const glyd_frameHeader* fh);
void glyd_rowGroupHeaderWrite(uint8_t* p, glyd_rowGroupHeader gh);

/* Codes a row group: a run of blocks from src[0..n) with a fresh history,
 * the last block marked last; an error (dstSize_tooSmall) where it does
 * not fit in cap. */
typedef size_t (*glyd_runCoder)(void* coder, uint8_t* dst, size_t cap, const uint8_t* src, size_t n);

typedef struct {
    glyd_runCoder codeRun;
    void* coder;
    glyd_customMem mem;
    int contextMixing;          /* also try the context-mixing coder */
    glyd_buffer cols;           /* the text's log columns */
    glyd_buffer alt;            /* the best body so far, where the text's run is not */
    glyd_buffer trial;          /* a body being tried */
} glyd_rowGroupCoder;

/* The size of the next row group of text[0..n): all of it where it fits
 * in max, else up to its last line end inside max, else max. */
size_t glyd_rowGroupCut(const uint8_t* text, size_t n, size_t max);
/* Writes text[0..n) (n at most the frame's segment size) as a row group,
 * header and body, whichever kind takes less (records_compress.c); cap
 * of GLYD_ROWGROUP_HEADER_SIZE + glyd_rowGroupBodyMax(n) is enough. */
size_t glyd_rowGroupCode(glyd_rowGroupCoder* rc, uint8_t* dst, size_t cap, const uint8_t* text, size_t n,
                         int last);
void glyd_rowGroupCoderFree(glyd_rowGroupCoder* rc);

/* Decodes one run of blocks (section 4: up to and including a block marked
 * last) into [dst, dstEnd) with a fresh history, as a segment of the frame
 * fh. Returns the content size; *srcUsed gets the bytes read and *sawLast
 * whether the last block was found (decompress.c). */
size_t glyd_decodeRun(glyd_lzDCtx* lz, const glyd_frameHeader* fh, uint8_t* dst, uint8_t* dstEnd,
                      const uint8_t* src, size_t srcSize, size_t* srcUsed, int* sawLast);

/* What decoding row groups works in, kept from one row group to the next
 * (zeros to start): a group's log columns, and the arrays that rebuild
 * its text from them. */
typedef struct {
    glyd_buffer columns;
    glyd_logScratch rebuild;
} glyd_rowGroupScratch;
void glyd_rowGroupScratchFree(glyd_rowGroupScratch* s, glyd_customMem mem);

/* A row group's text from its body into dst (textSize bytes of room), its
 * header read by glyd_rowGroupHeaderRead, in *scratch, grown as needed
 * (records_decode.c). */
size_t glyd_rowGroupDecode(glyd_lzDCtx* lz, const glyd_frameHeader* fh, const glyd_rowGroupHeader* gh,
                           const uint8_t* body, uint8_t* dst, glyd_rowGroupScratch* scratch, glyd_customMem mem);

/* True if src[0..n) is one byte repeated (n > 0). */
int glyd_isRun(const uint8_t* src, size_t n);

#endif /* GLYD_FRAME_H */

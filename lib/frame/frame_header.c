/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame_header.c: reading and writing frame headers, walking a frame's
 * blocks without decoding them, seek tables, skippable frames, and the
 * public queries built on these (sizes, frame facts).
 */
#include "frame.h"

static uint8_t header_check(const uint8_t* p, size_t n)
{
    return (uint8_t)(XXH64(p, n, 0) >> 8);
}

size_t glyd_frameHeaderSize(const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    unsigned flags;
    RETURN_ERROR_IF(srcSize < 6, srcSize_truncated, "need 6 bytes");
    RETURN_ERROR_IF(glyd_read32(in) != GLYD_MAGIC, prefix_unknown, "magic");
    RETURN_ERROR_IF(in[4] != GLYD_FORMAT_VERSION, version_unsupported, "version");
    flags = in[5];
    RETURN_ERROR_IF(flags & GLYD_F_RESERVED, frameParameter_unsupported, "reserved flags");
    RETURN_ERROR_IF((flags & GLYD_F_XXH3) && !(flags & GLYD_F_CHECKSUM), corruption_detected,
                    "checksum kind without a checksum");
    /* a records frame bounds its row groups by its segment size, and its
     * groups start afresh: no dictionary */
    RETURN_ERROR_IF((flags & GLYD_F_RECORDS) && (flags & (GLYD_F_SEGMENTED | GLYD_F_DICTID)) != GLYD_F_SEGMENTED,
                    frameParameter_unsupported, "records frame without segments, or with a dictionary");
    return GLYD_FRAMEHEADER_MIN + ((flags & GLYD_F_SEGMENTED) ? 1 : 0) +
           ((flags & GLYD_F_CONTENTSIZE) ? 8 : 0) + ((flags & GLYD_F_DICTID) ? 4 : 0);
}

size_t glyd_frameHeaderRead(glyd_frameHeader* fh, const void* src, size_t srcSize)
{
    const uint8_t* const in = (const uint8_t*)src;
    size_t const hsize = glyd_frameHeaderSize(src, srcSize);
    size_t pos = 8;
    FORWARD_IF_ERROR(hsize);
    RETURN_ERROR_IF(srcSize < hsize, srcSize_truncated, "frame header");
    fh->flags = in[5];
    fh->windowLog = in[6];
    fh->blockLog = in[7];
    RETURN_ERROR_IF(fh->windowLog < GLYD_WINDOWLOG_MIN || fh->windowLog > GLYD_WINDOWLOG_MAX,
                    frameParameter_unsupported, "window log");
    RETURN_ERROR_IF(fh->blockLog < GLYD_BLOCKLOG_MIN || fh->blockLog > GLYD_BLOCKLOG_MAX,
                    frameParameter_unsupported, "block log");
    fh->segmentLog = 0;
    if (fh->flags & GLYD_F_SEGMENTED) {
        fh->segmentLog = in[pos++];
        RETURN_ERROR_IF(fh->segmentLog < GLYD_SEGMENTLOG_MIN || fh->segmentLog > GLYD_SEGMENTLOG_MAX,
                        frameParameter_unsupported, "segment log");
    }
    fh->contentSize = GLYD_CONTENTSIZE_UNKNOWN;
    if (fh->flags & GLYD_F_CONTENTSIZE) {
        fh->contentSize = glyd_read64(in + pos);
        pos += 8;
        RETURN_ERROR_IF(fh->contentSize >= GLYD_CONTENTSIZE_ERROR, frameParameter_unsupported,
                        "content size out of range");
    }
    fh->dictID = 0;
    if (fh->flags & GLYD_F_DICTID) {
        fh->dictID = glyd_read32(in + pos);
        pos += 4;
    }
    RETURN_ERROR_IF(in[pos] != header_check(in + 4, pos - 4), corruption_detected,
                    "frame header check byte");
    fh->headerSize = hsize;
    return hsize;
}

size_t glyd_frameHeaderWrite(void* dst, size_t cap, glyd_frameHeader* fh)
{
    uint8_t* const out = (uint8_t*)dst;
    size_t pos = 8;
    RETURN_ERROR_IF(cap < GLYD_FRAMEHEADER_MAX, dstSize_tooSmall, "frame header");
    glyd_write32(out, GLYD_MAGIC);
    out[4] = GLYD_FORMAT_VERSION;
    out[5] = (uint8_t)fh->flags;
    out[6] = (uint8_t)fh->windowLog;
    out[7] = (uint8_t)fh->blockLog;
    if (fh->flags & GLYD_F_SEGMENTED) out[pos++] = (uint8_t)fh->segmentLog;
    if (fh->flags & GLYD_F_CONTENTSIZE) { glyd_write64(out + pos, fh->contentSize); pos += 8; }
    if (fh->flags & GLYD_F_DICTID) { glyd_write32(out + pos, fh->dictID); pos += 4; }
    out[pos] = header_check(out + 4, pos - 4);
    fh->headerSize = pos + 1;
    return pos + 1;
}

int glyd_isRun(const uint8_t* src, size_t n)
{
    size_t i;
    uint64_t pattern;
    if (n < 8) {
        for (i = 1; i < n; i++) if (src[i] != src[0]) return 0;
        return 1;
    }
    pattern = 0x0101010101010101ULL * src[0];
    for (i = 0; i + 8 <= n; i += 8)
        if (glyd_read64(src + i) != pattern) return 0;
    return glyd_read64(src + n - 8) == pattern;
}

/* Appends a segment to map->segments, growing the array. */
static size_t push_segment(glyd_frameMap* map, size_t* cap, glyd_segment seg, glyd_customMem mem)
{
    if (map->nbSegments == *cap) {
        size_t const newCap = *cap ? 2 * *cap : 16;
        glyd_segment* const grown = (glyd_segment*)glyd_malloc(newCap * sizeof(glyd_segment), mem);
        RETURN_ERROR_IF(grown == NULL, memory_allocation, "segment list");
        if (map->nbSegments) memcpy(grown, map->segments, map->nbSegments * sizeof(glyd_segment));
        glyd_free(map->segments, mem);
        map->segments = grown;
        *cap = newCap;
    }
    map->segments[map->nbSegments++] = seg;
    return 0;
}

size_t glyd_rowGroupHeaderRead(glyd_rowGroupHeader* gh, const uint8_t* p, const glyd_frameHeader* fh)
{
    unsigned const tag = p[0];
    gh->last = tag & 1;
    gh->kind = (tag >> 1) & 7;
    gh->textSize = glyd_read32(p + 1);
    gh->bodySize = glyd_read32(p + 5);
    RETURN_ERROR_IF(tag >> 4, corruption_detected, "row group tag");
    RETURN_ERROR_IF(gh->kind > GLYD_ROWGROUP_LOGCOLUMNS_CM, corruption_detected, "row group kind");
    RETURN_ERROR_IF((unsigned long long)gh->textSize > (1ULL << fh->segmentLog), corruption_detected,
                    "row group larger than the frame allows");
    RETURN_ERROR_IF(gh->textSize == 0 && !(gh->kind == GLYD_ROWGROUP_TEXT && gh->last), corruption_detected,
                    "an empty row group other than a last one of text");
    RETURN_ERROR_IF(gh->bodySize > glyd_rowGroupBodyMax(gh->textSize), corruption_detected,
                    "row group body larger than its text allows");
    return GLYD_ROWGROUP_HEADER_SIZE;
}

void glyd_rowGroupHeaderWrite(uint8_t* p, glyd_rowGroupHeader gh)
{
    p[0] = (uint8_t)(gh.last | (gh.kind << 1));
    glyd_write32(p + 1, gh.textSize);
    glyd_write32(p + 5, gh.bodySize);
}

/* A records frame's row groups, each a segment: their headers give their
 * sizes, so the walk reads nothing else. */
static size_t map_row_groups(glyd_frameMap* map, const uint8_t* in, size_t srcSize, size_t* pos,
                             int wantSegments, glyd_customMem mem)
{
    size_t segCap = 0;
    for (;;) {
        glyd_rowGroupHeader gh;
        glyd_segment seg;
        RETURN_ERROR_IF(srcSize - *pos < GLYD_ROWGROUP_HEADER_SIZE, srcSize_truncated, "row group header");
        FORWARD_IF_ERROR(glyd_rowGroupHeaderRead(&gh, in + *pos, &map->fh));
        RETURN_ERROR_IF(srcSize - *pos - GLYD_ROWGROUP_HEADER_SIZE < gh.bodySize, srcSize_truncated, "row group");
        seg.srcOffset = *pos;
        seg.srcSize = GLYD_ROWGROUP_HEADER_SIZE + gh.bodySize;
        seg.dstOffset = map->contentSize;
        seg.dstSize = gh.textSize;
        if (wantSegments) FORWARD_IF_ERROR(push_segment(map, &segCap, seg, mem));
        map->contentSize += gh.textSize;
        map->nbBlocks++;
        *pos += seg.srcSize;
        if (gh.last) return 0;
    }
}

static size_t map_walk(glyd_frameMap* map, const void* src, size_t srcSize, int wantSegments,
                       glyd_customMem mem)
{
    const uint8_t* const in = (const uint8_t*)src;
    size_t pos, segCap = 0;
    size_t blockMax;
    unsigned long long segMax;
    glyd_segment seg;
    int first = 1;
    size_t const hsize = glyd_frameHeaderRead(&map->fh, src, srcSize);
    map->segments = NULL;
    map->nbSegments = 0;
    map->nbBlocks = 0;
    map->contentSize = 0;
    FORWARD_IF_ERROR(hsize);
    pos = hsize;
    blockMax = (size_t)1 << map->fh.blockLog;
    segMax = map->fh.segmentLog ? 1ULL << map->fh.segmentLog : ~0ULL;
    memset(&seg, 0, sizeof(seg));
    if (map->fh.flags & GLYD_F_RECORDS) {
        FORWARD_IF_ERROR(map_row_groups(map, in, srcSize, &pos, wantSegments, mem));
        goto trailer;
    }
    for (;;) {
        glyd_blockHeader bh;
        size_t body, regen;
        if (srcSize - pos < GLYD_BLOCKHEADER_SIZE) goto truncated;
        bh = glyd_blockHeaderRead(in + pos);
        RETURN_ERROR_IF(bh.size > blockMax, corruption_detected, "block larger than the frame allows");
        body = glyd_blockBodySize(bh);
        if (srcSize - pos - GLYD_BLOCKHEADER_SIZE < body) goto truncated;
        if (bh.type == GLYD_BLOCK_COMPRESSED || bh.type == GLYD_BLOCK_FAST) {
            RETURN_ERROR_IF(body == 0, corruption_detected, "empty compressed block");
            regen = glyd_lzBlockContentSize(in + pos + GLYD_BLOCKHEADER_SIZE, body);
            FORWARD_IF_ERROR(regen);
            RETURN_ERROR_IF(regen > blockMax, corruption_detected, "block larger than the frame allows");
        } else {
            regen = bh.size;
        }
        if (first || bh.restart) {
            if (!first && wantSegments) FORWARD_IF_ERROR(push_segment(map, &segCap, seg, mem));
            seg.srcOffset = pos;
            seg.srcSize = 0;
            seg.dstOffset = map->contentSize;
            seg.dstSize = 0;
            first = 0;
        }
        seg.srcSize += GLYD_BLOCKHEADER_SIZE + body;
        seg.dstSize += regen;
        RETURN_ERROR_IF(seg.dstSize > segMax, corruption_detected, "segment larger than the frame allows");
        map->contentSize += regen;
        map->nbBlocks++;
        pos += GLYD_BLOCKHEADER_SIZE + body;
        if (bh.last) break;
    }
    if (wantSegments) FORWARD_IF_ERROR(push_segment(map, &segCap, seg, mem));
    else map->nbSegments = 0;
trailer:
    if (map->fh.flags & GLYD_F_CHECKSUM) {
        if (srcSize - pos < GLYD_CHECKSUM_SIZE) goto truncated;
        pos += GLYD_CHECKSUM_SIZE;
    }
    RETURN_ERROR_IF(map->fh.contentSize != GLYD_CONTENTSIZE_UNKNOWN &&
                    map->fh.contentSize != map->contentSize,
                    contentSize_wrong, "blocks disagree with the declared content size");
    map->frameSize = pos;
    return pos;
truncated:
    RETURN_ERROR(srcSize_truncated, "frame ends early");
}

size_t glyd_frameMapBuild(glyd_frameMap* map, const void* src, size_t srcSize,
                          int wantSegments, glyd_customMem mem)
{
    size_t const r = map_walk(map, src, srcSize, wantSegments, mem);
    if (GLYD_IS_ERROR(r)) {
        /* no error leaves a segment list behind */
        glyd_free(map->segments, mem);
        map->segments = NULL;
        map->nbSegments = 0;
    }
    return r;
}

size_t glyd_seekTableSize(size_t nbSegments)
{
    return GLYD_SKIPPABLE_HEADER + nbSegments * 8 + 9;
}

size_t glyd_seekTableWrite(void* dst, size_t cap, const uint32_t* cSizes, const uint32_t* dSizes,
                           size_t nbSegments)
{
    uint8_t* const out = (uint8_t*)dst;
    size_t const total = glyd_seekTableSize(nbSegments);
    size_t i, pos = GLYD_SKIPPABLE_HEADER;
    RETURN_ERROR_IF(cap < total, dstSize_tooSmall, "seek table");
    RETURN_ERROR_IF(nbSegments > 0x0FFFFFFF, GENERIC, "too many segments");
    glyd_write32(out, GLYD_MAGIC_SEEKTABLE);
    glyd_write32(out + 4, (uint32_t)(total - GLYD_SKIPPABLE_HEADER));
    for (i = 0; i < nbSegments; i++) {
        glyd_write32(out + pos, cSizes[i]);
        glyd_write32(out + pos + 4, dSizes[i]);
        pos += 8;
    }
    glyd_write32(out + pos, (uint32_t)nbSegments);
    out[pos + 4] = 0; /* descriptor: reserved */
    glyd_write32(out + pos + 5, GLYD_SEEKTABLE_FOOTER);
    return total;
}

/* ------------------------------------------------------------------------ */
/* Public queries                                                           */
/* ------------------------------------------------------------------------ */

unsigned glyd_isSkippableFrame(const void* src, size_t srcSize)
{
    return srcSize >= 4 &&
           (glyd_read32(src) & GLYD_MAGIC_SKIPPABLE_MASK) == GLYD_MAGIC_SKIPPABLE_START;
}

size_t glyd_writeSkippableFrame(void* dst, size_t dstCapacity, const void* src, size_t srcSize,
                                unsigned variant)
{
    uint8_t* const out = (uint8_t*)dst;
    RETURN_ERROR_IF(variant > 15 || variant == 0xE, parameter_outOfBound, "variant");
    RETURN_ERROR_IF(srcSize > 0xFFFFFFFFu, srcSize_wrong, "skippable content too large");
    RETURN_ERROR_IF(dstCapacity < srcSize + GLYD_SKIPPABLE_HEADER, dstSize_tooSmall, "skippable");
    glyd_write32(out, GLYD_MAGIC_SKIPPABLE_START + variant);
    glyd_write32(out + 4, (uint32_t)srcSize);
    if (srcSize) memcpy(out + GLYD_SKIPPABLE_HEADER, src, srcSize);
    return srcSize + GLYD_SKIPPABLE_HEADER;
}

/* Size of the skippable frame at src, or an error. */
static size_t skippable_size(const uint8_t* src, size_t srcSize)
{
    uint32_t size;
    RETURN_ERROR_IF(srcSize < GLYD_SKIPPABLE_HEADER, srcSize_truncated, "skippable header");
    size = glyd_read32(src + 4);
    RETURN_ERROR_IF((size_t)size > srcSize - GLYD_SKIPPABLE_HEADER, srcSize_truncated,
                    "skippable content");
    return GLYD_SKIPPABLE_HEADER + (size_t)size;
}

size_t glyd_findFrameCompressedSize(const void* src, size_t srcSize)
{
    glyd_frameMap map;
    if (glyd_isSkippableFrame(src, srcSize)) return skippable_size((const uint8_t*)src, srcSize);
    return glyd_frameMapBuild(&map, src, srcSize, 0, glyd_defaultCMem);
}

unsigned long long glyd_getFrameContentSize(const void* src, size_t srcSize)
{
    glyd_frameHeader fh;
    if (glyd_isSkippableFrame(src, srcSize)) return 0;
    if (GLYD_IS_ERROR(glyd_frameHeaderRead(&fh, src, srcSize))) return GLYD_CONTENTSIZE_ERROR;
    return fh.contentSize;
}

unsigned long long glyd_findDecompressedSize(const void* src, size_t srcSize)
{
    const uint8_t* in = (const uint8_t*)src;
    unsigned long long total = 0;
    int unknown = 0;
    while (srcSize > 0) {
        size_t fsize;
        if (glyd_isSkippableFrame(in, srcSize)) {
            fsize = skippable_size(in, srcSize);
        } else {
            unsigned long long const cs = glyd_getFrameContentSize(in, srcSize);
            if (cs == GLYD_CONTENTSIZE_ERROR) return GLYD_CONTENTSIZE_ERROR;
            if (cs == GLYD_CONTENTSIZE_UNKNOWN) unknown = 1;
            else total += cs;
            fsize = glyd_findFrameCompressedSize(in, srcSize);
        }
        if (GLYD_IS_ERROR(fsize)) return GLYD_CONTENTSIZE_ERROR;
        in += fsize;
        srcSize -= fsize;
    }
    return unknown ? GLYD_CONTENTSIZE_UNKNOWN : total;
}

size_t glyd_getFrameInfo(glyd_frameInfo* info, const void* src, size_t srcSize)
{
    glyd_frameMap map;
    size_t fsize;
    memset(info, 0, sizeof(*info));
    if (glyd_isSkippableFrame(src, srcSize)) {
        fsize = skippable_size((const uint8_t*)src, srcSize);
        FORWARD_IF_ERROR(fsize);
        info->isSkippable = 1;
        info->compressedSize = fsize;
        info->contentSize = 0;
        return fsize;
    }
    fsize = glyd_frameMapBuild(&map, src, srcSize, 1, glyd_defaultCMem);
    FORWARD_IF_ERROR(fsize);
    info->contentSize = map.contentSize;
    info->compressedSize = fsize;
    info->nbBlocks = map.nbBlocks;
    info->nbSegments = map.nbSegments;
    info->windowLog = map.fh.windowLog;
    info->blockLog = map.fh.blockLog;
    info->segmentLog = map.fh.segmentLog;
    info->headerSize = (unsigned)map.fh.headerSize;
    info->version = GLYD_FORMAT_VERSION;
    info->hasChecksum = !(map.fh.flags & GLYD_F_CHECKSUM) ? 0 : (map.fh.flags & GLYD_F_XXH3) ? 2 : 1;
    info->hasContentSize = (map.fh.flags & GLYD_F_CONTENTSIZE) != 0;
    info->dictID = map.fh.dictID;
    info->isRecords = (map.fh.flags & GLYD_F_RECORDS) != 0;
    glyd_free(map.segments, glyd_defaultCMem);
    return fsize;
}

unsigned glyd_getDictIDFromFrame(const void* src, size_t srcSize)
{
    glyd_frameHeader fh;
    if (GLYD_IS_ERROR(glyd_frameHeaderRead(&fh, src, srcSize))) return 0;
    return (fh.flags & GLYD_F_DICTID) ? fh.dictID : 0;
}

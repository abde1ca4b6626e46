/* SPDX-License-Identifier: BSD-3-Clause */
/* test_records_frame.c: records frames (glyd_c_records, `glyd -r`): every
 * file of the shared corpus comes back whole, one-shot, streamed in pieces
 * of every size and on workers; logs take their row groups as columns, and
 * less than the plain frame; text that columns do not help stays text;
 * large inputs split into row groups at line ends; the highest levels
 * context-mix them; damaged and truncated frames are refused, never read
 * past. */
#include <stdlib.h>
#include <string.h>

#include "../../lib/frame/frame.h"
#include "harness.h"

/* A records frame of src[0..n): level, row group log (0: default), and
 * the input given to glyd_compressStream in pieces of `chunk` (0: one
 * shot). Returns it malloc'd, its size in *size (NULL on a failure). */
static uint8_t* records_frame(const uint8_t* src, size_t n, int level, int groupLog, size_t chunk, size_t* size)
{
    glyd_CCtx* const c = glyd_createCCtx();
    size_t const cap = glyd_compressBound(n);
    uint8_t* const out = (uint8_t*)malloc(cap);
    size_t r = 0;
    *size = 0;
    CHECK(c && out);
    if (!c || !out) { glyd_freeCCtx(c); free(out); return NULL; }
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_compressionLevel, level));
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_records, 1));
    if (groupLog) CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_segmentLog, groupLog));
    if (chunk == 0) {
        r = glyd_compress2(c, out, cap, src, n);
    } else {
        glyd_outBuffer ob = { out, cap, 0 };
        size_t pos = 0;
        for (;;) {
            size_t const take = GLYD_MIN(chunk, n - pos);
            glyd_inBuffer ib = { src + pos, take, 0 };
            int const end = pos + take == n;
            do {
                r = glyd_compressStream(c, &ob, &ib, end ? glyd_e_end : glyd_e_continue);
            } while (!glyd_isError(r) && (ib.pos < ib.size || (end && r != 0)));
            pos += take;
            if (glyd_isError(r) || end) break;
        }
        if (!glyd_isError(r)) r = ob.pos;
    }
    CHECK_OK(r);
    glyd_freeCCtx(c);
    if (glyd_isError(r)) { free(out); return NULL; }
    CHECK(r <= cap);
    *size = r;
    return out;
}

/* The frame back to src: one shot, streamed with small output pieces, and
 * on two workers. */
static void check_decodes(const uint8_t* frame, size_t size, const uint8_t* src, size_t n)
{
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    glyd_DCtx* const d = glyd_createDCtx();
    size_t r;
    CHECK(back && d);
    if (!back || !d) { free(back); glyd_freeDCtx(d); return; }
    r = glyd_decompressDCtx(d, back, n, frame, size);
    CHECK(r == n && memcmp(back, src, n) == 0);
    {
        glyd_inBuffer ib = { frame, 0, 0 };
        size_t produced = 0, in = 0;
        r = 1;
        while (r != 0 && !glyd_isError(r)) {
            glyd_outBuffer ob = { back + produced, GLYD_MIN((size_t)4093, n + 1 - produced), 0 };
            ib.size = GLYD_MIN(size, in += 1021);
            r = glyd_decompressStream(d, &ob, &ib);
            produced += ob.pos;
            if (ib.pos == size && ob.pos == 0 && r != 0 && !glyd_isError(r) && produced == n) break;
        }
        CHECK(r == 0 && produced == n && memcmp(back, src, n) == 0);
    }
    CHECK_OK(glyd_DCtx_setParameter(d, glyd_d_nbWorkers, 2));
    memset(back, 0, n);
    r = glyd_decompressDCtx(d, back, n, frame, size);
    CHECK(r == n && memcmp(back, src, n) == 0);
    free(back);
    glyd_freeDCtx(d);
}

/* The kind of the row group at `at` of a records frame. */
static unsigned group_kind(const uint8_t* frame, size_t at) { return (frame[at] >> 1) & 7; }

TEST(records_frames_corpus_round_trip)
{
    static const char* const kFolders[] = { "logs", "tables", "text", "bin" };
    size_t f;
    for (f = 0; f < 4; f++) {
        char* paths[64];
        int const nb = corpus_files(kFolders[f], paths, 64);
        int k;
        for (k = 0; k < nb; k++) {
            size_t n, size, plain;
            uint8_t* const data = read_file(paths[k], &n);
            uint8_t* const frame = data ? records_frame(data, n, 3, 0, 0, &size) : NULL;
            uint8_t* const other = data ? test_compress(data, n, 3, 0, 0, 0, &plain) : NULL;
            if (frame && other) {
                glyd_frameInfo info;
                check_decodes(frame, size, data, n);
                CHECK(glyd_getFrameInfo(&info, frame, size) == size);
                CHECK(info.isRecords && info.contentSize == n && info.nbBlocks >= 1);
                /* a group no larger than the text's own run, and its header */
                CHECK(size <= plain + 64 + 16 * info.nbBlocks);
                /* logs: columns, and less than the plain frame */
                if (f == 0) CHECK(group_kind(frame, info.headerSize) == GLYD_ROWGROUP_LOGCOLUMNS && size < plain);
                if (f == 3) CHECK(group_kind(frame, info.headerSize) == GLYD_ROWGROUP_TEXT);
            }
            free(frame);
            free(other);
            free(data);
            free(paths[k]);
        }
    }
}

static void* counted_alloc(void* opaque, size_t size)
{
    ++*(size_t*)opaque;
    return malloc(size);
}
static void counted_free(void* opaque, void* address)
{
    (void)opaque;
    free(address);
}

TEST(records_frames_one_context_decodes_many)
{
    /* one context, the corpus's logs and tables in turn: what a row group
     * leaves in the context never shows in the next, decoding a frame
     * again allocates nothing, and a damaged frame leaves the context
     * fit for the next */
    static const char* const kFolders[] = { "logs", "tables" };
    size_t allocations = 0;
    glyd_customMem const mem = { counted_alloc, counted_free, &allocations };
    glyd_DCtx* const d = glyd_createDCtx_advanced(mem);
    size_t f;
    CHECK(d != NULL);
    if (!d) return;
    for (f = 0; f < 2; f++) {
        char* paths[64];
        int const nb = corpus_files(kFolders[f], paths, 64);
        int k;
        for (k = 0; k < nb; k++) {
            size_t n, size;
            uint8_t* const data = read_file(paths[k], &n);
            uint8_t* const frame = data ? records_frame(data, n, 3, 0, 0, &size) : NULL;
            uint8_t* const back = (uint8_t*)malloc(n + 1);
            if (frame && back) {
                size_t before, r;
                CHECK(glyd_decompressDCtx(d, back, n, frame, size) == n && !memcmp(back, data, n));
                before = allocations;
                memset(back, 0, n);
                CHECK(glyd_decompressDCtx(d, back, n, frame, size) == n && !memcmp(back, data, n));
                CHECK(allocations == before);
                /* a damaged body stops a decode halfway; the context
                 * still decodes the frame whole */
                frame[size / 2] ^= 0x10;
                r = glyd_decompressDCtx(d, back, n, frame, size);
                frame[size / 2] ^= 0x10;
                CHECK(glyd_isError(r) || r == n);
                CHECK(glyd_decompressDCtx(d, back, n, frame, size) == n && !memcmp(back, data, n));
            }
            free(back);
            free(frame);
            free(data);
            free(paths[k]);
        }
    }
    glyd_freeDCtx(d);
}

TEST(records_frames_context_mixed_at_the_highest_levels)
{
    /* --max tries the text and the columns through the context-mixing
     * coder: every log keeps one of them, in less than -19 takes, and comes
     * back whole every way; a level below keeps to runs of blocks */
    char* paths[64];
    int const nb = corpus_files("logs", paths, 64);
    size_t const most = harness_quick() ? 32768 : (size_t)-1;
    int k;
    for (k = 0; k < nb; k++) {
        size_t n, size, size19, i;
        uint8_t* const data = read_file(paths[k], &n);
        uint8_t *frame = NULL, *frame19 = NULL;
        if (data) {
            glyd_frameInfo info;
            unsigned kind;
            for (i = GLYD_MIN(n, most); i > 0 && data[i - 1] != '\n'; i--) continue;
            n = i ? i : GLYD_MIN(n, most);
            frame = records_frame(data, n, GLYD_LEVEL_MAX, 0, 0, &size);
            frame19 = records_frame(data, n, 19, 0, 0, &size19);
            if (frame && frame19) {
                CHECK(glyd_getFrameInfo(&info, frame, size) == size);
                kind = group_kind(frame, info.headerSize);
                CHECK(kind == GLYD_ROWGROUP_TEXT_CM || kind == GLYD_ROWGROUP_LOGCOLUMNS_CM);
                CHECK(size < size19);
                CHECK(group_kind(frame19, info.headerSize) <= GLYD_ROWGROUP_LOGCOLUMNS);
                check_decodes(frame, size, data, n);
            }
        }
        free(frame);
        free(frame19);
        free(data);
        free(paths[k]);
    }
}

TEST(records_frames_context_mixed_damage_is_refused)
{
    char text[16384];
    size_t n = 0, size, i;
    uint8_t* frame;
    unsigned kinds = 0;
    int words;
    /* prose in a table: the text stream wins; numbered lines: the columns' */
    for (words = 0; words < 2; words++) {
        n = 0;
        for (i = 0; i < 120; i++)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  words ? "\"%s the %s of line %zu\",%zu\n" : "%.0s%.0sjob %zu took %zu ms\n",
                                  i % 3 ? "where" : "when", i % 5 ? "rest" : "end", i, i * i % 97);
        frame = records_frame((const uint8_t*)text, n, GLYD_LEVEL_MAX, 0, 0, &size);
        if (!frame) return;
        {
            glyd_frameHeader fh;
            CHECK_OK(glyd_frameHeaderRead(&fh, frame, size));
            kinds |= 1u << group_kind(frame, fh.headerSize);
        }
        check_decodes(frame, size, (const uint8_t*)text, n);
        for (i = 0; i < size; i += harness_quick() ? 13 : 1) {
            uint8_t back[16384];
            CHECK(glyd_isError(glyd_decompress(back, sizeof back, frame, i)));
        }
        for (i = 0; i < size * 8; i += harness_quick() ? 37 : 5) {
            frame[i / 8] ^= (uint8_t)(1u << (i % 8));
            CHECK(decode_survives(frame, size, (const uint8_t*)text, n));
            frame[i / 8] ^= (uint8_t)(1u << (i % 8));
        }
        free(frame);
    }
    CHECK(kinds & (1u << GLYD_ROWGROUP_TEXT_CM | 1u << GLYD_ROWGROUP_LOGCOLUMNS_CM));
}

TEST(records_frames_stream_in_pieces)
{
    char* paths[64];
    int const nb = corpus_files("logs", paths, 64);
    static const size_t kChunks[] = { 1, 7, 4096, 100000 };
    int k;
    for (k = 0; k < nb; k++) {
        size_t n, c;
        uint8_t* const data = read_file(paths[k], &n);
        /* one byte at a time only for the first file: it is slow */
        for (c = k == 0 ? 0 : 1; data && c < sizeof kChunks / sizeof kChunks[0]; c++) {
            size_t size;
            uint8_t* const frame = records_frame(data, n, 1, 16, kChunks[c], &size);
            if (frame) check_decodes(frame, size, data, n);
            free(frame);
        }
        free(data);
        free(paths[k]);
    }
}

TEST(records_frames_cut_row_groups_at_line_ends)
{
    /* 64 KiB groups over a 600 KB log: every group but the last ends with
     * a line, and each decodes alone through the range reader */
    size_t n, size, at, groups = 0, columns = 0;
    char path[4096];
    uint8_t* data;
    uint8_t* frame;
    glyd_frameHeader fh;
    snprintf(path, sizeof path, "%s/logs/OpenStack_2k.log", corpus_dir());
    data = read_file(path, &n);
    if (!data) return;
    frame = records_frame(data, n, 3, 16, 0, &size);
    if (frame && !glyd_isError(glyd_frameHeaderRead(&fh, frame, size))) {
        size_t text = 0;
        CHECK(fh.flags & GLYD_F_RECORDS);
        CHECK(fh.segmentLog == 16);
        at = fh.headerSize;
        for (;;) {
            glyd_rowGroupHeader gh;
            CHECK_OK(glyd_rowGroupHeaderRead(&gh, frame + at, &fh));
            CHECK(gh.textSize <= 65536);
            text += gh.textSize;
            if (!gh.last) CHECK(data[text - 1] == '\n');
            columns += gh.kind == GLYD_ROWGROUP_LOGCOLUMNS;
            groups++;
            at += GLYD_ROWGROUP_HEADER_SIZE + gh.bodySize;
            if (gh.last) break;
        }
        CHECK(text == n && groups >= 9);
        CHECK(columns + 1 >= groups);
        check_decodes(frame, size, data, n);
        {
            glyd_DCtx* const d = glyd_createDCtx();
            uint8_t part[5000];
            unsigned long long const offsets[3] = { 0, 65000, n - 3000 };
            int i;
            for (i = 0; i < 3; i++) {
                size_t const r = glyd_decompressRange(d, part, sizeof part, frame, size, offsets[i]);
                size_t const want = (size_t)GLYD_MIN((unsigned long long)sizeof part, n - offsets[i]);
                CHECK(r == want && memcmp(part, data + offsets[i], want) == 0);
            }
            glyd_freeDCtx(d);
        }
    }
    free(frame);
    free(data);
}

TEST(records_frames_small_and_odd_texts)
{
#define T(s) { s, sizeof s - 1 }
    static const struct { const char* text; size_t size; } kTexts[] = {
        T(""), T("\n"), T("a"), T("no newline at the end"), T("a\r\nb\r\n"), T("\x10\x11\x12\x13\n"),
    };
#undef T
    size_t k;
    for (k = 0; k < sizeof kTexts / sizeof kTexts[0]; k++) {
        size_t size;
        uint8_t* const frame = records_frame((const uint8_t*)kTexts[k].text, kTexts[k].size, 3, 0, 0, &size);
        if (frame) check_decodes(frame, size, (const uint8_t*)kTexts[k].text, kTexts[k].size);
        free(frame);
    }
    {
        /* one line longer than a group: cut inside it, still whole */
        size_t const n = 3 * 65536 + 77, size0 = 0;
        uint8_t* const line = (uint8_t*)malloc(n);
        size_t i, size = size0;
        uint8_t* frame;
        if (!line) return;
        for (i = 0; i < n; i++) line[i] = (uint8_t)('0' + i % 10);
        frame = records_frame(line, n, 3, 16, 0, &size);
        if (frame) check_decodes(frame, size, line, n);
        free(frame);
        free(line);
    }
}

TEST(records_frames_flush_as_row_groups)
{
    /* each flush ends a row group; an end just after one adds an empty one */
    static const char kText[] = "12:00:01 job 1 done\n12:00:02 job 2 done\n12:00:03 job 3 done\n";
    size_t const n = sizeof kText - 1;
    glyd_CCtx* const c = glyd_createCCtx();
    uint8_t frame[1024];
    glyd_outBuffer ob = { frame, sizeof frame, 0 };
    glyd_inBuffer first = { kText, 21, 0 }, rest = { kText + 21, n - 21, 0 }, none = { kText, 0, 0 };
    glyd_frameInfo info;
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_records, 1));
    CHECK(glyd_compressStream(c, &ob, &first, glyd_e_flush) == 0);
    CHECK(glyd_compressStream(c, &ob, &rest, glyd_e_flush) == 0);
    CHECK(glyd_compressStream(c, &ob, &none, glyd_e_end) == 0);
    CHECK(glyd_getFrameInfo(&info, frame, ob.pos) == ob.pos);
    CHECK(info.isRecords && info.nbBlocks == 3 && info.contentSize == n);
    check_decodes(frame, ob.pos, (const uint8_t*)kText, n);
    glyd_freeCCtx(c);
}

TEST(records_frames_refuse_a_dictionary)
{
    glyd_CCtx* const c = glyd_createCCtx();
    static const char kDict[] = "some dictionary content, long enough to be one";
    uint8_t out[256];
    CHECK_OK(glyd_CCtx_setParameter(c, glyd_c_records, 1));
    CHECK_OK(glyd_CCtx_loadDictionary(c, kDict, sizeof kDict - 1));
    CHECK_ERR(glyd_compress2(c, out, sizeof out, "a line\n", 7), GLYD_error_parameter_unsupported);
    glyd_freeCCtx(c);
}

TEST(records_frames_damage_is_refused)
{
    char text[8192];
    size_t n = 0, size, i;
    uint8_t* frame;
    for (i = 0; i < 60; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "2015-10-18 18:%02zu:47 INFO [main] job %zu started on node-%zu\n",
                              i, 17 + i, i % 5);
    frame = records_frame((const uint8_t*)text, n, 3, 0, 0, &size);
    if (!frame) return;
    {
        glyd_frameHeader fh;
        CHECK_OK(glyd_frameHeaderRead(&fh, frame, size));
        CHECK(group_kind(frame, fh.headerSize) == GLYD_ROWGROUP_LOGCOLUMNS);
    }
    /* every truncation */
    for (i = 0; i < size; i++) {
        uint8_t back[8192];
        CHECK(glyd_isError(glyd_decompress(back, sizeof back, frame, i)));
    }
    /* every bit flipped */
    for (i = 0; i < size; i++) {
        unsigned bit;
        for (bit = 0; bit < 8; bit++) {
            frame[i] ^= (uint8_t)(1u << bit);
            CHECK(decode_survives(frame, size, (const uint8_t*)text, n));
            frame[i] ^= (uint8_t)(1u << bit);
        }
    }
    free(frame);
}

TEST(records_flag_needs_segments_and_no_dictionary)
{
    uint8_t h[GLYD_FRAMEHEADER_MAX];
    glyd_frameHeader fh, back;
    memset(&fh, 0, sizeof fh);
    fh.windowLog = 20;
    fh.blockLog = 17;
    fh.flags = GLYD_F_RECORDS;
    glyd_frameHeaderWrite(h, sizeof h, &fh);
    CHECK_ERR(glyd_frameHeaderRead(&back, h, sizeof h), GLYD_error_frameParameter_unsupported);
    fh.flags = GLYD_F_RECORDS | GLYD_F_SEGMENTED | GLYD_F_DICTID;
    fh.segmentLog = 22;
    fh.dictID = 7;
    glyd_frameHeaderWrite(h, sizeof h, &fh);
    CHECK_ERR(glyd_frameHeaderRead(&back, h, sizeof h), GLYD_error_frameParameter_unsupported);
    fh.flags = GLYD_F_RECORDS | GLYD_F_SEGMENTED;
    glyd_frameHeaderWrite(h, sizeof h, &fh);
    CHECK_OK(glyd_frameHeaderRead(&back, h, sizeof h));
}

/* A records frame of src at level 1 that must come back whole, one shot
 * and on two workers. */
static void check_records(const uint8_t* src, size_t n)
{
    size_t size;
    uint8_t* const frame = records_frame(src, n, 1, 0, 0, &size);
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    glyd_DCtx* const d = glyd_createDCtx();
    CHECK(back && d);
    if (frame && back && d) {
        CHECK(glyd_decompressDCtx(d, back, n, frame, size) == n && memcmp(back, src, n) == 0);
        CHECK_OK(glyd_DCtx_setParameter(d, glyd_d_nbWorkers, 2));
        memset(back, 0, n);
        CHECK(glyd_decompressDCtx(d, back, n, frame, size) == n && memcmp(back, src, n) == 0);
    }
    free(frame);
    free(back);
    glyd_freeDCtx(d);
}

TEST(records_frames_hostile_tables)
{
#define T(s) { s, sizeof s - 1 }
    static const struct { const char* text; size_t size; } kTexts[] = {
        T("id,name,score\n"),                                          /* only a header */
        T("id,name,score\n1,a,2\n2,b\n3,c,4,5,6\n4\n,,\n5,,7\n"),        /* ragged rows, empty fields */
        T("a,\"b\nc\",d\n\"unbalanced,quote\n1,2,3\n"),                  /* quotes across lines, unclosed */
        T("t,v\n2024-01-01 10:00:00,1\n2023-12-31 09:00:00,2\n1999-01-01 00:00:00,3\n"), /* backwards */
    };
#undef T
    size_t k;
    /* long enough to be columns, each repeated */
    for (k = 0; k < sizeof kTexts / sizeof kTexts[0]; k++) {
        size_t const reps = 1000 / kTexts[k].size + 2, n = reps * kTexts[k].size;
        uint8_t* const text = (uint8_t*)malloc(n);
        size_t i;
        if (!text) continue;
        for (i = 0; i < reps; i++) memcpy(text + i * kTexts[k].size, kTexts[k].text, kTexts[k].size);
        check_records(text, n);
        free(text);
    }
    {
        /* a column of a million distinct values (a tenth when quick) */
        size_t const rows = harness_quick() ? 100000 : 1000000, cap = rows * 40;
        char* const text = (char*)malloc(cap);
        test_rng g = { 5 };
        size_t at = 0, i;
        if (text) {
            at += (size_t)snprintf(text, cap, "row,key,value\n");
            for (i = 0; i < rows; i++)
                at += (size_t)snprintf(text + at, cap - at, "%zu,k%016llx,%zu.%02zu\n", i,
                                       (unsigned long long)rng_next(&g), i % 977, i % 100);
            check_records((const uint8_t*)text, at);
        }
        free(text);
    }
    {
        /* one line of 100 MiB (17 MiB when quick): row groups cut inside it */
        size_t const n = harness_quick() ? (17u << 20) : (100u << 20);
        uint8_t* const line = (uint8_t*)malloc(n);
        size_t i;
        if (line) {
            for (i = 0; i < n; i++) line[i] = (uint8_t)(i % 61 == 60 ? ',' : 'a' + i % 26);
            check_records(line, n);
        }
        free(line);
    }
}

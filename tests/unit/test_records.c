/* SPDX-License-Identifier: BSD-3-Clause */
/* test_records.c: log lines as templates and typed columns
 * (lib/records): every file of the shared corpus and hostile texts come
 * back byte for byte; the columns hold what they should (templates once,
 * numbers typed, varying words as variables, a string seen again as a
 * reference, an SQL dump's rows as records); damaged and truncated
 * columns are refused, never read past. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "../../lib/records/records.h"
#include "harness.h"

/* src through columns and back: returns the columns' size (0 on a
 * failure, which is reported). */
static size_t round_trip(const uint8_t* src, size_t n)
{
    size_t const cap = 8 * n + 64;
    uint8_t* const cols = (uint8_t*)malloc(cap);
    uint8_t* const back = (uint8_t*)malloc(n + 1);
    size_t size = 0, r;
    CHECK(cols && back);
    if (!cols || !back) { free(cols); free(back); return 0; }
    r = glyd_logToColumns(cols, cap, src, n);
    CHECK_OK(r);
    if (!glyd_isError(r)) {
        size_t const got = glyd_logFromColumns(back, n, cols, r);
        CHECK(glyd_logRebuiltSize(cols, r) == n);
        CHECK(got == n);
        if (got == n && memcmp(back, src, n) != 0) {
            fprintf(stderr, "# %zu bytes come back otherwise\n", n);
            CHECK(0);
        }
        if (got == n) size = r;
        /* one byte short of room */
        if (n) CHECK_ERR(glyd_logFromColumns(back, n - 1, cols, r), GLYD_error_dstSize_tooSmall);
    }
    free(cols);
    free(back);
    return size;
}

TEST(log_columns_corpus_round_trip)
{
    static const char* const kFolders[] = { "logs", "tables", "text" };
    size_t f;
    for (f = 0; f < 3; f++) {
        char* paths[64];
        int const nb = corpus_files(kFolders[f], paths, 64);
        int k;
        for (k = 0; k < nb; k++) {
            size_t n;
            uint8_t* const data = read_file(paths[k], &n);
            if (data) {
                size_t const cols = round_trip(data, n);
                /* logs: a repeated template per line, much smaller than the text */
                if (f == 0) CHECK(cols > 0 && cols < n);
            }
            free(data);
            free(paths[k]);
        }
    }
}

TEST(log_columns_hostile_texts)
{
#define T(s) { s, sizeof s - 1 }
    static const struct { const char* text; size_t size; } kTexts[] = {
        T(""), T("\n"), T("\n\n\n"), T("no newline at the end"), T("a\r\nb\r\n"), T("trailing spaces   \n\t\n"),
        T("0 -0 00 007 -007 -5 +5 1e5 100000 1.50 0x1F\n"),
        T("999999999999999999 -999999999999999999 1000000000000000000 -9223372036854775808\n"),
        T("1\n999999999999999999\n1\n-999999999999999999\n"), /* deltas that span the whole range */
        T("\x10\x11\x12\x13 x\x11y 7\x12 \x13" "8\n"),      /* the template's own bytes in the text */
        T("unbalanced \"quote and [bracket\n"), T("ts=2015-10-18T18:01:47.978Z level=INFO id=00a3\n"),
        T("\xff\xfe\x80 invalid utf-8 \xc3\x28 9\n"), T("a\0b 1\0 2\n\0"),
    };
#undef T
    size_t k;
    for (k = 0; k < sizeof kTexts / sizeof kTexts[0]; k++) round_trip((const uint8_t*)kTexts[k].text, kTexts[k].size);
    {
        /* the 400-digit number, binary junk, and one long line of numbers */
        test_rng g = { 3 };
        size_t const n = 1 << 16;
        uint8_t* const junk = (uint8_t*)malloc(n);
        char* const digits = (char*)malloc(512);
        char* const line = (char*)malloc(200000);
        size_t i, at = 0;
        CHECK(junk && digits && line);
        if (junk && digits && line) {
            rng_fill(&g, junk, n);
            round_trip(junk, n);
            for (i = 0; i < 400; i++) digits[i] = (char)('1' + i % 9);
            digits[400] = '\n';
            round_trip((const uint8_t*)digits, 401);
            for (i = 0; at + 24 < 200000; i++) at += (size_t)snprintf(line + at, 200000 - at, "%zu ", i * 7919 % 100003);
            round_trip((const uint8_t*)line, at);
        }
        free(junk);
        free(digits);
        free(line);
    }
}

/* The header's template count (after version, size, lines and flag). */
static uint64_t template_count(const uint8_t* cols, size_t size)
{
    uint64_t v = 0;
    size_t pos = 1;
    pos += glyd_readVarint(cols + pos, size - pos, &v);
    pos += glyd_readVarint(cols + pos, size - pos, &v);
    pos++;
    glyd_readVarint(cols + pos, size - pos, &v);
    return v;
}

/* The header's flags byte (after version, size and lines). */
static uint8_t header_flags(const uint8_t* cols, size_t size)
{
    uint64_t v = 0;
    size_t pos = 1;
    pos += glyd_readVarint(cols + pos, size - pos, &v);
    pos += glyd_readVarint(cols + pos, size - pos, &v);
    return cols[pos];
}

TEST(log_columns_hold_templates_once)
{
    /* 1000 lines of one kind: one template, integers as small deltas */
    char* const text = (char*)malloc(64 * 1000);
    uint8_t cols[8192];
    size_t at = 0, i, r;
    if (!text) return;
    for (i = 0; i < 1000; i++)
        at += (size_t)snprintf(text + at, 64, "081109 %06zu INFO dfs.DataNode: block %zu served\n", 203615 + i, 5000 + 3 * i);
    r = glyd_logToColumns(cols, sizeof cols, text, at);
    CHECK_OK(r);
    /* a header, one template, then a line's template, three runs of digits
     * (each a delta of a byte) and their leading zeros: seven bytes a line */
    CHECK(!glyd_isError(r) && r <= 7 * 1000 + 200);
    CHECK_ERR(glyd_logToColumns(cols, 100, text, at), GLYD_error_dstSize_tooSmall);
    if (!glyd_isError(r)) CHECK(template_count(cols, r) == 1);
    free(text);
}

/* The columns of text[0..n) cut at every length, each bit flipped, and a
 * byte too long: refused, or rebuilt to the size they promise. Returns
 * the columns' header flags. */
static uint8_t check_damage_refused(const char* text, size_t n)
{
    uint8_t cols[2048], back[2048], damaged[2048];
    size_t const size = glyd_logToColumns(cols, sizeof cols, text, n);
    size_t i;
    unsigned bit;
    CHECK_OK(size);
    if (glyd_isError(size) || n > sizeof back) return 0;
    /* every truncation */
    for (i = 0; i < size; i++) CHECK(glyd_isError(glyd_logFromColumns(back, sizeof back, cols, i)));
    /* every bit flipped: refused, or some text of the promised size */
    for (i = 0; i < size; i++)
        for (bit = 0; bit < 8; bit++) {
            size_t r;
            memcpy(damaged, cols, size);
            damaged[i] ^= (uint8_t)(1u << bit);
            r = glyd_logFromColumns(back, sizeof back, damaged, size);
            CHECK(glyd_isError(r) || r == glyd_logRebuiltSize(damaged, size));
        }
    /* a trailing byte */
    memcpy(damaged, cols, size);
    damaged[size] = 0;
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, damaged, size + 1), GLYD_error_corruption_detected);
    return header_flags(cols, size);
}

TEST(log_columns_damage_is_refused)
{
    static const char kText[] = "2015-10-18 18:01:47 INFO [main] job 17 started on node-3 after 250 ms\n"
                                "2015-10-18 18:01:48 WARN [main] job 17 retried on node-4 after 12 ms\n"
                                "2015-10-18 18:01:52 INFO [pool-2] job 18 started on node-3 after 3 ms\n";
    check_damage_refused(kText, sizeof kText - 1);
}

TEST(log_columns_words_that_vary_are_variables)
{
    /* lines of one shape whose words vary (package names, states): one
     * template each shape, not one a line; a line of its own shape keeps
     * its words */
    static const char* const kNames[] = { "libc-bin", "dpkg", "tzdata", "perl-base", "zlib", "gzip", "sed" };
    static const char* const kStates[] = { "installed", "unpacked", "half-configured" };
    char text[16384];
    uint8_t cols[32768], back[16384];
    size_t at = 0, i, r;
    for (i = 0; i < 150; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "2025-06-24 14:%02zu:%02zu status %s %s:amd64\n", i / 60,
                               i % 60, kStates[i % 3], kNames[i % 7]);
    at += (size_t)snprintf(text + at, sizeof text - at, "a line alone\n");
    r = glyd_logToColumns(cols, sizeof cols, text, at);
    CHECK_OK(r);
    if (glyd_isError(r)) return;
    CHECK(template_count(cols, r) == 2);
    CHECK(glyd_logFromColumns(back, sizeof back, cols, r) == at && !memcmp(back, text, at));
    /* the lone line's template holds its words */
    CHECK(r > 13 && memmem(cols, r, "a line alone", 12) != NULL);
    /* a name seen again is a reference to it: its bytes are there once */
    {
        const uint8_t* const once = (const uint8_t*)memmem(cols, r, "perl-base", 9);
        CHECK(once != NULL);
        if (once) CHECK(memmem(once + 9, (size_t)(cols + r - (once + 9)), "perl-base", 9) == NULL);
    }
}

TEST(log_columns_tables_split_at_their_separator)
{
    /* a CSV file whose fields hold spaces, commas inside quotes and doubled
     * quotes: a field is one token, so its lines keep one template */
    static const char* const kOrgs[] = { "Acme, Inc.", "Foo \"\"Bar\"\" GmbH", "Baz Co", "Qux & Sons, Ltd" };
    char text[32768];
    uint8_t cols[65536], back[32768];
    size_t at = 0, i, r;
    at += (size_t)snprintf(text + at, sizeof text - at, "Registry,Assignment,Organization Name,Address\r\n");
    for (i = 0; i < 200; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "MA-L,%06zX,\"%s\",%zu Main Street Town%s US %05zu\r\n",
                               0x2272 + 97 * i, kOrgs[i % 4], 100 + i, i % 2 ? "" : " North", 94509 + i);
    r = glyd_logToColumns(cols, sizeof cols, text, at);
    CHECK_OK(r);
    if (glyd_isError(r)) return;
    /* the header, and the rows (hexadecimal assignments: strings) */
    CHECK(template_count(cols, r) <= 3);
    CHECK(glyd_logFromColumns(back, sizeof back, cols, r) == at && !memcmp(back, text, at));
}

TEST(log_columns_decimals_keep_their_text)
{
    /* decimals, integers beside them, and what only looks like them */
    static const char kText[] = "-0.0 0.0 -0.5 007.50 -007.50 1.5000 123456789.123456789 1234567890.5\n"
                                "0.1234567891 61 61.5 5.8 5.83 -3 -03 1e5 .5 5. 5..5 1.2.3 -0 00.008\n"
                                "5555555555555555555.5 1.55555555555555555555 -99999999999999999999.9\n";
    round_trip((const uint8_t*)kText, sizeof kText - 1);
    {
        /* a column of integers and decimals keeps one template */
        char text[4096];
        uint8_t cols[8192];
        size_t at = 0, i, r;
        for (i = 0; i < 100; i++)
            at += (size_t)snprintf(text + at, sizeof text - at, "%zu,%s%zu\n", i, i % 3 ? "" : "-", (i * 37) % 100 + 1);
        for (i = 0; i < 100; i++)
            at += (size_t)snprintf(text + at, sizeof text - at, "%zu,%zu.%zu\n", i, (i * 37) % 100, i % 10);
        r = glyd_logToColumns(cols, sizeof cols, text, at);
        CHECK_OK(r);
        if (!glyd_isError(r)) CHECK(template_count(cols, r) == 1);
        round_trip((const uint8_t*)text, at);
    }
}

TEST(log_columns_sql_rows_are_records)
{
    /* a dump's INSERTs of many rows a line: a record a row, the rows of
     * every line sharing one template, the lines whole again; names as a
     * dump escapes them (a backslash before a quote or a backslash), and
     * "),(" inside quotes, which ends no row */
    static const char* const kNames[] = { "Ideal", "it\\'s", "a),(b", "back\\\\slash", "q\\'),(\\'x" };
    char* const text = (char*)malloc(1u << 16);
    uint8_t* const cols = (uint8_t*)malloc(1u << 17);
    size_t at = 0, i, r;
    CHECK(text && cols);
    if (!text || !cols) { free(text); free(cols); return; }
    at += (size_t)snprintf(text + at, 256, "CREATE TABLE `t` (\n  `id` int,\n  `name` varchar(16)\n);\n");
    for (i = 0; i < 600; i++)
        at += (size_t)snprintf(text + at, 256, "%s(%zu,'%s',%zu.%02zu)%s", i % 100 ? "" : "INSERT INTO `t` VALUES ",
                               1000 + i, kNames[i % 5], i * 7 % 300, i % 100, i % 100 == 99 ? ";\n" : ",");
    r = glyd_logToColumns(cols, 1u << 17, text, at);
    CHECK_OK(r);
    if (!glyd_isError(r)) {
        CHECK(header_flags(cols, r) & GLYD_LOGCOL_FLAG_JOINED);
        /* the DDL's lines, the first row of each INSERT, the others */
        CHECK(template_count(cols, r) <= 12);
        CHECK(r < at / 3);
    }
    round_trip((const uint8_t*)text, at);
    free(text);
    free(cols);
}

TEST(log_columns_sql_odd_rows_come_back)
{
#define T(s) { s, sizeof s - 1 }
    static const struct { const char* text; size_t size; } kTexts[] = {
        T("INSERT INTO t VALUES (1),(2),(3);\n"),
        T("INSERT INTO t VALUES (1),(2),("),
        T("INSERT INTO t VALUES (1),(2),(\n"),
        T("INSERT INTO t VALUES ('),(','\\'),(',''),(''),(x)\n"),
        T("INSERT INTO t VALUES ('unclosed),(1),(2)\nINSERT INTO t VALUES (1),(2)"),
        T("INSERT INTO t VALUES (),(),()\r\n),(\n"),
        T("INSERT INTO t VALUES\n(1),(2)\nINSERT INTO t VALUES (1)\n"),
        T("INSERT INTO ),(,),( VALUES (1),(2);\n"),
    };
#undef T
    size_t k;
    for (k = 0; k < sizeof kTexts / sizeof kTexts[0]; k++) round_trip((const uint8_t*)kTexts[k].text, kTexts[k].size);
}

TEST(log_columns_sql_damage_is_refused)
{
    static const char kText[] = "INSERT INTO `t` VALUES (1,'a',0.5),(2,'b',1.5),(3,'c),(d',2.5);\n"
                                "INSERT INTO `t` VALUES (4,'e',3.5),(5,'f',4.5);\n";
    uint8_t cols[1024], back[sizeof kText];
    size_t const size = glyd_logToColumns(cols, sizeof cols, kText, sizeof kText - 1);
    CHECK(check_damage_refused(kText, sizeof kText - 1) & GLYD_LOGCOL_FLAG_JOINED);
    /* versions before 4 know no cut lines */
    CHECK_OK(size);
    if (glyd_isError(size)) return;
    cols[0] = 3;
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, size), GLYD_error_corruption_detected);
}

/* Columns of one line whose template is a run of digits: its value,
 * leading zeros and the text size the header claims. Returns their size. */
static size_t one_run_columns(uint8_t cols[64], uint64_t value, uint64_t zeros, uint8_t textSize)
{
    uint8_t ints[10], lead[10];
    size_t const ni = glyd_writeVarint(ints, sizeof ints, value << 1);
    size_t const nz = glyd_writeVarint(lead, sizeof lead, zeros);
    size_t at = 0;
    cols[at++] = GLYD_LOGCOL_VERSION;
    cols[at++] = textSize;
    cols[at++] = 1; /* lines */
    cols[at++] = 0; /* flags */
    cols[at++] = 1; /* templates */
    cols[at++] = 2, cols[at++] = 1, cols[at++] = (uint8_t)ni, cols[at++] = (uint8_t)nz;
    cols[at++] = 0, cols[at++] = 0;
    cols[at++] = 1, cols[at++] = GLYD_LOGCOL_DIGITS; /* the template */
    cols[at++] = 0;                                  /* the line's template */
    memcpy(cols + at, ints, ni), at += ni;
    memcpy(cols + at, lead, nz), at += nz;
    return at;
}

TEST(log_columns_with_runs_too_long_are_refused)
{
    uint8_t cols[64], back[64];
    size_t size = one_run_columns(cols, 123, 2, 6);
    CHECK(glyd_logFromColumns(back, sizeof back, cols, size) == 6 && !memcmp(back, "00123\n", 6));
    size = one_run_columns(cols, 100000000000000000ull, 0, 19); /* 18 digits: the longest run */
    CHECK(glyd_logFromColumns(back, sizeof back, cols, size) == 19 && !memcmp(back, "100000000000000000\n", 19));
    /* one zero more; 19 digits; 19 digits and zeros that would wrap a size */
    size = one_run_columns(cols, 100000000000000000ull, 1, 20);
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, size), GLYD_error_corruption_detected);
    size = one_run_columns(cols, 1000000000000000000ull, 0, 20);
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, size), GLYD_error_corruption_detected);
    size = one_run_columns(cols, 1000000000000000000ull, UINT64_MAX - 9, 20);
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, size), GLYD_error_corruption_detected);
}

TEST(log_columns_of_version_3_still_rebuild)
{
    /* version 4 adds only the flag of cut lines: columns without it are
     * version 3's */
    static const char kText[] = "x 1.5 y 12\nx 2.5 y 13\n";
    uint8_t cols[256], back[sizeof kText];
    size_t const n = sizeof kText - 1;
    size_t const size = glyd_logToColumns(cols, sizeof cols, kText, n);
    CHECK_OK(size);
    if (glyd_isError(size)) return;
    CHECK(cols[0] == 4 && !(header_flags(cols, size) & GLYD_LOGCOL_FLAG_JOINED));
    cols[0] = 3;
    CHECK(glyd_logFromColumns(back, sizeof back, cols, size) == n && !memcmp(back, kText, n));
}

TEST(log_columns_of_version_1_still_rebuild)
{
    /* version 1 had no decimals: 0x14 in a template was a byte of text */
    static const uint8_t kV1[] = { 1, 4, 1, 0, 1, 4, 1, 0, 0, 0, 0, 3, 'a', 0x14, 'b', 0 };
    uint8_t cols[sizeof kV1], back[8];
    memcpy(cols, kV1, sizeof kV1);
    CHECK(glyd_logFromColumns(back, sizeof back, cols, sizeof cols) == 4 && !memcmp(back, "a\x14" "b\n", 4));
    /* in version 2 it is a decimal, whose values these columns lack */
    cols[0] = 2;
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, sizeof cols), GLYD_error_corruption_detected);
    cols[0] = 4;
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, sizeof cols), GLYD_error_corruption_detected);
}

TEST(log_columns_of_version_2_still_rebuild)
{
    /* version 2 wrote a number's forms as varints: "x 1.5 y", the slot's
     * header 1 (scale 1), the form 0; version 3 packs forms in bits */
    static const uint8_t kV2[] = { 2, 8, 1, 0, 1, 6, 1, 1, 2, 0, 0, 5, 'x', ' ', 0x14, ' ', 'y', 0, 30, 1, 0 };
    uint8_t cols[sizeof kV2], back[16];
    memcpy(cols, kV2, sizeof kV2);
    CHECK(glyd_logFromColumns(back, sizeof back, cols, sizeof cols) == 8 && !memcmp(back, "x 1.5 y\n", 8));
    cols[0] = 3;
    CHECK_ERR(glyd_logFromColumns(back, sizeof back, cols, sizeof cols), GLYD_error_corruption_detected);
}

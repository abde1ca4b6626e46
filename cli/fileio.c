/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fileio.c: compression, decompression and testing of one input, with the
 * file conventions of zstd and lz4: FILE -> FILE.glyd and back, standard
 * streams for "-", outputs written by the rules of output.c (a temporary
 * name renamed on success; devices, FIFOs and links written through),
 * nothing overwritten without -f, inputs removed only by --rm and only once
 * their output is a regular file safely on disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------------------------------ */
/* Input and output                                                         */
/* ------------------------------------------------------------------------ */

typedef struct {
    FILE* f;
    const char* name;    /* for messages */
    int isStdin;
    int isRegular;
    struct stat st;
} cli_input;

static int open_input(const char* path, cli_input* in)
{
    memset(in, 0, sizeof(*in));
    if (strcmp(path, "-") == 0) {
        in->f = stdin;
        in->name = "stdin";
        in->isStdin = 1;
        if (fstat(STDIN_FILENO, &in->st) == 0) in->isRegular = S_ISREG(in->st.st_mode);
        return 0;
    }
    in->name = path;
    if (stat(path, &in->st) != 0) {
        cli_error("%s: %s", path, strerror(errno));
        return 1;
    }
    if (S_ISDIR(in->st.st_mode)) {
        cli_error("%s: is a directory (glyd works on files; use tar for directories)", path);
        return 1;
    }
    in->isRegular = S_ISREG(in->st.st_mode);
    in->f = fopen(path, "rb");
    if (!in->f) {
        cli_error("%s: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

static void close_input(cli_input* in)
{
    if (in->f && !in->isStdin) fclose(in->f);
    in->f = NULL;
}

static int load_dict(const cli_options* o, glyd_CCtx* cctx, glyd_DCtx* dctx);

/* Opens the output (cli_outOpen), refusing to put compressed data on a
 * terminal. --rm asks for a file synced to disk before its input goes. */
static int open_output(const cli_options* o, cli_out* out, const char* final, const cli_input* in)
{
    cli_outRules rules;
    if (final && strcmp(final, "-") == 0 && o->mode == MODE_COMPRESS && isatty(STDOUT_FILENO) && !o->force) {
        cli_error("refusing to write compressed data to a terminal (use -f to force, or -o FILE)");
        return 1;
    }
    rules.force = o->force;
    rules.input = in->isStdin ? NULL : &in->st;
    rules.sync = !o->keep;
    return cli_outOpen(out, final, &rules);
}

/* Completes (ok) or abandons the output; a new file takes the input's mode
 * and times. Returns 0 when the output is in place. */
static int close_output(cli_out* out, int ok, const cli_input* in)
{
    return cli_outClose(out, ok, in->isRegular && !in->isStdin ? &in->st : NULL);
}

/* --rm: the input goes only once its output is a regular file written in
 * full, synced and renamed into place; otherwise it stays, with a note. */
static void remove_input(const cli_options* o, const cli_input* in, const cli_out* out)
{
    const char* why;
    if (o->keep || in->isStdin || o->mode == MODE_TEST) return;
    why = cli_outKeptWhy(out);
    if (why) {
        cli_note(o, 1, "glyd: %s: kept despite --rm: %s\n", in->name, why);
        return;
    }
    if (unlink(in->name) != 0) cli_error("%s: cannot remove: %s", in->name, strerror(errno));
}

static int stderr_is_terminal(void) { return isatty(STDERR_FILENO); }

static void summary(const cli_options* o, const char* name, unsigned long long in,
                    unsigned long long out, const char* dest)
{
    char a[32], b[32];
    if (o->verbosity < 2 && !(o->verbosity == 1 && stderr_is_terminal())) return;
    if (o->mode == MODE_TEST)
        fprintf(stderr, "%s: OK (%s)\n", name, cli_size(a, sizeof a, out));
    else if (o->mode == MODE_DECOMPRESS)
        fprintf(stderr, "%s: %s => %s, %s\n", name, cli_size(a, sizeof a, in),
                cli_size(b, sizeof b, out), dest);
    else
        fprintf(stderr, "%s: %.2f%% (%s => %s, %s)\n", name,
                in ? 100.0 * (double)out / (double)in : 100.0, cli_size(a, sizeof a, in),
                cli_size(b, sizeof b, out), dest);
}

/* ------------------------------------------------------------------------ */
/* Compression                                                              */
/* ------------------------------------------------------------------------ */

static int has_suffix(const char* s, const char* suffix)
{
    size_t const n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* A safetensors file becomes a packed model of one file, which
 * glyd_packModel writes by the rules of cli_outOpen. Returns 0 on success,
 * 1 after an error, -1 if the file is not valid safetensors. */
static int compress_safetensors(const cli_options* o, const cli_input* in, const char* dest, cli_out* out)
{
    char msg[512] = "";
    glyd_packParams p;
    cli_outRules rules;
    size_t r;
    rules.force = o->force;
    rules.input = &in->st;
    rules.sync = 1; /* glyd_packModel always syncs */
    if (cli_outPlan(out, dest, &rules) || cli_outExpect(out)) return 1;
    memset(&p, 0, sizeof p);
    p.nbThreads = o->threads > 1 ? (unsigned)o->threads : 1;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    r = glyd_packModel(in->name, dest, &p);
    cli_outAdopt(out, !glyd_isError(r), &in->st);
    if (glyd_getErrorCode(r) == GLYD_error_safetensors_invalid) return -1;
    if (glyd_isError(r)) {
        cli_error("%s", msg[0] ? msg : glyd_getErrorName(r));
        return 1;
    }
    summary(o, in->name, (unsigned long long)in->st.st_size, (unsigned long long)r, dest);
    return 0;
}

static const char* derive_compressed_name(const cli_options* o, const char* input, char* buf, size_t cap)
{
    if (o->toStdout) return "-";
    if (o->output) return o->output;
    if (strcmp(input, "-") == 0) return "-";
    snprintf(buf, cap, "%s%s", input, GLYD_SUFFIX);
    return buf;
}

int cli_compressFile(const cli_options* o, const char* input)
{
    char nameBuf[PATH_MAX];
    cli_input in;
    cli_out out;
    cli_progress prog;
    glyd_CCtx* cctx = NULL;
    uint8_t* ibuf = NULL;
    uint8_t* obuf = NULL;
    size_t const isize = glyd_CStreamInSize() * 8;
    size_t const osize = glyd_CStreamOutSize() * 8;
    unsigned long long readBytes = 0, written = 0;
    const char* dest;
    int err = 0;

    if (strcmp(input, "-") == 0 && isatty(STDIN_FILENO)) {
        cli_error("refusing to read from a terminal (name a file, or pipe data in)");
        return 1;
    }
    dest = derive_compressed_name(o, input, nameBuf, sizeof nameBuf);
    if (strlen(input) > 5 && strcmp(input + strlen(input) - 5, GLYD_SUFFIX) == 0 && !o->force &&
        !o->toStdout && !o->output) {
        cli_error("%s: already has the %s suffix; not compressed again (use -f)", input, GLYD_SUFFIX);
        return 1;
    }
    if (open_input(input, &in)) return 1;
    if (in.isRegular && !in.isStdin && strcmp(dest, "-") != 0 && has_suffix(input, ".safetensors")) {
        int const r = compress_safetensors(o, &in, dest, &out);
        if (r >= 0) {
            close_input(&in);
            if (r == 0) remove_input(o, &in, &out);
            return r;
        }
        /* not a valid safetensors file: the general codec takes it */
    }
    if (open_output(o, &out, dest, &in)) {
        close_input(&in);
        return 1;
    }
    cctx = glyd_createCCtx();
    ibuf = (uint8_t*)malloc(isize);
    obuf = (uint8_t*)malloc(osize);
    if (!cctx || !ibuf || !obuf) {
        cli_error("out of memory");
        err = 1;
        goto done;
    }
    glyd_CCtx_setParameter(cctx, glyd_c_compressionLevel, o->level);
    glyd_CCtx_setParameter(cctx, glyd_c_checksumFlag, o->checksum);
    glyd_CCtx_setParameter(cctx, glyd_c_records, o->records);
    if (o->longWindowLog) {
        glyd_CCtx_setParameter(cctx, glyd_c_longMatching, 1);
        /* the default long window shrinks to fit a small input; an explicit one is kept */
        if (o->longWindowLog > 0) glyd_CCtx_setParameter(cctx, glyd_c_windowLog, o->longWindowLog);
    }
    if (glyd_isError(glyd_CCtx_setParameter(cctx, glyd_c_nbWorkers, o->threads))) {
        cli_error("-T%d: too many threads", o->threads);
        err = 1;
        goto done;
    }
    if (o->dict && load_dict(o, cctx, NULL)) {
        err = 1;
        goto done;
    }
    if (in.isRegular) glyd_CCtx_setPledgedSrcSize(cctx, (unsigned long long)in.st.st_size);
    cli_progressStart(&prog, o, in.name, in.isRegular ? (unsigned long long)in.st.st_size : 0);
    for (;;) {
        size_t const n = fread(ibuf, 1, isize, in.f);
        int const atEnd = n < isize;
        glyd_inBuffer ib = { ibuf, n, 0 };
        glyd_EndDirective const op = atEnd ? glyd_e_end : glyd_e_continue;
        size_t remaining;
        if (atEnd && ferror(in.f)) {
            cli_error("%s: read error: %s", in.name, strerror(errno));
            err = 1;
            break;
        }
        readBytes += n;
        do {
            glyd_outBuffer ob = { obuf, osize, 0 };
            remaining = glyd_compressStream(cctx, &ob, &ib, op);
            if (glyd_isError(remaining)) {
                if (glyd_getErrorCode(remaining) == GLYD_error_srcSize_wrong)
                    cli_error("%s: the file changed size while being read", in.name);
                else
                    cli_error("%s: compression failed: %s", in.name, glyd_getErrorName(remaining));
                err = 1;
                break;
            }
            if (cli_outWrite(&out, obuf, ob.pos)) { err = 1; break; }
            written += ob.pos;
        } while (ib.pos < ib.size || (atEnd && remaining != 0));
        if (err) break;
        cli_progressUpdate(&prog, readBytes, written);
        if (atEnd) break;
    }
    cli_progressEnd(&prog);

done:
    if (close_output(&out, !err, &in)) err = 1;
    if (!err) {
        summary(o, in.name, readBytes, written, out.name);
        close_input(&in);
        remove_input(o, &in, &out);
    } else {
        close_input(&in);
    }
    glyd_freeCCtx(cctx);
    free(ibuf);
    free(obuf);
    return err;
}

/* ------------------------------------------------------------------------ */
/* Decompression and test                                                   */
/* ------------------------------------------------------------------------ */

static const char* derive_decompressed_name(const cli_options* o, const char* input, char* buf, size_t cap)
{
    size_t const n = strlen(input);
    size_t const s = strlen(GLYD_SUFFIX);
    if (o->mode == MODE_TEST) return NULL;
    if (o->toStdout) return "-";
    if (o->output) return o->output;
    if (strcmp(input, "-") == 0) return "-";
    if (n <= s || strcmp(input + n - s, GLYD_SUFFIX) != 0 || n - s >= cap) return "";
    memcpy(buf, input, n - s);
    buf[n - s] = 0;
    return buf;
}

/* Loads -D's dictionary into whichever context is given; 1 on failure. */
static int load_dict(const cli_options* o, glyd_CCtx* cctx, glyd_DCtx* dctx)
{
    size_t n, r;
    uint8_t* const dict = cli_readFile(o->dict, &n);
    if (!dict) return 1;
    r = cctx ? glyd_CCtx_loadDictionary(cctx, dict, n) : glyd_DCtx_loadDictionary(dctx, dict, n);
    free(dict);
    if (glyd_isError(r)) {
        cli_error("%s: cannot use as a dictionary: %s", o->dict, glyd_getErrorName(r));
        return 1;
    }
    return 0;
}

/* Where decoding stands: the frame (counted from 1, skippable frames
 * included, as glyd -l counts them) and the byte of the input it starts at. */
typedef struct {
    unsigned long long frame, start;
} frame_pos;

/* One line naming the input, and the frame unless the input is not glyd
 * data at all. */
static void report_decode_error(const char* name, size_t code, const frame_pos* at)
{
    char where[96] = "";
    const char* what;
    char other[128];
    glyd_ErrorCode const e = glyd_getErrorCode(code);
    if (e == GLYD_error_prefix_unknown && at->frame == 1) {
        cli_error("%s: not in glyd format", name);
        return;
    }
    snprintf(where, sizeof where, "frame %llu (at byte %llu): ", at->frame, at->start);
    switch (e) {
    case GLYD_error_dictionary_wrong:
        cli_error("%s: %smade with a dictionary: give the same one with -D DICT", name, where);
        return;
    case GLYD_error_prefix_unknown: what = "not a glyd frame"; break;
    case GLYD_error_corruption_detected: what = "data corruption detected"; break;
    case GLYD_error_checksum_wrong: what = "corrupted data: checksum mismatch"; break;
    case GLYD_error_srcSize_truncated: what = "truncated input: the frame is incomplete"; break;
    case GLYD_error_frameParameter_windowTooLarge: what = "the frame needs more memory to decode than allowed"; break;
    default:
        /* the library's sentence, as the middle of ours */
        snprintf(other, sizeof other, "%s", glyd_getErrorName(code));
        if (other[0] >= 'A' && other[0] <= 'Z' && !(other[1] >= 'A' && other[1] <= 'Z')) other[0] += 'a' - 'A';
        what = other;
        break;
    }
    cli_error("%s: %s%s", name, where, what);
}

static size_t write_piece(void* opaque, const void* data, size_t size)
{
    return cli_outWrite((cli_out*)opaque, data, size) ? (size_t)-(int)GLYD_error_io_failed : 0;
}

/* A packed model holding one file (a compressed .safetensors) restores to
 * that file; one holding a folder needs glyd unpack. */
static int extract_packed(const cli_options* o, cli_input* in, cli_out* out, unsigned long long* readBytes,
                          unsigned long long* written)
{
    char msg[512] = "";
    glyd_packParams p;
    glyd_modelFileInfo fi;
    size_t err, r;
    glyd_model* m;
    memset(&p, 0, sizeof p);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_modelOpen(in->name, &p, &err);
    if (!m) {
        cli_error("%s", msg[0] ? msg : glyd_getErrorName(err));
        return 1;
    }
    if (glyd_modelNbFiles(m) != 1) {
        cli_error("%s: a packed model of %zu files: use glyd unpack %s -o DIR", in->name, glyd_modelNbFiles(m),
                  in->name);
        glyd_modelClose(m);
        return 1;
    }
    glyd_modelGetFile(m, 0, &fi);
    r = glyd_modelExtractFile(m, 0, write_piece, out, o->threads > 1 ? (unsigned)o->threads : 1);
    if (glyd_isError(r) && glyd_getErrorCode(r) != GLYD_error_io_failed) {
        char what[512];
        cli_error("%s: %s", in->name, cli_packedDamage(m, 0, r, 1, what, sizeof what));
    } else if (glyd_isError(r)) {
        cli_error("%s: %s", in->name, glyd_getErrorName(r));
    }
    *readBytes = (unsigned long long)in->st.st_size;
    *written = fi.size;
    glyd_modelClose(m);
    return glyd_isError(r) ? 1 : 0;
}

/* Decodes the mapped input frame by frame, each (its independent segments
 * in parallel) into its place in buf, which holds total bytes. */
static int decode_frames(const cli_input* in, glyd_DCtx* dctx, const uint8_t* src, size_t size, uint8_t* buf,
                         size_t total, size_t* written)
{
    frame_pos at = { 1, 0 };
    size_t op = 0;
    while (at.start < size) {
        size_t const pos = (size_t)at.start;
        size_t const fsize = glyd_findFrameCompressedSize(src + pos, size - pos);
        size_t const r = glyd_isError(fsize) ? fsize : glyd_decompressDCtx(dctx, buf + op, total - op, src + pos, fsize);
        if (glyd_isError(r)) {
            report_decode_error(in->name, r, &at);
            return 1;
        }
        op += r;
        at.start += fsize;
        at.frame++;
    }
    *written = op;
    return 0;
}

/* With several threads: the whole input mapped and decoded in memory, so
 * that independent segments decode in parallel. Returns -1 when this path
 * does not apply (the caller streams instead). */
static int decompress_mapped(const cli_options* o, cli_input* in, cli_out* out, unsigned long long* readBytes,
                             unsigned long long* written)
{
    size_t const size = (size_t)in->st.st_size;
    unsigned long long total;
    void* map;
    uint8_t* buf;
    glyd_DCtx* dctx;
    size_t r = 0;
    int err = 0;
    if (o->threads < 1 || !in->isRegular || size == 0) return -1;
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fileno(in->f), 0);
    if (map == MAP_FAILED) return -1;
    total = glyd_findDecompressedSize(map, size);
    /* only when the content is known and fits comfortably in memory */
    if (total == GLYD_CONTENTSIZE_UNKNOWN || total == GLYD_CONTENTSIZE_ERROR || total > (4ULL << 30)) {
        munmap(map, size);
        return -1;
    }
    buf = (uint8_t*)malloc(total ? (size_t)total : 1);
    dctx = glyd_createDCtx();
    if (!buf || !dctx) {
        munmap(map, size);
        free(buf);
        glyd_freeDCtx(dctx);
        return -1;
    }
    glyd_DCtx_setParameter(dctx, glyd_d_nbWorkers, o->threads);
    glyd_DCtx_setParameter(dctx, glyd_d_checksumCheck, o->checksum);
    if (o->dict && load_dict(o, NULL, dctx)) err = 1;
    else err = decode_frames(in, dctx, (const uint8_t*)map, size, buf, (size_t)total, &r);
    if (!err) {
        err = cli_outWrite(out, buf, r);
        *readBytes = size;
        *written = r;
    }
    munmap(map, size);
    free(buf);
    glyd_freeDCtx(dctx);
    return err;
}

int cli_decompressFile(const cli_options* o, const char* input)
{
    char nameBuf[PATH_MAX];
    cli_input in;
    cli_out out;
    cli_progress prog;
    glyd_DCtx* dctx = NULL;
    uint8_t* ibuf = NULL;
    uint8_t* obuf = NULL;
    size_t const isize = glyd_DStreamInSize() * 8;
    size_t const osize = glyd_DStreamOutSize() * 8;
    unsigned long long readBytes = 0, written = 0;
    const char* dest;
    int err = 0, mapped;
    size_t last = 0;
    frame_pos at = { 1, 0 };

    if (strcmp(input, "-") == 0 && isatty(STDIN_FILENO)) {
        cli_error("refusing to read compressed data from a terminal");
        return 1;
    }
    if (open_input(input, &in)) return 1; /* a directory is named as such */
    dest = derive_decompressed_name(o, input, nameBuf, sizeof nameBuf);
    if (dest && dest[0] == 0) {
        cli_error("%s: unknown suffix (expected %s); use -o FILE or -c", input, GLYD_SUFFIX);
        close_input(&in);
        return 1;
    }
    if (open_output(o, &out, dest, &in)) {
        close_input(&in);
        return 1;
    }
    if (in.isRegular && !in.isStdin && glyd_isPackedModel(input)) {
        err = extract_packed(o, &in, &out, &readBytes, &written);
        goto done;
    }
    mapped = decompress_mapped(o, &in, &out, &readBytes, &written);
    if (mapped >= 0) {
        err = mapped;
        goto done;
    }
    dctx = glyd_createDCtx();
    ibuf = (uint8_t*)malloc(isize);
    obuf = (uint8_t*)malloc(osize);
    if (!dctx || !ibuf || !obuf) {
        cli_error("out of memory");
        err = 1;
        goto done;
    }
    glyd_DCtx_setParameter(dctx, glyd_d_checksumCheck, o->checksum);
    /* --long=N also allows decoding windows that large, as with zstd */
    if (o->longWindowLog > 27) glyd_DCtx_setParameter(dctx, glyd_d_windowLogMax, o->longWindowLog);
    if (o->dict && load_dict(o, NULL, dctx)) {
        err = 1;
        goto done;
    }
    cli_progressStart(&prog, o, in.name, in.isRegular ? (unsigned long long)in.st.st_size : 0);
    for (;;) {
        size_t const n = fread(ibuf, 1, isize, in.f);
        glyd_inBuffer ib = { ibuf, n, 0 };
        if (n == 0) {
            if (ferror(in.f)) {
                cli_error("%s: read error: %s", in.name, strerror(errno));
                err = 1;
            }
            break;
        }
        readBytes += n;
        for (;;) {
            glyd_outBuffer ob = { obuf, osize, 0 };
            last = glyd_decompressStream(dctx, &ob, &ib);
            if (glyd_isError(last)) {
                report_decode_error(in.name, last, &at);
                err = 1;
                break;
            }
            if (last == 0) { /* a frame ended: the next starts here */
                at.frame++;
                at.start = readBytes - n + ib.pos;
            }
            if (cli_outWrite(&out, obuf, ob.pos)) { err = 1; break; }
            written += ob.pos;
            /* a full output buffer may hide more output: call again,
             * unless the frame just ended with nothing left to read */
            if (ib.pos == ib.size && (ob.pos < ob.size || last == 0)) break;
        }
        if (err) break;
        cli_progressUpdate(&prog, readBytes, written);
    }
    cli_progressEnd(&prog);
    if (!err && readBytes == 0) {
        cli_error("%s: empty input (not a glyd frame)", in.name);
        err = 1;
    } else if (!err && last != 0) {
        report_decode_error(in.name, (size_t)-(int)GLYD_error_srcSize_truncated, &at);
        err = 1;
    }

done:
    if (close_output(&out, !err, &in)) err = 1;
    if (!err) {
        summary(o, in.name, readBytes, written, out.name ? out.name : "");
        close_input(&in);
        remove_input(o, &in, &out);
    } else {
        close_input(&in);
    }
    glyd_freeDCtx(dctx);
    free(ibuf);
    free(obuf);
    return err;
}

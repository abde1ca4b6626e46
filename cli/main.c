/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c: the glyd command: argument parsing and dispatch to the codec
 * modes (compress, -d, -t, -l, -b). Options follow zstd's and lz4's.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE* f)
{
    fprintf(f,
        "Usage: glyd [OPTIONS] [FILE...]\n"
        "Compress or decompress files in the glyd format (FILE -> FILE.glyd and back).\n"
        "With no FILE, or when FILE is -, read standard input and write standard output.\n"
        "\n"
        "Modes:\n"
        "  (default)         compress\n"
        "  -d, --decompress  decompress\n"
        "  -t, --test        decompress and check, write nothing\n"
        "  -l, --list        list the frames of compressed files\n"
        "  -b#               benchmark level # in memory (-e# ends a range, -i# seconds)\n"
        "\n"
        "Options:\n"
        "  -#                compression level 1..19 (default %d)\n"
        "  --fast[=N]        faster levels, larger output (N = 1..%d, default 1)\n"
        "  --max             strongest level\n"
        "  -D DICT           compress or decompress with a dictionary\n"
        "  --train FILES     make a dictionary from sample files (-o DICT, default\n"
        "                    'dictionary'; --maxdict=N bytes, default 112640)\n"
        "  -r, --records     text of records (logs, tables) as typed columns, where\n"
        "                    that takes less; -d needs no flag\n"
        "  --long[=N]        find repeats up to 2^N bytes back (default 27: 128 MiB);\n"
        "                    decoding N > 27 needs --long=N as well\n"
        "  -T#, --threads=#  use # threads (0 = all cores; default 1)\n"
        "  -o FILE           write to FILE (one input only)\n"
        "  -c, --stdout      write to standard output\n"
        "  -k, --keep        keep input files (default)\n"
        "      --rm          remove input files after success\n"
        "  -f, --force       overwrite outputs; compress to a terminal\n"
        "      --no-check    no checksum when compressing; skip it when decompressing\n"
        "      --progress    always show progress;  --no-progress: never\n"
        "  -v, --verbose     say more (-vv: even more)\n"
        "  -q, --quiet       say less (errors are always shown)\n"
        "  -h, --help        this help;  -V, --version: the version\n"
        "\n"
        "Models:  glyd pack | unpack | verify | info  (see glyd pack --help);\n"
        "         glyd run MODEL  (see glyd run --help);  glyd tokenize MODEL --file F\n"
        "a .safetensors FILE is packed with the tensor codec, and restored by -d.\n"
        "(To compress a file named like a command, write ./pack or ./run.)\n"
        "\n"
        "glyd has no recursive mode (-r is records): to compress a directory, use\n"
        "tar, as in  tar cf - DIR | glyd -o DIR.tar.glyd\n",
        GLYD_LEVEL_DEFAULT, -GLYD_LEVEL_MIN);
}

/* Parses a non-negative decimal number at *s, advancing *s. */
static int read_number(const char** s, int* value)
{
    long v = 0;
    if (**s < '0' || **s > '9') return 1;
    while (**s >= '0' && **s <= '9') {
        v = v * 10 + (**s - '0');
        if (v > 1000000) return 1;
        (*s)++;
    }
    *value = (int)v;
    return 0;
}

/* -T0 means one thread per online core. */
static void set_threads(cli_options* o, int n)
{
    if (n == 0) {
        long const cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    o->threads = n;
}

static int run(int argc, char** argv, const char** inputs);

int main(int argc, char** argv)
{
    const char** const inputs = (const char**)malloc(sizeof(char*) * (size_t)(argc > 1 ? argc : 1));
    int status;
    if (!inputs) {
        cli_error("out of memory");
        return 1;
    }
    /* every command's standard output is checked once more as it closes */
    atexit(cli_stdoutClose);
    cli_installSignalHandlers();
    if (argc >= 2 && cli_isModelCommand(argv[1])) {
        free(inputs);
        return cli_modelCommand(argc, argv);
    }
    if (argc >= 2 && !strcmp(argv[1], "run")) {
        free(inputs);
        return cli_run(argc, argv);
    }
    if (argc >= 2 && !strcmp(argv[1], "tokenize")) {
        free(inputs);
        return cli_tokenize(argc, argv);
    }
    status = run(argc, argv, inputs);
    free(inputs);
    return status;
}

static int run(int argc, char** argv, const char** inputs)
{
    cli_options o;
    int nbInputs = 0, i, err = 0, endOfOptions = 0;
    int fastLevel = 0, maxLevel = 0;

    memset(&o, 0, sizeof(o));
    o.mode = MODE_COMPRESS;
    o.level = GLYD_LEVEL_DEFAULT;
    o.threads = 1;
    o.keep = 1;
    o.verbosity = 1;
    o.checksum = 1;
    o.progress = -1;
    o.benchSeconds = 1.0;

    for (i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (endOfOptions || a[0] != '-' || a[1] == 0) {
            inputs[nbInputs++] = a;
            continue;
        }
        if (a[1] == '-') {
            const char* const l = a + 2;
            if (*l == 0) endOfOptions = 1;
            else if (!strcmp(l, "decompress") || !strcmp(l, "uncompress")) o.mode = MODE_DECOMPRESS;
            else if (!strcmp(l, "compress")) o.mode = MODE_COMPRESS;
            else if (!strcmp(l, "test")) o.mode = MODE_TEST;
            else if (!strcmp(l, "list")) o.mode = MODE_LIST;
            else if (!strcmp(l, "stdout")) o.toStdout = 1;
            else if (!strcmp(l, "force")) o.force = 1;
            else if (!strcmp(l, "keep")) o.keep = 1;
            else if (!strcmp(l, "rm")) o.keep = 0;
            else if (!strcmp(l, "verbose")) o.verbosity++;
            else if (!strcmp(l, "quiet")) o.verbosity--;
            else if (!strcmp(l, "check")) o.checksum = 1;
            else if (!strcmp(l, "no-check")) o.checksum = 0;
            else if (!strcmp(l, "progress")) o.progress = 1;
            else if (!strcmp(l, "no-progress")) o.progress = 0;
            else if (!strcmp(l, "max")) maxLevel = 1;
            else if (!strcmp(l, "fast")) fastLevel = 1;
            else if (!strcmp(l, "long")) o.longWindowLog = -1;
            else if (!strcmp(l, "records")) o.records = 1;
            else if (!strcmp(l, "train")) o.train = 1;
            else if (!strncmp(l, "maxdict=", 8)) {
                const char* s = l + 8;
                int n;
                if (read_number(&s, &n) || *s || n < 256) {
                    cli_error("--maxdict=N: N must be a number of bytes, at least 256 (at most 1000000)");
                    return 1;
                }
                o.maxDict = (size_t)n;
            }
            else if (!strncmp(l, "long=", 5)) {
                const char* s = l + 5;
                if (read_number(&s, &o.longWindowLog) || *s || o.longWindowLog < 10 || o.longWindowLog > 31) {
                    cli_error("--long=N: N must be 10..31");
                    return 1;
                }
            }
            else if (!strncmp(l, "fast=", 5)) {
                const char* s = l + 5;
                if (read_number(&s, &fastLevel) || *s || fastLevel < 1 || fastLevel > -GLYD_LEVEL_MIN) {
                    cli_error("--fast=N: N must be 1..%d", -GLYD_LEVEL_MIN);
                    return 1;
                }
            } else if (!strncmp(l, "threads=", 8)) {
                const char* s = l + 8;
                int n;
                if (read_number(&s, &n) || *s) { cli_error("--threads=N: N must be a number"); return 1; }
                set_threads(&o, n);
            } else if (!strncmp(l, "output=", 7)) {
                o.output = l + 7;
                if (!*o.output) { cli_error("--output=: the output name is empty"); return 1; }
            } else if (!strcmp(l, "help")) {
                usage(stdout);
                return 0;
            } else if (!strcmp(l, "version")) {
                printf("glyd %s\n", glyd_versionString());
                return 0;
            } else {
                cli_error("unknown option %s (see glyd --help)", a);
                return 1;
            }
            continue;
        }
        /* aggregated short options: -dkf, -19, -T4, -o FILE */
        {
            const char* s = a + 1;
            while (*s) {
                char const c = *s;
                if (c >= '0' && c <= '9') {
                    int lvl = 0;
                    read_number(&s, &lvl);
                    if (lvl < 1 || lvl > 19) {
                        cli_error("-%d: levels are 1..19 (or --fast=N, --max)", lvl);
                        return 1;
                    }
                    o.level = lvl;
                    fastLevel = maxLevel = 0;
                    continue;
                }
                s++;
                switch (c) {
                case 'd': o.mode = MODE_DECOMPRESS; break;
                case 'z': o.mode = MODE_COMPRESS; break;
                case 't': o.mode = MODE_TEST; break;
                case 'l': o.mode = MODE_LIST; break;
                case 'c': o.toStdout = 1; break;
                case 'r': o.records = 1; break;
                case 'k': o.keep = 1; break;
                case 'f': o.force = 1; break;
                case 'v': o.verbosity++; break;
                case 'q': o.verbosity--; break;
                case 'h': case 'H': usage(stdout); return 0;
                case 'V': printf("glyd %s\n", glyd_versionString()); return 0;
                case 'T': {
                    int n;
                    if (read_number(&s, &n)) { cli_error("-T#: # must be a number"); return 1; }
                    set_threads(&o, n);
                    break;
                }
                case 'b': {
                    int n;
                    o.mode = MODE_BENCH;
                    if (read_number(&s, &n) == 0) {
                        if (n < 1 || n > 19) { cli_error("-b#: levels are 1..19"); return 1; }
                        o.level = n;
                    }
                    break;
                }
                case 'e': {
                    int n;
                    if (read_number(&s, &n) || n < 1 || n > 19) { cli_error("-e#: levels are 1..19"); return 1; }
                    o.benchLast = n;
                    break;
                }
                case 'i': {
                    int n;
                    if (read_number(&s, &n) || n < 1) { cli_error("-i#: seconds must be at least 1"); return 1; }
                    o.benchSeconds = n;
                    break;
                }
                case 'o':
                    if (*s) { o.output = s; s += strlen(s); }
                    else if (i + 1 < argc) o.output = argv[++i];
                    else { cli_error("-o needs a file name"); return 1; }
                    if (!*o.output) { cli_error("-o: the output name is empty"); return 1; }
                    break;
                case 'D':
                    if (*s) { o.dict = s; s += strlen(s); }
                    else if (i + 1 < argc) o.dict = argv[++i];
                    else { cli_error("-D needs a dictionary file"); return 1; }
                    break;
                default:
                    cli_error("unknown option -%c (see glyd --help)", c);
                    return 1;
                }
            }
        }
    }
    if (maxLevel) o.level = GLYD_LEVEL_MAX;
    else if (fastLevel) o.level = -fastLevel;
    /* one thread means the calling thread; more mean workers */
    if (o.threads <= 1) o.threads = 0;

    if (o.train) {
        if (nbInputs == 0) { cli_error("--train needs sample files"); return 1; }
        return cli_train(&o, inputs, nbInputs);
    }
    if (o.records && o.dict && o.mode == MODE_COMPRESS) {
        cli_error("-r takes no dictionary (-D): each row group of records starts afresh");
        return 1;
    }
    if (o.mode == MODE_BENCH) return cli_benchmark(&o, inputs, nbInputs);
    if (nbInputs == 0) inputs[nbInputs++] = "-";
    if (o.mode == MODE_LIST) return cli_listFiles(&o, inputs, nbInputs);
    if (o.output && nbInputs > 1) {
        cli_error("-o names one output: use it with one input (or -c to concatenate)");
        return 1;
    }
    if (o.output && strcmp(o.output, "-") == 0) {
        o.output = NULL;
        o.toStdout = 1;
    }
    for (i = 0; i < nbInputs; i++) {
        int const r = o.mode == MODE_COMPRESS ? cli_compressFile(&o, inputs[i])
                                              : cli_decompressFile(&o, inputs[i]);
        if (r) err = 1;
    }
    return err;
}

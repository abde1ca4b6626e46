/*
 * cli.h: what the parts of the glyd command share: options, messages,
 * progress display and the file operations of the codec modes.
 */
#ifndef GLYD_CLI_H
#define GLYD_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "glyd.h"

#define GLYD_SUFFIX ".glyd"

typedef enum { MODE_COMPRESS, MODE_DECOMPRESS, MODE_TEST, MODE_LIST, MODE_BENCH } cli_mode;

typedef struct {
    cli_mode mode;
    int level;
    int threads;          /* worker threads; 0 = this thread only */
    const char* output;   /* -o */
    int toStdout;         /* -c */
    int keep;             /* 1 unless --rm */
    int force;            /* -f */
    int verbosity;        /* 0 quiet, 1 normal, 2+ verbose */
    int checksum;         /* write (compress) or verify (decompress) checksums */
    int progress;         /* -1 auto (terminal), 0 never, 1 always */
    int longWindowLog;    /* --long[=N]: 0 off, else the window's log2 */
    const char* dict;     /* -D DICT */
    int train;            /* --train */
    size_t maxDict;       /* --maxdict=N: dictionary capacity, 0 = default */
    int benchLast;        /* -e#: last level of a -b range */
    double benchSeconds;  /* -i#: seconds per measurement */
} cli_options;

/* Messages: errors always go to stderr as one line; notes only when the
 * verbosity is at least `level`. */
void cli_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_note(const cli_options* o, int level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

/* Human-readable size: "123 B", "4.5 KiB", ... into buf. */
const char* cli_size(char* buf, size_t cap, unsigned long long bytes);
double cli_now(void);

/* Progress line on stderr, shown when stderr is a terminal (or forced) and
 * the work is long enough to need one. */
typedef struct {
    int enabled;
    const char* name;
    unsigned long long total;  /* 0 if unknown */
    double start, last;
} cli_progress;

void cli_progressStart(cli_progress* p, const cli_options* o, const char* name, unsigned long long total);
void cli_progressUpdate(cli_progress* p, unsigned long long in, unsigned long long out);
void cli_progressEnd(cli_progress* p);

/* The codec modes, one input at a time ("-" = standard input). Each returns
 * 0 on success, 1 after printing an error. */
/* Reads a whole file into memory (reporting failures); NULL on failure. */
uint8_t* cli_readFile(const char* path, size_t* size);

int cli_compressFile(const cli_options* o, const char* input);
int cli_decompressFile(const cli_options* o, const char* input);
int cli_listFiles(const cli_options* o, const char* const* inputs, int nbInputs);
int cli_benchmark(const cli_options* o, const char* const* inputs, int nbInputs);
/* --train FILES -o DICT: a dictionary from sample files. */
int cli_train(const cli_options* o, const char* const* inputs, int nbInputs);

/* glyd pack / unpack / verify / info (argv[1] is the command word). */
int cli_isModelCommand(const char* word);
int cli_modelCommand(int argc, char** argv);

/* glyd run MODEL ... (argv[1] is "run"). */
int cli_run(int argc, char** argv);
/* glyd tokenize MODEL --file F. */
int cli_tokenize(int argc, char** argv);

/* Removes the partial output being written, if any (for signal handlers). */
void cli_installSignalHandlers(void);

#endif /* GLYD_CLI_H */

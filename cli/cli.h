/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli.h: what the parts of the glyd command share: options, messages,
 * progress display and the file operations of the codec modes.
 */
#ifndef GLYD_CLI_H
#define GLYD_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "glyd_llm.h"

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
    int records;          /* -r: records frames (typed columns of logs and tables) */
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

/* What failed in extracting file `file` of a packed model with error err:
 * "PATH: tensor NAME is damaged" when its tensors' checksums find the damage
 * (each is checked), else "PATH: " and the error's name. Into buf. */
const char* cli_packedDamage(const glyd_model* m, size_t file, size_t err, unsigned threads, char* buf,
                             size_t cap);
/* The first tensor of file `file`, from `from` on, that fails its checksum
 * (glyd_modelVerifyTensor); the file's tensor count if none does. */
size_t cli_nextDamagedTensor(const glyd_model* m, size_t file, size_t from, unsigned threads);

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

/* ------------------------------------------------------------------------ */
/* Outputs (output.c): every output of every command is written this way.   */
/* ------------------------------------------------------------------------ */

typedef enum {
    CLI_OUT_NONE,     /* nothing is written (-t) */
    CLI_OUT_STDOUT,   /* standard output */
    CLI_OUT_THROUGH,  /* a device or FIFO: written in place, never replaced */
    CLI_OUT_FILE      /* a regular file: written under a temporary name beside
                         it, renamed onto it when complete */
} cli_outKind;

typedef struct {
    int force;                  /* replace an existing regular file */
    const struct stat* input;   /* never write onto this file (NULL: no input file) */
    int sync;                   /* a file: fsync it before, and its folder after, the rename */
} cli_outRules;

typedef struct {
    cli_outKind kind;
    FILE* f;
    const char* name;           /* for messages: as given, or "stdout" */
    char final[PATH_MAX];       /* CLI_OUT_FILE: the file replaced (a symbolic link's target) */
    char temp[PATH_MAX];        /* CLI_OUT_FILE: where it is written until complete */
    int sync;
    int failed;                 /* a write failed (and was reported) */
    int durable;                /* complete, synced and in place: see cli_outKeptWhy */
    void* guard;
} cli_out;

/* Decides how path is written (NULL: nothing; "-": standard output), without
 * creating anything; stale temporary files of glyd's in its folder are
 * removed. Returns 0, or 1 after an error line (an existing regular file
 * without rules->force, a directory, a link to a missing file, the input). */
int cli_outPlan(cli_out* out, const char* path, const cli_outRules* rules);
/* cli_outPlan, then opens out->f. Returns 0, or 1 after an error line. */
int cli_outOpen(cli_out* out, const char* path, const cli_outRules* rules);
/* Writes, reporting a failure once. Returns 0, or 1 after an error line. */
int cli_outWrite(cli_out* out, const void* data, size_t size);
/* Completes the output when ok (a file gets the mode and times of `like`, or
 * the default mode when NULL, and is renamed into place), else abandons it.
 * Returns 0 when the output is complete, 1 after an error line. */
int cli_outClose(cli_out* out, int ok, const struct stat* like);
/* Why --rm must keep the input after writing out, or NULL when the output
 * is a regular file written in full, synced and renamed into place. */
const char* cli_outKeptWhy(const cli_out* out);

/* A file that glyd_packModel writes (by the same rules, under the same
 * temporary name, synced), planned by cli_outPlan: cli_outExpect guards its
 * temporary name before the call; cli_outAdopt, after it, drops the guard
 * and, on success, gives the file the mode and times of like (if not NULL).
 * cli_outExpect returns 0, or 1 after an error line. */
int cli_outExpect(cli_out* out);
void cli_outAdopt(cli_out* out, int ok, const struct stat* like);

/* The temporary name of final: ".NAME.PID.glydtmp" in its folder (the name
 * shortened to fit). glyd_packModel names its temporary file the same way.
 * Returns 0, or 1 if it does not fit. */
int cli_tempName(char* out, size_t cap, const char* final);
/* Removes the temporary files and folders of glyd's in dir that are stale:
 * owned by this user, unchanged for minutes, and whose writer is gone. */
void cli_removeStaleTemps(const char* dir);

/* A folder written whole (glyd unpack): its files are made in a temporary
 * folder beside it, renamed onto it when all are complete; when it exists,
 * they are made in a temporary folder inside it and moved into it at the
 * end. A failure removes every file made. */
typedef struct {
    const char* name;
    char temp[PATH_MAX];
    int into;                   /* the folder existed */
    char** files;               /* made so far, relative to the folder */
    size_t nbFiles, capFiles;
} cli_dirOut;

int cli_dirOpen(cli_dirOut* d, const char* path);
/* Whether rel may be written into the folder: 0, or 1 after an error line. */
int cli_dirCheck(const cli_dirOut* d, const char* rel, int force);
/* Creates rel in the temporary folder; NULL after an error line. */
FILE* cli_dirCreate(cli_dirOut* d, const char* rel);
/* Closes a file of cli_dirCreate: 0 if it was written in full (and ok). */
int cli_dirCloseFile(const cli_dirOut* d, FILE* f, const char* rel, int ok);
/* Puts the folder in place when ok, else removes what was made. 0 on success. */
int cli_dirClose(cli_dirOut* d, int ok);

/* Signals (SIGINT, SIGTERM, SIGHUP) remove the guarded paths, then end the
 * program as they would have. A path is guarded before it is created. */
void cli_installSignalHandlers(void);
void* cli_guardAdd(const char* path);
void cli_guardDrop(void* guard);
/* Drops the guards of path and of everything under it. */
void cli_guardDropUnder(const char* path);

/* Standard output: a failed write is one line, "glyd: stdout: write error:
 * REASON", said once. cli_stdoutFlush flushes it and says whether a write
 * failed (commands that print as they go give up early); cli_stdoutClose, run
 * at exit, flushes and closes it and ends the program with status 1 if any
 * write failed. */
void cli_stdoutError(int err);
int cli_stdoutFlush(void);
void cli_stdoutClose(void);

#endif /* GLYD_CLI_H */

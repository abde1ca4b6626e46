/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output.c: the one way the glyd command writes an output.
 *
 * A regular file (new, or replaced with -f) is written under a temporary
 * name beside it, ".NAME.PID.glydtmp", and renamed onto it when complete, so
 * that a failure leaves the old file or nothing. A device or FIFO (/dev/null,
 * a pipe, a terminal) is written in place and never replaced. A symbolic
 * link is written through: the file it points to is the one replaced, and
 * the link stays. A folder (glyd unpack) is made the same way, whole under a
 * temporary name. Temporary names carry the writer's process id, so that a
 * writer killed outright (SIGKILL) leaves files that a later glyd recognises
 * as stale and removes; other signals remove them at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define TEMP_SUFFIX ".glydtmp"
/* A temporary file this old whose writer is gone is stale: a writer still
 * at work keeps its file's modification time fresh. */
#define STALE_SECONDS (10 * 60)

/* ------------------------------------------------------------------------ */
/* Removal on signals                                                       */
/* ------------------------------------------------------------------------ */

/* Paths to remove if a signal ends the program, newest first. Entries are
 * published whole by one atomic store and never freed, so that the handler,
 * on whichever thread it runs, reads them safely at any moment. */
typedef struct guard_s {
    struct guard_s* next;
    volatile sig_atomic_t live;
    char path[];
} guard;

static _Atomic(guard*) g_guards;

void* cli_guardAdd(const char* path)
{
    size_t const n = strlen(path) + 1;
    guard* const g = (guard*)malloc(sizeof(guard) + n);
    if (!g) return NULL;
    memcpy(g->path, path, n);
    g->live = 1;
    g->next = atomic_load(&g_guards);
    atomic_store(&g_guards, g);
    return g;
}

void cli_guardDrop(void* g)
{
    if (g) ((guard*)g)->live = 0;
}

void cli_guardDropUnder(const char* path)
{
    size_t const n = strlen(path);
    guard* g;
    for (g = atomic_load(&g_guards); g; g = g->next)
        if (strncmp(g->path, path, n) == 0 && (g->path[n] == 0 || g->path[n] == '/')) g->live = 0;
}

static void on_signal(int sig)
{
    const guard* g;
    /* newest first: a folder's files before the folder */
    for (g = atomic_load(&g_guards); g; g = g->next)
        if (g->live && unlink(g->path) != 0) rmdir(g->path);
    signal(sig, SIG_DFL);
    raise(sig);
}

void cli_installSignalHandlers(void)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    size_t i;
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        /* a signal ignored from the start (nohup) stays ignored */
        if (signal(sigs[i], on_signal) == SIG_IGN) signal(sigs[i], SIG_IGN);
    }
}

/* ------------------------------------------------------------------------ */
/* Standard output                                                          */
/* ------------------------------------------------------------------------ */

static int g_stdoutReported;

void cli_stdoutError(int err)
{
    if (g_stdoutReported) return;
    g_stdoutReported = 1;
    if (err) cli_error("stdout: write error: %s", strerror(err));
    else cli_error("stdout: write error");
}

int cli_stdoutFlush(void)
{
    /* the reason is known only here: a failed flush drops what it held */
    if (fflush(stdout) != 0) cli_stdoutError(errno);
    else if (ferror(stdout)) cli_stdoutError(0);
    else return 0;
    return 1;
}

void cli_stdoutClose(void)
{
    int const failedBefore = ferror(stdout);
    int err = 0;
    if (fflush(stdout) != 0) err = errno;
    if (!err && fclose(stdout) != 0 && errno != EBADF) err = errno;
    /* EBADF with nothing left to write: stdout was closed and never used */
    if (err || failedBefore) {
        cli_stdoutError(err);
        _exit(1);
    }
}

/* ------------------------------------------------------------------------ */
/* Names                                                                    */
/* ------------------------------------------------------------------------ */

/* The length of the folder part of path, its final slash included. */
static size_t dir_length(const char* path)
{
    const char* const slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) + 1 : 0;
}

/* The folder of path, for opendir ("." when it has none). */
static void dir_of(char* out, size_t cap, const char* path)
{
    size_t const n = dir_length(path);
    if (n == 0) snprintf(out, cap, ".");
    else snprintf(out, cap, "%.*s", (int)n, path);
}

int cli_tempName(char* out, size_t cap, const char* final)
{
    size_t const dirLen = dir_length(final);
    const char* const base = final + dirLen;
    char tail[32];
    size_t keep = strlen(base);
    int n;
    snprintf(tail, sizeof tail, ".%ld%s", (long)getpid(), TEMP_SUFFIX);
    if (keep == 0) return 1;
    /* a long name is shortened to fit one path component */
    if (1 + keep + strlen(tail) > NAME_MAX) keep = NAME_MAX - 1 - strlen(tail);
    n = snprintf(out, cap, "%.*s.%.*s%s", (int)dirLen, final, (int)keep, base, tail);
    return n < 0 || (size_t)n >= cap;
}

/* Whether name is a temporary name of glyd's; *pid receives its writer. */
static int temp_writer(const char* name, long* pid)
{
    size_t const n = strlen(name), s = strlen(TEMP_SUFFIX);
    size_t i;
    if (name[0] != '.' || n <= s + 3 || strcmp(name + n - s, TEMP_SUFFIX) != 0) return 0;
    i = n - s;
    while (i > 1 && name[i - 1] >= '0' && name[i - 1] <= '9') i--;
    if (i == n - s || i < 3 || name[i - 1] != '.' || n - s - i > 9) return 0;
    *pid = strtol(name + i, NULL, 10);
    return *pid > 0;
}

/* Removes name in the folder dfd: a file, or a folder and all it holds
 * (never following a link). Returns 0 on success. */
static int remove_at(int dfd, const char* name, int depth)
{
    struct stat st;
    DIR* d;
    struct dirent* e;
    int fd, err = 0;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) return unlinkat(dfd, name, 0);
    if (depth > 64) return -1;
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0) return -1;
    d = fdopendir(fd);
    if (!d) { close(fd); return -1; }
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (remove_at(dirfd(d), e->d_name, depth + 1) != 0) err = -1;
    }
    closedir(d);
    return err ? err : unlinkat(dfd, name, AT_REMOVEDIR);
}

static int remove_tree(const char* path) { return remove_at(AT_FDCWD, path, 0); }

void cli_removeStaleTemps(const char* dir)
{
    DIR* const d = opendir(dir);
    struct dirent* e;
    time_t const now = time(NULL);
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        long pid;
        if (!temp_writer(e->d_name, &pid) || pid == (long)getpid()) continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (st.st_uid != geteuid() || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) continue;
        if (now - st.st_mtime < STALE_SECONDS) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* its writer may be at work */
        remove_at(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* Creates path exclusively, for writing. A file of the same name can only be
 * left by an earlier process that had this process id: it is replaced. */
static int create_exclusive(const char* path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST && remove_tree(path) == 0)
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    return fd;
}

/* ------------------------------------------------------------------------ */
/* Files                                                                    */
/* ------------------------------------------------------------------------ */

/* Resolves a symbolic link to the file it names, in out->final; 1 after an
 * error (a link to nothing is not followed: it could create a file anywhere). */
static int resolve_link(cli_out* out, const char* path)
{
    char target[PATH_MAX];
    if (!realpath(path, target)) {
        if (errno == ENOENT)
            cli_error("%s: a symbolic link to a missing file; not written through (name the target)", path);
        else
            cli_error("%s: %s", path, strerror(errno));
        return 1;
    }
    snprintf(out->final, sizeof out->final, "%s", target);
    return 0;
}

int cli_outPlan(cli_out* out, const char* path, const cli_outRules* rules)
{
    struct stat st;
    memset(out, 0, sizeof(*out));
    out->name = path;
    if (path == NULL) {
        out->kind = CLI_OUT_NONE;
        return 0;
    }
    if (strcmp(path, "-") == 0) {
        out->kind = CLI_OUT_STDOUT;
        out->name = "stdout";
        return 0;
    }
    if (path[0] == 0) {
        cli_error("the output name is empty");
        return 1;
    }
    if (strlen(path) >= sizeof out->final) {
        cli_error("%s: file name too long", path);
        return 1;
    }
    snprintf(out->final, sizeof out->final, "%s", path);
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        if (resolve_link(out, path)) return 1;
    }
    if (stat(out->final, &st) != 0) {
        if (errno != ENOENT) {
            cli_error("%s: %s", path, strerror(errno));
            return 1;
        }
    } else if (S_ISDIR(st.st_mode)) {
        cli_error("%s: is a directory", path);
        return 1;
    } else if (!S_ISREG(st.st_mode)) {
        out->kind = CLI_OUT_THROUGH; /* a device or FIFO: nothing to replace */
        return 0;
    } else {
        if (rules->input && st.st_dev == rules->input->st_dev && st.st_ino == rules->input->st_ino) {
            cli_error("%s: input and output are the same file", path);
            return 1;
        }
        if (!rules->force) {
            cli_error("%s: already exists; not overwritten (use -f to overwrite)", path);
            return 1;
        }
    }
    out->kind = CLI_OUT_FILE;
    out->sync = rules->sync;
    if (cli_tempName(out->temp, sizeof out->temp, out->final)) {
        cli_error("%s: file name too long", path);
        return 1;
    }
    {
        char dir[PATH_MAX];
        dir_of(dir, sizeof dir, out->final);
        cli_removeStaleTemps(dir);
    }
    return 0;
}

int cli_outOpen(cli_out* out, const char* path, const cli_outRules* rules)
{
    int fd;
    if (cli_outPlan(out, path, rules)) return 1;
    switch (out->kind) {
    case CLI_OUT_NONE: return 0;
    case CLI_OUT_STDOUT: out->f = stdout; return 0;
    case CLI_OUT_THROUGH:
        fd = open(out->final, O_WRONLY | O_CLOEXEC);
        break;
    case CLI_OUT_FILE:
    default:
        /* guarded before it exists: a signal in between removes nothing */
        out->guard = cli_guardAdd(out->temp);
        if (!out->guard) {
            cli_error("out of memory");
            return 1;
        }
        fd = create_exclusive(out->temp, 0600);
        break;
    }
    if (fd < 0 || !(out->f = fdopen(fd, "wb"))) {
        cli_error("%s: cannot create: %s", out->name, strerror(errno));
        if (fd >= 0) close(fd);
        if (out->kind == CLI_OUT_FILE) unlink(out->temp);
        cli_guardDrop(out->guard);
        return 1;
    }
    return 0;
}

int cli_outWrite(cli_out* out, const void* data, size_t size)
{
    if (out->kind == CLI_OUT_NONE || size == 0) return 0;
    if (fwrite(data, 1, size, out->f) == size) return 0;
    if (out->kind == CLI_OUT_STDOUT) cli_stdoutError(errno);
    else cli_error("%s: write error: %s", out->name, strerror(errno));
    out->failed = 1;
    return 1;
}

int cli_outExpect(cli_out* out)
{
    if (out->kind != CLI_OUT_FILE) return 0;
    out->guard = cli_guardAdd(out->temp);
    if (out->guard) return 0;
    cli_error("out of memory");
    return 1;
}

void cli_outAdopt(cli_out* out, int ok, const struct stat* like)
{
    cli_guardDrop(out->guard);
    out->guard = NULL;
    if (!ok || out->kind != CLI_OUT_FILE) return;
    if (like) {
        struct timespec times[2];
        times[0] = like->st_atim;
        times[1] = like->st_mtim;
        chmod(out->final, like->st_mode & 07777);
        utimensat(AT_FDCWD, out->final, times, 0);
    }
    out->durable = out->sync;
}

/* Gives the new file the mode and times of `like`, or the mode a new file
 * gets (mkstemp-like creation made it private). */
static void set_attributes(int fd, const struct stat* like)
{
    if (like) {
        struct timespec times[2];
        times[0] = like->st_atim;
        times[1] = like->st_mtim;
        fchmod(fd, like->st_mode & 07777);
        futimens(fd, times);
    } else {
        mode_t const mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
}

/* Makes a rename in dir durable. */
static int sync_dir(const char* file)
{
    char dir[PATH_MAX];
    int fd, r;
    dir_of(dir, sizeof dir, file);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    r = fsync(fd);
    close(fd);
    return r;
}

/* Completes or abandons a regular file's output. */
static int close_file(cli_out* out, int ok, const struct stat* like)
{
    if (ok && fflush(out->f) != 0) {
        if (!out->failed) cli_error("%s: write error: %s", out->name, strerror(errno));
        ok = 0;
    }
    if (ok) set_attributes(fileno(out->f), like);
    if (ok && out->sync && fsync(fileno(out->f)) != 0) {
        cli_error("%s: cannot sync: %s", out->name, strerror(errno));
        ok = 0;
    }
    if (fclose(out->f) != 0 && ok) {
        cli_error("%s: write error: %s", out->name, strerror(errno));
        ok = 0;
    }
    out->f = NULL;
    if (ok && rename(out->temp, out->final) != 0) {
        cli_error("%s: cannot rename %s into place: %s", out->name, out->temp, strerror(errno));
        ok = 0;
    }
    if (!ok) unlink(out->temp);
    cli_guardDrop(out->guard);
    out->guard = NULL;
    if (ok && out->sync && sync_dir(out->final) != 0) {
        cli_error("%s: cannot sync its folder: %s", out->name, strerror(errno));
        return 1; /* in place, but not known to be on disk */
    }
    out->durable = ok && out->sync;
    return ok ? 0 : 1;
}

int cli_outClose(cli_out* out, int ok, const struct stat* like)
{
    switch (out->kind) {
    case CLI_OUT_NONE: return ok ? 0 : 1;
    case CLI_OUT_STDOUT:
        if (fflush(stdout) != 0) {
            cli_stdoutError(errno);
            return 1;
        }
        return ok ? 0 : 1;
    case CLI_OUT_THROUGH:
        if (fclose(out->f) != 0 && ok) {
            cli_error("%s: write error: %s", out->name, strerror(errno));
            ok = 0;
        }
        out->f = NULL;
        return ok ? 0 : 1;
    case CLI_OUT_FILE:
    default:
        return close_file(out, ok, like);
    }
}

const char* cli_outKeptWhy(const cli_out* out)
{
    switch (out->kind) {
    case CLI_OUT_NONE: return "nothing was written";
    case CLI_OUT_STDOUT: return "the output is standard output";
    case CLI_OUT_THROUGH: return "the output is not a regular file";
    case CLI_OUT_FILE:
    default: return out->durable ? NULL : "the output is not known to be on disk";
    }
}

/* ------------------------------------------------------------------------ */
/* Folders                                                                  */
/* ------------------------------------------------------------------------ */

/* Creates the folders along rel inside root (rel's last part excluded);
 * those made are guarded when `guarded`. Returns 0, or -1 with errno set. */
static int make_parents(const char* root, const char* rel, int guarded)
{
    char buf[PATH_MAX];
    size_t const rootLen = strlen(root);
    char* p;
    if (snprintf(buf, sizeof buf, "%s/%s", root, rel) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (p = buf + rootLen + 1; *p; p++) {
        struct stat st;
        if (*p != '/') continue;
        *p = 0;
        if (stat(buf, &st) != 0) {
            if (guarded && !cli_guardAdd(buf)) return -1;
            if (mkdir(buf, 0777) != 0) return -1;
        } else if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        *p = '/';
    }
    return 0;
}

int cli_dirOpen(cli_dirOut* d, const char* path)
{
    struct stat st;
    char beside[PATH_MAX];
    int made;
    memset(d, 0, sizeof(*d));
    d->name = path;
    if (path[0] == 0) {
        cli_error("the output name is empty");
        return 1;
    }
    if (stat(path, &st) == 0) {
        const char* const base = path + dir_length(path);
        if (!S_ISDIR(st.st_mode)) {
            cli_error("%s: exists and is not a directory", path);
            return 1;
        }
        /* an existing folder: the files are made in a hidden folder inside
         * it, and moved out of it when all are complete */
        d->into = 1;
        int const plain = base[0] && strcmp(base, ".") != 0 && strcmp(base, "..") != 0;
        if (snprintf(beside, sizeof beside, "%s/%s", path, plain ? base : "unpack") >= (int)sizeof beside) {
            cli_error("%s: file name too long", path);
            return 1;
        }
    } else if (errno != ENOENT) {
        cli_error("%s: %s", path, strerror(errno));
        return 1;
    } else {
        snprintf(beside, sizeof beside, "%s", path);
    }
    while (strlen(beside) > 1 && beside[strlen(beside) - 1] == '/') beside[strlen(beside) - 1] = 0;
    if (cli_tempName(d->temp, sizeof d->temp, beside)) {
        cli_error("%s: file name too long", path);
        return 1;
    }
    {
        char dir[PATH_MAX];
        dir_of(dir, sizeof dir, d->temp);
        cli_removeStaleTemps(dir);
    }
    if (!cli_guardAdd(d->temp)) {
        cli_error("out of memory");
        return 1;
    }
    made = mkdir(d->temp, 0700) == 0;
    if (!made && errno == EEXIST && remove_tree(d->temp) == 0) made = mkdir(d->temp, 0700) == 0;
    if (!made) {
        cli_error("%s: cannot create: %s", path, strerror(errno));
        cli_guardDropUnder(d->temp);
        return 1;
    }
    return 0;
}

int cli_dirCheck(const cli_dirOut* d, const char* rel, int force)
{
    char path[PATH_MAX];
    struct stat st;
    if (!d->into) return 0;
    if (snprintf(path, sizeof path, "%s/%s", d->name, rel) >= (int)sizeof path) {
        cli_error("%s/%s: file name too long", d->name, rel);
        return 1;
    }
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        cli_error("%s: %s", path, strerror(errno)); /* a file where a folder should be */
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_error("%s: exists and is not a regular file; not replaced", path);
        return 1;
    }
    if (!force) {
        cli_error("%s: already exists; not overwritten (use -f to overwrite)", path);
        return 1;
    }
    return 0;
}

FILE* cli_dirCreate(cli_dirOut* d, const char* rel)
{
    char path[PATH_MAX];
    FILE* f = NULL;
    int fd = -1;
    char* copy;
    if (snprintf(path, sizeof path, "%s/%s", d->temp, rel) >= (int)sizeof path) {
        cli_error("%s/%s: file name too long", d->name, rel);
        return NULL;
    }
    if (d->nbFiles == d->capFiles) {
        size_t const cap = d->capFiles ? 2 * d->capFiles : 16;
        char** const grown = (char**)realloc(d->files, cap * sizeof(char*));
        if (!grown) { cli_error("out of memory"); return NULL; }
        d->files = grown;
        d->capFiles = cap;
    }
    copy = strdup(rel);
    if (!copy || !cli_guardAdd(path)) {
        free(copy);
        cli_error("out of memory");
        return NULL;
    }
    d->files[d->nbFiles++] = copy;
    if (make_parents(d->temp, rel, 1) == 0) fd = create_exclusive(path, 0666);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
        cli_error("%s/%s: cannot create: %s", d->name, rel, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    return f;
}

int cli_dirCloseFile(const cli_dirOut* d, FILE* f, const char* rel, int ok)
{
    int const err = fflush(f) != 0 || ferror(f);
    int const errClose = fclose(f) != 0;
    if (ok && (err || errClose)) {
        cli_error("%s/%s: write error: %s", d->name, rel, strerror(errno));
        return 1;
    }
    return ok ? 0 : 1;
}

/* Moves the files made inside an existing folder to their places in it. */
static int move_into(const cli_dirOut* d)
{
    size_t i;
    for (i = 0; i < d->nbFiles; i++) {
        char from[PATH_MAX], to[PATH_MAX];
        int const fits = snprintf(from, sizeof from, "%s/%s", d->temp, d->files[i]) < (int)sizeof from &&
                         snprintf(to, sizeof to, "%s/%s", d->name, d->files[i]) < (int)sizeof to;
        if (!fits) errno = ENAMETOOLONG;
        if (!fits || make_parents(d->name, d->files[i], 0) != 0 || rename(from, to) != 0) {
            cli_error("%s: cannot move into place: %s", to, strerror(errno));
            return 1;
        }
    }
    return 0;
}

int cli_dirClose(cli_dirOut* d, int ok)
{
    size_t i;
    if (ok && d->into) {
        ok = move_into(d) == 0;
    } else if (ok) {
        mode_t const mask = umask(0);
        umask(mask);
        chmod(d->temp, 0777 & ~mask);
        if (rename(d->temp, d->name) != 0) {
            cli_error("%s: cannot rename %s into place: %s", d->name, d->temp, strerror(errno));
            ok = 0;
        }
    }
    if (!ok || d->into) remove_tree(d->temp);
    cli_guardDropUnder(d->temp);
    for (i = 0; i < d->nbFiles; i++) free(d->files[i]);
    free(d->files);
    d->files = NULL;
    d->nbFiles = d->capFiles = 0;
    return ok ? 0 : 1;
}

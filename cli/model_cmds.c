/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_cmds.c: glyd pack, unpack, verify and info: packed models from the
 * command line, through the public API alone.
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

typedef struct {
    const char* args[4];
    int nbArgs;
    const char* output;
    unsigned threads;
    int force;
    int verbosity;
    int progress;
    int json;
    int fastLayout;
} model_opts;

static void usage_models(FILE* f)
{
    fprintf(f,
        "Usage: glyd pack MODEL_DIR [-o OUT]     pack a model folder (default OUT: MODEL_DIR.glyd)\n"
        "       glyd unpack PACKED -o DIR        restore every original file, byte for byte\n"
        "       glyd verify PACKED [MODEL_DIR]   check every file and tensor against its checksums\n"
        "                                        and, given MODEL_DIR, against the source\n"
        "       glyd info PACKED [--json]        sizes and bits per weight by tensor class\n"
        "Options: -T# threads (-T0 all cores), -f overwrite, -q quiet, -v verbose,\n"
        "         --progress / --no-progress, --fast-layout (pack: weights in the fast layout)\n");
}

static int parse_model_opts(int argc, char** argv, model_opts* o)
{
    int i;
    memset(o, 0, sizeof(*o));
    o->threads = 1;
    o->verbosity = 1;
    o->progress = -1;
    for (i = 2; i < argc; i++) {
        const char* const a = argv[i];
        if (!strcmp(a, "-o")) {
            if (++i == argc) { cli_error("-o needs a name"); return 1; }
            o->output = argv[i];
            if (!*o->output) { cli_error("-o: the output name is empty"); return 1; }
        } else if (!strncmp(a, "-o", 2) && a[2]) o->output = a + 2;
        else if (!strncmp(a, "--output=", 9)) {
            o->output = a + 9;
            if (!*o->output) { cli_error("--output=: the output name is empty"); return 1; }
        }
        else if (!strncmp(a, "-T", 2) || !strncmp(a, "--threads=", 10)) {
            const char* const s = a[1] == 'T' ? a + 2 : a + 10;
            char* end;
            long const n = strtol(s, &end, 10);
            if (!*s || *end || n < 0 || n > GLYD_THREADS_MAX) {
                cli_error("%s: threads must be 0..%d", a, GLYD_THREADS_MAX);
                return 1;
            }
            if (n == 0) {
                long const cores = sysconf(_SC_NPROCESSORS_ONLN);
                o->threads = cores > 0 ? (unsigned)cores : 1;
            } else {
                o->threads = (unsigned)n;
            }
        } else if (!strcmp(a, "-f") || !strcmp(a, "--force")) o->force = 1;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->verbosity--;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbosity++;
        else if (!strcmp(a, "--progress")) o->progress = 1;
        else if (!strcmp(a, "--no-progress")) o->progress = 0;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--fast-layout")) o->fastLayout = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage_models(stdout); exit(0); }
        else if (a[0] == '-' && a[1]) { cli_error("%s: unknown option for glyd %s (see glyd %s --help)", a, argv[1], argv[1]); return 1; }
        else if (o->nbArgs < 4) o->args[o->nbArgs++] = a;
        else { cli_error("too many arguments (see glyd %s --help)", argv[1]); return 1; }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* pack                                                                     */
/* ------------------------------------------------------------------------ */

static void on_progress(void* opaque, unsigned long long done, unsigned long long total)
{
    cli_progress* const p = (cli_progress*)opaque;
    p->total = total; /* known once the folder is listed */
    cli_progressUpdate(p, done, 0);
}

static int cmd_pack(const model_opts* o)
{
    char out[PATH_MAX], msg[512] = "";
    glyd_packParams params;
    cli_progress prog;
    cli_options co;
    cli_outRules rules;
    cli_out plan;
    struct stat st;
    size_t r;
    if (o->nbArgs != 1) { cli_error("usage: glyd pack MODEL_DIR [-o OUT]"); return 1; }
    if (o->output) {
        snprintf(out, sizeof out, "%s", o->output);
    } else {
        size_t n = strlen(o->args[0]);
        while (n > 1 && o->args[0][n - 1] == '/') n--;
        snprintf(out, sizeof out, "%.*s.glyd", (int)n, o->args[0]);
    }
    if (stat(o->args[0], &st) != 0) { cli_error("%s: %s", o->args[0], strerror(errno)); return 1; }
    rules.force = o->force;
    rules.input = &st;
    rules.sync = 1; /* glyd_packModel always syncs */
    /* glyd_packModel writes by cli_outOpen's rules: checked here first */
    if (cli_outPlan(&plan, out, &rules) || cli_outExpect(&plan)) return 1;
    memset(&co, 0, sizeof co);
    co.verbosity = o->verbosity;
    co.progress = o->progress;
    memset(&params, 0, sizeof params);
    params.nbThreads = o->threads;
    params.layout = o->fastLayout ? glyd_tensor_fast : glyd_tensor_auto;
    params.progress = on_progress;
    params.opaque = &prog;
    params.message = msg;
    params.messageCapacity = sizeof msg;
    cli_progressStart(&prog, &co, o->args[0], 0);
    r = glyd_packModel(o->args[0], out, &params);
    cli_outAdopt(&plan, !glyd_isError(r), NULL);
    cli_progressEnd(&prog);
    if (glyd_isError(r)) {
        cli_error("pack: %s", msg[0] ? msg : glyd_getErrorName(r));
        return 1;
    }
    if (o->verbosity >= 1) {
        char a[32];
        fprintf(stderr, "%s: %s (%.1f s)\n", out, cli_size(a, sizeof a, (unsigned long long)r),
                cli_now() - prog.start);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* unpack                                                                   */
/* ------------------------------------------------------------------------ */

static size_t write_to_file(void* opaque, const void* data, size_t size)
{
    return fwrite(data, 1, size, (FILE*)opaque) == size ? 0 : (size_t)-(int)GLYD_error_io_failed;
}

/* Restores one file of the packed model into the folder being made. */
static int extract_to(glyd_model* m, const char* packed, size_t i, cli_dirOut* dir, const char* rel,
                      unsigned threads)
{
    FILE* const f = cli_dirCreate(dir, rel);
    size_t r;
    if (!f) return 1;
    r = glyd_modelExtractFile(m, i, write_to_file, f, threads);
    if (glyd_isError(r) && glyd_getErrorCode(r) != GLYD_error_io_failed) {
        char what[512];
        cli_error("%s: %s", packed, cli_packedDamage(m, i, r, threads, what, sizeof what));
        cli_dirCloseFile(dir, f, rel, 0);
        return 1;
    }
    /* a failed write is named by the close, with its reason */
    return cli_dirCloseFile(dir, f, rel, 1);
}

static glyd_model* open_packed(const char* path)
{
    char msg[512] = "";
    glyd_packParams params;
    size_t err;
    glyd_model* m;
    memset(&params, 0, sizeof params);
    params.message = msg;
    params.messageCapacity = sizeof msg;
    m = glyd_modelOpen(path, &params, &err);
    if (!m) cli_error("%s", msg[0] ? msg : glyd_getErrorName(err));
    return m;
}

static int cmd_unpack(const model_opts* o)
{
    glyd_model* m;
    cli_dirOut dir;
    size_t i, n;
    int err = 0;
    if (o->nbArgs != 1 || !o->output) { cli_error("usage: glyd unpack PACKED -o DIR"); return 1; }
    m = open_packed(o->args[0]);
    if (!m) return 1;
    if (cli_dirOpen(&dir, o->output)) {
        glyd_modelClose(m);
        return 1;
    }
    n = glyd_modelNbFiles(m);
    /* every conflict is found before anything is written */
    for (i = 0; i < n && !err; i++) {
        glyd_modelFileInfo fi;
        glyd_modelGetFile(m, i, &fi);
        err = cli_dirCheck(&dir, fi.path, o->force);
    }
    for (i = 0; i < n && !err; i++) {
        glyd_modelFileInfo fi;
        glyd_modelGetFile(m, i, &fi);
        err = extract_to(m, o->args[0], i, &dir, fi.path, o->threads);
        if (!err && o->verbosity >= 2) fprintf(stderr, "%s/%s\n", o->output, fi.path);
    }
    if (cli_dirClose(&dir, !err)) err = 1;
    if (!err && o->verbosity >= 1)
        fprintf(stderr, "%s: %zu file%s restored in %s\n", o->args[0], n, n == 1 ? "" : "s", o->output);
    glyd_modelClose(m);
    return err;
}

/* ------------------------------------------------------------------------ */
/* verify                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    const uint8_t* src;
    size_t size;
    size_t pos;
    size_t firstDiff;  /* offset of the first difference, or SIZE_MAX */
} compare_state;

static size_t compare_piece(void* opaque, const void* data, size_t size)
{
    compare_state* const c = (compare_state*)opaque;
    if (c->firstDiff == SIZE_MAX) {
        if (c->pos + size > c->size) {
            c->firstDiff = c->size < c->pos ? c->pos : c->size;
        } else if (memcmp(c->src + c->pos, data, size) != 0) {
            size_t k = 0;
            while (c->src[c->pos + k] == ((const uint8_t*)data)[k]) k++;
            c->firstDiff = c->pos + k;
        }
    }
    c->pos += size;
    return 0;
}

/* Maps a source file read-only; returns NULL (and an error line) if it cannot. */
static const uint8_t* map_source(const char* path, size_t* size)
{
    struct stat st;
    int const fd = open(path, O_RDONLY);
    void* p;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    *size = (size_t)st.st_size;
    p = *size ? mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0) : malloc(1);
    close(fd);
    return p == MAP_FAILED ? NULL : (const uint8_t*)p;
}

static void unmap_source(const uint8_t* p, size_t size)
{
    if (size) munmap((void*)p, size);
    else free((void*)p);
}

static size_t discard_piece(void* opaque, const void* data, size_t size)
{
    (void)opaque;
    (void)data;
    (void)size;
    return 0;
}

/* A file that failed to extract: each damaged tensor on a line of its own,
 * or the file with the error where no tensor is (its header, a plain file). */
static void print_damage(const glyd_model* m, size_t file, size_t err, unsigned threads)
{
    glyd_modelFileInfo fi;
    size_t t;
    int named = 0;
    glyd_modelGetFile(m, file, &fi);
    for (t = cli_nextDamagedTensor(m, file, 0, threads); t < fi.nbTensors;
         t = cli_nextDamagedTensor(m, file, t + 1, threads)) {
        glyd_modelTensorInfo ti;
        glyd_modelGetTensor(m, file, t, &ti);
        printf("DAMAGED  %s: tensor %s\n", fi.path, ti.name);
        named = 1;
    }
    if (!named) printf("DAMAGED  %s: %s\n", fi.path, glyd_getErrorName(err));
}

/* Every file of a packed model decoded and checked against the checksums
 * of its index, without the original folder. Returns 1 if any is damaged. */
static int verify_alone(const glyd_model* m, const model_opts* o)
{
    size_t const n = glyd_modelNbFiles(m);
    size_t i, nbTensors = 0;
    int bad = 0;
    for (i = 0; i < n; i++) {
        glyd_modelFileInfo fi;
        size_t r;
        glyd_modelGetFile(m, i, &fi);
        r = glyd_modelExtractFile(m, i, discard_piece, NULL, o->threads);
        nbTensors += fi.nbTensors;
        if (glyd_isError(r)) {
            print_damage(m, i, r, o->threads);
            bad = 1;
        } else if (o->verbosity >= 2) {
            printf("ok       %s (%zu tensors)\n", fi.path, fi.nbTensors);
        }
    }
    if (!bad && o->verbosity >= 1)
        printf("%s: all %zu files and %zu tensors match their checksums\n", o->args[0], n, nbTensors);
    return bad;
}

static int cmd_verify(const model_opts* o)
{
    glyd_model* m;
    size_t i, n, nbTensors = 0;
    int bad = 0;
    if (o->nbArgs != 1 && o->nbArgs != 2) { cli_error("usage: glyd verify PACKED [MODEL_DIR]"); return 1; }
    m = open_packed(o->args[0]);
    if (!m) return 1;
    if (o->nbArgs == 1) {
        bad = verify_alone(m, o);
        glyd_modelClose(m);
        return bad;
    }
    n = glyd_modelNbFiles(m);
    for (i = 0; i < n; i++) {
        glyd_modelFileInfo fi;
        char path[PATH_MAX];
        struct stat st;
        compare_state c;
        size_t r;
        glyd_modelGetFile(m, i, &fi);
        if (stat(o->args[1], &st) == 0 && S_ISREG(st.st_mode) && n == 1)
            snprintf(path, sizeof path, "%s", o->args[1]); /* a single packed file */
        else
            snprintf(path, sizeof path, "%s/%s", o->args[1], fi.path);
        c.src = map_source(path, &c.size);
        if (!c.src) {
            printf("MISSING  %s (%s)\n", fi.path, strerror(errno));
            bad = 1;
            continue;
        }
        c.pos = 0;
        c.firstDiff = SIZE_MAX;
        r = glyd_modelExtractFile(m, i, compare_piece, &c, o->threads);
        nbTensors += fi.nbTensors;
        if (glyd_isError(r)) {
            print_damage(m, i, r, o->threads);
            bad = 1;
        } else if (c.firstDiff != SIZE_MAX || c.size != fi.size) {
            /* name the tensor that holds the first difference */
            const char* where = "the header";
            size_t t;
            size_t const at = c.firstDiff != SIZE_MAX ? c.firstDiff
                              : c.size < (size_t)fi.size ? c.size : (size_t)fi.size;
            for (t = 0; t < fi.nbTensors; t++) {
                glyd_modelTensorInfo ti;
                glyd_modelGetTensor(m, i, t, &ti);
                if (at >= ti.offset && at < ti.offset + ti.size) where = ti.name;
            }
            if (c.size != fi.size)
                printf("DIFFERS  %s: %zu bytes in the folder, %llu packed\n", fi.path, c.size, fi.size);
            else if (fi.isSafetensors)
                printf("DIFFERS  %s: first at byte %zu, in tensor %s\n", fi.path, at, where);
            else
                printf("DIFFERS  %s: first at byte %zu\n", fi.path, at);
            bad = 1;
        } else if (o->verbosity >= 2) {
            printf("ok       %s (%zu tensors)\n", fi.path, fi.nbTensors);
        }
        unmap_source(c.src, c.size);
    }
    if (!bad && o->verbosity >= 1)
        printf("%s: all %zu files and %zu tensors match %s bit for bit\n", o->args[0], n, nbTensors, o->args[1]);
    glyd_modelClose(m);
    return bad;
}

/* ------------------------------------------------------------------------ */
/* info                                                                     */
/* ------------------------------------------------------------------------ */

enum { CLS_EMBED, CLS_ATTN, CLS_MLP, CLS_NORM, CLS_OTHER, CLS_FILES, NB_CLASSES };
static const char* const kClassNames[NB_CLASSES] = { "embeddings", "attention", "MLP", "norms", "other",
                                                     "other files" };

static int contains(const char* s, const char* part) { return strstr(s, part) != NULL; }

/* The class of a tensor, from the names Hugging Face models use. */
static int tensor_class(const char* name)
{
    char low[512];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof low; i++) low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    low[i] = 0;
    if (contains(low, "norm") || contains(low, "ln_") || contains(low, ".ln") || contains(low, "_ln")) return CLS_NORM;
    if (contains(low, "embed") || contains(low, "wte") || contains(low, "wpe") || contains(low, "lm_head"))
        return CLS_EMBED;
    if (contains(low, "attn") || contains(low, "attention") || contains(low, "q_proj") || contains(low, "k_proj") ||
        contains(low, "v_proj") || contains(low, "o_proj") || contains(low, "qkv"))
        return CLS_ATTN;
    if (contains(low, "mlp") || contains(low, "ffn") || contains(low, "feed_forward") || contains(low, "gate_proj") ||
        contains(low, "up_proj") || contains(low, "down_proj") || contains(low, "intermediate") ||
        contains(low, "output.dense") || contains(low, "fc1") || contains(low, "fc2"))
        return CLS_MLP;
    return CLS_OTHER;
}

typedef struct { unsigned long long tensors, weights, orig, packed; } class_sum;

static int cmd_info(const model_opts* o)
{
    class_sum cls[NB_CLASSES], total;
    glyd_model* m;
    size_t i, t, n;
    unsigned long long meta;
    int c;
    if (o->nbArgs != 1) { cli_error("usage: glyd info PACKED [--json]"); return 1; }
    m = open_packed(o->args[0]);
    if (!m) return 1;
    memset(cls, 0, sizeof cls);
    memset(&total, 0, sizeof total);
    n = glyd_modelNbFiles(m);
    for (i = 0; i < n; i++) {
        glyd_modelFileInfo fi;
        glyd_modelGetFile(m, i, &fi);
        total.orig += fi.size;
        if (!fi.isSafetensors) {
            cls[CLS_FILES].tensors++;
            cls[CLS_FILES].orig += fi.size;
            cls[CLS_FILES].packed += fi.packedSize;
            continue;
        }
        for (t = 0; t < fi.nbTensors; t++) {
            glyd_modelTensorInfo ti;
            glyd_modelGetTensor(m, i, t, &ti);
            c = tensor_class(ti.name);
            cls[c].tensors++;
            cls[c].weights += ti.nbElements;
            cls[c].orig += ti.size;
            cls[c].packed += ti.packedSize;
            total.tensors++;
            total.weights += ti.nbElements;
        }
    }
    total.packed = glyd_modelPackedSize(m);
    meta = total.packed;
    for (c = 0; c < NB_CLASSES; c++) meta -= cls[c].packed;
    if (o->json) {
        printf("{\"file\": \"%s\", \"classes\": [", o->args[0]);
        for (c = 0; c < NB_CLASSES; c++)
            printf("%s{\"class\": \"%s\", \"tensors\": %llu, \"weights\": %llu, \"original_bytes\": %llu, "
                   "\"packed_bytes\": %llu, \"bits_per_weight\": %.4f}",
                   c ? ", " : "", kClassNames[c], cls[c].tensors, cls[c].weights, cls[c].orig, cls[c].packed,
                   cls[c].weights ? 8.0 * (double)cls[c].packed / (double)cls[c].weights : 0.0);
        printf("], \"metadata_bytes\": %llu, \"total\": {\"tensors\": %llu, \"weights\": %llu, "
               "\"original_bytes\": %llu, \"packed_bytes\": %llu, \"bits_per_weight\": %.4f, "
               "\"saved_percent\": %.2f}}\n",
               meta, total.tensors, total.weights, total.orig, total.packed,
               total.weights ? 8.0 * (double)total.packed / (double)total.weights : 0.0,
               total.orig ? 100.0 * (1.0 - (double)total.packed / (double)total.orig) : 0.0);
    } else {
        char a[32], b[32];
        printf("%-12s %8s %14s %12s %12s %9s %7s\n", "class", "tensors", "weights", "original", "packed",
               "bits/w", "saved");
        for (c = 0; c < NB_CLASSES; c++) {
            if (!cls[c].tensors) continue;
            printf("%-12s %8llu %14llu %12s %12s ", kClassNames[c], cls[c].tensors, cls[c].weights,
                   cli_size(a, sizeof a, cls[c].orig), cli_size(b, sizeof b, cls[c].packed));
            if (cls[c].weights) printf("%9.3f", 8.0 * (double)cls[c].packed / (double)cls[c].weights);
            else printf("%9s", "-");
            printf(" %6.1f%%\n", cls[c].orig ? 100.0 * (1.0 - (double)cls[c].packed / (double)cls[c].orig) : 0.0);
        }
        printf("%-12s %8s %14s %12s %12s %9s %7s\n", "metadata", "", "", "", cli_size(a, sizeof a, meta), "", "");
        printf("%-12s %8llu %14llu %12s %12s %9.3f %6.1f%%\n", "total", total.tensors, total.weights,
               cli_size(a, sizeof a, total.orig), cli_size(b, sizeof b, total.packed),
               total.weights ? 8.0 * (double)total.packed / (double)total.weights : 0.0,
               total.orig ? 100.0 * (1.0 - (double)total.packed / (double)total.orig) : 0.0);
    }
    glyd_modelClose(m);
    return 0;
}

int cli_modelCommand(int argc, char** argv)
{
    model_opts o;
    if (parse_model_opts(argc, argv, &o)) return 1;
    if (!strcmp(argv[1], "pack")) return cmd_pack(&o);
    if (!strcmp(argv[1], "unpack")) return cmd_unpack(&o);
    if (!strcmp(argv[1], "verify")) return cmd_verify(&o);
    return cmd_info(&o);
}

int cli_isModelCommand(const char* word)
{
    return !strcmp(word, "pack") || !strcmp(word, "unpack") || !strcmp(word, "verify") || !strcmp(word, "info");
}

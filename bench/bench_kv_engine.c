/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_kv_engine.c: the engine with its KV cache in bf16 against the same
 * cache in coded pages (glyd_llmParams.kvLossless), compressed weights in
 * both: decode tokens/s at batch 1 with a long context behind each token
 * and with a short one, the share of a long-context step that attention
 * and the cache take (what the long step costs past the short one), and
 * the cache's bytes against bf16's. Each form runs in its own process, the
 * two in turns, best of the rounds.
 *
 *   build/bench_kv_engine MODEL [--ctx N] [--tokens N] [--rounds R] [-T#]
 *
 * The context is filled by a prompt of ctx - tokens pseudo-random tokens;
 * then `tokens` tokens are decoded at the end of it, each the previous
 * one's argmax; then the same count from position 16 (a short context).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glyd_llm.h"
#include "bench_util.h"

typedef struct {
    double longRate, shortRate; /* tokens/s */
    unsigned long long kvBytes, kvBytesBf16;
} result;

/* nb tokens, one at a time from position pos, each the argmax of the
 * logits before it; returns tokens/s (negative on an error). */
static double decode(glyd_llm* m, float* logits, unsigned vocab, size_t pos, int nb)
{
    double const t0 = bench_now_s();
    int i;
    for (i = 0; i < nb; i++) {
        unsigned k, best = 0;
        int tok;
        for (k = 1; k < vocab; k++) if (logits[k] > logits[best]) best = k;
        tok = (int)best;
        if (glyd_isError(glyd_llmForward(m, &tok, 1, pos + (size_t)i, logits, 0))) return -1;
    }
    return nb / (bench_now_s() - t0);
}

/* What one run is asked. */
typedef struct {
    const char* model;
    int lossless;
    unsigned threads;
    int ctx, nbDecode;
} run_args;

/* One cache's run, in a child process (bench_in_child). */
static int measure(void* arg, void* out)
{
    run_args const* const a = (const run_args*)arg;
    result* const r = (result*)out;
    glyd_llmParams p;
    glyd_llmInfo info;
    glyd_llm* m;
    size_t err;
    char msg[512] = "";
    int const nbPrompt = a->ctx - a->nbDecode;
    float* logits;
    int* toks;
    int i;
    memset(r, 0, sizeof *r);
    memset(&p, 0, sizeof p);
    p.nbThreads = a->threads;
    p.kvLossless = a->lossless;
    p.contextLength = (unsigned long long)a->ctx;
    p.message = msg;
    p.messageCapacity = sizeof msg;
    m = glyd_llmOpen(a->model, &p, &err);
    if (!m) { fprintf(stderr, "bench_kv_engine: %s\n", msg); return 1; }
    glyd_llmGetInfo(m, &info);
    logits = (float*)malloc(info.vocabSize * sizeof(float));
    toks = (int*)malloc((size_t)nbPrompt * sizeof(int));
    if (!logits || !toks) return 1;
    for (i = 0; i < nbPrompt; i++) toks[i] = (int)((i * 7919u + 13) % info.vocabSize);
    if (glyd_isError(glyd_llmForward(m, toks, (size_t)nbPrompt, 0, logits, 0))) return 1;
    r->longRate = decode(m, logits, info.vocabSize, (size_t)nbPrompt, a->nbDecode);
    if (r->longRate < 0) return 1;
    glyd_llmGetInfo(m, &info);
    r->kvBytes = info.kvBytes;
    r->kvBytesBf16 = info.kvBytesBf16;
    if (glyd_isError(glyd_llmForward(m, toks, 16, 0, logits, 0))) return 1;
    r->shortRate = decode(m, logits, info.vocabSize, 16, a->nbDecode);
    return r->shortRate < 0;
}

int main(int argc, char** argv)
{
    const char* model = NULL;
    int ctx = 4096, nbDecode = 32, rounds = 2, i, r;
    unsigned threads = 2;
    result best[2];
    static const char* const kNames[2] = { "bf16", "lossless" };
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ctx") && i + 1 < argc) ctx = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) nbDecode = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strncmp(argv[i], "-T", 2)) threads = (unsigned)atoi(argv[i] + 2);
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else { model = NULL; break; }
    }
    if (!model || ctx <= nbDecode + 16 || nbDecode < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_kv_engine MODEL [--ctx N] [--tokens N] [--rounds R] [-T#]\n");
        return 2;
    }
    memset(best, 0, sizeof best);
    for (r = 0; r < rounds; r++) {
        int k;
        for (k = 0; k < 2; k++) {
            run_args a;
            result x;
            a.model = model;
            a.lossless = k;
            a.threads = threads;
            a.ctx = ctx;
            a.nbDecode = nbDecode;
            if (bench_in_child(measure, &a, &x, sizeof x)) return 1;
            best[k].longRate = fmax(best[k].longRate, x.longRate);
            best[k].shortRate = fmax(best[k].shortRate, x.shortRate);
            best[k].kvBytes = x.kvBytes;
            best[k].kvBytesBf16 = x.kvBytesBf16;
        }
    }
    printf("model: %s, %d threads, context %d, %d tokens decoded at its end and from position 16, best of "
           "%d rounds\n\n",
           model, threads, ctx, nbDecode, rounds);
    printf("| KV cache | decode tok/s, long context | decode tok/s, short | attention's share of a long step "
           "| cache bytes | of bf16's |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (r = 0; r < 2; r++)
        printf("| %s | %.2f | %.2f | %.1f%% | %.1f MB | %.3f |\n", kNames[r], best[r].longRate, best[r].shortRate,
               100.0 * (1.0 - best[r].longRate / best[r].shortRate), (double)best[r].kvBytes / 1e6,
               (double)best[r].kvBytes / (double)best[r].kvBytesBf16);
    printf("\nlossless / bf16, long context: %.3fx\n", best[1].longRate / best[0].longRate);
    return 0;
}

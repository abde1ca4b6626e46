/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_engine.c: the engine on compressed weights against the same engine
 * on plain bf16 weights: decode tokens/s at batch 1, prompt tokens/s, the
 * resident memory the weights take and the whole process's peak (what
 * bench/vs_llama_cpp.py sets beside llama.cpp's). Each form runs in its own process
 * (so that resident memory is its own), the two in turns.
 *
 *   build/bench_engine MODEL [--tokens N] [--prompt N] [--rounds R] [-T#] [--avx2] [--code-bits 3|4] [--chunked-prompts] [--bf16-prompts] [--bf16-decode]
 *
 * --avx2 keeps the tensor decoders, the products' kernels and attention to
 * AVX2 (what a CPU without AVX-512 runs), in both forms. --code-bits picks the fast
 * layout's codes (glyd_llmParams.fastCodeBits; by default this CPU's best).
 * --chunked-prompts runs a Qwen3.5 prompt's delta rule in the chunked form
 * (glyd_llmParams.chunkedPrompts), in both forms; --bf16-prompts, a
 * prompt's products in bf16 pairs (glyd_llmParams.bf16Prompts), in both;
 * --bf16-decode, a token's (glyd_llmParams.bf16Decode).
 *
 * MODEL: a Hugging Face folder (build/synth_model -o DIR --shape 0.5b makes
 * a 0.5B-shaped one) or a packed model. A folder's weights are packed in
 * memory at load for the compressed runs and mapped as they are for the
 * plain ones; a packed model runs compressed only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "glyd_llm.h"
#include "../llm/infer/infer.h"
#include "../lib/tensor/tensor.h"
#include "bench_util.h"

/* Resident kB of this process (VmRSS) and its peak (VmHWM). */
static void rss_kb(long* now, long* peak)
{
    FILE* const f = fopen("/proc/self/status", "r");
    char line[256];
    *now = *peak = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld kB", now);
        sscanf(line, "VmHWM: %ld kB", peak);
    }
    fclose(f);
}

typedef struct {
    double decode, prompt;   /* tokens/s */
    long rssWeights;         /* kB resident after loading and the prompt, minus before */
    long peakWeights;        /* kB at the peak (loading included), minus before */
    long peakProcess;        /* kB at the peak of the whole process (VmHWM), at the end */
    unsigned long long weightBytes, bf16Bytes;
} result;

/* One form in a child process; the result comes back through a pipe. */
static int g_avx2;
static unsigned g_codeBits; /* glyd_llmParams.fastCodeBits */
static int g_chunkedPrompts;
static int g_bf16Prompts, g_bf16Decode;

/* What one run is asked. */
typedef struct {
    const char* model;
    int plain;
    unsigned threads;
    int nbDecode, nbPrompt;
} run_args;

/* One form's run, in a child process (bench_in_child). */
static int measure(void* arg, void* out)
{
    run_args const* const a = (const run_args*)arg;
    result* const r = (result*)out;
    glyd_llmParams p;
    glyd_llmInfo info;
    glyd_llm* m;
    size_t err;
    char msg[512] = "";
    long before, after, peak;
    float* logits;
    int* toks;
    int i, tok = 1;
    double t0;
    memset(r, 0, sizeof *r);
    memset(&p, 0, sizeof p);
    p.nbThreads = a->threads;
    p.plainWeights = a->plain;
    if (g_avx2) {
        glyd_tensorSimdLimit(GLYD_SIMD_AVX2);
        glyd_attendSimdLimit(GLYD_SIMD_AVX2);
    }
    p.fastCodeBits = g_codeBits;
    p.chunkedPrompts = g_chunkedPrompts;
    p.bf16Prompts = g_bf16Prompts;
    p.bf16Decode = g_bf16Decode;
    p.contextLength = (unsigned long long)(a->nbPrompt + a->nbDecode + 8);
    p.message = msg;
    p.messageCapacity = sizeof msg;
    rss_kb(&before, &peak);
    m = glyd_llmOpen(a->model, &p, &err);
    if (!m) { fprintf(stderr, "bench_engine: %s\n", msg); return 1; }
    glyd_llmGetInfo(m, &info);
    logits = (float*)malloc(info.vocabSize * sizeof(float));
    toks = (int*)malloc((size_t)a->nbPrompt * sizeof(int));
    if (!logits || !toks) return 1;
    for (i = 0; i < a->nbPrompt; i++) toks[i] = (int)((i * 7919u + 13) % info.vocabSize);
    /* a prompt, then tokens one at a time, each the previous one's argmax */
    t0 = bench_now_s();
    if (glyd_isError(glyd_llmForward(m, toks, (size_t)a->nbPrompt, 0, logits, 0))) return 1;
    r->prompt = a->nbPrompt / (bench_now_s() - t0);
    rss_kb(&after, &peak);
    r->rssWeights = after - before;
    r->peakWeights = peak - before;
    t0 = bench_now_s();
    for (i = 0; i < a->nbDecode; i++) {
        unsigned k, best = 0;
        for (k = 1; k < info.vocabSize; k++) if (logits[k] > logits[best]) best = k;
        tok = (int)best;
        if (glyd_isError(glyd_llmForward(m, &tok, 1, (size_t)(a->nbPrompt + i), logits, 0))) return 1;
    }
    r->decode = a->nbDecode / (bench_now_s() - t0);
    rss_kb(&after, &r->peakProcess);
    r->weightBytes = info.weightBytes;
    r->bf16Bytes = info.weightBytesBf16;
    return 0;
}

int main(int argc, char** argv)
{
    const char* model = NULL;
    int nbDecode = 64, nbPrompt = 64, rounds = 3, i, r;
    unsigned threads = 0;
    result best[2];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokens") && i + 1 < argc) nbDecode = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) nbPrompt = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strncmp(argv[i], "-T", 2)) threads = (unsigned)atoi(argv[i] + 2);
        else if (!strcmp(argv[i], "--avx2")) g_avx2 = 1;
        else if (!strcmp(argv[i], "--chunked-prompts")) g_chunkedPrompts = 1;
        else if (!strcmp(argv[i], "--bf16-prompts")) g_bf16Prompts = 1;
        else if (!strcmp(argv[i], "--bf16-decode")) g_bf16Decode = 1;
        else if (!strcmp(argv[i], "--code-bits") && i + 1 < argc) g_codeBits = (unsigned)atoi(argv[++i]);
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else { fprintf(stderr, "usage: bench_engine MODEL [--tokens N] [--prompt N] [--rounds R] [-T#] [--avx2] [--code-bits 3|4] [--chunked-prompts] [--bf16-prompts] [--bf16-decode]\n"); return 2; }
    }
    if (!model || nbDecode < 1 || nbPrompt < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_engine MODEL [--tokens N] [--prompt N] [--rounds R] [-T#] [--avx2] [--code-bits 3|4] [--chunked-prompts] [--bf16-prompts] [--bf16-decode]\n");
        return 2;
    }
    memset(best, 0, sizeof best);
    for (r = 0; r < rounds; r++) {
        int form;
        for (form = 0; form < 2; form++) { /* 0 compressed, 1 plain, in turns */
            result x;
            run_args a;
            a.model = model;
            a.plain = form;
            a.threads = threads;
            a.nbDecode = nbDecode;
            a.nbPrompt = nbPrompt;
            if (bench_in_child(measure, &a, &x, sizeof x)) {
                if (form == 1 && r == 0) { fprintf(stderr, "bench_engine: no plain run (a packed model?)\n"); break; }
                fprintf(stderr, "bench_engine: a run failed\n");
                return 1;
            }
            if (x.decode > best[form].decode) best[form].decode = x.decode;
            if (x.prompt > best[form].prompt) best[form].prompt = x.prompt;
            best[form].rssWeights = x.rssWeights;
            best[form].peakWeights = x.peakWeights;
            best[form].peakProcess = x.peakProcess;
            best[form].weightBytes = x.weightBytes;
            best[form].bf16Bytes = x.bf16Bytes;
        }
    }
    {
        char who[32] = "every core";
        if (threads) snprintf(who, sizeof who, "%u threads", threads);
        printf("## Engine: %s, %s, %d prompt tokens then %d decoded, best of %d%s%s%s%s\n\n", model, who, nbPrompt,
               nbDecode, rounds, g_avx2 ? ", decoders kept to AVX2" : "", g_chunkedPrompts ? ", chunked prompts" : "",
               g_bf16Prompts ? ", prompts in bf16 pairs" : "", g_bf16Decode ? ", decoding in bf16 pairs" : "");
    }
    printf("| weights | decode tok/s | prompt tok/s | weights in memory | resident after the prompt | peak resident "
           "| peak resident, whole process |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    printf("| compressed | %.2f | %.2f | %.1f MiB (%.3f of bf16) | %.1f MiB | %.1f MiB | %.1f MiB |\n",
           best[0].decode, best[0].prompt, best[0].weightBytes / 1048576.0,
           (double)best[0].weightBytes / (double)best[0].bf16Bytes, best[0].rssWeights / 1024.0,
           best[0].peakWeights / 1024.0, best[0].peakProcess / 1024.0);
    if (best[1].decode > 0) {
        printf("| plain bf16 | %.2f | %.2f | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB |\n", best[1].decode,
               best[1].prompt, best[1].weightBytes / 1048576.0, best[1].rssWeights / 1024.0,
               best[1].peakWeights / 1024.0, best[1].peakProcess / 1024.0);
        printf("\ncompressed / plain: decode %.3fx, prompt %.3fx, resident memory %.3fx, peak %.3fx\n",
               best[0].decode / best[1].decode, best[0].prompt / best[1].prompt,
               (double)best[0].rssWeights / (double)best[1].rssWeights,
               (double)best[0].peakWeights / (double)best[1].peakWeights);
    }
    return 0;
}

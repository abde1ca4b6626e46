/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * glyd_llm.h: the public C API of libglyd-llm: an inference engine that
 * runs a model with its weights kept in Glyd's tensor codec, its tokenizer,
 * the chat's helpers and a sampler. Link -lglyd-llm (pkg-config glyd-llm).
 *
 * Conventions are glyd.h's: functions that can fail return a size_t tested
 * with glyd_isError(), or a pointer that is NULL on failure with the error
 * in *error; open and close (or create and free) come in pairs.
 */
#ifndef GLYD_LLM_H
#define GLYD_LLM_H

#include "glyd_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* The engine                                                               */
/* ------------------------------------------------------------------------ */

/* Dense decoder models as Hugging Face defines them (LlamaForCausalLM,
 * Qwen2ForCausalLM, Qwen3ForCausalLM), run on the CPU or a CUDA GPU with
 * their bf16 weights kept in the tensor codec: each matrix is decoded a few
 * rows at a time, just before those rows are multiplied (on the GPU, inside
 * the product's kernel). Sums are in fp32. The logits are bit-identical to
 * those of the same engine, on the same backend, on the plain bf16 weights
 * (glyd_llmParams.plainWeights), since both sum in the same order. */

typedef struct glyd_llm_s glyd_llm;

/* Where the forward pass runs (glyd_llmParams.gpu). */
typedef enum {
    GLYD_GPU_NONE = 0,     /* the CPU */
    GLYD_GPU_CUDA = 1,     /* a CUDA GPU, through libglyd_cuda.so (`make cuda`) */
    GLYD_GPU_EMULATED = 2  /* the GPU backend's kernels emulated on the CPU */
} glyd_gpuBackend;

typedef struct {
    unsigned nbThreads;              /* 0: every core; at most GLYD_THREADS_MAX */
    unsigned long long contextLength;/* positions the KV cache holds; 0: the model's own, or
                                      * less when the cache would take over a quarter of the
                                      * memory available */
    int kvF32;                       /* 1: keys and values cached in fp32; 0: bf16 */
    /* 1: the bf16 cache held in coded pages, about 0.68 of its bytes,
     * every key and value read back exactly (the logits are the bf16
     * cache's, bit for bit); the CPU only, not with kvF32 */
    int kvLossless;
    /* A Hugging Face folder's weights: 0 = coded in memory at load (packed
     * on the fly), 1 = used as they are (bf16, mapped). Packed models are
     * always coded. */
    int plainWeights;
    /* The layout of coded weights in memory. 0: the fast layout, which
     * decodes several times faster than the entropy layout: a folder is
     * coded into it at load, a model packed with --fast-layout is used as
     * it is (or recoded, when its codes are not those of fastCodeBits), and
     * a model packed with the entropy layout is recoded into it at load.
     * 1: the entropy layout (about 0.67 of bf16, a packed model's used as
     * it is), for the least memory at the cost of speed. */
    int compactWeights;
    /* The fast layout's exponent codes: 3 bits (about 0.71 of bf16, the
     * form files hold) or 4 bits (about 0.75: 0.5 bit more a weight, which
     * AVX2 decodes in half the time). 0: whichever this CPU's products run
     * fastest, 4 where AVX2 is the widest kernel (no AVX-512 VBMI2 and
     * GFNI), else 3, and 3 on a GPU. Other values are refused. */
    unsigned fastCodeBits;
    /* A packed model's tensors are checked against its index's checksums
     * as they load (one pass over their stored bytes, or over the values
     * where they are decoded at load anyway): a damaged tensor stops the
     * open, named. 1 skips the check, for a pack just verified. */
    int skipWeightChecks;
    /* Where the forward pass runs: GLYD_GPU_NONE (0), the CPU;
     * GLYD_GPU_CUDA, a CUDA GPU through libglyd_cuda.so (`make cuda`),
     * its weights (fast layout or plain bf16) and KV cache in GPU memory;
     * GLYD_GPU_EMULATED, the GPU backend's kernels emulated on the CPU,
     * thread by thread (slow: it is there to test the backend). Any other
     * value is refused. */
    glyd_gpuBackend gpu;
    /* Qwen3.5's Gated DeltaNet layers in a prompt: 0 runs the recurrence
     * token after token, so that a prompt's logits are those of its tokens
     * one at a time to the bit; 1 runs the chunked form, 16 tokens at a
     * time as products of matrices, which rounds otherwise (its logits
     * differ from the recurrence's in the last bits) and pays where AVX2
     * and FMA are. Decoding a token at a time runs the recurrence either
     * way. */
    int chunkedPrompts;
    /* 1: a prompt's products round its activations to bf16 and multiply
     * bf16 pairs (AVX512_BF16's VDPBF16PS, into fp32 sums), as llama.cpp's
     * bf16 products do on such CPUs: about twice the prompt speed, but the
     * logits move (on the small test models, by 0.5% to 4% of the largest
     * one), and a prompt's no longer equal its tokens one at a time. Decoding a token at a time stays in
     * fp32; coded and plain weights still give the same bits. Where the CPU
     * lacks AVX512_BF16 (or on the GPU), products stay fp32. */
    int bf16Prompts;
    /* 1: a token's products (decoding) do the same, on the weights as they
     * are decoded (AVX512_BF16 and, for the fast layout's 3-bit codes in
     * registers, AVX-512 VBMI2 and GFNI): its kernel 1.36 times as fast
     * as the fp32 one on Zen 4, decoding about 1.2 times, and the logits
     * move as with bf16Prompts.
     * Coded and plain weights still give the same bits. With both options
     * a prompt's products and a token's sum in different orders, so a
     * prompt's logits are near, not equal to, its tokens one at a time. */
    int bf16Decode;
    /* progress of coding the weights at load; may be NULL */
    void (*progress)(void* opaque, unsigned long long done, unsigned long long total);
    void* opaque;
    /* when not NULL: receives a one-line reason on error */
    char* message;
    size_t messageCapacity;
} glyd_llmParams;

typedef struct {
    const char* architecture;        /* "LlamaForCausalLM", ... */
    unsigned vocabSize, nbLayers, hiddenSize, nbHeads, nbKvHeads, headDim;
    unsigned long long contextLength;/* the cache's */
    unsigned long long maxPositions; /* the model's */
    unsigned long long weightBytes;  /* weights as held in memory */
    unsigned long long weightBytesBf16; /* the same weights in bf16 */
    unsigned long long kvBytes;      /* the KV cache: allocated; a lossless one: held now */
    unsigned long long kvBytesBf16;  /* the same positions in bf16 (a lossless cache: those held) */
    long long bosToken, eosToken;    /* -1 when the config has none */
    const char* backend;             /* where the forward pass runs: "cpu", "cuda", "emulated" */
    unsigned long long deviceWeightBytes; /* weights in GPU memory (0 on the CPU) */
    /* 1 when the model keeps a recurrent state (Qwen3.5's Gated DeltaNet
     * layers): glyd_llmForward then starts only at pos 0 or at the end of
     * the tokens already run, never earlier (a conversation rewound is fed
     * again from 0) */
    int recurrent;
    unsigned long long ignoredTensors; /* tensors the text model does not use (a vision tower, an MTP head) */
} glyd_llmInfo;

/** Opens a model: a Hugging Face folder (config.json and safetensors
 *  files) or a packed model. params may be NULL. Returns NULL on failure,
 *  with *error set (and params->message, if any). */
GLYD_API glyd_llm* glyd_llmOpen(const char* path, const glyd_llmParams* params, size_t* error);
GLYD_API void glyd_llmClose(glyd_llm* llm);
GLYD_API size_t glyd_llmGetInfo(const glyd_llm* llm, glyd_llmInfo* info);

/** Runs tokens[0..n) at positions pos..pos+n-1, after the pos tokens the
 *  cache already holds (pos = 0 starts afresh). Writes the last token's
 *  logits to logits (vocabSize floats), or every token's when allLogits is
 *  1 (n x vocabSize). Returns 0 or an error; a recurrent model
 *  (glyd_llmInfo.recurrent) refuses a pos other than 0 and the end of the
 *  tokens run so far with stage_wrong. */
GLYD_API size_t glyd_llmForward(glyd_llm* llm, const int* tokens, size_t n, size_t pos, float* logits,
                                int allLogits);

/** Runs tokens as glyd_llmForward does, and gives the token of the largest
 *  logit after the last one (the first of equals) without the logits
 *  leaving the backend: greedy decoding. */
GLYD_API size_t glyd_llmGreedy(glyd_llm* llm, const int* tokens, size_t n, size_t pos, int* next);

/* A model's tokenizer: BPE from Hugging Face's tokenizer.json, byte-level
 * (the GPT-2 family: Qwen, Llama 3) or over characters with byte fallback
 * (Llama 2, Mistral, Gemma 3): the normalizer, pre-tokenizer and decoder
 * as the file declares them (one not built is refused), merges by rank;
 * added and special tokens written in the text are matched as single
 * tokens, with their flags. */
typedef struct glyd_tokenizer_s glyd_tokenizer;

/** Opens the tokenizer of a model folder, of a packed model, or a
 *  tokenizer.json file. Returns NULL on failure, with *error set and a
 *  one-line reason in message (when not NULL). */
GLYD_API glyd_tokenizer* glyd_tokenizerOpen(const char* path, char* message, size_t messageCapacity,
                                            size_t* error);
GLYD_API void glyd_tokenizerFree(glyd_tokenizer* tok);
/** The ids of UTF-8 text (no token added around it): *ids is allocated
 *  with malloc, the caller frees it. Returns 0 or an error. */
GLYD_API size_t glyd_tokenizerEncode(const glyd_tokenizer* tok, const char* text, size_t size, int** ids,
                                     size_t* nbIds);
/** The bytes a token stands for (part of a UTF-8 character, at times). */
GLYD_API size_t glyd_tokenizerBytes(const glyd_tokenizer* tok, int id, const unsigned char** bytes,
                                    size_t* size);
/** The text of ids as the tokenizer's decoder gives it (tokenizers' decode
 *  without skipping special tokens): *text is allocated (free() it),
 *  *size bytes of UTF-8 and a NUL. */
GLYD_API size_t glyd_tokenizerDecode(const glyd_tokenizer* tok, const int* ids, size_t n, char** text, size_t* size);
/** The id of a token written as the vocabulary writes it ("<|im_end|>"), or -1. */
GLYD_API int glyd_tokenizerFind(const glyd_tokenizer* tok, const char* token);
GLYD_API size_t glyd_tokenizerVocabSize(const glyd_tokenizer* tok);

/** ChatML history as Qwen's chat templates write it: an assistant reply
 *  goes back into the conversation without its thinking, from after its
 *  last "</think>" and the newlines that follow. Returns where in the
 *  reply's text (size bytes) that answer starts: 0 when the reply has no
 *  "</think>" (it goes back whole). */
GLYD_API size_t glyd_chatAnswerStart(const char* reply, size_t size);

/* A model's chat template: the Jinja text of its chat_template.jinja, or
 * of tokenizer_config.json's "chat_template", rendered as transformers'
 * apply_chat_template renders it, for the subset of Jinja that the
 * templates of Qwen3, Qwen3.5, Llama 3.x, Mistral and Gemma 3 use
 * (docs/CHAT.md). What the subset lacks is refused, with its line. */
typedef struct glyd_chatTemplate_s glyd_chatTemplate;

typedef struct {
    const char* role;     /* "system", "user", "assistant" */
    const char* content;  /* UTF-8 */
} glyd_chatMessage;

typedef struct {
    int addGenerationPrompt; /* end with the assistant's header, for its reply */
    int enableThinking;      /* -1: not passed to the template; 0: false; 1: true */
    int fixedTime;           /* 1: strftime_now formats `time` (seconds since the */
    long long time;          /* epoch, as UTC) instead of the local time now */
} glyd_chatOptions;

/** Opens the chat template of a model folder or a packed model, with its
 *  bos_token and eos_token. A model without one gets the built-in ChatML
 *  template (glyd_chatTemplateIsBuiltin). NULL on failure, with *error set
 *  and a one-line reason in message. */
GLYD_API glyd_chatTemplate* glyd_chatTemplateOpen(const char* path, char* message, size_t messageCapacity,
                                                  size_t* error);
/** A template from its text; bosToken and eosToken may be NULL. */
GLYD_API glyd_chatTemplate* glyd_chatTemplateCreate(const char* source, size_t size, const char* bosToken,
                                                    const char* eosToken, char* message, size_t messageCapacity,
                                                    size_t* error);
GLYD_API void glyd_chatTemplateFree(glyd_chatTemplate* t);
GLYD_API int glyd_chatTemplateIsBuiltin(const glyd_chatTemplate* t);
/** The template's eos_token ("" when it has none). */
GLYD_API const char* glyd_chatTemplateEosToken(const glyd_chatTemplate* t);
/** Renders messages[0..n): *text is allocated with malloc (NUL-terminated,
 *  *size bytes), the caller frees it. Returns 0, or an error with a
 *  one-line reason in message (a construct the renderer lacks, or the
 *  template's own raise_exception). */
GLYD_API size_t glyd_chatTemplateRender(const glyd_chatTemplate* t, const glyd_chatMessage* messages, size_t n,
                                        const glyd_chatOptions* options, char** text, size_t* size, char* message,
                                        size_t messageCapacity);
/** The tokens that end a reply: generation_config.json's eos_token_id (a
 *  number or a list), else config.json's. Writes at most capacity ids and
 *  sets *count to how many there are (0 when neither file names one). */
GLYD_API size_t glyd_chatStopTokens(const char* path, int* ids, size_t capacity, size_t* count);

/* Picking the next token, as transformers' generate() does: repetition
 * penalty, then greedy (temperature 0) or temperature, top-k, top-p, min-p
 * and a draw with a seeded generator (the same seed, the same draws). */
typedef struct {
    float temperature;        /* 0: greedy */
    int topK;                 /* 0: off */
    float topP;               /* 0 or 1: off */
    float minP;               /* 0: off */
    float repetitionPenalty;  /* 1 (or 0): off */
    unsigned long long seed;
} glyd_samplerParams;

typedef struct glyd_sampler_s glyd_sampler;

/** NULL on allocation failure. */
GLYD_API glyd_sampler* glyd_samplerCreate(const glyd_samplerParams* params, size_t vocabSize);
GLYD_API void glyd_samplerFree(glyd_sampler* s);
/** The next token; logits (vocabSize floats) are changed in place. history:
 *  the tokens the repetition penalty applies to. */
GLYD_API int glyd_samplerSample(glyd_sampler* s, float* logits, const int* history, size_t nbHistory);
/** Runs tokens as glyd_llmForward does, then draws the next token with the
 *  sampler, as glyd_samplerSample would from the last token's logits
 *  (history: the tokens the repetition penalty applies to). On the GPU the
 *  penalty, the temperature and the top-k selection run on the device when
 *  the sampler is greedy or its top-k is at most 256: only the candidates
 *  leave it. */
GLYD_API size_t glyd_llmSample(glyd_llm* llm, const int* tokens, size_t n, size_t pos, glyd_sampler* sampler,
                               const int* history, size_t nbHistory, int* next);

#ifdef __cplusplus
}
#endif
#endif /* GLYD_LLM_H */

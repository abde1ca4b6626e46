/*
 * infer.h: the engine. The forward pass of dense decoder models as Hugging
 * Face defines them (Llama, Qwen2, Qwen3), run on the CPU while the weights
 * stay in the tensor codec: each unit of a matrix (whole rows) is decoded
 * just before the rows it holds are multiplied, so no bf16 copy of a matrix
 * ever exists.
 */
#ifndef GLYD_INFER_H
#define GLYD_INFER_H

#include "../model/model.h"

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

typedef enum { GLYD_ARCH_LLAMA, GLYD_ARCH_QWEN2, GLYD_ARCH_QWEN3 } glyd_arch;

typedef enum { GLYD_ROPE_NONE, GLYD_ROPE_LINEAR, GLYD_ROPE_YARN } glyd_ropeKind;

typedef struct {
    glyd_arch arch;
    unsigned dim;        /* hidden_size */
    unsigned hidden;     /* intermediate_size (the MLP's width) */
    unsigned nbLayers, nbHeads, nbKvHeads, headDim;
    unsigned vocab;
    unsigned maxPositions;
    float normEps;
    int tied;            /* lm_head is the embedding matrix */
    int qkvBias;         /* Qwen2: biases on q, k and v */
    int qkNorm;          /* Qwen3: RMSNorm of each head of q and k before RoPE */
    double ropeTheta;
    glyd_ropeKind rope;
    double ropeFactor;
    unsigned ropeOriginalMax;
    double yarnBetaFast, yarnBetaSlow, yarnAttentionFactor;
    long long bos, eos;
} glyd_llmConfig;

/* Reads config.json; *why receives a one-line reason on failure. */
size_t glyd_llmConfigParse(glyd_llmConfig* c, const char* text, size_t size, char* why, size_t whyCap);

/* The inverse frequency of each of the headDim / 2 rotary pairs, and the
 * factor that cos and sin carry (yarn's attention scaling, else 1). */
void glyd_ropeFrequencies(const glyd_llmConfig* c, float* invFreq, float* scale);

/* ------------------------------------------------------------------------ */
/* Weights                                                                  */
/* ------------------------------------------------------------------------ */

/* A bf16 matrix [rows][cols], row-major: plain bf16 in memory (mapped
 * safetensors data), or a tensor blob whose units hold whole rows or an
 * even split of one row. Products sum each row in pieces of `chunk`
 * elements, the coded matrix's unit boundaries, in both forms: the two
 * give bit-identical results. */
typedef struct {
    uint64_t rows, cols;
    uint32_t chunk;             /* elements summed as one piece of a row */
    const uint16_t* plain;      /* plain form, else NULL */
    glyd_tensorView view;       /* coded form */
    glyd_tensorDTable* dt;      /* its decoding table (owned) */
    uint8_t* ownedBlob;         /* a blob encoded at load time (owned), else NULL */
    uint16_t* ownedPlain;       /* plain data decoded at load time (owned), else NULL */
} glyd_matrix;

/* A matrix over bf16 data that outlives it. */
size_t glyd_matrixPlain(glyd_matrix* m, const uint16_t* data, uint64_t rows, uint64_t cols);
/* A matrix over a bf16 tensor blob that outlives it. */
size_t glyd_matrixCoded(glyd_matrix* m, const uint8_t* blob, size_t size, uint64_t rows, uint64_t cols);
void glyd_matrixFree(glyd_matrix* m);
/* Bytes the matrix takes in memory (its blob, or its bf16 data). */
size_t glyd_matrixBytes(const glyd_matrix* m);

/* Prompt tokens run through each layer together, so that a matrix unit
 * decoded once serves them all: products take at most this many vectors. */
#define GLYD_BATCH 32

/* Per-thread room for products: decoded units (elements, symbols) and the
 * batch's vectors laid out for the kernels. */
typedef struct {
    uint16_t* elems;
    uint8_t* symbols;
    float* xd;
    size_t elemCap, symbolCap, xdCap;
} glyd_decodeScratch;

size_t glyd_scratchReserve(glyd_decodeScratch* s, const glyd_matrix* m);
void glyd_scratchFree(glyd_decodeScratch* s);

/* The row granularity of products: ranges start on multiples of it. */
uint64_t glyd_matrixRowAlign(const glyd_matrix* m);

/* Y[t][r] = W[r] . X[t] for the nbVec vectors of X (nbVec x cols) and rows
 * [r0, r1) of W, into Y (nbVec x rows); fp32 sums, each the same whatever
 * the batch. */
size_t glyd_matmulRows(const glyd_matrix* w, const float* x, size_t nbVec, float* y, uint64_t r0, uint64_t r1,
                       glyd_decodeScratch* s);
/* Row r of W as floats. */
size_t glyd_matrixRow(const glyd_matrix* w, uint64_t r, float* out, glyd_decodeScratch* s);

/* ------------------------------------------------------------------------ */
/* Model                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    glyd_matrix wq, wk, wv, wo;     /* (nbHeads*headDim, dim) (kv*headDim, dim) x2, (dim, nbHeads*headDim) */
    glyd_matrix wGate, wUp, wDown;  /* (hidden, dim) x2, (dim, hidden) */
    float *attnNorm, *mlpNorm;      /* (dim) */
    float *bq, *bk, *bv;            /* Qwen2: (nbHeads*headDim), (kv*headDim) x2 */
    float *qNorm, *kNorm;           /* Qwen3: (headDim) */
} glyd_layer;

/* ------------------------------------------------------------------------ */
/* Tokenizer (tokenizer.c; the type is public: glyd_tokenizer)              */
/* ------------------------------------------------------------------------ */

/* Reads a tokenizer.json held in memory; *why receives a one-line reason. */
glyd_tokenizer* glyd_tokenizerLoad(const char* json, size_t size, char* why, size_t whyCap, size_t* error);

#endif /* GLYD_INFER_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * infer.h: the engine. The forward pass of dense decoder models as Hugging
 * Face defines them (Llama, Qwen2, Qwen3, and Qwen3.5's text model with its
 * Gated DeltaNet layers), run on the CPU while the weights
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

typedef enum {
    GLYD_ARCH_LLAMA, GLYD_ARCH_QWEN2, GLYD_ARCH_QWEN3, GLYD_ARCH_QWEN3_MOE, GLYD_ARCH_MIXTRAL, GLYD_ARCH_QWEN3_5,
    GLYD_ARCH_MISTRAL, GLYD_ARCH_GEMMA3
} glyd_arch;

typedef enum { GLYD_ROPE_NONE, GLYD_ROPE_LINEAR, GLYD_ROPE_YARN, GLYD_ROPE_LLAMA3 } glyd_ropeKind;

#define GLYD_MOE_DENSE_BYTES (4096u / 8) /* a bit for each of GLYD_MAX_LAYERS */

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
    double llama3LowFreqFactor, llama3HighFreqFactor;
    long long bos, eos;
    /* mixtures of experts (Qwen3-MoE, Mixtral): 0 experts in a dense model */
    unsigned nbExperts;      /* num_experts (num_local_experts) */
    unsigned nbExpertsUsed;  /* num_experts_per_tok */
    unsigned moeHidden;      /* an expert's width: moe_intermediate_size (Mixtral: intermediate_size) */
    int moeNormTopk;         /* the chosen experts' weights divided by their sum */
    unsigned moeSparseStep;  /* Qwen3-MoE's decoder_sparse_step */
    uint8_t moeDense[GLYD_MOE_DENSE_BYTES]; /* bit l: layer l in mlp_only_layers */
    /* Qwen3.5 (and the rotation's width for every model) */
    unsigned rotaryDim;  /* the leading dims of a head that RoPE turns: headDim, or Qwen3.5's quarter */
    int attnGate;        /* q_proj gives each head's query and then a sigmoid gate on its output */
    int normOffset;      /* RMSNorm weights are offsets from 1: x * (1 + w) (folded in at load) */
    int nestedText;      /* Qwen3_5ForConditionalGeneration: text_config, tensors model.language_model. */
    unsigned linearKeyHeads, linearValueHeads, linearKeyDim, linearValueDim, linearConv;
    unsigned nbLinear;   /* layers that are Gated DeltaNet */
    uint8_t linearLayers[4096 / 8]; /* bit l: layer l is Gated DeltaNet (GLYD_MAX_LAYERS bits) */
    /* Mistral and Gemma 3 (gemma.c) */
    unsigned slidingWindow;          /* keys a sliding layer's query sees, itself included; 0: none */
    unsigned char sliding[4096];     /* (GLYD_MAX_LAYERS) 1 where the layer's attention is windowed */
    int gemma;                       /* Gemma's four norms a layer; GELU-tanh; scaled embedding */
    double queryPreAttnScalar;       /* attention scores scaled by its -1/2 power; 0: head_dim's */
    double finalSoftcap;             /* logits = c tanh(logits / c); 0: none */
    double localRopeTheta;           /* sliding layers' rotation (Gemma 3): base, and */
    glyd_ropeKind localRope;         /* none or linear scaling */
    double localRopeFactor;
    int multimodal;                  /* Gemma3ForConditionalGeneration: its text model, tensors under language_model */
} glyd_llmConfig;

/* Whether layer l of a Qwen3.5 model is a Gated DeltaNet (linear
 * attention) layer rather than full attention. */
static inline int glyd_layerIsLinear(const glyd_llmConfig* c, unsigned l)
{
    return (c->linearLayers[l / 8] >> (l % 8)) & 1;
}

/* The largest shapes config.json may give. Within them every product the
 * engine forms from them (a matrix's elements, all the weights, the KV
 * cache's bytes at max_position_embeddings) fits 64 bits with room. */
#define GLYD_MAX_WIDTH     (1u << 20) /* hidden_size; num_attention_heads x head_dim */
#define GLYD_MAX_MLP       (1u << 22) /* intermediate_size */
#define GLYD_MAX_VOCAB     (1u << 24) /* vocab_size */
#define GLYD_MAX_LAYERS    4096u      /* num_hidden_layers */
#define GLYD_MAX_POSITIONS (1u << 24) /* max_position_embeddings */
#define GLYD_MAX_EXPERTS   4096u      /* num_experts; the experts' weights are bounded apart */

/* Reads config.json and checks every field the engine uses: its JSON type,
 * its range and its agreement with the others (kv heads divide the heads,
 * head_dim is even, token ids are in the vocabulary, the rotary base and
 * scaling give finite frequencies). On failure *why receives one line,
 * "config.json: KEY is VALUE: what it must be", and *c is zeroed. */
size_t glyd_llmConfigParse(glyd_llmConfig* c, const char* text, size_t size, char* why, size_t whyCap);

/* The inverse frequency of each of the rotaryDim / 2 rotary pairs, and the
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
    const uint8_t* blob;        /* coded form: the blob */
    glyd_tensorView view;       /* and its parts */
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

/* Receives each slice of a matrix's source once the coder is done with it
 * (to let a mapped file's pages go); may be NULL. */
typedef void (*glyd_sliceDone)(void* opaque, const void* p, size_t n);

/* bf16 data coded into a fast-layout blob of exactly its size, which w
 * owns: two passes over src (exponents counted, then written) a slice at a
 * time, each slice handed to done after each pass, so that neither the
 * source nor any copy of it need stay in memory beside the blob. codes:
 * GLYD_TENSOR_FAST_CODES (the form files hold) or GLYD_TENSOR_NIBBLE_CODES
 * (glyd_fusedCodes). */
size_t glyd_matrixEncodeFast(glyd_matrix* w, const uint16_t* src, uint64_t rows, uint64_t cols, unsigned codes,
                             glyd_sliceDone done, void* opaque);

/* A blob of another layout (a packed model's entropy layout) recoded into
 * the fast one, which w owns: decoded twice, a few units at a time (counts,
 * then elements). With expected, the first pass checks the values against
 * it (XXH3-64 of the original bytes): checksum_wrong where they differ. */
size_t glyd_matrixRecodeFast(glyd_matrix* w, const uint8_t* blob, size_t blobSize, uint64_t rows, uint64_t cols,
                             unsigned codes, const uint64_t* expected);

/* A bf16 value as the float it is. */
GLYD_FORCE_INLINE float glyd_bf16ToF32(uint16_t h)
{
    uint32_t const u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A float rounded to bf16, to nearest, ties to even, as torch converts it
 * (a NaN becomes the quiet NaN of its sign). */
GLYD_FORCE_INLINE uint16_t glyd_f32ToBf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* The fixed tree in which a product's eight lane sums (even + odd lanes,
 * weights.c's DOT_BLOCK) become one. */
static inline float glyd_dotTree(const float s[8])
{
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

/* A piece's close once its lanes are summed: the tail's products, elements
 * [i, n) of the row against x (separate multiply and add), into lanes 0, 1,
 * ... wrapping at 8, then the tree. Every kernel closes a piece this way. */
static inline float glyd_dotFinish(float s[8], const uint16_t* row, const float* xd, size_t i, size_t n)
{
    unsigned j;
    for (j = 0; i < n; i++, j++) {
        float const prod = glyd_bf16ToF32(row[i]) * xd[i];
        s[j & 7] += prod;
    }
    return glyd_dotTree(s);
}

/* x's pieces (of `chunk` elements, as rows are summed) in the layout the
 * products take (deinterleaved): per block of 16, its 8 even elements,
 * then its 8 odd ones; a piece's tail as it is. */
void glyd_deinterleaveX(float* xd, const float* x, uint64_t cols, uint32_t chunk);
/* Whether w's products with one vector can decode in registers
 * (llm/infer/fused.c: the fast layout, in pieces of whole groups, on a CPU
 * and under a SIMD limit that has the kernel). */
int glyd_fusedFits(const glyd_matrix* w);
/* The fast layout's code count whose products this CPU (under the SIMD
 * limit) runs fastest: GLYD_TENSOR_NIBBLE_CODES where the AVX2 kernel is
 * the widest that fits (4-bit codes take half its time, for 0.5 bit more
 * per weight), else GLYD_TENSOR_FAST_CODES. */
unsigned glyd_fusedCodes(void);
/* y[r] = W[r] . x for rows [r0, r1) (on unit boundaries, as
 * glyd_matmulRows takes them), x deinterleaved as the products lay it out;
 * the same bits as decoding the units and multiplying them. */
size_t glyd_fusedRows(const glyd_matrix* w, const float* xd, float* y, uint64_t r0, uint64_t r1);
/* The same in bf16 pairs (pairs.h), against xp laid out by
 * glyd_bf16PairOrder: where w is in the fast layout's 3-bit codes and the
 * CPU has AVX-512 VBMI2, GFNI and AVX512_BF16. The same bits as
 * glyd_bf16RowsTimesVector on the decoded rows. */
int glyd_fusedPairsFits(const glyd_matrix* w);
size_t glyd_fusedRowsPairs(const glyd_matrix* w, const uint16_t* xp, float* y, uint64_t r0, uint64_t r1);

/* Prompt tokens run through each layer together, so that a matrix unit
 * decoded once serves them all: products take at most this many vectors. */
#define GLYD_BATCH 64

/* Per-thread room for products: decoded units (elements, symbols) and the
 * batch's vectors laid out for the kernels. */
typedef struct {
    uint16_t* elems;
    uint8_t* symbols;
    float* xd;
    size_t elemCap, symbolCap, xdCap;
    /* nonzero: batches of two or more vectors multiply bf16 pairs
     * (tiles_bf16.c) where the CPU can, their vectors rounded into xb */
    int bf16Pairs;
    /* nonzero: so does a single vector (rows_bf16.c, fused.c), laid out
     * in xb by glyd_bf16PairOrder */
    int bf16Decode;
    uint16_t* xb;
    size_t xbCap;
} glyd_decodeScratch;

size_t glyd_scratchReserve(glyd_decodeScratch* s, const glyd_matrix* m);
void glyd_scratchFree(glyd_decodeScratch* s);

/* The row granularity of products: ranges start on multiples of it. */
uint64_t glyd_matrixRowAlign(const glyd_matrix* m);

/* Y[t][r] = W[r] . X[t] for the nbVec vectors of X (nbVec x cols) and rows
 * [r0, r1) of W, into Y (nbVec x rows); fp32 sums, each the same whatever
 * the batch (with s->bf16Pairs, a batch of two or more vectors rounds them
 * to bf16 first, where the CPU can multiply bf16 pairs). */
size_t glyd_matmulRows(const glyd_matrix* w, const float* x, size_t nbVec, float* y, uint64_t r0, uint64_t r1,
                       glyd_decodeScratch* s);
/* Row r of W as floats. */
size_t glyd_matrixRow(const glyd_matrix* w, uint64_t r, float* out, glyd_decodeScratch* s);

/* Rows [0, nbRows) of a bf16 block (rows cols apart) times nbVec vectors
 * laid out for the kernels (xd, cols apart), as a matrix product through
 * fp32 tiles (tiles.c): y[v * yStride + k] = row k . x[v], the same floats
 * as one row and one vector at a time. Returns 0, having done nothing,
 * where it does not pay (few vectors) or the CPU lacks the instructions. */
int glyd_tileTimesBatch(const uint16_t* block, uint64_t nbRows, uint64_t cols, uint32_t chunk, const float* xd,
                        size_t nbVec, float* y, uint64_t yStride);
/* The instructions the tiles use now (GLYD_SIMD_*; NONE: they are not
 * used): what the CPU has, within glyd_tensorSimdLimit. */
int glyd_tileLevel(void);
/* Nonzero where the engine's AVX2 kernels may run (delta_rule.c,
 * delta_chunk.c, vexp.c): the CPU has AVX2 and FMA, within
 * glyd_tensorSimdLimit, as for the tiles. */
GLYD_FORCE_INLINE int glyd_avx2FmaUsable(void) { return glyd_tileLevel() >= GLYD_SIMD_AVX2; }

/* Products in bf16 pairs (tiles_bf16.c), for prompts when asked: nonzero
 * where the CPU has AVX512_BF16 (within glyd_tensorSimdLimit). */
int glyd_bf16PairsUsable(void);
/* x rounded to bf16 (to nearest, ties to even), n values. */
void glyd_bf16FromFloats(uint16_t* xb, const float* x, size_t n);
/* Rows [0, nbRows) of a bf16 block (rows cols apart) times nbVec vectors
 * of bf16 (xb, cols apart), each pair of elements through one bf16 pair
 * product into fp32 sums: y[v * yStride + k] = row k . xb[v], the same
 * floats whatever the batch. Returns 0, having done nothing, where
 * glyd_bf16PairsUsable is 0. */
int glyd_bf16PairsTimesBatch(const uint16_t* block, uint64_t nbRows, uint64_t cols, const uint16_t* xb, size_t nbVec,
                             float* y, uint64_t yStride);
/* A token's products in bf16 pairs (rows_bf16.c, in the order pairs.h
 * sets): x rounded to bf16 and laid out for them, in
 * glyd_bf16PairOrderSize(cols, chunk) elements. */
uint64_t glyd_bf16PairOrderSize(uint64_t cols, uint32_t chunk);
void glyd_bf16PairOrder(uint16_t* xp, const float* x, uint64_t cols, uint32_t chunk);
/* y[k] = row k . xp for rows [0, nbRows) of a bf16 block (rows cols apart,
 * summed in pieces of chunk). Returns 0, having done nothing, where
 * glyd_bf16PairsUsable is 0. */
int glyd_bf16RowsTimesVector(const uint16_t* block, uint64_t nbRows, uint64_t cols, uint32_t chunk, const uint16_t* xp,
                             float* y);

/* ------------------------------------------------------------------------ */
/* Model                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    glyd_matrix wq, wk, wv, wo;     /* (nbHeads*headDim, dim) (kv*headDim, dim) x2, (dim, nbHeads*headDim) */
    glyd_matrix wGate, wUp, wDown;  /* (hidden, dim) x2, (dim, hidden) */
    float *attnNorm, *mlpNorm;      /* (dim) */
    float *bq, *bk, *bv;            /* Qwen2: (nbHeads*headDim), (kv*headDim) x2 */
    float *qNorm, *kNorm;           /* Qwen3: (headDim) */
    struct glyd_moeLayer_s* moe;    /* a layer of experts (its MLP matrices unused), else NULL */
    /* Qwen3.5's Gated DeltaNet layers, which have none of wq, wk, wv, wo */
    glyd_matrix wQkv, wZ, wB, wA, wOut; /* (2 keys + values, dim) (values, dim) (vHeads, dim) x2, (dim, values) */
    float* conv;                    /* (2 keys + values, linearConv): the depthwise filter */
    float *dtBias, *aNeg;           /* (vHeads): dt_bias, and -exp(A_log) */
    float* gateNorm;                /* (linearValueDim): the gated RMSNorm's weight */
    float *postAttnNorm, *postMlpNorm; /* Gemma 3: of the attention's and the MLP's outputs (dim) */
} glyd_layer;

/* ------------------------------------------------------------------------ */
/* Backends: where the forward pass runs                                    */
/* ------------------------------------------------------------------------ */

/* The forward pass (forward.c) is one sequence of operations; a backend is
 * the table of those operations, over its own copy of the weights and its
 * own buffers (on the CPU: the model's own). Each works on up to
 * GLYD_BATCH tokens at a time, token t at position pos + t:
 *   x (T, dim)          the residual stream
 *   xn (T, dim)         a normalized copy of x, the products' input
 *   q, k, v             the attention's projections; ao its output
 *   hb, hb2 (T, hidden) the MLP's gate and up projections */

typedef enum { GLYD_NORM_ATTN, GLYD_NORM_MLP, GLYD_NORM_FINAL } glyd_normKind;
typedef enum { GLYD_W_Q, GLYD_W_K, GLYD_W_V, GLYD_W_O, GLYD_W_GATE, GLYD_W_UP, GLYD_W_DOWN } glyd_weightKind;
#define GLYD_W_KINDS 7

/* A layer's matrix of kind k. */
static inline const glyd_matrix* glyd_layerWeight(const glyd_layer* L, glyd_weightKind k)
{
    const glyd_matrix* const ws[GLYD_W_KINDS] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->wGate, &L->wUp, &L->wDown };
    return ws[k];
}

typedef struct {
    const char* name;
    /* x[t] = the embedding's row tokens[t] */
    size_t (*embed)(void* b, const int* tokens, size_t T);
    /* xn[t] = rmsnorm(x[t]) with the norm's weight, for t in [t0, T) */
    size_t (*norm)(void* b, glyd_normKind k, unsigned layer, size_t t0, size_t T);
    /* the products of xn with nbW (1 to 3) of q, k, v or gate, up: into
     * q, k, v, hb, hb2 */
    size_t (*project)(void* b, unsigned layer, const glyd_weightKind* kinds, unsigned nbW, size_t T);
    /* q and k: biases (Qwen2), each head's norm (Qwen3), the rotation;
     * k and v (with its bias) into the cache */
    size_t (*rotateStore)(void* b, unsigned layer, size_t T, size_t pos);
    /* ao[t] = attention of q[t] over the cache's positions 0..pos+t */
    size_t (*attend)(void* b, unsigned layer, size_t T, size_t pos);
    /* x += Wo ao (GLYD_W_O) or Wdown hb (GLYD_W_DOWN) */
    size_t (*residual)(void* b, unsigned layer, glyd_weightKind k, size_t T);
    /* hb = silu(hb) * hb2 */
    size_t (*swiglu)(void* b, size_t T);
    /* logits (host memory, (T - t0) x vocab) = head xn[t] for t in [t0, T) */
    size_t (*logits)(void* b, size_t t0, size_t T, float* out);
    /* the sampler's candidates from the logits of xn[T - 1], without the
     * logits leaving the backend (glyd_samplerDeviceK's k of them, after
     * the penalty on the penalized tokens, distinct and in the vocabulary
     * (glyd_samplerPenalized); temperature 0: the largest, the first of
     * equals): keys and ids into host memory. NULL where the backend has
     * the logits at hand (CPU). */
    size_t (*candidates)(void* b, size_t T, const int* penalized, size_t nbPenalized, float penalty,
                         float temperature, unsigned k, float* keys, int* ids);
    void (*close)(void* b);
    /* x += the mixture of experts of xn (glyd_layer.moe), in place of the
     * MLP's project, swiglu and residual */
    size_t (*experts)(void* b, unsigned layer, size_t T);
} glyd_backendOps;

/* What a backend gets of an open model. */
typedef struct {
    const glyd_llmConfig* cfg;
    const glyd_layer* layers;         /* (nbLayers) */
    const glyd_matrix* embed;         /* (vocab, dim) */
    const glyd_matrix* head;          /* (vocab, dim): embed when tied */
    const float* finalNorm;           /* (dim) */
    const float* invFreq;             /* (headDim / 2) */
    float ropeScale;
    unsigned long long ctx;           /* positions the cache may hold */
    int kvF32;
} glyd_llmWeights;

/* ------------------------------------------------------------------------ */
/* The GPU backend (gpu/backend.c) and its devices                           */
/* ------------------------------------------------------------------------ */

#include "../../gpu/engine_kernels.h"
#include "../../gpu/tensor_gpu.h"

/* A device: memory, and the kernels the GPU backend launches, all on one
 * stream, in order. Two exist: CUDA's (gpu/, loaded from libglyd_cuda.so)
 * and an emulation on the CPU (gpu/emulated_device.c) that runs each kernel's threads
 * in turn through the same per-thread code (gpu/engine_kernels.h), so that the
 * backend's logic is tested where no GPU is. Pointers are device memory;
 * sizes in bytes; every function returns 0 or an error, the device's reason
 * in lastError(). */
typedef struct glyd_gpuDevice_s glyd_gpuDevice;
struct glyd_gpuDevice_s {
    const char* name;
    /* total and free memory */
    size_t (*memory)(const glyd_gpuDevice* d, size_t* total, size_t* avail);
    size_t (*alloc)(const glyd_gpuDevice* d, void** p, size_t size);
    void (*free)(const glyd_gpuDevice* d, void* p);
    size_t (*upload)(const glyd_gpuDevice* d, void* dst, const void* src, size_t size);
    /* waits for the work queued before it */
    size_t (*download)(const glyd_gpuDevice* d, void* dst, const void* src, size_t size);
    /* y (batch, rows) = W x for a batch of 1 to 8 vectors x (batch, cols);
     * parts: batch * nbUnits floats of room when units are parts of rows;
     * tables and runs: the Huffman layout's decoding tables and run index
     * (tensor.h, glyd_tensorHuffmanRuns), NULL for the others */
    size_t (*gemv)(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                   const uint16_t* runs, uint64_t rows, uint64_t cols, const float* x, unsigned batch, float* y,
                   float* parts);
    /* a fast-layout blob's codes rewritten in the nibble form, in place
     * (tensor_kernels.h; units of whole groups): t as it was, planes */
    size_t (*nibbles)(const glyd_gpuDevice* d, uint8_t* blob, const gk_tensor* t);
    /* units [u0, u1) widened to floats: out[i - u0 * unitSize] */
    size_t (*widen)(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, const gk_huf_tables* tables,
                    const uint16_t* runs, uint64_t u0, uint64_t u1, uint16_t* bf16, float* out);
    /* a copy within the device */
    size_t (*copy)(const glyd_gpuDevice* d, void* dst, const void* src, size_t size);
    /* y (n, m; rows ldy apart) = x (n, k) w^T, w (m, k): fp32, through cuBLAS */
    size_t (*gemm)(const glyd_gpuDevice* d, const float* w, uint64_t m, uint64_t k, const float* x, uint64_t n,
                   float* y, uint64_t ldy);
    /* x[t] = row tokens[t] of the matrix (fast layout or stored), as floats */
    size_t (*embed)(const glyd_gpuDevice* d, const uint8_t* blob, const gk_tensor* t, uint64_t cols,
                    const int* tokens, size_t T, float* x);
    size_t (*rmsnorm)(const glyd_gpuDevice* d, const gk_rmsnorm* a);
    size_t (*rotate)(const glyd_gpuDevice* d, const gk_rotate* a);
    size_t (*attend)(const glyd_gpuDevice* d, const gk_attend* a);
    /* x[i] += y[i] */
    size_t (*add)(const glyd_gpuDevice* d, float* x, const float* y, size_t n);
    /* g[i] = silu(g[i]) * u[i] */
    size_t (*swiglu)(const glyd_gpuDevice* d, float* g, const float* u, size_t n);
    /* *token (device) = the index of the largest of x[0..n), the first of equals */
    size_t (*argmax)(const glyd_gpuDevice* d, const float* x, size_t n, int* token);
    /* x[ids[i]] under the repetition penalty, for n distinct ids (device) */
    size_t (*penalize)(const glyd_gpuDevice* d, float* x, const int* ids, size_t n, float penalty);
    /* the best k (at most GLYD_SAMPLER_DEVICE_K) of x[i] / temperature over
     * [0, n): keys and ids (device), best first, ties to the lower id */
    size_t (*topk)(const glyd_gpuDevice* d, const float* x, size_t n, float temperature, unsigned k, float* keys,
                   int* ids);
    const char* (*lastError)(const glyd_gpuDevice* d);
    void (*release)(glyd_gpuDevice* d);
    void* state;
};

/* The CPU's emulation of a device, memory on the heap. NULL when out of memory. */
glyd_gpuDevice* glyd_gpuEmulated(void);
/* CUDA's device, from libglyd_cuda.so: NULL with *why set when it is not
 * there or finds no GPU. */
glyd_gpuDevice* glyd_gpuCuda(char* why, size_t whyCap);

/* The GPU backend over a device (which it then owns): the weights are
 * uploaded as they are held (fast layout, plain bf16, or the Huffman layout
 * with an index of its runs), the cache is paged and grows as positions
 * are used. */
size_t glyd_gpuBackendOpen(const glyd_llmWeights* w, glyd_gpuDevice* d, const glyd_backendOps** ops,
                           void** state, unsigned long long* deviceBytes, char* why, size_t whyCap);
/* model_unsupported, and why, for a model the GPU backend does not run
 * (asked before the weights load, so that the refusal comes at once). */
size_t glyd_gpuBackendRefuses(const glyd_llmConfig* c, char* why, size_t whyCap);

/* ------------------------------------------------------------------------ */
/* The sampler's draw from candidates a backend picked (sampler.c)           */
/* ------------------------------------------------------------------------ */

/* A backend that picks the candidates itself (the GPU) gives the sampler
 * only the best k: their logits after the repetition penalty, divided by
 * the temperature, best first (ties: the lower id), which is all that a
 * draw with top-k of at most k reads. */
#define GLYD_SAMPLER_DEVICE_K 256

/* The k a backend must give: 1 when greedy (the largest logit after the
 * penalty), the sampler's top-k when it is at most GLYD_SAMPLER_DEVICE_K,
 * else 0 (the draw needs every logit). */
unsigned glyd_samplerDeviceK(const glyd_sampler* s, size_t vocab);
/* The penalty (1: none) and the temperature the backend applies. */
void glyd_samplerRules(const glyd_sampler* s, float* penalty, float* temperature);
/* The tokens of the history that the penalty applies to, each once, in the
 * order they first occur (*ids: the sampler's, until its next call); 0 when
 * there is no penalty. */
size_t glyd_samplerPenalized(glyd_sampler* s, const int* history, size_t nbHistory, const int** ids);
/* The draw from those k candidates: what glyd_samplerSample would draw
 * from every logit, the generator's state moving alike. */
int glyd_samplerPick(glyd_sampler* s, const float* logits, const int* ids, size_t k);

/* ------------------------------------------------------------------------ */
/* Tokenizer (tokenizer.c; the type is public: glyd_tokenizer)              */
/* ------------------------------------------------------------------------ */

/* Reads a tokenizer.json held in memory; *why receives a one-line reason. */
glyd_tokenizer* glyd_tokenizerLoad(const char* json, size_t size, char* why, size_t whyCap, size_t* error);

/* The NFC of n bytes of UTF-8 (nfc.c) into *nfc (malloc'd, *nfcLen bytes):
 * what utf8proc_map gives with UTF8PROC_STABLE | UTF8PROC_COMPOSE, in time
 * and memory linear in n. GENERIC, and *nfc NULL, when the text is not
 * valid UTF-8. */
size_t glyd_textNfc(const uint8_t* text, size_t n, uint8_t** nfc, size_t* nfcLen);

/* ------------------------------------------------------------------------ */
/* Mixtures of experts (moe.c)                                              */
/* ------------------------------------------------------------------------ */

/* A sparse layer's MLP: the router and each expert's SwiGLU. */
typedef struct glyd_moeLayer_s {
    glyd_matrix router;               /* (nbExperts, dim) */
    glyd_matrix *gate, *up, *down;    /* (nbExperts) each: (moeHidden, dim) x2, (dim, moeHidden) */
    unsigned nbExperts;
} glyd_moeLayer;

/* Whether layer l of a model is a layer of experts. */
int glyd_moeSparse(const glyd_llmConfig* c, unsigned l);
/* A layer of experts with its matrices zeroed, to be loaded; NULL when out of memory. */
glyd_moeLayer* glyd_moeLayerAlloc(const glyd_llmConfig* c);
void glyd_moeLayerFree(glyd_moeLayer* L);
/* The name of the router's tensor (expert -1) or of an expert's matrix
 * (which: 0 gate, 1 up, 2 down) as the hub's checkpoints spell it. */
void glyd_moeTensorName(const glyd_llmConfig* c, unsigned layer, int expert, unsigned which, char* name,
                        size_t cap);
/* The room each thread's scratch needs for the layer's products. */
size_t glyd_moeScratchReserve(glyd_decodeScratch* s, const glyd_moeLayer* L);

/* Y_i = X W_i^T for nbW (1 to 3) matrices of the same input X (nbVec rows),
 * as the engine runs its products (on its threads). */
typedef size_t (*glyd_matmulsFn)(void* opaque, const glyd_matrix* const* ws, float* const* ys, unsigned nbW,
                                 const float* x, size_t nbVec);

/* The buffers of one batch's mixture. */
typedef struct glyd_moeState_s glyd_moeState;
glyd_moeState* glyd_moeStateAlloc(const glyd_llmConfig* c);
void glyd_moeStateFree(glyd_moeState* s);

/* out (T, dim) = the mixture of experts of xn (T, dim): each token's
 * chosen experts' outputs weighted and summed in the experts' order, so
 * that a token gets the same bits in a batch as alone; each expert chosen
 * in the batch runs once, over its tokens. */
size_t glyd_moeForward(const glyd_moeLayer* L, const glyd_llmConfig* c, glyd_moeState* s, const float* xn, size_t T,
                       float* out, glyd_matmulsFn matmuls, void* opaque);

/* ------------------------------------------------------------------------ */
/* Qwen3.5's Gated DeltaNet layers (deltanet.c)                              */
/* ------------------------------------------------------------------------ */

/* Every Gated DeltaNet layer's state for one sequence (the last inputs of
 * its convolution, its recurrent matrix per value head) and the room for
 * a batch's activations. */
typedef struct glyd_deltaNet_s glyd_deltaNet;

/* NULL when out of memory. chunked: prompts (T > 1) run the delta rule in
 * the chunked form (glyd_deltaRuleChunked), decoding always the recurrence. */
glyd_deltaNet* glyd_deltaNetCreate(const glyd_llmConfig* c, int chunked);
void glyd_deltaNetFree(glyd_deltaNet* d);
/* Zero state: a sequence starts. */
void glyd_deltaNetReset(glyd_deltaNet* d);
/* Layer `layer` (a linear one) over T tokens of xn, one after the other
 * through its state (or in blocks, in the chunked form): x (T, dim) += its
 * output. */
size_t glyd_deltaNetLayer(glyd_deltaNet* d, const glyd_llmConfig* c, const glyd_layer* L, unsigned layer,
                          const float* xn, float* x, size_t T, glyd_matmulsFn products, void* opaque);
/* One value head's tokens for the delta rule: token t's query and key
 * (dk each, the query scaled) at q and k + t qkStride, its value (dv) at
 * v + t vStride, its decay's logarithm and its beta at + t gateStride, its
 * output to o + t oStride. */
typedef struct {
    const float *q, *k;
    size_t qkStride;
    const float* v;
    size_t vStride;
    const float *logDecay, *beta;
    size_t gateStride;
    float* o;
    size_t oStride;
} glyd_deltaTokens;
/* The delta rule of one value head over T tokens, token after token
 * (delta_rule.c): S (dk x dv) decays by e^logDecay, takes beta of the
 * correction of its prediction for k toward v, and is read with q. A token's
 * output is the same to the bit whatever T its call had. scratch: room for
 * 3 dv floats. Follows glyd_tensorSimdLimit. */
void glyd_deltaRule(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* scratch);
/* Tokens a block of the chunked form takes at once. */
#define GLYD_DELTA_CHUNK 16
/* The same rule in the chunked form (delta_chunk.c), GLYD_DELTA_CHUNK
 * tokens at a time as products of matrices: fewer passes over S, but the
 * outputs round otherwise than glyd_deltaRule's (and depend on where the
 * blocks start). work: room for glyd_deltaChunkWork(dk, dv) floats.
 * Follows glyd_tensorSimdLimit. */
void glyd_deltaRuleChunked(float* S, const glyd_deltaTokens* x, size_t T, unsigned dk, unsigned dv, float* work);
size_t glyd_deltaChunkWork(unsigned dk, unsigned dv);
/* Qwen3.5's full-attention q_proj output, each head's query then its gate,
 * split in place: the queries packed (T, heads * headDim) from the front
 * of q, the gates into gate (T, heads * headDim). */
void glyd_splitQueryGate(float* q, float* gate, size_t T, unsigned nbHeads, unsigned headDim);
/* ao *= sigmoid(gate), element by element. */
void glyd_applyOutputGate(float* ao, const float* gate, size_t n);

/* ------------------------------------------------------------------------ */
/* Attention on the CPU (attention.c)                                        */
/* ------------------------------------------------------------------------ */

/* One key and value head of a layer's cache. */
typedef struct {
    const void* k;              /* the head's key at position 0: fp32 or bf16 elements */
    const void* v;              /* its value, the same */
    size_t stride;              /* elements from one position to the next */
    unsigned headDim;
    int f32;                    /* the cache holds fp32, else bf16 */
} glyd_kvHead;

/* One query head's attention at position pos over the cached positions
 * first..pos: out (headDim) = the values weighted by softmax(scale q . k).
 * att: room for pos + 1 floats (the weights, at [first, pos]). The result
 * depends on nothing but the arguments (never on other heads' work or the
 * thread), in an order fixed for a given CPU. */
void glyd_attendHead(const glyd_kvHead* kv, const float* q, size_t first, size_t pos, float scale, float* att,
                     float* out);
/* The widest instructions attention may use (GLYD_SIMD_NONE, _AVX2 or
 * _BEST, as for the tensor decoders), for tests of every path. */
void glyd_attendSimdLimit(int level);

/* ------------------------------------------------------------------------ */
/* The KV cache in coded pages (kv_paged.c)                                 */
/* ------------------------------------------------------------------------ */

/* Positions in a page: a layer's tail of plain bf16 holds at most this
 * many, the rest are coded. */
#define GLYD_KV_PAGE_POSITIONS 16

typedef struct glyd_kvPaged_s glyd_kvPaged;

/* A cache of nbLayers layers of kvHeads heads of headDim, for positions
 * [0, ctx). NULL when memory runs out or a page would exceed
 * GLYD_KV_PAGE_MAX values. */
glyd_kvPaged* glyd_kvPagedCreate(unsigned nbLayers, unsigned kvHeads, unsigned headDim, size_t ctx);
void glyd_kvPagedFree(glyd_kvPaged* c); /* NULL is fine */
/* Position pos of a layer: every head's key (k) and value (v), kvHeads *
 * headDim bf16 values each. pos is at most the positions held, which
 * become pos + 1 (a smaller pos forgets those after it). */
size_t glyd_kvPagedPut(glyd_kvPaged* c, unsigned layer, size_t pos, const uint16_t* k, const uint16_t* v);
/* Head head's keys and values at positions [from, end) of a layer into
 * k[pos * headDim] and v[pos * headDim], as they were put (whole pages
 * around from are written too: room for end rounded up to a page). Safe
 * to call from several threads at once. */
size_t glyd_kvPagedRead(const glyd_kvPaged* c, unsigned layer, unsigned head, size_t from, size_t end, uint16_t* k,
                        uint16_t* v);
/* Bytes the cache holds now: coded pages, tails, indexes and tables; and
 * the positions it holds as a bf16 cache would hold them. */
unsigned long long glyd_kvPagedBytes(const glyd_kvPaged* c);
unsigned long long glyd_kvPagedBytesBf16(const glyd_kvPaged* c);

/* ------------------------------------------------------------------------ */
/* Mistral's and Gemma 3's pieces of the forward pass (gemma.c)              */
/* ------------------------------------------------------------------------ */

/* The first cached position that the query at pos sees in layer l: past
 * the window in a sliding layer, else 0. */
size_t glyd_attendFrom(const glyd_llmConfig* c, unsigned l, size_t pos);
/* The factor of q . k: query_pre_attn_scalar's, else head_dim's, -1/2 power. */
float glyd_attendScale(const glyd_llmConfig* c);
/* The sliding layers' rotary frequencies (Gemma 3's local base and
 * scaling), as glyd_ropeFrequencies gives the others'. */
void glyd_ropeLocalFrequencies(const glyd_llmConfig* c, float* invFreq, float* scale);
/* Gemma's embedding scale, sqrt(hidden_size) in float as the fp32 model
 * applies it; 1 for the others. */
float glyd_embedScale(const glyd_llmConfig* c);
/* Norm weights stored as offsets from 1 (Gemma's, Qwen3.5's: every
 * layer's, and the final norm's) as the engine's norm takes them: 1 + w,
 * added in fp32 as transformers adds it. Nothing for the others. */
void glyd_offsetNorms(const glyd_llmConfig* c, glyd_layer* layers, float* finalNorm);
/* e^(x - shift) for n values in place (vexp.c), within 2 ulp: eight at a
 * time with AVX2 (within glyd_tensorSimdLimit), else one at a time, the
 * same bits either way and wherever an element sits. */
void glyd_expShifted(float* x, size_t n, float shift);
/* gate = silu(gate) * up for n values (gk_swiglu's formula), e^x taken as
 * glyd_expShifted takes it. */
void glyd_swiglu(float* gate, const float* up, size_t n);
/* x * up through the MLP's activation (SwiGLU's silu or Gemma's GELU-tanh). */
void glyd_gatedActivation(const glyd_llmConfig* c, float* gate, const float* up, size_t n);
/* c tanh(x / c) for each of n values, when the config caps the logits. */
void glyd_logitSoftcap(const glyd_llmConfig* c, float* x, size_t n);
/* Nonzero, *why saying what in one line, when the GPU backend cannot run
 * the model as configured with a context of ctx positions. */
int glyd_gpuRefuses(const glyd_llmConfig* c, unsigned long long ctx, char* why, size_t whyCap);

#endif /* GLYD_INFER_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * synth_model.c: a synthetic bf16 model of a real architecture's shape, for
 * speed tests only (never for ratio claims): a Hugging Face folder with
 * config.json and model.safetensors whose weights have the exponent
 * distribution of real weights (sampled from --like) and random signs and
 * mantissas. Norm weights are 1.0.
 *
 *   build/synth_model --shape 0.5b|8b|tiny|30b-a3b|qwen3.5-9b [--layers N] [--like FILE.safetensors]
 *                     [--seed S] -o DIR
 *
 * 0.5b is Qwen2.5-0.5B's layout (tied embeddings, q/k/v biases); 8b is
 * Llama-3-8B's; 30b-a3b is Qwen3-30B-A3B's, a mixture of experts (128
 * experts 768 wide, 8 chosen, one tensor per expert as on the hub);
 * qwen3.5-9b is Qwen3.5-9B's text model (three Gated DeltaNet layers to one
 * of gated full attention, the last layer full attention when --layers
 * asks fewer than four; its 1 + w norms are 0). Built by `make tools`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../llm/model/model.h"

typedef struct {
    const char* name;
    const char* arch;
    const char* type;
    unsigned hidden, inter, layers, heads, kvHeads, headDim;
    unsigned long long vocab;
    int tied, qkvBias;
    double theta;
} shape_def;

static const shape_def kShapes[] = {
    { "tiny", "LlamaForCausalLM", "llama", 64, 172, 5, 8, 4, 8, 512, 1, 0, 10000.0 },
    { "0.5b", "Qwen2ForCausalLM", "qwen2", 896, 4864, 24, 14, 2, 64, 151936, 1, 1, 1000000.0 },
    { "8b", "LlamaForCausalLM", "llama", 4096, 14336, 32, 32, 8, 128, 128256, 0, 0, 500000.0 },
    { "30b-a3b", "Qwen3MoeForCausalLM", "qwen3_moe", 2048, 6144, 48, 32, 4, 128, 151936, 0, 0, 1000000.0 },
    { "qwen3.5-9b", "Qwen3_5ForCausalLM", "qwen3_5_text", 4096, 12288, 32, 16, 4, 256, 248320, 0, 0, 10000000.0 },
};

/* The shapes whose every layer is a mixture of experts (Qwen3-MoE's
 * layout, with q and k norms): experts, those chosen, their width. */
typedef struct {
    const char* name;
    unsigned experts, used, inter;
} moe_def;

static const moe_def kMoe[] = {
    { "30b-a3b", 128, 8, 768 },
};

/* Qwen3.5-9B's linear attention: 16 key heads and 32 value heads of 128,
 * a convolution of 4 taps */
enum { Q35_KEY_HEADS = 16, Q35_VALUE_HEADS = 32, Q35_HEAD = 128, Q35_CONV = 4 };

/* Whether layer a of n is Gated DeltaNet: transformers' pattern (every
 * fourth full attention), with the last layer full attention in a model cut
 * to fewer than four, so that both kinds run. */
static int q35_linear(int a, int n)
{
    return n < 4 ? a != n - 1 : (a + 1) % 4 != 0;
}

typedef struct { uint64_t s; } rng;
static uint64_t next(rng* r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* Cumulative exponent counts of the real weights, scaled to 2^32. */
static int load_histogram(const char* path, uint64_t cum[256])
{
    glyd_mappedFile mf;
    glyd_safetensors st;
    const char* why = NULL;
    uint64_t count[256], total = 0, acc = 0;
    size_t i, k;
    memset(count, 0, sizeof count);
    if (glyd_isError(glyd_mapFile(&mf, path))) { fprintf(stderr, "synth_model: cannot read %s\n", path); return 0; }
    if (glyd_isError(glyd_stParse(&st, mf.data, mf.size, &why))) {
        fprintf(stderr, "synth_model: %s: %s\n", path, why);
        return 0;
    }
    for (i = 0; i < st.nbTensors; i++) {
        const glyd_stTensor* const t = &st.tensors[i];
        const uint8_t* const p = mf.data + st.dataStart + t->begin;
        if (t->ndim < 2) continue; /* matrices only: norms are not weights like these */
        for (k = 0; k < t->nbElements; k++) {
            unsigned e;
            if (t->dtype == GLYD_ST_BF16) e = (glyd_read16(p + 2 * k) >> 7) & 0xFF;
            else if (t->dtype == GLYD_ST_F32) e = (glyd_read32(p + 4 * k) >> 23) & 0xFF;
            else break;
            count[e]++;
            total++;
        }
    }
    glyd_stFree(&st);
    glyd_unmapFile(&mf);
    if (!total) { fprintf(stderr, "synth_model: %s has no bf16 or f32 matrices\n", path); return 0; }
    for (i = 0; i < 256; i++) {
        acc += count[i];
        cum[i] = (uint64_t)((double)acc / (double)total * 4294967296.0);
    }
    return 1;
}

/* The exponent search starts where the top 16 bits of the draw put it: the
 * same exponent as a search from 0, some hundred steps sooner. */
typedef struct {
    uint64_t cum[256];
    uint8_t start[1 << 16];
} exponent_table;

static void exponent_table_init(exponent_table* t)
{
    unsigned h, e = 0;
    for (h = 0; h < (1u << 16); h++) {
        while (e < 255 && t->cum[e] <= ((uint64_t)h << 16)) e++;
        t->start[h] = (uint8_t)e;
    }
}

static uint16_t sample(rng* r, const exponent_table* t)
{
    uint64_t const x = next(r);
    uint64_t const u = x & 0xFFFFFFFFu;
    unsigned e = t->start[u >> 16];
    while (e < 255 && t->cum[e] <= u) e++;
    return (uint16_t)(((x >> 32) & 0x8000) | (e << 7) | ((x >> 40) & 0x7F));
}

/* kind: 0 weight, 1 norm (1.0), 2 bias, 3 depthwise filter [rows, 1, cols], 4 norm offset (0.0) */
typedef struct { char name[128]; unsigned long long rows, cols; int kind; } spec;

int main(int argc, char** argv)
{
    const char* shapeName = "tiny";
    const char* like = "../shared/fixtures/stories260K/model.safetensors";
    const char* out = NULL;
    int layers = -1, a;
    static exponent_table et;
    const shape_def* sh = NULL;
    const moe_def* moe = NULL;
    char moeConfig[256] = "";
    spec* specs;
    glyd_stTensor* ts;
    size_t nb = 0, i;
    rng r = { 0x9E3779B97F4A7C15ULL };
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--shape") && a + 1 < argc) shapeName = argv[++a];
        else if (!strcmp(argv[a], "--layers") && a + 1 < argc) layers = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--like") && a + 1 < argc) like = argv[++a];
        else if (!strcmp(argv[a], "--seed") && a + 1 < argc) r.s = strtoull(argv[++a], NULL, 0) | 1;
        else if (!strcmp(argv[a], "-o") && a + 1 < argc) out = argv[++a];
        else {
            fprintf(stderr, "usage: synth_model --shape 0.5b|8b|tiny|30b-a3b|qwen3.5-9b [--layers N] [--like F] [--seed S] "
                            "-o DIR\n");
            return 1;
        }
    }
    for (i = 0; i < sizeof kShapes / sizeof kShapes[0]; i++)
        if (!strcmp(kShapes[i].name, shapeName)) sh = &kShapes[i];
    if (!sh || !out) { fprintf(stderr, "synth_model: need a known --shape and -o DIR\n"); return 1; }
    for (i = 0; i < sizeof kMoe / sizeof kMoe[0]; i++)
        if (!strcmp(kMoe[i].name, shapeName)) moe = &kMoe[i];
    if (moe)
        snprintf(moeConfig, sizeof moeConfig, ",\n  \"num_experts\": %u,\n  \"num_experts_per_tok\": %u,\n"
                 "  \"moe_intermediate_size\": %u,\n  \"norm_topk_prob\": true", moe->experts, moe->used, moe->inter);
    if (layers < 0) layers = (int)sh->layers;
    if (!load_histogram(like, et.cum)) return 1;
    exponent_table_init(&et);
    if (mkdir(out, 0777) != 0 && errno != EEXIST) { fprintf(stderr, "synth_model: %s: %s\n", out, strerror(errno)); return 1; }

    specs = (spec*)calloc((16 + (moe ? 1 + 3 * (size_t)moe->experts : 0)) * (size_t)layers + 4, sizeof(spec));
    ts = (glyd_stTensor*)calloc((16 + (moe ? 1 + 3 * (size_t)moe->experts : 0)) * (size_t)layers + 4,
                                sizeof(glyd_stTensor));
#define ADD(k, r_, c_, ...) do { snprintf(specs[nb].name, sizeof specs[nb].name, __VA_ARGS__); \
        specs[nb].rows = (r_); specs[nb].cols = (c_); specs[nb].kind = (k); nb++; } while (0)
    ADD(0, sh->vocab, sh->hidden, "model.embed_tokens.weight");
    for (a = 0; a < layers; a++) {
        unsigned const q = sh->heads * sh->headDim, kv = sh->kvHeads * sh->headDim;
        int const q35 = !strcmp(sh->arch, "Qwen3_5ForCausalLM");
        if (q35) {
            unsigned const keys = Q35_KEY_HEADS * Q35_HEAD, values = Q35_VALUE_HEADS * Q35_HEAD;
            ADD(4, sh->hidden, 0, "model.layers.%d.input_layernorm.weight", a);
            if (q35_linear(a, layers)) {
                ADD(0, 2 * keys + values, sh->hidden, "model.layers.%d.linear_attn.in_proj_qkv.weight", a);
                ADD(0, values, sh->hidden, "model.layers.%d.linear_attn.in_proj_z.weight", a);
                ADD(0, Q35_VALUE_HEADS, sh->hidden, "model.layers.%d.linear_attn.in_proj_b.weight", a);
                ADD(0, Q35_VALUE_HEADS, sh->hidden, "model.layers.%d.linear_attn.in_proj_a.weight", a);
                ADD(3, 2 * keys + values, Q35_CONV, "model.layers.%d.linear_attn.conv1d.weight", a);
                ADD(2, Q35_VALUE_HEADS, 0, "model.layers.%d.linear_attn.dt_bias", a);
                ADD(2, Q35_VALUE_HEADS, 0, "model.layers.%d.linear_attn.A_log", a);
                ADD(1, Q35_HEAD, 0, "model.layers.%d.linear_attn.norm.weight", a);
                ADD(0, sh->hidden, values, "model.layers.%d.linear_attn.out_proj.weight", a);
            } else {
                ADD(0, 2 * q, sh->hidden, "model.layers.%d.self_attn.q_proj.weight", a); /* queries and gates */
                ADD(0, kv, sh->hidden, "model.layers.%d.self_attn.k_proj.weight", a);
                ADD(0, kv, sh->hidden, "model.layers.%d.self_attn.v_proj.weight", a);
                ADD(4, sh->headDim, 0, "model.layers.%d.self_attn.q_norm.weight", a);
                ADD(4, sh->headDim, 0, "model.layers.%d.self_attn.k_norm.weight", a);
                ADD(0, sh->hidden, q, "model.layers.%d.self_attn.o_proj.weight", a);
            }
            ADD(4, sh->hidden, 0, "model.layers.%d.post_attention_layernorm.weight", a);
            ADD(0, sh->inter, sh->hidden, "model.layers.%d.mlp.gate_proj.weight", a);
            ADD(0, sh->inter, sh->hidden, "model.layers.%d.mlp.up_proj.weight", a);
            ADD(0, sh->hidden, sh->inter, "model.layers.%d.mlp.down_proj.weight", a);
            continue;
        }
        ADD(1, sh->hidden, 0, "model.layers.%d.input_layernorm.weight", a);
        ADD(0, q, sh->hidden, "model.layers.%d.self_attn.q_proj.weight", a);
        ADD(0, kv, sh->hidden, "model.layers.%d.self_attn.k_proj.weight", a);
        ADD(0, kv, sh->hidden, "model.layers.%d.self_attn.v_proj.weight", a);
        if (sh->qkvBias) {
            ADD(2, q, 0, "model.layers.%d.self_attn.q_proj.bias", a);
            ADD(2, kv, 0, "model.layers.%d.self_attn.k_proj.bias", a);
            ADD(2, kv, 0, "model.layers.%d.self_attn.v_proj.bias", a);
        }
        ADD(0, sh->hidden, q, "model.layers.%d.self_attn.o_proj.weight", a);
        ADD(1, sh->hidden, 0, "model.layers.%d.post_attention_layernorm.weight", a);
        if (moe) {
            unsigned e;
            ADD(1, sh->headDim, 0, "model.layers.%d.self_attn.q_norm.weight", a);
            ADD(1, sh->headDim, 0, "model.layers.%d.self_attn.k_norm.weight", a);
            ADD(0, moe->experts, sh->hidden, "model.layers.%d.mlp.gate.weight", a);
            for (e = 0; e < moe->experts; e++) {
                ADD(0, moe->inter, sh->hidden, "model.layers.%d.mlp.experts.%u.gate_proj.weight", a, e);
                ADD(0, moe->inter, sh->hidden, "model.layers.%d.mlp.experts.%u.up_proj.weight", a, e);
                ADD(0, sh->hidden, moe->inter, "model.layers.%d.mlp.experts.%u.down_proj.weight", a, e);
            }
            continue;
        }
        ADD(0, sh->inter, sh->hidden, "model.layers.%d.mlp.gate_proj.weight", a);
        ADD(0, sh->inter, sh->hidden, "model.layers.%d.mlp.up_proj.weight", a);
        ADD(0, sh->hidden, sh->inter, "model.layers.%d.mlp.down_proj.weight", a);
    }
    ADD(strcmp(sh->arch, "Qwen3_5ForCausalLM") ? 1 : 4, sh->hidden, 0, "model.norm.weight");
    if (!sh->tied) ADD(0, sh->vocab, sh->hidden, "lm_head.weight");
    for (i = 0; i < nb; i++) {
        ts[i].name = specs[i].name;
        ts[i].dtype = GLYD_ST_BF16;
        ts[i].ndim = specs[i].kind == 3 ? 3 : specs[i].cols ? 2 : 1;
        ts[i].shape[0] = specs[i].rows;
        ts[i].shape[1] = specs[i].kind == 3 ? 1 : specs[i].cols;
        ts[i].shape[2] = specs[i].cols;
        ts[i].nbElements = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
    }
    {
        char path[4096];
        FILE* f;
        uint8_t* header;
        size_t hsize;
        uint16_t* chunk = (uint16_t*)malloc(sizeof(uint16_t) << 20);
        unsigned long long params = 0;
        snprintf(path, sizeof path, "%s/config.json", out);
        f = fopen(path, "w");
        if (!f) { fprintf(stderr, "synth_model: %s: %s\n", path, strerror(errno)); return 1; }
        fprintf(f, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n  \"hidden_size\": %u,\n"
                   "  \"intermediate_size\": %u,\n  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %u,\n"
                   "  \"num_key_value_heads\": %u,\n  \"head_dim\": %u,\n  \"vocab_size\": %llu,\n"
                   "  \"max_position_embeddings\": 32768,\n  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": %.1f,\n"
                   "  \"tie_word_embeddings\": %s,\n  \"hidden_act\": \"silu\",\n  \"torch_dtype\": \"bfloat16\",\n"
                   "  \"bos_token_id\": 1,\n  \"eos_token_id\": 2",
                sh->arch, sh->type, sh->hidden, sh->inter, layers, sh->heads, sh->kvHeads, sh->headDim, sh->vocab,
                sh->theta, sh->tied ? "true" : "false");
        fprintf(f, "%s", moeConfig);
        if (!strcmp(sh->arch, "Qwen3_5ForCausalLM")) {
            fprintf(f, ",\n  \"partial_rotary_factor\": 0.25,\n  \"linear_conv_kernel_dim\": %d,\n"
                       "  \"linear_key_head_dim\": %d,\n  \"linear_value_head_dim\": %d,\n"
                       "  \"linear_num_key_heads\": %d,\n  \"linear_num_value_heads\": %d,\n  \"layer_types\": [",
                    Q35_CONV, Q35_HEAD, Q35_HEAD, Q35_KEY_HEADS, Q35_VALUE_HEADS);
            for (a = 0; a < layers; a++)
                fprintf(f, "%s\"%s\"", a ? ", " : "", q35_linear(a, layers) ? "linear_attention" : "full_attention");
            fprintf(f, "]");
        }
        fprintf(f, "\n}\n");
        fclose(f);
        if (glyd_isError(glyd_stWriteHeader(&header, &hsize, ts, nb,
                                            "{\"format\": \"pt\", \"source\": \"glyd synth_model (speed tests only)\"}"))) {
            fprintf(stderr, "synth_model: header\n");
            return 1;
        }
        snprintf(path, sizeof path, "%s/model.safetensors", out);
        f = fopen(path, "wb");
        if (!f || fwrite(header, 1, hsize, f) != hsize) { fprintf(stderr, "synth_model: %s: %s\n", path, strerror(errno)); return 1; }
        for (i = 0; i < nb; i++) {
            unsigned long long left = ts[i].nbElements;
            params += left;
            while (left) {
                size_t const n = (size_t)GLYD_MIN(left, 1ULL << 20);
                size_t k;
                for (k = 0; k < n; k++)
                    chunk[k] = specs[i].kind == 1 ? 0x3F80 /* 1.0 */ : specs[i].kind == 4 ? 0 : sample(&r, &et);
                if (fwrite(chunk, 2, n, f) != n) { fprintf(stderr, "synth_model: write: %s\n", strerror(errno)); return 1; }
                left -= n;
            }
        }
        if (fclose(f) != 0) { fprintf(stderr, "synth_model: close: %s\n", strerror(errno)); return 1; }
        printf("%s: %s shape, %d layers, %zu tensors, %llu parameters (%.2f GB of bf16)\n", out, sh->name, layers, nb,
               params, 2.0 * (double)params / 1e9);
        free(header);
        free(chunk);
    }
    free(specs);
    free(ts);
    return 0;
}

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Makes the engine's test models: tiny random Qwen2, Qwen3, Qwen3 with
yarn rope scaling and Llama with Llama 3's rope scaling, in bf16 Hugging
Face layout, with reference logits from transformers itself (fp32 compute
on the bf16 weights).

Run by hand (it needs torch and transformers from PyPI; it never runs in
CI); its output is committed under tests/data/tiny-*. Name models to make
only those, so that the others' committed files stay as they are:

    pip install torch transformers safetensors
    python3 tools/tiny_models.py tests/data [NAME...]

Each folder holds config.json, model.safetensors and reference.json:
{"tokens": [...], "logits": "reference_logits.f32"}, the logits being
float32 little-endian, [tokens][vocab].
"""
import json
import os
import sys

import torch
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM)
from transformers import MixtralConfig, MixtralForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

COMMON = dict(vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
              rms_norm_eps=1e-6, hidden_act="silu", initializer_range=0.08, bos_token_id=1,
              eos_token_id=2)

# (name, seed, config class, model class, its own settings, reference
# tokens). A model's seed is its own, so that adding or removing one leaves
# the others' committed files as they are; each new model takes a seed no
# other has.
MODELS = [
    ("tiny-qwen2", 1234, Qwen2Config, Qwen2ForCausalLM,
     dict(rope_theta=10000.0, tie_word_embeddings=False), 48),
    ("tiny-qwen3", 1235, Qwen3Config, Qwen3ForCausalLM,
     dict(head_dim=16, rope_theta=1000000.0, tie_word_embeddings=True), 48),
    ("tiny-qwen3-yarn", 1236, Qwen3Config, Qwen3ForCausalLM,
     dict(head_dim=16, rope_theta=10000.0, tie_word_embeddings=True,
          rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}), 48),
    # with an original context of 32, the 8 rotary pairs fall in all three
    # of llama3's bands (kept, smoothed, divided by the factor), and the
    # reference runs to 5 times that context
    ("tiny-llama3", 1237, LlamaConfig, LlamaForCausalLM,
     dict(head_dim=16, rope_theta=10000.0, tie_word_embeddings=True,
          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 32}), 160),
    # mixtures of experts, in the hub's form (one tensor per expert, which
    # save_pretrained writes): 8 experts, 2 chosen for each token; the
    # middle layer of Qwen3-MoE is dense (mlp_only_layers), its router's
    # weights are not renormalized (norm_topk_prob false), Mixtral's are
    ("tiny-qwen3-moe", 1320, Qwen3MoeConfig, Qwen3MoeForCausalLM,
     dict(num_hidden_layers=3, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
          mlp_only_layers=[1], decoder_sparse_step=1, norm_topk_prob=False, rope_theta=1000000.0,
          tie_word_embeddings=True), 160),
    ("tiny-mixtral", 1321, MixtralConfig, MixtralForCausalLM,
     dict(intermediate_size=16, num_local_experts=8, num_experts_per_tok=2, rope_theta=1000000.0,
          tie_word_embeddings=False), 160),
]


def make(out_root, name, config_cls, model_cls, extra, nb_tokens, seed):
    torch.manual_seed(seed)
    config = config_cls(**{**COMMON, **extra})
    model = model_cls(config)
    with torch.no_grad():
        # random biases and norm weights too, so that every path is exercised
        for pname, p in model.named_parameters():
            if pname.endswith("bias") or "norm" in pname:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if "norm" in pname else 0.0))
    model = model.to(torch.bfloat16)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for junk in ("generation_config.json",):
        path = os.path.join(out, junk)
        if os.path.exists(path):
            os.remove(path)
    # the reference: the saved bf16 weights loaded afresh and computed in
    # fp32 (casting the model in memory would also round the rotary
    # frequencies, a buffer, to bf16; loading computes them in fp32)
    ref = model_cls.from_pretrained(out, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(seed + 100)
    tokens = torch.randint(0, COMMON["vocab_size"], (nb_tokens,), generator=g).tolist()
    with torch.no_grad():
        logits = ref(torch.tensor([tokens])).logits[0].to(torch.float32).contiguous()
    logits.numpy().astype("<f4").tofile(os.path.join(out, "reference_logits.f32"))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"tokens": tokens, "logits": "reference_logits.f32",
                   "made_by": "tools/tiny_models.py, transformers " + __import__("transformers").__version__},
                  f)
    print(name, "logits", tuple(logits.shape), "max |logit|", float(logits.abs().max()))


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/data"
    wanted = set(sys.argv[2:]) or {m[0] for m in MODELS}
    unknown = wanted - {m[0] for m in MODELS}
    if unknown:
        sys.exit("tiny_models.py: no model named " + ", ".join(sorted(unknown)))
    for name, seed, cc, mc, extra, nb_tokens in MODELS:
        if name in wanted:
            make(out_root, name, cc, mc, extra, nb_tokens, seed=seed)


if __name__ == "__main__":
    main()

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
from transformers import (Gemma3Config, Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Gemma3TextConfig,
                          MistralConfig, MistralForCausalLM)

def gemma3_multimodal(**text):
    """Gemma 3's multimodal model around the text model of these settings,
    with a tiny vision tower; its image token lies outside the vocabulary,
    so that no text token stands for an image."""
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=28,
                  patch_size=14)
    return Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4, image_token_index=1000,
                        boi_token_index=1001, eoi_token_index=1002)


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
    # a window of 48 positions under 160: most queries see only part of the
    # past; head_dim given and unlike hidden_size / heads, as Mistral Nemo's
    ("tiny-mistral", 1300, MistralConfig, MistralForCausalLM,
     dict(head_dim=24, rope_theta=1000000.0, sliding_window=48, tie_word_embeddings=False), 160),
    # sliding layers (window 40, their own base) and full ones with linear
    # scaling by 4 (a context of 256 stretched from 64: the 160 positions go
    # past 64); sqrt(48) is no round number, so the embedding's scale is
    # checked in float; Gemma's own activation key replaces hidden_act
    ("tiny-gemma3", 1301, Gemma3TextConfig, Gemma3ForCausalLM,
     dict(hidden_size=48, intermediate_size=96, num_hidden_layers=4, head_dim=16, hidden_act=None,
          query_pre_attn_scalar=24, sliding_window=40, max_position_embeddings=256, final_logit_softcapping=4.0,
          bos_token_id=2, eos_token_id=1, tie_word_embeddings=True,
          layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
          rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
                           "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}), 160),
    # the text model of a multimodal checkpoint (tensors under
    # language_model.model., settings in text_config): Gemma 3 4B's form,
    # its 8 heads sharing transformers' default of 4 kv heads, linear
    # scaling by 8 given as rope_scaling, one full layer in 2
    ("tiny-gemma3-mm", 1302, gemma3_multimodal, Gemma3ForConditionalGeneration,
     dict(hidden_size=48, intermediate_size=96, num_hidden_layers=4, num_attention_heads=8,
          num_key_value_heads=None, head_dim=16, hidden_act=None, sliding_window=40, sliding_window_pattern=2,
          rope_scaling={"rope_type": "linear", "factor": 8.0}), 96),
]


def make(out_root, name, config_cls, model_cls, extra, nb_tokens, seed):
    torch.manual_seed(seed)
    # a model's own settings override the common ones; None drops a key
    settings = {k: v for k, v in {**COMMON, **extra}.items() if v is not None}
    config = config_cls(**settings)
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

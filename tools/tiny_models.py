#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Makes the engine's test models: tiny random models of each family it
runs (Qwen2; Qwen3, with and without yarn rope scaling; Llama with Llama
3's rope scaling; Qwen3-MoE and Mixtral; Qwen3.5, bare and in its
multimodal form; Mistral; Gemma 3, bare and multimodal) in bf16 Hugging
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
from transformers import Qwen3_5Config, Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, Qwen3_5TextConfig
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

# Qwen3.5: four layers (three Gated DeltaNet, then full attention with its
# output gate and a rotary quarter of each head) over 200 positions, so
# that a prompt crosses several batches and the recurrent state runs long;
# two value heads per key head, as the released models group them; narrower
# than the others, to keep the files small.
QWEN3_5_TEXT = dict(num_hidden_layers=4, hidden_size=32, intermediate_size=48, num_attention_heads=2,
                    num_key_value_heads=1, head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
                    linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                     "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0],
                                     "mrope_interleaved": True})


def qwen3_5_text_config(**kw):
    return Qwen3_5TextConfig(**{**kw, **QWEN3_5_TEXT})


def qwen3_5_vl_config(**kw):
    """The released multimodal form: the text model's config nested under
    text_config, beside a vision tower of one tiny block."""
    text = {**kw, **QWEN3_5_TEXT}
    text.pop("tie_word_embeddings", None)
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32,
                  patch_size=4, temporal_patch_size=2, spatial_merge_size=2, num_position_embeddings=16)
    return Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=False)


def add_mtp(out):
    """The released checkpoints also carry a multi-token-prediction head
    (mtp.*), which transformers ignores on load; a few such tensors are
    added to the saved file so that the engine must ignore them too."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    g = torch.Generator().manual_seed(1359)
    hidden = QWEN3_5_TEXT["hidden_size"]
    tensors["mtp.fc.weight"] = (torch.randn(hidden, 2 * hidden, generator=g) * 0.05).to(torch.bfloat16)
    tensors["mtp.norm.weight"] = torch.zeros(hidden, dtype=torch.bfloat16)
    save_file(tensors, path, metadata={"format": "pt"})


MODELS += [
    ("tiny-qwen3-5", 1340, qwen3_5_text_config, Qwen3_5ForCausalLM, dict(tie_word_embeddings=False), 200),
    ("tiny-qwen3-5-vl", 1341, qwen3_5_vl_config, Qwen3_5ForConditionalGeneration, dict(), 64),
]


def center_norms(model):
    """Qwen3.5's RMSNorms scale by 1 + w and are trained around w = 0:
    their random weights are moved there (all but the gated norm of the
    linear attention, which scales by w itself)."""
    for pname, p in model.named_parameters():
        if "norm" in pname and "linear_attn.norm" not in pname and "visual" not in pname:
            p.sub_(1.0)


# hooks: ADJUST on the random model before it is saved, POST on the saved folder
ADJUST = {"tiny-qwen3-5": center_norms, "tiny-qwen3-5-vl": center_norms}
POST = {"tiny-qwen3-5-vl": add_mtp}


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
        if name in ADJUST:
            ADJUST[name](model)
    model = model.to(torch.bfloat16)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for junk in ("generation_config.json",):
        path = os.path.join(out, junk)
        if os.path.exists(path):
            os.remove(path)
    if name in POST:
        POST[name](out)
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

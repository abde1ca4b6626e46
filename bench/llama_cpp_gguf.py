# SPDX-License-Identifier: BSD-3-Clause
"""bench/llama_cpp_gguf.py: a Hugging Face Qwen2 or Qwen3 folder written as
a bf16 GGUF file for llama.cpp, with gguf-py's GGUFWriter and numpy alone.

    python llama_cpp_gguf.py MODEL_DIR TOKENIZER_DIR OUT.gguf

llama.cpp's own convert_hf_to_gguf.py needs torch, which PyPI ships only
with its CUDA libraries (gigabytes); this writes what it writes for these
two architectures: matrices in bf16 as they are, norms and biases widened
to f32, the byte-level BPE vocabulary padded to the embedding's rows.
The synthetic models have no tokenizer: TOKENIZER_DIR gives one
(tokenizer.json, tokenizer_config.json) whose vocabulary fits the rows.
"""
import json
import os
import sys

import gguf
import numpy as np

ARCHS = {"Qwen2ForCausalLM": gguf.MODEL_ARCH.QWEN2, "Qwen3ForCausalLM": gguf.MODEL_ARCH.QWEN3}


def safetensors_arrays(path):
    """Each tensor of a .safetensors file as a numpy view of the mapped file
    (bf16 as uint16)."""
    with open(path, "rb") as f:
        header_len = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(header_len))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "BF16":
            sys.exit(f"llama_cpp_gguf: {name} is {t['dtype']}, not BF16")
        start, end = t["data_offsets"]
        yield name, data[start:end].view(np.uint16).reshape(t["shape"])


def model_arrays(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    for f in files:
        yield from safetensors_arrays(os.path.join(model_dir, f))


def add_vocabulary(w, tokenizer_dir, rows):
    tok = json.load(open(os.path.join(tokenizer_dir, "tokenizer.json")))
    config = json.load(open(os.path.join(tokenizer_dir, "tokenizer_config.json")))
    if tok["model"]["type"] != "BPE":
        sys.exit("llama_cpp_gguf: the tokenizer is not a BPE one")
    texts = {i: s for s, i in tok["model"]["vocab"].items()}
    types = dict.fromkeys(texts, gguf.TokenType.NORMAL)
    for a in tok["added_tokens"]:
        texts[a["id"]] = a["content"]
        # convert_hf_to_gguf.py takes <|name|> for a control token too
        looks_special = a["content"].startswith("<|") and a["content"].endswith("|>")
        control = a["special"] or looks_special
        types[a["id"]] = gguf.TokenType.CONTROL if control else gguf.TokenType.USER_DEFINED
    if max(texts) >= rows:
        sys.exit(f"llama_cpp_gguf: the tokenizer has ids up to {max(texts)}, the embedding {rows} rows")
    # Rows past the vocabulary are padding, as convert_hf_to_gguf.py names them.
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list([texts.get(i, f"[PAD{i}]") for i in range(rows)])
    w.add_token_types([types.get(i, gguf.TokenType.UNUSED) for i in range(rows)])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]])
    ids = {s: i for i, s in texts.items()}
    for key, add in (("eos_token", w.add_eos_token_id), ("pad_token", w.add_pad_token_id)):
        if config.get(key) in ids:
            add(ids[config[key]])
    w.add_add_bos_token(False)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: llama_cpp_gguf.py MODEL_DIR TOKENIZER_DIR OUT.gguf")
    model_dir, tokenizer_dir, out = sys.argv[1:]
    c = json.load(open(os.path.join(model_dir, "config.json")))
    arch = ARCHS.get(c["architectures"][0])
    if arch is None:
        sys.exit(f"llama_cpp_gguf: {c['architectures'][0]} is not Qwen2 or Qwen3")
    n_layers = c["num_hidden_layers"]
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]

    w = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(os.path.basename(os.path.normpath(model_dir)))
    w.add_block_count(n_layers)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    names = gguf.get_tensor_name_map(arch, n_layers)
    rows = None
    for name, a in model_arrays(model_dir):
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            sys.exit(f"llama_cpp_gguf: no GGUF name for {name}")
        if new == "token_embd.weight":
            rows = a.shape[0]
        if a.ndim == 1:  # norms and biases: f32, as llama.cpp wants them
            w.add_tensor(new, (a.astype(np.uint32) << 16).view(np.float32))
        else:
            w.add_tensor(new, a, raw_dtype=gguf.GGMLQuantizationType.BF16)
    if rows is None:
        sys.exit("llama_cpp_gguf: no embedding")
    add_vocabulary(w, tokenizer_dir, rows)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

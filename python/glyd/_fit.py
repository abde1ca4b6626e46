# SPDX-License-Identifier: BSD-3-Clause
# fit: whether a model's weights and a KV cache of a given context fit in a
# given memory, in bf16 and as glyd.from_pretrained holds them, from the
# model's files alone (no model is built).
import json
import math
import re

from . import _glyd
from ._checkpoint import DTYPE_SIZES, PackedCheckpoint, open_checkpoint
from ._glyd import Error
from ._hf import DTYPE_BF16, LAYOUT_FAST, _resolve, as_bf16

_FLOATS = ("BF16", "F16", "F32", "F64", "F8_E4M3", "F8_E5M2")
# A tensor larger than this is estimated from SAMPLE_PIECES pieces of whole
# rows spread over it, SAMPLE_ELEMENTS elements in all.
SAMPLE_MIN = 1 << 20
SAMPLE_PIECES = 8
SAMPLE_ELEMENTS = 1 << 18
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_memory(memory):
    """Bytes from an int or a string such as "24GB" (10**9 bytes a GB) or
    "24GiB" (2**30)."""
    if isinstance(memory, int) and memory > 0:
        return memory
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(memory))
    if not m or m.group(2).lower() not in _UNITS or float(m.group(1)) <= 0:
        raise ValueError("memory=%r: a size such as 24GB, 24GiB or 512MB" % (memory,))
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


class Fit:
    """What fit found: bytes of the weights and of the KV cache, bf16 and
    glyd, and whether each fits. str() gives a small table."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return "Fit(%s)" % ", ".join("%s=%r" % kv for kv in sorted(self.__dict__.items()))

    def __str__(self):
        rows = [
            ("", "bf16", "glyd"),
            ("weights", _size(self.weights_bf16), _size(self.weights_glyd)),
            ("KV cache, %d tokens" % self.context, _size(self.kv_cache_bf16), _size(self.kv_cache_glyd)),
            ("total", _size(self.total_bf16), _size(self.total_glyd)),
            ("fits in %s" % _size(self.memory), "yes" if self.fits_bf16 else "no", "yes" if self.fits_glyd else "no"),
            ("longest context that fits", _tokens(self.max_context_bf16), _tokens(self.max_context_glyd)),
        ]
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        return "\n".join("%-*s  %*s  %*s" % (w[0], r[0], w[1], r[1], w[2], r[2]) for r in rows)


def _size(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d B" % n


def _tokens(n):
    return "any" if n is None else "%d tokens" % n


def _text_config(config):
    """The language model's part of a config (multimodal configs nest it)."""
    return config.get("text_config") or config


def kv_bytes_per_token(config):
    """Bytes a token takes in a bf16 KV cache, and the sliding windows that
    bound some layers': (full layers' bytes per token, [(window, bytes per
    token)]), from config.json as transformers reads it."""
    c = _text_config(config)
    try:
        layers = int(c["num_hidden_layers"])
        heads = int(c["num_attention_heads"])
        kv_heads = int(c.get("num_key_value_heads") or heads)
        head_dim = int(c.get("head_dim") or int(c["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError) as e:
        raise Error("config.json lacks what the KV cache's size needs: %s" % e) from None
    per_layer = 2 * kv_heads * head_dim * 2  # keys and values, bf16
    types = c.get("layer_types") or ["full_attention"] * layers
    window = c.get("sliding_window")
    full, windowed = 0, []
    for t in types:
        if t == "sliding_attention" and window:
            windowed.append((int(window), per_layer))
        elif t in ("full_attention", "attention", "sliding_attention"):
            full += per_layer
        # other layer types (linear attention) keep a fixed state, not a cache
    return full, windowed


def _kv_cache(config, context):
    full, windowed = kv_bytes_per_token(config)
    return full * context + sum(b * min(w, context) for w, b in windowed)


def _max_context(config, free):
    """The longest context whose cache fits in free bytes."""
    if free < 0:
        return 0
    full, windowed = kv_bytes_per_token(config)
    if full == 0:
        return 0 if sum(b * w for w, b in windowed) > free else None  # None: any length
    lo, hi = 0, 1 << 40
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _kv_cache(config, mid) <= free:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _estimate_coded(ckpt, t):
    """Bytes of matrix t in the fast layout: as stored in a packed model in
    that layout, coded whole when small, else estimated from samples."""
    rows, cols = t.shape[0], t.elements // t.shape[0]
    if isinstance(ckpt, PackedCheckpoint) and t.dtype == "BF16" and t.where[2] == "tensor":
        file, k, _ = t.where
        if _glyd.CodedMatrix.from_pack(ckpt.model, file, k, rows, cols).layout == "fast":
            return t.packed_size
    what = "%s: tensor %r" % (ckpt.path, t.name)
    if t.elements <= SAMPLE_MIN:
        return len(_glyd.tensor_compress(as_bf16(ckpt.read(t), t.dtype, what), DTYPE_BF16, cols, LAYOUT_FAST, 1))
    sample = as_bf16(_sample_rows(ckpt, t, rows, cols), t.dtype, what)
    blob = _glyd.tensor_compress(sample, DTYPE_BF16, cols, LAYOUT_FAST, 1)
    return int(math.ceil(len(blob) * t.elements / (len(sample) // 2)))


def _sample_rows(ckpt, t, rows, cols):
    """SAMPLE_PIECES pieces of whole rows spread over t, as stored."""
    per_piece = max(1, SAMPLE_ELEMENTS // SAMPLE_PIECES // cols)
    size = DTYPE_SIZES[t.dtype]
    data = ckpt.read(t) if isinstance(ckpt, PackedCheckpoint) else None  # a packed tensor decodes whole
    pieces = []
    for i in range(SAMPLE_PIECES):
        r0 = max(0, min(rows - per_piece, rows * i // SAMPLE_PIECES))
        n = min(per_piece, rows - r0)
        if data is not None:
            pieces.append(data[r0 * cols * size:(r0 + n) * cols * size])
        else:
            path, offset = t.where
            with open(path, "rb") as f:
                f.seek(offset + r0 * cols * size)
                pieces.append(f.read(n * cols * size))
    return b"".join(pieces)


def fit(name_or_path, memory="24GB", context=8192, **hub_kwargs):
    """Whether the model's weights and a KV cache of `context` tokens fit in
    `memory`, in bf16 and as glyd.from_pretrained holds the weights (the
    tensor codec's fast layout for every matrix, bf16 for the rest), from
    the model's files: a folder of safetensors or a packed model (sizes of
    large tensors estimated from samples of their rows). The KV cache is
    bf16 in both. Returns a Fit; print() it for a table."""
    limit = parse_memory(memory)
    context = int(context)
    if context < 0:
        raise ValueError("context must be 0 or more tokens")
    ckpt = open_checkpoint(_resolve(name_or_path, hub_kwargs))
    try:
        text = ckpt.file_bytes("config.json")
        if text is None:
            raise Error("%s: no config.json" % ckpt.path)
        try:
            config = json.loads(text)
        except ValueError as e:
            raise Error("%s: config.json is not JSON: %s" % (ckpt.path, e)) from None
        bf16 = coded = 0
        for t in ckpt.tensors.values():
            if t.dtype not in _FLOATS:
                bf16 += t.size
                coded += t.size
                continue
            bf16 += t.elements * 2
            if len(t.shape) >= 2 and t.elements and t.shape[0]:
                coded += _estimate_coded(ckpt, t)
            else:
                coded += t.elements * 2
    finally:
        ckpt.close()
    kv = _kv_cache(config, context)
    return Fit(
        path=ckpt.path, memory=limit, context=context,
        weights_bf16=bf16, weights_glyd=coded, kv_cache_bf16=kv, kv_cache_glyd=kv,
        total_bf16=bf16 + kv, total_glyd=coded + kv,
        fits_bf16=bf16 + kv <= limit, fits_glyd=coded + kv <= limit,
        max_context_bf16=_max_context(config, limit - bf16), max_context_glyd=_max_context(config, limit - coded),
    )

# SPDX-License-Identifier: BSD-3-Clause
# save_pretrained: a model made by from_pretrained written as a packed model.
import json
import os
import shutil
import struct
import tempfile

from . import _glyd
from ._glyd import Error
from ._hf import LAYOUT_FAST, _torch


def _safetensors_header(entries):
    header, offset = {}, 0
    for name, shape, size in entries:
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def save_pretrained(model, path, *, threads=0):
    """Writes a model from from_pretrained as a packed model (the fast
    layout, mapped as it lies when loaded again): its current config and
    tensors, and the source's other files (tokenizer, generation config).
    Returns the packed file's size."""
    torch = _torch()
    from . import _ops
    from ._modules import CodedEmbedding, CodedLinear

    ckpt = getattr(model, "glyd_source", None)
    if ckpt is None:
        raise Error("glyd.save_pretrained: the model was not made by glyd.from_pretrained")
    path = os.fspath(path)
    work = tempfile.mkdtemp(prefix=".glyd-save-", dir=os.path.dirname(os.path.abspath(path)) or ".")
    try:
        for rel in ckpt.files():
            if rel == "config.json":
                continue
            dst = os.path.join(work, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as f:
                f.write(ckpt.file_bytes(rel))
        model.config.to_json_file(os.path.join(work, "config.json"))
        tensors = {}  # checkpoint name: (shape, a function giving its bf16 tensor)
        written = set()  # a tied matrix is written once, under its first name
        for mod in model.modules():
            if isinstance(mod, (CodedLinear, CodedEmbedding)) and id(mod.matrix) not in written:
                written.add(id(mod.matrix))
                m = mod.matrix
                tensors.setdefault(mod.checkpoint_name, ((m.rows, m.cols), lambda m=m: _ops.decode(m)))
        for name, p in model.named_parameters():
            tensors.setdefault(name, (tuple(p.shape), lambda p=p: p.detach().to(torch.bfloat16).contiguous()))
        # in the source's order, then any the source lacks
        names = [n for n in ckpt.tensors if n in tensors] + sorted(n for n in tensors if n not in ckpt.tensors)
        entries = []
        for n in names:
            shape = tensors[n][0]
            elements = 1
            for d in shape:
                elements *= d
            entries.append((n, shape, elements * 2))
        with open(os.path.join(work, "model.safetensors"), "wb") as f:
            f.write(_safetensors_header(entries))
            for n in names:
                f.write(tensors[n][1]().reshape(-1).view(torch.int16).numpy().tobytes())
        return _glyd.pack(work, path, 0, threads, LAYOUT_FAST)
    finally:
        shutil.rmtree(work, ignore_errors=True)

# SPDX-License-Identifier: BSD-3-Clause
# from_pretrained: a transformers causal LM whose every nn.Linear weight and
# embedding stays in the tensor codec, rebuilt as it is used (glyd/_ops.py),
# and save_pretrained, which writes such a model as a packed model.
#
# The model is made by transformers from its config with its parameters on
# the meta device (no memory), then its Linear and Embedding modules are
# replaced by CodedLinear and CodedEmbedding over the checkpoint's tensors,
# and its other parameters (norms, biases) are read as bf16.
import contextlib
import functools
import json
import os
import shutil
import struct
import tempfile

from . import _glyd
from ._checkpoint import FolderCheckpoint, PackedCheckpoint, open_checkpoint
from ._glyd import Error

LAYOUT_FAST = 2
DTYPE_BF16 = 1
# files a model needs besides its tensors, fetched from the Hugging Face hub
_HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja"]


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("glyd.from_pretrained needs PyTorch and transformers: pip install torch transformers") from None
    return torch


@contextlib.contextmanager
def _parameters_on_meta():
    """Makes every nn.Parameter registered inside on the meta device (no
    memory), while buffers (rotary frequencies) are computed for real."""
    nn = _torch().nn
    register = nn.Module.register_parameter

    def on_meta(module, name, param):
        if param is not None and param.device.type != "meta":
            param = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        nn.Module.register_parameter = register


def _modules():
    """CodedLinear and CodedEmbedding, made on first use (they need torch)."""
    global CodedLinear, CodedEmbedding
    if "CodedLinear" in globals():
        return CodedLinear, CodedEmbedding
    torch = _torch()
    from . import _ops

    # In eager mode the modules call the ops' implementation directly: the
    # dispatcher would add some 8 microseconds to each of the hundreds of
    # products of a token. Compiled or traced, they go through the ops.
    linear, embedding = _ops.linear_impl, _ops.embedding_impl

    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

    def eager():
        return not is_compiling()

    class CodedLinear(torch.nn.Module):
        """nn.Linear over a bf16 weight held in the tensor codec. exact:
        every product is F.linear on the rebuilt weight."""

        def __init__(self, matrix, bias, exact, name):
            super().__init__()
            self.in_features, self.out_features = matrix.cols, matrix.rows
            self.matrix, self.exact, self.checkpoint_name = matrix, exact, name
            self.handle = _ops.register(matrix, self)
            self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)

        def forward(self, x):
            if eager():
                return linear(x, self.handle, self.bias, self.exact)
            return torch.ops.glyd.coded_linear(x, self.handle, self.bias, self.exact)

        @property
        def weight(self):
            """The weight, rebuilt into a new bf16 tensor at each access."""
            return _ops.decode(self.matrix)

        def extra_repr(self):
            return "in_features=%d, out_features=%d, bias=%s, layout=%s, exact=%s" % (
                self.in_features, self.out_features, self.bias is not None, self.matrix.layout, self.exact)

    class CodedEmbedding(torch.nn.Module):
        """nn.Embedding over a bf16 matrix held in the tensor codec."""

        def __init__(self, matrix, padding_idx, name):
            super().__init__()
            self.num_embeddings, self.embedding_dim = matrix.rows, matrix.cols
            self.padding_idx = padding_idx
            self.matrix, self.checkpoint_name = matrix, name
            self.handle = _ops.register(matrix, self)

        def forward(self, ids):
            if eager():
                return embedding(ids, self.handle)
            return torch.ops.glyd.coded_embedding(ids, self.handle)

        @property
        def weight(self):
            return _ops.decode(self.matrix)

        def extra_repr(self):
            return "%d, %d, layout=%s" % (self.num_embeddings, self.embedding_dim, self.matrix.layout)

    globals()["CodedLinear"], globals()["CodedEmbedding"] = CodedLinear, CodedEmbedding
    return CodedLinear, CodedEmbedding


def _steps_on_one_thread(model):
    """Runs a forward pass of few tokens (a step of generate) with torch on
    one thread. Such a step's time is in the coded products, which run on
    glyd's threads; torch's own threads, woken for the step's small
    operations and spinning after them, would take the cores from those
    products."""
    torch = _torch()
    from . import _ops

    forward = model.forward

    @functools.wraps(forward)
    def step(*args, **kwargs):
        x = kwargs.get("input_ids", args[0] if args else None)
        if x is None:
            x = kwargs.get("inputs_embeds")
            tokens = x.shape[:-1].numel() if x is not None else 0
        else:
            tokens = x.numel()
        threads = torch.get_num_threads()
        if tokens == 0 or tokens > _ops.FUSED_MAX_VECTORS or threads == 1:
            return forward(*args, **kwargs)
        torch.set_num_threads(1)
        try:
            return forward(*args, **kwargs)
        finally:
            torch.set_num_threads(threads)
            _glyd.rest_product_threads()  # what follows the step is torch's

    model.forward = step


def _resolve(name_or_path, hub_kwargs):
    """A local path, or a Hugging Face hub name (org/model) fetched into the
    hub's cache."""
    path = os.fspath(name_or_path)
    if os.path.exists(path):
        return path
    if os.path.isabs(path) or path.startswith(".") or path.count("/") != 1:
        raise Error("%s: no such file or folder" % path)
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise Error("%s: no such file or folder (and huggingface_hub is not installed to fetch it)" % path) from None
    try:
        return snapshot_download(path, allow_patterns=_HUB_PATTERNS, **hub_kwargs)
    except Exception as e:  # the hub's errors are many; each becomes one line
        raise Error("%s: no such file or folder, and the Hugging Face hub did not provide it: %s" % (path, e)) from None


def as_bf16(data, dtype, what):
    """A tensor's bytes of safetensors dtype `dtype` as bf16: as they are, or
    rounded from another float type as transformers does when it loads a
    model in bf16."""
    if dtype == "BF16":
        return data
    torch = _torch()
    src = {"F32": torch.float32, "F16": torch.float16, "F64": torch.float64}.get(dtype)
    if src is None:
        raise Error("%s is %s; glyd codes bf16, fp16, fp32 and fp64 weights" % (what, dtype))
    return torch.frombuffer(bytearray(data), dtype=src).to(torch.bfloat16).view(torch.int16).numpy().tobytes()


class _Loader:
    """Makes the coded matrices and plain tensors of one checkpoint."""

    def __init__(self, ckpt, verify, threads):
        self.ckpt, self.verify, self.threads = ckpt, verify, threads
        self.bytes_bf16 = 0

    def ref(self, name):
        t = self.ckpt.tensors.get(name)
        if t is None:
            raise Error("%s: the model needs tensor %r, which the checkpoint lacks" % (self.ckpt.path, name))
        return t

    def bf16_bytes(self, t):
        return as_bf16(self.ckpt.read(t), t.dtype, "%s: tensor %r" % (self.ckpt.path, t.name))

    def matrix(self, name, rows, cols):
        t = self.ref(name)
        if t.shape != (rows, cols):
            raise Error("%s: tensor %r has shape %s; the model wants (%d, %d)" % (self.ckpt.path, name, t.shape, rows, cols))
        self.bytes_bf16 += rows * cols * 2
        if isinstance(self.ckpt, PackedCheckpoint) and t.dtype == "BF16" and t.where[2] in ("tensor", "raw"):
            file, k, _ = t.where
            m = _glyd.CodedMatrix.from_pack(self.ckpt.model, file, k, rows, cols)
            if m.layout != "entropy":  # fast, or bf16 stored as it is: used where it lies
                if self.verify:
                    self.ckpt.model.read_tensor(file, k, self.threads)  # decoded, checked against the original
                else:
                    self.ckpt.model.verify_tensor(file, k, self.threads)  # the stored blob's checksum
                return m
            # recoded into the fast layout, as the engine does at load,
            # the values checked against the original's checksum
            return _glyd.CodedMatrix.recode_pack(self.ckpt.model, file, k, rows, cols)
        if t.dtype == "BF16" and isinstance(self.ckpt, FolderCheckpoint):
            path, offset = t.where
            m = _glyd.CodedMatrix.from_file(path, offset, rows, cols)
            if self.verify:
                with self.ckpt.mapped(t) as data:
                    if not m.equals(data):
                        raise Error("%s: tensor %r did not rebuild to the source's bytes" % (self.ckpt.path, name))
            return m
        data = self.bf16_bytes(t)  # another dtype, rounded; a raw packed tensor
        m = _glyd.CodedMatrix.compress(data, rows, cols, self.threads)
        if self.verify and not m.equals(data):
            raise Error("%s: tensor %r did not rebuild to the source's bytes" % (self.ckpt.path, name))
        return m

    def tensor(self, name, shape):
        torch = _torch()
        t = self.ref(name)
        if t.shape != tuple(shape):
            raise Error("%s: tensor %r has shape %s; the model wants %s" % (self.ckpt.path, name, t.shape, tuple(shape)))
        out = torch.frombuffer(bytearray(self.bf16_bytes(t)), dtype=torch.bfloat16).reshape(shape)
        self.bytes_bf16 += out.numel() * 2
        return out


def _set_module(model, name, module):
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def _config_dir(ckpt, tmp):
    """A folder holding the model's config.json and its other small files."""
    if ckpt.kind == "folder":
        return ckpt.path
    for rel in ckpt.files():
        data = ckpt.file_bytes(rel)
        dst = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
    return tmp


def from_pretrained(name_or_path, *, device="cpu", exact=False, verify=False, threads=None, **hf_kwargs):
    """A transformers causal LM whose Linear weights and embeddings stay in
    the tensor codec. name_or_path: a folder of safetensors, a packed model,
    or a Hugging Face hub name. exact=True: every product is bf16's own, so
    logits equal the bf16 model's bit for bit. verify=True: every weight is
    rebuilt once at load and checked against the source's bytes. threads:
    threads of the coded products (default: torch's). hf_kwargs go to
    transformers' AutoConfig (trust_remote_code, revision, ...)."""
    torch = _torch()
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    from . import _ops

    dev = torch.device(device)
    if dev.type == "cuda":
        raise Error("glyd.from_pretrained: device='cuda' is not available: this build of glyd has no CUDA product "
                    "for torch; load on the CPU (device='cpu')")
    if dev.type != "cpu":
        raise Error("glyd.from_pretrained: device=%r is not supported; coded weights run on the CPU" % str(device))
    dtype = hf_kwargs.pop("dtype", hf_kwargs.pop("torch_dtype", None))
    if dtype not in (None, "auto", torch.bfloat16, "bfloat16"):
        raise Error("glyd.from_pretrained: coded weights are bf16; dtype=%r is not supported" % (dtype,))
    hub_kwargs = {k: hf_kwargs[k] for k in ("revision", "token", "cache_dir") if k in hf_kwargs}
    threads = torch.get_num_threads() if threads is None else int(threads)
    _ops.set_threads(threads)
    CodedLinear, CodedEmbedding = _modules()

    ckpt = open_checkpoint(_resolve(name_or_path, hub_kwargs))
    tmp = tempfile.mkdtemp(prefix="glyd-config-")
    try:
        folder = _config_dir(ckpt, tmp)
        config = AutoConfig.from_pretrained(folder, **hf_kwargs)
        with _parameters_on_meta():
            model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16,
                                                     trust_remote_code=hf_kwargs.get("trust_remote_code", False))
        try:
            model.generation_config = GenerationConfig.from_pretrained(folder)
        except (OSError, ValueError):
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    loader = _Loader(ckpt, verify, threads)
    coded = {}  # id of a meta weight: its coded matrix (tied weights share one)
    # exactly these two classes: a subclass may change what forward does (a
    # scaled embedding), so its parameters are loaded as they are, in bf16
    for name, mod in list(model.named_modules()):
        if type(mod) is torch.nn.Embedding:
            key = name + ".weight"
            m = coded.get(id(mod.weight)) or loader.matrix(key, mod.num_embeddings, mod.embedding_dim)
            coded[id(mod.weight)] = m
            _set_module(model, name, CodedEmbedding(m, mod.padding_idx, key))
    # a weight tied to a module left in bf16 (such an embedding) stays tied to it
    uncoded = {id(p) for mod in model.modules()
               if type(mod) not in (torch.nn.Linear, CodedEmbedding) for p in mod.parameters(recurse=False)}
    for name, mod in list(model.named_modules()):
        if type(mod) is torch.nn.Linear and id(mod.weight) not in uncoded:
            key = name + ".weight"
            m = coded.get(id(mod.weight))
            if m is None:
                m = loader.matrix(key, mod.out_features, mod.in_features)
                coded[id(mod.weight)] = m
            bias = None if mod.bias is None else loader.tensor(name + ".bias", mod.bias.shape).contiguous()
            _set_module(model, name, CodedLinear(m, bias, exact, key))
    loaded = {}  # id of a meta parameter: what replaced it, for every module sharing it
    for name, p in list(model.named_parameters(remove_duplicate=False)):
        if p.device.type == "meta":
            parent, _, leaf = name.rpartition(".")
            owner = model.get_submodule(parent) if parent else model
            if id(p) not in loaded:
                loaded[id(p)] = torch.nn.Parameter(loader.tensor(name, p.shape), requires_grad=False)
            owner._parameters[leaf] = loaded[id(p)]
    model.eval()
    if not exact:
        _steps_on_one_thread(model)
    model.glyd_source = ckpt
    model.glyd_exact = exact
    return model


def weight_memory(model):
    """(held, bf16): bytes the model's weights take in memory (coded
    matrices once each, other parameters), and what they take in bf16."""
    CodedLinear, CodedEmbedding = _modules()
    held = bf16 = 0
    seen = set()
    for mod in model.modules():
        if isinstance(mod, (CodedLinear, CodedEmbedding)) and id(mod.matrix) not in seen:
            seen.add(id(mod.matrix))
            held += mod.matrix.nbytes
            bf16 += mod.matrix.rows * mod.matrix.cols * 2
    for p in {id(p): p for p in model.parameters()}.values():
        held += p.numel() * p.element_size()
        bf16 += p.numel() * 2
    return held, bf16


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

    CodedLinear, CodedEmbedding = _modules()
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
        tensors = {}  # checkpoint name: a function giving its bf16 tensor
        written = set()  # a tied matrix is written once, under its first name
        for mod in model.modules():
            if isinstance(mod, (CodedLinear, CodedEmbedding)) and id(mod.matrix) not in written:
                written.add(id(mod.matrix))
                tensors.setdefault(mod.checkpoint_name, (lambda m=mod.matrix: _ops.decode(m)))
        for name, p in model.named_parameters():
            tensors.setdefault(name, (lambda p=p: p.detach().to(torch.bfloat16).contiguous()))
        # in the source's order, then any the source lacks
        names = [n for n in ckpt.tensors if n in tensors] + sorted(n for n in tensors if n not in ckpt.tensors)
        shapes = {}
        for n in names:
            ref = ckpt.tensors.get(n)
            shapes[n] = ref.shape if ref is not None else tuple(tensors[n]().shape)
        entries = []
        for n in names:
            elements = 1
            for d in shapes[n]:
                elements *= d
            entries.append((n, shapes[n], elements * 2))
        with open(os.path.join(work, "model.safetensors"), "wb") as f:
            f.write(_safetensors_header(entries))
            for n in names:
                f.write(tensors[n]().reshape(-1).view(torch.int16).numpy().tobytes())
        return _glyd.pack(work, path, 0, threads, LAYOUT_FAST)
    finally:
        shutil.rmtree(work, ignore_errors=True)

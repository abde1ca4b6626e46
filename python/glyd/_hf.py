# SPDX-License-Identifier: BSD-3-Clause
# from_pretrained: a transformers causal LM whose every nn.Linear weight and
# embedding stays in the tensor codec, rebuilt as it is used (_modules.py,
# _ops.py); save_pretrained (_save.py) writes it back as a packed model.
#
# The model is made by transformers from its config with its parameters on
# the meta device (no memory), then its Linear and Embedding modules are
# replaced by CodedLinear and CodedEmbedding over the checkpoint's tensors,
# and its other parameters (norms, biases) are read as bf16.
import contextlib
import os
import shutil
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
    from ._modules import CodedEmbedding, CodedLinear, steps_on_one_thread

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
        steps_on_one_thread(model)
    model.glyd_source = ckpt
    model.glyd_exact = exact
    return model


def weight_memory(model):
    """(held, bf16): bytes the model's weights take in memory (coded
    matrices once each, other parameters), and what they take in bf16."""
    from ._modules import CodedEmbedding, CodedLinear

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

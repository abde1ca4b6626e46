# SPDX-License-Identifier: BSD-3-Clause
# compress_tensor and decompress_tensor: numpy arrays and torch tensors in
# the tensor codec, bit for bit. The record they exchange (docs/PYTHON.md,
# "Tensor records") is a shape and a dtype before a tensor blob.
import struct

from . import _glyd
from ._glyd import Error

MAGIC = b"GLYA"
RECORD_VERSION = 1
MAX_DIMS = 32
BLOB_MAGIC = b"GLYT"

# glyd_dtype codes, element sizes, and the names accepted for them
BF16, F16, F32, F8_E4M3, F8_E5M2 = 1, 2, 3, 4, 5
_SIZE = {BF16: 2, F16: 2, F32: 4, F8_E4M3: 1, F8_E5M2: 1}
_NAMES = {BF16: "bf16", F16: "fp16", F32: "fp32", F8_E4M3: "fp8_e4m3", F8_E5M2: "fp8_e5m2"}
_ALIASES = {
    "bf16": BF16, "bfloat16": BF16,
    "fp16": F16, "f16": F16, "float16": F16, "half": F16,
    "fp32": F32, "f32": F32, "float32": F32, "float": F32,
    "fp8_e4m3": F8_E4M3, "f8_e4m3": F8_E4M3, "e4m3": F8_E4M3, "float8_e4m3fn": F8_E4M3,
    "fp8_e5m2": F8_E5M2, "f8_e5m2": F8_E5M2, "e5m2": F8_E5M2, "float8_e5m2": F8_E5M2,
}
_LAYOUTS = {"auto": 0, "entropy": 1, "fast": 2}
# unsigned integers that carry each size's bits, for views
_UINT = {1: "<u1", 2: "<u2", 4: "<u4"}


def _dtype_code(name):
    key = str(name).lower().replace("torch.", "")
    if key not in _ALIASES:
        raise ValueError("unknown tensor dtype %r: one of bf16, fp16, fp32, fp8_e4m3, fp8_e5m2" % (name,))
    return _ALIASES[key]


def _ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes


def _numpy_dtype(code):
    """The numpy dtype for a glyd dtype: ml_dtypes' for bf16 and fp8 where
    installed, else the unsigned integer of the same size."""
    import numpy as np

    if code == F16:
        return np.dtype("<f2")
    if code == F32:
        return np.dtype("<f4")
    ml = _ml_dtypes()
    if ml is not None:
        return np.dtype({BF16: ml.bfloat16, F8_E4M3: ml.float8_e4m3fn, F8_E5M2: ml.float8_e5m2}[code])
    return np.dtype(_UINT[_SIZE[code]])


def _code_of_numpy(arr, dtype):
    """The glyd dtype of a numpy array, from its dtype or an explicit one
    (for unsigned integer views of bf16 and fp8)."""
    kind = arr.dtype
    if dtype is not None:
        code = _dtype_code(dtype)
        if kind.itemsize != _SIZE[code]:
            raise ValueError("dtype=%r needs %d-byte elements; the array has %s" % (dtype, _SIZE[code], kind))
        return code
    name = kind.name
    if name == "float16":
        return F16
    if name == "float32":
        return F32
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return {"bfloat16": BF16, "float8_e4m3fn": F8_E4M3, "float8_e5m2": F8_E5M2}[name]
    raise TypeError(
        "cannot tell the tensor dtype of a %s array: pass dtype= (bf16, fp16, fp32, fp8_e4m3, fp8_e5m2)" % kind)


def _is_torch(t):
    return type(t).__module__.startswith("torch") and hasattr(t, "detach")


def _torch_bytes(t, dtype):
    """A torch tensor's elements as a numpy array of unsigned integers of
    the same bits, and its glyd dtype."""
    import torch

    names = {torch.bfloat16: BF16, torch.float16: F16, torch.float32: F32}
    for attr, code in (("float8_e4m3fn", F8_E4M3), ("float8_e5m2", F8_E5M2)):
        if hasattr(torch, attr):
            names[getattr(torch, attr)] = code
    t = t.detach().cpu().contiguous()
    if dtype is not None:
        code = _dtype_code(dtype)
    elif t.dtype in names:
        code = names[t.dtype]
    else:
        raise TypeError("cannot compress a torch tensor of %s: bf16, fp16, fp32 and fp8 only" % t.dtype)
    if t.element_size() != _SIZE[code]:
        raise ValueError("dtype=%r needs %d-byte elements; the tensor has %s" % (dtype, _SIZE[code], t.dtype))
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[_SIZE[code]]
    return t.view(ints).numpy(), tuple(t.shape), code


def compress_tensor(t, *, dtype=None, layout="auto", threads=1):
    """Compresses a numpy array or torch tensor (bf16, fp16, fp32, fp8) into
    a tensor record: its shape and dtype, then a tensor blob. Every bit
    comes back from decompress_tensor. dtype names the element type of an
    unsigned integer view ("bf16", "fp8_e4m3", ...); layout is "auto",
    "entropy" or "fast" (docs/FORMAT.md, "Tensor blobs")."""
    import numpy as np

    if layout not in _LAYOUTS:
        raise ValueError("layout must be one of auto, entropy, fast")
    if _is_torch(t):
        arr, shape, code = _torch_bytes(t, dtype)
    else:
        arr = np.asarray(t)
        code = _code_of_numpy(arr, dtype)
        shape = arr.shape
        if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and np.little_endian is False):
            arr = arr.astype(arr.dtype.newbyteorder("<"))
    if len(shape) > MAX_DIMS:
        raise ValueError("at most %d dimensions" % MAX_DIMS)
    arr = np.ascontiguousarray(arr)  # a copy only where the array is not contiguous
    row = int(shape[-1]) if len(shape) >= 2 else 0
    blob = _glyd.tensor_compress(arr.reshape(-1).view(np.uint8), code, row, _LAYOUTS[layout], threads)
    head = struct.pack("<4sBBBB%dQ" % len(shape), MAGIC, RECORD_VERSION, code, len(shape), 0,
                       *(int(d) for d in shape))
    return head + blob


def _parse(data):
    """(dtype code, shape, blob view) of a tensor record, or of a bare blob
    (then 1-D)."""
    view = memoryview(data).cast("B")
    if len(view) >= 4 and view[:4] == BLOB_MAGIC:
        info = _glyd.tensor_info(view)
        return info["dtype"], (info["elements"],), view
    if len(view) < 8 or view[:4] != MAGIC:
        raise Error("not a tensor record (no %r or %r magic)" % (MAGIC, BLOB_MAGIC))
    version, code, ndim, reserved = view[4], view[5], view[6], view[7]
    if version != RECORD_VERSION or reserved != 0:
        raise Error("tensor record version %d is not supported" % version)
    if code not in _SIZE:
        raise Error("tensor record has an unknown dtype (%d)" % code)
    if ndim > MAX_DIMS or len(view) < 8 + 8 * ndim:
        raise Error("tensor record is truncated or damaged in its shape")
    shape = struct.unpack_from("<%dQ" % ndim, view, 8)
    blob = view[8 + 8 * ndim:]
    info = _glyd.tensor_info(blob)
    count = 1
    for d in shape:
        count *= d
    if info["dtype"] != code or info["elements"] != count or info["blob_size"] != len(blob):
        raise Error("tensor record is damaged: its shape or dtype disagrees with its blob")
    return code, shape, blob


def tensor_info(data):
    """The shape, dtype name and blob header of a tensor record."""
    code, shape, blob = _parse(data)
    info = _glyd.tensor_info(blob)
    info["shape"] = tuple(shape)
    info["dtype"] = _NAMES[code]
    info["layout"] = {1: "entropy", 2: "fast", 3: "stored", 4: "constant"}.get(info["layout"], info["layout"])
    return info


def decompress_tensor(data, *, torch=False, threads=1):
    """The array a tensor record holds: a numpy array (bf16 and fp8 as
    ml_dtypes types where installed, else as unsigned integers of the same
    bits), or a torch tensor with torch=True."""
    code, shape, blob = _parse(data)
    raw = _glyd.tensor_decompress(blob, threads)
    if torch:
        import torch as _torch

        kinds = {BF16: _torch.bfloat16, F16: _torch.float16, F32: _torch.float32,
                 F8_E4M3: getattr(_torch, "float8_e4m3fn", None), F8_E5M2: getattr(_torch, "float8_e5m2", None)}
        if kinds[code] is None:
            raise TypeError("this torch has no %s" % _NAMES[code])
        if not raw:
            return _torch.empty(shape, dtype=kinds[code])
        return _torch.frombuffer(raw, dtype=kinds[code]).reshape(shape)
    import numpy as np

    return np.frombuffer(raw, dtype=_numpy_dtype(code)).reshape(shape)

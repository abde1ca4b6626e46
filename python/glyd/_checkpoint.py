# SPDX-License-Identifier: BSD-3-Clause
# A model's tensors and files where they lie: a folder of safetensors files
# (a Hugging Face checkpoint) or a packed model, behind one interface, so
# that from_pretrained, save_pretrained and fit read either the same way.
import contextlib
import json
import mmap
import os
import struct

from . import _glyd
from ._glyd import Error

# safetensors dtype names: element size
DTYPE_SIZES = {
    "BF16": 2, "F16": 2, "F32": 4, "F64": 8, "F8_E4M3": 1, "F8_E5M2": 1,
    "I8": 1, "U8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8, "U64": 8, "BOOL": 1,
}
_HEADER_MAX = 100 << 20


class TensorRef:
    """One tensor: its name, safetensors dtype and shape, and where it lies."""

    __slots__ = ("name", "dtype", "shape", "size", "where", "packed_size")

    def __init__(self, name, dtype, shape, size, where, packed_size=None):
        self.name, self.dtype, self.shape, self.size, self.where = name, dtype, tuple(shape), size, where
        self.packed_size = packed_size  # bytes stored in a packed model

    @property
    def elements(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


def _read_header(path):
    """The tensors of one safetensors file, checked against its size."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise Error("%s: not a safetensors file (shorter than its header's length)" % path)
        (n,) = struct.unpack("<Q", head)
        if n > _HEADER_MAX or 8 + n > size:
            raise Error("%s: not a safetensors file (header of %d bytes in a file of %d)" % (path, n, size))
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise Error("%s: the safetensors header is not JSON: %s" % (path, e)) from None
    if not isinstance(header, dict):
        raise Error("%s: the safetensors header is not a JSON object" % path)
    tensors = []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = t["dtype"], [int(d) for d in t["shape"]], t["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise Error("%s: tensor %r has no dtype, shape and data_offsets" % (path, name)) from None
        elements = 1
        for d in shape:
            if d < 0:
                raise Error("%s: tensor %r has a negative dimension" % (path, name))
            elements *= d
        if dtype not in DTYPE_SIZES:
            raise Error("%s: tensor %r has dtype %r, which glyd does not read" % (path, name, dtype))
        if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end <= size - 8 - n):
            raise Error("%s: tensor %r lies outside the file" % (path, name))
        if end - begin != elements * DTYPE_SIZES[dtype]:
            raise Error("%s: tensor %r holds %d bytes for %d %s elements" % (path, name, end - begin, elements, dtype))
        tensors.append(TensorRef(name, dtype, shape, end - begin, (path, 8 + n + begin)))
    return tensors


class FolderCheckpoint:
    """The safetensors files at the top of a model folder."""

    kind = "folder"

    def __init__(self, path):
        self.path = path
        names = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
        if not names:
            raise Error("%s: no .safetensors file in the folder" % path)
        self.tensors = {}
        for f in names:
            for t in _read_header(os.path.join(path, f)):
                if t.name in self.tensors:
                    raise Error("%s: tensor %r is in two files" % (path, t.name))
                self.tensors[t.name] = t

    def read(self, t):
        """The tensor's bytes as the file holds them."""
        path, offset = t.where
        with open(path, "rb") as f:
            data = os.pread(f.fileno(), t.size, offset)
        if len(data) != t.size:
            raise Error("%s: tensor %r is cut short" % (path, t.name))
        return data

    @contextlib.contextmanager
    def mapped(self, t):
        """The tensor's bytes where the file lies, mapped for the time of the
        block: read without a copy on the heap, whose holes would outlive
        the load."""
        path, offset = t.where
        if t.size == 0:
            yield memoryview(b"")
            return
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        with open(path, "rb") as f:
            try:
                mm = mmap.mmap(f.fileno(), offset + t.size - start, offset=start, access=mmap.ACCESS_READ)
            except ValueError:
                raise Error("%s: tensor %r is cut short" % (path, t.name)) from None
        view = memoryview(mm)[offset - start:]
        try:
            yield view
        finally:
            view.release()
            mm.close()

    def files(self):
        """The folder's other files (config, tokenizer), by relative path."""
        out = []
        for root, _, files in os.walk(self.path):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), self.path)
                if not f.endswith(".safetensors") and f != "model.safetensors.index.json" and not rel.startswith("."):
                    out.append(rel)
        return sorted(out)

    def file_bytes(self, rel):
        p = os.path.join(self.path, rel)
        if not os.path.isfile(p):
            return None
        with open(p, "rb") as f:
            return f.read()

    def close(self):
        pass


class PackedCheckpoint:
    """A packed model, mapped; its tensors are read where they lie."""

    kind = "packed"

    def __init__(self, path):
        self.path = path
        self.model = _glyd.Model(path)
        self.tensors = {}
        self._files = {}
        for i, f in enumerate(self.model.files()):
            self._files[f["path"]] = i
            for k, t in enumerate(f["tensors"]):
                ref = TensorRef(t["name"], t["dtype"], t["shape"], t["size"], (i, k, t["codec"]), t["packed_size"])
                if ref.name in self.tensors:
                    raise Error("%s: tensor %r is in two files" % (path, ref.name))
                self.tensors[ref.name] = ref

    def read(self, t):
        """The tensor's original bytes, decoded and checked."""
        file, k, _ = t.where
        return bytes(self.model.read_tensor(file, k, 0))

    def files(self):
        return sorted(p for p in self._files if not p.endswith(".safetensors") and p != "model.safetensors.index.json")

    def file_bytes(self, rel):
        if rel not in self._files:
            return None
        pieces = []
        self.model.extract(self._files[rel], lambda piece: pieces.append(bytes(piece)))
        return b"".join(pieces)

    def close(self):
        self.model.close()


def open_checkpoint(path):
    path = os.fspath(path)
    if os.path.isdir(path):
        return FolderCheckpoint(path)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            if f.read(8) == b"\xf8GLYPACK":
                return PackedCheckpoint(path)
        raise Error("%s: neither a model folder nor a packed model" % path)
    raise Error("%s: no such file or folder" % path)

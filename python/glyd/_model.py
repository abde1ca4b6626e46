# SPDX-License-Identifier: BSD-3-Clause
# pack, unpack, verify and info: packed models as `glyd pack`, `glyd
# unpack`, `glyd verify` and `glyd info --json` handle them, through the
# C API of glyd_tensor.h.
import os
import tempfile

from . import _glyd
from ._glyd import Error

_LAYOUTS = {"auto": 0, "entropy": 1, "fast": 2}
_CLASSES = ["embeddings", "attention", "MLP", "norms", "other", "other files"]


def pack(folder, out, *, level=0, threads=1, fast_layout=False):
    """Packs a model folder (or a single file) into one packed-model file,
    as `glyd pack` does; fast_layout as `--fast-layout`. level is the
    general codec's level for the files that are not tensors (0: 9).
    Returns the packed file's size."""
    return _glyd.pack(os.fspath(folder), os.fspath(out), level, threads, _LAYOUTS["fast" if fast_layout else "auto"])


def _damage(model, index, entry, err, threads):
    """An Error naming the damaged tensors of file `index`, as the CLI does."""
    bad = []
    for t, tensor in enumerate(entry["tensors"]):
        try:
            model.verify_tensor(index, t, threads)
        except Error:
            bad.append(tensor["name"])
    if len(bad) == 1:
        msg = "%s: tensor %s is damaged" % (entry["path"], bad[0])
    elif bad:
        msg = "%s: tensor %s and %d more are damaged" % (entry["path"], bad[0], len(bad) - 1)
    else:
        msg = "%s: %s" % (entry["path"], err)
    exc = Error(msg)
    exc.code = getattr(err, "code", None)
    exc.damaged = bad
    exc.path = entry["path"]
    return exc


def _safe_path(rel):
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise Error("packed model names an unsafe path: %r" % rel)
    return os.path.join(*parts)


def unpack(packed, out_dir, *, threads=1, overwrite=False):
    """Restores the original files of a packed model into out_dir (made
    where missing), byte for byte, checking every checksum; each file is
    written under a temporary name and renamed when complete. Refuses to
    replace a file unless overwrite. Returns the list of paths written."""
    model = _glyd.Model(os.fspath(packed))
    try:
        files = model.files()
        targets = []
        for entry in files:
            target = os.path.join(os.fspath(out_dir), _safe_path(entry["path"]))
            if os.path.lexists(target) and not overwrite:
                raise FileExistsError("%s exists (overwrite=True replaces it)" % target)
            targets.append(target)
        for index, (entry, target) in enumerate(zip(files, targets)):
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".glyd-", dir=os.path.dirname(target) or ".")
            try:
                with os.fdopen(fd, "wb") as f:
                    try:
                        model.extract(index, f.write, threads)
                    except Error as err:
                        raise _damage(model, index, entry, err, threads) from None
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
        return targets
    finally:
        model.close()


class _Compare:
    """Compares the pieces of a decoded file with the file on disk."""

    def __init__(self, path):
        self.f = open(path, "rb")
        self.pos = 0
        self.first_diff = None

    def __call__(self, piece):
        if self.first_diff is None:
            have = self.f.read(len(piece))
            if have != piece:
                k = 0
                while k < len(have) and have[k] == piece[k]:
                    k += 1
                self.first_diff = self.pos + k
        self.pos += len(piece)


def verify(packed, folder=None, *, threads=1):
    """Checks a packed model as `glyd verify` does: every file decoded and
    checked against the checksums of its index, and, with folder, against
    the original files bit for bit. Raises Error naming the first file in
    fault (and the damaged tensors, or the tensor holding the first
    difference); returns {"files": N, "tensors": N} when all is well."""
    model = _glyd.Model(os.fspath(packed))
    try:
        files = model.files()
        single = folder is not None and os.path.isfile(folder) and len(files) == 1
        for index, entry in enumerate(files):
            if folder is None:
                try:
                    model.extract(index, lambda piece: None, threads)
                except Error as err:
                    raise _damage(model, index, entry, err, threads) from None
                continue
            path = os.fspath(folder) if single else os.path.join(os.fspath(folder), _safe_path(entry["path"]))
            try:
                cmp = _Compare(path)
            except OSError as err:
                raise Error("%s: missing (%s)" % (entry["path"], err.strerror)) from None
            with cmp.f:
                try:
                    model.extract(index, cmp, threads)
                except Error as err:
                    raise _damage(model, index, entry, err, threads) from None
                size = os.fstat(cmp.f.fileno()).st_size
            if size != entry["size"]:
                raise Error("%s: %d bytes in the folder, %d packed" % (entry["path"], size, entry["size"]))
            if cmp.first_diff is not None:
                at = cmp.first_diff
                where = "the header"
                for tensor in entry["tensors"]:
                    if tensor["offset"] <= at < tensor["offset"] + tensor["size"]:
                        where = tensor["name"]
                if entry["safetensors"]:
                    raise Error("%s: differs first at byte %d, in tensor %s" % (entry["path"], at, where))
                raise Error("%s: differs first at byte %d" % (entry["path"], at))
        return {"files": len(files), "tensors": sum(len(e["tensors"]) for e in files)}
    finally:
        model.close()


def _tensor_class(name):
    """The class of a tensor, from the names Hugging Face models use (as
    `glyd info` sorts them)."""
    low = name.lower()
    if any(p in low for p in ("norm", "ln_", ".ln", "_ln")):
        return 3
    if any(p in low for p in ("embed", "wte", "wpe", "lm_head")):
        return 0
    if any(p in low for p in ("attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv")):
        return 1
    if any(p in low for p in ("mlp", "ffn", "feed_forward", "gate_proj", "up_proj", "down_proj", "intermediate",
                              "output.dense", "fc1", "fc2")):
        return 2
    return 4


def info(packed):
    """Sizes and bits per weight by tensor class: the dict that `glyd info
    --json` prints."""
    model = _glyd.Model(os.fspath(packed))
    try:
        files = model.files()
        packed_size = model.packed_size()
    finally:
        model.close()
    sums = [dict(tensors=0, weights=0, original_bytes=0, packed_bytes=0) for _ in _CLASSES]
    total = dict(tensors=0, weights=0, original_bytes=0)
    for entry in files:
        total["original_bytes"] += entry["size"]
        if not entry["safetensors"]:
            s = sums[5]
            s["tensors"] += 1
            s["original_bytes"] += entry["size"]
            s["packed_bytes"] += entry["packed_size"]
            continue
        for tensor in entry["tensors"]:
            s = sums[_tensor_class(tensor["name"])]
            s["tensors"] += 1
            s["weights"] += tensor["elements"]
            s["original_bytes"] += tensor["size"]
            s["packed_bytes"] += tensor["packed_size"]
            total["tensors"] += 1
            total["weights"] += tensor["elements"]

    def bpw(packed_bytes, weights):
        return round(8.0 * packed_bytes / weights, 4) if weights else 0.0

    classes = [dict({"class": name}, **s, bits_per_weight=bpw(s["packed_bytes"], s["weights"]))
               for name, s in zip(_CLASSES, sums)]
    return {
        "file": os.fspath(packed),
        "classes": classes,
        "metadata_bytes": packed_size - sum(s["packed_bytes"] for s in sums),
        "total": dict(total, packed_bytes=packed_size, bits_per_weight=bpw(packed_size, total["weights"]),
                      saved_percent=round(100.0 * (1.0 - packed_size / total["original_bytes"]), 2)
                      if total["original_bytes"] else 0.0),
    }

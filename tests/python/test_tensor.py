# SPDX-License-Identifier: BSD-3-Clause
# Tensors from Python: every dtype and odd shapes bit for bit (NaNs,
# infinities and subnormals included), unsigned views with an explicit
# dtype, real bf16 weights, damaged records. torch is tested only where it
# is importable (the test environment does not install it).
import json
import struct

import ml_dtypes
import numpy as np
import pytest

import glyd
from conftest import FIXTURE

DTYPES = {
    "bf16": (ml_dtypes.bfloat16, np.uint16),
    "fp16": (np.float16, np.uint16),
    "fp32": (np.float32, np.uint32),
    "fp8_e4m3": (ml_dtypes.float8_e4m3fn, np.uint8),
    "fp8_e5m2": (ml_dtypes.float8_e5m2, np.uint8),
}
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 5), (1, 1, 1, 1), (257, 3), (64, 129), (0, 5), (5, 0, 2), (4097,)]


def random_bits(kind, shape, seed):
    """Every bit pattern alike: NaN payloads, infinities, subnormals, -0."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, np.iinfo(kind[1]).max, size=shape, dtype=kind[1], endpoint=True)
    return bits.view(kind[0])


def weight_like(kind, shape, seed):
    """Values of a trained layer's spread: the codec's real case."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 0.02).astype(np.float32).astype(kind[0])


def same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    size = a.dtype.itemsize
    view = {1: np.uint8, 2: np.uint16, 4: np.uint32}[size]
    assert np.array_equal(a.view(view), b.view(view))


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_dtype_and_shape(name, shape):
    kind = DTYPES[name]
    for make, seed in ((random_bits, 1), (weight_like, 2)):
        arr = make(kind, shape, seed)
        record = glyd.compress_tensor(arr)
        back = glyd.decompress_tensor(record)
        same_bits(arr, back)
        assert back.flags.writeable
        info = glyd.tensor_info(record)
        assert info["shape"] == shape and info["dtype"] == name and info["elements"] == arr.size


# what a normal layer shrinks to at most: the exponent coded, the rest kept
SHRINK = {"bf16": 0.70, "fp16": 0.87, "fp32": 0.86, "fp8_e4m3": 0.72, "fp8_e5m2": 0.72}


@pytest.mark.parametrize("name", DTYPES)
def test_weights_shrink(name):
    kind = DTYPES[name]
    arr = weight_like(kind, (256, 512), 5)
    record = glyd.compress_tensor(arr)
    assert len(record) < arr.nbytes * SHRINK[name]


@pytest.mark.parametrize("layout", ["entropy", "fast"])
def test_layouts(layout):
    arr = weight_like(DTYPES["bf16"], (128, 300), 9)
    record = glyd.compress_tensor(arr, layout=layout)
    assert glyd.tensor_info(record)["layout"] == layout
    same_bits(arr, glyd.decompress_tensor(record, threads=2))


def test_unsigned_views_with_an_explicit_dtype():
    arr = weight_like(DTYPES["bf16"], (33, 65), 4)
    bits = arr.view(np.uint16)
    record = glyd.compress_tensor(bits, dtype="bf16")
    assert record == glyd.compress_tensor(arr)
    same_bits(arr, glyd.decompress_tensor(record))
    e4 = random_bits(DTYPES["fp8_e4m3"], (100,), 3)
    same_bits(e4, glyd.decompress_tensor(glyd.compress_tensor(e4.view(np.uint8), dtype="fp8_e4m3")))
    with pytest.raises(TypeError, match="dtype="):
        glyd.compress_tensor(bits)
    with pytest.raises(ValueError, match="2-byte"):
        glyd.compress_tensor(np.zeros(4, np.uint8), dtype="bf16")
    with pytest.raises(ValueError, match="unknown tensor dtype"):
        glyd.compress_tensor(bits, dtype="int4")


def test_strided_and_big_endian_arrays():
    arr = weight_like(DTYPES["fp32"], (40, 60), 6)
    view = arr.T[::2]
    same_bits(np.ascontiguousarray(view), glyd.decompress_tensor(glyd.compress_tensor(view)))
    big = arr.astype(">f4")
    back = glyd.decompress_tensor(glyd.compress_tensor(big))
    assert np.array_equal(back.view(np.uint32), arr.view(np.uint32))


def test_real_bf16_weights():
    path = FIXTURE / "model.safetensors"
    raw = path.read_bytes()
    n = struct.unpack_from("<Q", raw)[0]
    header = json.loads(raw[8:8 + n])
    checked = 0
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        arr = np.frombuffer(raw, dtype=ml_dtypes.bfloat16, count=(end - start) // 2,
                            offset=8 + n + start).reshape(meta["shape"])
        record = glyd.compress_tensor(arr)
        assert glyd.decompress_tensor(record).tobytes() == arr.tobytes()
        if arr.size >= 4096:
            assert len(record) * 8 / arr.size < 12.5  # bits a weight
        checked += 1
    assert checked > 10


def test_bare_blob_and_damaged_records():
    arr = weight_like(DTYPES["fp16"], (20, 30), 8)
    record = glyd.compress_tensor(arr)
    head = 8 + 8 * arr.ndim
    flat = glyd.decompress_tensor(record[head:])  # the blob alone: one dimension
    same_bits(arr.reshape(-1), flat)
    for n in range(len(record)):
        with pytest.raises(glyd.Error):
            glyd.decompress_tensor(record[:n])
    for i in range(0, len(record), 3):
        bad = bytearray(record)
        bad[i] ^= 0x10
        try:
            back = glyd.decompress_tensor(bytes(bad))
        except glyd.Error:
            continue
        same_bits(arr, back)  # a flip that changes nothing the codec keeps
    with pytest.raises(glyd.Error, match="not a tensor record"):
        glyd.decompress_tensor(b"hello, world")


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    for kind in (torch.bfloat16, torch.float16, torch.float32):
        t = (torch.randn(17, 33) * 0.02).to(kind)
        back = glyd.decompress_tensor(glyd.compress_tensor(t), torch=True)
        assert back.dtype == kind and torch.equal(back.view(torch.uint8), t.view(torch.uint8))
    if hasattr(torch, "float8_e4m3fn"):
        t = (torch.randn(64) * 4).to(torch.float8_e4m3fn)
        back = glyd.decompress_tensor(glyd.compress_tensor(t), torch=True)
        assert torch.equal(back.view(torch.uint8), t.view(torch.uint8))

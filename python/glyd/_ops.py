# SPDX-License-Identifier: BSD-3-Clause
# The torch custom ops through which coded weights are used:
#   glyd::coded_linear(x, handle, bias, exact): x W^T + bias for a weight W
#     held in the tensor codec;
#   glyd::coded_embedding(ids, handle): rows of such a matrix.
# A handle names a glyd._glyd.CodedMatrix in a registry, since an op's
# arguments are tensors and numbers only.
import itertools
import threading
import weakref
from typing import Optional

import torch
import torch.nn.functional as F

from . import _glyd

# Up to this many vectors, a product is fused: each unit of the weight is
# decoded into a small buffer right before its rows are multiplied; past
# it, the weight is decoded a tile of rows at a time into bf16 and torch
# multiplies the tiles. Where one overtakes the other depends on the fused
# kernel: AVX-512 BF16's dot products, or the engine's on fp32 copies of the
# vectors (bench/bench_from_pretrained.py --crossover measures it).
FUSED_MAX_BY_KERNEL = {"bf16": 20, "engine": 6}
FUSED_MAX_VECTORS = FUSED_MAX_BY_KERNEL[_glyd.set_product_kernel("auto")]
# Elements of a tile decoded for a long product.
TILE_ELEMENTS = 1 << 22

_matrices = {}
_next_handle = itertools.count(1)


def register(matrix, owner):
    """A handle for matrix, dropped from the registry when owner is collected."""
    handle = next(_next_handle)
    _matrices[handle] = matrix
    weakref.finalize(owner, _matrices.pop, handle, None)
    return handle


def matrix(handle):
    try:
        return _matrices[handle]
    except KeyError:
        raise ValueError("glyd: no coded matrix has handle %d (its module was deleted)" % handle) from None


def _address(t):
    return t.data_ptr()


def decode(m, out=None):
    """The whole matrix as a bf16 tensor (rows, cols)."""
    if out is None:
        out = torch.empty((m.rows, m.cols), dtype=torch.bfloat16)
    m.decode_rows(0, m.rows, _address(out))
    return out


def _check_input(x, m):
    if x.device.type != "cpu":
        raise ValueError("glyd: coded weights are on the CPU; the input is on %s" % x.device)
    if x.dtype != torch.bfloat16:
        raise TypeError("glyd: coded weights are bf16; the input is %s" % x.dtype)
    if x.shape[-1] != m.cols:
        raise ValueError("glyd: input of %d features for a weight of %d columns" % (x.shape[-1], m.cols))


_tiles = threading.local()


def _tile_buffer(elements):
    """This thread's tile buffer, of at least `elements` bf16 elements: kept
    from one product to the next, since a fresh one of this size would be
    mapped anew and fault in page by page each time."""
    buf = getattr(_tiles, "buf", None)
    if buf is None or buf.numel() < elements:
        buf = _tiles.buf = torch.empty(elements, dtype=torch.bfloat16)
    return buf


def _tiled(x2, m, bias):
    """x2 W^T + bias, W decoded a tile of rows at a time."""
    step = max(m.row_align, TILE_ELEMENTS // m.cols // m.row_align * m.row_align)
    rows = min(step, m.rows)
    tile = _tile_buffer(rows * m.cols)[: rows * m.cols].view(rows, m.cols)
    if rows == m.rows:
        m.decode_rows(0, m.rows, _address(tile))
        return F.linear(x2, tile, bias)
    out = torch.empty((x2.shape[0], m.rows), dtype=torch.bfloat16)
    for r0 in range(0, m.rows, step):
        r1 = min(r0 + step, m.rows)
        m.decode_rows(r0, r1, _address(tile))
        out[:, r0:r1] = F.linear(x2, tile[: r1 - r0], None if bias is None else bias[r0:r1])
    return out


def linear_impl(x, handle, bias, exact):
    """glyd::coded_linear's implementation."""
    m = matrix(handle)
    _check_input(x, m)
    if bias is not None and (bias.dtype != torch.bfloat16 or bias.shape != (m.rows,)):
        raise ValueError("glyd: the bias must be bf16 of shape (%d,)" % m.rows)
    if exact:
        # bf16's own product on the rebuilt weight: bit for bit the
        # uncompressed model's
        return F.linear(x, decode(m), bias)
    n = x.numel() // m.cols
    if n == 0:
        return x.new_empty((*x.shape[:-1], m.rows))
    if n > FUSED_MAX_VECTORS:
        return _tiled(x.reshape(n, m.cols), m, bias).reshape(*x.shape[:-1], m.rows)
    x = x.contiguous()
    out = torch.empty((*x.shape[:-1], m.rows), dtype=torch.bfloat16)
    m.matmul(x.data_ptr(), n, out.data_ptr(), 0 if bias is None else bias.contiguous().data_ptr())
    return out


@torch.library.custom_op("glyd::coded_linear", mutates_args=())
def coded_linear(x: torch.Tensor, handle: int, bias: Optional[torch.Tensor], exact: bool) -> torch.Tensor:
    return linear_impl(x, handle, bias, exact)


@coded_linear.register_fake
def _(x, handle, bias, exact):
    return x.new_empty((*x.shape[:-1], matrix(handle).rows))


def embedding_impl(ids, handle):
    """glyd::coded_embedding's implementation."""
    m = matrix(handle)
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise TypeError("glyd: embedding indices must be integers, not %s" % ids.dtype)
    flat = ids.reshape(-1).to(torch.int64).contiguous()
    out = torch.empty((flat.shape[0], m.cols), dtype=torch.bfloat16)
    if flat.shape[0]:
        m.gather(_address(flat), flat.shape[0], _address(out))
    return out.reshape(*ids.shape, m.cols)


@torch.library.custom_op("glyd::coded_embedding", mutates_args=())
def coded_embedding(ids: torch.Tensor, handle: int) -> torch.Tensor:
    return embedding_impl(ids, handle)


@coded_embedding.register_fake
def _(ids, handle):
    return torch.empty((*ids.shape, matrix(handle).cols), dtype=torch.bfloat16, device=ids.device)


def set_threads(n):
    """Threads the coded products run on (0: every core)."""
    return _glyd.set_product_threads(int(n))

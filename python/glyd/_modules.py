# SPDX-License-Identifier: BSD-3-Clause
# The torch modules from_pretrained puts in place of nn.Linear and
# nn.Embedding, over weights held in the tensor codec, and the wrapper that
# runs a model's steps of few tokens with torch on one thread.
import functools

import torch

from . import _glyd, _ops

# In eager mode the modules call the ops' implementation directly: the
# dispatcher would add some 8 microseconds to each of the hundreds of
# products of a token. Compiled or traced, they go through the ops.
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


class CodedLinear(torch.nn.Module):
    """nn.Linear over a bf16 weight held in the tensor codec. exact: every
    product is F.linear on the rebuilt weight."""

    def __init__(self, matrix, bias, exact, name):
        super().__init__()
        self.in_features, self.out_features = matrix.cols, matrix.rows
        self.matrix, self.exact, self.checkpoint_name = matrix, exact, name
        self.handle = _ops.register(matrix, self)
        self.bias = None if bias is None else torch.nn.Parameter(bias, requires_grad=False)

    def forward(self, x):
        if not _is_compiling():
            return _ops.linear_impl(x, self.handle, self.bias, self.exact)
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
        if not _is_compiling():
            return _ops.embedding_impl(ids, self.handle)
        return torch.ops.glyd.coded_embedding(ids, self.handle)

    @property
    def weight(self):
        """The matrix, rebuilt into a new bf16 tensor at each access."""
        return _ops.decode(self.matrix)

    def extra_repr(self):
        return "%d, %d, layout=%s" % (self.num_embeddings, self.embedding_dim, self.matrix.layout)


def steps_on_one_thread(model):
    """Runs a forward pass of few tokens (a step of generate) with torch on
    one thread. Such a step's time is in the coded products, which run on
    glyd's threads; torch's own threads, woken for the step's small
    operations and spinning after them, would take the cores from those
    products."""
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

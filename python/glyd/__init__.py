# SPDX-License-Identifier: BSD-3-Clause
# glyd: the glyd codec, tensor codec and packed models from Python, in the
# shape of the zstandard and gzip modules. The work is done by the C library
# through glyd._glyd; docs/PYTHON.md describes the API.
from ._glyd import (
    FLUSH_BLOCK,
    FLUSH_FRAME,
    LEVEL_DEFAULT,
    LEVEL_MAX,
    LEVEL_MIN,
    LIBRARY_VERSION,
    Compressor,
    Decompressor,
    Error,
    compress,
    decompress,
    frame_content_size,
)
from ._file import GlydFile, open
from ._fit import Fit, fit
from ._hf import from_pretrained, weight_memory
from ._save import save_pretrained
from ._model import info, pack, unpack, verify
from ._tensor import compress_tensor, decompress_tensor, tensor_info

__version__ = LIBRARY_VERSION

__all__ = [
    "FLUSH_BLOCK",
    "FLUSH_FRAME",
    "LEVEL_DEFAULT",
    "LEVEL_MAX",
    "LEVEL_MIN",
    "Compressor",
    "Decompressor",
    "Error",
    "Fit",
    "GlydFile",
    "compress",
    "compress_tensor",
    "decompress",
    "decompress_tensor",
    "fit",
    "frame_content_size",
    "from_pretrained",
    "info",
    "open",
    "pack",
    "save_pretrained",
    "tensor_info",
    "unpack",
    "verify",
    "weight_memory",
]

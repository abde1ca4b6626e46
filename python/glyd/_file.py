# SPDX-License-Identifier: BSD-3-Clause
# glyd.open and GlydFile: glyd streams read and written as files, as
# gzip.open and gzip.GzipFile do for gzip.
import builtins
import io
import os

from ._glyd import FLUSH_FRAME, Compressor, Decompressor, Error

READ_SIZE = 1 << 17


class GlydFile(io.BufferedIOBase):
    """A glyd stream as a binary file: reads every frame in turn, or writes
    one frame, ended at close(). `fileobj` may be a path or a binary file
    object (left open at close() when passed in)."""

    def __init__(self, filename, mode="rb", *, level=3, threads=1, records=False):
        if mode not in ("r", "rb", "w", "wb", "x", "xb", "a", "ab"):
            raise ValueError("invalid mode: %r" % (mode,))
        self._mode = "r" if mode.startswith("r") else "w"
        if isinstance(filename, (str, bytes, os.PathLike)):
            self._fp = builtins.open(filename, mode if "b" in mode else mode + "b")
            self._owns = True
            self.name = os.fspath(filename)
        elif hasattr(filename, "read") or hasattr(filename, "write"):
            self._fp = filename
            self._owns = False
            self.name = getattr(filename, "name", "")
        else:
            raise TypeError("filename must be a path or a file object")
        if self._mode == "r":
            self._dec = Decompressor(read_across_frames=True, threads=threads)
            self._buf = b""
            self._pos = 0
            self._done = False
            self._offset = 0
        else:
            self._enc = Compressor(level=level, threads=threads, records=records)

    # io.BufferedIOBase
    def readable(self):
        self._check_open()
        return self._mode == "r"

    def writable(self):
        self._check_open()
        return self._mode == "w"

    def seekable(self):
        return False

    def _check_open(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def _fill(self):
        """Decodes more into the buffer; False at the end of the stream."""
        while not self._done:
            chunk = self._fp.read(READ_SIZE)
            if not chunk:
                self._done = True
                if not self._dec.eof:
                    raise Error("%s: input ended inside a frame (truncated data)" % (self.name or "stream"))
                return False
            data = self._dec.decompress(chunk)
            if data:
                self._buf = data
                self._pos = 0
                return True
        return False

    def read(self, size=-1):
        self._check_open()
        if self._mode != "r":
            raise io.UnsupportedOperation("not open for reading")
        if size is None or size < 0:
            parts = [self._buf[self._pos:]]
            self._buf, self._pos = b"", 0
            while self._fill():
                parts.append(self._buf)
                self._buf = b""
            out = b"".join(parts)
            self._offset += len(out)
            return out
        if self._pos >= len(self._buf) and not self._fill():
            return b""
        out = self._buf[self._pos:self._pos + size]
        self._pos += len(out)
        self._offset += len(out)
        return out

    def read1(self, size=-1):
        return self.read(size if size is not None and size >= 0 else READ_SIZE)

    def readinto(self, b):
        data = self.read(len(memoryview(b).cast("B")))
        memoryview(b).cast("B")[:len(data)] = data
        return len(data)

    def peek(self, size=0):
        self._check_open()
        if self._pos >= len(self._buf) and not self._fill():
            return b""
        return self._buf[self._pos:]

    def write(self, data):
        self._check_open()
        if self._mode != "w":
            raise io.UnsupportedOperation("not open for writing")
        view = memoryview(data)
        out = self._enc.compress(view)
        if out:
            self._fp.write(out)
        return view.nbytes

    def tell(self):
        self._check_open()
        return self._offset if self._mode == "r" else None

    def close(self):
        if self.closed:
            return
        try:
            if self._mode == "w":
                self._fp.write(self._enc.flush(FLUSH_FRAME))
        finally:
            try:
                if self._owns:
                    self._fp.close()
                elif self._mode == "w" and hasattr(self._fp, "flush"):
                    self._fp.flush()
            finally:
                super().close()


def open(filename, mode="rb", *, level=3, threads=1, records=False, encoding=None, errors=None, newline=None):
    """Opens a glyd stream, as gzip.open does: "rb"/"wb" (also "ab", "xb")
    give a GlydFile; "rt"/"wt" wrap it in an io.TextIOWrapper with
    encoding, errors and newline. records=True writes records frames (logs
    and tables as typed columns, docs/RECORDS.md); reading needs no flag."""
    if "t" in mode:
        if "b" in mode:
            raise ValueError("invalid mode: %r" % (mode,))
        binary = GlydFile(filename, mode.replace("t", "b"), level=level, threads=threads, records=records)
        return io.TextIOWrapper(binary, encoding, errors, newline)
    if encoding is not None or errors is not None or newline is not None:
        raise ValueError("encoding, errors and newline are for text modes only")
    return GlydFile(filename, mode, level=level, threads=threads, records=records)

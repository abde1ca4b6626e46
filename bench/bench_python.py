# SPDX-License-Identifier: BSD-3-Clause
# bench/bench_python.py: the glyd Python package against the zstandard
# package on a corpus (each file compressed on its own, one thread, best of
# repeated runs): ratio and MB/s each way at levels 1, 3 and 19. Then what
# the binding adds to the C library's own time on 1 MB inputs: glyd.compress
# and glyd.decompress against the same C functions called through ctypes,
# in the extension's copy of the library and in the Makefile's libglyd.so.
#
#   python bench/bench_python.py [--corpus DIR] [--lib build/libglyd.so] [--reps N]
import argparse
import ctypes
import os
import pathlib
import platform
import time

import glyd
import zstandard

REPO = pathlib.Path(__file__).resolve().parents[1]


def best(fn, reps, min_time=0.0):
    """The best time of reps runs (each repeated until min_time passes)."""
    out = None
    for _ in range(reps):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            spent = time.perf_counter() - start
            if spent >= min_time:
                break
        t = spent / n
        out = t if out is None else min(out, t)
    return out


def codecs(level):
    zc = zstandard.ZstdCompressor(level=level)
    zd = zstandard.ZstdDecompressor()
    return {
        "glyd": (lambda d: glyd.compress(d, level=level), glyd.decompress),
        "zstandard": (zc.compress, zd.decompress),
    }


def corpus_table(files, reps):
    total = sum(len(d) for d in files)
    rows = []
    for level in (1, 3, 19):
        for name, (comp, decomp) in codecs(level).items():
            csize = ctime = dtime = 0
            for data in files:
                frame = comp(data)
                assert decomp(frame) == data
                csize += len(frame)
                ctime += best(lambda: comp(data), 1 if level == 19 else reps)
                dtime += best(lambda: decomp(frame), reps)
            rows.append((name, level, total / csize, total / ctime / 1e6, total / dtime / 1e6))
    return total, rows


class CLib:
    """glyd_compress and glyd_decompress through ctypes, into buffers made
    once: the library's time without a binding."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        for fn in (self.lib.glyd_compress, self.lib.glyd_decompress):
            fn.restype = ctypes.c_size_t
        self.lib.glyd_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_int]
        self.lib.glyd_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]

    def timers(self, data, frame, level):
        src = ctypes.create_string_buffer(data, len(data))
        fr = ctypes.create_string_buffer(frame, len(frame))
        cap = len(data) + (len(data) >> 7) + 64
        dst = ctypes.create_string_buffer(cap)
        back = ctypes.create_string_buffer(len(data))
        lib = self.lib

        def comp():
            lib.glyd_compress(dst, cap, src, len(data), level)

        def decomp():
            lib.glyd_decompress(back, len(data), fr, len(frame))

        assert lib.glyd_compress(dst, cap, src, len(data), level) == len(frame)
        assert lib.glyd_decompress(back, len(data), fr, len(frame)) == len(data) and back.raw == data
        return comp, decomp


def overhead_table(files, libs, reps):
    # 1 MB pieces: the first MiB of each file that has one
    pieces = [d[:1 << 20] for d in files if len(d) >= 1 << 20]
    rows = []
    for level in (1, 3):
        times = {}
        for data in pieces:
            frame = glyd.compress(data, level=level)
            entries = [("python", lambda: glyd.compress(data, level=level), lambda: glyd.decompress(frame))]
            for name, lib in libs:
                entries.append((name,) + lib.timers(data, frame, level))
            # interleaved, so that the machine's drift touches all alike
            for _ in range(reps):
                for name, comp, decomp in entries:
                    c = best(comp, 1, 0.05)
                    d = best(decomp, 1, 0.05)
                    prev = times.setdefault((name, id(data)), [c, d])
                    prev[0], prev[1] = min(prev[0], c), min(prev[1], d)
        for name in ["python"] + [n for n, _ in libs]:
            c = sum(times[(name, id(d))][0] for d in pieces)
            d = sum(times[(name, id(p))][1] for p in pieces)
            rows.append((name, level, c, d))
    return len(pieces), rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.environ.get("GLYD_CORPUS", REPO.parent / "shared" / "corpus"))
    ap.add_argument("--lib", default=REPO / "build" / "libglyd.so", help="the Makefile's libglyd.so")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--skip-corpus", action="store_true")
    args = ap.parse_args()
    paths = sorted(p for p in pathlib.Path(args.corpus).rglob("*") if p.is_file() and p.name != "README.md")
    files = [p.read_bytes() for p in paths]
    print("glyd %s (Python %s), zstandard %s (libzstd %s), %s, %d files" % (
        glyd.__version__, platform.python_version(), zstandard.__version__, zstandard.ZSTD_VERSION,
        platform.processor() or platform.machine(), len(files)))
    if not args.skip_corpus:
        total, rows = corpus_table(files, args.reps)
        print("\n%.1f MB in %s; MB/s of original data\n" % (total / 1e6, args.corpus))
        print("| package | level | ratio | compress MB/s | decompress MB/s |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, level, ratio, cs, ds in rows:
            print("| %s | %d | %.3f | %.1f | %.0f |" % (name, level, ratio, cs, ds))
    libs = [("C, the extension's copy", CLib(glyd._glyd.__file__))]
    if pathlib.Path(args.lib).exists():
        libs.append(("C, libglyd.so", CLib(args.lib)))
    n, rows = overhead_table(files, libs, args.reps)
    print("\nthe binding on %d inputs of 1 MiB: ms for all, best of %d; overhead against the extension's copy\n"
          % (n, args.reps))
    print("| calls | level | compress ms | decompress ms | compress overhead | decompress overhead |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    base = {level: (c, d) for name, level, c, d in rows if name == libs[0][0]}
    for name, level, c, d in rows:
        bc, bd = base[level]
        print("| %s | %d | %.2f | %.2f | %+.1f%% | %+.1f%% |" % (
            name, level, c * 1e3, d * 1e3, 100 * (c / bc - 1), 100 * (d / bd - 1)))


if __name__ == "__main__":
    main()

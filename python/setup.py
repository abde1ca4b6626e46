# SPDX-License-Identifier: BSD-3-Clause
# Builds glyd._glyd, the C extension, from the repository's own sources (the
# folder above this one): the codec (lib/), and libglyd-llm's sources (llm/
# and the GPU backend's host side) for packed models, as the Makefile lists
# them in LIB_SRC and LLM_SRC. No library needs to be installed first but
# the system's xxhash, jansson, PCRE2 and utf8proc.
import glob
import os
import re
import shutil
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# What the Makefile's LIB_SRC and LLM_SRC hold (tests/python checks both
# lists agree).
GPU_HOST = ["gpu/backend.c", "gpu/emulated_device.c", "gpu/tensor_gpu.c"]

# header, library, Debian package
SYSTEM_LIBS = [
    ("xxhash.h", "xxhash", "libxxhash-dev"),
    ("jansson.h", "jansson", "libjansson-dev"),
    ("pcre2.h", "pcre2-8", "libpcre2-dev"),
    ("utf8proc.h", "utf8proc", "libutf8proc-dev"),
]


def c_sources(root=ROOT):
    """The library's C sources, relative to root, in the Makefile's order."""
    lib = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "lib", "*", "*.c")))
    llm = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "llm", "*", "*.c")))
    return lib + llm + GPU_HOST


def version(root=ROOT):
    with open(os.path.join(root, "include", "glyd.h")) as f:
        return re.search(r'#define GLYD_VERSION_STRING "([^"]+)"', f.read()).group(1)


def check_tree():
    if not os.path.isfile(os.path.join(ROOT, "include", "glyd.h")) or not os.path.isdir(os.path.join(ROOT, "lib")):
        sys.exit(
            "glyd: the C sources are not beside this folder (%s/../lib, ../include).\n"
            "glyd: install from a clone of the repository, with pip 21.3 or later, which builds in place:\n"
            "glyd:     pip install ./python\n"
            "glyd: (an older pip copies python/ alone to a temporary folder, without the sources)" % HERE
        )


def main():
    from setuptools import Extension, setup
    from setuptools.command.build_ext import build_ext

    check_tree()

    class BuildExt(build_ext):
        """Checks the system libraries' headers first, then compiles the
        library's files in parallel, checksum_avx2.c for AVX2 as the
        Makefile does."""

        def probe(self):
            missing = []
            tmp = tempfile.mkdtemp()
            try:
                for header, _, package in SYSTEM_LIBS + [("Python.h", None, "python3-dev")]:
                    src = os.path.join(tmp, "probe.c")
                    with open(src, "w") as f:
                        f.write("#define PCRE2_CODE_UNIT_WIDTH 8\n#include <%s>\nint main(void) { return 0; }\n" % header)
                    try:
                        self.compiler.compile([src], output_dir=tmp, include_dirs=[sysconfig.get_paths()["include"]])
                    except Exception:
                        missing.append((header, package))
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            if missing:
                sys.exit(
                    "glyd: cannot build: missing %s\n"
                    "glyd: on Debian or Ubuntu: sudo apt-get install %s"
                    % (", ".join(h for h, _ in missing), " ".join(p for _, p in missing))
                )

        def build_extensions(self):
            self.probe()
            compiler = self.compiler
            original = compiler._compile

            def compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts):
                if src.endswith("checksum_avx2.c") and sysconfig.get_platform().endswith("x86_64"):
                    extra_postargs = list(extra_postargs) + ["-mavx2"]
                original(obj, src, ext, cc_args, extra_postargs, pp_opts)

            def compile_parallel(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                                 extra_preargs=None, extra_postargs=None, depends=None):
                macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                    output_dir, macros, include_dirs, sources, depends, extra_postargs)
                cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
                jobs = int(os.environ.get("GLYD_BUILD_JOBS", "0")) or os.cpu_count() or 1

                def placed(obj):
                    # the sources above python/ get objects under the build
                    # folder, by their path in the repository
                    src = os.path.abspath(build[obj][0])
                    if not src.startswith(ROOT + os.sep) or src.startswith(HERE + os.sep):
                        return obj
                    rel = os.path.splitext(os.path.relpath(src, ROOT))[0] + compiler.obj_extension
                    return os.path.join(output_dir or ".", "repo", rel)

                def one(obj):
                    src, ext = build[obj]
                    target = placed(obj)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    compile_one(target, src, ext, cc_args, extra_postargs, pp_opts)
                    return target

                with ThreadPoolExecutor(max_workers=jobs) as pool:
                    return list(pool.map(one, objects))

            compiler.compile = compile_parallel
            super().build_extensions()

    # relative to this folder, as setuptools wants them
    sources = ["src/_glyd.c", "src/coded_matrix.c", "src/team.c"] + [os.path.join("..", s) for s in c_sources()]
    ext = Extension(
        "glyd._glyd",
        sources=sources,
        include_dirs=[os.path.join("..", "include")],
        define_macros=[("_DEFAULT_SOURCE", None), ("_FILE_OFFSET_BITS", "64"), ("NDEBUG", None)],
        extra_compile_args=["-std=c11", "-O3", "-fvisibility=hidden", "-Wno-unused-parameter"],
        libraries=[lib for _, lib, _ in SYSTEM_LIBS] + ["pthread", "m"],
        depends=[os.path.join("..", "include", h) for h in ("glyd.h", "glyd_tensor.h")] + ["src/module.h", "src/team.h"],
    )
    setup(
        version=version(),
        ext_modules=[ext],
        cmdclass={"build_ext": BuildExt},
        options={"build": {"build_base": os.path.join(ROOT, "build", "python")}},
    )


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: BSD-3-Clause
# The package as built: it compiles the C sources the Makefile builds into
# libglyd and libglyd-llm (so the two lists cannot drift), and reports the
# library's version.
import importlib.util
import re
import subprocess

import glyd
from conftest import REPO


def load_setup():
    spec = importlib.util.spec_from_file_location("glyd_setup", REPO / "python" / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines; builds nothing outside __main__
    return module


def test_sources_are_the_makefiles():
    printed = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(REPO), "--eval",
         "glyd-print-sources: ; @echo $(LIB_SRC) $(LLM_SRC)", "glyd-print-sources"],
        capture_output=True, text=True, check=True).stdout.split()
    assert len(printed) > 30
    assert load_setup().c_sources(str(REPO)) == printed


def test_version_is_the_headers():
    header = (REPO / "include" / "glyd.h").read_text()
    want = re.search(r'#define GLYD_VERSION_STRING "([^"]+)"', header).group(1)
    assert glyd.__version__ == want == load_setup().version(str(REPO))

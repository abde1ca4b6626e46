# SPDX-License-Identifier: BSD-3-Clause
# Shared fixtures of the Python tests: the repository, the shared corpus and
# model fixture, and the glyd command built beside them (GLYD_CLI).
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = pathlib.Path(os.environ.get("GLYD_CORPUS", REPO.parent / "shared" / "corpus"))
FIXTURE = REPO.parent / "shared" / "fixtures" / "stories260K"
CLI = pathlib.Path(os.environ.get("GLYD_CLI", REPO / "build" / "glyd"))


def corpus_files():
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "README.md")
    assert files, "no corpus in %s" % CORPUS
    return files


@pytest.fixture(scope="session")
def alice():
    return (CORPUS / "text" / "alice29.txt").read_bytes()


@pytest.fixture(scope="session")
def cli():
    if not CLI.exists():
        pytest.fail("no glyd command at %s (set GLYD_CLI)" % CLI)
    return str(CLI)

# SPDX-License-Identifier: BSD-3-Clause
# Packed models from Python: pack, info (as `glyd info --json`), unpack and
# verify on the shared stories260K fixture, and damaged packs named down to
# the tensor.
import filecmp
import json
import re
import shutil
import subprocess

import pytest

import glyd
from conftest import FIXTURE


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("packed") / "stories.glyd"
    size = glyd.pack(FIXTURE, out, threads=2)
    assert size == out.stat().st_size and size > 100000
    return out


def test_info_matches_the_cli(packed, cli):
    printed = subprocess.run([cli, "info", "--json", str(packed)], capture_output=True, check=True, text=True).stdout
    assert glyd.info(packed) == json.loads(printed)
    assert glyd.info(str(packed))["total"]["tensors"] == 47


def test_unpack_restores_every_file(packed, tmp_path):
    written = glyd.unpack(packed, tmp_path / "out")
    assert len(written) == 5
    cmp = filecmp.dircmp(FIXTURE, tmp_path / "out")
    assert not cmp.left_only and not cmp.right_only and not cmp.diff_files
    for name in cmp.common_files:
        assert (FIXTURE / name).read_bytes() == (tmp_path / "out" / name).read_bytes()
    with pytest.raises(FileExistsError):
        glyd.unpack(packed, tmp_path / "out")
    glyd.unpack(packed, tmp_path / "out", overwrite=True, threads=2)


def test_cli_reads_python_packs_and_back(packed, cli, tmp_path):
    subprocess.run([cli, "verify", "-q", str(packed), str(FIXTURE)], check=True)
    subprocess.run([cli, "pack", "-q", "--fast-layout", str(FIXTURE), "-o", str(tmp_path / "cli.glyd")], check=True)
    assert glyd.verify(tmp_path / "cli.glyd", FIXTURE) == {"files": 5, "tensors": 47}


def test_verify(packed, tmp_path):
    assert glyd.verify(packed) == {"files": 5, "tensors": 47}
    assert glyd.verify(packed, FIXTURE, threads=2) == {"files": 5, "tensors": 47}
    copy = tmp_path / "copy"
    shutil.copytree(FIXTURE, copy)
    raw = bytearray((copy / "model.safetensors").read_bytes())
    raw[len(raw) - 10] ^= 1  # in the last tensor's bytes
    (copy / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(glyd.Error, match=r"model\.safetensors: differs first at byte %d, in tensor " % (len(raw) - 10)):
        glyd.verify(packed, copy)
    (copy / "config.json").unlink()
    with pytest.raises(glyd.Error, match="config.json: missing"):
        glyd.verify(packed, copy)


def damaged_copy(packed, tmp_path):
    """The pack with a byte flipped in the middle of its first tensor blob,
    found from the index at the end of the file."""
    raw = bytearray(packed.read_bytes())
    m = re.search(rb'"offset":(\d+),"stored":(\d+),"codec":"tensor"', bytes(raw[-20000:]))
    assert m, "no tensor blob found in the packed index"
    at = int(m.group(1)) + int(m.group(2)) // 2
    raw[at] ^= 0x40
    bad = tmp_path / "bad.glyd"
    bad.write_bytes(bytes(raw))
    return bad


def test_damaged_tensor_is_named(packed, tmp_path):
    bad = damaged_copy(packed, tmp_path)
    with pytest.raises(glyd.Error, match="model.safetensors: tensor model.embed_tokens.weight is damaged") as e:
        glyd.verify(bad)
    assert e.value.damaged == ["model.embed_tokens.weight"]
    with pytest.raises(glyd.Error, match="tensor model.embed_tokens.weight is damaged"):
        glyd.verify(bad, FIXTURE)
    with pytest.raises(glyd.Error, match="tensor model.embed_tokens.weight is damaged"):
        glyd.unpack(bad, tmp_path / "out")
    # nothing half-written is left
    left = [p.name for p in (tmp_path / "out").iterdir()] if (tmp_path / "out").exists() else []
    assert not [n for n in left if n.startswith(".glyd-") or n == "model.safetensors"]


def test_hostile_packs_are_errors(packed, tmp_path):
    raw = packed.read_bytes()
    for n in (0, 10, 1000, len(raw) // 2, len(raw) - 1):
        cut = tmp_path / ("cut%d.glyd" % n)
        cut.write_bytes(raw[:n])
        with pytest.raises(glyd.Error):
            glyd.info(cut)
        with pytest.raises(glyd.Error):
            glyd.verify(cut)
    with pytest.raises(glyd.Error):
        glyd.info(FIXTURE / "config.json")
    with pytest.raises(glyd.Error, match="nowhere"):
        glyd.pack(tmp_path / "nowhere", tmp_path / "x.glyd")

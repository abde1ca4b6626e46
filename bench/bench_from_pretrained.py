# SPDX-License-Identifier: BSD-3-Clause
"""glyd.from_pretrained against transformers' own bf16 model on the CPU.

Speed: one process loads every form, then times each in turns, --rounds
times: a forward pass over a prompt of --prompt random tokens, and
generate() of --tokens more after it, greedily (every one: the end of
sequence is not honoured); the best of each form is kept. Taking the forms
in turns in one process keeps slow drifts of a shared machine out of their
ratio.

Memory: each form then loads and generates once in its own process, so that
its resident memory is its own: the weights as held (glyd.weight_memory,
or the parameters' bytes), resident memory after loading and at its peak,
each less what the process held before (the model's code imported).

    python bench/bench_from_pretrained.py MODEL [--prompt 64] [--tokens 64] [--rounds 5]
        [--forms transformers,glyd,exact] [--threads N]
    python bench/bench_from_pretrained.py MODEL --crossover [--rounds 5]

--crossover times forward passes of 1 to 48 tokens with the products fused
(the engine's decode-in-product kernel) and tiled (decoded tiles, torch's
product), which sets glyd._ops.FUSED_MAX_VECTORS.

MODEL: a model folder (make bench-from-pretrained makes the synthetic 0.5B
one, build/synth-0.5b) or a packed model (glyd forms only).
"""
import argparse
import json
import os
import subprocess
import sys
import time

FORMS = ("transformers", "glyd", "exact")


def rss_kb():
    now = peak = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                now = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1])
    return now, peak


def load(form, model_path):
    import torch
    from transformers import AutoModelForCausalLM

    import glyd

    if form == "transformers":
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.bfloat16).eval()
        weights = sum(p.numel() * p.element_size() for p in {id(p): p for p in model.parameters()}.values())
        return model, weights
    model = glyd.from_pretrained(model_path, exact=(form == "exact"))
    return model, glyd.weight_memory(model)[0]


def prompt_ids(model, prompt):
    import torch

    g = torch.Generator().manual_seed(1234)
    return torch.randint(0, model.config.vocab_size, (1, prompt), generator=g)


def time_form(model, ids, tokens):
    """(prompt tokens/s, generated tokens/s, the generated tokens)."""
    import torch

    with torch.inference_mode():
        t0 = time.perf_counter()
        model(ids)
        prompt_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                             attention_mask=torch.ones_like(ids), pad_token_id=0)
        gen_s = time.perf_counter() - t0
    new = out[0, ids.shape[1]:].tolist()
    return ids.shape[1] / prompt_s, len(new) / gen_s, new


def import_model_code(model_path):
    """Imports the model's code (a model of its config on the meta device,
    which holds nothing), so that memory measured after it counts the
    weights and running them, not the modules."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if os.path.isdir(model_path):
        config = AutoConfig.from_pretrained(model_path)
        with torch.device("meta"):
            AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)


def speed(forms, a):
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    models = {f: load(f, a.model)[0] for f in forms}
    ids = prompt_ids(models[forms[0]], a.prompt)
    best = {}
    for r in range(a.rounds):
        for f in forms:
            p, g, new = time_form(models[f], ids, a.tokens)
            print("round %d %-12s generate %7.2f tok/s  prompt %7.1f tok/s" % (r + 1, f, g, p), flush=True)
            b = best.setdefault(f, {"generate": g, "prompt": p, "tokens": new})
            b["generate"], b["prompt"] = max(b["generate"], g), max(b["prompt"], p)
    return best


def crossover(a):
    """A forward pass of n tokens (no cache), the products fused or tiled,
    in turns: where one overtakes the other sets FUSED_MAX_VECTORS."""
    import torch

    import glyd
    from glyd import _ops

    if a.threads:
        torch.set_num_threads(a.threads)
    model = glyd.from_pretrained(a.model)
    print("| tokens | fused ms | tiled ms | tiled / fused |")
    print("| ---: | ---: | ---: | ---: |")
    saved = _ops.FUSED_MAX_VECTORS
    for n in (1, 2, 4, 8, 12, 16, 24, 32, 48):
        ids = prompt_ids(model, n)
        best = {}
        for _ in range(a.rounds):
            for name, limit in (("fused", 1 << 30), ("tiled", 0)):
                _ops.FUSED_MAX_VECTORS = limit
                with torch.inference_mode():
                    t0 = time.perf_counter()
                    model(ids, logits_to_keep=1)
                    best[name] = min(best.get(name, 1e9), time.perf_counter() - t0)
        _ops.FUSED_MAX_VECTORS = saved
        print("| %d | %.1f | %.1f | %.2f |" % (n, best["fused"] * 1e3, best["tiled"] * 1e3, best["tiled"] / best["fused"]),
              flush=True)


def memory(form, a):
    """One form's memory, in this process; prints a JSON line."""
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    import_model_code(a.model)
    before, _ = rss_kb()
    model, weights = load(form, a.model)
    loaded, _ = rss_kb()
    time_form(model, prompt_ids(model, a.prompt), a.tokens)
    _, peak = rss_kb()
    print(json.dumps({"weights": weights, "loaded_kb": loaded - before, "peak_kb": peak - before}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--crossover", action="store_true",
                    help="time forward passes of 1 to 48 tokens with fused and with tiled products")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.crossover:
        return crossover(a)
    if a.one:
        return memory(a.one, a)
    forms = a.forms.split(",")
    for f in forms:
        if f not in FORMS:
            sys.exit("unknown form %r: one of %s" % (f, ", ".join(FORMS)))
    best = speed(forms, a)
    mem = {}
    for f in forms:
        cmd = [sys.executable, os.path.abspath(__file__), a.model, "--one", f, "--prompt", str(a.prompt),
               "--tokens", str(a.tokens), "--threads", str(a.threads)]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if res.returncode:
            sys.exit("%s failed (exit %d)" % (f, res.returncode))
        mem[f] = json.loads(res.stdout.strip().splitlines()[-1])
    base = "transformers" if "transformers" in forms else None
    names = {"transformers": "transformers bf16", "glyd": "glyd.from_pretrained",
             "exact": "glyd.from_pretrained exact=True"}
    mib = 1 / (1 << 20)
    print()
    print("| form | generate tok/s | prompt tok/s | weights held | resident after load | peak resident |"
          + (" generate vs bf16 | weights vs bf16 | peak vs bf16 |" if base else ""))
    print("| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: | ---: |" if base else ""))
    for f in forms:
        s, m = best[f], mem[f]
        row = "| %s | %.2f | %.1f | %.1f MiB | %.1f MiB | %.1f MiB |" % (
            names[f], s["generate"], s["prompt"], m["weights"] * mib, m["loaded_kb"] / 1024, m["peak_kb"] / 1024)
        if base:
            row += " %.3fx | %.3fx | %.3fx |" % (s["generate"] / best[base]["generate"],
                                                 m["weights"] / mem[base]["weights"], m["peak_kb"] / mem[base]["peak_kb"])
        print(row)
    if base:
        for f in forms:
            if f != base:
                same = best[f]["tokens"] == best[base]["tokens"]
                print("%s: generated tokens %s transformers'" % (names[f], "equal to" if same else "differ from"))


if __name__ == "__main__":
    main()

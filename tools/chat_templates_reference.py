#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Expected renderings of the chat templates in tests/data/chat/templates/
(the model vendors' own, see the README there), made by transformers:
render_jinja_template, the function its apply_chat_template calls with the
tokenizer's template text and special tokens. The C renderer (llm/infer/
jinja_*.c) is compared with them byte for byte by the unit test
chat_templates_render_as_transformers_does.

  python3 tools/chat_templates_reference.py [--out tests/data/chat/template_cases.json]

strftime_now is pinned to 2026-01-01 (the test passes the same time to the
C renderer). Needs transformers and jinja2; run once, its output is
committed; never runs in CI.
"""
import argparse
import datetime as dt
import json
import os

import transformers.utils.chat_template_utils as ctu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(REPO, "tests", "data", "chat", "templates")
FIXED_TIME = 1767225600  # 2026-01-01 00:00:00 UTC


class _PinnedClock(dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return dt.datetime(2026, 1, 1, 0, 0, 0)


# name: (bos_token, eos_token, has enable_thinking)
FAMILIES = {
    "qwen3": (None, "<|im_end|>", True),
    "qwen3.5": (None, "<|im_end|>", True),
    "llama-3.1": ("<|begin_of_text|>", "<|eot_id|>", False),
    "llama-3.2": ("<|begin_of_text|>", "<|eot_id|>", False),
    "mistral-nemo": ("<s>", "</s>", False),
    "mistral-small-3.2": ("<s>", "</s>", False),
    "gemma-3": ("<bos>", "<eos>", False),
}

SYSTEM = "You are terse.  Answer in one line."
TURNS = [
    ("What is 1+1?", "<think>\nA sum.\n</think>\n\nTwo."),
    ("And  \"2+2\"? Café — 日本語 ✓", "Four, as 'always'.\n"),
    ("  Padded question\twith tab  ", "<think>cut short"),
    ("Thanks!", None),
]


def conversations():
    """(label, messages) pairs; every one alternates user and assistant."""
    out = []
    for with_system in (True, False):
        for upto in (1, 2, 4):
            msgs = [{"role": "system", "content": SYSTEM}] if with_system else []
            for i, (user, reply) in enumerate(TURNS[:upto]):
                msgs.append({"role": "user", "content": user})
                if i < upto - 1:
                    msgs.append({"role": "assistant", "content": reply})
            out.append(("%s system, %d turns" % ("with" if with_system else "no", upto), msgs))
    # ending with the assistant's reply (no generation prompt wanted then)
    out.append(("ends with a reply", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "chat", "template_cases.json"))
    args = ap.parse_args()
    ctu.datetime = _PinnedClock  # strftime_now reads the module's datetime
    cases = []
    for name, (bos, eos, thinking) in FAMILIES.items():
        path = os.path.join(TEMPLATES, name + ".jinja")
        if not os.path.exists(path):
            continue
        template = open(path, encoding="utf-8").read()
        for label, msgs in conversations():
            for gen in (True, False):
                for think in ((None, True, False) if thinking else (None,)):
                    kwargs = {"bos_token": bos, "eos_token": eos}
                    if think is not None:
                        kwargs["enable_thinking"] = think
                    rendered, _ = ctu.render_jinja_template(
                        conversations=[msgs], chat_template=template, add_generation_prompt=gen, **kwargs)
                    case = {"template": name, "label": label, "messages": msgs, "add_generation_prompt": gen,
                            "bos_token": bos, "eos_token": eos, "expected": rendered[0]}
                    if think is not None:
                        case["enable_thinking"] = think
                    cases.append(case)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("%d renderings of %d templates" % (len(cases), len({c["template"] for c in cases})))


if __name__ == "__main__":
    main()

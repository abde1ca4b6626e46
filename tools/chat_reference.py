#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference renderings of multi-turn chats by Qwen3's own chat template
(the fixture's tokenizer_config.json, through transformers), for the test
of how `glyd run` writes a conversation's history into the KV cache.

  python3 tools/chat_reference.py [--out tests/data/chat/qwen3_history.json]

Needs transformers (pip); run once, its output is committed; never runs in CI.
"""
import argparse
import json
import os

from transformers import AutoTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(REPO, "..", "shared", "fixtures", "qwen3-tokenizer")

# Replies as the model writes them after the generation prompt: with
# thinking on, the model opens <think> itself; with --no-think the prompt
# already holds the empty thinking, and the model writes the answer only.
CASES = [
    {"think": True, "system": "You answer in one word.",
     "turns": [["What is 1+1?", "<think>\nThe user asks a sum.\n</think>\n\nTwo."],
               ["And 2+2?", "<think>\n\n</think>\n\n\nFour."],
               ["Thanks!", None]]},
    {"think": True, "system": None,
     "turns": [["Hi", "<think>\nGreet back"],               # cut short by Ctrl-C: no </think>
               ["Still there?", "<think>a</think>b</think>\nYes."],
               ["Bye", None]]},
    {"think": False, "system": "Be brief.",
     "turns": [["Name a colour.", "Blue."],
               ["Another?", "Green, or\n\nred."],
               ["One more", None]]},
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "chat", "qwen3_history.json"))
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(FIXTURE)
    out = []
    for case in CASES:
        messages = []
        if case["system"]:
            messages.append({"role": "system", "content": case["system"]})
        for user, reply in case["turns"]:
            messages.append({"role": "user", "content": user})
            if reply is not None:
                messages.append({"role": "assistant", "content": reply})
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                       enable_thinking=case["think"])
        out.append(dict(case, expected=text))
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The chat of `glyd run`, driven through a pseudo-terminal as a person
would: a reply streams, /reset forgets, Ctrl-C stops a reply and not the
program, /exit quits. The model is the stories260K fixture with a small
byte-level tokenizer.json made here (its 256 byte tokens and the ChatML
tokens in the model's 512 ids): the replies are not language, the
mechanics are what is tested.

    chat_pty.py GLYD FIXTURE_DIR WORK_DIR
Prints "ok - ..." or "FAIL - ..." lines, like cli_test.sh.
"""
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time

glyd, fixture, work = sys.argv[1:4]
failures = 0


def report(ok, what, why=""):
    global failures
    if ok:
        print("ok - chat: " + what)
    else:
        failures += 1
        print("FAIL - chat: %s (%s)" % (what, why))


def byte_chars():
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


model = os.path.join(work, "chat-model")
os.makedirs(model, exist_ok=True)
shutil.copy(os.path.join(fixture, "model.safetensors"), model)
config = json.load(open(os.path.join(fixture, "config.json")))
config.pop("eos_token_id", None)  # replies end at <|im_end|> only: long enough to interrupt
json.dump(config, open(os.path.join(model, "config.json"), "w"))
chars = byte_chars()
tokenizer = {
    "version": "1.0",
    "added_tokens": [{"id": 510, "content": "<|im_start|>", "special": True},
                     {"id": 511, "content": "<|im_end|>", "special": True}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
    "model": {"type": "BPE", "vocab": {chars[b]: b for b in range(256)}, "merges": []},
}
json.dump(tokenizer, open(os.path.join(model, "tokenizer.json"), "w"))

# one answer with -p, outside a terminal
r = subprocess.run([glyd, "run", model, "-p", "Hello", "-n", "12", "--seed", "3", "-T1"],
                   capture_output=True, timeout=120)
report(r.returncode == 0 and len(r.stdout) > 0 and b"weights" in r.stderr,
       "-p answers once and exits", "rc %d, stderr %r" % (r.returncode, r.stderr[-200:]))

# the GPU backend (emulated): the sampler's candidates picked there, the
# same reply (the logits differ from the CPU's by about 1e-5; with this
# seed no draw falls between them)
g = subprocess.run([glyd, "run", model, "--gpu=emulated", "-p", "Hello", "-n", "12", "--seed", "3", "-T1"],
                   capture_output=True, timeout=120)
report(g.returncode == 0 and g.stdout == r.stdout, "-p on the GPU backend (emulated) answers as on the CPU",
       "rc %d, %r against %r" % (g.returncode, g.stdout[-100:], r.stdout[-100:]))

pid, fd = pty.fork()
if pid == 0:
    os.execv(glyd, [glyd, "run", model, "-T1", "--seed", "5", "-n", "900000", "--ctx", "50000"])

buffer = b""


def read_until(marker, timeout):
    """Reads the terminal until marker shows up after what was read so far."""
    global buffer
    start = len(buffer)
    end = time.time() + timeout
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return False
            if not data:
                return False
            buffer += data
            if marker in buffer[start:]:
                return True
    return False


report(read_until(b"> ", 120), "the prompt appears", repr(buffer[-200:]))
os.write(fd, b"tell me a story\r")
# the reply streams: bytes arrive while it is being written
got = read_until(b"\n", 60) and read_until(b"", 0)
mark = len(buffer)
time.sleep(1.0)
read_until(b"\x00", 1.0)
report(len(buffer) > mark, "the reply streams", "no output after the first line")
os.write(fd, b"\x03")  # Ctrl-C, through the terminal's line discipline
report(read_until(b"> ", 30) and b"fills the context" not in buffer, "Ctrl-C stops the reply and the prompt comes back",
       repr(buffer[-200:]))
report(os.waitpid(pid, os.WNOHANG)[0] == 0, "Ctrl-C leaves the program running")
os.write(fd, b"/reset\r")
ok = read_until(b"forgotten", 30)
ok = ok and (b"> " in buffer[buffer.rfind(b"forgotten"):] or read_until(b"> ", 30))
report(ok, "/reset forgets the conversation", repr(buffer[-200:]))
os.write(fd, b"/exit\r")
status = None
end = time.time() + 30
while time.time() < end:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
        break
    read_until(b"\x00", 0.2)
if status is None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
report(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "/exit quits with status 0",
       "status %r" % (status,))

# the model's own chat template (Qwen3's, from tokenizer_config.json),
# outside a terminal: each turn renders the whole conversation, and the
# cache keeps what it already holds of it
tmodel = os.path.join(work, "chat-template-model")
os.makedirs(tmodel, exist_ok=True)
for name in ("model.safetensors", "config.json", "tokenizer.json"):
    shutil.copy(os.path.join(model, name), tmodel)
repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
qwen3 = open(os.path.join(repo, "tests", "data", "chat", "templates", "qwen3.jinja")).read()
json.dump({"chat_template": qwen3, "eos_token": "<|im_end|>", "bos_token": None},
          open(os.path.join(tmodel, "tokenizer_config.json"), "w"))
json.dump({"eos_token_id": [511]}, open(os.path.join(tmodel, "generation_config.json"), "w"))


def cache_lines(extra):
    r = subprocess.run([glyd, "run", tmodel, "-v", "-n", "8", "--seed", "3", "-T1", "--system", "Be brief."] + extra,
                       input=b"Hello\nAgain\n", capture_output=True, timeout=120)
    lines = [l for l in r.stderr.decode(errors="replace").splitlines() if l.startswith("(cache: ")]
    nums = [(int(l.split()[1]), int(l.split()[4])) for l in lines]
    return r, nums


r, nums = cache_lines([])
report(r.returncode == 0 and b"chat template: the model's" in r.stderr, "the model's chat template is used",
       "rc %d, stderr %r" % (r.returncode, r.stderr[-300:]))
report(len(nums) == 2 and nums[0][0] == 0 and nums[0][1] > 0 and nums[0][1] <= nums[1][0] <= nums[0][1] + 8,
       "the next turn keeps the conversation in the cache and feeds the rest", repr(nums))
r2, nums2 = cache_lines(["--no-think"])
report(r2.returncode == 0 and len(nums2) == 2 and nums2[0][1] == nums[0][1] + len("<think>\n\n</think>\n\n"),
       "--no-think renders enable_thinking=false (the empty thinking)", repr(nums2))
# a template that writes earlier replies otherwise than they were drawn
# (as Qwen3's drops their thinking): the cache goes back to where they start
json.dump({"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n"
                            "{{ '(a reply)' if m.role == 'assistant' else m.content }}<|im_end|>\n{% endfor %}"
                            "<|im_start|>assistant\n"}, open(os.path.join(tmodel, "tokenizer_config.json"), "w"))
r4, nums4 = cache_lines([])
report(r4.returncode == 0 and len(nums4) == 2 and nums4[1][0] == nums4[0][1],
       "a history written otherwise is fed again from where it differs", repr(nums4))
json.dump({"chat_template": "{{ bos_token }}\n{% filter upper %}x{% endfilter %}"},
          open(os.path.join(tmodel, "tokenizer_config.json"), "w"))
r3 = subprocess.run([glyd, "run", tmodel, "-p", "Hi", "-n", "2", "-T1"], capture_output=True, timeout=120)
err = r3.stderr.decode(errors="replace").strip().splitlines()
report(r3.returncode == 1 and len(err) == 1 and "line 2: unsupported tag 'filter'" in err[0],
       "a template outside the subset is refused in one line naming its line", repr(err))
shutil.rmtree(tmodel)
shutil.rmtree(model)
sys.exit(1 if failures else 0)

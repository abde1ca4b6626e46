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
shutil.rmtree(model)
sys.exit(1 if failures else 0)

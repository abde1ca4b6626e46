# SPDX-License-Identifier: BSD-3-Clause
# The codec from Python: one-shot round trips of the shared corpus, every
# kind of buffer, streams in chunks of every size, glyd.open, the CLI
# reading what Python wrote and back, damaged and truncated input, threads.
import io
import os
import random
import subprocess
import threading
import time

import numpy as np
import pytest

import glyd
from conftest import CORPUS, corpus_files


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_round_trip(path):
    data = path.read_bytes()
    for level in (1, 3):
        frame = glyd.compress(data, level=level)
        assert glyd.decompress(frame) == data
        assert glyd.frame_content_size(frame) == len(data)
    if len(frame) < len(data) and not path.name.endswith((".jpeg", ".pdf")):
        assert len(frame) < len(data) * 0.9


def test_levels_order_and_fast_levels(alice):
    sizes = {}
    for level in (-5, 1, 3, 19):
        sizes[level] = len(glyd.compress(alice, level=level))
        assert glyd.decompress(glyd.compress(alice, level=level)) == alice
    assert sizes[19] < sizes[3] <= sizes[1] < sizes[-5] < len(alice)


def test_bad_level_is_an_error(alice):
    with pytest.raises(glyd.Error):
        glyd.compress(alice, level=100)


def test_every_buffer_kind(alice):
    frame = glyd.compress(alice)
    for data in (alice, bytearray(alice), memoryview(alice), np.frombuffer(alice, dtype=np.uint8)):
        assert glyd.compress(data) == frame
    for frame_kind in (bytearray(frame), memoryview(frame), np.frombuffer(frame, dtype=np.uint8)):
        assert glyd.decompress(frame_kind) == alice
    weights = np.arange(100000, dtype=np.float32).reshape(100, 1000)
    assert glyd.decompress(glyd.compress(weights)) == weights.tobytes()
    # a slice of a memoryview is read where it lies
    assert glyd.decompress(glyd.compress(memoryview(alice)[1000:5000])) == alice[1000:5000]
    with pytest.raises((BufferError, ValueError)):  # numpy says ValueError
        glyd.compress(weights[:, ::2])
    with pytest.raises(TypeError):
        glyd.compress("text is not bytes")


def test_empty_input():
    frame = glyd.compress(b"")
    assert glyd.decompress(frame) == b""
    with pytest.raises(glyd.Error):
        glyd.decompress(b"")


def test_cli_reads_python_frames_and_back(alice, cli, tmp_path):
    (tmp_path / "a.glyd").write_bytes(glyd.compress(alice, level=5))
    out = subprocess.run([cli, "-d", "-c", str(tmp_path / "a.glyd")], capture_output=True, check=True).stdout
    assert out == alice
    made = subprocess.run([cli, "-c", "-7"], input=alice, capture_output=True, check=True).stdout
    assert glyd.decompress(made) == alice
    with glyd.open(tmp_path / "b.glyd", "wb") as f:
        f.write(alice)
    out = subprocess.run([cli, "-d", "-c", str(tmp_path / "b.glyd")], capture_output=True, check=True).stdout
    assert out == alice


# --- streams ----------------------------------------------------------------

CHUNKS = [1, 2, 3, 7, 100, 4095, 4096, 65536, 131073, 1 << 20]


@pytest.mark.parametrize("chunk", CHUNKS)
def test_stream_chunks(alice, chunk):
    data = alice[:40000] if chunk < 100 else alice
    c = glyd.Compressor(level=3)
    parts = [c.compress(data[i:i + chunk]) for i in range(0, len(data), chunk)]
    parts.append(c.flush())
    frame = b"".join(parts)
    assert glyd.frame_content_size(frame) is None  # streamed: no size declared
    assert glyd.decompress(frame) == data
    d = glyd.Decompressor()
    out = [d.decompress(frame[i:i + chunk]) for i in range(0, len(frame), chunk)]
    assert b"".join(out) == data
    assert d.eof and d.unused_data == b""


def test_stream_random_chunks_and_max_length(alice):
    rng = random.Random(7)
    c = glyd.Compressor(level=1)
    frame, i = [], 0
    while i < len(alice):
        n = rng.randint(0, 5000)
        frame.append(c.compress(alice[i:i + n]))
        i += n
    frame = b"".join(frame) + c.flush()
    d = glyd.Decompressor()
    out, i = [], 0
    while not d.eof:
        feed = b""
        if d.needs_input:
            feed = frame[i:i + rng.randint(1, 3000)]
            i += len(feed)
        piece = d.decompress(feed, max_length=1000)
        assert len(piece) <= 1000
        out.append(piece)
    assert b"".join(out) == alice


def test_flush_block_makes_input_decodable(alice):
    c = glyd.Compressor()
    d = glyd.Decompressor()
    got = b""
    for i in range(0, 30000, 10000):
        got += d.decompress(c.compress(alice[i:i + 10000]) + c.flush(glyd.FLUSH_BLOCK))
        assert got == alice[:i + 10000]
        assert not d.eof
    got += d.decompress(c.flush())
    assert got == alice[:30000] and d.eof


def test_frames_in_a_row_and_unused_data(alice):
    one, two = glyd.compress(alice[:5000]), glyd.compress(alice[5000:9000])
    d = glyd.Decompressor()
    assert d.decompress(one + two) == alice[:5000]
    assert d.eof and d.unused_data == two
    assert d.decompress(b"more") == b"" and d.unused_data == two + b"more"
    across = glyd.Decompressor(read_across_frames=True)
    assert across.decompress(one + two[:10]) == alice[:5000]
    assert not across.eof
    assert across.decompress(two[10:]) == alice[5000:9000]
    assert across.eof
    assert glyd.decompress(one + two) == alice[:9000]
    # a Compressor starts a new frame after each FLUSH_FRAME
    c = glyd.Compressor()
    stream = c.compress(b"abc") + c.flush() + c.compress(b"def") + c.flush()
    assert glyd.decompress(stream) == b"abcdef"


def test_seek_table_is_not_unused_data():
    # large enough for several segments: the frame carries a seek table
    data = bytes(range(256)) * 4096 + os.urandom(1 << 20) + b"x" * (8 << 20)
    frame = glyd.compress(data, level=1, threads=2)
    info_end = glyd.decompress(frame)
    assert info_end == data
    for split in (len(frame) - 30, len(frame) - 3, len(frame)):
        d = glyd.Decompressor()
        out = d.decompress(frame[:split]) + d.decompress(frame[split:] + b"tail")
        assert out == data and d.eof
        assert d.unused_data == b"tail"


def test_max_output_size(alice):
    frame = glyd.compress(alice)
    assert glyd.decompress(frame, max_output_size=len(alice)) == alice
    with pytest.raises(glyd.Error, match="max_output_size"):
        glyd.decompress(frame, max_output_size=len(alice) - 1)
    c = glyd.Compressor()
    streamed = c.compress(alice) + c.flush()
    assert glyd.decompress(streamed, max_output_size=len(alice)) == alice
    with pytest.raises(glyd.Error, match="max_output_size"):
        glyd.decompress(streamed, max_output_size=1000)


# --- glyd.open --------------------------------------------------------------

def test_open_binary_and_text(alice, tmp_path):
    path = tmp_path / "a.txt.glyd"
    with glyd.open(path, "wb", level=9) as f:
        for i in range(0, len(alice), 3333):
            f.write(alice[i:i + 3333])
    with glyd.open(path, "rb") as f:
        assert f.read(10) == alice[:10]
        assert f.read() == alice[10:]
        assert f.read() == b""
    with glyd.open(str(path), "rb") as f:
        got = b""
        while True:
            piece = f.read(777)
            if not piece:
                break
            got += piece
        assert got == alice
    text = alice.decode("latin-1")
    with glyd.open(path, "wt", encoding="latin-1", newline="") as f:
        f.write(text)
    with glyd.open(path, "rt", encoding="latin-1", newline="") as f:
        lines = list(f)
    assert "".join(lines) == text and len(lines) > 3000


def test_open_file_objects_and_append(alice):
    buf = io.BytesIO()
    with glyd.open(buf, "wb") as f:
        f.write(alice[:1000])
    with glyd.open(buf, "ab") as f:
        f.write(alice[1000:2000])
    assert not buf.closed
    buf.seek(0)
    with glyd.open(buf, "rb") as f:
        assert f.read() == alice[:2000]


def test_open_truncated_file_is_an_error(alice, tmp_path):
    path = tmp_path / "t.glyd"
    path.write_bytes(glyd.compress(alice)[:-20])
    with glyd.open(path) as f, pytest.raises(glyd.Error):
        f.read()
    with pytest.raises(ValueError):
        glyd.open(path, "rw")


# --- damaged input ----------------------------------------------------------

def test_every_truncation_is_an_error(alice):
    frame = glyd.compress(alice[:3000])
    for n in range(len(frame)):
        with pytest.raises(glyd.Error):
            glyd.decompress(frame[:n])
        d = glyd.Decompressor()
        try:
            d.decompress(frame[:n])
        except glyd.Error:
            continue
        assert not d.eof


def test_flipped_bytes_never_crash(alice):
    frame = glyd.compress(alice[:3000], level=3)
    errors = 0
    for i in range(len(frame)):
        for bit in (0x01, 0x80):
            bad = bytearray(frame)
            bad[i] ^= bit
            try:
                assert glyd.decompress(bytes(bad)) == alice[:3000]
            except glyd.Error as e:
                assert str(e) and e.code > 0
                errors += 1
    assert errors > len(frame)  # the checksum catches nearly every flip


def test_garbage_and_forged_sizes():
    rng = random.Random(3)
    for n in (1, 4, 8, 17, 100, 5000):
        for _ in range(20):
            junk = bytes(rng.getrandbits(8) for _ in range(n))
            with pytest.raises(glyd.Error):
                glyd.decompress(junk)
    # a real header whose declared size is forged to 2^60 bytes
    frame = bytearray(glyd.compress(b"hello " * 1000))
    forged = None
    for i in range(5, 16):
        trial = bytearray(frame)
        trial[i:i + 8] = (1 << 60).to_bytes(8, "little")
        try:
            if glyd.frame_content_size(bytes(trial)) == 1 << 60:
                forged = bytes(trial)
                break
        except glyd.Error:
            continue
    if forged is not None:
        with pytest.raises(glyd.Error):
            glyd.decompress(forged)


def test_decompressor_error_is_sticky(alice):
    frame = bytearray(glyd.compress(alice[:5000]))
    frame[len(frame) // 2] ^= 0xFF
    d = glyd.Decompressor()
    with pytest.raises(glyd.Error):
        d.decompress(bytes(frame))
    with pytest.raises(glyd.Error, match="failed earlier"):
        d.decompress(b"")


# --- threads ----------------------------------------------------------------

def test_threads_give_the_same_content():
    data = (CORPUS / "tables" / "gsm8k_train.jsonl").read_bytes()
    one = glyd.compress(data, threads=1)
    for threads in (2, 0):
        frame = glyd.compress(data, threads=threads)
        assert glyd.decompress(frame, threads=threads) == data
        assert glyd.decompress(one, threads=threads) == data
    c = glyd.Compressor(threads=2)
    assert glyd.decompress(c.compress(data) + c.flush()) == data
    with pytest.raises(ValueError):
        glyd.compress(data, threads=-1)


def test_python_threads_run_while_the_library_works():
    data = (CORPUS / "tables" / "diamonds.csv").read_bytes()
    done = threading.Event()
    result = {}

    def work():
        result["frame"] = glyd.compress(data, level=12)
        done.set()

    t = threading.Thread(target=work)
    spins = 0
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        spins += 1
    t.join()
    elapsed = time.perf_counter() - start
    assert glyd.decompress(result["frame"]) == data
    # with the GIL held through the call, this loop could not have run
    assert elapsed > 0.05 and spins > 10000


def test_many_threads_at_once():
    from concurrent.futures import ThreadPoolExecutor

    files = [p.read_bytes() for p in sorted((CORPUS / "logs").iterdir())]
    with ThreadPoolExecutor(4) as pool:
        frames = list(pool.map(glyd.compress, files))
        back = list(pool.map(glyd.decompress, frames))
    assert back == files


# --- records ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["logs/HPC_2k.log", "logs/Mac_2k.log", "tables/diamonds.csv"])
def test_records_frames(name, cli, tmp_path):
    data = (CORPUS / name).read_bytes()
    frame = glyd.compress(data, level=3, records=True)
    assert glyd.decompress(frame) == data
    # columns take less than the text's own frame on logs and tables
    assert len(frame) < len(glyd.compress(data, level=3))
    assert glyd.decompress(glyd.compress(data, level=3, threads=2, records=True), threads=2) == data
    # streamed, in text mode, and read back by the CLI
    path = tmp_path / "r.glyd"
    with glyd.open(path, "wt", records=True, encoding="latin-1", newline="") as f:
        f.write(data.decode("latin-1"))
    assert subprocess.run([cli, "-dc", str(path)], capture_output=True, check=True).stdout == data
    c = glyd.Compressor(records=True)
    streamed = b"".join(c.compress(data[i:i + 5000]) for i in range(0, len(data), 5000)) + c.flush()
    assert glyd.Decompressor().decompress(streamed) == data


def test_records_frames_context_mixed_at_max(cli, tmp_path):
    # the highest level context-mixes row groups: smaller, read back by the CLI
    data = (CORPUS / "logs" / "HealthApp_2k.log").read_bytes()[:40000]
    frame = glyd.compress(data, level=glyd.LEVEL_MAX, records=True)
    assert glyd.decompress(frame) == data
    assert len(frame) < len(glyd.compress(data, level=19, records=True))
    path = tmp_path / "m.glyd"
    path.write_bytes(frame)
    assert subprocess.run([cli, "-dc", str(path)], capture_output=True, check=True).stdout == data


def test_records_frames_of_binary_stay_whole():
    data = bytes(random.Random(7).getrandbits(8) for _ in range(20000))
    assert glyd.decompress(glyd.compress(data, records=True)) == data
    with pytest.raises(TypeError):
        glyd.compress(data, 3, 1, True)  # records is a keyword

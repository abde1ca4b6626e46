# SPDX-License-Identifier: BSD-3-Clause
# glyd.from_pretrained against transformers' own bf16 model, on the tiny
# Qwen2, Qwen3, Qwen3-with-YaRN and Llama 3 models of tests/data and the
# stories260K Llama fixture: exact=True gives the bf16 model's logits bit for bit; the
# default mode its greedy tokens, with logits as close to the fp32 model's
# as bf16's own; packed models load as they lie and save_pretrained round
# trips; weights take under 0.75 of bf16's memory; damage and bad input
# raise glyd.Error.
import contextlib
import os
import shutil
import struct

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import glyd  # noqa: E402
from conftest import FIXTURE, REPO  # noqa: E402

MODELS = {
    "qwen2": REPO / "tests" / "data" / "tiny-qwen2",
    "qwen3": REPO / "tests" / "data" / "tiny-qwen3",
    "qwen3-yarn": REPO / "tests" / "data" / "tiny-qwen3-yarn",
    "llama3": REPO / "tests" / "data" / "tiny-llama3",
    "llama-stories260K": FIXTURE,
}
PROMPT = 24
GENERATED = 24


def reference(path, dtype=torch.bfloat16):
    return transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()


def prompt(model, n=PROMPT, seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, model.config.vocab_size, (1, n), generator=g)


def logits(model, ids):
    with torch.inference_mode():
        return model(ids).logits.float()


def greedy(model, ids):
    with torch.inference_mode():
        return model.generate(ids, max_new_tokens=GENERATED, min_new_tokens=GENERATED, do_sample=False,
                              attention_mask=torch.ones_like(ids), pad_token_id=0)


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request):
    path = MODELS[request.param]
    ref = reference(path)
    return path, ref, prompt(ref)


def test_exact_logits_equal_bf16_bit_for_bit(case):
    path, ref, ids = case
    model = glyd.from_pretrained(path, exact=True)
    for n in (1, 3, PROMPT):  # the fused and the tiled lengths
        assert torch.equal(logits(model, ids[:, :n]), logits(ref, ids[:, :n]))
    assert torch.equal(greedy(model, ids[:, :8]), greedy(ref, ids[:, :8]))


def test_default_mode_tokens_equal_and_logits_as_close_as_bf16(case):
    path, ref, ids = case
    model = glyd.from_pretrained(path)
    fp32 = reference(path, torch.float32)
    assert torch.equal(greedy(model, ids[:, :8]), greedy(ref, ids[:, :8]))
    for n in (1, 2, 5, 16, PROMPT):
        x = ids[:, :n]
        ours, bf16, truth = logits(model, x), logits(ref, x), logits(fp32, x)
        bf16_error = (bf16 - truth).abs().max().item()
        # the products' sums are rounded to bf16 as torch's are, in another
        # order: what differs is bf16's own rounding
        assert (ours - truth).abs().max().item() <= 1.25 * bf16_error + 1e-3
        assert (ours - bf16).abs().max().item() <= bf16_error + 1e-3
        assert torch.equal(ours[0, -1].argmax(), bf16[0, -1].argmax())


def test_weights_take_under_three_quarters_of_bf16(case):
    path, ref, _ = case
    model = glyd.from_pretrained(path)
    held, bf16 = glyd.weight_memory(model)
    ref_bytes = sum(p.numel() * p.element_size() for p in {id(p): p for p in ref.parameters()}.values())
    assert bf16 == ref_bytes
    assert held < 0.75 * ref_bytes
    coded = [m for m in model.modules() if type(m).__name__ in ("CodedLinear", "CodedEmbedding")]
    assert coded and not any(isinstance(m, (torch.nn.Linear, torch.nn.Embedding)) for m in model.modules())
    assert all(m.matrix.layout == "fast" for m in coded)


def test_packed_models_load_as_they_lie(case, tmp_path):
    path, ref, ids = case
    want = logits(ref, ids)
    entropy = tmp_path / "entropy.glyd"
    glyd.pack(path, entropy)  # the CLI's default layout: recoded at load
    fast = tmp_path / "fast.glyd"
    glyd.pack(path, fast, fast_layout=True)  # mapped and used where it lies
    for packed in (entropy, fast):
        assert torch.equal(logits(glyd.from_pretrained(packed, exact=True), ids), want)
        assert torch.equal(logits(glyd.from_pretrained(packed, exact=True, verify=True), ids), want)
    default = glyd.from_pretrained(fast)
    assert glyd.weight_memory(default) == glyd.weight_memory(glyd.from_pretrained(path))


def test_save_pretrained_round_trips(case, tmp_path):
    path, ref, ids = case
    model = glyd.from_pretrained(path)
    out = tmp_path / "saved.glyd"
    size = glyd.save_pretrained(model, out)
    assert size == out.stat().st_size
    again = glyd.from_pretrained(out)
    assert torch.equal(logits(again, ids), logits(model, ids))
    assert torch.equal(logits(glyd.from_pretrained(out, exact=True), ids), logits(ref, ids))
    # every source tensor comes back byte for byte
    from safetensors.torch import load_file

    unpacked = tmp_path / "unpacked"
    glyd.unpack(out, unpacked)
    saved = load_file(unpacked / "model.safetensors")
    source = {}
    for f in sorted(os.listdir(path)):
        if f.endswith(".safetensors"):
            source.update(load_file(os.path.join(path, f)))
    tied = set(source) - set(saved)
    assert tied <= {"lm_head.weight"}
    for name in saved:
        assert torch.equal(saved[name].view(torch.int16), source[name].view(torch.int16)), name
    assert set(os.listdir(unpacked)) >= {"config.json", "model.safetensors"}


def test_custom_ops_give_the_modules_results():
    model = glyd.from_pretrained(MODELS["qwen2"])
    layer = model.model.layers[0]
    x = torch.randn(2, 3, layer.self_attn.q_proj.in_features).to(torch.bfloat16)
    q = layer.self_attn.q_proj
    assert q.bias is not None
    assert torch.equal(torch.ops.glyd.coded_linear(x, q.handle, q.bias, False), q(x))
    assert torch.equal(torch.ops.glyd.coded_linear(x, q.handle, q.bias, True),
                       torch.nn.functional.linear(x, q.weight, q.bias))
    emb = model.model.embed_tokens
    ids = torch.tensor([[0, 5, 255], [7, 7, 1]])
    assert torch.equal(torch.ops.glyd.coded_embedding(ids, emb.handle), emb.weight[ids])
    torch.library.opcheck(torch.ops.glyd.coded_linear.default, (x, q.handle, q.bias, False),
                          test_utils=("test_schema", "test_faketensor"))
    torch.library.opcheck(torch.ops.glyd.coded_embedding.default, (ids, emb.handle),
                          test_utils=("test_schema", "test_faketensor"))


# ---------------------------------------------------------------------------
# CodedMatrix: the products against torch's, odd shapes, threads
# ---------------------------------------------------------------------------

def coded(w, row_length=None):
    blob = glyd._glyd.tensor_compress(w.view(torch.int16).numpy().tobytes(), 1,
                                      w.shape[1] if row_length is None else row_length, 2, 2)
    return glyd._glyd.CodedMatrix(blob, w.shape[0], w.shape[1])


@pytest.mark.parametrize("kernel", ["engine", "bf16"])
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 17), (257, 64), (96, 70000), (5000, 31)])
def test_products_of_odd_shapes(rows, cols, kernel):
    from glyd import _ops

    with kernel_in_use(kernel):
        g = torch.Generator().manual_seed(rows * 7 + cols)
        w = (torch.randn(rows, cols, generator=g) * 0.05).to(torch.bfloat16)
        products_match_torch(_ops, g, w, coded(w), rows, cols)


def products_match_torch(_ops, g, w, m, rows, cols):
    assert torch.equal(_ops.decode(m), w)
    bias = torch.randn(rows, generator=g).to(torch.bfloat16)
    for n in (1, 4, 33):
        x = torch.randn(n, cols, generator=g).to(torch.bfloat16)
        want = (x.float() @ w.float().T + bias.float())
        for fused_max in (0, 64):  # the tiled and the fused product
            saved, _ops.FUSED_MAX_VECTORS = _ops.FUSED_MAX_VECTORS, fused_max
            try:
                got = _ops.linear_impl(x, _handle(m), bias, False).float()
            finally:
                _ops.FUSED_MAX_VECTORS = saved
            # fp32 sums in another order, each rounded to bf16 once
            assert ((got - want).abs() <= want.abs() * 2 ** -7 + 1e-3 * (cols ** 0.5)).all()
    ids = torch.tensor([0, rows - 1, rows // 2, 0])
    assert torch.equal(_ops.embedding_impl(ids, _handle(m)), w[ids])


_owners = []


def _handle(m):
    from glyd import _ops

    owner = torch.nn.Module()
    _owners.append(owner)
    return _ops.register(m, owner)


@contextlib.contextmanager
def kernel_in_use(kernel):
    try:
        glyd._glyd.set_product_kernel(kernel)
    except ValueError:
        pytest.skip("no AVX-512 BF16 on this CPU")
    try:
        yield
    finally:
        glyd._glyd.set_product_kernel("auto")


def test_the_bf16_kernel_is_used_where_the_cpu_has_it():
    import platform

    with open("/proc/cpuinfo") as f:
        has = " avx512_bf16" in f.read()
    if platform.machine() == "x86_64":
        assert glyd._glyd.set_product_kernel("auto") == ("bf16" if has else "engine")
    with pytest.raises(ValueError):
        glyd._glyd.set_product_kernel("fastest")


@pytest.mark.parametrize("kernel", ["engine", "bf16"])
def test_default_mode_on_either_kernel(kernel):
    path = MODELS["llama-stories260K"]
    ref, fp32 = reference(path), reference(path, torch.float32)
    ids = prompt(ref, 5)
    with kernel_in_use(kernel):
        model = glyd.from_pretrained(path)
        ours = logits(model, ids)
        tokens = greedy(model, ids)
    bf16, truth = logits(ref, ids), logits(fp32, ids)
    assert (ours - truth).abs().max().item() <= 1.25 * (bf16 - truth).abs().max().item() + 1e-3
    assert torch.equal(tokens, greedy(ref, ids))


@pytest.mark.parametrize("kernel", ["engine", "bf16"])
def test_products_do_not_depend_on_threads(kernel):
    with kernel_in_use(kernel):
        products_for_every_thread_count()


def products_for_every_thread_count():
    g = torch.Generator().manual_seed(3)
    w = (torch.randn(3000, 512, generator=g) * 0.02).to(torch.bfloat16)
    m = coded(w)
    x = torch.randn(5, 512, generator=g).to(torch.bfloat16)
    outs = []
    for threads in (1, 2, 3, 0):
        glyd._glyd.set_product_threads(threads)
        out = torch.empty(5, 3000, dtype=torch.bfloat16)
        m.matmul(x.data_ptr(), 5, out.data_ptr(), 0)
        outs.append(out)
    glyd._glyd.set_product_threads(torch.get_num_threads())
    assert all(torch.equal(o, outs[0]) for o in outs)


def test_products_from_several_python_threads():
    import threading

    g = torch.Generator().manual_seed(4)
    w = (torch.randn(2048, 256, generator=g) * 0.02).to(torch.bfloat16)
    m = coded(w)
    h = _handle(m)
    from glyd import _ops

    xs = [torch.randn(2, 256, generator=g).to(torch.bfloat16) for _ in range(4)]
    want = [_ops.linear_impl(x, h, None, False) for x in xs]
    errors = []

    def work(i):
        for _ in range(50):
            if not torch.equal(_ops.linear_impl(xs[i], h, None, False), want[i]):
                errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_coded_matrix_refuses_bad_input():
    w = torch.randn(64, 32).to(torch.bfloat16)
    m = coded(w)
    out = torch.empty(64, 32, dtype=torch.bfloat16)
    with pytest.raises(ValueError):
        m.decode_rows(0, 65, out.data_ptr())
    with pytest.raises(ValueError):
        m.decode_rows(5, 5, out.data_ptr())
    with pytest.raises(IndexError):
        m.gather(torch.tensor([64]).data_ptr(), 1, out.data_ptr())
    with pytest.raises(IndexError):
        m.gather(torch.tensor([-1]).data_ptr(), 1, out.data_ptr())
    with pytest.raises(ValueError):
        m.matmul(0, 1, out.data_ptr(), 0)
    blob = glyd._glyd.tensor_compress(w.view(torch.int16).numpy().tobytes(), 1, 32, 2, 1)
    with pytest.raises(glyd.Error):
        glyd._glyd.CodedMatrix(blob, 32, 32)  # the wrong shape
    with pytest.raises(glyd.Error):
        glyd._glyd.CodedMatrix(b"GLYT" + bytes(60), 64, 32)
    with pytest.raises(glyd.Error):
        glyd._glyd.CodedMatrix(blob[: len(blob) // 2], 64, 32)
    half = glyd._glyd.tensor_compress(w.to(torch.float16).view(torch.int16).numpy().tobytes(), 2, 32, 0, 1)
    with pytest.raises(glyd.Error):
        glyd._glyd.CodedMatrix(half, 64, 32)  # fp16: weights are bf16
    with pytest.raises(ValueError):
        glyd._glyd.CodedMatrix.compress(bytes(100), 64, 32)
    made = glyd._glyd.CodedMatrix.compress(w.view(torch.int16).numpy().tobytes(), 64, 32)
    assert made.layout == "fast" and made.equals(w.view(torch.int16).numpy().tobytes())
    assert not made.equals(bytes(64 * 32 * 2)) and not made.equals(b"")
    damaged = bytearray(blob)
    damaged[-10] ^= 0x40
    m = glyd._glyd.CodedMatrix(bytes(damaged), 64, 32)
    with pytest.raises(glyd.Error):
        m.verify()


# ---------------------------------------------------------------------------
# Loading: damage, bad input, clear refusals
# ---------------------------------------------------------------------------

def test_a_damaged_pack_is_refused_or_harmless(tmp_path):
    """One byte flipped anywhere in a pack: refused at open or at load, or
    (in padding) the model is the undamaged one. Never a wrong model."""
    packed = tmp_path / "m.glyd"
    glyd.pack(MODELS["qwen3"], packed, fast_layout=True)
    data = packed.read_bytes()
    ids = torch.arange(3, 19).reshape(1, 16)
    want = logits(glyd.from_pretrained(packed), ids)
    damaged = tmp_path / "damaged.glyd"
    refused = 0
    for at in range(1000, len(data), 3001):
        d = bytearray(data)
        d[at] ^= 0x10
        damaged.write_bytes(bytes(d))
        try:
            model = glyd.from_pretrained(damaged)
        except glyd.Error:
            refused += 1
            continue
        assert torch.equal(logits(model, ids), want), "byte %d flipped gave another model" % at
    assert refused > 0


def test_bad_sources_raise_clear_errors(tmp_path):
    with pytest.raises(glyd.Error, match="no such file"):
        glyd.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(glyd.Error, match="no .safetensors"):
        glyd.from_pretrained(tmp_path / "empty")
    with pytest.raises(glyd.Error, match="cuda"):
        glyd.from_pretrained(MODELS["qwen3"], device="cuda")
    with pytest.raises(glyd.Error, match="bf16"):
        glyd.from_pretrained(MODELS["qwen3"], dtype=torch.float32)
    # a tensor missing, one of the wrong shape, a header cut short
    for damage, match in (("drop", "lacks"), ("shape", "shape"), ("cut", "safetensors")):
        folder = tmp_path / damage
        shutil.copytree(MODELS["qwen3"], folder)
        st = folder / "model.safetensors"
        raw = st.read_bytes()
        (n,) = struct.unpack("<Q", raw[:8])
        import json

        header = json.loads(raw[8:8 + n])
        name = "model.layers.1.mlp.up_proj.weight"
        if damage == "drop":
            del header[name]
        elif damage == "shape":
            header[name]["shape"] = header[name]["shape"][::-1]
        if damage == "cut":
            st.write_bytes(raw[: 8 + n // 2])
        else:
            text = json.dumps(header).encode()
            text += b" " * (-len(text) % 8)
            st.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n:])
        with pytest.raises(glyd.Error, match=match):
            glyd.from_pretrained(folder)


def test_save_pretrained_refuses_other_models(tmp_path):
    with pytest.raises(glyd.Error):
        glyd.save_pretrained(reference(MODELS["qwen3"]), tmp_path / "x.glyd")


# ---------------------------------------------------------------------------
# fit
# ---------------------------------------------------------------------------

def test_fit_counts_weights_and_cache():
    f = glyd.fit(MODELS["qwen3"], memory="1MB", context=1000)
    # 2 layers x keys and values x 2 kv heads x 16 dims x 2 bytes
    assert f.kv_cache_bf16 == f.kv_cache_glyd == 2 * 2 * 2 * 16 * 2 * 1000
    model = glyd.from_pretrained(MODELS["qwen3"])
    held, bf16 = glyd.weight_memory(model)
    assert f.weights_bf16 == bf16 and f.weights_glyd == held
    assert f.total_glyd == held + f.kv_cache_glyd
    assert f.fits_glyd == (f.total_glyd <= 10**6) and f.fits_bf16 == (f.total_bf16 <= 10**6)
    assert f.max_context_glyd == (10**6 - held) // 256
    assert f.max_context_bf16 == (10**6 - bf16) // 256
    assert "KV cache, 1000 tokens" in str(f)


def test_fit_estimates_large_matrices_from_samples(tmp_path):
    from safetensors.torch import save_file

    shutil.copy(MODELS["qwen3"] / "config.json", tmp_path / "config.json")
    g = torch.Generator().manual_seed(5)
    w = (torch.randn(2048, 1024, generator=g) * 0.02).to(torch.bfloat16)
    save_file({"big.weight": w}, str(tmp_path / "model.safetensors"))
    bf16 = w.view(torch.int16).numpy()
    f = glyd.fit(tmp_path, memory="24GiB", context=0)
    exact = len(glyd._glyd.tensor_compress(bf16.tobytes(), 1, 1024, 2, 1))
    assert abs(f.weights_glyd - exact) <= 0.01 * exact
    assert f.memory == 24 * 2**30 and f.kv_cache_glyd == 0


def test_fit_reads_packed_models(tmp_path):
    packed = tmp_path / "m.glyd"
    glyd.pack(MODELS["qwen2"], packed)
    assert glyd.fit(packed).weights_glyd == glyd.fit(MODELS["qwen2"]).weights_glyd


@pytest.mark.parametrize("text,bytes_", [("24GB", 24 * 10**9), ("24 GiB", 24 * 2**30), ("512MB", 512 * 10**6),
                                         (1000, 1000), ("1.5gb", 1_500_000_000)])
def test_fit_reads_memory_sizes(text, bytes_):
    assert glyd.fit(MODELS["qwen3"], memory=text).memory == bytes_


@pytest.mark.parametrize("bad", ["", "lots", "-1GB", "24XB", 0])
def test_fit_refuses_bad_sizes(bad):
    with pytest.raises(ValueError):
        glyd.fit(MODELS["qwen3"], memory=bad)


def test_a_forked_child_runs_the_model():
    model = glyd.from_pretrained(MODELS["qwen3"])
    ids = torch.arange(3, 8).reshape(1, 5)
    want = logits(model, ids)  # the product threads exist now
    pid = os.fork()
    if pid == 0:
        os._exit(0 if torch.equal(logits(model, ids), want) else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_pack_in_use_stays_open(tmp_path):
    packed = tmp_path / "m.glyd"
    glyd.pack(MODELS["qwen3"], packed, fast_layout=True)
    model = glyd.from_pretrained(packed)
    with pytest.raises(BufferError):
        model.glyd_source.model.close()
    ids = torch.arange(3, 8).reshape(1, 5)
    assert torch.equal(logits(model, ids), logits(glyd.from_pretrained(MODELS["qwen3"]), ids))


def test_a_sharded_checkpoint_loads(tmp_path):
    from safetensors.torch import load_file, save_file

    source = MODELS["qwen3"]
    tensors = load_file(source / "model.safetensors")
    names = sorted(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for shard, part in shards.items():
        save_file({n: tensors[n] for n in part}, str(tmp_path / shard))
    import json

    index = {"metadata": {}, "weight_map": {n: s for s, part in shards.items() for n in part}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    shutil.copy(source / "config.json", tmp_path / "config.json")
    ids = torch.arange(3, 19).reshape(1, 16)
    assert torch.equal(logits(glyd.from_pretrained(tmp_path, exact=True), ids), logits(reference(source), ids))


def tiny_random_model(tmp_path, config):
    torch.manual_seed(11)
    model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    return tmp_path


@pytest.mark.parametrize("family", ["gemma3", "mistral"])
def test_other_families_in_exact_mode(tmp_path, family):
    """Families beyond the engine's: Gemma 3's embedding is a subclass that
    scales its rows, so it stays bf16 as it is; every plain Linear is coded."""
    if family == "gemma3":
        config = transformers.Gemma3TextConfig(
            vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, sliding_window=8, max_position_embeddings=128)
    else:
        config = transformers.MistralConfig(
            vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, sliding_window=8, max_position_embeddings=128)
    path = tiny_random_model(tmp_path, config)
    ref = reference(path)
    ids = prompt(ref, 20)
    model = glyd.from_pretrained(path, exact=True)
    assert torch.equal(logits(model, ids), logits(ref, ids))
    linears = [type(m).__name__ for m in model.modules() if "Linear" in type(m).__name__]
    if family == "gemma3":
        emb = model.model.embed_tokens
        assert type(emb).__name__ == "Gemma3TextScaledWordEmbedding" and emb.weight.dtype == torch.bfloat16
        # the output layer is tied to it: the same bf16 parameter
        assert model.lm_head.weight is emb.weight and linears.count("Linear") == 1
    else:
        assert "Linear" not in linears
    held, bf16 = glyd.weight_memory(model)
    assert held < bf16

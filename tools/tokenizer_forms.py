#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Makes the tokenizer.json files of the forms that Llama 2, Mistral,
Gemma 3 and Llama 3 ship, trained small (about 2,000 merges) over the
shared corpus with the `tokenizers` library, and the reference ids and
decoded texts that the library gives for corpus lines, log lines and
hostile strings.

Run by hand (it needs tokenizers from PyPI; it never runs in CI); its
output is committed under tests/data/tokenizers:

    python3 tools/tokenizer_forms.py ../shared/corpus tests/data/tokenizers \
        [tests/fuzz/seeds-tokenizer]

With a third folder, it also writes there a fuzzing seed of each form: the
tokenizer cut to its first 400 ids (and the merges among them), a NUL,
then a text. Each form is a folder with tokenizer.json; reference.json holds, for each
form, a list of {"text", "ids", "decoded"} (encoded without special tokens
added around the text, decoded without skipping any).
"""
import json
import os
import random
import sys

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

SP = "\u2581"


def corpus_lines(corpus):
    lines = []
    for name in ["text/alice29.txt", "text/lcet10.txt", "text/plrabn12.txt", "text/asyoulik.txt"]:
        with open(os.path.join(corpus, name), encoding="latin-1") as f:
            lines += [l.rstrip("\n") for l in f]
    return [l for l in lines if l.strip()]


def log_lines(corpus):
    out = []
    for name in sorted(os.listdir(os.path.join(corpus, "logs"))):
        with open(os.path.join(corpus, "logs", name), encoding="utf-8", errors="replace") as f:
            out += [l.rstrip("\n") for l in f][:400]
    return out


def sentencepiece_bpe(lines, vocab_size):
    """A BPE in SentencePiece's layout: <unk> <s> </s>, the 256 byte tokens
    <0x00>..<0xFF>, then the learned pieces (trained with Metaspace words,
    as SentencePiece splits them)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[], show_progress=False,
                                  limit_alphabet=300)
    tok.train_from_iterator(lines, trainer)
    d = json.loads(tok.to_str())
    learned = sorted(d["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in learned:
        if piece not in vocab:
            vocab[piece] = len(vocab)
    d["model"]["vocab"] = vocab
    return d


def added(content, id_, special=True, lstrip=False, rstrip=False, normalized=False, single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def sp_added(vocab):
    return [added("<unk>", 0), added("<s>", 1), added("</s>", 2)]


def llama2(base):
    """Llama 2 and Mistral v0.1 (transformers' legacy conversion)."""
    d = json.loads(json.dumps(base))
    d["added_tokens"] = sp_added(d["model"]["vocab"])
    d["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": SP},
        {"type": "Replace", "pattern": {"String": " "}, "content": SP}]}
    d["pre_tokenizer"] = None
    d["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": SP}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return d


def gemma3(base):
    """Gemma 3: a Replace normalizer, no pre-tokenizer, nothing prepended;
    its special tokens and a few added tokens that are not special."""
    d = json.loads(json.dumps(base))
    v = d["model"]["vocab"]
    # Gemma's ids: <pad> 0, <eos> 1, <bos> 2, <unk> 3; here <unk> <s> </s>
    # keep their places and the rest follow the vocabulary
    extra = ["<start_of_turn>", "<end_of_turn>", "<mask>", "[multimodal]"]
    toks = sp_added(v)
    for s in extra:
        v[s] = len(v)
        toks.append(added(s, v[s]))
    # not special, matched before the normalizer as Gemma's tab and
    # newline runs and HTML tags are
    for s in ["\t\t", "\n\n\n", "<table>"]:
        v[s] = len(v)
        toks.append(added(s, v[s], special=False))
    d["added_tokens"] = toks
    d["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": SP}
    d["pre_tokenizer"] = None
    d["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": SP}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    return d


def metaspace(base, scheme, split):
    """Mistral's later conversions: no normalizer, the Metaspace
    pre-tokenizer and decoder."""
    d = json.loads(json.dumps(base))
    d["added_tokens"] = sp_added(d["model"]["vocab"])
    d["normalizer"] = None
    d["pre_tokenizer"] = {"type": "Metaspace", "replacement": SP, "prepend_scheme": scheme, "split": split}
    d["decoder"] = {"type": "Metaspace", "replacement": SP, "prepend_scheme": scheme, "split": split}
    return d


def flags(base):
    """Added tokens with each flag: lstrip, rstrip, single_word, normalized,
    not special, over the Llama 2 form."""
    d = llama2(base)
    v = d["model"]["vocab"]
    specs = [("<mask>", dict(lstrip=True)), ("<sep>", dict(rstrip=True)),
             ("<both>", dict(lstrip=True, rstrip=True, special=False)),
             ("cat", dict(single_word=True, special=False)),
             ("dog", dict(single_word=True, special=False, normalized=True)),
             ("the end", dict(special=False, normalized=True)),
             ("<|tool|>", dict(special=False))]
    for s, kw in specs:
        if s not in v:
            v[s] = len(v)
        d["added_tokens"].append(added(s, v[s], **kw))
    return d


LLAMA3_PATTERN = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                  "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def llama3(lines, vocab_size):
    """Llama 3: byte-level BPE with its own split pattern, no normalizer,
    ignore_merges, 256 special tokens after the vocabulary."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(pattern=__import__("tokenizers").Regex(LLAMA3_PATTERN), behavior="isolated",
                             invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer)
    d = json.loads(tok.to_str())
    d["normalizer"] = None
    d["model"]["ignore_merges"] = True
    d["model"]["fuse_unk"] = False
    d["model"]["byte_fallback"] = False
    v = d["model"]["vocab"]
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
             "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
             "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
    names += ["<|reserved_special_token_%d|>" % i for i in range(3, 248)]
    n = len(v)
    d["added_tokens"] = [added(s, n + i) for i, s in enumerate(names)]
    return d


def hostile(rng):
    s = ["", " ", "  ", "   ", "\t", "\n", "\r\n", " \n ", SP, SP * 3, SP + " " + SP, " " + SP * 2 + " ",
         "<0x41>", "<0x4>", "<0xZZ>", "<0x41><0x42>", "<0x>", "<<0x41>>", "<unk>", "<s>", "</s>", "<s><s>",
         " <s> ", "a<s>b", "<s> hello", "hello </s>", "<|begin_of_text|>Hi<|eot_id|>", "<|eot_id|> x",
         "\U0001F600", "\U0001F600" * 5, "family \U0001F468\u200D\U0001F469\u200D\U0001F467 done",
         "e\u0301", "a\u0300\u0301\u0302\u0303\u0304b", "\u0301start", "Cafe\u0301 and caf\u00e9",
         "x" * 3000, "supercalifragilisticexpialidocious" * 20, "\x00\x01\x02\x1b[31mred\x1b[0m\x7f",
         "\u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e", "\u0645\u0631\u062d\u0628\u0627", "\ud55c\uad6d\uc5b4",
         "\u00a0\u2003\u3000 wide spaces", "tab\tsep\tvalues", "\ufeffBOM", "\uffff\U0010FFFF",
         "ÅΩ≈ç√∫", "  leading and trailing  ", "line one\nline two\n\nline four\n\n\n",
         "1234567890 3.14159 1e-9", "don't I'm we'll they've she'd IT'S", "\t\tindented\t\t",
         "<mask>", "a <mask> b", "x  <mask>  y", "<sep>  z", "w <both>  v", "cat", "a cat sat", "concat cats",
         "_cat_", "cat.", "dog", "hotdog dog", "the end", "this is the end of it", "the  end",
         "<|tool|>call", "<start_of_turn>user\nHi<end_of_turn>\n", "<table>\t\t\n\n\n", "[multimodal]",
         "\t\t\t\t\t", "\n\n\n\n\n\n\n"]
    alphabet = [" ", SP, "a", "\u00e9", "\U0001F600", "\n", "<", ">", "0x", "\u0301", "\t", "\u4e2d", "\x00"]
    for _ in range(30):
        s.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
    return s


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    rng = random.Random(7)
    lines = corpus_lines(corpus)
    logs = log_lines(corpus)
    train = lines + logs
    base = sentencepiece_bpe(train, 2300)
    forms = {
        "llama2": llama2(base),
        "gemma3": gemma3(base),
        "metaspace-first": metaspace(base, "first", False),
        "metaspace-always-split": metaspace(base, "always", True),
        "metaspace-never": metaspace(base, "never", False),
        "flags": flags(base),
        "llama3": llama3(train, 2300),
    }
    texts = rng.sample(lines, 60) + rng.sample(logs, 40) + hostile(rng)
    texts.append("\n".join(rng.sample(lines, 40)))
    ref = {}
    for name, d in forms.items():
        os.makedirs(os.path.join(out, name), exist_ok=True)
        s = json.dumps(d, ensure_ascii=False, indent=None, separators=(",", ":"))
        tok = Tokenizer.from_str(s)  # the library must read it as written
        with open(os.path.join(out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(s)
        cases = []
        for t in texts:
            ids = tok.encode(t, add_special_tokens=False).ids
            cases.append({"text": t, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
        ref[name] = cases
    with open(os.path.join(out, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, separators=(",", ":"))
    if len(sys.argv) > 3:
        seed_text = "Hi <s> caf\u00e9 \U0001F600\u2581\u2581 the end, a cat <mask> x <|eot_id|>\n\n\n"
        for name, d in forms.items():
            d = json.loads(json.dumps(d))
            keep = {k: v for k, v in d["model"]["vocab"].items() if v < 400}
            keep.update({a["content"]: a["id"] for a in d["added_tokens"] if a["id"] < 400})
            d["model"]["vocab"] = keep
            d["model"]["merges"] = [m for m in d["model"]["merges"]
                                    if all(p in keep for p in m + ["".join(m)])]
            d["added_tokens"] = [a for a in d["added_tokens"] if a["id"] < 400][:8] + \
                [dict(a, id=keep.get(a["content"], 399)) for a in d["added_tokens"] if a["id"] >= 400][:8]
            s = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
            Tokenizer.from_str(s)
            with open(os.path.join(sys.argv[3], "form-%s.json" % name), "wb") as f:
                f.write(s.encode() + b"\0" + seed_text.encode())


if __name__ == "__main__":
    main()

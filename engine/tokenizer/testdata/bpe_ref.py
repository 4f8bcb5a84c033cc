#!/usr/bin/env python3
"""Independent reference for tokenizer_test.go's known ids: a textbook BPE
(lowest-rank pair first, as Hugging Face tokenizers does) written without
looking at the Go code. Pre-tokenization is done by hand in the cases
below (SentencePiece-style: one piece; byte-level: the words are given).

usage: bpe_ref.py   (from engine/tokenizer)"""
import json

def bpe(word, vocab, ranks):
    syms = list(word)
    while len(syms) > 1:
        pairs = [(ranks.get((a, b), 1 << 60), i) for i, (a, b) in enumerate(zip(syms, syms[1:]))]
        r, i = min(pairs)
        if r == 1 << 60:
            break
        syms = syms[:i] + [syms[i] + syms[i + 1]] + syms[i + 2:]
    return [vocab[s] for s in syms]

def load(path):
    t = json.load(open(path))
    m = t["model"]
    merges = [tuple(x.split(" ", 1)) if isinstance(x, str) else tuple(x) for x in m["merges"]]
    return m["vocab"], {p: i for i, p in enumerate(merges)}

def byte_map():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}

v, r = load("../../testdata/models/tinystories-656k/tokenizer.json")
for text in ["Once upon a time", "The little dog was happy."]:
    print("tinystories", repr(text), [1] + bpe("▁" + text.replace(" ", "▁"), v, r))

v, r = load("../../testdata/models/qwen3-tokenizer/tokenizer.json")
bm = byte_map()
for words in [["Hello", " world", "!"], ["The", " quick", " brown", " fox"], ["naïve", " café"]]:
    ids = []
    for w in words:
        ids += bpe("".join(bm[b] for b in w.encode()), v, r)
    print("qwen3", repr("".join(words)), ids)

"""Copy a GGUF, adding a placeholder SentencePiece vocabulary.

The benchmark model (engine/cpu/bench_test.go) carries no tokenizer, and
llama.cpp refuses a GGUF without one ("key not found in model:
tokenizer.ggml.model"). This adds tokenizer.ggml.model = "llama", one
token per id of the model's vocabulary (<unk>, <s>, </s>, the 256 byte
tokens, then t259, t260, ...) and their types; tensors and every other
key are copied unchanged (the data section is re-aligned, tensor offsets
are relative to it). The vocabulary size is token_embd.weight's second
dimension unless given. Usage: addvocab.py IN.gguf OUT.gguf [VOCAB_SIZE]
"""
import struct
import sys

if len(sys.argv) not in (3, 4):
    sys.exit("usage: addvocab.py IN.gguf OUT.gguf [VOCAB_SIZE]")
src, dst = sys.argv[1], sys.argv[2]
nvocab = int(sys.argv[3]) if len(sys.argv) == 4 else None
f = open(src, "rb")


def rd(fmt):
    return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))


def rstr():
    return f.read(rd("Q")[0])


SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip(t):
    if t == 8:
        rstr()
    elif t == 9:
        et, n = rd("IQ")
        for _ in range(n):
            skip(et)
    else:
        f.read(SIZES[t])


magic, (version,), (ntensors, nkv) = f.read(4), rd("I"), rd("QQ")
if magic != b"GGUF":
    sys.exit(f"{src}: not a GGUF file")
kv_start, align = f.tell(), 32
for _ in range(nkv):
    key, (t,) = rstr(), rd("I")
    if key.startswith(b"tokenizer.ggml.") and key not in (b"tokenizer.ggml.bos_token_id", b"tokenizer.ggml.eos_token_id"):
        sys.exit(f"{src} already has {key.decode()}")
    if key == b"general.alignment":
        (align,) = rd("I")
    else:
        skip(t)
kv_end = f.tell()
for _ in range(ntensors):
    name, (nd,) = rstr(), rd("I")
    ne = rd("%dQ" % nd)
    f.read(4 + 8)
    if name == b"token_embd.weight" and nvocab is None and nd == 2:
        nvocab = ne[1]
infos_end = f.tell()
if nvocab is None:
    sys.exit(f"{src} has no 2-D token_embd.weight to take the vocabulary size from; give VOCAB_SIZE")
if nvocab < 259:
    sys.exit(f"{src}: vocabulary of {nvocab} is smaller than the 259 fixed tokens; give a larger VOCAB_SIZE")
data_start = -(-infos_end // align) * align


def kstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)]
tokens += ["t%d" % i for i in range(len(tokens), nvocab)]
types = [2, 3, 3] + [6] * 256 + [1] * (nvocab - 259)  # unknown, control, byte, normal
extra = kstr("tokenizer.ggml.model") + struct.pack("<I", 8) + kstr("llama")
extra += kstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, nvocab) + b"".join(kstr(t) for t in tokens)
extra += kstr("tokenizer.ggml.token_type") + struct.pack("<IIQ", 9, 5, nvocab) + struct.pack("<%di" % nvocab, *types)

f.seek(kv_start)
kvs, infos = f.read(kv_end - kv_start), f.read(infos_end - kv_end)
with open(dst + ".tmp", "wb") as out:
    head = magic + struct.pack("<IQQ", version, ntensors, nkv + 3) + kvs + extra + infos
    out.write(head + b"\0" * (-len(head) % align))
    f.seek(data_start)
    while chunk := f.read(1 << 24):
        out.write(chunk)
import os

os.replace(dst + ".tmp", dst)

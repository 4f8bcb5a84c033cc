#!/usr/bin/python3
"""train-ternary.py: a small BitNet b1.58 model trained ternary from the start
(quantization-aware), as a fixture for the perplexity of every packed format
(issue 21, docs/engine.md "Perplexity of the packed formats").

Runs with Debian's python3-torch (1.13) and python3-numpy: `make ternary-fixture`.

1. Corpus: stories sampled from the trained TinyStories-656K teacher in
   testdata/models/tinystories-656k (its F32 safetensors parsed by hand, its
   llama forward in torch with a KV cache, temperature sampling, its
   SentencePiece-style byte-fallback vocabulary decoded to text). ASCII only.
   The eval text is generated with a different seed.
2. Student: BitNet as edgectl's engine runs it (engine/cpu/forward.go):
   RMSNorm, q/k/v, rotate-half RoPE, GQA, attn_sub_norm before o_proj,
   relu²(gate)·up, ffn_sub_norm before down_proj, tied float head. Every
   BitLinear sees int8 activations (per token absmax, 127 levels) and
   ternary weights, trained with straight-through estimators:
     absmean: w_q = clamp(round(w / mean|w|), -1, 1) · mean|w| per tensor;
     sherry:  in every group of 4 consecutive weights along K the smallest
              |w| is 0, the others sign(w) · α (α = mean |kept w| per tensor),
              the 3:4 projection sherry/sherry.go packs.
   Byte-level vocabulary: 256 bytes (GPT-2's byte-to-unicode names), one
   merge ("he") + <|begin_of_text|> + <|end_of_text|>, so .htok can hold it.
3. Output (--out): config.json (BitNetForCausalLM), model.safetensors
   (BF16; absmean: the master weights, which edgectl ternarizes at load and
   `quant pack` ternarizes with the same rule; sherry: the projected ternary
   weights, which every packing keeps exactly), tokenizer.json,
   tokenizer_config.json, generation_config.json, eval.txt, and
   reference.json: the eval text's perplexity from a float64 forward pass
   with the engine's quantization semantics (weights ternarized from the
   written BF16 values as quant/ternary.go does; activations int8 absmax,
   rounded half away from zero), BOS then the text's tokens, windows of
   context−1 tokens each behind BOS (bench/perplexity.go's Windows), for
   the whole text and for its first stories (the Go test's prefix).
   --reference-only recomputes reference.json from the files.

Deterministic: fixed seeds, torch.use_deterministic_algorithms, one torch
thread and OpenBLAS's two for the products (Debian's reference BLAS, which
python3-torch links by default, ran 10x slower: `make ternary-fixture`
installs libopenblas0-pthread).
"""
import argparse
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F

TEACHER = "testdata/models/tinystories-656k"
# Byte-level vocabulary: ids 0–255 are the bytes, 256 the one merge "h"+"e"
# (edgectl's GGUF tokenizer refuses a gpt2 vocabulary with no merges, and
# llama.cpp needs the merges key; h and e are letters, so every pre-tokenizer
# regex involved keeps an adjacent pair in one piece and the merge applies
# to every "he" in the text), 257 BOS, 258 EOS.
HE, BOS, EOS, VOCAB = 256, 257, 258, 259


def tokenize(text):
    """The tokenizer's ids of text: its bytes, each "he" as one token."""
    b, ids, i = text.encode(), [], 0
    while i < len(b):
        if b[i:i + 2] == b"he":
            ids.append(HE)
            i += 2
        else:
            ids.append(b[i])
            i += 1
    return ids


# ---------------------------------------------------------------- safetensors

def read_safetensors(path):
    """name -> float32 array, for F32/BF16 files (8-byte header length, JSON, data)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    base, out = 8 + n, {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        buf = raw[base + a:base + b]
        if t["dtype"] == "F32":
            v = np.frombuffer(buf, dtype="<f4")
        elif t["dtype"] == "BF16":
            v = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: tensor {name} is {t['dtype']}; this script reads F32 and BF16")
        out[name] = v.reshape(t["shape"]).copy()
    return out


def to_bf16_bits(x):
    """float32 -> bf16 bit patterns, rounded to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def write_safetensors_bf16(path, tensors):
    names = sorted(tensors)
    hdr, off, blobs = {}, 0, []
    for n in names:
        b = to_bf16_bits(tensors[n]).tobytes()
        hdr[n] = {"dtype": "BF16", "shape": list(tensors[n].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    hdr["__metadata__"] = {"format": "pt"}
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- shared math

def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(hd, theta, T, dtype):
    freqs = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * freqs[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def rope(x, cos, sin):
    """rotate-half RoPE on [..., T, hd] with tables [T, hd/2]."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


# ---------------------------------------------------------------- teacher

class Teacher:
    """TinyStories-656K (llama) in float32 with a KV cache, for sampling."""

    def __init__(self, d):
        self.cfg = json.load(open(os.path.join(d, "config.json")))
        self.w = {k: torch.from_numpy(v) for k, v in read_safetensors(os.path.join(d, "model.safetensors")).items()}
        if "model.embed_tokens.weight" not in self.w:  # tied, stored once as lm_head
            self.w["model.embed_tokens.weight"] = self.w["lm_head.weight"]
        tok = json.load(open(os.path.join(d, "tokenizer.json")))
        self.pieces = {i: p for p, i in tok["model"]["vocab"].items()}
        for a in tok["added_tokens"]:
            self.pieces[a["id"]] = a["content"]
        c = self.cfg
        self.H, self.L, self.nh, self.kv = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
        self.hd, self.eps = self.H // self.nh, c["rms_norm_eps"]
        self.ctx = c["max_position_embeddings"]
        self.cos, self.sin = rope_tables(self.hd, c["rope_theta"], self.ctx, torch.float32)
        self.head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])

    def sample(self, B, T, temp, gen):
        """B sequences of up to T tokens after BOS, sampled at temperature temp."""
        W, L = self.w, self.L
        kc = torch.zeros(L, B, self.kv, T + 1, self.hd)
        vc = torch.zeros(L, B, self.kv, T + 1, self.hd)
        tok = torch.full((B,), self.cfg["bos_token_id"], dtype=torch.long)
        out = []
        done = torch.zeros(B, dtype=torch.bool)
        for pos in range(T):
            x = W["model.embed_tokens.weight"][tok]
            cos, sin = self.cos[pos:pos + 1], self.sin[pos:pos + 1]
            for l in range(L):
                p = f"model.layers.{l}."
                h = rmsnorm(x, W[p + "input_layernorm.weight"], self.eps)
                # query heads grouped by their KV head: [B, kv, heads/kv, hd]
                q = (h @ W[p + "self_attn.q_proj.weight"].T).view(B, self.kv, self.nh // self.kv, self.hd)
                k = (h @ W[p + "self_attn.k_proj.weight"].T).view(B, self.kv, 1, self.hd)
                v = (h @ W[p + "self_attn.v_proj.weight"].T).view(B, self.kv, 1, self.hd)
                q, k = rope(q, cos, sin), rope(k, cos, sin)
                kc[l, :, :, pos:pos + 1], vc[l, :, :, pos:pos + 1] = k, v
                a = torch.softmax(q @ kc[l, :, :, :pos + 1].transpose(-1, -2) / math.sqrt(self.hd), dim=-1) @ vc[l, :, :, :pos + 1]
                x = x + a.reshape(B, self.H) @ W[p + "self_attn.o_proj.weight"].T
                h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], self.eps)
                g = F.silu(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)
                x = x + g @ W[p + "mlp.down_proj.weight"].T
            logits = rmsnorm(x, W["model.norm.weight"], self.eps) @ self.head.T
            tok = torch.multinomial(torch.softmax(logits / temp, dim=-1), 1, generator=gen)[:, 0]
            tok = torch.where(done, torch.full_like(tok, self.cfg["eos_token_id"]), tok)
            out.append(tok)
            done |= tok == self.cfg["eos_token_id"]
            if bool(done.all()):
                break
        return torch.stack(out, dim=1).tolist()

    def decode(self, ids):
        """Token ids to text: ▁ is a space, <0xNN> a byte; stops at EOS or any
        piece spelling a special token; the leading space is dropped."""
        b = bytearray()
        for i in ids:
            if i == self.cfg["eos_token_id"]:
                break
            p = self.pieces.get(i, "")
            if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
                b.append(int(p[3:5], 16))
                continue
            if "<|" in p or i < 3:
                break
            b += p.replace("\u2581", " ").encode()
        s = b.decode("utf-8", "ignore")
        return s[1:] if s.startswith(" ") else s


def corpus(teacher, nbytes, seed, temp):
    """Stories until nbytes of ASCII text, joined by blank lines."""
    gen = torch.Generator().manual_seed(seed)
    stories, size = [], 0
    while size < nbytes:
        for ids in teacher.sample(512, 300, temp, gen):
            if teacher.cfg["eos_token_id"] not in ids:
                continue  # cut off at 300 tokens: keep whole stories only
            s = teacher.decode(ids).strip()
            if len(s) < 40 or not s.isascii() or not all(ch == "\n" or ch.isprintable() for ch in s):
                continue
            stories.append(s)
            size += len(s) + 2
            if size >= nbytes:
                break
    return "\n\n".join(stories) + "\n"


# ---------------------------------------------------------------- student

def shapes(c):
    """Each projection's [rows, K] by short name."""
    H, Fd, hd = c["hidden"], c["ffn"], c["head_dim"]
    q, kv = c["heads"] * hd, c["kv_heads"] * hd
    per = {"q": (q, H), "k": (kv, H), "v": (kv, H), "o": (H, q), "gate": (Fd, H), "up": (Fd, H), "down": (H, Fd)}
    return per


HF = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
      "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
NORMS = {"in": ("input_layernorm", "hidden"), "post": ("post_attention_layernorm", "hidden"),
         "attn_sub": ("self_attn.attn_sub_norm", "hidden"), "ffn_sub": ("mlp.ffn_sub_norm", "ffn")}


def init_params(c, gen):
    P = {"embed": torch.randn(VOCAB, c["hidden"], generator=gen) * 0.02, "norm": torch.ones(c["hidden"])}
    for l in range(c["layers"]):
        for k, (r, kk) in shapes(c).items():
            P[f"{l}.{k}"] = torch.randn(r, kk, generator=gen) / math.sqrt(kk)
        for k, (_, dim) in NORMS.items():
            P[f"{l}.{k}"] = torch.ones(c["hidden"] if dim == "hidden" else c["ffn"])
    for v in P.values():
        v.requires_grad_(True)
    return P


def ternary_absmean(w):
    s = w.abs().mean().clamp(min=1e-5)
    return (w / s).round().clamp(-1, 1) * s


def ternary_sherry(w):
    """The 3:4 projection: per group of 4 along K, zero the smallest |w| (lowest
    lane on ties), the others sign(w)·α with +1 for zeros, α = mean |kept w|."""
    r, k = w.shape
    g = w.reshape(r, k // 4, 4)
    keep = torch.ones_like(g).scatter_(-1, g.abs().argmin(-1, keepdim=True), 0.0)
    alpha = (g.abs() * keep).sum() / keep.sum()
    sign = torch.where(g >= 0, 1.0, -1.0)
    return (sign * keep * alpha.clamp(min=1e-5)).reshape(r, k)


class ActQuant(torch.autograd.Function):
    """int8 per token absmax, as the engine's acts.quantize (the values, not
    the codes); the backward pass is the straight-through identity."""

    @staticmethod
    def forward(ctx, x):
        m = x.abs().amax(-1, keepdim=True).clamp_(min=1e-5)
        return (x * (127 / m)).round_().clamp_(-127, 127).mul_(m / 127)

    @staticmethod
    def backward(ctx, g):
        return g


def ternary_ste(w, tern):
    return w + (tern(w) - w).detach()


def student_forward(P, c, ids, tern, cos, sin):
    """Logits [B, T, V] of a batch of sequences (QAT forward, float32). q, k
    and v share one quantized input and one product, as gate and up do."""
    B, T = ids.shape
    nh, kv, hd, eps = c["heads"], c["kv_heads"], c["head_dim"], c["eps"]
    x = P["embed"][ids]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(c["layers"]):
        p = f"{l}."
        h = ActQuant.apply(rmsnorm(x, P[p + "in"], eps))
        qkv = h @ torch.cat([ternary_ste(P[p + k], tern) for k in ("q", "k", "v")]).T
        q, k, v = qkv.split([nh * hd, kv * hd, kv * hd], dim=-1)
        q = q.reshape(B, T, nh, hd).transpose(1, 2)
        k = k.reshape(B, T, kv, hd).transpose(1, 2)
        v = v.reshape(B, T, kv, hd).transpose(1, 2)
        q, k = rope(q, cos[:T], sin[:T]), rope(k, cos[:T], sin[:T])
        k, v = k.repeat_interleave(nh // kv, dim=1), v.repeat_interleave(nh // kv, dim=1)
        a = torch.softmax(torch.baddbmm(mask.expand(B * nh, T, T), q.reshape(B * nh, T, hd),
                                        k.reshape(B * nh, T, hd).transpose(1, 2), alpha=1 / math.sqrt(hd)), dim=-1)
        a = (a @ v.reshape(B * nh, T, hd)).reshape(B, nh, T, hd)
        a = ActQuant.apply(rmsnorm(a.transpose(1, 2).reshape(B, T, nh * hd), P[p + "attn_sub"], eps))
        x = x + a @ ternary_ste(P[p + "o"], tern).T
        h = ActQuant.apply(rmsnorm(x, P[p + "post"], eps))
        g, u = (h @ torch.cat([ternary_ste(P[p + "gate"], tern), ternary_ste(P[p + "up"], tern)]).T).chunk(2, dim=-1)
        g = ActQuant.apply(rmsnorm(torch.relu(g).square() * u, P[p + "ffn_sub"], eps))
        x = x + g @ ternary_ste(P[p + "down"], tern).T
    return rmsnorm(x, P["norm"], eps) @ P["embed"].T


def train(c, text, steps, batch, lr, seed, tern, log):
    gen = torch.Generator().manual_seed(seed)
    P = init_params(c, gen)
    data = torch.tensor(tokenize(text), dtype=torch.long)
    T = c["ctx"]
    cos, sin = rope_tables(c["head_dim"], c["theta"], T, torch.float32)
    decay = [v for k, v in P.items() if v.dim() == 2 and k != "embed"]
    rest = [v for k, v in P.items() if not (v.dim() == 2 and k != "embed")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": rest, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95))
    warm = max(1, steps // 20)
    t0 = time.time()
    for step in range(steps):
        f = min(1.0, (step + 1) / warm) * 0.5 * (1 + math.cos(math.pi * step / steps))
        for g in opt.param_groups:
            g["lr"] = lr * max(f, 0.02)
        starts = torch.randint(0, len(data) - T, (batch,), generator=gen)
        chunk = torch.stack([data[s:s + T] for s in starts.tolist()])
        inp = torch.cat([torch.full((batch, 1), BOS, dtype=torch.long), chunk[:, :-1]], dim=1)
        logits = student_forward(P, c, inp, tern, cos, sin)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), chunk.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(P.values()), 1.0)
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            log(f"step {step}/{steps}: loss {loss.item():.4f} nats/byte ({time.time() - t0:.0f}s)")
    return {k: v.detach() for k, v in P.items()}


# ---------------------------------------------------------------- export

def export_tensors(P, c, variant):
    """HF names -> float32 arrays as written (before BF16 rounding). absmean:
    the master weights; sherry: the 3:4-projected ternary weights, α rounded
    to BF16 first so that every row is exactly {−α, 0, +α} once written."""
    out = {"model.embed_tokens.weight": P["embed"].numpy(), "model.norm.weight": P["norm"].numpy()}
    for l in range(c["layers"]):
        pre = f"model.layers.{l}."
        for k in shapes(c):
            w = P[f"{l}.{k}"]
            if variant == "sherry":
                q = ternary_sherry(w)
                alpha = q.abs().max().item()
                a16 = (to_bf16_bits(np.float32([alpha])).astype(np.uint32) << 16).view(np.float32)[0]
                w = torch.sign(q) * float(a16)
            out[pre + HF[k] + ".weight"] = w.numpy()
        for k, (name, _) in NORMS.items():
            out[pre + name + ".weight"] = P[f"{l}.{k}"].numpy()
    return out


def byte_names():
    """GPT-2's byte-to-unicode table: printable Latin-1 bytes name themselves,
    the others map to U+0100 upward in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    names, n = {}, 0
    for b in range(256):
        if b in keep:
            names[b] = chr(b)
        else:
            names[b] = chr(256 + n)
            n += 1
    return names


def write_checkpoint(out, tensors, c):
    os.makedirs(out, exist_ok=True)
    cfg = {
        "architectures": ["BitNetForCausalLM"], "model_type": "bitnet",
        "hidden_size": c["hidden"], "intermediate_size": c["ffn"], "num_hidden_layers": c["layers"],
        "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"], "head_dim": c["head_dim"],
        "vocab_size": VOCAB, "max_position_embeddings": c["ctx"], "rms_norm_eps": c["eps"],
        "rope_theta": c["theta"], "hidden_act": "relu2", "attention_bias": False,
        "tie_word_embeddings": True, "bos_token_id": BOS, "eos_token_id": EOS, "torch_dtype": "bfloat16",
    }
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    json.dump({"bos_token_id": BOS, "eos_token_id": EOS}, open(os.path.join(out, "generation_config.json"), "w"), indent=2)
    names = byte_names()
    vocab = {names[b]: b for b in range(256)}
    vocab["he"] = HE
    special = [{"id": BOS, "content": "<|begin_of_text|>"}, {"id": EOS, "content": "<|end_of_text|>"}]
    for s in special:
        vocab[s["content"]] = s["id"]
        s.update({"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special, "normalizer": None,
           "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                     "vocab": vocab, "merges": ["h e"]}}
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "add_bos_token": True,
               "add_eos_token": False, "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": c["ctx"],
               "clean_up_tokenization_spaces": False}, open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), tensors)


# ---------------------------------------------------------------- float64 reference

def go_ternarize(w):
    """codes, scale per row as quant's --ternarize auto computes them on the
    float32 values: rows already {−α, 0, +α} keep α; the others share the
    tensor's absmean s = float32(Σ_rows float64(Σ|w| in float32) / n) and get
    clamp(round(w·float32(1/s))) with the product rounded to float32."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    a = np.abs(w)
    rowsum = np.cumsum(a, axis=1, dtype=np.float32)[:, -1]
    s = np.float32(max(float(np.sum(rowsum.astype(np.float64))) / w.size, 1e-5))
    inv = np.float32(1) / s
    x = w * inv
    codes = (x > 0.5).astype(np.int8) - (x < -0.5).astype(np.int8)
    scales = np.full(w.shape[0], s, dtype=np.float64)
    for r in range(w.shape[0]):
        nz = a[r][a[r] != 0]
        if nz.size == 0 or np.all(nz == nz[0]):
            codes[r] = np.sign(w[r]).astype(np.int8)
            scales[r] = float(nz[0]) if nz.size else 0.0
    return codes, scales


def reference_perplexity(out, c, ids):
    """exp(mean −log p) of ids (the text's tokens) in float64: windows of
    ctx−1 tokens, each behind BOS (bench/perplexity.go's Windows rule)."""
    W = {k: v for k, v in read_safetensors(os.path.join(out, "model.safetensors")).items()}
    d = torch.float64
    lin = {}
    for name, v in W.items():
        if name.endswith("_proj.weight"):
            codes, scales = go_ternarize(v)
            lin[name] = (torch.from_numpy(codes.astype(np.float64)), torch.from_numpy(scales))
    T = {k: torch.from_numpy(v.astype(np.float64)) for k, v in W.items() if not k.endswith("_proj.weight")}

    def bl(x, name):
        codes, scales = lin[name]
        m = x.abs().amax(-1, keepdim=True).clamp(min=1e-5)
        y = x * (127 / m)
        q = (torch.sign(y) * torch.floor(y.abs() + 0.5)).clamp(-127, 127)  # half away from zero
        return (q @ codes.T) * scales * (m / 127)

    nh, kv, hd, eps = c["heads"], c["kv_heads"], c["head_dim"], c["eps"]
    cos, sin = rope_tables(hd, c["theta"], c["ctx"], d)
    total, n = 0.0, 0
    for s in range(0, len(ids), c["ctx"] - 1):
        win = ids[s:s + c["ctx"] - 1]
        seq = torch.tensor([BOS] + win)
        L = len(seq)
        x = T["model.embed_tokens.weight"][seq]
        mask = torch.full((L, L), float("-inf"), dtype=d).triu(1)
        for l in range(c["layers"]):
            p = f"model.layers.{l}."
            h = rmsnorm(x, T[p + "input_layernorm.weight"], eps)
            q = bl(h, p + "self_attn.q_proj.weight").view(L, nh, hd).transpose(0, 1)
            k = bl(h, p + "self_attn.k_proj.weight").view(L, kv, hd).transpose(0, 1)
            v = bl(h, p + "self_attn.v_proj.weight").view(L, kv, hd).transpose(0, 1)
            q, k = rope(q, cos[:L], sin[:L]), rope(k, cos[:L], sin[:L])
            k, v = k.repeat_interleave(nh // kv, dim=0), v.repeat_interleave(nh // kv, dim=0)
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + mask, dim=-1) @ v
            a = rmsnorm(a.transpose(0, 1).reshape(L, nh * hd), T[p + "self_attn.attn_sub_norm.weight"], eps)
            x = x + bl(a, p + "self_attn.o_proj.weight")
            h = rmsnorm(x, T[p + "post_attention_layernorm.weight"], eps)
            g = torch.relu(bl(h, p + "mlp.gate_proj.weight")).square() * bl(h, p + "mlp.up_proj.weight")
            x = x + bl(rmsnorm(g, T[p + "mlp.ffn_sub_norm.weight"], eps), p + "mlp.down_proj.weight")
        logits = rmsnorm(x, T["model.norm.weight"], eps) @ T["model.embed_tokens.weight"].T
        lp = torch.log_softmax(logits[:-1], dim=-1).gather(1, seq[1:, None])
        total += float(lp.sum())
        n += len(win)
    return math.exp(-total / n), -total / n, n


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="checkpoint directory to write")
    ap.add_argument("--variant", choices=["absmean", "sherry"], default="absmean")
    ap.add_argument("--train-bytes", type=int, default=2_000_000)
    ap.add_argument("--eval-bytes", type=int, default=24_000)
    ap.add_argument("--steps", type=int, default=420)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--corpus-cache", default="", help="reuse/write the sampled corpus here (a directory)")
    ap.add_argument("--reference-only", action="store_true", help="recompute --out's reference.json from its files, no training")
    args = ap.parse_args()

    # One OpenMP thread: on 2 shared cores torch's elementwise kernels ran
    # 35x slower with two (barrier waits); the matrix products get both
    # cores through OpenBLAS (OPENBLAS_NUM_THREADS=2, set by the Makefile).
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    log = lambda m: print(f"train-ternary: {m}", flush=True)

    c = {"hidden": 256, "ffn": args.ffn, "layers": args.layers, "heads": 4, "kv_heads": 2, "head_dim": 64,
         "ctx": 256, "eps": 1e-5, "theta": 10000.0}
    if args.reference_only:
        old = json.load(open(os.path.join(args.out, "reference.json")))
        write_reference(args.out, c, {k: old[k] for k in ("variant", "steps", "batch", "seed", "train_bytes") if k in old}, log)
        return
    cache = args.corpus_cache and os.path.join(args.corpus_cache, f"corpus-{args.seed}-{args.train_bytes}-{args.eval_bytes}.json")
    if cache and os.path.exists(cache):
        train_text, eval_text = json.load(open(cache))
    else:
        t0 = time.time()
        teacher = Teacher(TEACHER)
        train_text = corpus(teacher, args.train_bytes, args.seed, 0.8)
        eval_text = corpus(teacher, args.eval_bytes, args.seed + 1000, 0.8)
        log(f"corpus: {len(train_text)} bytes to train on, {len(eval_text)} to evaluate ({time.time() - t0:.0f}s)")
        if cache:
            os.makedirs(args.corpus_cache, exist_ok=True)
            json.dump([train_text, eval_text], open(cache, "w"))
    tern = ternary_sherry if args.variant == "sherry" else ternary_absmean
    P = train(c, train_text, args.steps, args.batch, args.lr, args.seed, tern, log)
    write_checkpoint(args.out, export_tensors(P, c, args.variant), c)
    with open(os.path.join(args.out, "eval.txt"), "w") as f:
        f.write(eval_text)
    write_reference(args.out, c, {"variant": args.variant, "steps": args.steps, "batch": args.batch,
                                  "seed": args.seed, "train_bytes": len(train_text)}, log)


def write_reference(out, c, meta, log):
    """reference.json: the float64 perplexity of eval.txt, and of its first
    stories up to a blank line past 4000 bytes (the prefix the Go test
    scores in every format, to stay fast)."""
    t0 = time.time()
    eval_text = open(os.path.join(out, "eval.txt")).read()
    cut = eval_text.index("\n\n", 4000) + 2

    def entry(text):
        ppl, nll, n = reference_perplexity(out, c, tokenize(text))
        return {"tokens": n, "windows": (n + c["ctx"] - 2) // (c["ctx"] - 1), "mean_nll": nll, "perplexity": ppl}

    ref = {"eval_text": "eval.txt", "context": c["ctx"], **entry(eval_text),
           "prefix": {"bytes": cut, **entry(eval_text[:cut])}, **meta,
           "note": "float64 forward, weights ternarized from the BF16 file as quant --ternarize auto does, "
                   "int8 absmax activations (half away from zero), exact float head; windows of context-1 tokens behind BOS"}
    json.dump(ref, open(os.path.join(out, "reference.json"), "w"), indent=2)
    log(f"eval perplexity (float64 reference) {ref['perplexity']:.4f} over {ref['tokens']} tokens, "
        f"prefix {ref['prefix']['perplexity']:.4f} ({time.time() - t0:.0f}s); wrote {out}")

if __name__ == "__main__":
    main()

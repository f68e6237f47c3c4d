#!/usr/bin/env python3
"""f32-reference: a Llama-family decoder in plain NumPy, float64 throughout.

An independent engine for checking Tessera's model arithmetic: every weight of
the GGUF file is dequantized once (by the `gguf` package from PyPI) and every
product is exact float64, so the only rounding left is float64's. It reads one
prompt per line (token ids separated by spaces) and prints, per prompt, the
greedy continuation's ids on one line and the top-1 minus top-2 logit margin
of each step on the next: the format of tools/llama-cpp-reference/greedy_ids.

    reference.py MODEL.gguf N_GEN < prompts.txt

Scope: the GGUF `llama` architecture as SmolLM2 uses it (RMSNorm, rotary
embedding on adjacent pairs without scaling, grouped-query attention, SwiGLU,
tied or separate output matrix, no biases). It is slow and meant for a few
prompts, not for serving.
"""
import sys

import gguf
import numpy as np


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.parts[f.data[0]][0]


class Model:
    def __init__(self, path):
        reader = gguf.GGUFReader(path)
        arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
        if arch != "llama":
            raise SystemExit(f"{path}: architecture '{arch}', this reference implements 'llama' only")
        self.n_layer = int(field(reader, "llama.block_count"))
        self.n_embd = int(field(reader, "llama.embedding_length"))
        self.n_head = int(field(reader, "llama.attention.head_count"))
        self.n_kv_head = int(field(reader, "llama.attention.head_count_kv", self.n_head))
        self.head_dim = self.n_embd // self.n_head
        self.eps = float(field(reader, "llama.attention.layer_norm_rms_epsilon"))
        self.rope_base = float(field(reader, "llama.rope.freq_base", 10000.0))
        if field(reader, "llama.rope.scaling.type") is not None:
            raise SystemExit(f"{path}: RoPE scaling is outside this reference's scope")
        # name -> float64 array shaped [rows, cols] (a matrix) or [n] (a vector)
        self.w = {}
        for t in reader.tensors:
            values = gguf.quants.dequantize(t.data, t.tensor_type)
            self.w[t.name] = np.asarray(values, dtype=np.float64).reshape(
                [int(n) for n in reversed(t.shape.tolist())])
        self.output = self.w.get("output.weight", self.w["token_embd.weight"])  # [vocab, n_embd]
        half = self.head_dim // 2
        # theta_i = base^(-2i / head_dim), rotating elements (2i, 2i + 1)
        self.inv_freq = self.rope_base ** (-2.0 * np.arange(half, dtype=np.float64) / self.head_dim)

    def rms_norm(self, x, weight):  # x: [n, n_embd]
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope(self, x, positions):  # x: [n, heads, head_dim]; adjacent pairs rotate
        angles = np.outer(positions, self.inv_freq)  # [n, head_dim / 2]
        cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    def forward(self, tokens, cache):
        """Runs `tokens` after the cache's tokens; returns the last row's logits."""
        n_past = cache["n"]
        n = len(tokens)
        positions = np.arange(n_past, n_past + n, dtype=np.float64)
        x = self.w["token_embd.weight"][tokens]  # [n, n_embd]
        group = self.n_head // self.n_kv_head
        scale = 1.0 / np.sqrt(self.head_dim)
        for l in range(self.n_layer):
            p = f"blk.{l}."
            h = self.rms_norm(x, self.w[p + "attn_norm.weight"])
            q = (h @ self.w[p + "attn_q.weight"].T).reshape(n, self.n_head, self.head_dim)
            k = (h @ self.w[p + "attn_k.weight"].T).reshape(n, self.n_kv_head, self.head_dim)
            v = (h @ self.w[p + "attn_v.weight"].T).reshape(n, self.n_kv_head, self.head_dim)
            q, k = self.rope(q, positions), self.rope(k, positions)
            keys = np.concatenate([cache["k"][l], k]) if n_past else k      # [n_past + n, kv_heads, d]
            values = np.concatenate([cache["v"][l], v]) if n_past else v
            cache["k"][l], cache["v"][l] = keys, values
            total = n_past + n
            # causal mask: query i (position n_past + i) sees keys 0 .. n_past + i
            visible = np.arange(total)[None, :] <= (n_past + np.arange(n))[:, None]  # [n, total]
            attn = np.empty((n, self.n_head, self.head_dim))
            for head in range(self.n_head):
                kv = head // group
                scores = (q[:, head, :] @ keys[:, kv, :].T) * scale  # [n, total]
                scores = np.where(visible, scores, -np.inf)
                scores -= scores.max(axis=1, keepdims=True)
                probs = np.exp(scores)
                probs /= probs.sum(axis=1, keepdims=True)
                attn[:, head, :] = probs @ values[:, kv, :]
            x = x + attn.reshape(n, self.n_embd) @ self.w[p + "attn_output.weight"].T
            h = self.rms_norm(x, self.w[p + "ffn_norm.weight"])
            gate = h @ self.w[p + "ffn_gate.weight"].T
            up = h @ self.w[p + "ffn_up.weight"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ self.w[p + "ffn_down.weight"].T
        cache["n"] = total
        last = self.rms_norm(x[-1:], self.w["output_norm.weight"])
        return (last @ self.output.T)[0]


def end_of_generation_ids(path):
    reader = gguf.GGUFReader(path)
    ids = set()
    for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"):
        value = field(reader, key)
        if value is not None:
            ids.add(int(value))
    return ids


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: reference.py MODEL.gguf N_GEN < prompts (token ids, one prompt per line)")
    model = Model(sys.argv[1])
    end_ids = end_of_generation_ids(sys.argv[1])
    n_gen = int(sys.argv[2])
    for line in sys.stdin:
        prompt = [int(t) for t in line.split()]
        if not prompt:
            continue
        cache = {"n": 0, "k": [None] * model.n_layer, "v": [None] * model.n_layer}
        logits = model.forward(prompt, cache)
        ids, margins = [], []
        for _ in range(n_gen):
            order = np.argsort(-logits, kind="stable")  # lowest id first among equals
            best, second = int(order[0]), int(order[1])
            ids.append(best)
            margins.append(logits[best] - logits[second])
            if best in end_ids:
                break
            logits = model.forward([best], cache)
        print(" ".join(str(i) for i in ids))
        print(" ".join(f"{m:.4f}" for m in margins))
        sys.stdout.flush()


if __name__ == "__main__":
    main()

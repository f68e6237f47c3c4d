"""Describe the converted GGUF files and check them against the HF weights.

  python layout.py --data DATADIR > DATADIR/GGUF-LAYOUT.md

For each model: every metadata key with its type and value, every tensor with
its ggml shape (ne0 first) and type, and the HF tensor it came from.  Each
GGUF tensor is compared with its HF source after the converter's documented
transformation; any mismatch stops the script.
"""
import argparse
import os
import re

import numpy as np
import torch
from gguf import GGUFReader, GGUFValueType
from safetensors.numpy import load_file


def ident(x, **_):
    return x


def neg_exp(x, **_):
    # torch, as in the converter: numpy's exp can differ from it in the last bit.
    return (-torch.exp(torch.from_numpy(x))).numpy()


def squeeze(x, **_):
    return x.squeeze()


# GGUF tensor name pattern -> (HF tensor name template, transformation, note).
# {n} is the block number.  Arrays are numpy (row-major) views, so an HF
# [out, in] matrix has ggml shape {in, out}.
MAP = {
    "mamba1": [
        (r"token_embd\.weight", "backbone.embeddings.weight", ident, "also the output matrix (tied)"),
        (r"output_norm\.weight", "backbone.norm_f.weight", ident, ""),
        (r"blk\.(\d+)\.attn_norm\.weight", "backbone.layers.{n}.norm.weight", ident, "RMS norm before the mixer"),
        (r"blk\.(\d+)\.ssm_in\.weight", "backbone.layers.{n}.mixer.in_proj.weight", ident,
         "rows 0..d_inner-1 -> x, rows d_inner.. -> z (gate)"),
        (r"blk\.(\d+)\.ssm_conv1d\.weight", "backbone.layers.{n}.mixer.conv1d.weight", squeeze,
         "HF [d_inner,1,k] squeezed; ne0 = kernel tap (oldest first)"),
        (r"blk\.(\d+)\.ssm_conv1d\.bias", "backbone.layers.{n}.mixer.conv1d.bias", ident, ""),
        (r"blk\.(\d+)\.ssm_x\.weight", "backbone.layers.{n}.mixer.x_proj.weight", ident,
         "output rows: dt_rank, then B (d_state), then C (d_state)"),
        (r"blk\.(\d+)\.ssm_dt\.weight", "backbone.layers.{n}.mixer.dt_proj.weight", ident, ""),
        (r"blk\.(\d+)\.ssm_dt\.bias", "backbone.layers.{n}.mixer.dt_proj.bias", ident,
         "added before softplus"),
        (r"blk\.(\d+)\.ssm_a", "backbone.layers.{n}.mixer.A_log", neg_exp, "stored as A = -exp(A_log)"),
        (r"blk\.(\d+)\.ssm_d", "backbone.layers.{n}.mixer.D", ident, ""),
        (r"blk\.(\d+)\.ssm_out\.weight", "backbone.layers.{n}.mixer.out_proj.weight", ident, ""),
    ],
    "mamba2": [
        (r"token_embd\.weight", "backbone.embeddings.weight", ident, "also the output matrix (tied)"),
        (r"output_norm\.weight", "backbone.norm_f.weight", ident, ""),
        (r"blk\.(\d+)\.attn_norm\.weight", "backbone.layers.{n}.norm.weight", ident, "RMS norm before the mixer"),
        (r"blk\.(\d+)\.ssm_in\.weight", "backbone.layers.{n}.mixer.in_proj.weight", ident,
         "output rows: z (d_inner), x (d_inner), B (n_group*d_state), C (n_group*d_state), dt (n_head)"),
        (r"blk\.(\d+)\.ssm_conv1d\.weight", "backbone.layers.{n}.mixer.conv1d.weight", squeeze,
         "channels x, B, C (d_inner + 2*n_group*d_state); HF [ch,1,k] squeezed; ne0 = kernel tap (oldest first)"),
        (r"blk\.(\d+)\.ssm_conv1d\.bias", "backbone.layers.{n}.mixer.conv1d.bias", ident, ""),
        (r"blk\.(\d+)\.ssm_dt\.bias", "backbone.layers.{n}.mixer.dt_bias", ident,
         "per head; HF name dt_bias (renamed dt_proj.bias by the converter)"),
        (r"blk\.(\d+)\.ssm_a", "backbone.layers.{n}.mixer.A_log",
         lambda x, **_: neg_exp(x).reshape(-1, 1), "per head; A = -exp(A_log), HF [n_head] -> ne {1, n_head}"),
        (r"blk\.(\d+)\.ssm_d", "backbone.layers.{n}.mixer.D",
         lambda x, **_: x.reshape(-1, 1), "per head; HF [n_head] -> ne {1, n_head}"),
        (r"blk\.(\d+)\.ssm_norm\.weight", "backbone.layers.{n}.mixer.norm.weight",
         lambda x, n_group, **_: x.reshape(n_group, -1),
         "gated RMS norm, normalised per group of d_inner/n_group channels; HF [d_inner] -> ne {d_inner/n_group, n_group}"),
        (r"blk\.(\d+)\.ssm_out\.weight", "backbone.layers.{n}.mixer.out_proj.weight", ident, ""),
    ],
}

TYPE_NAMES = {t: t.name for t in GGUFValueType}


def value_text(field):
    main = field.types[0]
    if main == GGUFValueType.ARRAY:
        sub = field.types[-1]
        n = len(field.data)
        items = [field.contents(i) for i in range(min(n, 8))]
        shown = ", ".join(repr(x) for x in items)
        return f"ARRAY[{TYPE_NAMES[sub]}] x {n}", f"[{shown}{', ...' if n > 8 else ''}]"
    value = field.contents()
    if main == GGUFValueType.STRING:
        value = repr(value)
    return TYPE_NAMES[main], str(value)


def describe(name, data_dir):
    path = os.path.join(data_dir, f"{name}.f32.gguf")
    reader = GGUFReader(path)
    hf = load_file(os.path.join(data_dir, f"{name}-hf", "model.safetensors"))
    n_group = 1
    lines = [f"## {name}.f32.gguf", ""]
    lines += ["### Metadata", "", "| key | type | value |", "| --- | --- | --- |"]
    for field in reader.fields.values():
        if field.name.startswith("GGUF."):
            continue  # header pseudo-fields (version, counts)
        typ, val = value_text(field)
        if field.name.endswith(".ssm.group_count"):
            n_group = int(field.contents())
        if len(val) > 160:
            val = val[:157] + "..."
        lines.append(f"| `{field.name}` | {typ} | `{val}` |")
    lines += ["", f"{len(reader.tensors)} tensors; no `output.weight` "
              "(tied embeddings: the output matrix is `token_embd.weight`)."
              if not any(t.name == "output.weight" for t in reader.tensors) else "",
              "", "### Tensors (shape is ggml order, ne0 first)", "",
              "| name | ne | type | HF source | note |", "| --- | --- | --- | --- | --- |"]
    used = set()
    for t in reader.tensors:
        for pattern, src, fn, note in MAP[name]:
            m = re.fullmatch(pattern, t.name)
            if m:
                break
        else:
            raise SystemExit(f"{name}: no HF source known for {t.name}")
        src = src.format(n=m.group(1) if m.groups() else "")
        expect = fn(hf[src], n_group=n_group)
        got = np.asarray(t.data).reshape(expect.shape)
        if not np.array_equal(expect.astype(np.float32), got):
            raise SystemExit(f"{name}: {t.name} differs from transformed {src}")
        used.add(src)
        ne = "{" + ", ".join(str(int(d)) for d in t.shape) + "}"
        lines.append(f"| `{t.name}` | {ne} | {t.tensor_type.name} | `{src}` {tuple(hf[src].shape)} | {note} |")
    unused = sorted(set(hf) - used)
    lines += ["", f"Every tensor above equals its HF source after the stated transformation "
              f"(checked bit for bit). HF tensors not in the GGUF: {unused or 'none'}.", ""]
    return lines


SEMANTICS = """\
## How transformers computes a layer (what the reference data follows)

All norms use eps = `*.attention.layer_norm_rms_epsilon` (1e-5), including the
gated norm of Mamba-2. Logits = `token_embd.weight` applied to the final
`output_norm` output (tied). `h` is the residual stream, T the position.

Mamba-1 block (d_inner = 256, d_state = 16, dt_rank = 8, d_conv = 4):

    u        = rms_norm(h) * attn_norm
    x, z     = split(ssm_in @ u, [d_inner, d_inner])         # x first, then the gate z
    x        = silu(causal_depthwise_conv(x) + ssm_conv1d.bias)
               # out[c, T] = sum_k w[c, k] * x[c, T - 3 + k], k = 0..3 (k = 3 is the current token)
    dt_r, B, C = split(ssm_x @ x, [dt_rank, d_state, d_state])
    dt       = softplus(ssm_dt @ dt_r + ssm_dt.bias)          # [d_inner]
    s[c, n]  = exp(dt[c] * ssm_a[c, n]) * s[c, n] + dt[c] * B[n] * x[c]   # ssm_a is already -exp(A_log)
    y[c]     = sum_n s[c, n] * C[n] + ssm_d[c] * x[c]
    h        = h + ssm_out @ (y * silu(z))

Mamba-2 block (d_inner = 256, n_head = 8 = time_step_rank, head_dim = 32,
n_group = 2, d_state = 32, d_conv = 4):

    u           = rms_norm(h) * attn_norm
    z, xBC, dt  = split(ssm_in @ u, [d_inner, d_inner + 2*n_group*d_state, n_head])
    xBC         = silu(causal_depthwise_conv(xBC) + ssm_conv1d.bias)    # conv over x, B and C
    x, B, C     = split(xBC, [d_inner, n_group*d_state, n_group*d_state])
    dt[h]       = softplus(dt[h] + ssm_dt.bias[h])                      # one dt per head
    g(h)        = h / (n_head / n_group)    # heads 0-3 use group 0 of B and C, heads 4-7 group 1
    s[h, p, n]  = exp(dt[h] * ssm_a[h]) * s[h, p, n] + dt[h] * B[g(h), n] * x[h, p]
    y[h, p]     = sum_n s[h, p, n] * C[g(h), n] + ssm_d[h] * x[h, p]
    t           = y * silu(z)                                   # gate BEFORE the norm
    t_g         = t_g / sqrt(mean(t_g^2) + eps) for each group g of d_inner/n_group = 128
                  consecutive channels (the same grouping as B and C), times ssm_norm
    h           = h + ssm_out @ t

Here x[h, p] is channel h*head_dim + p, B[g, n] is element g*d_state + n of B.
The full-sequence pass (chunked scan, chunk_size 64) and the one-token-at-a-time
recurrent pass agree to about 1e-5 in the logits (see `<m>.checks.json`).
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    args = ap.parse_args()
    out = ["# GGUF layout of the Mamba test models", "",
           "Generated by `tools/mamba-train/layout.py` from the files in this folder; "
           "the GGUF files were written by llama.cpp's `convert_hf_to_gguf.py --outtype f32`.",
           "Shapes are in ggml order (ne0 first, ne0 is the contiguous dimension), so an HF "
           "`nn.Linear` weight of shape [out, in] appears as {in, out}.", ""]
    for name in ("mamba1", "mamba2"):
        out += describe(name, args.data)
    print("\n".join(out) + "\n" + SEMANTICS, end="")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A Llama-shaped GPTQ checkpoint of real size with random packed weights,
for timing how long Tessera takes to open (repack) one: nothing it says
means anything else. numpy only; the safetensors file is written by hand
(8-byte header length, JSON header, raw tensors).

  python3 make_synthetic.py OUT_DIR [--layers 28 --hidden 1536 --ff 8960
      --heads 12 --kv-heads 2 --vocab 32000 --group-size 128 --act-order]

The defaults are Qwen2.5-1.5B's layer shapes (1.31 billion packed weights)
with a 32000-token f16 embedding; GPTQ v1 layout (qzeros store z - 1),
symmetric 4-bit (z = 8) so every Linear becomes Q4_0.
"""
import argparse
import json
import os
import struct

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--hidden", type=int, default=1536)
    ap.add_argument("--ff", type=int, default=8960)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--group-size", type=int, default=128)
    ap.add_argument("--act-order", action="store_true", help="store a shuffled g_idx (desc_act)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    head_dim = a.hidden // a.heads
    kv = a.kv_heads * head_dim
    tensors = {}  # name -> (dtype string, numpy array)

    def f16(shape, scale):
        return ("F16", (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float16))

    def gptq_linear(base, out_f, in_f):
        groups = in_f // a.group_size
        qweight = rng.integers(0, 2**32, size=(in_f // 8, out_f), dtype=np.uint64).astype(np.uint32)
        tensors[base + ".qweight"] = ("I32", qweight.view(np.int32))
        zero_word = np.uint32(int("7" * 8, 16))  # z - 1 = 7 in every nibble: symmetric, v1
        tensors[base + ".qzeros"] = ("I32", np.full((groups, out_f // 8), zero_word, dtype=np.uint32).view(np.int32))
        scales = (rng.uniform(0.002, 0.02, size=(groups, out_f))).astype(np.float16)
        tensors[base + ".scales"] = ("F16", scales)
        g_idx = np.arange(in_f, dtype=np.int32) // a.group_size
        if a.act_order:
            rng.shuffle(g_idx)
        tensors[base + ".g_idx"] = ("I32", g_idx)

    tensors["model.embed_tokens.weight"] = f16((a.vocab, a.hidden), 0.02)
    tensors["model.norm.weight"] = ("F16", np.ones(a.hidden, dtype=np.float16))
    for i in range(a.layers):
        p = f"model.layers.{i}."
        tensors[p + "input_layernorm.weight"] = ("F16", np.ones(a.hidden, dtype=np.float16))
        tensors[p + "post_attention_layernorm.weight"] = ("F16", np.ones(a.hidden, dtype=np.float16))
        gptq_linear(p + "self_attn.q_proj", a.hidden, a.hidden)
        gptq_linear(p + "self_attn.k_proj", kv, a.hidden)
        gptq_linear(p + "self_attn.v_proj", kv, a.hidden)
        gptq_linear(p + "self_attn.o_proj", a.hidden, a.hidden)
        gptq_linear(p + "mlp.gate_proj", a.ff, a.hidden)
        gptq_linear(p + "mlp.up_proj", a.ff, a.hidden)
        gptq_linear(p + "mlp.down_proj", a.hidden, a.ff)

    os.makedirs(a.out, exist_ok=True)
    header, offset = {}, 0
    for name, (dtype, arr) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, arr in tensors.values():
            f.write(np.ascontiguousarray(arr).tobytes())
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": a.hidden,
        "intermediate_size": a.ff, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads, "vocab_size": a.vocab, "rms_norm_eps": 1e-6,
        "max_position_embeddings": 4096, "rope_theta": 10000.0, "tie_word_embeddings": True,
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": a.group_size,
                                "desc_act": a.act_order, "sym": True, "checkpoint_format": "gptq"},
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"wrote {a.out}: {offset / 1e6:.0f} MB of tensors")


if __name__ == "__main__":
    main()

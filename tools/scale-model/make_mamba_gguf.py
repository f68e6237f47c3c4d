#!/usr/bin/env python3
"""Write a Mamba-1 or Mamba-2 GGUF with random weights at a real model's
shapes, in llama.cpp's layout, for speed measurements of the mamba plugin.

No registry carries a Mamba checkpoint, so the speed figures use the shapes
of state-spaces' models: mamba-130m (24 layers, d_model 768, the default) and
mamba-370m (--layers 48 --embd 1024); with --version 2, Mamba-2's block
(d_state 128, heads of 64 channels). The tokenizer and vocabulary come from
a donor GGUF (the default model, 49152 tokens; the real models have
GPT-NeoX's 50280), so `tessera bench` and `llama-bench` run the file as they
run a real one. Tensor names, shapes and keys are those llama.cpp's
convert_hf_to_gguf.py writes (A stored as -exp(A_log), the convolution as
[d_inner, d_conv], Mamba-2's A and D as [n_head, 1], its norm as [n_group,
d_inner / n_group]). The weights are random but shaped like a trained
model's (A from the S4D-real init, dt around 0.01), so the recurrence stays
bounded; the text is noise, only speeds mean anything.

Quantize with llama.cpp's tool like any model:
  llama-quantize OUT-f16.gguf OUT-q8_0.gguf Q8_0 2
"""
import argparse

import gguf
import numpy as np

from make_gguf import copy_tokenizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("donor", help="GGUF whose tokenizer (and vocabulary size) to copy")
    ap.add_argument("out", help="the f16 GGUF to write")
    ap.add_argument("--version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--state", type=int, default=0, help="d_state (default 16 for Mamba-1, 128 for Mamba-2)")
    ap.add_argument("--head-dim", type=int, default=64, help="Mamba-2 channels per head")
    ap.add_argument("--groups", type=int, default=1, help="Mamba-2 groups sharing B and C")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    donor = gguf.GGUFReader(args.donor)
    vocab = len(donor.fields["tokenizer.ggml.tokens"].data)
    d = args.embd
    inner = 2 * d
    conv = 4
    state = args.state or (16 if args.version == 1 else 128)
    arch = "mamba" if args.version == 1 else "mamba2"
    dt_rank = (d + 15) // 16
    n_head = inner // args.head_dim
    groups = args.groups

    w = gguf.GGUFWriter(args.out, arch)
    copy_tokenizer(donor, w)
    w.add_name(f"random-{arch}-{args.layers}x{d}")
    w.add_context_length(2 ** 20)
    w.add_embedding_length(d)
    w.add_feed_forward_length(0)
    w.add_head_count(0)
    w.add_block_count(args.layers)
    w.add_ssm_conv_kernel(conv)
    w.add_ssm_inner_size(inner)
    w.add_ssm_state_size(state)
    w.add_ssm_time_step_rank(dt_rank if args.version == 1 else n_head)
    if args.version == 2:
        w.add_ssm_group_count(groups)
    else:
        w.add_ssm_dt_b_c_rms(False)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    rng = np.random.default_rng(args.seed)

    def matrix(rows: int, cols: int) -> np.ndarray:  # [rows, cols]: GGUF's [out, in]
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    def dt_bias(n: int) -> np.ndarray:  # softplus(bias) spread log-uniformly over [0.001, 0.1]
        dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), n))
        return (dt + np.log(-np.expm1(-dt))).astype(np.float32)

    ones = np.ones(d, np.float32)
    w.add_tensor("token_embd.weight", matrix(vocab, d))  # tied: also the output head
    w.add_tensor("output_norm.weight", ones)
    conv_channels = inner if args.version == 1 else inner + 2 * groups * state
    for layer in range(args.layers):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "ssm_conv1d.weight", (rng.standard_normal((conv_channels, conv)) * 0.3).astype(np.float32))
        w.add_tensor(p + "ssm_conv1d.bias", np.zeros(conv_channels, np.float32))
        w.add_tensor(p + "ssm_out.weight", matrix(d, inner))
        if args.version == 1:
            w.add_tensor(p + "ssm_in.weight", matrix(2 * inner, d))
            w.add_tensor(p + "ssm_x.weight", matrix(dt_rank + 2 * state, inner))
            w.add_tensor(p + "ssm_dt.weight", (rng.standard_normal((inner, dt_rank)) * dt_rank ** -0.5).astype(np.float32))
            w.add_tensor(p + "ssm_dt.bias", dt_bias(inner))
            a = -np.tile(np.arange(1, state + 1, dtype=np.float32), (inner, 1))  # S4D-real init
            w.add_tensor(p + "ssm_a", a)
            w.add_tensor(p + "ssm_d", np.ones(inner, np.float32))
        else:
            w.add_tensor(p + "ssm_in.weight", matrix(2 * inner + 2 * groups * state + n_head, d))
            w.add_tensor(p + "ssm_dt.bias", dt_bias(n_head))
            w.add_tensor(p + "ssm_a", -rng.uniform(1, 16, (n_head, 1)).astype(np.float32))
            w.add_tensor(p + "ssm_d", np.ones((n_head, 1), np.float32))
            w.add_tensor(p + "ssm_norm.weight", np.ones((groups, inner // groups), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

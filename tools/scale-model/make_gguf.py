#!/usr/bin/env python3
"""Write a Llama-shaped GGUF with random f16 weights, for speed measurements
at a size other than the default model's.

SmolLM2-135M spends a visible share of each decode step on work that does not
grow with the weights (30 layers of norms, RoPE, attention over a short
context, thread hand-offs). A larger model with the same code paths shows how
close the kernels themselves come to the memory-bandwidth roofline. The
tokenizer and vocabulary are copied from a donor GGUF (the default model), so
`tessera bench` and `llama-bench` run the file as they run a real one; the
weights are N(0, 0.02) and the text it writes is noise.

Then quantize with llama.cpp's tool (tools/llama-cpp-reference/build.sh):
  llama-quantize --token-embedding-type q8_0 OUT-f16.gguf OUT-q4_1.gguf Q4_1 2
which gives the default model's mix: Q4_1 matrices, a Q8_0 tied embedding.
"""
import argparse

import gguf
import numpy as np


def copy_tokenizer(src: gguf.GGUFReader, dst: gguf.GGUFWriter) -> None:
    for field in src.fields.values():
        if not field.name.startswith("tokenizer."):
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            if field.types[-1] == gguf.GGUFValueType.STRING:
                values = [bytes(field.parts[i]).decode("utf-8", errors="surrogateescape") for i in field.data]
            else:
                values = [field.parts[i].tolist()[0] for i in field.data]
            dst.add_array(field.name, values)
        elif kind == gguf.GGUFValueType.STRING:
            dst.add_string(field.name, bytes(field.parts[field.data[0]]).decode())
        elif kind == gguf.GGUFValueType.BOOL:
            dst.add_bool(field.name, bool(field.parts[field.data[0]][0]))
        else:  # token ids (bos, eos, padding): u32
            dst.add_uint32(field.name, int(field.parts[field.data[0]][0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("donor", help="GGUF whose tokenizer (and vocabulary size) to copy")
    ap.add_argument("out", help="the f16 GGUF to write")
    # Defaults: TinyLlama-1.1B's layer shapes, 1.07B parameters with a 49152-token vocabulary.
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--embd", type=int, default=2048)
    ap.add_argument("--ff", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    donor = gguf.GGUFReader(args.donor)
    vocab = len(donor.fields["tokenizer.ggml.tokens"].data)
    d, ff, n_head, n_kv = args.embd, args.ff, args.heads, args.kv_heads
    head_dim = d // n_head

    w = gguf.GGUFWriter(args.out, "llama")
    copy_tokenizer(donor, w)
    w.add_name(f"random-llama-{args.layers}x{d}")
    w.add_context_length(2048)
    w.add_embedding_length(d)
    w.add_block_count(args.layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    rng = np.random.default_rng(args.seed)

    def matrix(rows: int, cols: int) -> np.ndarray:  # [rows, cols]: GGUF's [out, in]
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    ones = np.ones(d, np.float32)
    w.add_tensor("token_embd.weight", matrix(vocab, d))  # tied: also the output head
    w.add_tensor("output_norm.weight", ones)
    for layer in range(args.layers):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", matrix(d, d))
        w.add_tensor(p + "attn_k.weight", matrix(n_kv * head_dim, d))
        w.add_tensor(p + "attn_v.weight", matrix(n_kv * head_dim, d))
        w.add_tensor(p + "attn_output.weight", matrix(d, d))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", matrix(ff, d))
        w.add_tensor(p + "ffn_up.weight", matrix(ff, d))
        w.add_tensor(p + "ffn_down.weight", matrix(d, ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()

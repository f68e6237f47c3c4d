#!/usr/bin/env python3
"""Write test vectors for the Q2_K and Q3_K layouts from an independent reader.

Random super-blocks (every byte random, the f16 scales finite) and their
values as the `gguf` package from PyPI (llama.cpp's own Python GGUF library)
dequantizes them. tests: Dequantize.Q2KAndQ3KMatchGgufPy compares Tessera's
reference dequantizer with these values bit for bit, so a misread layout
cannot pass on vectors made from the same misreading.

  python3 -m venv .cache/scale-venv && .cache/scale-venv/bin/pip install gguf==0.19.0 numpy
  .cache/scale-venv/bin/python tools/kquant-vectors/make_vectors.py tests/data/kquant-vectors

Writes NAME.blocks (N super-blocks, ggml's bytes) and NAME.f32 (N * 256
little-endian floats) for NAME in q2_k, q3_k.
"""
import argparse
import pathlib

import numpy as np
from gguf import GGMLQuantizationType, quants

FORMATS = (  # name, ggml type, bytes per super-block, offset of the f16 scales (d, then Q2_K's dmin)
    ("q2_k", GGMLQuantizationType.Q2_K, 84, 80),
    ("q3_k", GGMLQuantizationType.Q3_K, 110, 108),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    for name, ggml_type, size, scales_at in FORMATS:
        blocks = rng.integers(0, 256, size=(args.blocks, size), dtype=np.uint8)
        n_scales = (size - scales_at) // 2
        scales = rng.uniform(-2, 2, size=(args.blocks, n_scales)).astype(np.float16)
        blocks[:, scales_at:] = scales.view(np.uint8).reshape(args.blocks, 2 * n_scales)
        values = quants.dequantize(blocks.reshape(-1), ggml_type).astype("<f4").reshape(-1)
        blocks.tofile(args.out_dir / f"{name}.blocks")
        values.tofile(args.out_dir / f"{name}.f32")
        print(f"{name}: {args.blocks} super-blocks, {values.size} values")


if __name__ == "__main__":
    main()

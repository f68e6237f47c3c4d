"""Add tokenizer.json to an HF folder: transformers' own conversion of the
folder's SentencePiece tokenizer.model (BPE with byte fallback, U+2581 for
spaces), so that engines reading only tokenizer.json (Tessera) can load the
folder. Written after the GGUF conversion: llama.cpp's converter takes a
folder's tokenizer.json before its tokenizer.model and would then ask for a
known pre-tokenizer hash, which this vocabulary does not have.
"""
import argparse
import os
import shutil
import tempfile

import sentencepiece as spm
from transformers import AutoTokenizer

SAMPLE = "And God said unto Moses, 1234 \u00e9 x"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hf", required=True, help="the HF folder holding tokenizer.model")
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(args.hf)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.hf, "tokenizer.model"))
    ours, theirs = tok(SAMPLE).input_ids, [sp.bos_id()] + sp.encode(SAMPLE)
    if ours != theirs:
        raise SystemExit(f"tokenizer.json gives {ours} for {SAMPLE!r}, sentencepiece {theirs}")
    with tempfile.TemporaryDirectory() as tmp:
        tok.save_pretrained(tmp)  # only its tokenizer.json is kept: the folder's config stays as written
        shutil.copyfile(os.path.join(tmp, "tokenizer.json"), os.path.join(args.hf, "tokenizer.json"))
    print(f"{args.hf}/tokenizer.json: {SAMPLE!r} -> {ours} (as sentencepiece)")


if __name__ == "__main__":
    main()

"""Train the SentencePiece BPE tokenizer on the training verses only.

Settings follow the Llama SentencePiece models (identity normalisation, a dummy
prefix space, whitespace kept as is, byte fallback) so that llama.cpp's
converter and an SPM ("llama") GGUF tokenizer reproduce the same ids.
"""
import argparse
import os

import sentencepiece as spm

VOCAB_SIZE = 2048


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True,
                    help="folder holding train.txt; tokenizer.model is written there")
    args = ap.parse_args()
    # Relative names only: the trainer records its input and output paths in the
    # model file, so absolute paths would make the file depend on the checkout.
    os.chdir(args.work)
    spm.SentencePieceTrainer.train(
        input="train.txt",
        model_prefix="tokenizer",
        model_type="bpe",
        vocab_size=VOCAB_SIZE,
        character_coverage=1.0,
        byte_fallback=True,
        split_digits=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        input_sentence_size=0,          # use every sentence, no sampling
        shuffle_input_sentence=False,
        num_threads=2,
        minloglevel=2,
    )
    os.remove("tokenizer.vocab")
    sp = spm.SentencePieceProcessor(model_file="tokenizer.model")
    assert sp.vocab_size() == VOCAB_SIZE, sp.vocab_size()
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) == (0, 1, 2, -1)
    sample = "In the beginning God created the heaven and the earth."
    print(f"tokenizer: {os.path.join(args.work, 'tokenizer.model')}, vocab {sp.vocab_size()}; {sample!r} -> "
          f"{sp.encode(sample, out_type=str)}")


if __name__ == "__main__":
    main()

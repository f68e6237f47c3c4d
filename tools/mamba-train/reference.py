"""Reference outputs from transformers (float32) for the C++ tests.

  python reference.py --model mamba1 --hf DIR --work WORKDIR --out-dir DATADIR

Loads the saved folder back and writes, into DATADIR:
  <m>.heldout.txt          128 held-out token ids (first is <s> = 1), one line
  <m>.heldout.logits.f32   little-endian float32 [128][2048], one forward pass
  <m>.greedy.txt           8 prompts x (prompt / greedy / margin lines)
  <m>.checks.json          recurrent (cached) paths compared with the full pass
Every full pass runs with use_cache=False, so transformers takes its
whole-sequence path (Mamba-1: sequential scan; Mamba-2: chunked SSD scan).
"""
import argparse
import json
import os

import common  # first: sets OMP_WAIT_POLICY before torch loads

import numpy as np
import torch
from transformers import GenerationConfig

import data
import models

GREEDY_STEPS = 64


def full_logits(model, ids):
    """Logits [len(ids), vocab] of one uncached forward pass."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0].float()


def greedy_full(model, prompt):
    """Greedy decoding where every step re-runs the whole sequence."""
    seq, picks, margins, last_logits = list(prompt), [], [], []
    for _ in range(GREEDY_STEPS):
        logits = full_logits(model, seq)[-1]
        top = torch.topk(logits, 2)
        nxt = int(torch.argmax(logits))
        assert nxt == int(top.indices[0])
        picks.append(nxt)
        margins.append(float(top.values[0] - top.values[1]))
        last_logits.append(logits)
        seq.append(nxt)
    return picks, margins, torch.stack(last_logits)


def greedy_cached(model, prompt):
    """transformers' own generate(): prompt in one pass, then one token at a
    time through the recurrent state (conv state + SSM state)."""
    cfg = GenerationConfig(do_sample=False, max_new_tokens=GREEDY_STEPS, min_new_tokens=GREEDY_STEPS,
                           use_cache=True, eos_token_id=None, pad_token_id=None, bos_token_id=1,
                           output_logits=True, return_dict_in_generate=True)
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor([prompt]), generation_config=cfg)
    ids = out.sequences[0, len(prompt):].tolist()
    return ids, torch.stack([l[0].float() for l in out.logits])


def stepwise_logits(model, ids):
    """Feed the ids one at a time through the cache; logits [len(ids), vocab]."""
    rows, cache = [], None
    with torch.no_grad():
        for t in range(len(ids)):
            out = model(input_ids=torch.tensor([[ids[t]]]), cache=cache, use_cache=True)
            cache = out.cache
            rows.append(out.logits[0, -1].float())
    return torch.stack(rows)


def fmt_ids(ids):
    return " ".join(str(int(i)) for i in ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(models.CLASSES), required=True)
    ap.add_argument("--hf", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    common.setup()
    m = args.model

    model = models.CLASSES[m].from_pretrained(args.hf, dtype=torch.float32)
    model.eval()
    _, _, held_stream, held_enc = data.load(
        os.path.join(args.hf, "tokenizer.model"),
        os.path.join(args.work, "train.txt"), os.path.join(args.work, "heldout.txt"))

    # 1. One held-out window, one forward pass.
    window = data.eval_windows(held_stream)[0].tolist()
    assert window[0] == data.BOS and len(window) == data.EVAL_LEN
    logits = full_logits(model, window)
    assert logits.shape == (data.EVAL_LEN, model.config.vocab_size)
    with open(os.path.join(args.out_dir, f"{m}.heldout.txt"), "w") as f:
        f.write(fmt_ids(window) + "\n")
    logits.numpy().astype("<f4").tofile(os.path.join(args.out_dir, f"{m}.heldout.logits.f32"))
    nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(window[1:])).item()

    # The same window through the recurrent path, one token at a time.
    steps = stepwise_logits(model, window)
    window_diff = (steps - logits).abs().max().item()

    # 2. Greedy continuations, full pass per step; 3. compared with generate().
    prompt_checks = []
    with open(os.path.join(args.out_dir, f"{m}.greedy.txt"), "w") as f:
        for prompt in data.greedy_prompts(held_enc):
            picks, margins, full_rows = greedy_full(model, prompt)
            f.write("prompt: " + fmt_ids(prompt) + "\n")
            f.write("greedy: " + fmt_ids(picks) + "\n")
            f.write("margin: " + " ".join(f"{x:.6g}" for x in margins) + "\n")
            cached, cached_rows = greedy_cached(model, prompt)
            same = cached == picks
            first_diff = None if same else next(i for i, (a, b) in enumerate(zip(cached, picks)) if a != b)
            # Logits are comparable step by step up to the first differing id.
            upto = GREEDY_STEPS if same else first_diff + 1
            prompt_checks.append({
                "prompt_len": len(prompt),
                "generate_ids_equal": same,
                "first_difference": first_diff,
                "max_abs_logit_diff": (cached_rows[:upto] - full_rows[:upto]).abs().max().item(),
                "min_margin": min(margins),
            })
            print(f"{m}: prompt of {len(prompt)} ids: generate(use_cache=True) "
                  f"{'matches' if same else 'DIFFERS at step %d' % first_diff}; "
                  f"max |logit diff| {prompt_checks[-1]['max_abs_logit_diff']:.3g}; "
                  f"smallest margin {min(margins):.3g}", flush=True)

    checks = {
        "model": m,
        "heldout_window_nll": round(nll, 4),
        "heldout_window_stepwise_max_abs_logit_diff": window_diff,
        "heldout_logits_abs_max": logits.abs().max().item(),
        "greedy": prompt_checks,
        "all_generate_ids_equal": all(c["generate_ids_equal"] for c in prompt_checks),
        "versions": common.versions(),
    }
    with open(os.path.join(args.out_dir, f"{m}.checks.json"), "w") as f:
        json.dump(checks, f, indent=1)
        f.write("\n")
    print(f"{m}: held-out window NLL {nll:.4f}; stepwise vs one pass max |logit diff| "
          f"{window_diff:.3g}", flush=True)


if __name__ == "__main__":
    main()

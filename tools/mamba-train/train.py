"""Train one small Mamba model on the KJV training split and save it in HF format.

  python train.py --model mamba1 --work WORKDIR --hf-out DIR --info-out FILE.json

Writes DIR/config.json, DIR/model.safetensors (float32), DIR/tokenizer.model,
DIR/tokenizer_config.json, and a JSON summary (settings, versions, loss curve,
held-out perplexity before and after training).
"""
import argparse
import contextlib
import json
import math
import os
import shutil
import time

import common  # first: sets OMP_WAIT_POLICY before torch loads

import numpy as np
import torch
import torch.nn.functional as F

import data
import fast_scan
import models

# Per-model training settings.  Step counts are fixed (not time-based) so a
# rerun on the same machine reproduces the weights bit for bit.
SETTINGS = {
    "mamba1": dict(seq_len=128, batch=16, steps=200, lr=3e-3, warmup=20),
    "mamba2": dict(seq_len=256, batch=16, steps=300, lr=3e-3, warmup=20),
}
WEIGHT_DECAY = 0.1
BETAS = (0.9, 0.95)
CLIP = 1.0

TOKENIZER_CONFIG = {
    "tokenizer_class": "LlamaTokenizer",
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": None,
    "add_bos_token": True,
    "add_eos_token": False,
    "legacy": False,
    "model_max_length": 1048576,
}


@torch.no_grad()
def perplexity(model, windows):
    """Token-level perplexity over all next-token predictions in the windows,
    using the unmodified transformers forward pass."""
    model.eval()
    ids = torch.from_numpy(windows)
    logits = model(input_ids=ids).logits.float()
    nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    return math.exp(nll.item())


def param_groups(model):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        # Matrices decay; norms, biases, A_log, D, dt_bias and conv kernels do not.
        (decay if p.ndim == 2 and "A_log" not in name else no_decay).append(p)
    return [{"params": decay, "weight_decay": WEIGHT_DECAY},
            {"params": no_decay, "weight_decay": 0.0}]


def lr_at(step, s):
    if step < s["warmup"]:
        return s["lr"] * (step + 1) / s["warmup"]
    progress = (step - s["warmup"]) / max(1, s["steps"] - s["warmup"])
    return s["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def check_fast_scan(model, windows):
    """The training-only Mamba-1 scan must agree with transformers' own."""
    model.eval()
    ids = torch.from_numpy(windows[:4])
    with torch.no_grad():
        ref = model(input_ids=ids).logits
        with fast_scan.patched():
            new = model(input_ids=ids).logits
    diff = (ref - new).abs().max().item()
    print(f"fast scan vs transformers: max |logit diff| = {diff:.3g}", flush=True)
    assert diff < 1e-3, diff
    return diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=sorted(SETTINGS), required=True)
    ap.add_argument("--work", required=True, help="folder with train.txt, heldout.txt, tokenizer.model")
    ap.add_argument("--hf-out", required=True)
    ap.add_argument("--info-out", required=True)
    ap.add_argument("--steps", type=int, help="override the step count (smoke tests only)")
    args = ap.parse_args()
    s = dict(SETTINGS[args.model])
    if args.steps is not None:
        s["steps"] = args.steps

    common.setup()
    tok_path = os.path.join(args.work, "tokenizer.model")
    _, train_stream, held_stream, _ = data.load(
        tok_path, os.path.join(args.work, "train.txt"), os.path.join(args.work, "heldout.txt"))
    windows = data.eval_windows(held_stream)
    print(f"{args.model}: {len(train_stream)} training tokens, {len(held_stream)} held-out tokens",
          flush=True)

    model = models.build(args.model)        # seeded initialisation
    n_params = sum(p.numel() for p in model.parameters())
    ppl_untrained = perplexity(model, windows)
    print(f"{args.model}: {n_params} parameters, untrained held-out perplexity {ppl_untrained:.2f}",
          flush=True)
    scan_diff = check_fast_scan(model, windows) if args.model == "mamba1" else None

    opt = torch.optim.AdamW(param_groups(model), lr=s["lr"], betas=BETAS, eps=1e-8)
    batches = data.Batches(train_stream, s["batch"], s["seq_len"], common.SEED)
    losses = []
    t0 = time.time()
    model.train()
    with fast_scan.patched() if args.model == "mamba1" else contextlib.nullcontext():
        for step in range(s["steps"]):
            for g in opt.param_groups:
                g["lr"] = lr_at(step, s)
            batch = torch.from_numpy(batches.next())
            logits = model(input_ids=batch[:, :-1]).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            opt.step()
            losses.append(round(loss.item(), 4))
            if step % 10 == 0 or step == s["steps"] - 1:
                print(f"{args.model} step {step:4d}  loss {loss.item():.4f}  "
                      f"lr {lr_at(step, s):.2e}  {time.time() - t0:6.1f}s", flush=True)
    train_seconds = time.time() - t0

    ppl_trained = perplexity(model, windows)
    print(f"{args.model}: trained held-out perplexity {ppl_trained:.2f} "
          f"(untrained {ppl_untrained:.2f}); training took {train_seconds:.0f}s", flush=True)

    os.makedirs(args.hf_out, exist_ok=True)
    model.eval()
    model.save_pretrained(args.hf_out)      # config.json + model.safetensors, float32
    shutil.copyfile(tok_path, os.path.join(args.hf_out, "tokenizer.model"))
    with open(os.path.join(args.hf_out, "tokenizer_config.json"), "w") as f:
        json.dump(TOKENIZER_CONFIG, f, indent=2)
        f.write("\n")

    info = {
        "model": args.model,
        "class": type(model).__name__,
        "parameters": n_params,
        "seed": common.SEED,
        "threads": common.THREADS,
        "training": dict(s, optimizer="AdamW", betas=list(BETAS), weight_decay=WEIGHT_DECAY,
                         grad_clip=CLIP, schedule="linear warmup, cosine decay to 10%"),
        "training_tokens_seen": s["steps"] * s["batch"] * s["seq_len"],
        "training_seconds": round(train_seconds, 1),
        "loss_first": losses[0],
        "loss_last10_mean": round(float(np.mean(losses[-10:])), 4),
        "losses": losses,
        "heldout_eval": f"{data.EVAL_WINDOWS} windows x {data.EVAL_LEN} tokens, "
                        f"{data.EVAL_WINDOWS * (data.EVAL_LEN - 1)} predictions",
        "heldout_perplexity_untrained": round(ppl_untrained, 3),
        "heldout_perplexity_trained": round(ppl_trained, 3),
        "fast_scan_max_logit_diff": scan_diff,
        "versions": common.versions(),
    }
    with open(args.info_out, "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

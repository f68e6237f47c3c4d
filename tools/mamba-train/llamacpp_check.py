"""Optional cross-check: llama.cpp's own greedy decoding of the GGUF files.

Runs tools/llama-cpp-reference's greedy_ids (if it has been built) on the
prompts of <m>.greedy.txt and compares its ids with transformers' ids.  It
only prints; nothing in tests/data depends on it.
"""
import argparse
import os
import subprocess


def read_greedy(path):
    prompts, greedy, margins = [], [], []
    with open(path) as f:
        for line in f:
            key, _, rest = line.partition(": ")
            vals = rest.split()
            if key == "prompt":
                prompts.append([int(v) for v in vals])
            elif key == "greedy":
                greedy.append([int(v) for v in vals])
            elif key == "margin":
                margins.append([float(v) for v in vals])
    return prompts, greedy, margins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--greedy-ids", required=True)
    ap.add_argument("--data", required=True)
    args = ap.parse_args()
    for m in ("mamba1", "mamba2"):
        prompts, hf_ids, margins = read_greedy(os.path.join(args.data, f"{m}.greedy.txt"))
        stdin = "".join(" ".join(map(str, p)) + "\n" for p in prompts)
        out = subprocess.run([args.greedy_ids, os.path.join(args.data, f"{m}.f32.gguf"),
                              str(len(hf_ids[0]))], input=stdin, capture_output=True, text=True,
                             check=True).stdout.splitlines()
        ours = [[int(v) for v in line.split()] for line in out[0::2]]
        agree = 0
        for i, (a, b) in enumerate(zip(hf_ids, ours)):
            n = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            full = n == len(a) == len(b)
            agree += full
            where = "" if full else f" - first difference at step {n} (HF margin there {margins[i][n]:.3g})"
            print(f"llama.cpp {m} prompt {i}: {n}/{len(a)} ids equal{where}")
        print(f"llama.cpp {m}: {agree}/{len(hf_ids)} greedy continuations identical to transformers")


if __name__ == "__main__":
    main()

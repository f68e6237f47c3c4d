# Greedy ids and top-1 minus top-2 margins from Hugging Face transformers
# (float32, every weight dequantized by its GGUF loader) for prompt ids given
# one prompt per line. Usage: greedy.py MODEL_DIR GGUF_NAME STEPS < ids.txt > out.txt
# Two lines per prompt: the ids, then the margins (tools/hf-reference/README.md).
import sys

import torch
from transformers import AutoModelForCausalLM

END_IDS = {0, 2}  # SmolLM2's <|endoftext|> and <|im_end|>: generation stops after either


def greedy(model, prompt_ids, steps):
    ids, margins = [], []
    cache, step_input = None, torch.tensor([prompt_ids])
    with torch.no_grad():
        for _ in range(steps):
            out = model(input_ids=step_input, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            top = torch.topk(out.logits[0, -1].double(), 2)
            token = int(top.indices[0])
            ids.append(token)
            margins.append(float(top.values[0] - top.values[1]))
            if token in END_IDS:
                break
            step_input = torch.tensor([[token]])
    return ids, margins


def main():
    model_dir, gguf_name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=gguf_name, torch_dtype=torch.float32).eval()
    for line in sys.stdin:
        ids, margins = greedy(model, [int(t) for t in line.split()], steps)
        print(*ids)
        print(*["%.4f" % m for m in margins])
        sys.stdout.flush()


if __name__ == "__main__":
    main()

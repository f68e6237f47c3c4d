#!/usr/bin/env python3
"""Writes a golden_*.inc table for tests/integration/golden_test.cpp.

    golden_inc.py PROMPTS.jsonl ENGINE_OUTPUT "comment line" > tests/integration/golden_x.inc

PROMPTS.jsonl: the prompts as `tessera run --prompts-file` reads them (each
object's `prompt` and `chat`). ENGINE_OUTPUT: two lines per prompt, ids then
margins, as reference.py and tools/llama-cpp-reference/greedy_ids print them.
"""
import json
import sys


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    prompts = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    lines = open(sys.argv[2]).read().split("\n")
    print(f"// {sys.argv[3]}")
    print("const std::vector<Golden> kGolden = {")
    for i, p in enumerate(prompts):
        ids = lines[2 * i].split()
        margins = [f"{float(m):.4f}f" for m in lines[2 * i + 1].split()]
        print(f"    {{{json.dumps(p['prompt'])}, {'true' if p.get('chat') else 'false'},")
        print(f"     {{{', '.join(ids)}}},")
        print(f"     {{{', '.join(margins)}}}}},")
    print("};")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Writes the text whose most used tokens a code draft's output head keeps
# ([speculative] draft_vocabulary in pipelines/speculative-qwen.toml):
#
#   models/draft-vocabulary-python.txt   (the first 4 MB of Python source)
#
# from the Python standard library installed with python3 (its own tests
# left out), files in name order. A draft token then reads the head rows of
# those tokens only (docs/speculative.md, "A draft head of the most used
# tokens"); which tokens are kept changes how many drafts the target keeps,
# not the output's law: greedy output stays the target's own ids, sampled
# output the target's distribution. Another workload (prose, another language)
# is better served by a text of its own.
# A file already there is kept; it is written to a temporary name first.
# Usage: scripts/make-draft-vocabulary.sh
set -euo pipefail
cd "$(dirname "$0")/.."

out=models/draft-vocabulary-python.txt
bytes=$((4 * 1024 * 1024))
if [[ -f $out ]]; then
  echo "ready: $out"
  exit 0
fi
stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
[[ -d $stdlib ]] || { echo "error: no Python standard library at '$stdlib'" >&2; exit 1; }
mkdir -p models
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
python3 - "$stdlib" "$tmp" "$bytes" <<'PY'
import os, sys
stdlib, out, budget = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = []
for folder, subfolders, names in os.walk(stdlib):
    subfolders[:] = [d for d in subfolders if d not in ("test", "tests") and not d.endswith("-packages")]
    files += [os.path.join(folder, n) for n in names if n.endswith(".py")]
with open(out, "wb") as text:
    for path in sorted(files):
        if budget <= 0:
            break
        with open(path, "rb") as f:
            data = f.read(budget)
        text.write(data)
        budget -= len(data)
PY
chmod 644 "$tmp"
[[ $(stat -c %s "$tmp") -eq $bytes ]] || { echo "error: $stdlib holds less than $bytes bytes of Python" >&2; exit 1; }
mv "$tmp" "$out"
trap - EXIT
echo "ready: $out"

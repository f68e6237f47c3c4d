"""Extract the King James Bible from Debian's bible-kjv package and split it.

One verse per line, the book/chapter/verse reference removed.  The split is by
lines and fully deterministic: the last HELDOUT_FRACTION of the verses (the end
of the New Testament) is held out and never used for the tokenizer or training.
"""
import argparse
import os
import re
import subprocess

HELDOUT_FRACTION = 0.05
REF = re.compile(r"^\S+\d+:\d+ ")  # "Ge1:1 ", "1Jo3:16 ", "Rev22:21 "


def read_verses():
    # -f switches pretty-printing off: one verse per line, reference first.
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], stdin=subprocess.DEVNULL,
                         capture_output=True, check=True, text=True, encoding="ascii").stdout
    verses = []
    for line in out.splitlines():
        m = REF.match(line)
        if not m:
            raise SystemExit(f"unexpected line from bible(1): {line!r}")
        text = line[m.end():].strip()
        if text:
            verses.append(text)
    return verses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="folder for train.txt / heldout.txt")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    verses = read_verses()
    n_held = round(len(verses) * HELDOUT_FRACTION)
    train, held = verses[:-n_held], verses[-n_held:]
    for name, part in (("train.txt", train), ("heldout.txt", held)):
        with open(os.path.join(args.out, name), "w", encoding="ascii", newline="\n") as f:
            f.write("\n".join(part) + "\n")
    print(f"corpus: {len(verses)} verses, {len(train)} train, {len(held)} held out "
          f"(held out starts with: {held[0][:60]!r})")


if __name__ == "__main__":
    main()

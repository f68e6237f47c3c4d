#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf with
# their .gguf.inp/.gguf.out files) into .cache/vocab/ at the repository root.
#
# They ship inside the source distribution of llama-cpp-python, which vendors
# llama.cpp. The archive is downloaded once with pip into .cache/downloads/
# (or taken from $TESSERA_LCP_SDIST when that names a local copy), and only
# the ggml-vocab files are extracted. Running it again does nothing once the
# vocabularies are there. The tokenizer tests labelled `vocab` skip, saying
# why, until this script has run.
set -euo pipefail

version=0.3.36
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.cache/vocab"
downloads="$root/.cache/downloads"
sdist_name="llama_cpp_python-$version.tar.gz"

if [[ -f "$dest/.complete-$version" ]]; then
  echo "vocab files already in $dest"
  exit 0
fi

sdist="${TESSERA_LCP_SDIST:-}"
if [[ -z "$sdist" ]]; then
  sdist="$downloads/$sdist_name"
  if [[ ! -f "$sdist" ]]; then
    mkdir -p "$downloads"
    echo "downloading llama-cpp-python==$version (source distribution, ~75 MB) ..."
    if ! python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$downloads"; then
      echo "error: could not download llama-cpp-python==$version from the package index." >&2
      echo "       Are you offline? Set TESSERA_LCP_SDIST=/path/to/$sdist_name to use a local copy." >&2
      exit 1
    fi
  fi
fi
if [[ ! -f "$sdist" ]]; then
  echo "error: $sdist does not exist" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$sdist" -C "$tmp" --wildcards "llama_cpp_python-$version/vendor/llama.cpp/models/ggml-vocab-*"
mkdir -p "$dest"
cp "$tmp/llama_cpp_python-$version/vendor/llama.cpp/models/"ggml-vocab-* "$dest/"
touch "$dest/.complete-$version"
echo "extracted $(ls "$dest" | grep -c '\.gguf$') vocab files into $dest"

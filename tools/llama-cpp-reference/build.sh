#!/usr/bin/env bash
# Builds llama.cpp (from the llama-cpp-python 0.3.36 source distribution on
# PyPI, the same archive scripts/fetch-test-vocabs.sh uses) and the comparison
# tool greedy_ids against it, into .cache/llama-cpp/ (git-ignored). Not part of
# the build or CI: used to regenerate tests/integration/golden_ids.inc and to
# measure llama.cpp (llama-bench, llama-perplexity, llama-server for
# bench/serving/) on the same machine. About 15 minutes on 2 cores, a few more
# for llama-server. Needs no network once the sdist is in .cache/llama-cpp/:
# llama-server is built without its web UI (LLAMA_BUILD_UI=OFF runs no npm,
# LLAMA_USE_PREBUILT_UI=OFF downloads no assets from Hugging Face; the sdist
# carries only the UI's Svelte sources). JOBS (default 2) caps ninja.
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=.cache/llama-cpp
mkdir -p "$cache"
sdist=$(ls "$cache"/llama_cpp_python-0.3.36.tar.gz 2>/dev/null || true)
if [[ -z $sdist ]]; then
  python3 -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$cache"
  sdist="$cache/llama_cpp_python-0.3.36.tar.gz"
fi
[[ -d $cache/src ]] || { mkdir -p "$cache/src" && tar xzf "$sdist" -C "$cache/src" --strip-components=1; }
src="$cache/src/vendor/llama.cpp"
# GCC 12 miscompiles llama.cpp's AMX path (an illegal instruction on any
# prompt longer than one token on Sapphire Rapids): where the CPU has AMX tiles,
# -march=native would turn it on, so it is switched off and the build says so.
# Figures from such a build are "llama.cpp, AMX off".
amx_off=()
if grep -qw amx_tile /proc/cpuinfo; then
  amx_off=(-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
           -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
  echo "build.sh: this CPU has AMX; llama.cpp is built with it off (GCC 12 miscompiles its AMX path)"
fi
cmake -S "$src" -B "$cache/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON "${amx_off[@]}" \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
ninja -C "$cache/build" -j "${JOBS:-2}" llama-bench llama-perplexity llama-speculative-simple llama-speculative \
  llama-lookup llama-quantize llama-imatrix llama-server
g++ -O2 -std=c++17 tools/llama-cpp-reference/greedy_ids.cpp -I"$src/include" -I"$src/ggml/include" \
  -L"$cache/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$PWD/$cache/build/bin" -o "$cache/greedy_ids"
echo "built: $cache/build/bin/llama-bench, llama-perplexity, llama-quantize, llama-imatrix, llama-server, $cache/greedy_ids"

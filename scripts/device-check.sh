#!/usr/bin/env bash
# The CUDA forward's check on a GPU machine lent through the `device` tool
# (issue 22; docs/cuda.md). Two halves:
#
#   scripts/device-check.sh stage   # here: build, then stage what must travel
#   scripts/device-check.sh run     # there: kernel tests, golden ids, perplexity, speed
#   scripts/device-check.sh kernels # there, before the model has arrived: the kernel tests alone
#
# `stage` builds the CUDA targets, then fills git-ignored folders:
#   .devcheck/     bundle.tar.xz: the binaries, the project's libraries and
#                  plugins, the system libraries they need that a CUDA image
#                  may lack (Boost, spdlog, fmt, OpenBLAS, the CUDA runtime...);
#   .devmodel1/2/3 the default model cut in three, since one call carries at
#                  most 64 MiB (the working tree included).
# The device tool keeps ignored paths between calls while the machine stays
# warm (30 s): carry .devcheck and .devmodel1, then .devmodel2, then
# .devmodel3, each call right after the last; `run` unpacks the bundle, joins
# the parts and prints the model's size and sha256 beside the expected one.
#
# `run` expects the checkout at /work/main (the binaries' library paths and
# the tests' data paths are absolute); elsewhere it links /work/main to it.
# Results go to $OUT (at most 8 files): nvidia-smi.txt (with ldd and the
# model's sha256), kernels.log, integration.log, bench-graphs.json,
# bench-launches.json, bench-errors.log; `kernels` writes first-call.txt and
# kernels-first.log. `run` exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
model_sha256=$(sed -n 's/^sha256=//p' scripts/fetch-model.sh 2>/dev/null | head -1)

stage() {
  set -e
  bash scripts/build.sh --target test_arch_transformer_cuda --target cuda_integration_test \
    --target tessera_cuda_bench --target tessera_runtime --target tessera_test_fixtures
  rm -rf .devcheck .devmodel1 .devmodel2 .devmodel3
  local pack=build/devcheck-pack
  rm -rf "$pack" && mkdir -p "$pack/.devcheck/bin" "$pack/.devcheck/syslib" "$pack/.devcheck/fallback" \
    "$pack/build/tests/fixtures" "$pack/.cache/eval"
  for name in test_arch_transformer_cuda cuda_integration_test tessera_cuda_bench; do
    strip -o "$pack/.devcheck/bin/$name" "build/bin/$name"
  done
  cp -a build/lib "$pack/build/"
  cp -a build/tests/fixtures/plugins "$pack/build/tests/fixtures/"
  head -c 65536 .cache/eval/kjv.txt > "$pack/.cache/eval/kjv.txt"  # the perplexity test reads 20000 bytes
  # Every library outside glibc that a binary or plugin needs and the build
  # does not make; the C++ and OpenMP runtimes only as a fallback (the
  # image's own are newer).
  { ldd "$pack"/.devcheck/bin/* build/lib/*.so* build/lib/tessera/plugins/*.so 2>/dev/null || true; } |
    awk '/=> \//{print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libcuda)\.so' |
    grep -v "^$PWD/build/" | while read -r lib; do
      case $(basename "$lib") in
        libstdc++*|libgcc_s*|libgomp*) cp -L "$lib" "$pack/.devcheck/fallback/" ;;
        *) cp -L "$lib" "$pack/.devcheck/syslib/" ;;
      esac
    done
  strip --strip-unneeded "$pack"/.devcheck/syslib/* "$pack"/.devcheck/fallback/* 2>/dev/null || true
  # One call carries at most 64 MiB, the working tree (~20 MB) included:
  # the bundle (xz) rides with the first third of the model.
  mkdir -p .devcheck .devmodel1 .devmodel2 .devmodel3
  tar -C "$pack" -cJf .devcheck/bundle.tar.xz .
  split -n 3 -d "$model" .devmodel.part
  mv .devmodel.part00 .devmodel1/part; mv .devmodel.part01 .devmodel2/part; mv .devmodel.part02 .devmodel3/part
  touch .git/info/exclude
  for d in .devcheck .devmodel1 .devmodel2 .devmodel3; do
    grep -qx "/$d/" .git/info/exclude || echo "/$d/" >> .git/info/exclude
  done
  du -sh .devcheck/bundle.tar.xz .devmodel1 .devmodel2 .devmodel3
  echo "carry, one call right after another (the machine stays warm 30 s):" \
       "[.devcheck, .devmodel1], then [.devmodel2], then [.devmodel3] with: bash scripts/device-check.sh run"
}

# Unpacks the bundle and chooses the library path (the C++ runtimes of the
# build machine only where the image lacks what the binaries need).
unpack() {
  python3 -c "import tarfile; tarfile.open('.devcheck/bundle.tar.xz').extractall('.')" || {
    echo "device-check: cannot unpack .devcheck/bundle.tar.xz (was .devcheck carried?)" >&2; exit 1; }
  export LD_LIBRARY_PATH=$PWD/.devcheck/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  local missing
  missing=$(ldd .devcheck/bin/cuda_integration_test 2>&1 | grep -c "not found" || true)
  if [[ $missing != 0 ]]; then export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.devcheck/fallback; fi
  export TESSERA_REQUIRE_GPU=1
}

kernels() {
  out=${OUT:-/tmp/device-check}
  mkdir -p "$out"
  unpack
  { nvidia-smi; ldd .devcheck/bin/test_arch_transformer_cuda; } > "$out/first-call.txt" 2>&1
  timeout 120 .devcheck/bin/test_arch_transformer_cuda 2>&1 | tee "$out/kernels-first.log" | tail -25
  return "${PIPESTATUS[0]}"
}

run() {
  out=${OUT:-/tmp/device-check}
  mkdir -p "$out"
  root=$PWD
  if [[ $root != /work/main ]]; then
    if [[ -e /work/main && ! -L /work/main ]]; then
      echo "device-check: /work/main exists and is not a link: the binaries' paths cannot be made to resolve" >&2
      exit 1
    fi
    mkdir -p /work && ln -sfn "$root" /work/main
  fi
  unpack
  export TESSERA_REQUIRE_MODEL=1
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1
  ldd .devcheck/bin/cuda_integration_test >> "$out/nvidia-smi.txt" 2>&1
  mkdir -p models
  if [[ -f .devmodel1/part && -f .devmodel2/part && -f .devmodel3/part ]]; then
    cat .devmodel1/part .devmodel2/part .devmodel3/part > "$model"
  fi
  local sum
  sum=$(sha256sum "$model" 2>/dev/null | cut -d' ' -f1)
  echo "model: $(stat -c %s "$model" 2>/dev/null) bytes, sha256 $sum (expected $model_sha256)" | tee -a "$out/nvidia-smi.txt"
  if [[ $sum != "$model_sha256" ]]; then
    echo "device-check: the model did not arrive whole (were .devmodel1..3 carried in three calls in a row?)" >&2
    exit 1
  fi
  local failed=0
  timeout 120 .devcheck/bin/test_arch_transformer_cuda 2>&1 | tee "$out/kernels.log" | tail -5
  [[ ${PIPESTATUS[0]} == 0 ]] || failed=1
  timeout 240 .devcheck/bin/cuda_integration_test 2>&1 | tee "$out/integration.log" | tail -8
  [[ ${PIPESTATUS[0]} == 0 ]] || failed=1
  timeout 90 .devcheck/bin/tessera_cuda_bench "$model" > "$out/bench-graphs.json" 2> "$out/bench-errors.log" || failed=1
  timeout 90 .devcheck/bin/tessera_cuda_bench "$model" --no-graphs > "$out/bench-launches.json" \
    2>> "$out/bench-errors.log" || failed=1
  cat "$out"/bench-*.json "$out/bench-errors.log"
  return $failed
}

case $mode in
  stage) stage ;;
  run) run ;;
  kernels) kernels ;;
  *) echo "usage: scripts/device-check.sh stage|run|kernels" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# The CUDA forward's check on a GPU machine lent through the `device` tool
# (issue 22; docs/cuda.md). Two halves:
#
#   scripts/device-check.sh stage   # here: build, then stage what must travel
#   scripts/device-check.sh kernels # there, first call: the kernel tests alone
#   scripts/device-check.sh stash   # there, second call: keeps the part it carried
#   scripts/device-check.sh run     # there, third call: kernel tests, golden ids,
#                                   # perplexity, speed, a per-kernel profile
#
# `stage` builds the CUDA targets, then fills git-ignored folders:
#   .devcheck/     bundle.tar.xz: the binaries, the project's libraries and
#                  plugins, the system libraries they need that a CUDA image
#                  may lack (Boost, spdlog, fmt, OpenBLAS, the CUDA runtime...);
#   .devmodel1/2/3 the default model cut in three, since one call carries at
#                  most 64 MiB (the working tree included).
# A carried path lasts one call: the next call's copy of the tree removes
# every carried path it does not name (seen 2026-12-04). So every mode first
# stashes what its call carried under $stash (outside the checkout; kept
# while the machine stays warm, 30 s): carry .devcheck and .devmodel1 with
# `kernels`, then .devmodel2 with `stash`, then .devmodel3 with `run`, each
# call right after the last. `run` joins the parts and checks the model's
# sha256 before anything else.
#
# `run` expects the checkout at /work/main (the binaries' library paths and
# the tests' data paths are absolute); elsewhere it links /work/main to it.
# Results go to $OUT (at most 8 files): nvidia-smi.txt (with ldd and the
# model's sha256), kernels.log, integration.log, bench-graphs.json,
# bench-launches.json, bench-errors.log, ncu-kernels.csv (each kernel's time
# in a short decode, where ncu is there); `kernels` writes first-call.txt and
# kernels-first.log. `run` exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
model_sha256=$(sed -n 's/^sha256=//p' scripts/fetch-model.sh 2>/dev/null | head -1)
stash=/tmp/tessera-devcheck

# Copies whatever of .devcheck and .devmodel1..3 this call carried into $stash.
keep_carried() {
  mkdir -p "$stash"
  [[ -f .devcheck/bundle.tar.xz ]] && cp .devcheck/bundle.tar.xz "$stash/bundle.tar.xz"
  local i
  for i in 1 2 3; do
    [[ -f .devmodel$i/part ]] && cp .devmodel$i/part "$stash/model.part$i"
  done
  ls "$stash"
}

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
       "[.devcheck, .devmodel1] with: bash scripts/device-check.sh kernels;" \
       "[.devmodel2] with: bash scripts/device-check.sh stash;" \
       "[.devmodel3] with: bash scripts/device-check.sh run"
}

# Unpacks the bundle and chooses the library path (the C++ runtimes of the
# build machine only where the image lacks what the binaries need).
unpack() {
  python3 -c "import tarfile; tarfile.open('$stash/bundle.tar.xz').extractall('.')" || {
    echo "device-check: cannot unpack $stash/bundle.tar.xz (was .devcheck carried by an earlier call on this machine?)" >&2
    exit 1; }
  export LD_LIBRARY_PATH=$PWD/.devcheck/syslib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  local missing
  missing=$(ldd .devcheck/bin/cuda_integration_test 2>&1 | grep -c "not found" || true)
  if [[ $missing != 0 ]]; then export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/.devcheck/fallback; fi
  export TESSERA_REQUIRE_GPU=1
}

kernels() {
  out=${OUT:-/tmp/device-check}
  mkdir -p "$out"
  keep_carried
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
  keep_carried
  unpack
  export TESSERA_REQUIRE_MODEL=1
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1
  ldd .devcheck/bin/cuda_integration_test >> "$out/nvidia-smi.txt" 2>&1
  mkdir -p models
  if [[ -f $stash/model.part1 && -f $stash/model.part2 && -f $stash/model.part3 ]]; then
    cat "$stash"/model.part1 "$stash"/model.part2 "$stash"/model.part3 > "$model"
  fi
  local sum
  sum=$(sha256sum "$model" 2>/dev/null | cut -d' ' -f1)
  echo "model: $(stat -c %s "$model" 2>/dev/null) bytes, sha256 $sum (expected $model_sha256)" | tee -a "$out/nvidia-smi.txt"
  if [[ $sum != "$model_sha256" ]]; then
    echo "device-check: the model did not arrive whole (were .devmodel1..3 carried by three calls in a row?)" >&2
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
  # Each kernel's time in a short decode (launched one by one): where the
  # step's time goes. ncu replays every kernel, so the run is kept small.
  if command -v ncu > /dev/null; then
    timeout 150 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
      .devcheck/bin/tessera_cuda_bench "$model" --prompt 16 --decode 4 --rounds 1 --no-graphs \
      > "$out/ncu-kernels.csv" 2>> "$out/bench-errors.log" || echo "device-check: ncu failed (not counted)" >&2
  else
    echo "device-check: no ncu on this machine: no per-kernel profile" >&2
  fi
  return $failed
}

case $mode in
  stage) stage ;;
  run) run ;;
  kernels) kernels ;;
  stash) keep_carried ;;
  *) echo "usage: scripts/device-check.sh stage|kernels|stash|run" >&2; exit 2 ;;
esac

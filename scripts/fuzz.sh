#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/fuzz_*.cpp) with clang into build-fuzz/
# and runs each for the given number of seconds (default 60), one per core at a time.
#
# The whole core is compiled with -fsanitize=fuzzer-no-link plus ASan/UBSan so
# that libFuzzer sees coverage of the code under test; the targets themselves
# get -fsanitize=fuzzer,address,undefined (fuzz/CMakeLists.txt). Seeds are
# generated here (small valid GGUF, safetensors and pipeline files) into
# build-fuzz/corpus/<target>/, together with any seeds committed under
# fuzz/corpus/<name>/. Crashes land in build-fuzz/artifacts/<target>/ and make
# the script fail; turn each into a regression test.
set -euo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
cd "$root"

if ! command -v clang++ >/dev/null; then
  echo "error: clang++ is needed for libFuzzer (apt-get install clang)" >&2
  exit 1
fi

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_BUILD_FUZZERS=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCHMARKS=OFF \
  -DTESSERA_CUDA=OFF -DTESSERA_SANITIZE=ON -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$build" --target tessera_fuzzers -j "$(nproc)"

# Seeds: one minimal and one richer valid file of each format.
mkdir -p "$build/corpus/fuzz_gguf" "$build/corpus/fuzz_safetensors" "$build/corpus/fuzz_pipeline" \
  "$build/corpus/fuzz_hf_quantized"
python3 - "$build/corpus" <<'PY'
import json, struct, sys, os
out = sys.argv[1]

def gguf(metadata, tensors, alignment=32):
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    def value(t, v):
        fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}
        if t == 8:
            return s(v)
        if t == 9:
            et, items = v
            return struct.pack("<IQ", et, len(items)) + b"".join(value(et, i) for i in items)
        return struct.pack(fmt[t], v)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for k, t, v in metadata:
        head += s(k) + struct.pack("<I", t) + value(t, v)
    data, infos = b"", b""
    for name, dims, ggml_type, payload in tensors:
        while len(data) % alignment:
            data += b"\0"
        infos += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ggml_type, len(data))
        data += payload
    body = head + infos
    while len(body) % alignment:
        body += b"\0"
    return body + data

def write(path, b):
    with open(path, "wb") as f:
        f.write(b)

write(os.path.join(out, "fuzz_gguf", "empty.gguf"), gguf([], []))
meta = [("general.architecture", 8, "llama"), ("llama.block_count", 4, 1), ("llama.embedding_length", 4, 32),
        ("llama.attention.head_count", 4, 4), ("llama.rope.freq_base", 6, 10000.0), ("k.bool", 7, 1),
        ("k.i8", 1, -3), ("k.u16", 2, 7), ("k.i16", 3, -7), ("k.i32", 5, -9), ("k.u64", 10, 2**40),
        ("k.i64", 11, -2**40), ("k.f64", 12, 0.25), ("k.u8", 0, 200),
        ("tokenizer.ggml.tokens", 9, (8, ["a", "b", "c"])), ("nested", 9, (9, [(4, [1, 2]), (6, [0.5])]))]
tensors = [("token_embd.weight", [32, 3], 0, bytes(32 * 3 * 4)),
           ("blk.0.attn_q.weight", [32, 2], 8, bytes(2 * 34)),
           ("blk.0.ffn_up.weight", [32, 1], 3, bytes(20))]
write(os.path.join(out, "fuzz_gguf", "tiny_llama.gguf"), gguf(meta, tensors))
write(os.path.join(out, "fuzz_gguf", "align64.gguf"),
      gguf([("general.alignment", 4, 64)], [("x", [4], 0, bytes(16)), ("y", [2, 2], 1, bytes(8))], 64))

def safetensors(entries, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, payload in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data

write(os.path.join(out, "fuzz_safetensors", "one.safetensors"), safetensors([("w", "F32", [2, 2], bytes(16))]))
write(os.path.join(out, "fuzz_safetensors", "mixed.safetensors"),
      safetensors([("a", "F16", [3], bytes(6)), ("b", "BF16", [1, 2], bytes(4)), ("c", "I8", [5], bytes(5)),
                   ("d", "U8", [1], bytes(1)), ("e", "I32", [2], bytes(8))], {"format": "pt"}))

# fuzz_hf_quantized: a config choice byte (fuzz/fuzz_hf_quantized.cpp), then
# one packed Linear of 32 outputs and 64 inputs.
i32 = lambda n, f: struct.pack("<%di" % n, *[f(k) for k in range(n)])
f16 = lambda n: struct.pack("<%de" % n, *[0.01 * (1 + k % 7) for k in range(n)])
write(os.path.join(out, "fuzz_hf_quantized", "gptq_act_order"), bytes([0]) + safetensors([
    ("l.qweight", "I32", [8, 32], i32(256, lambda k: k * 2654435761 % 2**31)),
    ("l.qzeros", "I32", [2, 4], i32(8, lambda k: 0x77777777)),
    ("l.scales", "F16", [2, 32], f16(64)),
    ("l.g_idx", "I32", [64], i32(64, lambda k: (k * 37 % 64) // 32))]))
write(os.path.join(out, "fuzz_hf_quantized", "awq_gemm"), bytes([3]) + safetensors([
    ("l.qweight", "I32", [64, 4], i32(256, lambda k: k * 40503 % 2**31)),
    ("l.qzeros", "I32", [2, 4], i32(8, lambda k: 0x12345678)),
    ("l.scales", "F16", [2, 32], f16(64))]))

# Pipelines over the fixture plugins fuzz_pipeline loads (fuzz/CMakeLists.txt).
fixtures = ('[kvcache]\nplugin = "fixture_kv"\n[attention]\nplugin = "fixture_attn"\n'
            '[decoding]\nplugin = "fixture_fixed"\n')
write(os.path.join(out, "fuzz_pipeline", "minimal.toml"), ('[model]\npath = "m.gguf"\n' + fixtures).encode())
write(os.path.join(out, "fuzz_pipeline", "full.toml"), (
    '[model]\npath = "models/m.gguf"\narch = "auto"\n'
    '[run]\nprompt = "hi"\nprompts = ["a", "b"]\nmax_tokens = 16\nchat = true\nthreads = 2\ncontext = 512\n'
    '[sampling]\ntemperature = 0.7\ntop_k = 40\ntop_p = 0.9\nmin_p = 0.05\nseed = 42\n'
    '[plugins]\npaths = ["p"]\n'
    '[kvcache]\nplugin = "fixture_kv"\nblock_size = 32\nmemory = "1GiB"\nswap_file = "s.bin"\n'
    '[attention]\nplugin = "fixture_attn"\ntile = 64\n'
    '[decoding]\nplugin = "fixture_fixed"\ntoken = 3\nratio = 0.25\nflag = true\nmode = "exact"\n'
    'memory = "2MiB"\nfile = "f.txt"\n'
    '[quant]\nplugin = "fixture_quant"\nactivations = "f32"\n').encode())
write(os.path.join(out, "fuzz_pipeline", "override.toml"),
      ('--set quant.activations=f32\n[model]\npath = "m.gguf"\n' + fixtures + '[quant]\nplugin = "fixture_quant"\n').encode())
write(os.path.join(out, "fuzz_pipeline", "speculative.toml"),
      ('[model]\npath = "m.gguf"\n' + fixtures + '[speculative]\nmethod = "both"\ndraft_model = "d.gguf"\n'
       'max_draft_tokens = 4\nadaptive = false\ndraft_min_probability = 0.6\nlookup_min_ngram = 1\n'
       'lookup_max_ngram = 3\n').encode())
PY

# libFuzzer runs a target on one core: the targets run side by side, one per
# core, so the stage takes about ceil(targets / cores) x seconds. (wait -n -p:
# bash 5.1 or later, as Debian 12 has.)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fuzz_one() {  # target binary; its output goes to build-fuzz/<target>.report
  local bin=$1 name corpus artifacts committed seeds=()
  name="$(basename "$bin")"
  corpus="$build/corpus/$name"
  artifacts="$build/artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  committed="$root/fuzz/corpus/${name#fuzz_}"
  [[ -d "$committed" ]] && seeds+=("$committed")
  {
    echo "== $name for ${seconds}s"
    if ! "$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" 2>"$build/$name.log"; then
      echo "!! $name found a failure; see $build/$name.log and $artifacts/"
      tail -n 40 "$build/$name.log"
      return 1
    fi
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$build/$name.log" | tail -n 2 || true
  } >"$build/$name.report" 2>&1
}

status=0
running=0
finish_one() {  # waits for one target and prints its report (to stderr if it failed)
  local done_pid
  if wait -n -p done_pid; then
    cat "${reports[$done_pid]}"
  else
    status=1
    cat "${reports[$done_pid]}" >&2
  fi
  running=$((running - 1))
}
# Stopped early (a CI timeout, an error here): no fuzzer is left running.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
declare -A reports=()
for bin in "$build"/bin/fuzz_*; do
  [[ -x "$bin" ]] || continue
  ((running < $(nproc))) || finish_one
  fuzz_one "$bin" &
  reports[$!]="$build/$(basename "$bin").report"
  running=$((running + 1))
done
while ((running > 0)); do finish_one; done
exit $status

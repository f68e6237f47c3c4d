#!/usr/bin/env bash
# Installs Tessera into a temporary prefix, builds examples/out-of-tree-architecture
# against it with find_package(Tessera) (the SDK and Tessera::arch_blocks), and
# checks that the installed `tessera` serves a model of an architecture the core
# has never heard of ("tessera-bigram") with it: listed, inspected, run.
# Usage: out_of_tree_architecture_test.sh BUILD_DIR SOURCE_DIR MAKE_BIGRAM_GGUF
set -euo pipefail
build=$1
source=$2
make_gguf=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
cmake -S "$source/examples/out-of-tree-architecture" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/example" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
plugin_dir="$work/example/plugins"
test -f "$plugin_dir/libtessera_arch_bigram.so"
exports=$(nm -D --defined-only "$plugin_dir/libtessera_arch_bigram.so" | awk '{print $NF}')
if [[ $exports != tessera_plugin_entry ]]; then
  echo "libtessera_arch_bigram.so exports more than its entry:"; echo "$exports"; exit 1
fi

tessera="$work/prefix/bin/tessera"
listing=$("$tessera" plugins --path "$plugin_dir")
grep -q "arch *bigram" <<<"$listing" || { echo "$listing"; exit 1; }

model="$source/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ ! -f "$model" ]]; then
  if [[ -n ${TESSERA_REQUIRE_MODEL:-} && ${TESSERA_REQUIRE_MODEL} != 0 ]]; then
    echo "FAILED: $model is absent (TESSERA_REQUIRE_MODEL is set)"; exit 1
  fi
  echo "SKIPPED the model part: $model is absent (run scripts/fetch-model.sh)"
  exit 0
fi
"$make_gguf" "$model" "$work/bigram.gguf"

# Without the plugin the core cannot run it, and says which architecture it lacks.
if "$tessera" run "$source/pipelines/quickstart.toml" -q --set "model.path=\"$work/bigram.gguf\"" 2>"$work/err.txt"; then
  echo "a model of an unknown architecture ran without its plugin"; exit 1
fi
grep -q "no architecture plugin can load this model (architecture 'tessera-bigram')" "$work/err.txt" ||
  { cat "$work/err.txt"; exit 1; }

# With it: inspect shows the plugin's own hyper-parameters, and the model runs.
TESSERA_PLUGIN_PATH="$plugin_dir" "$tessera" inspect "$work/bigram.gguf" >"$work/inspect.txt"
grep -q "architecture: *tessera-bigram" "$work/inspect.txt" || { cat "$work/inspect.txt"; exit 1; }
grep -q "arch plugin: *bigram" "$work/inspect.txt" || { cat "$work/inspect.txt"; exit 1; }
grep -q "embedding_length *576" "$work/inspect.txt" || { cat "$work/inspect.txt"; exit 1; }
TESSERA_PLUGIN_PATH="$plugin_dir" "$tessera" run "$source/pipelines/quickstart.toml" -q \
  --set "model.path=\"$work/bigram.gguf\"" --set run.context=64 --max-tokens 8 \
  --metrics-json "$work/metrics.json" >"$work/out.txt"
python3 - "$work/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["plugins"]["arch"]["plugin"] == "bigram", m["plugins"]
assert m["plugins"]["attention"]["plugin"] == "none", "a model without attention layers asked for a kernel"
assert m["generated_tokens"] > 0 or m["stop_reason"] == "eos", m
print("out-of-tree architecture generated", m["generated_tokens"], "tokens, stop:", m["stop_reason"])
PY

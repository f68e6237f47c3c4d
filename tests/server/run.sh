#!/usr/bin/env bash
# End-to-end tests of `tessera serve`: the official openai Python client, curl,
# and the chat page in a headless Chromium (Selenium).
#
# Usage: tests/server/run.sh TESSERA [venv|openai_client|curl|chat_page]...
#   TESSERA  the tessera binary (build/bin/tessera)
#   venv     only make the Python environment (CTest's fixture, server_test_venv)
#   the rest run that test; none named: all three
#
# The Python packages (requirements.txt, pinned) go into .cache/server-test-venv
# (git-ignored), made with `python3 -m venv` and pip once and reused while
# requirements.txt is unchanged; PyPI must be reachable to make it.
#
# Exit status: 0 passed, 1 failed, 77 skipped (CTest's SKIP_RETURN_CODE), the
# reason printed. The model absent: skipped, or failed where
# TESSERA_REQUIRE_MODEL is set (CI fetched it). Chromium or chromedriver
# absent: the chat page test alone is skipped.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
skip=77

if (($# < 1)); then
  echo "usage: $0 TESSERA [venv|openai_client|curl|chat_page]..." >&2
  exit 2
fi
tessera=$(realpath "$1")
shift
tests=("$@")
((${#tests[@]})) || tests=(openai_client curl chat_page)
[[ -x $tessera ]] || { echo "FAILED: $tessera is not an executable (build it: ninja -C build tessera)"; exit 1; }

# OpenMP threads that spin while they wait stall other processes on few cores.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree

model="$source_dir/models/SmolLM2-135M-Instruct.Q4_1.gguf"
model_required() { [[ -n ${TESSERA_REQUIRE_MODEL:-} && ${TESSERA_REQUIRE_MODEL} != 0 ]]; }
if [[ ! -f $model ]]; then
  if model_required; then
    echo "FAILED: $model is absent (TESSERA_REQUIRE_MODEL is set; run scripts/fetch-model.sh)"
    exit 1
  fi
  echo "SKIPPED: $model is absent (run scripts/fetch-model.sh)"
  exit $skip
fi

venv="$source_dir/.cache/server-test-venv"
requirements="$here/requirements.txt"
stamp="$venv/tessera-requirements.txt"

# Makes the venv unless the one there was made from this requirements.txt.
make_venv() {
  mkdir -p "$source_dir/.cache"
  # Two build trees testing at once must not both build it.
  exec 9>"$source_dir/.cache/server-test-venv.lock"
  flock -w 600 9 || { echo "FAILED: waited 600 s for $source_dir/.cache/server-test-venv.lock"; exit 1; }
  if [[ -f $stamp ]] && cmp -s "$stamp" "$requirements" && "$venv/bin/python" -c 'import openai, selenium' 2>/dev/null; then
    echo "venv: $venv is up to date"
    exec 9>&-
    return
  fi
  command -v python3 >/dev/null || { echo "FAILED: python3 is not installed (scripts/install-deps.sh)"; exit 1; }
  echo "venv: making $venv (pip install -r $requirements)"
  rm -rf "$venv"
  if ! python3 -m venv "$venv"; then
    rm -rf "$venv"
    echo "FAILED: \`python3 -m venv\` could not make $venv (on Debian it needs python3-venv: scripts/install-deps.sh)"
    exit 1
  fi
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q --no-compile --retries 2 --timeout 30 \
      -r "$requirements"; then
    rm -rf "$venv"
    echo "FAILED: could not install the test's Python packages (openai, selenium; $requirements) from PyPI."
    echo "        Is PyPI reachable from this machine (a proxy: set HTTPS_PROXY)? pip's messages are above."
    exit 1
  fi
  cp "$requirements" "$stamp"
  exec 9>&-
  echo "venv: ready ($("$venv/bin/python" -c 'import openai, selenium; print("openai", openai.__version__, "selenium", selenium.__version__)'))"
}

for t in "${tests[@]}"; do
  case $t in
    venv|openai_client|chat_page) make_venv; break ;;
  esac
done

status=0
ran=0
for t in "${tests[@]}"; do
  start=$SECONDS
  rc=0
  case $t in
    venv) continue ;;
    openai_client) "$venv/bin/python" "$here/openai_client_test.py" "$tessera" "$source_dir" || rc=$? ;;
    chat_page) "$venv/bin/python" "$here/chat_page_test.py" "$tessera" "$source_dir" || rc=$? ;;
    curl) bash "$here/curl_test.sh" "$tessera" "$source_dir" || rc=$? ;;
    *) echo "unknown test '$t' (venv, openai_client, curl or chat_page)" >&2; exit 2 ;;
  esac
  case $rc in
    0) echo "== $t: passed ($((SECONDS - start)) s)"; ran=$((ran + 1)) ;;
    "$skip") echo "== $t: skipped (the reason is above)" ;;
    *) echo "== $t: FAILED with status $rc ($((SECONDS - start)) s)"; status=1 ;;
  esac
done
if ((status == 0 && ran == 0)) && [[ ${tests[*]} != venv ]]; then exit $skip; fi
exit $status

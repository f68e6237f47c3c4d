#!/usr/bin/env bash
# Serving load: `tessera serve` against llama.cpp's `llama-server` on the same
# model, the same cores and the same load (bench/serving/load.py: streamed
# /v1/completions, temperature 0, C clients in a closed loop).
#
# The two servers never run at once (two cores): each measurement starts its
# server, waits for /health, runs one load, stops it. The order alternates,
# Tessera c=1, llama c=1, Tessera c=8, llama c=8, ..., and the whole
# alternation repeats ROUNDS times, so that the machine's drift (another job
# on the cores, the host) hits both. Before each measurement the script waits
# while a build runs (ninja, make, cmake, a compiler or linker) or the cores
# are busier than a third of one core without us (30 s polls, at most 20
# minutes) and records the load average; during each measurement it counts
# the CPU time the machine spent outside the server and the load generator
# ("other CPU", from /proc/stat) and the time the hypervisor took (steal):
# a run with much of either is suspect. The first round's c=1 run of each server writes
# its texts; every later run is checked against them (--check-greedy).
# Then Tessera takes 1000 short requests (max_tokens 16, c=8) while its
# resident memory is sampled each second (--rss-pid), and llama-server 300
# (it serves them about four times slower).
#
# Usage: bench/serving/compare.sh            (about 15 minutes on two cores)
# Environment: ROUNDS (2), CONCURRENCY ("1 8 32"), REQUESTS ("64 128 256", one
#   count per concurrency), MAX_TOKENS (128), THREADS (2), RSS_REQUESTS (1000,
#   0: skip), LLAMA_RSS_REQUESTS (300, 0: skip), TESSERA (build/bin/tessera), LLAMA_SERVER
#   (.cache/llama-cpp/build/bin/llama-server, built by
#   tools/llama-cpp-reference/build.sh), LLAMA_EXTRA (more llama-server
#   flags, e.g. "-fa off" or "-kvu"), QUIET_WAIT (1200: the longest wait for a
#   quiet machine before a measurement, seconds), PORT (8090: the first run's port; each
#   run takes the next, as a port the last server closed is held in TIME_WAIT
#   and llama-server does not bind it then), OUT (raw results folder,
#   default .cache/serving/DATE-TIME), TABLE (bench/serving/results/latest.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${ROUNDS:-2}
read -r -a concurrency <<< "${CONCURRENCY:-1 8 32}"
read -r -a requests <<< "${REQUESTS:-64 128 256}"
max_tokens=${MAX_TOKENS:-128}
threads=${THREADS:-2}
declare -A rss_requests=([tessera]=${RSS_REQUESTS:-1000} [llama]=${LLAMA_RSS_REQUESTS:-300})
tessera=${TESSERA:-build/bin/tessera}
llama_server=${LLAMA_SERVER:-.cache/llama-cpp/build/bin/llama-server}
port=${PORT:-8090}
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
out=${OUT:-.cache/serving/$(date +%Y%m%d-%H%M%S)}
table=${TABLE:-bench/serving/results/latest.md}
# llama-server: 32 slots of 512 tokens each (the longest prompt, ~210 tokens,
# and 128 generated fit in a slot; a slot's context is -c / -np).
llama_parallel=${LLAMA_PARALLEL:-32}
llama_ctx=${LLAMA_CTX:-$((llama_parallel * 512))}

[[ ${#concurrency[@]} -eq ${#requests[@]} ]] || { echo "CONCURRENCY and REQUESTS differ in length" >&2; exit 2; }
[[ -x $tessera ]] || { echo "no $tessera: build Tessera first" >&2; exit 2; }
[[ -x $llama_server ]] || { echo "no $llama_server: run tools/llama-cpp-reference/build.sh" >&2; exit 2; }
mkdir -p "$out" "$(dirname "$table")"
log() { echo "[$(date +%T)] $*" | tee -a "$out/log.txt"; }

tessera_cmd=("$tessera" serve pipelines/serving.toml --threads "$threads" --port)
llama_cmd=("$llama_server" -m "$model" -t "$threads" -tb "$threads" --parallel "$llama_parallel" -c "$llama_ctx"
           --cont-batching --metrics --no-webui --host 127.0.0.1 ${LLAMA_EXTRA:-} --port)
declare -A gauge=([tessera]=tessera_requests_running [llama]=llamacpp:requests_processing)
{
  echo "tessera: ${tessera_cmd[*]} PORT"
  echo "llama:   ${llama_cmd[*]} PORT"
  lscpu
  git log -1 --format='tessera commit %H %s' | cut -c1-120
  "$tessera" --version 2>/dev/null || true
  "$llama_server" --version 2>&1 | tail -2 || true
} > "$out/setup.txt"

# CPU jiffies the machine spent busy (user, nice, system, irq, softirq) and
# stolen by the hypervisor, and those of one process (all its threads).
machine_cpu() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat; }
process_cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2> /dev/null || echo 0; }
# Hundredths of a core the machine is busy over 3 s (our server not running).
busy_now() {
  local a b
  read -r a _ < <(machine_cpu); sleep 3; read -r b _ < <(machine_cpu)
  echo $(((b - a) / 3))
}

# Waits while a build runs on the machine (another job's) or the cores are
# busy without us, then writes the load average and the busiest processes
# into the log.
wait_quiet() {
  local waited=0 busy
  while :; do
    busy=$(busy_now)
    if ps -eo comm= | grep -qxE 'ninja|make|cmake|cc1|cc1plus|clang|clang\+\+|clang-[0-9]+|ld|ld\.lld|lld|collect2|as|ctest'; then
      why="a build is running"
    elif ((busy > 33)); then
      why="the cores are busy without us (${busy}% of a core)"
    else
      break
    fi
    if ((waited >= ${QUIET_WAIT:-1200})); then log "$why after $waited s: measuring anyway"; break; fi
    log "$why: waiting (30 s polls)"
    sleep 27
    waited=$((waited + 30))
  done
  log "load: $(uptime | sed 's/.*load average/load average/')"
  top -bn2 -d0.5 -o %CPU | awk '/^top -/ { n++ } n == 2' | sed -n '8,11p' >> "$out/log.txt"
}

server_pid=""
next_port=$port
start_server() {  # $1: tessera | llama, $2: tag; sets port, waits for GET /health 200
  local name=$1 logf="$out/server-$2.log"
  port=$next_port
  next_port=$((next_port + 1))
  if [[ $name == tessera ]]; then "${tessera_cmd[@]}" "$port" > "$logf" 2>&1 &
  else "${llama_cmd[@]}" "$port" > "$logf" 2>&1 &
  fi
  server_pid=$!
  for _ in $(seq 600); do
    if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null) == 200 ]]; then return 0; fi
    kill -0 "$server_pid" 2> /dev/null || { log "$name exited at start: $logf"; tail -5 "$logf" >&2; exit 1; }
    sleep 0.1
  done
  log "$name not ready after 60 s"; exit 1
}
stop_server() {
  [[ -n $server_pid ]] || return 0
  kill -TERM "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  server_pid=""
}
trap stop_server EXIT

# Memory bandwidth of the machine now (tessera bench's decode roofline line).
bandwidth() {
  "$tessera" bench pipelines/quickstart.toml --threads "$threads" --prompt-tokens 16 --gen-tokens 32 \
    > "$out/bandwidth-$1.txt" 2>&1 || true
  log "bandwidth ($1): $(awk '/^decode tokens\/s/ { d = $3 } /GB\/s at the median/ { for (i = 1; i <= NF; ++i) if ($i == "GB/s") u = $(i - 1) }
    /this machine reads/ { r = $4 } END { printf "machine reads %s GB/s (2 threads summing 256 MiB); one-sequence decode %s tok/s reads %s GB/s", r, d, u }' \
    "$out/bandwidth-$1.txt")"
}

measure() {  # $1 server, $2 round, $3 concurrency, $4 requests
  local name=$1 r=$2 c=$3 n=$4 tag="$1-r$2-c$3"
  local check=()
  if [[ -f $out/ref-$name.json ]]; then check=(--check-greedy "$out/ref-$name.json"); else check=(--save-reference "$out/ref-$name.json"); fi
  wait_quiet
  start_server "$name" "$tag"
  curl -s "http://127.0.0.1:$port/metrics" > "$out/metrics-$tag-before.txt" || true
  log "run $tag: $n requests"
  local m0 s0 p0 t0 m1 s1 p1 t1
  read -r m0 s0 < <(machine_cpu); p0=$(process_cpu "$server_pid"); t0=$(date +%s.%N)
  python3 bench/serving/load.py --url "http://127.0.0.1:$port" -c "$c" -n "$n" --max-tokens "$max_tokens" \
    --num-prompts 256 --warmup 2 --label "$name" --gauge "${gauge[$name]}" "${check[@]}" --json "$out/$tag.json" \
    | tee -a "$out/log.txt" || log "run $tag: load.py reported failures (exit $?)"
  read -r m1 s1 < <(machine_cpu); p1=$(process_cpu "$server_pid"); t1=$(date +%s.%N)
  # jiffies: machine busy, stolen, the server's; wall seconds; cores
  echo "$((m1 - m0)) $((s1 - s0)) $((p1 - p0)) $(echo "$t1 - $t0" | bc) $(nproc)" > "$out/cpu-$tag.txt"
  curl -s "http://127.0.0.1:$port/metrics" > "$out/metrics-$tag-after.txt" || true
  stop_server
}

log "results in $out"
for ((r = 1; r <= rounds; ++r)); do
  wait_quiet
  bandwidth "r$r"
  for i in "${!concurrency[@]}"; do
    for name in tessera llama; do
      measure "$name" "$r" "${concurrency[$i]}" "${requests[$i]}"
    done
  done
done

for name in tessera llama; do
  n=${rss_requests[$name]}
  if ((n > 0)); then
    tag="$name-rss"
    wait_quiet
    start_server "$name" "$tag"
    log "run $tag: $n requests, max_tokens 16, c=8, VmRSS of pid $server_pid"
    python3 bench/serving/load.py --url "http://127.0.0.1:$port" -c 8 -n "$n" --max-tokens 16 \
      --num-prompts 64 --warmup 0 --label "$name" --rss-pid "$server_pid" --rss-mark 100 --json "$out/$tag.json" \
      | tee -a "$out/log.txt" || log "run $tag: load.py reported failures"
    stop_server
  fi
done
wait_quiet
bandwidth end

python3 bench/serving/table.py "$out" > "$table"
cp "$table" "$out/table.md"
log "table: $table"
cat "$table"

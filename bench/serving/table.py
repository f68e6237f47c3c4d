#!/usr/bin/env python3
"""Markdown table of a bench/serving/compare.sh run: python3 table.py RESULTS_DIR.

Each cell is the median over the rounds (with two rounds, their mean); the
output tokens/s column also lists every round's figure, in run order.
"""
from __future__ import annotations

import glob
import json
import os
import re
import statistics
import sys

NAMES = {"tessera": "Tessera", "llama": "llama-server"}


def metric(path: str, name: str) -> float | None:
    """Sum of a Prometheus metric's samples (all label sets) in a scrape file."""
    try:
        text = open(path).read()
    except OSError:
        return None
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m and m.group(1) == name:
            total += float(m.group(3))
            seen = True
    return total if seen else None


def delta(out: str, tag: str, name: str) -> float | None:
    a = metric(f"{out}/metrics-{tag}-before.txt", name)
    b = metric(f"{out}/metrics-{tag}-after.txt", name)
    return None if a is None or b is None else b - a


def other_cpu(out: str, tag: str, rep: dict) -> tuple[float | None, float | None]:
    """Percent of the machine's CPU time, during the run, used by neither the
    server nor the load generator, and percent stolen by the hypervisor."""
    try:
        busy, steal, server, wall, cores = open(f"{out}/cpu-{tag}.txt").read().split()
    except (OSError, ValueError):
        return None, None
    total = float(wall) * int(cores) * 100.0  # jiffies available
    other = int(busy) - int(server) - rep.get("client_cpu_s", 0.0) * 100.0
    return max(other, 0.0) / total * 100.0, int(steal) / total * 100.0


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=1):
    return "–" if x is None else f"{x:.{nd}f}"


def main() -> int:
    out = sys.argv[1]
    runs: dict[tuple[str, int], list[tuple[int, dict, str]]] = {}
    for path in sorted(glob.glob(f"{out}/*-r*-c*.json")):
        tag = os.path.basename(path)[:-5]
        m = re.match(r"^(\w+)-r(\d+)-c(\d+)$", tag)
        if not m:
            continue
        runs.setdefault((m.group(1), int(m.group(3))), []).append((int(m.group(2)), json.load(open(path)), tag))
    lines = []
    p = lines.append
    p("| server | clients | req/s | output tok/s (median; rounds) | TTFT p50 / p99 ms | TPOT p50 / p99 ms "
      "| ITL p50 / p99 ms | mean out tok | mean prompt tok | failed / lost / corrupted | greedy ≠ c=1 "
      "| running mean / max | gen tokens per step | cached prompt tok / req | preemptions | other CPU % / steal % |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    conc = sorted({c for _, c in runs})
    best = {}
    for c in conc:
        for name in ("tessera", "llama"):
            rs = sorted(runs.get((name, c), []), key=lambda x: x[0])
            if not rs:
                continue
            reps = [r for _, r, _ in rs]
            tps = [r["output_throughput"] for r in reps]
            best[(name, c)] = med(tps)
            g = [r.get("greedy", {}) for r in reps]
            greedy = sum(x.get("mismatches", 0) for x in g)
            checked = sum(x.get("checked", 0) for x in g)
            cross = sum(x.get("cross_talk", 0) for x in g)
            fails = "/".join(str(sum(r[k] for r in reps)) for k in ("failed", "lost", "corrupted"))
            gauge_mean = med([(r.get("gauge") or {}).get("mean") for r in reps])
            gauge_max = max([(r.get("gauge") or {}).get("max") or 0 for r in reps])
            if name == "tessera":
                per_step = med([(lambda s, t: t / s if s else None)(delta(out, tag, "tessera_engine_steps_total"),
                                                                     delta(out, tag, "tessera_generation_tokens_total"))
                                for _, _, tag in rs])
            else:
                per_step = med([(lambda s, t: t / s if s else None)(delta(out, tag, "llamacpp:n_decode_total"),
                                                                     delta(out, tag, "llamacpp:tokens_predicted_total"))
                                for _, _, tag in rs])
            cached_name = "tessera_prefix_cache_hit_tokens_total" if name == "tessera" else "llamacpp:prompt_tokens_cached_total"
            cached = med([(lambda d, n: None if d is None else d / n)(delta(out, tag, cached_name), r["requests"] + 2)
                          for (_, r, tag) in rs])
            preempt = med([delta(out, tag, "tessera_preemptions_total") for _, _, tag in rs]) if name == "tessera" else None
            oc = [other_cpu(out, tag, r) for _, r, tag in rs]
            other_s = ", ".join(f"{f(o, 0)}/{f(st, 0)}" for o, st in oc)
            p(f"| {NAMES[name]} | {c} | {f(med([r['request_throughput'] for r in reps]), 2)} "
              f"| **{f(med(tps))}** ({', '.join(f(x) for x in tps)}) "
              f"| {f(med([r['ttft_ms']['p50'] for r in reps]))} / {f(med([r['ttft_ms']['p99'] for r in reps]))} "
              f"| {f(med([r['tpot_ms']['p50'] for r in reps]))} / {f(med([r['tpot_ms']['p99'] for r in reps]))} "
              f"| {f(med([r['itl_ms']['p50'] for r in reps]))} / {f(med([r['itl_ms']['p99'] for r in reps]))} "
              f"| {f(med([r['mean_output_tokens'] for r in reps]))} "
              f"| {f(med([r['mean_prompt_tokens'] for r in reps]))} | {fails} "
              f"| {greedy}/{checked}{f' ({cross} cross-talk)' if cross else ''} "
              f"| {f(gauge_mean)} / {f(gauge_max, 0)} | {f(per_step, 2)} | {f(cached)} | {f(preempt, 0)} | {other_s} |")
    p("")
    for c in conc:
        if ("tessera", c) in best and ("llama", c) in best and best[("llama", c)]:
            p(f"- {c} client{'s' if c > 1 else ''}: Tessera / llama-server output tokens/s = "
              f"**{best[('tessera', c)] / best[('llama', c)]:.2f}**")
    rss = []
    for name in ("tessera", "llama"):
        path = f"{out}/{name}-rss.json"
        if os.path.exists(path):
            r = json.load(open(path))
            k = r["rss_kib"]
            mark = [x for x in k if x.startswith("after_")][0]
            mib = lambda v: "–" if v is None else f"{v / 1024:.1f}"
            growth = "–" if k["end"] is None or k[mark] is None else f"{(k['end'] - k[mark]) / 1024:+.1f}"
            rss.append(f"| {NAMES[name]} | {r['requests']} | {r['completed']} | {r['failed']}/{r['lost']}/{r['corrupted']} "
                       f"| {mib(k['start'])} | {mib(k[mark])} | {mib(k['end'])} | {mib(k['max'])} | {growth} |")
    if rss:
        p("")
        p("Resident memory over many requests (max_tokens 16, 8 clients; VmRSS sampled each second, MiB):")
        p("")
        p("| server | requests | completed | failed / lost / corrupted | RSS at start | after 100 | at end | max | end − after 100 |")
        p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        lines.extend(rss)
    logp = f"{out}/log.txt"
    if os.path.exists(logp):
        bw = [l.split("] ", 1)[1] for l in open(logp) if "bandwidth (" in l]
        loads = [l.split("load average: ", 1)[1].strip() for l in open(logp) if "load average:" in l]
        if bw:
            p("")
            p("Memory bandwidth the same minutes (`tessera bench pipelines/quickstart.toml --threads 2 "
              "--prompt-tokens 16 --gen-tokens 32`):")
            p("")
            for b in bw:
                p(f"- {b}")
        if loads:
            firsts = [float(x.split(",")[0]) for x in loads]
            p("")
            p(f"Load average (1 min) before the {len(loads)} measurements: min {min(firsts):.2f}, "
              f"median {statistics.median(firsts):.2f}, max {max(firsts):.2f}.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

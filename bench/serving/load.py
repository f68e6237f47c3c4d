#!/usr/bin/env python3
"""Bounded load generator for an OpenAI-compatible /v1/completions endpoint.

C clients run at once; each sends its next streaming request when its previous
one has ended, R requests in all (a closed loop, as vLLM's benchmark_serving.py
with --max-concurrency and an infinite request rate). Standard library only: a
small HTTP/1.1 client over asyncio streams (chunked transfer encoding,
server-sent events), one connection per request.

Figures, as vLLM's benchmark_serving.py defines them:
  request throughput  completed requests / wall time (first send to last end)
  output tokens/s     generated tokens of all requests / wall time
  TTFT                send -> first chunk with text, per request
  TPOT                (latency - TTFT) / (output tokens - 1), per request with > 1 token
  ITL                 time between successive chunks with text (a chunk may hold several tokens)
  E2E latency         send -> end of the stream
Output tokens of a request: usage.completion_tokens from the stream (asked for
with stream_options.include_usage), else the number of chunks with text.

Every response is validated. A request is
  failed     HTTP status other than 200, or an error object in the stream
  lost       no complete answer: connection refused or reset, or the timeout
  corrupted  the stream does not end with data: [DONE], a chunk is not JSON or
             has no choices/usage, or the text is not text
and with --check-greedy REF (temperature 0), a request whose text differs from
REF's text for the same prompt (REF written by --save-reference, normally at
concurrency 1) is a greedy mismatch; one whose text is exactly another prompt's
reference text is cross-talk (a stream given the wrong request's tokens).

--rss-pid PID samples VmRSS of PID every second (the server's memory) and
reports it before the first request, after --rss-mark requests and at the end.
--gauge NAME polls GET /metrics every 0.25 s and reports the gauge's mean and
maximum while the load runs (e.g. tessera_requests_running,
llamacpp:requests_processing).

Exit status: 0 when no request failed, was lost or corrupted (and no
cross-talk), 1 otherwise, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import statistics
import sys
import time
import urllib.parse
from dataclasses import dataclass, field, asdict

# ---------------------------------------------------------------------------
# Prompts: a fixed, seeded set of plain-text openings of about 20-200 tokens,
# written so that a model continues them at length (essays, stories, notes).

_TOPICS = [
    "the history of the printing press", "how bridges carry their loads", "the life cycle of stars",
    "coral reefs and the animals that live in them", "the invention of the telescope",
    "how bees find their way home", "the economics of a small bakery", "the water cycle",
    "the first railways in Europe", "how vaccines train the immune system", "the geology of volcanoes",
    "the rules of chess and how they changed", "the migration of whales", "how computers store numbers",
    "the architecture of medieval castles", "the chemistry of bread", "the exploration of Antarctica",
    "how rivers shape valleys", "the music of the baroque era", "the design of sailing ships",
    "how plants turn light into sugar", "the growth of cities in the nineteenth century",
    "the mathematics of maps", "the care of old books in a library",
]
_OPENERS = [
    "The following is a long, detailed essay about {t}.",
    "Chapter {n}: {T}\n\nThis chapter explains {t} step by step.",
    "Lecture notes, week {n}. Today's subject is {t}.",
    "Here is a story for children about {t}, told in many short paragraphs.",
    "A beginner's guide to {t}, written by a teacher with many years of experience.",
    "Encyclopedia entry: {T}.",
]
_SENTENCES = [
    "It began long ago, when people first noticed how the world around them worked.",
    "Many of the early ideas were wrong, but each one taught something useful.",
    "Scholars argued about the details for centuries, in letters and in books.",
    "The tools were simple at first: a stick, a stone, a rope and a great deal of patience.",
    "Over time, careful measurement replaced guesswork and legend.",
    "Travellers carried the new methods from one country to the next.",
    "Some towns grew rich from the trade, while others were forgotten.",
    "A young apprentice could spend ten years learning the craft before working alone.",
    "Every season brought its own problems: floods in spring, drought in summer, storms in autumn.",
    "The numbers tell part of the story, but not all of it.",
    "Records kept in monasteries and town halls show how slowly things changed.",
    "When the first machines arrived, many workers feared for their jobs.",
    "Others saw a chance to build something larger than before.",
    "Children learned the basic rules at school and practised them at home.",
    "The most important idea is simple, even if the details are not.",
    "Scientists today still study the question with new instruments.",
    "In the next section we look at three examples in more detail.",
    "First, consider what happens on an ordinary day.",
    "Second, think about what changes when conditions become extreme.",
    "Finally, ask what we still do not understand.",
    "A map drawn in that period shows roads, rivers and a few small villages.",
    "The cost of materials rose and fell with the harvest.",
    "Letters from the time describe long journeys, cold nights and unexpected friends.",
    "Engineers tested each part many times before they trusted it.",
]


def make_prompts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    prompts = []
    for i in range(n):
        topic = rng.choice(_TOPICS)
        head = rng.choice(_OPENERS).format(t=topic, T=topic[0].upper() + topic[1:], n=rng.randint(1, 12))
        # 1 to 11 sentences after the heading: about 20 to 200 tokens in all.
        k = 1 + (i * 7 + rng.randint(0, 3)) % 11
        body = " ".join(rng.sample(_SENTENCES, k))
        prompts.append(f"{head}\n\n{body}")
    return prompts


# ---------------------------------------------------------------------------
# HTTP/1.1 over asyncio streams.


class HttpError(Exception):
    pass


async def _read_headers(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed before the status line")
    parts = status_line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise HttpError(f"bad status line {status_line!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("connection closed inside the headers")
        if line in (b"\r\n", b"\n"):
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers


async def _body_pieces(reader: asyncio.StreamReader, headers: dict[str, str]):
    """Yields the body's bytes as they arrive (chunked, sized or to EOF)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readline()
            if not size_line:
                raise ConnectionError("connection closed inside a chunked body")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            data = await reader.read(min(left, 65536))
            if not data:
                raise ConnectionError("connection closed inside a sized body")
            left -= len(data)
            yield data
    else:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            yield data


async def http_get(host: str, port: int, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    async def go():
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            status, headers = await _read_headers(reader)
            body = b"".join([p async for p in _body_pieces(reader, headers)])
            return status, body
        finally:
            writer.close()

    return await asyncio.wait_for(go(), timeout)


# ---------------------------------------------------------------------------
# One streamed request.


@dataclass
class Result:
    index: int
    prompt_index: int
    ok: bool = False
    status: int = 0
    outcome: str = ""            # ok | failed | lost | corrupted
    error: str = ""
    text: str = ""
    prompt_tokens: int | None = None
    output_tokens: int = 0       # usage, else chunks with text
    usage_tokens: int | None = None
    text_chunks: int = 0
    finish_reason: str | None = None
    ttft: float = 0.0
    latency: float = 0.0
    itl: list[float] = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0


async def stream_completion(host: str, port: int, path: str, payload: dict, res: Result, timeout: float) -> None:
    body = json.dumps(payload).encode()
    req = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
           f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    writer = None

    async def go():
        nonlocal writer
        res.start = time.perf_counter()
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(req)
        await writer.drain()
        res.status, headers = await _read_headers(reader)
        if res.status != 200:
            data = b"".join([p async for p in _body_pieces(reader, headers)])
            res.outcome, res.error = "failed", f"HTTP {res.status}: {data[:300].decode('utf-8', 'replace')}"
            return
        buf = b""
        done = False
        last = None
        pieces: list[str] = []
        async for data in _body_pieces(reader, headers):
            now = time.perf_counter()
            buf += data.replace(b"\r\n", b"\n")
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if not line or line.startswith(b":"):
                        continue  # SSE comment (keep-alive)
                    if not line.startswith(b"data:"):
                        continue  # event:, id:, retry: fields
                    data_s = line[5:].strip()
                    if done:
                        res.outcome, res.error = "corrupted", "data after [DONE]"
                        return
                    if data_s == b"[DONE]":
                        done = True
                        continue
                    try:
                        chunk = json.loads(data_s)
                    except ValueError as e:
                        res.outcome, res.error = "corrupted", f"chunk is not JSON ({e}): {data_s[:200]!r}"
                        return
                    if not isinstance(chunk, dict):
                        res.outcome, res.error = "corrupted", f"chunk is not an object: {data_s[:200]!r}"
                        return
                    if "error" in chunk:
                        res.outcome, res.error = "failed", f"error in stream: {json.dumps(chunk['error'])[:300]}"
                        return
                    usage = chunk.get("usage")
                    if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
                        res.usage_tokens = int(usage["completion_tokens"])
                        if usage.get("prompt_tokens") is not None:
                            res.prompt_tokens = int(usage["prompt_tokens"])
                    choices = chunk.get("choices")
                    if not isinstance(choices, list) or (not choices and usage is None):
                        res.outcome, res.error = "corrupted", f"chunk without choices: {data_s[:200]!r}"
                        return
                    for c in choices:
                        text = c.get("text")
                        if text is None and isinstance(c.get("delta"), dict):
                            text = c["delta"].get("content")
                        if text is not None and not isinstance(text, str):
                            res.outcome, res.error = "corrupted", f"text is not a string: {data_s[:200]!r}"
                            return
                        if text:
                            if last is None:
                                res.ttft = now - res.start
                            else:
                                res.itl.append(now - last)
                            last = now
                            res.text_chunks += 1
                            pieces.append(text)
                        if c.get("finish_reason"):
                            res.finish_reason = c["finish_reason"]
        res.end = time.perf_counter()
        res.latency = res.end - res.start
        res.text = "".join(pieces)
        if not done:
            res.outcome, res.error = "corrupted", "the stream ended without data: [DONE]"
            return
        if buf.strip():
            res.outcome, res.error = "corrupted", f"bytes after the last event: {buf[:200]!r}"
            return
        res.output_tokens = res.usage_tokens if res.usage_tokens is not None else res.text_chunks
        if res.text_chunks == 0:
            res.ttft = res.latency
        res.ok, res.outcome = True, "ok"

    try:
        await asyncio.wait_for(go(), timeout)
    except asyncio.TimeoutError:
        res.outcome, res.error = "lost", f"no complete answer within {timeout} s"
    except (ConnectionError, OSError, asyncio.IncompleteReadError, HttpError, ValueError) as e:
        res.outcome, res.error = ("corrupted" if isinstance(e, (HttpError, ValueError)) else "lost"), repr(e)
    finally:
        if writer is not None:
            writer.close()
        if not res.end:
            res.end = time.perf_counter()
            res.latency = res.end - res.start


# ---------------------------------------------------------------------------
# Statistics.


def percentile(xs: list[float], p: float) -> float:
    """numpy.percentile's default (linear interpolation), as vLLM reports."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    f, c = math.floor(k), math.ceil(k)
    return s[f] + (s[c] - s[f]) * (k - f)


def summary_ms(xs: list[float]) -> dict:
    ms = [x * 1000.0 for x in xs]
    return {"mean": statistics.fmean(ms) if ms else float("nan"), "p50": percentile(ms, 50),
            "p90": percentile(ms, 90), "p99": percentile(ms, 99)}


def read_rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def gauge_value(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            rest = line[len(name):]
            if rest[:1] in (" ", "{"):
                try:
                    return float(rest.rsplit(" ", 1)[1])
                except (IndexError, ValueError):
                    return None
    return None


# ---------------------------------------------------------------------------


async def run(args) -> dict:
    u = urllib.parse.urlsplit(args.url)
    host, port = u.hostname or "127.0.0.1", u.port or 80
    base = u.path.rstrip("/")
    path = base + args.endpoint
    prompts = make_prompts(args.num_prompts, args.seed)

    def payload(prompt: str) -> dict:
        p = {"prompt": prompt, "max_tokens": args.max_tokens, "temperature": args.temperature, "stream": True,
             "stream_options": {"include_usage": True}}
        if args.model:
            p["model"] = args.model
        for kv in args.extra:
            k, _, v = kv.partition("=")
            p[k] = json.loads(v)
        return p

    # Warm-up requests (not counted): one at a time.
    # Their prompts are not in the set, so that no measured prompt finds a cache warmed by them.
    for i, prompt in enumerate(make_prompts(args.warmup, args.seed + 1000)):
        r = Result(-1, -1)
        await stream_completion(host, port, path, payload(prompt), r, args.timeout)
        if not r.ok:
            raise SystemExit(f"warm-up request failed: {r.outcome} {r.error}")

    results: list[Result] = [Result(i, (args.prompt_offset + i) % len(prompts)) for i in range(args.requests)]
    completed = 0
    rss: list[tuple[float, int, int]] = []          # (seconds, requests ended, KiB)
    gauge: list[float] = []
    stop = asyncio.Event()

    async def rss_sampler():
        while True:
            v = read_rss_kib(args.rss_pid)
            if v is not None:
                rss.append((time.perf_counter() - t0, completed, v))
            try:
                await asyncio.wait_for(stop.wait(), 1.0)
                return
            except asyncio.TimeoutError:
                pass

    async def gauge_poller():
        while not stop.is_set():
            try:
                status, body = await http_get(host, port, base + "/metrics", timeout=2.0)
                if status == 200:
                    v = gauge_value(body.decode("utf-8", "replace"), args.gauge)
                    if v is not None:
                        gauge.append(v)
            except (OSError, asyncio.TimeoutError, ConnectionError, HttpError, ValueError):
                pass
            try:
                await asyncio.wait_for(stop.wait(), 0.25)
            except asyncio.TimeoutError:
                pass

    next_index = 0
    rss_mark_kib = None

    async def client():
        nonlocal next_index, completed, rss_mark_kib
        while next_index < len(results):
            r = results[next_index]
            next_index += 1
            await stream_completion(host, port, path, payload(prompts[r.prompt_index]), r, args.timeout)
            completed += 1
            if args.rss_pid and completed == args.rss_mark:
                rss_mark_kib = read_rss_kib(args.rss_pid)

    rss_start = read_rss_kib(args.rss_pid) if args.rss_pid else None
    t0 = time.perf_counter()
    side = []
    if args.rss_pid:
        side.append(asyncio.create_task(rss_sampler()))
    if args.gauge:
        side.append(asyncio.create_task(gauge_poller()))
    await asyncio.gather(*(client() for _ in range(args.concurrency)))
    t1 = time.perf_counter()
    stop.set()
    await asyncio.gather(*side)
    rss_end = read_rss_kib(args.rss_pid) if args.rss_pid else None

    duration = t1 - t0
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.output_tokens for r in ok)
    report = {
        "label": args.label, "url": args.url, "endpoint": args.endpoint, "concurrency": args.concurrency,
        "requests": args.requests, "max_tokens": args.max_tokens, "temperature": args.temperature,
        "num_prompts": args.num_prompts, "seed": args.seed, "duration_s": duration,
        "completed": len(ok),
        "failed": sum(r.outcome == "failed" for r in results),
        "lost": sum(r.outcome == "lost" for r in results),
        "corrupted": sum(r.outcome == "corrupted" for r in results),
        "request_throughput": len(ok) / duration,
        "output_throughput": out_tokens / duration,
        "total_output_tokens": out_tokens,
        "mean_output_tokens": out_tokens / len(ok) if ok else float("nan"),
        "mean_prompt_tokens": (statistics.fmean([r.prompt_tokens for r in ok if r.prompt_tokens is not None])
                               if any(r.prompt_tokens is not None for r in ok) else None),
        "usage_reported": sum(r.usage_tokens is not None for r in ok),
        "finish_reasons": {k: sum(r.finish_reason == k for r in ok) for k in sorted({str(r.finish_reason) for r in ok})},
        "mean_chunks": statistics.fmean([r.text_chunks for r in ok]) if ok else float("nan"),
        "ttft_ms": summary_ms([r.ttft for r in ok]),
        "tpot_ms": summary_ms([(r.latency - r.ttft) / (r.output_tokens - 1) for r in ok if r.output_tokens > 1]),
        "itl_ms": summary_ms([x for r in ok for x in r.itl]),
        "e2el_ms": summary_ms([r.latency for r in ok]),
        "errors": [f"#{r.index} {r.outcome}: {r.error}" for r in results if not r.ok][:20],
        "client_cpu_s": time.process_time(),  # this process, warm-up included
    }
    if args.gauge:
        report["gauge"] = {"name": args.gauge, "samples": len(gauge),
                           "mean": statistics.fmean(gauge) if gauge else None, "max": max(gauge) if gauge else None}
    if args.rss_pid:
        report["rss_kib"] = {"start": rss_start, f"after_{args.rss_mark}": rss_mark_kib, "end": rss_end,
                             "max": max([v for _, _, v in rss] + ([rss_end] if rss_end else []), default=None),
                             "min_after_mark": min((v for _, n, v in rss if n >= args.rss_mark), default=None),
                             "samples": [[round(t, 1), n, v] for t, n, v in rss]}

    # Greedy check against the reference texts.
    if args.check_greedy:
        with open(args.check_greedy) as f:
            ref = {int(k): v for k, v in json.load(f)["texts"].items()}
        by_text = {}
        for k, v in ref.items():
            by_text.setdefault(v, set()).add(k)
        mism, cross, checked, diverge = 0, 0, 0, []
        for r in ok:
            if r.prompt_index not in ref:
                continue
            checked += 1
            want = ref[r.prompt_index]
            if r.text != want:
                mism += 1
                n = 0
                while n < min(len(r.text), len(want)) and r.text[n] == want[n]:
                    n += 1
                d = {"request": r.index, "prompt": r.prompt_index, "common_prefix_chars": n,
                     "len": len(r.text), "ref_len": len(want), "text_at": r.text[max(0, n - 40):n + 80],
                     "ref_at": want[max(0, n - 40):n + 80]}
                if r.text in by_text and r.prompt_index not in by_text[r.text]:
                    # A model that has fallen into repeating one sentence of its prompt can
                    # give another prompt's text too: read the texts before calling it a bug.
                    cross += 1
                    d["same_as_reference_of"] = sorted(by_text[r.text])
                    d["text_head"] = r.text[:160]
                    d["own_reference_head"] = want[:160]
                diverge.insert(0, d) if "same_as_reference_of" in d else diverge.append(d)
        report["greedy"] = {"checked": checked, "mismatches": mism, "cross_talk": cross, "divergences": diverge[:50]}
    if args.save_reference:
        texts: dict[int, str] = {}
        repeat_diff = 0
        for r in ok:
            if r.prompt_index in texts and texts[r.prompt_index] != r.text:
                repeat_diff += 1
            texts.setdefault(r.prompt_index, r.text)
        with open(args.save_reference, "w") as f:
            json.dump({"label": args.label, "max_tokens": args.max_tokens, "texts": texts}, f, indent=1)
        report["reference"] = {"prompts": len(texts), "repeats_that_differ": repeat_diff}
    if args.per_request:
        report["per_request"] = [
            {k: v for k, v in asdict(r).items() if k not in ("itl", "text")} for r in results]
    return report


def print_report(rep: dict) -> None:
    p = print
    p(f"== {rep['label'] or rep['url']}: concurrency {rep['concurrency']}, {rep['requests']} requests, "
      f"max_tokens {rep['max_tokens']}")
    p(f"  completed {rep['completed']}  failed {rep['failed']}  lost {rep['lost']}  corrupted {rep['corrupted']}"
      f"  duration {rep['duration_s']:.2f} s")
    p(f"  request throughput {rep['request_throughput']:.3f} req/s   output {rep['output_throughput']:.1f} tok/s")
    mpt = rep["mean_prompt_tokens"]
    p(f"  mean output tokens {rep['mean_output_tokens']:.1f} (usage in {rep['usage_reported']}/{rep['completed']})"
      f"   mean prompt tokens {mpt if mpt is None else round(mpt, 1)}   finish {rep['finish_reasons']}"
      f"   chunks/request {rep['mean_chunks']:.1f}")
    for key, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"), ("e2el_ms", "E2E")):
        s = rep[key]
        p(f"  {name:5s} ms  mean {s['mean']:8.1f}  p50 {s['p50']:8.1f}  p90 {s['p90']:8.1f}  p99 {s['p99']:8.1f}")
    if "gauge" in rep:
        g = rep["gauge"]
        p(f"  {g['name']}: mean {g['mean'] if g['mean'] is None else round(g['mean'], 2)}  max {g['max']}"
          f"  ({g['samples']} samples)")
    if "rss_kib" in rep:
        r = rep["rss_kib"]
        mib = lambda v: "?" if v is None else f"{v / 1024:.1f} MiB"
        mark = [k for k in r if k.startswith("after_")][0]
        p(f"  RSS start {mib(r['start'])}  {mark.replace('_', ' ')} {mib(r[mark])}  end {mib(r['end'])}"
          f"  max {mib(r['max'])}")
    if "greedy" in rep:
        g = rep["greedy"]
        p(f"  greedy check: {g['checked']} checked, {g['mismatches']} differ from concurrency 1, "
          f"{g['cross_talk']} cross-talk")
    if "reference" in rep:
        p(f"  reference: {rep['reference']['prompts']} prompts saved, "
          f"{rep['reference']['repeats_that_differ']} repeats differ")
    for e in rep["errors"]:
        p(f"  ! {e}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8090", help="server base URL")
    ap.add_argument("--endpoint", default="/v1/completions")
    ap.add_argument("--model", default="", help="'model' field (omitted when empty)")
    ap.add_argument("-c", "--concurrency", type=int, default=8)
    ap.add_argument("-n", "--requests", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--num-prompts", type=int, default=256, help="size of the fixed prompt set")
    ap.add_argument("--seed", type=int, default=0, help="seed of the prompt set")
    ap.add_argument("--prompt-offset", type=int, default=0, help="request i takes prompt (offset + i) %% num-prompts")
    ap.add_argument("--warmup", type=int, default=1, help="requests sent one at a time first, not counted")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per request before it counts as lost")
    ap.add_argument("--extra", action="append", default=[], metavar="KEY=JSON", help="another request field")
    ap.add_argument("--label", default="")
    ap.add_argument("--save-reference", metavar="FILE", help="write each prompt's text (run at concurrency 1)")
    ap.add_argument("--check-greedy", metavar="FILE", help="compare texts with FILE's (temperature 0)")
    ap.add_argument("--rss-pid", type=int, default=0, help="sample this process's VmRSS every second")
    ap.add_argument("--rss-mark", type=int, default=100, help="report RSS after this many requests")
    ap.add_argument("--gauge", default="", help="a /metrics gauge to poll during the run")
    ap.add_argument("--json", metavar="FILE", help="write the report as JSON")
    ap.add_argument("--per-request", action="store_true", help="include every request's figures in the JSON")
    ap.add_argument("--print-prompts", action="store_true", help="print the prompt set and exit")
    args = ap.parse_args()
    if args.print_prompts:
        for i, p in enumerate(make_prompts(args.num_prompts, args.seed)):
            print(json.dumps({"i": i, "prompt": p}))
        return 0
    if args.concurrency < 1 or args.requests < 1:
        ap.error("--concurrency and --requests must be at least 1")
    rep = asyncio.run(run(args))
    print_report(rep)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rep, f, indent=1)
    bad = rep["failed"] + rep["lost"] + rep["corrupted"] + rep.get("greedy", {}).get("cross_talk", 0)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

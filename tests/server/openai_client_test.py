#!/usr/bin/env python3
"""`tessera serve` driven by the official `openai` Python client (PyPI), as a user's code drives it.

Usage: openai_client_test.py TESSERA SOURCE_DIR [unittest options, e.g. -v or a test name]

Three servers of pipelines/serving.toml (context 512, two threads): one with
the defaults for answers, streaming, choices, stop strings, errors and
cancellation; one with --api-key, --max-queue 1, --max-body-bytes 4096 and
--model-name for 401, 429, 413 and the served name; one with
--drain-seconds 1 that receives SIGTERM with two streams in flight.
Exits 77 (skipped, reason printed) when the model is absent, unless
TESSERA_REQUIRE_MODEL is set.
"""

import json
import os
import re
import sys
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_process as sp  # noqa: E402

BINARY = SOURCE = None
ARGV = sys.argv
if __name__ == "__main__":  # the model's absence is reported before anything else
    BINARY, SOURCE, ARGV = sp.main_args("openai_client_test.py TESSERA SOURCE_DIR [unittest options]")

import openai  # noqa: E402
from openai import OpenAI  # noqa: E402

MAIN = None  # the server with default options, shared by most tests

FRANCE = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
COUNT = "Count: 1, 2, 3,"  # a completion that goes on counting: long streams
CANCELLED = 'tessera_request_finished_total{finish_reason="cancelled"}'


def client_for(server, api_key="unused", timeout=60, **kwargs):
    # max_retries=0: the client retries 429 and 5xx by default, which would hide them.
    return OpenAI(base_url=server.base_url + "/v1", api_key=api_key, max_retries=0, timeout=timeout, **kwargs)


def wait_for_metrics(test, server, condition, what, timeout=15.0):
    """Polls /metrics until condition(metrics) holds; fails the test with the last figures otherwise."""
    deadline = time.monotonic() + timeout
    m = {}
    while time.monotonic() < deadline:
        m = sp.metrics(server.base_url)
        if condition(m):
            return m
        time.sleep(0.05)
    shown = {k: v for k, v in m.items() if "bucket" not in k}
    test.fail(f"not within {timeout:.0f} s: {what}; /metrics: {shown}")


def setUpModule():
    global MAIN
    MAIN = sp.Server(BINARY, SOURCE, name="main").start()


def tearDownModule():
    if MAIN is not None:
        rc = MAIN.stop()
        if rc != 0:
            raise AssertionError(f"the main server exited with {rc} on SIGTERM:\n{MAIN.log()}")


class Answers(unittest.TestCase):
    """Completions, chat, streaming, several choices and stop strings on the default server."""

    def setUp(self):
        self.client = client_for(MAIN)

    def test_models_list_names_the_served_model(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], [MAIN.model])
        self.assertEqual(MAIN.model, "SmolLM2-135M-Instruct.Q4_1")  # the file's name without extension
        self.assertEqual(models.data[0].object, "model")

    def test_greedy_completion_repeats(self):
        kwargs = dict(model=MAIN.model, prompt="The capital of France is", max_tokens=16, temperature=0)
        a = self.client.completions.create(**kwargs)
        b = self.client.completions.create(**kwargs)
        self.assertEqual(a.object, "text_completion")
        self.assertEqual(a.model, MAIN.model)
        self.assertEqual(len(a.choices), 1)
        self.assertTrue(a.choices[0].text.strip(), a)
        self.assertEqual(a.choices[0].text, b.choices[0].text, "temperature 0 must give the same text twice")
        self.assertNotEqual(a.id, b.id)
        self.assertIn(a.choices[0].finish_reason, ("length", "stop"))
        self.assertGreater(a.usage.prompt_tokens, 0)
        self.assertTrue(1 <= a.usage.completion_tokens <= 16, a.usage)
        self.assertEqual(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens)
        self.assertEqual(a.usage, b.usage)

    def test_completion_defaults_to_16_tokens(self):
        r = self.client.completions.create(model=MAIN.model, prompt=COUNT, temperature=0)
        self.assertEqual(r.usage.completion_tokens, 16, "OpenAI's default max_tokens for a completion")
        self.assertEqual(r.choices[0].finish_reason, "length")

    def test_chat_completion(self):
        r = self.client.chat.completions.create(model=MAIN.model, messages=FRANCE, max_tokens=48, temperature=0)
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(len(r.choices), 1)
        message = r.choices[0].message
        self.assertEqual(message.role, "assistant")
        self.assertIn("Paris", message.content, "the chat template must reach the model")
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertGreater(r.usage.prompt_tokens, 10, "the chat template's tokens count as prompt")
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)

    def test_chat_stream_equals_the_whole_answer(self):
        kwargs = dict(model=MAIN.model, messages=FRANCE, max_tokens=48, temperature=0)
        whole = self.client.chat.completions.create(**kwargs)
        chunks = list(self.client.chat.completions.create(**kwargs, stream=True,
                                                          stream_options={"include_usage": True}))
        self.assertGreater(len(chunks), 2)
        self.assertTrue(all(c.object == "chat.completion.chunk" for c in chunks))
        self.assertEqual(len({c.id for c in chunks}), 1, "one id for all of a stream's chunks")
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        self.assertGreaterEqual(len(pieces), 2, "streamed in pieces, not in one lump")
        self.assertEqual("".join(pieces), whole.choices[0].message.content)
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        self.assertEqual(finishes, [whole.choices[0].finish_reason])
        # include_usage: a last chunk, before [DONE], with no choices and the usage.
        last = chunks[-1]
        self.assertEqual(last.choices, [])
        self.assertIsNotNone(last.usage)
        self.assertEqual(last.usage.prompt_tokens, whole.usage.prompt_tokens)
        self.assertEqual(last.usage.completion_tokens, whole.usage.completion_tokens)
        self.assertEqual(last.usage.total_tokens, whole.usage.total_tokens)

    def test_stream_without_include_usage_has_no_usage_chunk(self):
        chunks = list(self.client.chat.completions.create(model=MAIN.model, messages=FRANCE, max_tokens=8,
                                                          temperature=0, stream=True))
        self.assertTrue(all(c.choices for c in chunks), "a choice-less usage chunk was not asked for")

    def test_raw_stream_ends_with_done(self):
        conn, r = sp.open_stream(MAIN.port, "/v1/chat/completions",
                                 {"messages": FRANCE, "max_tokens": 8, "stream": True})
        try:
            self.assertEqual(r.status, 200)
            self.assertTrue(r.getheader("Content-Type", "").startswith("text/event-stream"), r.getheaders())
            events = list(sp.sse_data(r))
        finally:
            conn.close()
        self.assertGreaterEqual(len(events), 3, events)
        self.assertEqual(events[-1], "[DONE]")
        self.assertEqual(events.count("[DONE]"), 1)
        last = json.loads(events[-2])
        self.assertIn(last["choices"][0]["finish_reason"], ("length", "stop"))

    def test_two_choices_with_a_seed_repeat(self):
        kwargs = dict(model=MAIN.model, messages=[{"role": "user", "content": "Write a short poem about the sea."}],
                      n=2, seed=1234, temperature=1.0, max_tokens=24)
        a = self.client.chat.completions.create(**kwargs)
        b = self.client.chat.completions.create(**kwargs)
        texts = lambda r: [c.message.content for c in sorted(r.choices, key=lambda c: c.index)]  # noqa: E731
        self.assertEqual(sorted(c.index for c in a.choices), [0, 1])
        self.assertTrue(all(texts(a)), a)
        self.assertEqual(texts(a), texts(b), "the same seed gives the same choices")
        self.assertNotEqual(texts(a)[0], texts(a)[1], "each choice samples on its own")
        self.assertTrue(2 <= a.usage.completion_tokens <= 48, a.usage)
        other = self.client.chat.completions.create(**{**kwargs, "seed": 4321})
        self.assertNotEqual(texts(other), texts(a), "another seed, other samples")

    def test_stop_string_ends_the_text_before_it(self):
        kwargs = dict(model=MAIN.model, prompt=COUNT, max_tokens=24, temperature=0)
        full = self.client.completions.create(**kwargs).choices[0].text
        # The third word of the free text, cut at its first occurrence.
        words = [w for w in re.findall(r"\w+", full)]
        self.assertGreaterEqual(len(words), 3, full)
        stop = words[2]
        expected = full[:full.index(stop)]
        self.assertTrue(expected, (full, stop))
        r = self.client.completions.create(**kwargs, stop=[stop, "never-in-the-text"])
        self.assertEqual(r.choices[0].text, expected, f"stop {stop!r} in {full!r}")
        self.assertEqual(r.choices[0].finish_reason, "stop")
        # Streamed: no piece of the stop string leaks into a chunk.
        chunks = list(self.client.completions.create(**kwargs, stop=stop, stream=True))
        self.assertEqual("".join(c.choices[0].text for c in chunks if c.choices), expected)
        self.assertEqual([c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason],
                         ["stop"])


class Errors(unittest.TestCase):
    """Errors as the client raises them, with OpenAI's error fields."""

    def setUp(self):
        self.client = client_for(MAIN)

    def test_prompt_longer_than_the_context_is_400(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model=MAIN.model, prompt="apple " * 700, max_tokens=4)
        e = cm.exception
        self.assertEqual(e.status_code, 400)
        self.assertEqual(e.code, "context_length_exceeded")
        self.assertEqual(e.param, "prompt")
        m = re.search(r"holds (\d+) tokens, and the prompt has (\d+)", e.message)
        self.assertIsNotNone(m, e.message)
        self.assertEqual(int(m.group(1)), 512)
        self.assertGreater(int(m.group(2)), 512)
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.chat.completions.create(model=MAIN.model,
                                                messages=[{"role": "user", "content": "apple " * 700}])
        self.assertEqual(cm.exception.code, "context_length_exceeded")
        self.assertEqual(cm.exception.param, "messages")

    def test_max_tokens_past_the_context_is_400(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model=MAIN.model, prompt="Hello", max_tokens=600)
        self.assertEqual(cm.exception.code, "context_length_exceeded")
        self.assertEqual(cm.exception.param, "max_tokens")
        self.assertIn("600", cm.exception.message)

    def test_wrong_types_are_400(self):
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model=MAIN.model, prompt="Hello", max_tokens="many")
        self.assertEqual(cm.exception.status_code, 400)
        self.assertEqual(cm.exception.param, "max_tokens")
        self.assertEqual(cm.exception.type, "invalid_request_error")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.chat.completions.create(model=MAIN.model, messages=FRANCE, temperature="hot")
        self.assertEqual(cm.exception.param, "temperature")
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.chat.completions.create(model=MAIN.model, messages=[{"role": "wizard", "content": "hi"}])
        self.assertEqual(cm.exception.param, "messages[0].role")

    def test_unsupported_options_are_400(self):
        cases = [
            ("presence_penalty", lambda: self.client.chat.completions.create(
                model=MAIN.model, messages=FRANCE, max_tokens=4, presence_penalty=0.5)),
            ("logprobs", lambda: self.client.chat.completions.create(
                model=MAIN.model, messages=FRANCE, max_tokens=4, logprobs=True)),
            ("echo", lambda: self.client.completions.create(
                model=MAIN.model, prompt="Hello", max_tokens=4, echo=True)),
        ]
        for name, call in cases:
            with self.subTest(option=name):
                with self.assertRaises(openai.BadRequestError) as cm:
                    call()
                self.assertEqual(cm.exception.param, name)
                self.assertIn("not supported", cm.exception.message)
        # Zero penalties are what clients send by default: accepted.
        r = self.client.chat.completions.create(model=MAIN.model, messages=FRANCE, max_tokens=2,
                                                presence_penalty=0, frequency_penalty=0)
        self.assertEqual(len(r.choices), 1)

    def test_unknown_model_is_404(self):
        with self.assertRaises(openai.NotFoundError) as cm:
            self.client.chat.completions.create(model="gpt-4o", messages=FRANCE, max_tokens=4)
        e = cm.exception
        self.assertEqual(e.status_code, 404)
        self.assertEqual(e.code, "model_not_found")
        self.assertEqual(e.param, "model")
        self.assertIn(MAIN.model, e.message)

    def test_malformed_json_is_400_in_openai_shape(self):
        status, headers, body = sp.http("POST", MAIN.base_url + "/v1/chat/completions", b"{not json",
                                        {"Content-Type": "application/json"})
        self.assertEqual(status, 400, body)
        error = json.loads(body)["error"]
        self.assertEqual(set(error), {"message", "type", "param", "code"})
        self.assertEqual(error["type"], "invalid_request_error")
        self.assertIn("not valid JSON", error["message"])

    def test_unknown_route_is_404_in_openai_shape(self):
        status, _, body = sp.http("GET", MAIN.base_url + "/v1/nothing-here")
        self.assertEqual(status, 404)
        self.assertIn("/v1/nothing-here", json.loads(body)["error"]["message"])

    def test_health_says_loading_then_ok(self):
        status, _, body = sp.http("GET", MAIN.base_url + "/health")
        self.assertEqual((status, json.loads(body)), (200, {"status": "ok"}))
        # What /health answered while the server started (the loading window may be too short to see).
        seen = [(code, json.loads(body)["status"]) for code, body in MAIN.health_seen]
        self.assertTrue(seen, "the start-up asked /health")
        self.assertTrue(set(seen) <= {(503, "loading"), (200, "ok")}, seen)
        codes = [code for code, _ in seen]
        self.assertEqual(codes, sorted(codes, reverse=True), f"503 loading, then 200 ok, never back: {seen}")
        print(f"\n/health during start-up: {codes.count(503)} x 503 loading, then 200", file=sys.stderr)


class Cancellation(unittest.TestCase):
    def test_a_closed_stream_is_cancelled_and_its_memory_freed(self):
        client = client_for(MAIN)
        before = sp.metrics(MAIN.base_url)
        stream = client.completions.create(model=MAIN.model, prompt=COUNT, max_tokens=400, stream=True)
        try:
            pieces = [next(stream).choices[0].text for _ in range(4)]
            self.assertTrue("".join(pieces).strip(), pieces)
            during = sp.metrics(MAIN.base_url)
            self.assertEqual(during["tessera_requests_running"], 1)
            self.assertGreater(during["tessera_kv_blocks_used"], 0)
        finally:
            stream.close()  # hangs up
        after = wait_for_metrics(
            self, MAIN,
            lambda m: m.get(CANCELLED, 0) == before.get(CANCELLED, 0) + 1 and m["tessera_kv_blocks_used"] == 0
            and m["tessera_requests_running"] == 0,
            "one more request cancelled, no KV block used, none running")
        generated = after["tessera_generation_tokens_total"] - before["tessera_generation_tokens_total"]
        self.assertLess(generated, 400, "cancelled, not run to its end")
        # The server goes on serving.
        r = client.completions.create(model=MAIN.model, prompt="Hello", max_tokens=2)
        self.assertEqual(len(r.choices), 1)


    def test_a_whole_response_whose_client_left_is_cancelled(self):
        # No stream: the server writes a space a second while it generates, which finds the closed connection.
        before = sp.metrics(MAIN.base_url)
        impatient = client_for(MAIN, timeout=0.5)
        with self.assertRaises(openai.APITimeoutError):
            impatient.completions.create(model=MAIN.model, prompt=COUNT, max_tokens=400)
        wait_for_metrics(
            self, MAIN,
            lambda m: m.get(CANCELLED, 0) == before.get(CANCELLED, 0) + 1 and m["tessera_kv_blocks_used"] == 0
            and m["tessera_requests_running"] == 0,
            "the abandoned request cancelled, its memory freed")


class KeyQueueAndBodyLimit(unittest.TestCase):
    """A server with --api-key, --max-queue 1, --max-body-bytes 4096 and --model-name."""

    KEY = "sk-tessera-test"
    NAME = "tessera-test-model"

    @classmethod
    def setUpClass(cls):
        cls.server = sp.Server(BINARY, SOURCE, "--api-key", cls.KEY, "--max-queue", "1", "--max-body-bytes", "4096",
                               "--model-name", cls.NAME, name="limits").start()

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        if rc != 0:
            raise AssertionError(f"the server exited with {rc} on SIGTERM:\n{cls.server.log()}")

    def test_a_missing_or_wrong_key_is_401(self):
        wrong = client_for(self.server, api_key="sk-wrong")
        with self.assertRaises(openai.AuthenticationError) as cm:
            wrong.models.list()
        self.assertEqual(cm.exception.status_code, 401)
        self.assertEqual(cm.exception.code, "invalid_api_key")
        with self.assertRaises(openai.AuthenticationError):
            wrong.chat.completions.create(model=self.NAME, messages=FRANCE, max_tokens=4)
        status, _, body = sp.http("POST", self.server.base_url + "/v1/completions", {"prompt": "Hi", "max_tokens": 2})
        self.assertEqual(status, 401, body)
        self.assertEqual(json.loads(body)["error"]["code"], "invalid_api_key")
        # The right key; /health needs none.
        right = client_for(self.server, api_key=self.KEY)
        self.assertEqual([m.id for m in right.models.list().data], [self.NAME])
        self.assertEqual(sp.http("GET", self.server.base_url + "/health")[0], 200)

    def test_model_name_is_what_clients_send(self):
        right = client_for(self.server, api_key=self.KEY)
        r = right.completions.create(model=self.NAME, prompt="Hello", max_tokens=2)
        self.assertEqual(r.model, self.NAME)
        with self.assertRaises(openai.NotFoundError):
            right.completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt="Hello", max_tokens=2)

    def test_a_full_queue_is_429(self):
        client = client_for(self.server, api_key=self.KEY)
        before = sp.metrics(self.server.base_url)
        stream = client.completions.create(model=self.NAME, prompt=COUNT, max_tokens=400, stream=True)
        try:
            next(stream)  # admitted and running
            with self.assertRaises(openai.RateLimitError) as cm:
                client.completions.create(model=self.NAME, prompt="Hello", max_tokens=2)
            self.assertEqual(cm.exception.status_code, 429)
            self.assertEqual(cm.exception.type, "rate_limit_error")
            self.assertIn("--max-queue", cm.exception.message)
        finally:
            stream.close()
        wait_for_metrics(self, self.server,
                         lambda m: m.get(CANCELLED, 0) == before.get(CANCELLED, 0) + 1
                         and m["tessera_requests_running"] == 0 and m["tessera_requests_waiting"] == 0,
                         "the hung-up request ended")
        r = client.completions.create(model=self.NAME, prompt="Hello", max_tokens=2)  # room again
        self.assertEqual(len(r.choices), 1)

    def test_a_body_over_the_limit_is_413(self):
        client = client_for(self.server, api_key=self.KEY)
        with self.assertRaises(openai.APIStatusError) as cm:
            client.completions.create(model=self.NAME, prompt="x" * 5000, max_tokens=2)
        self.assertEqual(cm.exception.status_code, 413)
        self.assertIn("--max-body-bytes", cm.exception.message)


class Drain(unittest.TestCase):
    def test_sigterm_finishes_a_short_stream_cancels_a_long_one_and_exits_0(self):
        drain_seconds = 1
        server = sp.Server(BINARY, SOURCE, "--drain-seconds", str(drain_seconds), name="drain").start()
        conns = []
        try:
            long_conn, long_r = sp.open_stream(server.port, "/v1/completions",
                                               {"prompt": COUNT, "max_tokens": 480, "stream": True,
                                                "stream_options": {"include_usage": True}})
            conns.append(long_conn)
            long_events = sp.sse_data(long_r)
            first_long = next(long_events)
            short_conn, short_r = sp.open_stream(server.port, "/v1/completions",
                                                 {"prompt": COUNT, "max_tokens": 12, "stream": True,
                                                  "stream_options": {"include_usage": True}})
            conns.append(short_conn)
            short_events = sp.sse_data(short_r)
            first_short = next(short_events)

            t0 = time.monotonic()
            server.terminate()
            # /health says draining and new requests get 503 while the long stream runs.
            health = None
            while time.monotonic() - t0 < drain_seconds * 0.8:
                health = sp.http("GET", server.base_url + "/health", timeout=5)
                if health[0] == 503:
                    break
                time.sleep(0.01)
            self.assertEqual((health[0], json.loads(health[2])), (503, {"status": "draining"}))
            with self.assertRaises(openai.InternalServerError) as cm:
                client_for(server).completions.create(model=server.model, prompt="Hello", max_tokens=2)
            self.assertEqual(cm.exception.status_code, 503)
            self.assertEqual(cm.exception.code, "unavailable")

            short = [first_short] + list(short_events)
            self.assertEqual(short[-1], "[DONE]", short[-3:])
            self.assertEqual(json.loads(short[-3])["choices"][0]["finish_reason"], "length",
                             "a request that ends within the drain's bound finishes")
            self.assertEqual(json.loads(short[-2])["usage"]["completion_tokens"], 12)

            long = [first_long] + list(long_events)
            self.assertEqual(long[-1], "[DONE]", long[-3:])
            self.assertEqual(json.loads(long[-3])["choices"][0]["finish_reason"], "abort",
                             "cancelled at the drain's bound")
            self.assertLess(json.loads(long[-2])["usage"]["completion_tokens"], 480)

            rc = server.wait(timeout=drain_seconds + 5 + 5)  # the bound, the handlers' 5 s, slack
            self.assertEqual(rc, 0, server.log())
            elapsed = time.monotonic() - t0
            self.assertLess(elapsed, drain_seconds + 5, "exited within the drain's bound (and the writes')")
            self.assertIn("1 requests cancelled at the drain's end", server.log())
        finally:
            for c in conns:
                c.close()
            server.stop()


def main():
    program = unittest.main(argv=ARGV, exit=False, verbosity=2)
    ok = program.result.wasSuccessful()
    sp.stop_all(print_logs=not ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

"""`tessera serve` as the tests in this folder start it, and plain HTTP helpers.

Standard library only: curl_test.sh's checks and the page test use it too.
Each server runs pipelines/serving.toml on a free loopback port with a short
context (512) and two threads, its stderr in a log file that is printed when
a test fails. A server is always stopped: by the test, by the module's end
(stop_all, registered with atexit), and, should the test process itself be
killed (a CTest timeout), by the kernel (PR_SET_PDEATHSIG).
"""

import atexit
import ctypes
import http.client as http_client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP_CODE = 77  # CTest's SKIP_RETURN_CODE for these tests
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_servers = []


def _die_with_parent():
    # Runs in the child between fork and exec: SIGKILL when the test process dies.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Server:
    """One `tessera serve` process. start() returns once it answers requests."""

    def __init__(self, binary, source_dir, *extra_args, name="server"):
        self.binary = binary
        self.source_dir = source_dir
        self.extra_args = list(extra_args)
        self.name = name
        self.proc = None
        self.port = None
        self.model = None
        self.log_path = None
        self.returncode = None
        self.health_seen = []  # (status, body) of /health from the port's opening to "ready"

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=60.0):
        fd, self.log_path = tempfile.mkstemp(prefix=f"tessera-{self.name}-", suffix=".log")
        os.close(fd)
        command = [self.binary, "serve", os.path.join(self.source_dir, "pipelines", "serving.toml"),
                   "--port", "0", "--set", "run.context=512", "--threads", "2", *self.extra_args]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        _servers.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log()
            if self.port is None:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
                if m:
                    self.port = int(m.group(1))
            if self.port is not None and (not self.health_seen or self.health_seen[-1][0] != 200):
                # The port opens before the model loads: /health says so meanwhile.
                try:
                    status, _, body = http("GET", self.base_url + "/health", timeout=5)
                    self.health_seen.append((status, body.decode("utf-8", "replace")))
                except OSError as e:
                    self.health_seen.append((None, str(e)))
            m = re.search(r"tessera serve: ready, model '([^']*)'", text)
            if m and self.port is not None:
                self.model = m.group(1)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: `{' '.join(command)}` exited with {self.proc.returncode} "
                                   f"before it was ready:\n{text}")
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"{self.name}: not ready after {timeout:.0f} s:\n{self.log()}")

    def log(self):
        if not self.log_path:
            return ""
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def terminate(self):
        """Sends SIGTERM (the server drains, then exits)."""
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout):
        """The exit status, or None if it is still running after `timeout` seconds."""
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def stop(self, timeout=15.0):
        """SIGTERM, then SIGKILL if it has not exited within `timeout`. Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.terminate()
            if self.wait(timeout) is None:
                self.kill()
        self.returncode = self.proc.wait()
        return self.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def dispose(self):
        self.kill()
        if self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)
        if self in _servers:
            _servers.remove(self)


def stop_all(print_logs=False):
    """Stops every server still running; with print_logs, shows each one's log."""
    for s in list(_servers):
        s.stop(timeout=5)
        if print_logs:
            sys.stderr.write(f"---- log of {s.name} (port {s.port}, exit {s.returncode}) ----\n{s.log()}\n")
        s.dispose()


atexit.register(stop_all)


def model_present(source_dir):
    return os.path.isfile(os.path.join(source_dir, "models", MODEL_FILE))


def model_required():
    return os.environ.get("TESSERA_REQUIRE_MODEL", "") not in ("", "0")


def http(method, url, body=None, headers=None, timeout=30):
    """(status, headers, body bytes); an HTTP error status is returned, not raised."""
    data = None
    hdrs = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def metrics(base_url):
    """/metrics as {'name{labels}': value}."""
    status, _, body = http("GET", base_url + "/metrics")
    if status != 200:
        raise AssertionError(f"/metrics answered {status}: {body[:200]!r}")
    values = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            values[key] = float(value)
    return values


def open_stream(port, path, payload, headers=None, timeout=30):
    """POSTs `payload` and returns (connection, response) with the body unread."""
    conn = http_client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", path, body=json.dumps(payload),
                 headers={"Content-Type": "application/json", **(headers or {})})
    return conn, conn.getresponse()


def sse_data(response):
    """Yields the data fields of a server-sent event stream ('[DONE]' included), line by line."""
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data: "):
            yield line[len("data: "):]


def main_args(usage):
    """(binary, source_dir, remaining argv) from `SCRIPT TESSERA SOURCE_DIR [unittest args]`; exits
    with the skip code, saying why, when the model is absent (fails where TESSERA_REQUIRE_MODEL is set)."""
    if len(sys.argv) < 3:
        sys.exit(f"usage: {usage}")
    binary, source_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.access(binary, os.X_OK):
        sys.exit(f"FAILED: {binary} is not an executable")
    if not model_present(source_dir):
        reason = f"{os.path.join(source_dir, 'models', MODEL_FILE)} is absent (run scripts/fetch-model.sh)"
        if model_required():
            sys.exit(f"FAILED: {reason} (TESSERA_REQUIRE_MODEL is set)")
        print(f"SKIPPED: {reason}", flush=True)
        sys.exit(SKIP_CODE)
    return binary, source_dir, [sys.argv[0]] + sys.argv[3:]

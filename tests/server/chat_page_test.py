#!/usr/bin/env python3
"""The chat page at / in a real headless Chromium, driven through chromedriver by Selenium.

Usage: chat_page_test.py TESSERA SOURCE_DIR [unittest options]

Types a question into #question, clicks #send, waits for #status to say
"done (...)", and checks that the .assistant answer equals what the API
returns for the same conversation and settings (the page sends no
temperature: the pipeline's default, greedy), and that the answer appeared
in several steps while #status said "generating" (streamed, not one lump).
The browser is Debian's (/usr/bin/chromium, /usr/bin/chromedriver, or
$CHROMIUM / $CHROMEDRIVER): Selenium Manager is never asked to download one.
Exits 77 (skipped, reason printed) when the model or the browser is absent;
a missing model fails instead where TESSERA_REQUIRE_MODEL is set.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_process as sp  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
QUESTION = "What is the capital of France? Answer in one sentence."

BINARY = SOURCE = None

# Installed before the click: records the answer's text and the status line at
# every change of the conversation, in the page itself (no polling gaps).
RECORDER = """
window.__steps = [];
const log = document.getElementById("log");
new MutationObserver(() => {
  const answers = log.querySelectorAll(".assistant");
  if (answers.length === 0) return;
  window.__steps.push([answers[answers.length - 1].textContent, document.getElementById("status").textContent]);
}).observe(log, {subtree: true, childList: true, characterData: true});
"""


class ChatPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        cls.server = sp.Server(BINARY, SOURCE, name="page").start()
        cls.profile = tempfile.mkdtemp(prefix="tessera-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={cls.profile}", "--window-size=1024,768"):
            options.add_argument(arg)
        # The chromedriver named here: Selenium Manager is not run, nothing is downloaded.
        service = Service(executable_path=CHROMEDRIVER, log_output=os.path.join(cls.profile, "chromedriver.log"))
        try:
            cls.driver = webdriver.Chrome(service=service, options=options)
        except Exception:
            cls.server.stop()
            raise
        cls.driver.set_page_load_timeout(30)
        cls.driver.set_script_timeout(30)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.driver.quit()
        finally:
            shutil.rmtree(cls.profile, ignore_errors=True)
            rc = cls.server.stop()
            if rc != 0:
                raise AssertionError(f"the server exited with {rc} on SIGTERM:\n{cls.server.log()}")

    def wait_until(self, condition, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.05)
        self.fail(f"not within {timeout:.0f} s: {what}")

    def test_a_question_gets_the_apis_answer_streamed(self):
        from selenium.webdriver.common.by import By

        d = self.driver
        d.get(self.server.base_url + "/")
        self.assertEqual(d.title, "Tessera chat")
        status = d.find_element(By.ID, "status")
        self.assertEqual(status.text, "ready")
        # The page asks /v1/models for the name it shows.
        self.wait_until(lambda: self.server.model in d.find_element(By.ID, "model").text, "the model's name shown")

        d.execute_script(RECORDER)
        d.find_element(By.ID, "question").send_keys(QUESTION)
        d.find_element(By.ID, "send").click()
        final_status = self.wait_until(
            lambda: (lambda t: t if t.startswith("done (") or t == "error" else None)(status.text),
            "#status says done (...)")
        answer = d.find_elements(By.CSS_SELECTOR, "#log .assistant")
        self.assertEqual(len(answer), 1)
        shown = answer[0].get_property("textContent")
        self.assertNotEqual(final_status, "error", shown)
        self.assertTrue(shown.strip(), "the answer is empty")
        self.assertEqual([e.get_property("textContent") for e in d.find_elements(By.CSS_SELECTOR, "#log .user")],
                         [QUESTION])

        # The same conversation through the API, unstreamed, at the page's settings.
        code, _, body = sp.http("POST", self.server.base_url + "/v1/chat/completions",
                                {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 256})
        self.assertEqual(code, 200, body)
        choice = json.loads(body)["choices"][0]
        self.assertEqual(shown, choice["message"]["content"])
        self.assertEqual(final_status, f"done ({choice['finish_reason']})")

        # Streamed: the answer grew in at least two steps while the status said "generating".
        steps = d.execute_script("return window.__steps;")
        partial = []
        for text, line in steps:
            if line == "generating" and text and (not partial or partial[-1] != text):
                partial.append(text)
        self.assertGreaterEqual(len(partial), 2, f"the answer appeared in one lump: {steps}")
        for text in partial:
            self.assertTrue(shown.startswith(text), f"{text!r} is not a beginning of {shown!r}")
        self.assertTrue(all(len(a) < len(b) for a, b in zip(partial, partial[1:])), partial)
        self.assertTrue(d.find_element(By.ID, "send").is_enabled(), "the button is enabled again")
        print(f"\nthe page showed {len(partial)} partial answers, then {shown!r} ({final_status})", file=sys.stderr)


def main():
    global BINARY, SOURCE
    BINARY, SOURCE, argv = sp.main_args("chat_page_test.py TESSERA SOURCE_DIR [unittest options]")
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        print(f"SKIPPED: {' and '.join(missing)} not installed (scripts/install-deps.sh installs chromium and "
              "chromium-driver)", flush=True)
        sys.exit(sp.SKIP_CODE)
    program = unittest.main(argv=argv, exit=False, verbosity=2)
    ok = program.result.wasSuccessful()
    sp.stop_all(print_logs=not ok)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

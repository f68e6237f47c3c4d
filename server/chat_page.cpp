#include "chat_page.hpp"

namespace tessera::server {

// Element ids (question, send, answer, status) are what
// tests/server/chat_page_test.py drives in a headless browser.
std::string_view chat_page_html() {
  static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tessera chat</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
  h1 { font-size: 1.3rem; }
  #log { border: 1px solid #ccc; border-radius: 6px; padding: 0.75rem; min-height: 12rem; white-space: pre-wrap; }
  .user { color: #1a4f8b; margin: 0.5rem 0; }
  .assistant { margin: 0.5rem 0 1rem; }
  form { display: flex; gap: 0.5rem; margin-top: 0.75rem; }
  #question { flex: 1; padding: 0.5rem; }
  #status { color: #777; font-size: 0.85rem; margin-top: 0.5rem; }
  #key { width: 12rem; }
</style>
</head>
<body>
<h1>Tessera chat <span id="model"></span></h1>
<div id="log"></div>
<form id="form">
  <input id="question" autocomplete="off" placeholder="Ask something" autofocus>
  <button id="send" type="submit">Send</button>
</form>
<div id="status">ready</div>
<p><label>API key (if the server asks for one) <input id="key" type="password"></label></p>
<script>
"use strict";
const log = document.getElementById("log");
const form = document.getElementById("form");
const question = document.getElementById("question");
const send = document.getElementById("send");
const statusLine = document.getElementById("status");
const conversation = [];

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = document.getElementById("key").value;
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

fetch("/v1/models", { headers: headers() }).then(r => r.json()).then(j => {
  if (j.data && j.data.length) document.getElementById("model").textContent = "· " + j.data[0].id;
}).catch(() => {});

function add(role, text) {
  const div = document.createElement("div");
  div.className = role;
  div.textContent = text;
  log.appendChild(div);
  return div;
}

// Reads server-sent events ("data: {...}" blocks) from the response body,
// calling onData with each parsed JSON object until "data: [DONE]".
async function readEvents(response, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ")) continue;  // comments (keep-alives) and other fields
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onData(JSON.parse(data));
      }
    }
  }
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = question.value.trim();
  if (!text) return;
  question.value = "";
  send.disabled = true;
  add("user", text);
  conversation.push({ role: "user", content: text });
  const answer = add("assistant", "");
  statusLine.textContent = "generating";
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ messages: conversation, stream: true, max_tokens: 256 }),
    });
    if (!response.ok) {
      const j = await response.json().catch(() => ({}));
      throw new Error((j.error && j.error.message) || ("HTTP " + response.status));
    }
    let finish = "";
    await readEvents(response, (chunk) => {
      for (const choice of chunk.choices || []) {
        if (choice.delta && choice.delta.content) answer.textContent += choice.delta.content;
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    });
    conversation.push({ role: "assistant", content: answer.textContent });
    statusLine.textContent = "done (" + finish + ")";
  } catch (err) {
    answer.textContent = "error: " + err.message;
    conversation.pop();
    statusLine.textContent = "error";
  } finally {
    send.disabled = false;
    question.focus();
  }
});
</script>
</body>
</html>
)HTML";
  return kPage;
}

}  // namespace tessera::server

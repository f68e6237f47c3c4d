// The server on the real default model over loopback HTTP: answers equal the
// engine's own, streaming, errors with their statuses, cancellation freeing
// memory, admission control, API keys and draining.
#include "openai_server.hpp"

#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "model_fixture.hpp"

namespace tessera::server {
namespace {

using json = nlohmann::json;
using test::kPipelines;

template <typename Fn>
ServerOptions with(Fn change) {
  ServerOptions o;
  change(o);
  return o;
}

// A server on a free loopback port over its own session of pipelines/serving.toml.
struct Served {
  std::unique_ptr<Session> session;
  std::unique_ptr<OpenAiServer> server;
  int port = 0;

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    return c;
  }
};

#define TESSERA_SERVE_OR_SKIP(var, options)                                                                  \
  TESSERA_OPEN_PIPELINE_OR_SKIP(var##_session, kPipelines / "serving.toml",                                \
                                (std::vector<PipelineOverride>{{"run", "context", "512"}}));              \
  Served var;                                                                                              \
  {                                                                                                        \
    ServerOptions o = (options);                                                                           \
    o.host = "127.0.0.1";                                                                                  \
    o.port = 0;                                                                                            \
    o.model_name = "smol";                                                                                 \
    var.session = std::move(var##_session);                                                                \
    var.server = std::make_unique<OpenAiServer>(o);                                                        \
    auto bound = var.server->bind();                                                                       \
    ASSERT_TRUE(bound.ok()) << bound.status().message();                                                   \
    var.port = *bound;                                                                                     \
    var.server->start();                                                                                   \
    var.server->serve(*var.session, SchedulerConfig{});                                                    \
  }

json post_json(const Served& s, const std::string& path, const json& body, int expect_status = 200) {
  auto c = s.client();
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res) << "no response";
  if (!res) return {};
  EXPECT_EQ(res->status, expect_status) << res->body;
  return json::parse(res->body, nullptr, false);
}

// POSTs and returns the server-sent events' data fields; `keep_reading`
// (called with the events so far) may hang up early.
std::vector<std::string> post_stream(const Served& s, const std::string& path, const json& body,
                                     const std::function<bool(const std::vector<std::string>&)>& keep_reading = {}) {
  auto c = s.client();
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string buffer;
  std::vector<std::string> events;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buffer.append(data, n);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) == 0) events.push_back(event.substr(6));
    }
    return !keep_reading || keep_reading(events);
  };
  httplib::Response res;
  httplib::Error error;
  c.send(req, res, error);
  return events;
}

std::string greedy_text(Session& session, GenerationRequest request) {
  request.sampling.temperature = 0;
  auto r = session.generate(request);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->text : "";
}

std::string metric_line(const Served& s, const std::string& name) {
  auto c = s.client();
  auto res = c.Get("/metrics");
  if (!res) return "";
  const size_t at = res->body.find("\n" + name);
  if (at == std::string::npos) return "";
  return res->body.substr(at + 1, res->body.find('\n', at + 1) - at - 1);
}

TEST(OpenAiServer, HealthModelsAndChatPage) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  auto c = s.client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "smol");
  auto model = c.Get("/v1/models/smol");
  ASSERT_TRUE(model);
  EXPECT_EQ(json::parse(model->body)["id"], "smol");
  auto other = c.Get("/v1/models/gpt-9");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
  auto missing = c.Get("/v2/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(json::parse(missing->body).contains("error"));
}

TEST(OpenAiServer, CompletionEqualsTheEnginesGreedyText) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  GenerationRequest expected;
  expected.prompt = "The capital of France is";
  expected.max_tokens = 12;
  const std::string want = greedy_text(*s.session, expected);
  const json r = post_json(s, "/v1/completions",
                           {{"model", "smol"}, {"prompt", expected.prompt}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], want);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 12);
  EXPECT_EQ(r["usage"]["prompt_tokens"], static_cast<int64_t>(s.session->prompt_ids(expected)->size()));
}

TEST(OpenAiServer, ChatStreamEqualsTheWholeAnswerAndTheEngines) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  GenerationRequest expected;
  expected.messages = {{"user", "Name three colors."}};
  expected.chat = true;
  expected.max_tokens = 24;
  const std::string want = greedy_text(*s.session, expected);
  const json body = {{"messages", {{{"role", "user"}, {"content", "Name three colors."}}}},
                     {"max_tokens", 24},
                     {"temperature", 0}};
  const json whole = post_json(s, "/v1/chat/completions", body);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], want);

  json streamed_body = body;
  streamed_body["stream"] = true;
  streamed_body["stream_options"] = {{"include_usage", true}};
  const auto events = post_stream(s, "/v1/chat/completions", streamed_body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    if (chunk.contains("usage")) usage = chunk["usage"];
    if (chunk["choices"].empty()) continue;  // the include_usage chunk
    const json& choice = chunk["choices"][0];
    if (i == 0) {
      EXPECT_EQ(choice["delta"]["role"], "assistant");
    }
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(text, want);
  EXPECT_FALSE(finish.empty());
  EXPECT_EQ(usage["completion_tokens"], whole["usage"]["completion_tokens"]);
  // include_usage: the usage comes once, in its own chunk with no choices, as OpenAI sends it.
  int usage_chunks = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) usage_chunks += json::parse(events[i]).contains("usage") ? 1 : 0;
  EXPECT_EQ(usage_chunks, 1);
  EXPECT_TRUE(json::parse(events[events.size() - 2])["choices"].empty());
}

TEST(OpenAiServer, ConcurrentRequestsShareStepsAndMatchAlone) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  const std::vector<std::string> prompts = {"One, two, three,", "The sky is", "def add(a, b):", "Once upon a time"};
  std::vector<std::string> alone;
  for (const auto& p : prompts) {
    GenerationRequest r;
    r.prompt = p;
    r.max_tokens = 16;
    alone.push_back(greedy_text(*s.session, r));
  }
  std::vector<std::future<json>> answers;
  for (const auto& p : prompts)
    answers.push_back(std::async(std::launch::async, [&s, p] {
      return post_json(s, "/v1/completions", {{"prompt", p}, {"max_tokens", 16}, {"temperature", 0}});
    }));
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(answers[i].get()["choices"][0]["text"], alone[i]) << i;
}

TEST(OpenAiServer, SeveralChoicesAndStopStrings) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  const json r = post_json(s, "/v1/completions",
                           {{"prompt", "List: apples, pears,"}, {"max_tokens", 20}, {"n", 3}, {"temperature", 1.0},
                            {"seed", 7}});
  ASSERT_EQ(r["choices"].size(), 3u);
  EXPECT_EQ(r["choices"][2]["index"], 2);
  // The same seed gives the same choices.
  const json again = post_json(s, "/v1/completions",
                               {{"prompt", "List: apples, pears,"}, {"max_tokens", 20}, {"n", 3}, {"temperature", 1.0},
                                {"seed", 7}});
  EXPECT_EQ(r["choices"], again["choices"]);
  const json full = post_json(s, "/v1/completions", {{"prompt", "One, two, three,"}, {"max_tokens", 12}, {"temperature", 0}});
  const std::string text = full["choices"][0]["text"];
  const size_t comma = text.find(',');
  ASSERT_NE(comma, std::string::npos) << text;
  const json stopped = post_json(s, "/v1/completions",
                                 {{"prompt", "One, two, three,"}, {"max_tokens", 12}, {"temperature", 0}, {"stop", ","}});
  EXPECT_EQ(stopped["choices"][0]["text"], text.substr(0, comma));
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAiServer, BadRequestsGetOpenAiErrorsWithTheRightStatus) {
  TESSERA_SERVE_OR_SKIP(s, with([](ServerOptions& o) { o.max_body_bytes = 64 * 1024; }));
  auto c = s.client();
  auto malformed = c.Post("/v1/completions", "{\"prompt\": ", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(json::parse(malformed->body)["error"]["type"], "invalid_request_error");
  post_json(s, "/v1/completions", {{"prompt", 5}}, 400);
  const json unknown = post_json(s, "/v1/completions", {{"model", "gpt-9"}, {"prompt", "x"}}, 404);
  EXPECT_EQ(unknown["error"]["code"], "model_not_found");
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += " word";
  const json too_long = post_json(s, "/v1/completions", {{"prompt", long_prompt}}, 400);
  EXPECT_EQ(too_long["error"]["code"], "context_length_exceeded");
  EXPECT_NE(too_long["error"]["message"].get<std::string>().find("512"), std::string::npos) << too_long;
  const json too_many = post_json(s, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 600}}, 400);
  EXPECT_EQ(too_many["error"]["param"], "max_tokens");
  auto huge = c.Post("/v1/completions", std::string(100 * 1024, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  EXPECT_TRUE(json::parse(huge->body, nullptr, false).contains("error"));
  // The server is unharmed.
  post_json(s, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
}

TEST(OpenAiServer, ApiKeyIsRequiredWhenSet) {
  TESSERA_SERVE_OR_SKIP(s, with([](ServerOptions& o) { o.api_key = "sesame"; }));
  auto c = s.client();
  auto none = c.Get("/v1/models");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto wrong = c.Get("/v1/models", {{"Authorization", "Bearer sesamf"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto right = c.Get("/v1/models", {{"Authorization", "Bearer sesame"}});
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  auto health = c.Get("/health");  // health needs no key (load balancers ask it)
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(OpenAiServer, ADisconnectedClientsRequestIsCancelledAndItsMemoryFreed) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  const auto events = post_stream(s, "/v1/completions",
                                  {{"prompt", "Count: 1, 2, 3,"}, {"max_tokens", 400}, {"stream", true}},
                                  [](const std::vector<std::string>& so_far) { return so_far.size() < 3; });
  EXPECT_GE(events.size(), 3u);
  // The engine notices at its next write to the closed connection.
  std::string cancelled;
  for (int i = 0; i < 200 && cancelled.empty(); ++i) {
    cancelled = metric_line(s, "tessera_request_finished_total{finish_reason=\"cancelled\"}");
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(cancelled, "tessera_request_finished_total{finish_reason=\"cancelled\"} 1");
  EXPECT_EQ(metric_line(s, "tessera_kv_blocks_used"), "tessera_kv_blocks_used 0");
  EXPECT_EQ(metric_line(s, "tessera_requests_running"), "tessera_requests_running 0");
}

TEST(OpenAiServer, AFullQueueAnswers429) {
  TESSERA_SERVE_OR_SKIP(s, with([](ServerOptions& o) { o.max_queue = 1; }));
  std::promise<void> started;
  auto long_one = std::async(std::launch::async, [&] {
    bool told = false;
    return post_stream(s, "/v1/completions", {{"prompt", "Count: 1, 2,"}, {"max_tokens", 64}, {"stream", true}},
                       [&](const std::vector<std::string>&) {
                         if (!told) started.set_value();
                         told = true;
                         return true;
                       });
  });
  started.get_future().wait();
  const json busy = post_json(s, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}, 429);
  EXPECT_TRUE(busy.contains("error"));
  EXPECT_EQ(long_one.get().back(), "[DONE]");
  post_json(s, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});  // room again
}

TEST(OpenAiServer, DrainFinishesRequestsInFlightAndRefusesNewOnes) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  std::promise<void> started;
  auto in_flight = std::async(std::launch::async, [&] {
    bool told = false;
    return post_stream(s, "/v1/completions", {{"prompt", "Count: 1, 2,"}, {"max_tokens", 48}, {"stream", true}},
                       [&](const std::vector<std::string>&) {
                         if (!told) started.set_value();
                         told = true;
                         return true;
                       });
  });
  started.get_future().wait();
  auto draining = std::async(std::launch::async, [&] { return s.server->drain(std::chrono::seconds(30)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto c = s.client();
  auto health = c.Get("/health");
  if (health) {
    EXPECT_EQ(health->status, 503);  // unless the drain already closed the listener
  }
  const auto events = in_flight.get();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  const json last = json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length") << "it finished, not cancelled";
  EXPECT_EQ(draining.get(), 0u);
}

TEST(OpenAiServer, DrainPastItsBoundCancelsWhatIsLeft) {
  TESSERA_SERVE_OR_SKIP(s, ServerOptions{});
  std::promise<void> started;
  auto in_flight = std::async(std::launch::async, [&] {
    bool told = false;
    return post_stream(s, "/v1/completions", {{"prompt", "Count: 1, 2,"}, {"max_tokens", 400}, {"stream", true}},
                       [&](const std::vector<std::string>&) {
                         if (!told) started.set_value();
                         told = true;
                         return true;
                       });
  });
  started.get_future().wait();
  EXPECT_EQ(s.server->drain(std::chrono::milliseconds(100)), 1u);
  const auto events = in_flight.get();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "abort");
}

}  // namespace
}  // namespace tessera::server

#include "openai_request.hpp"

#include <gtest/gtest.h>

namespace tessera::server {
namespace {

CompletionRequest ok(std::string_view body, Endpoint endpoint = Endpoint::completions) {
  auto parsed = parse_completion_request(body, endpoint);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << "refused: " << e->message << " for " << body;
    return {};
  }
  return std::get<CompletionRequest>(parsed);
}

ApiError refused(std::string_view body, Endpoint endpoint = Endpoint::completions) {
  auto parsed = parse_completion_request(body, endpoint);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  ADD_FAILURE() << "accepted: " << body;
  return {};
}

TEST(OpenAiRequest, CompletionWithEveryOption) {
  const auto r = ok(R"({"model": "m", "prompt": "Once", "max_tokens": 20, "temperature": 0.7, "top_p": 0.9,
                        "seed": 42, "stop": ["\n", "END"], "n": 2, "stream": true,
                        "stream_options": {"include_usage": true}, "top_k": 40, "user": "ignored"})");
  EXPECT_EQ(r.endpoint, Endpoint::completions);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_EQ(r.max_tokens, 20);
  EXPECT_DOUBLE_EQ(*r.temperature, 0.7);
  EXPECT_DOUBLE_EQ(*r.top_p, 0.9);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.top_k, 40);
}

TEST(OpenAiRequest, DefaultsWhenOptionsAreAbsentOrNull) {
  const auto r = ok(R"({"prompt": "x", "temperature": null, "stop": null, "logprobs": null})");
  EXPECT_EQ(r.model, "");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.temperature);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
}

TEST(OpenAiRequest, PromptFormats) {
  EXPECT_EQ(ok(R"({"prompt": ["one prompt"]})").prompt, "one prompt");
  EXPECT_EQ(ok(R"({"prompt": [1, 2, 3]})").prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ok(R"({"prompt": [[4, 5]]})").prompt_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(ok(R"({"prompt": "solo", "stop": "\n"})").stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(refused(R"({"prompt": ["a", "b"]})").param, "prompt");
  EXPECT_EQ(refused(R"({"prompt": [1, -2]})").param, "prompt");
  EXPECT_EQ(refused(R"({"prompt": 7})").param, "prompt");
  EXPECT_EQ(refused(R"({"max_tokens": 5})").param, "prompt");
}

TEST(OpenAiRequest, ChatMessages) {
  const auto r = ok(R"({"messages": [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                                                  {"type": "text", "text": "there"}]},
                                     {"role": "developer", "content": "x"}],
                        "max_completion_tokens": 9})",
                    Endpoint::chat_completions);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.messages[2].role, "system");
  EXPECT_EQ(r.max_tokens, 9);
}

TEST(OpenAiRequest, ChatMistakesNameTheField) {
  const Endpoint chat = Endpoint::chat_completions;
  EXPECT_EQ(refused(R"({"messages": []})", chat).param, "messages");
  EXPECT_EQ(refused(R"({"prompt": "x"})", chat).param, "messages");
  EXPECT_EQ(refused(R"({"messages": [{"role": "robot", "content": "x"}]})", chat).param, "messages[0].role");
  EXPECT_EQ(refused(R"({"messages": [{"role": "user"}]})", chat).param, "messages[0].content");
  EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", chat).param,
            "messages[0].content");
  EXPECT_EQ(refused(R"({"messages": ["hello"]})", chat).param, "messages[0]");
}

TEST(OpenAiRequest, WrongTypesAndRangesAre400WithTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"prompt": "x", "max_tokens": "10"})", "max_tokens"},
           {R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
           {R"({"prompt": "x", "max_tokens": 1.5})", "max_tokens"},
           {R"({"prompt": "x", "max_tokens": 99999999999999999999})", "max_tokens"},
           {R"({"prompt": "x", "temperature": 3})", "temperature"},
           {R"({"prompt": "x", "temperature": "hot"})", "temperature"},
           {R"({"prompt": "x", "top_p": 0})", "top_p"},
           {R"({"prompt": "x", "n": 0})", "n"},
           {R"({"prompt": "x", "n": 17})", "n"},
           {R"({"prompt": "x", "stream": "yes"})", "stream"},
           {R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", "stop"},
           {R"({"prompt": "x", "stop": [1]})", "stop"},
           {R"({"prompt": "x", "model": 5})", "model"},
           {R"({"prompt": "x", "seed": "1"})", "seed"},
           {R"({"prompt": "x", "stream_options": true})", "stream_options"},
           {R"({"prompt": "x", "logprobs": 5})", "logprobs"},
           {R"({"prompt": "x", "presence_penalty": 0.5})", "presence_penalty"},
           {R"({"prompt": "x", "echo": true})", "echo"},
           {R"({"prompt": "x", "best_of": 3})", "best_of"},
           {R"({"prompt": "x", "tools": [{"type": "function"}]})", "tools"},
           {R"({"prompt": "x", "tool_choice": "required"})", "tool_choice"},
           {R"({"prompt": "x", "logit_bias": {"50256": -100}})", "logit_bias"},
           {R"({"prompt": "x", "response_format": {"type": "json_object"}})", "response_format"},
       }) {
    const ApiError e = refused(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
  // What clients send by default passes.
  ok(R"({"prompt": "x", "presence_penalty": 0, "frequency_penalty": 0, "logprobs": false, "best_of": 1,
         "tools": [], "tool_choice": "none", "logit_bias": {}, "response_format": {"type": "text"}})");
}

TEST(OpenAiRequest, MalformedBodiesAre400) {
  for (const char* body : {"", "{", "[1, 2]", "\"text\"", "null", "{\"prompt\": \"x\",}", "\xff\xfe"}) {
    const ApiError e = refused(body);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(OpenAiRequest, ErrorJsonHasOpenAisShape) {
  const ApiError e = refused(R"({"prompt": "x", "n": 0})");
  const auto j = e.to_json();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
}

TEST(OpenAiRequest, EngineStatusesMapToHttpStatuses) {
  EXPECT_EQ(from_status(InvalidArgument("x")).http_status, 400);
  EXPECT_EQ(from_status(OutOfMemory("x")).http_status, 429);
  EXPECT_EQ(from_status(Unavailable("x")).http_status, 503);
  EXPECT_EQ(from_status(Internal("x")).http_status, 500);
}

}  // namespace
}  // namespace tessera::server

#include "openai_response.hpp"

#include <gtest/gtest.h>

namespace tessera::server {
namespace {

const ResponseHead kHead{"cmpl-1", 1700000000, "smol"};

TEST(OpenAiResponse, FinishReasons) {
  EXPECT_EQ(finish_reason_for("eos"), "stop");
  EXPECT_EQ(finish_reason_for("stop"), "stop");
  EXPECT_EQ(finish_reason_for("max_tokens"), "length");
  EXPECT_EQ(finish_reason_for("context_full"), "length");
  EXPECT_EQ(finish_reason_for("cancelled"), "abort");
}

TEST(OpenAiResponse, CompletionAndChatShapes) {
  const auto usage = usage_json(5, 3);
  EXPECT_EQ(usage["total_tokens"], 8);
  auto c = completion_json(Endpoint::completions, kHead, {{"abc", "length"}}, usage);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "abc");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(c["usage"]["completion_tokens"], 3);
  auto chat = completion_json(Endpoint::chat_completions, kHead, {{"hi", "stop"}, {"yo", "stop"}}, usage);
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][1]["index"], 1);
  EXPECT_EQ(chat["choices"][1]["message"]["role"], "assistant");
  EXPECT_EQ(chat["choices"][1]["message"]["content"], "yo");
}

TEST(OpenAiResponse, StreamChunks) {
  auto first = chunk_json(Endpoint::chat_completions, kHead, 0, "He", "", /*role=*/true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["delta"]["content"], "He");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  auto last = chunk_json(Endpoint::chat_completions, kHead, 0, "", "stop", false, usage_json(1, 2));
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(last["usage"]["total_tokens"], 3);
  auto text = chunk_json(Endpoint::completions, kHead, 1, "x", "");
  EXPECT_EQ(text["choices"][0]["text"], "x");
  EXPECT_EQ(text["choices"][0]["index"], 1);
  auto usage = usage_chunk_json(Endpoint::completions, kHead, usage_json(1, 2));
  EXPECT_TRUE(usage["choices"].empty());
}

TEST(OpenAiResponse, ServerSentEventFraming) {
  const std::string e = sse_event({{"a", 1}});
  EXPECT_EQ(e, "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
  // Bytes that are not UTF-8 cannot break the stream.
  EXPECT_NO_THROW(sse_event({{"text", std::string("\xff")}}));
}

TEST(OpenAiResponse, ModelList) {
  auto j = models_json("smol", 5);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "smol");
  EXPECT_EQ(j["data"][0]["object"], "model");
}

}  // namespace
}  // namespace tessera::server

// openai_request.hpp: the body of POST /v1/completions and
// /v1/chat/completions, parsed and checked field by field.
//
// The parser never throws and never trusts the body: every field it knows is
// type-checked and range-checked, and a mistake is an ApiError (400) naming
// the field. Fields it does not know are ignored, as OpenAI's own server and
// vLLM do, so that clients sending newer options still work. Options that
// Tessera cannot honour (log-probabilities, presence and frequency
// penalties other than 0, several prompts in one request) are refused rather
// than silently dropped. fuzz/fuzz_openai_request.cpp fuzzes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api_error.hpp"
#include "tokenizer/chat_template.hpp"

namespace tessera::server {

enum class Endpoint { completions, chat_completions };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;                       // "" when the client named none
  std::string prompt;                      // completions: the text...
  std::vector<int32_t> prompt_ids;         // ...or the prompt as token ids
  std::vector<tok::ChatMessage> messages;  // chat: the conversation
  std::optional<int64_t> max_tokens;       // max_tokens or max_completion_tokens
  std::optional<double> temperature;       // absent: the pipeline's [sampling]
  std::optional<double> top_p;
  std::optional<int64_t> top_k;            // extensions vLLM also accepts
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage alone
};

constexpr int64_t kMaxChoices = 16;    // n
constexpr size_t kMaxStopStrings = 4;  // OpenAI's limit

// The request, or the error to answer with.
std::variant<CompletionRequest, ApiError> parse_completion_request(std::string_view body, Endpoint endpoint);

}  // namespace tessera::server

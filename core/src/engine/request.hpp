// request.hpp: one generation request: what the caller asks, what it gets
// back, and the state the engine keeps while it runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/decoding_context.hpp"
#include "engine/metrics.hpp"
#include "engine/stop_strings.hpp"
#include "tessera/decoding.hpp"
#include "tessera/sequence_memory.hpp"
#include "tessera/status.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/stream_decoder.hpp"

namespace tessera {

struct GenerationRequest {
  std::string prompt;
  int64_t max_tokens = 128;
  bool chat = false;        // wrap with the model's chat template
  std::string system;       // chat system message ("" = the template's default)
  // A whole conversation for the chat template, used instead of `prompt` and
  // `system` when not empty (the template adds the assistant's header).
  std::vector<tok::ChatMessage> messages;
  // Generation ends before the first of these strings (StopStrings); the
  // text returned and streamed stops short of it.
  std::vector<std::string> stop;
  SamplingSettings sampling;
  std::vector<int32_t> token_ids;  // when not empty: the prompt as ids, used instead of `prompt` (benchmarks)
  bool ignore_eos = false;         // generate max_tokens whatever is chosen (benchmarks)
};

struct GenerationResult {
  std::string text;
  std::vector<int32_t> prompt_ids;
  RequestMetrics metrics;
};

// What became of one submitted request.
struct RequestOutcome {
  size_t index = 0;                 // submission order
  Status status;                    // not ok: rejected or failed (the others went on)
  GenerationResult result;
  int32_t preemptions = 0;
  nlohmann::json to_json() const;
};

// A request in the engine, from submission to its outcome.
struct Request {
  size_t index = 0;
  GenerationRequest request;
  std::unique_ptr<RequestDecodingContext> ctx;  // prompt + generated tokens, and a proposal being verified
  std::unique_ptr<tok::StreamDecoder> stream;
  StopStrings stop;               // request.stop, matched over the streamed text
  SeqId seq = -1;
  bool has_seq = false;
  int32_t n_computed = 0;         // leading tokens whose state is in the memory
  std::optional<CheckpointId> checkpoint;  // taken before verifying on a memory that cannot truncate
  int32_t accepted_drafts = 0;    // drafts the last step kept
  bool done = false;
  Clock::time_point submitted, first_token_at, last_token_at;
  RequestOutcome outcome;

  std::span<const int32_t> tokens() const { return ctx->tokens(); }
  int32_t n_tokens() const { return static_cast<int32_t>(ctx->tokens().size()); }
  // Tokens the request reaches when it ends: its prompt plus max_tokens, within the context.
  int64_t final_tokens(int64_t context) const {
    return std::min<int64_t>(context, outcome.result.metrics.prompt_tokens + std::max<int64_t>(request.max_tokens, 1));
  }
};

}  // namespace tessera

// tessera/decoding.hpp: decoding strategies choose the next token(s).
//
// The engine runs the model, then asks the request's strategy to step: the
// strategy reads the logits of the last position through the context and
// appends one or more tokens. Sampling settings are shared per request, not a
// strategy; a strategy is free to ignore those it has no use for.
//
// Thread-safety: step() is called for one request at a time; a strategy object
// may be shared by requests and so keeps per-request state in the context only.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tessera/plugin.hpp"
#include "tessera/status.hpp"

namespace tessera {

struct SamplingSettings {
  double temperature = 1.0;         // 0 = greedy
  int64_t top_k = 0;                // 0 = off
  double top_p = 1.0;               // 1 = off
  double min_p = 0.0;               // 0 = off
  double repetition_penalty = 1.0;  // 1 = off
  int64_t repeat_last_n = 64;       // window the penalty looks at
  uint64_t seed = 0;
};

class DecodingContext {
 public:
  virtual ~DecodingContext() = default;
  // Logits of the last position [vocab_size]. The strategy may modify them in place.
  virtual std::span<float> logits() noexcept = 0;
  // Prompt followed by every token generated so far.
  virtual std::span<const int32_t> tokens() const noexcept = 0;
  virtual int32_t prompt_length() const noexcept = 0;
  virtual const SamplingSettings& sampling() const noexcept = 0;
  // The request's generator, seeded from sampling().seed: reproducible run to run.
  virtual std::mt19937_64& rng() noexcept = 0;
};

class DecodingStrategy : public PluginObject {
 public:
  // Append at least one token to `out`.
  virtual Status step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept = 0;
};

}  // namespace tessera

// tessera/decoding.hpp: decoding strategies choose the next token(s), and
// verify tokens proposed by a draft (speculative decoding).
//
// The engine runs the model, then asks the request's strategy to step: the
// strategy reads the logits of the request's row through the context and
// appends one or more tokens. When a draft proposed tokens d1..dk, the model
// ran all of them in one forward and the context holds k + 1 rows: row i
// follows tokens() + d1..di. verify() then keeps a prefix of the proposal and
// adds one token of its own (the replacement at the first rejection, or a
// bonus token after the last row). Its default verifies through step(), so
// every strategy, a third party's too, verifies exactly: the token step()
// would choose at row i is compared with d(i+1); sampling a token from p and
// keeping d(i+1) when they are equal accepts d(i+1) with probability
// p(d(i+1)) and otherwise leaves a token distributed as p without d(i+1):
// the rule of Leviathan et al. for a draft that proposes d(i+1) with
// certainty. A draft that proposes from a distribution q needs p itself:
// distribution() (ABI 3.1).
//
// Sampling settings are shared per request, not a strategy; a strategy is free
// to ignore those it has no use for.
//
// Thread-safety: step() and verify() are called for one request at a time; a
// strategy object may be shared by requests and so keeps per-request state in
// the context only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tessera/abi.hpp"
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
static_assert(offsetof(SamplingSettings, temperature) == 0);
static_assert(offsetof(SamplingSettings, repetition_penalty) == 32);
static_assert(offsetof(SamplingSettings, seed) == 48);
static_assert(sizeof(SamplingSettings) == 56);

class DecodingContext : public AbiObject {
 public:
  // Tokens a draft proposed after tokens(), being verified in this step;
  // empty in an ordinary step. They follow tokens() in the same array:
  // tokens().data() + tokens().size() == proposed().data().
  virtual std::span<const int32_t> proposed() const noexcept = 0;
  // Logits [vocab_size] of row `row` in [0, proposed().size()]: the position
  // after tokens() + proposed()[0, row). The strategy may modify them in place.
  virtual std::span<float> logits(size_t row) noexcept = 0;
  // Prompt followed by every token generated so far.
  virtual std::span<const int32_t> tokens() const noexcept = 0;
  virtual int32_t prompt_length() const noexcept = 0;
  virtual const SamplingSettings& sampling() const noexcept = 0;
  // The request's generator, seeded from sampling().seed: reproducible run to run.
  virtual std::mt19937_64& rng() noexcept = 0;

  // Row 0: the logits an ordinary step() decides from.
  std::span<float> logits() noexcept { return logits(0); }
};

// A context that shows one row of `base` as an ordinary step: logits() is
// base's row `row`, and tokens() ends with the first `row` proposed tokens.
// What the default verify() hands to step().
class DecodingRowContext final : public DecodingContext {
 public:
  DecodingRowContext(DecodingContext& base, size_t row) noexcept : base_(base), row_(row) {}
  std::span<const int32_t> proposed() const noexcept override { return {}; }
  std::span<float> logits(size_t row) noexcept override { return row == 0 ? base_.logits(row_) : std::span<float>{}; }
  std::span<const int32_t> tokens() const noexcept override {
    const auto committed = base_.tokens();
    return {committed.data(), committed.size() + row_};
  }
  int32_t prompt_length() const noexcept override { return base_.prompt_length(); }
  const SamplingSettings& sampling() const noexcept override { return base_.sampling(); }
  std::mt19937_64& rng() noexcept override { return base_.rng(); }

 private:
  DecodingContext& base_;
  size_t row_;
};

class DecodingStrategy : public PluginObject {
 public:
  // Append at least one token to `out`, decided from ctx.logits() (row 0).
  virtual Status step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept = 0;

  // Verify ctx.proposed() against the rows of logits: append the accepted
  // prefix of the proposal and then one token of the strategy's own, so `out`
  // receives between 1 and proposed().size() + 1 tokens. The default decides
  // each row with step() (see the top of this file); a strategy may override
  // it, keeping the same distribution of outputs.
  virtual Status verify(DecodingContext& ctx, std::vector<int32_t>& out) noexcept {
    return guard([&]() -> Status {
      const auto proposed = ctx.proposed();
      std::vector<int32_t> chosen;
      for (size_t row = 0; row <= proposed.size(); ++row) {
        DecodingRowContext row_ctx(ctx, row);
        chosen.clear();
        TESSERA_RETURN_IF_ERROR(step(row_ctx, chosen));
        if (chosen.empty()) return Internal("the decoding strategy chose no token while verifying");
        out.push_back(chosen.front());
        if (row == proposed.size() || chosen.front() != proposed[row]) break;
      }
      return Status::Ok();
    });
  }

#if TESSERA_ABI_MINOR >= 1
  // ABI 3.1. The distribution step() samples from at row 0 of `ctx`, written
  // to probs[vocab_size] (non-negative, summing to 1): after the request's
  // sampling settings (temperature, top-k/p, min-p, penalties; a point mass
  // for greedy). Lets the engine verify a draft that proposes from a
  // distribution q by rejection sampling (accept with min(1, p/q), else sample
  // from max(0, p - q) normalised). unsupported: the engine then verifies
  // point-mass proposals only, through verify().
  virtual Status distribution(DecodingContext& /*ctx*/, std::span<float> /*probs*/) noexcept {
    return Unsupported("this decoding strategy does not expose its distribution");
  }
#endif
};

}  // namespace tessera

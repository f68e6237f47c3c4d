// perplexity.hpp: `tessera perplexity`, scored the way llama.cpp's perplexity tool scores.
//
// The text is tokenized once (BOS first where the model adds BOS) and cut into
// consecutive windows of `ctx` tokens; the first token of each window is BOS
// where the model adds BOS. Only the predictions for the second half of each
// window are scored, the first half being context: positions j in
// [ctx/2, ctx-1) predict token j+1, so each window scores ctx/2 - 1 tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/session.hpp"

namespace tessera {

struct PerplexityReport {
  int64_t ctx = 0;
  int64_t windows = 0;
  int64_t scored_tokens = 0;
  int64_t text_tokens = 0;
  double mean_nll = 0;
  double ppl = 0;
  double ppl_uncertainty = 0;  // ppl times the standard error of the mean NLL (delta method)
  nlohmann::json to_json() const;
};

// Runs one window of tokens as a fresh sequence: the logits of every position,
// [tokens.size(), vocab] row-major.
using WindowScorer = std::function<Result<std::vector<float>>(std::span<const int32_t> tokens)>;

// The same scoring over any engine that gives a window's logits (the CUDA
// forward's tests score its windows with it); `context_length` bounds ctx.
Result<PerplexityReport> compute_perplexity(const tok::Tokenizer& tokenizer, int64_t context_length, int64_t vocab_size,
                                            const WindowScorer& score, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0,
                                            const std::function<void(int64_t, int64_t, double)>& progress = {});

// `progress(done, total, running_ppl)` after each window.
Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0,
                                            const std::function<void(int64_t, int64_t, double)>& progress = {});

}  // namespace tessera

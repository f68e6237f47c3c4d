// perplexity.hpp: `tessera perplexity`, scored the way llama.cpp's perplexity tool scores.
//
// The text is tokenized once (BOS first where the model adds BOS) and cut into
// consecutive windows of `ctx` tokens; the first token of each window is BOS
// where the model adds BOS. Only the predictions for the second half of each
// window are scored, the first half being context: positions j in
// [ctx/2, ctx-1) predict token j+1, so each window scores ctx/2 - 1 tokens.
//
// With a reference model (a quantized file against the float one it came
// from), both score the same windows and the report says how far the model's
// next-token distributions are from the reference's at every scored position:
// the KL divergence, the perplexity ratio from paired log-likelihoods and how
// often both models' most likely token agree. Paired per token, these separate
// two quantizations far more finely than the two perplexities, whose sampling
// errors are large and mostly shared.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/session.hpp"

namespace tessera {

// The model against the reference over the same scored positions. Means are
// per scored token in nats; each uncertainty is one standard error of the mean.
struct ReferenceComparison {
  double reference_ppl = 0;
  double reference_ppl_uncertainty = 0;
  double mean_kl_divergence = 0;  // KL(reference ‖ model) of the next-token distributions
  double kl_divergence_uncertainty = 0;
  double median_kl_divergence = 0;
  double p99_kl_divergence = 0;  // the 99th percentile over scored positions
  double max_kl_divergence = 0;
  double ppl_ratio = 0;              // exp(mean(nll_model - nll_reference)) = ppl / reference ppl
  double ppl_ratio_uncertainty = 0;  // ratio times the standard error of the paired mean (delta method)
  double same_top_token = 0;         // share of positions where both argmaxes are the same token
  nlohmann::json to_json() const;
};

struct PerplexityReport {
  int64_t ctx = 0;
  int64_t windows = 0;
  int64_t scored_tokens = 0;
  int64_t text_tokens = 0;
  double mean_nll = 0;
  double ppl = 0;
  double ppl_uncertainty = 0;  // ppl times the standard error of the mean NLL (delta method)
  std::optional<ReferenceComparison> against_reference;
  nlohmann::json to_json() const;
};

// Runs one window of tokens as a fresh sequence: the logits of every position,
// [tokens.size(), vocab] row-major.
using WindowScorer = std::function<Result<std::vector<float>>(std::span<const int32_t> tokens)>;

// The same scoring over any engine that gives a window's logits (the CUDA
// forward's tests score its windows with it); `context_length` bounds ctx.
// A non-empty `reference` scores every window too, over the same vocabulary,
// and fills the report's against_reference.
Result<PerplexityReport> compute_perplexity(const tok::Tokenizer& tokenizer, int64_t context_length, int64_t vocab_size,
                                            const WindowScorer& score, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0,
                                            const std::function<void(int64_t, int64_t, double)>& progress = {},
                                            const WindowScorer& reference = {});

// `progress(done, total, running_ppl)` after each window. A `reference`
// session must share the model's vocabulary and tokenize the text the same.
Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0,
                                            const std::function<void(int64_t, int64_t, double)>& progress = {},
                                            Session* reference = nullptr);

}  // namespace tessera

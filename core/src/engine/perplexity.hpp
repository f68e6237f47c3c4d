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
// per scored token in nats; each uncertainty is one standard error of the mean,
// counting the tokens as independent (as llama.cpp does; tokens of one window
// are not, so the errors are somewhat optimistic).
struct ReferenceComparison {
  double reference_ppl = 0;
  double reference_ppl_uncertainty = 0;
  double mean_kl_divergence = 0;  // KL(reference ‖ model) = Σ_v p_ref(v) log(p_ref(v) / p_model(v))
  double kl_divergence_uncertainty = 0;
  double median_kl_divergence = 0;
  double p99_kl_divergence = 0;  // the 99th percentile over scored positions
  double max_kl_divergence = 0;
  double ppl_ratio = 0;              // exp(mean(nll_model - nll_reference)) = ppl / reference ppl
  double ppl_ratio_uncertainty = 0;  // ratio times the standard error of the paired mean (delta method)
  double same_top_token = 0;         // share of positions where both argmaxes are the same token
  // The next-token distributions' mean entropy, -Σ p log p, for each model:
  // a model that predicts more or less sharply than the reference shows
  // here, which the KL divergence counts as distance either way and the
  // perplexity as loss or gain.
  double mean_entropy = 0;
  double reference_mean_entropy = 0;
  double entropy_difference_uncertainty = 0;  // of the paired mean of entropy - reference entropy
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
// `progress(done, total, running_ppl)` after each window.
using PerplexityProgress = std::function<void(int64_t, int64_t, double)>;

// A model as perplexity sees it: what tokenizes the text, how long a window
// may be, and what scores one. Any engine that gives a window's logits fits
// (the CUDA forward's tests score their windows through one).
struct WindowModel {
  const tok::Tokenizer& tokenizer;
  int64_t context_length = 0;
  int64_t vocab_size = 0;
  WindowScorer score;
};
WindowModel window_model(Session& session);

// With a `reference`, every window is scored by both and the report's
// against_reference is filled; the reference must have the model's
// vocabulary, tokenize the text the same and hold a window of `ctx`.
Result<PerplexityReport> compute_perplexity(const WindowModel& model, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0, const PerplexityProgress& progress = {},
                                            const WindowModel* reference = nullptr);

Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0, const PerplexityProgress& progress = {},
                                            Session* reference = nullptr);

}  // namespace tessera

#include "engine/perplexity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera {
namespace {

// log Σ_v exp(row[v]), in double so that a 150k-token vocabulary loses nothing.
double log_sum_exp(const float* row, size_t vocab) {
  const float max = *std::max_element(row, row + vocab);
  double z = 0;
  for (size_t v = 0; v < vocab; ++v) z += std::exp(static_cast<double>(row[v]) - max);
  return std::log(z) + max;
}

size_t argmax(const float* row, size_t vocab) { return static_cast<size_t>(std::max_element(row, row + vocab) - row); }

// KL(p ‖ q) of the softmaxes of two logit rows, given each row's log Σ exp.
double kl_divergence(const float* p_logits, double p_lse, const float* q_logits, double q_lse, size_t vocab) {
  double kl = 0;
  for (size_t v = 0; v < vocab; ++v) {
    const double log_p = p_logits[v] - p_lse;
    kl += std::exp(log_p) * (log_p - (q_logits[v] - q_lse));
  }
  return std::max(0.0, kl);  // rounding can leave -1e-17 where the rows are equal
}

// A sample's mean and the standard error of that mean.
class MeanEstimate {
 public:
  void add(double x) {
    sum_ += x;
    sum_sq_ += x * x;
    ++n_;
  }
  double mean() const { return n_ ? sum_ / static_cast<double>(n_) : 0.0; }
  double standard_error() const {
    if (n_ < 2) return 0.0;
    const auto n = static_cast<double>(n_);
    const double variance = std::max(0.0, sum_sq_ / n - mean() * mean());
    return std::sqrt(variance / (n - 1));
  }

 private:
  double sum_ = 0, sum_sq_ = 0;
  int64_t n_ = 0;
};

// The value below which `share` of the (unsorted, non-empty) sample lies.
double percentile(std::vector<double> sample, double share) {
  const auto k = static_cast<size_t>(share * static_cast<double>(sample.size() - 1) + 0.5);
  std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(k), sample.end());
  return sample[k];
}

Result<std::vector<float>> checked_logits(const WindowScorer& score, std::span<const int32_t> window, size_t vocab,
                                          const char* which) {
  auto logits = score(window);
  if (!logits.ok()) return logits.status();
  if (logits->size() != window.size() * vocab)
    return Internal(fmt::format("perplexity: the {} gave {} logits for {} tokens of a vocabulary of {}", which,
                                logits->size(), window.size(), vocab));
  return logits;
}

}  // namespace

nlohmann::json ReferenceComparison::to_json() const {
  return {{"reference_ppl", reference_ppl},
          {"reference_ppl_uncertainty", reference_ppl_uncertainty},
          {"mean_kl_divergence", mean_kl_divergence},
          {"kl_divergence_uncertainty", kl_divergence_uncertainty},
          {"median_kl_divergence", median_kl_divergence},
          {"p99_kl_divergence", p99_kl_divergence},
          {"max_kl_divergence", max_kl_divergence},
          {"ppl_ratio", ppl_ratio},
          {"ppl_ratio_uncertainty", ppl_ratio_uncertainty},
          {"same_top_token", same_top_token}};
}

nlohmann::json PerplexityReport::to_json() const {
  nlohmann::json j = {
      {"ctx", ctx},           {"windows", windows}, {"scored_tokens", scored_tokens},    {"text_tokens", text_tokens},
      {"mean_nll", mean_nll}, {"ppl", ppl},         {"ppl_uncertainty", ppl_uncertainty}};
  if (against_reference) j["against_reference"] = against_reference->to_json();
  return j;
}

Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx, int64_t max_windows,
                                            const std::function<void(int64_t, int64_t, double)>& progress,
                                            Session* reference) {
  const WindowScorer score = [&session](std::span<const int32_t> tokens) { return session.score(tokens); };
  WindowScorer reference_score;
  if (reference) {
    if (reference->vocab_size() != session.vocab_size())
      return InvalidArgument(fmt::format("perplexity: the reference model's vocabulary has {} tokens, the model's {}",
                                         reference->vocab_size(), session.vocab_size()));
    if (ctx > reference->context_length())
      return InvalidArgument(
          fmt::format("--ctx {} exceeds the reference model's context of {}", ctx, reference->context_length()));
    const tok::Tokenizer& ours = session.tokenizer();
    const tok::Tokenizer& theirs = reference->tokenizer();
    if (theirs.bos_id() != ours.bos_id() || theirs.add_bos() != ours.add_bos() ||
        theirs.encode(text, std::nullopt, false) != ours.encode(text, std::nullopt, false))
      return InvalidArgument("perplexity: the reference model tokenizes the text differently from the model");
    reference_score = [reference](std::span<const int32_t> tokens) { return reference->score(tokens); };
  }
  return compute_perplexity(session.tokenizer(), session.context_length(), session.vocab_size(), score, text, ctx,
                            max_windows, progress, reference_score);
}

Result<PerplexityReport> compute_perplexity(const tok::Tokenizer& tokenizer, int64_t context_length, int64_t vocab_size,
                                            const WindowScorer& score, std::string_view text, int64_t ctx,
                                            int64_t max_windows,
                                            const std::function<void(int64_t, int64_t, double)>& progress,
                                            const WindowScorer& reference) {
  if (ctx < 4) return InvalidArgument(fmt::format("--ctx {} is too small (at least 4)", ctx));
  if (vocab_size <= 0) return InvalidArgument("perplexity: the model has no vocabulary");
  if (ctx > context_length)
    return InvalidArgument(fmt::format("--ctx {} exceeds the model's context of {}", ctx, context_length));
  const std::vector<int32_t> tokens = tokenizer.encode(text, std::nullopt, /*parse_special=*/false);
  const bool add_bos = tokenizer.add_bos() && tokenizer.bos_id() >= 0;

  PerplexityReport r;
  r.ctx = ctx;
  r.text_tokens = static_cast<int64_t>(tokens.size());
  r.windows = r.text_tokens / ctx;
  if (max_windows > 0) r.windows = std::min(r.windows, max_windows);
  if (r.windows == 0)
    return InvalidArgument(fmt::format("the text has {} tokens, fewer than one window of {}", tokens.size(), ctx));

  const auto vocab = static_cast<size_t>(vocab_size);
  const int64_t first = ctx / 2;
  MeanEstimate nll, reference_nll, nll_over_reference, kl;
  std::vector<double> kl_values;  // per scored position, for the percentiles
  int64_t same_top = 0;
  std::vector<int32_t> window(static_cast<size_t>(ctx));
  for (int64_t w = 0; w < r.windows; ++w) {
    std::copy_n(tokens.begin() + w * ctx, ctx, window.begin());
    if (add_bos) window[0] = tokenizer.bos_id();
    auto logits = checked_logits(score, window, vocab, "scorer");
    if (!logits.ok()) return logits.status();
    Result<std::vector<float>> reference_logits = std::vector<float>{};
    if (reference) reference_logits = checked_logits(reference, window, vocab, "reference scorer");
    if (!reference_logits.ok()) return reference_logits.status();
    for (int64_t j = first; j < ctx - 1; ++j) {
      const auto target = static_cast<size_t>(window[static_cast<size_t>(j + 1)]);
      if (target >= vocab)
        return InvalidArgument(fmt::format("perplexity: token {} is outside the model's {} logits", target, vocab));
      const float* row = logits->data() + static_cast<size_t>(j) * vocab;
      const double lse = log_sum_exp(row, vocab);
      const double token_nll = lse - row[target];
      nll.add(token_nll);
      ++r.scored_tokens;
      if (!reference) continue;
      const float* reference_row = reference_logits->data() + static_cast<size_t>(j) * vocab;
      const double reference_lse = log_sum_exp(reference_row, vocab);
      const double reference_token_nll = reference_lse - reference_row[target];
      reference_nll.add(reference_token_nll);
      nll_over_reference.add(token_nll - reference_token_nll);
      kl_values.push_back(kl_divergence(reference_row, reference_lse, row, lse, vocab));
      kl.add(kl_values.back());
      same_top += argmax(row, vocab) == argmax(reference_row, vocab);
    }
    if (progress) progress(w + 1, r.windows, std::exp(nll.mean()));
  }
  r.mean_nll = nll.mean();
  r.ppl = std::exp(r.mean_nll);
  r.ppl_uncertainty = r.ppl * nll.standard_error();
  if (reference) {
    ReferenceComparison c;
    c.reference_ppl = std::exp(reference_nll.mean());
    c.reference_ppl_uncertainty = c.reference_ppl * reference_nll.standard_error();
    c.mean_kl_divergence = kl.mean();
    c.kl_divergence_uncertainty = kl.standard_error();
    c.median_kl_divergence = percentile(kl_values, 0.5);
    c.p99_kl_divergence = percentile(kl_values, 0.99);
    c.max_kl_divergence = *std::max_element(kl_values.begin(), kl_values.end());
    c.ppl_ratio = std::exp(nll_over_reference.mean());
    c.ppl_ratio_uncertainty = c.ppl_ratio * nll_over_reference.standard_error();
    c.same_top_token = static_cast<double>(same_top) / static_cast<double>(r.scored_tokens);
    r.against_reference = c;
  }
  return r;
}

}  // namespace tessera

#include "engine/perplexity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/sample_statistics.hpp"
#include "tessera/argmax.hpp"

namespace tessera {
namespace {

// What one scored position contributes. The reference's fields stay unset
// without a reference.
struct PositionScore {
  double nll = 0;
  double reference_nll = 0;
  double kl_divergence = 0;
  double entropy = 0, reference_entropy = 0;
  bool same_top = false;
};

// log Σ_v exp(row[v]), in double so that a 150k-token vocabulary loses
// nothing; `exps`, when given, receives exp(row[v] - max) for reuse.
double log_sum_exp(std::span<const float> row, double* exps = nullptr) {
  const float max = *std::max_element(row.begin(), row.end());
  double z = 0;
  for (size_t v = 0; v < row.size(); ++v) {
    const double e = std::exp(static_cast<double>(row[v]) - max);
    if (exps) exps[v] = e;
    z += e;
  }
  return std::log(z) + max;
}

struct AgainstP {
  double kl_divergence = 0;  // KL(p ‖ q)
  double p_entropy = 0;      // -Σ p log p
};

// KL(p ‖ q) = Σ_v p(v) (log p(v) - log q(v)) of the softmaxes of two logit
// rows, and p's entropy, in one pass over p's cached exps: given p's
// unnormalized exps (exp(row - max)) and both rows' log Σ exp. Tokens that p
// rules out (a -inf logit) add nothing; one that q rules out and p does not
// makes the divergence +inf, as it is.
AgainstP against_p(std::span<const float> p_row, const double* p_exps, double p_lse, std::span<const float> q_row,
                   double q_lse) {
  const double p_scale = std::exp(static_cast<double>(*std::max_element(p_row.begin(), p_row.end())) - p_lse);
  AgainstP out;
  for (size_t v = 0; v < p_row.size(); ++v) {
    const double p = p_exps[v] * p_scale;
    if (p == 0) continue;
    const double log_p = p_row[v] - p_lse;
    out.kl_divergence += p * (log_p - (q_row[v] - q_lse));
    out.p_entropy -= p * log_p;
  }
  out.kl_divergence = std::max(0.0, out.kl_divergence);  // rounding leaves -1e-17 where the rows are nearly equal
  return out;
}

// The entropy -Σ_v p(v) log p(v) of a logit row's softmax, given the row's
// log Σ exp; tokens the row rules out (-inf) add nothing.
double entropy(std::span<const float> row, double lse) {
  double h = 0;
  for (const float x : row) {
    const double log_p = x - lse;
    const double p = std::exp(log_p);
    if (p > 0) h -= p * log_p;
  }
  return h;
}

Result<std::vector<float>> window_logits(const WindowModel& model, std::span<const int32_t> window, const char* which) {
  auto logits = model.score(window);
  if (!logits.ok()) return logits.status();
  if (logits->size() != window.size() * static_cast<size_t>(model.vocab_size))
    return Internal(fmt::format("perplexity: the {} gave {} logits for {} tokens of a vocabulary of {}", which,
                                logits->size(), window.size(), model.vocab_size));
  return logits;
}

// Scores positions [first, ctx - 1) of one window, each predicting the token
// after it, in parallel: every position's figures land in its own slot.
Status score_positions(std::span<const int32_t> window, int64_t first, size_t vocab, const std::vector<float>& logits,
                       const std::vector<float>* reference_logits, std::vector<PositionScore>& out) {
  const auto ctx = static_cast<int64_t>(window.size());
  out.assign(static_cast<size_t>(ctx - 1 - first), {});
  for (int64_t j = first; j < ctx - 1; ++j)
    if (static_cast<size_t>(window[static_cast<size_t>(j + 1)]) >= vocab)
      return InvalidArgument(fmt::format("perplexity: token {} is outside the model's {} logits",
                                         window[static_cast<size_t>(j + 1)], vocab));
  Status failure = Status::Ok();
#pragma omp parallel
  {
    std::vector<double> exps(reference_logits ? vocab : 0);
#pragma omp for schedule(static)
    for (int64_t j = first; j < ctx - 1; ++j) {
      PositionScore& s = out[static_cast<size_t>(j - first)];
      const auto target = static_cast<size_t>(window[static_cast<size_t>(j + 1)]);
      const std::span<const float> row(logits.data() + static_cast<size_t>(j) * vocab, vocab);
      const double lse = log_sum_exp(row);
      s.nll = lse - row[target];
      if (!reference_logits) continue;
      const std::span<const float> reference_row(reference_logits->data() + static_cast<size_t>(j) * vocab, vocab);
      const double reference_lse = log_sum_exp(reference_row, exps.data());
      s.reference_nll = reference_lse - reference_row[target];
      const AgainstP reference_terms = against_p(reference_row, exps.data(), reference_lse, row, lse);
      s.kl_divergence = reference_terms.kl_divergence;
      s.reference_entropy = reference_terms.p_entropy;
      s.entropy = entropy(row, lse);
      const auto top = argmax_token(row);
      const auto reference_top = argmax_token(reference_row);
      if (!top.ok() || !reference_top.ok()) {
#pragma omp critical(perplexity_failure)
        failure = !top.ok() ? top.status() : reference_top.status();
        continue;
      }
      s.same_top = *top == *reference_top;
    }
  }
  return failure;
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
          {"same_top_token", same_top_token},
          {"mean_entropy", mean_entropy},
          {"reference_mean_entropy", reference_mean_entropy},
          {"entropy_difference_uncertainty", entropy_difference_uncertainty}};
}

nlohmann::json PerplexityReport::to_json() const {
  nlohmann::json j = {
      {"ctx", ctx},           {"windows", windows}, {"scored_tokens", scored_tokens},    {"text_tokens", text_tokens},
      {"mean_nll", mean_nll}, {"ppl", ppl},         {"ppl_uncertainty", ppl_uncertainty}};
  if (against_reference) j["against_reference"] = against_reference->to_json();
  return j;
}

WindowModel window_model(Session& session) {
  return {session.tokenizer(), session.context_length(), session.vocab_size(),
          [&session](std::span<const int32_t> tokens) { return session.score(tokens); }};
}

Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx, int64_t max_windows,
                                            const PerplexityProgress& progress, Session* reference) {
  if (!reference) return compute_perplexity(window_model(session), text, ctx, max_windows, progress);
  const WindowModel reference_model = window_model(*reference);
  return compute_perplexity(window_model(session), text, ctx, max_windows, progress, &reference_model);
}

Result<PerplexityReport> compute_perplexity(const WindowModel& model, std::string_view text, int64_t ctx,
                                            int64_t max_windows, const PerplexityProgress& progress,
                                            const WindowModel* reference) {
  if (ctx < 4) return InvalidArgument(fmt::format("--ctx {} is too small (at least 4)", ctx));
  if (model.vocab_size <= 0) return InvalidArgument("perplexity: the model has no vocabulary");
  if (ctx > model.context_length)
    return InvalidArgument(fmt::format("--ctx {} exceeds the model's context of {}", ctx, model.context_length));
  const tok::Tokenizer& tokenizer = model.tokenizer;
  const std::vector<int32_t> tokens = tokenizer.encode(text, std::nullopt, /*parse_special=*/false);
  const bool add_bos = tokenizer.add_bos() && tokenizer.bos_id() >= 0;
  if (reference) {
    if (reference->vocab_size != model.vocab_size)
      return InvalidArgument(fmt::format("perplexity: the reference model's vocabulary has {} tokens, the model's {}",
                                         reference->vocab_size, model.vocab_size));
    if (ctx > reference->context_length)
      return InvalidArgument(
          fmt::format("--ctx {} exceeds the reference model's context of {}", ctx, reference->context_length));
    const tok::Tokenizer& theirs = reference->tokenizer;
    if (&theirs != &tokenizer && (theirs.bos_id() != tokenizer.bos_id() || theirs.add_bos() != tokenizer.add_bos() ||
                                  theirs.encode(text, std::nullopt, false) != tokens))
      return InvalidArgument("perplexity: the reference model tokenizes the text differently from the model");
  }

  PerplexityReport r;
  r.ctx = ctx;
  r.text_tokens = static_cast<int64_t>(tokens.size());
  r.windows = r.text_tokens / ctx;
  if (max_windows > 0) r.windows = std::min(r.windows, max_windows);
  if (r.windows == 0)
    return InvalidArgument(fmt::format("the text has {} tokens, fewer than one window of {}", tokens.size(), ctx));

  const auto vocab = static_cast<size_t>(model.vocab_size);
  MeanEstimate nll, reference_nll, nll_over_reference, kl, entropy_over_reference;
  MeanEstimate model_entropy, reference_entropy;
  std::vector<double> kl_values;  // per scored position, for the percentiles
  int64_t same_top = 0;
  std::vector<int32_t> window(static_cast<size_t>(ctx));
  std::vector<PositionScore> scores;
  for (int64_t w = 0; w < r.windows; ++w) {
    std::copy_n(tokens.begin() + w * ctx, ctx, window.begin());
    if (add_bos) window[0] = tokenizer.bos_id();
    auto logits = window_logits(model, window, "scorer");
    if (!logits.ok()) return logits.status();
    Result<std::vector<float>> reference_logits = std::vector<float>{};
    if (reference) reference_logits = window_logits(*reference, window, "reference scorer");
    if (!reference_logits.ok()) return reference_logits.status();
    TESSERA_RETURN_IF_ERROR(
        score_positions(window, ctx / 2, vocab, *logits, reference ? &*reference_logits : nullptr, scores));
    // Summed in position order, so that the figures do not depend on the threads.
    for (const PositionScore& s : scores) {
      nll.add(s.nll);
      if (!reference) continue;
      reference_nll.add(s.reference_nll);
      nll_over_reference.add(s.nll - s.reference_nll);
      kl.add(s.kl_divergence);
      kl_values.push_back(s.kl_divergence);
      model_entropy.add(s.entropy);
      reference_entropy.add(s.reference_entropy);
      entropy_over_reference.add(s.entropy - s.reference_entropy);
      same_top += s.same_top;
    }
    if (progress) progress(w + 1, r.windows, std::exp(nll.mean()));
  }
  r.scored_tokens = nll.count();
  r.mean_nll = nll.mean();
  r.ppl = std::exp(r.mean_nll);
  r.ppl_uncertainty = r.ppl * nll.standard_error();
  if (reference) {
    ReferenceComparison c;
    c.reference_ppl = std::exp(reference_nll.mean());
    c.reference_ppl_uncertainty = c.reference_ppl * reference_nll.standard_error();
    c.mean_kl_divergence = kl.mean();
    c.kl_divergence_uncertainty = kl.standard_error();
    c.median_kl_divergence = percentile(kl_values, 50);
    c.p99_kl_divergence = percentile(kl_values, 99);
    c.max_kl_divergence = *std::max_element(kl_values.begin(), kl_values.end());
    c.ppl_ratio = std::exp(nll_over_reference.mean());
    c.ppl_ratio_uncertainty = c.ppl_ratio * nll_over_reference.standard_error();
    c.same_top_token = static_cast<double>(same_top) / static_cast<double>(r.scored_tokens);
    c.mean_entropy = model_entropy.mean();
    c.reference_mean_entropy = reference_entropy.mean();
    c.entropy_difference_uncertainty = entropy_over_reference.standard_error();
    r.against_reference = c;
  }
  return r;
}

}  // namespace tessera

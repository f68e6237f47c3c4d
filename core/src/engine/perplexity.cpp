#include "engine/perplexity.hpp"

#include <cmath>

#include <fmt/format.h>

namespace tessera {

nlohmann::json PerplexityReport::to_json() const {
  return {{"ctx", ctx},          {"windows", windows},   {"scored_tokens", scored_tokens},
          {"text_tokens", text_tokens}, {"mean_nll", mean_nll}, {"ppl", ppl},
          {"ppl_uncertainty", ppl_uncertainty}};
}

Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx,
                                            int64_t max_windows,
                                            const std::function<void(int64_t, int64_t, double)>& progress) {
  const WindowScorer score = [&session](std::span<const int32_t> tokens) { return session.score(tokens); };
  return compute_perplexity(session.tokenizer(), session.context_length(), session.vocab_size(), score, text, ctx,
                            max_windows, progress);
}

Result<PerplexityReport> compute_perplexity(const tok::Tokenizer& tokenizer, int64_t context_length, int64_t vocab_size,
                                            const WindowScorer& score, std::string_view text, int64_t ctx,
                                            int64_t max_windows,
                                            const std::function<void(int64_t, int64_t, double)>& progress) {
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
  double sum = 0, sum_sq = 0;
  std::vector<int32_t> window(static_cast<size_t>(ctx));
  for (int64_t w = 0; w < r.windows; ++w) {
    std::copy_n(tokens.begin() + w * ctx, ctx, window.begin());
    if (add_bos) window[0] = tokenizer.bos_id();
    auto logits = score(window);
    if (!logits.ok()) return logits.status();
    if (logits->size() != window.size() * vocab)
      return Internal(fmt::format("perplexity: the scorer gave {} logits for {} tokens of a vocabulary of {}",
                                  logits->size(), window.size(), vocab));
    for (int64_t j = first; j < ctx - 1; ++j) {
      const float* row = logits->data() + static_cast<size_t>(j) * vocab;
      // log-softmax in double: nll = logsumexp(row) - row[target].
      float max = row[0];
      for (size_t v = 1; v < vocab; ++v) max = std::max(max, row[v]);
      double z = 0;
      for (size_t v = 0; v < vocab; ++v) z += std::exp(static_cast<double>(row[v]) - max);
      const auto target = static_cast<size_t>(window[static_cast<size_t>(j + 1)]);
      if (target >= vocab)
        return InvalidArgument(fmt::format("perplexity: token {} is outside the model's {} logits", target, vocab));
      const double nll = std::log(z) + max - row[target];
      sum += nll;
      sum_sq += nll * nll;
      ++r.scored_tokens;
    }
    if (progress) progress(w + 1, r.windows, std::exp(sum / static_cast<double>(r.scored_tokens)));
  }
  const auto n = static_cast<double>(r.scored_tokens);
  r.mean_nll = sum / n;
  r.ppl = std::exp(r.mean_nll);
  const double variance = std::max(0.0, sum_sq / n - r.mean_nll * r.mean_nll);
  r.ppl_uncertainty = n > 1 ? r.ppl * std::sqrt(variance / (n - 1)) : 0.0;
  return r;
}

}  // namespace tessera

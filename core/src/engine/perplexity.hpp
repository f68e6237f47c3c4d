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

// `progress(done, total, running_ppl)` after each window.
Result<PerplexityReport> compute_perplexity(Session& session, std::string_view text, int64_t ctx,
                                            int64_t max_windows = 0,
                                            const std::function<void(int64_t, int64_t, double)>& progress = {});

}  // namespace tessera

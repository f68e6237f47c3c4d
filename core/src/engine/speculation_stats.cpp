#include "engine/speculation_stats.hpp"

#include <algorithm>

namespace tessera {

void SpeculationStats::add(int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  ++drafts;
  drafted_tokens += proposed;
  accepted_tokens += accepted;
  if (drafted_at.size() < static_cast<size_t>(proposed)) {
    drafted_at.resize(static_cast<size_t>(proposed));
    accepted_at.resize(static_cast<size_t>(proposed));
  }
  for (int32_t i = 0; i < proposed; ++i) {
    ++drafted_at[static_cast<size_t>(i)];
    if (i < accepted) ++accepted_at[static_cast<size_t>(i)];
  }
}

void SpeculationStats::merge(const SpeculationStats& o) {
  drafts += o.drafts;
  drafted_tokens += o.drafted_tokens;
  accepted_tokens += o.accepted_tokens;
  draft_ms += o.draft_ms;
  verify_ms += o.verify_ms;
  requests_turned_off += o.requests_turned_off;
  if (drafted_at.size() < o.drafted_at.size()) {
    drafted_at.resize(o.drafted_at.size());
    accepted_at.resize(o.drafted_at.size());
  }
  for (size_t i = 0; i < o.drafted_at.size(); ++i) {
    drafted_at[i] += o.drafted_at[i];
    accepted_at[i] += o.accepted_at[i];
  }
}

double SpeculationStats::acceptance_rate() const {
  return drafted_tokens > 0 ? static_cast<double>(accepted_tokens) / static_cast<double>(drafted_tokens) : 0.0;
}

double SpeculationStats::mean_acceptance_length() const {
  return drafts > 0 ? 1.0 + static_cast<double>(accepted_tokens) / static_cast<double>(drafts) : 0.0;
}

nlohmann::json SpeculationStats::to_json() const {
  std::vector<double> by_position;
  for (size_t i = 0; i < drafted_at.size(); ++i)
    by_position.push_back(drafted_at[i] > 0 ? static_cast<double>(accepted_at[i]) / static_cast<double>(drafted_at[i])
                                            : 0.0);
  return {{"drafts", drafts},
          {"drafted_tokens", drafted_tokens},
          {"accepted_tokens", accepted_tokens},
          {"acceptance_rate", acceptance_rate()},
          {"mean_acceptance_length", mean_acceptance_length()},
          {"acceptance_by_position", by_position},
          {"drafted_by_position", drafted_at},
          {"draft_ms", draft_ms},
          {"verify_ms", verify_ms},
          {"requests_turned_off", requests_turned_off}};
}

}  // namespace tessera

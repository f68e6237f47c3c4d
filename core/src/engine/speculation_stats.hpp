// speculation_stats.hpp: what speculative decoding did, in vLLM's terms:
// acceptance rate = accepted / drafted tokens; mean acceptance length =
// 1 + accepted / drafts (tokens a verifying step yields on average, its own
// token included).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera {

struct SpeculationStats {
  int64_t drafts = 0;           // request-steps that verified drafts
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
  std::vector<int64_t> drafted_at;   // [position in the draft]: drafts that reached it
  std::vector<int64_t> accepted_at;  // and kept its token
  double draft_ms = 0;   // proposing: draft-model forwards, lookups
  double verify_ms = 0;  // steps that verified drafts: the forward and the verification
  int64_t requests_turned_off = 0;   // requests whose drafting stopped paying

  // One request-step verified `proposed` drafts and kept the first `accepted`.
  void add(int32_t proposed, int32_t accepted);
  // Adds another run's figures to these.
  void merge(const SpeculationStats& other);
  double acceptance_rate() const;
  double mean_acceptance_length() const;
  nlohmann::json to_json() const;
};

}  // namespace tessera

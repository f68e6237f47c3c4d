#include "engine/metrics.hpp"

#include <sys/resource.h>

namespace tessera {

uint64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

nlohmann::json RequestMetrics::to_json() const {
  return {
      {"prompt_tokens", prompt_tokens},
      {"generated_tokens", generated_tokens},
      {"token_ids", token_ids},
      {"ttft_ms", ttft_ms},
      {"prefill_ms", prefill_ms},
      {"decode_ms", decode_ms},
      {"prefill_tokens_per_s", prefill_tokens_per_s()},
      {"decode_tokens_per_s", decode_tokens_per_s()},
      {"ms_per_token", ms_per_token()},
      {"stop_reason", stop_reason},
      {"seed", seed},
      {"drafted_tokens", drafted_tokens},
      {"accepted_tokens", accepted_tokens},
      {"draft_steps", draft_steps},
      {"acceptance_rate", drafted_tokens > 0 ? static_cast<double>(accepted_tokens) / drafted_tokens : 0.0},
      {"mean_acceptance_length", draft_steps > 0 ? 1.0 + static_cast<double>(accepted_tokens) / draft_steps : 0.0},
      {"speculation_turned_off", speculation_turned_off},
  };
}

}  // namespace tessera

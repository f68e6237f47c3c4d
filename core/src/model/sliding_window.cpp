#include "model/sliding_window.hpp"

#include <spdlog/spdlog.h>

namespace tessera {

void cap_context_at_sliding_window(ModelHParams& hp, int64_t window, std::string_view source) {
  if (window <= 0 || (hp.context_length > 0 && window >= hp.context_length)) return;
  spdlog::warn(
      "{}: trained with sliding-window attention over {} positions; Tessera's attention has no window, so the "
      "context is limited to {} (was {})",
      source, window, window, hp.context_length);
  hp.context_length = window;
}

}  // namespace tessera

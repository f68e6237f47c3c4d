// model/sliding_window.hpp: what a model trained with sliding-window attention
// may use of its context here.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/weights.hpp"

namespace tessera {

// Tessera's attention kernels let every position attend to all earlier ones.
// A model trained with a sliding window of W positions (Mistral 7B v0.1:
// 4096 of 32768; Qwen2 with use_sliding_window) would, past W tokens, attend
// where it was trained not to: output that differs silently. So the context
// it reports is capped at W, and a longer prompt is refused like any prompt
// longer than the context. A warning names the window and the cap.
// `window` <= 0 (absent or null) or >= the trained context changes nothing.
void cap_context_at_sliding_window(ModelHParams& hp, int64_t window, std::string_view source);

}  // namespace tessera

#include "greedy_strategy.hpp"

#include <algorithm>
#include <string>

#include "tessera/argmax.hpp"

namespace tessera::plugins {

Status GreedyStrategy::step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept {
  return guard([&]() -> Status {
    Result<int32_t> token = argmax_token(ctx.logits());
    if (!token.ok()) return token.status();
    out.push_back(*token);
    return Status::Ok();
  });
}

Status GreedyStrategy::distribution(DecodingContext& ctx, std::span<float> probs) noexcept {
  return guard([&]() -> Status {
    if (probs.size() != ctx.logits().size())
      return InvalidArgument("greedy: distribution() needs " + std::to_string(ctx.logits().size()) +
                             " probabilities, got room for " + std::to_string(probs.size()));
    Result<int32_t> token = argmax_token(ctx.logits());
    if (!token.ok()) return token.status();
    std::fill(probs.begin(), probs.end(), 0.0f);
    probs[static_cast<size_t>(*token)] = 1.0f;
    return Status::Ok();
  });
}

}  // namespace tessera::plugins

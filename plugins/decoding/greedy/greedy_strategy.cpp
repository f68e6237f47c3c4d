#include "greedy_strategy.hpp"

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

}  // namespace tessera::plugins

// draft_verification.hpp: deciding which of a draft's proposed tokens a
// request keeps, exactly as if the target alone had chosen (speculative
// decoding, Leviathan et al. 2023; Chen et al. 2023).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tessera/decoding.hpp"

namespace tessera {

// ctx holds the proposal (ctx.proposed(), k tokens) and k + 1 rows of target
// logits. `draft_probs` [k, vocab] holds the distribution q each proposed
// token was drawn from, or is empty when the draft proposed with certainty
// (greedy drafting, prompt lookup). Appends the kept tokens and one of the
// strategy's own to `out`.
//  * With q and a strategy that offers distribution() (ABI 3.1): rejection
//    sampling: token x at row i is kept with probability min(1, p(x)/q(x));
//    at the first rejection a token is drawn from max(0, p - q) normalised;
//    after k kept, a bonus token is drawn from p at row k.
//  * Otherwise: strategy.verify(), which treats the proposal as certain.
//    Exact as well (a proposal drawn from q and verified as certain still
//    yields the target's distribution); it only keeps fewer tokens when q
//    was spread.
// A strategy built for ABI minor 0 has no distribution(): it is not called.
Status verify_draft(DecodingStrategy& strategy, DecodingContext& ctx, std::span<const float> draft_probs,
                    std::vector<int32_t>& out);

// The draws both sides of speculative sampling make (the draft drawing its
// proposal from q, the verification accepting and resampling).
// A uniform double in [0, 1) from the top 53 bits of one generator output.
double uniform01(std::mt19937_64& rng);
// An index drawn with probability w[i] / total (w non-negative, total > 0 their sum).
int32_t draw_index(std::span<const double> w, double total, std::mt19937_64& rng);

}  // namespace tessera

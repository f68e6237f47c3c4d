#include "engine/draft_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/decoding_context.hpp"
#include "engine/draft_verification.hpp"
#include "engine/vocabulary_subset_linear.hpp"
#include "tessera/argmax.hpp"
#include "tessera/fast_exp.hpp"

namespace tessera {

DraftModel::DraftModel(std::unique_ptr<Session> session, double min_probability)
    : session_(std::move(session)), min_probability_(min_probability),
      logits_(static_cast<size_t>(session_->vocab_size())) {}

DraftModel::~DraftModel() {
  for (auto& [request, d] : sequences_) session_->memory().release(d.seq);
}

Status DraftModel::check_vocabularies(const tok::Tokenizer& target, const tok::Tokenizer& draft) {
  // Identical or refused: a token id the two read differently would make the
  // draft propose text it did not mean, and a near-match (llama.cpp accepts
  // vocabularies differing by a few ids) hides which ids are safe.
  if (target.vocab_size() != draft.vocab_size())
    return InvalidArgument(fmt::format(
        "the draft model's vocabulary has {} tokens and the target's {}: speculative decoding needs the same "
        "vocabulary (a draft from the target's own family)",
        draft.vocab_size(), target.vocab_size()));
  for (int32_t id = 0; id < target.vocab_size(); ++id) {
    if (target.token_text(id) != draft.token_text(id))
      return InvalidArgument(fmt::format(
          "the draft and target vocabularies differ at id {}: '{}' in the target, '{}' in the draft; speculative "
          "decoding needs the same vocabulary",
          id, target.token_text(id), draft.token_text(id)));
  }
  if (target.bos_id() != draft.bos_id() || target.eos_id() != draft.eos_id())
    return InvalidArgument(fmt::format(
        "the draft and target special tokens differ: bos {} and eos {} in the target, bos {} and eos {} in the draft",
        target.bos_id(), target.eos_id(), draft.bos_id(), draft.eos_id()));
  return Status::Ok();
}

double DraftModel::top_probability(std::span<const float> logits, int32_t top) {
  const float max = logits[static_cast<size_t>(top)];
  float sum = 0.0f;
  for (const float l : logits) sum += exp_nonpositive(l - max);
  return 1.0 / static_cast<double>(sum);
}

Result<int32_t> DraftModel::sample(const DraftSampling& sampling, std::span<const int32_t> history,
                                   std::vector<float>& probs, bool& spread) {
  if (!provides(*sampling.strategy, 1)) return -1;
  // The request's context as it would stand with the drafts so far
  // committed: penalties see them, as the target's rows will.
  RequestDecodingContext ctx(history, *sampling.settings, sampling.prompt_length);
  scratch_ = logits_;
  ctx.set_logits(scratch_);
  q_.resize(logits_.size());
  const Status s = sampling.strategy->distribution(ctx, q_);
  if (s.code() == StatusCode::unsupported) return -1;
  TESSERA_RETURN_IF_ERROR(s);
  // Only the ids both the draft and the target have can be drafted.
  const size_t width = std::min({q_.size(), sampling.row_width,
                                 static_cast<size_t>(session_->tokenizer().vocab_size())});
  weights_.assign(width, 0.0);
  double total = 0.0;
  size_t nonzero = 0;
  for (size_t v = 0; v < width; ++v) {
    weights_[v] = std::max(0.0f, q_[v]);
    total += weights_[v];
    nonzero += weights_[v] > 0.0;
  }
  if (!(total > 0.0)) return -2;  // its mass lies past the ids both vocabularies have
  const int32_t x = draw_index(weights_, total, *sampling.rng);
  // q as the verification reads it: normalised over the ids that can be drafted.
  const size_t at = probs.size();
  probs.resize(at + sampling.row_width, 0.0f);
  for (size_t v = 0; v < width; ++v) probs[at + v] = static_cast<float>(weights_[v] / total);
  spread = spread || nonzero > 1;
  return x;
}

Status DraftModel::draft(size_t request, std::span<const int32_t> tokens, int32_t max_tokens,
                         std::vector<int32_t>& out, std::vector<double>& forward_ms, const DraftSampling* sampling,
                         std::vector<float>* probs) {
  if (probs != nullptr) probs->clear();
  if (probs == nullptr) sampling = nullptr;
  if (max_tokens <= 0 || tokens.empty()) return Status::Ok();
  // The draft's context may be shorter than the target's: no drafts past it.
  const int64_t room = session_->context_length() - static_cast<int64_t>(tokens.size());
  max_tokens = static_cast<int32_t>(std::min<int64_t>(max_tokens, room));
  if (max_tokens <= 0) return Status::Ok();

  SequenceMemory& memory = session_->memory();
  auto found = sequences_.find(request);
  if (found == sequences_.end()) {
    auto seq = memory.create_sequence();
    if (!seq.ok()) {
      // The draft's memory is full (more requests than it has sequences):
      // this request goes undrafted until one ends.
      if (seq.status().code() == StatusCode::out_of_memory) return Status::Ok();
      return seq.status();
    }
    found = sequences_.emplace(request, DraftSequence{*seq, {}}).first;
  }
  DraftSequence& d = found->second;
  // A head of part of the vocabulary computes this request's own ids too.
  if (RequestVocabulary* own = session_->request_vocabulary()) TESSERA_RETURN_IF_ERROR(own->use(tokens));
  // Keep what the draft computed that still holds; at least one token is fed
  // again so that there are logits to draft from.
  const auto shared = static_cast<size_t>(
      std::mismatch(d.fed.begin(), d.fed.end(), tokens.begin(), tokens.end()).first - d.fed.begin());
  const size_t keep = std::min(shared, tokens.size() - 1);
  if (keep < d.fed.size()) {
    const Status cut = memory.truncate(d.seq, static_cast<int32_t>(keep));
    if (!cut.ok()) {
      // A memory that cannot cut back (a recurrent draft): start over.
      memory.release(d.seq);
      auto seq = memory.create_sequence();
      if (!seq.ok()) {
        sequences_.erase(found);
        return seq.status().code() == StatusCode::out_of_memory ? Status::Ok() : seq.status();
      }
      d.seq = *seq;
      d.fed.clear();
    } else {
      d.fed.resize(keep);
    }
  }

  auto feed = [&](std::span<const int32_t> more) -> Status {
    const auto start = Clock::now();
    const Status s = session_->extend(d.seq, more, static_cast<int32_t>(d.fed.size()), false, logits_.data());
    if (!s.ok()) {
      // Whatever the memory holds now is unknown: drop the sequence.
      memory.release(d.seq);
      sequences_.erase(request);
      return s;
    }
    // What a drafted token costs: forwards of one or two tokens (a draft, or
    // the catch-up of a step's kept token and the target's own). Feeding a
    // prompt, or what was generated while drafting rested, is once per
    // request or probe, not per drafted token.
    if (more.size() <= 2) forward_ms.push_back(ms_between(start, Clock::now()));
    d.fed.insert(d.fed.end(), more.begin(), more.end());
    return Status::Ok();
  };
  TESSERA_RETURN_IF_ERROR(feed(tokens.subspan(d.fed.size())));
  std::vector<int32_t> history;  // the request's tokens and the drafts so far (for a sampling strategy)
  if (sampling != nullptr) history.assign(tokens.begin(), tokens.end());
  bool spread = false;  // some q held more than one token
  for (int32_t i = 0; i < max_tokens; ++i) {
    auto top = argmax_token(logits_);
    if (!top.ok()) return top.status();
    // Rows past the tokenizer's ids (padding some files have) are no token.
    if (*top >= session_->tokenizer().vocab_size()) break;
    if (min_probability_ > 0 && top_probability(logits_, *top) < min_probability_) break;
    int32_t next = *top;
    if (sampling != nullptr) {
      auto drawn = sample(*sampling, history, *probs, spread);
      if (!drawn.ok()) return drawn.status();
      if (*drawn == -2) break;
      if (*drawn < 0) {  // no distribution to draw from: greedy drafts, certain
        sampling = nullptr;
        probs->clear();
        spread = false;
      } else {
        next = *drawn;
        history.push_back(next);
      }
    }
    out.push_back(next);
    if (i + 1 == max_tokens) break;  // the last draft is never fed: nothing drafts from it
    TESSERA_RETURN_IF_ERROR(feed(std::span<const int32_t>(&out.back(), 1)));
  }
  // Point masses everywhere (a greedy strategy): the drafts are certain.
  if (probs != nullptr && !spread) probs->clear();
  return Status::Ok();
}

void DraftModel::forget(size_t request) {
  auto it = sequences_.find(request);
  if (it == sequences_.end()) return;
  session_->memory().release(it->second.seq);
  sequences_.erase(it);
}

}  // namespace tessera

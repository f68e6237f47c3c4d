#include "engine/step_executor.hpp"

namespace tessera {

Status StepExecutor::execute(const StepPlan& plan) {
  tokens_.clear();
  seqs_.clear();
  first_row_.clear();
  size_t rows = 0;
  for (const ScheduledRequest& item : plan.items) {
    const Request& r = *item.request;
    const auto offset = static_cast<int32_t>(tokens_.size());
    // The tokens not yet in memory: the rest of the prompt or the last
    // generated token, then any draft tokens being verified.
    const auto source = r.ctx->tokens_and_proposed().subspan(static_cast<size_t>(r.n_computed),
                                                             static_cast<size_t>(item.n_tokens));
    tokens_.insert(tokens_.end(), source.begin(), source.end());
    seqs_.push_back({r.seq, offset, item.n_tokens, r.n_computed, item.n_logits});
    first_row_.push_back(rows);
    rows += static_cast<size_t>(item.n_logits);
  }
  rows_ = rows;
  const auto vocab = static_cast<size_t>(model_.vocab_size());
  if (logits_.size() < rows * vocab) logits_.resize(rows * vocab);
  if (plan.items.empty()) return Status::Ok();
  if (threads_ != nullptr) threads_->before_step();
  const Status status = model_.forward(Batch{tokens_, seqs_}, memory_, logits_.data());
  if (threads_ != nullptr) threads_->after_step();
  return status;
}

std::span<float> StepExecutor::logits(size_t item) {
  const auto vocab = static_cast<size_t>(model_.vocab_size());
  const size_t end = item + 1 < first_row_.size() ? first_row_[item + 1] : rows_;
  return std::span<float>(logits_).subspan(first_row_[item] * vocab, (end - first_row_[item]) * vocab);
}

}  // namespace tessera

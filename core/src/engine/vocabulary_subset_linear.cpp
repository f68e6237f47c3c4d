#include "engine/vocabulary_subset_linear.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>

namespace tessera {

Result<TensorRef> gather_rows(const TensorRef& tensor, const std::vector<int32_t>& ids, AlignedBytes& storage) {
  if (tensor.ndim != 2 || tensor.rows() <= 0 || tensor.nbytes % static_cast<uint64_t>(tensor.rows()) != 0)
    return Unsupported(fmt::format("tensor '{}' ({} bytes, {} rows) is not stored as whole rows of one size",
                                   tensor.name, tensor.nbytes, tensor.rows()));
  const uint64_t row_bytes = tensor.nbytes / static_cast<uint64_t>(tensor.rows());
  storage.resize(ids.size() * row_bytes);
  const auto* from = static_cast<const uint8_t*>(tensor.data);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= tensor.rows())
      return InvalidArgument(fmt::format("row {} of tensor '{}', which has {}", ids[i], tensor.name, tensor.rows()));
    std::memcpy(storage.data() + i * row_bytes, from + static_cast<uint64_t>(ids[i]) * row_bytes, row_bytes);
  }
  TensorRef kept = tensor;
  kept.shape[0] = static_cast<int64_t>(ids.size());
  kept.data = storage.data();
  kept.nbytes = storage.size();
  return kept;
}

RequestVocabulary::RequestVocabulary(std::unique_ptr<RowDecoder> rows, int64_t in_features, std::vector<bool> kept)
    : rows_(std::move(rows)), in_features_(in_features), kept_(std::move(kept)) {}

Status RequestVocabulary::use(std::span<const int32_t> tokens) {
  used_.clear();
  // The distinct ids outside the kept ones, the most recent first, up to kMaxRequestIds.
  std::vector<int32_t> wanted;
  std::unordered_set<int32_t> seen;
  for (auto it = tokens.rbegin(); it != tokens.rend() && wanted.size() < kMaxRequestIds; ++it) {
    const int32_t id = *it;
    if (id >= 0 && static_cast<size_t>(id) < kept_.size() && !kept_[static_cast<size_t>(id)] && seen.insert(id).second)
      wanted.push_back(id);
  }
  const auto fresh = std::count_if(wanted.begin(), wanted.end(), [&](int32_t id) { return !decoded_.contains(id); });
  if (decoded_.size() + static_cast<size_t>(fresh) > kMaxCachedRows) decoded_.clear();
  for (int32_t id : wanted) {
    auto [row, added] = decoded_.try_emplace(id);
    if (added) {
      row->second.resize(static_cast<size_t>(in_features_));
      const Status decoded = rows_->decode(id, 1, row->second.data());
      if (!decoded.ok()) {
        decoded_.erase(row);
        return decoded;
      }
    }
    used_.emplace_back(id, row->second.data());
  }
  return Status::Ok();
}

void RequestVocabulary::write_logits(const float* x, float* y) const {
  for (const auto& [id, row] : used_) {
    float sum = 0.0f;
    for (int64_t i = 0; i < in_features_; ++i) sum += row[i] * x[i];
    y[id] = sum;
  }
}

VocabularySubsetLinear::VocabularySubsetLinear(std::unique_ptr<Linear> kept, std::vector<int32_t> ids, int64_t vocab,
                                               AlignedBytes storage, std::shared_ptr<const RequestVocabulary> request)
    : storage_(std::move(storage)),
      kept_(std::move(kept)),
      ids_(std::move(ids)),
      vocab_(vocab),
      request_(std::move(request)) {}

Status VocabularySubsetLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  return guard([&]() -> Status {
    const auto k = static_cast<int64_t>(ids_.size());
    kept_logits_.resize(static_cast<size_t>(n_rows * k));
    TESSERA_RETURN_IF_ERROR(kept_->forward(x, kept_logits_.data(), n_rows));
    for (int64_t r = 0; r < n_rows; ++r) {
      float* row = y + r * vocab_;
      std::fill(row, row + vocab_, -std::numeric_limits<float>::infinity());
      const float* kept_row = kept_logits_.data() + r * k;
      for (int64_t j = 0; j < k; ++j) row[ids_[static_cast<size_t>(j)]] = kept_row[j];
      if (request_) request_->write_logits(x + r * in_features(), row);
    }
    return Status::Ok();
  });
}

}  // namespace tessera

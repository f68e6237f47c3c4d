// vocabulary_subset_linear.hpp: an output head that computes the logits of
// some vocabulary ids only, and writes -infinity for the rest.
//
// A speculative draft's head reads the whole [vocab, n_embd] matrix for each
// drafted token: for Qwen2.5-Coder-0.5B in Q4_0, 77 of a token's 278 MB. The
// tokens a draft proposes come almost all from the few tens of thousands a
// text uses most (FR-Spec, Zhao et al. 2025), so its head may keep those rows
// only. The verification decides every token from the target's own logits,
// so the output stays exact; a token outside the kept ids (and outside the
// request's own text, RequestVocabulary) is never drafted, and the target
// emits it itself.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <boost/align/aligned_allocator.hpp>

#include "tessera/architecture.hpp"
#include "tessera/linear.hpp"
#include "tessera/weights.hpp"

namespace tessera {

// Bytes on a cache line's boundary, as a mapped file's tensors are (a plugin
// may read a row in place with aligned loads).
using AlignedBytes = std::vector<uint8_t, boost::alignment::aligned_allocator<uint8_t, 64>>;

// The rows `ids` of a 2-D tensor in one format whose rows lie one after
// another, row_bytes each (every GGUF block format and plain float): a
// TensorRef over `storage`, which must outlive every Linear made from it.
// Error: a tensor whose bytes are not rows × a whole row size, an id out of range.
Result<TensorRef> gather_rows(const TensorRef& tensor, const std::vector<int32_t>& ids, AlignedBytes& storage);

// A request's own tokens beyond the kept ids: the words of its prompt and of
// its answer so far (a function's name, a variable) recur in what follows,
// and a head that cannot propose them cuts short every draft that reaches
// one. Shared by the head, which adds their logits from rows decoded to f32,
// and the draft, which names the request's tokens before drafting for it.
class RequestVocabulary {
 public:
  // `rows` decodes the whole head's rows [vocab, in_features]; kept[vocab]:
  // the ids the head computes anyway.
  RequestVocabulary(std::unique_ptr<RowDecoder> rows, int64_t in_features, std::vector<bool> kept);

  // From now on the head also computes the ids of `tokens` it does not keep:
  // the kMaxRequestIds most recent distinct ones (their logits are plain f32
  // dot products, 3.5 KB of rows read each at 896 columns: a request in a
  // language the kept ids miss could otherwise read more than the head saves).
  Status use(std::span<const int32_t> tokens);
  static constexpr size_t kMaxRequestIds = 512;
  // Decoded rows stay for later requests up to this many, then are decoded
  // again as needed.
  static constexpr size_t kMaxCachedRows = 4096;
  // y[id] = x · row(id) for each id use() added; x: [in_features], y: [vocab].
  void write_logits(const float* x, float* y) const;

 private:
  std::unique_ptr<RowDecoder> rows_;
  int64_t in_features_;
  std::vector<bool> kept_;                              // [vocab]
  std::map<int32_t, std::vector<float>> decoded_;       // id -> [in_features]
  std::vector<std::pair<int32_t, const float*>> used_;  // the current request's ids and rows
};

class VocabularySubsetLinear final : public Linear {
 public:
  // `kept`: a Linear over the rows `ids` (ascending, unique, each < vocab) of
  // the full head, made from `storage` (held here, so it outlives `kept`).
  // With `request`, the ids it names are computed too.
  VocabularySubsetLinear(std::unique_ptr<Linear> kept, std::vector<int32_t> ids, int64_t vocab, AlignedBytes storage,
                         std::shared_ptr<const RequestVocabulary> request = nullptr);

  int64_t in_features() const noexcept override { return kept_->in_features(); }
  int64_t out_features() const noexcept override { return vocab_; }
  uint64_t weight_bytes() const noexcept override { return kept_->weight_bytes(); }
  // y[n_rows, vocab]: the kept ids' logits at their ids, -infinity elsewhere.
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;

 private:
  AlignedBytes storage_;  // the kept rows, in the head's format; declared first so it goes last
  std::unique_ptr<Linear> kept_;
  std::vector<int32_t> ids_;  // [kept rows]: the vocabulary id of each
  int64_t vocab_;
  std::vector<float> kept_logits_;  // [n_rows, kept rows]
  std::shared_ptr<const RequestVocabulary> request_;
};

}  // namespace tessera

// tessera/blocks/embedding_table.hpp: token embedding lookup that needs nothing from the
// ModelBuilder after build().
//
// The core's builder is a temporary of model loading (core/src/engine/session.cpp
// makes it on the stack), so forward() cannot call builder.dequantize_rows.
// Plain storage (formats "f32", "f16", "bf16") is read in place from the mapped
// weights, converted row by row. Any other format (the GGUF block
// quantizations) stays in place too and is decoded row by row through a
// RowDecoder the builder makes (its quant plugin, kept alive by the decoder):
// SmolLM2-135M's Q8_0 table is 30 MB mapped instead of 113 MB of f32. Only a
// builder without row decoders (a test fake) gets the f32 copy made at build
// time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/architecture.hpp"

namespace tessera::blocks {

class EmbeddingTable {
 public:
  // `tensor` must be [rows, cols] (checked by the caller) and outlive the table.
  static Result<EmbeddingTable> create(ModelBuilder& builder, const TensorRef& tensor);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // out[cols] = row `row` as f32; row in [0, rows()) (the batch plan checks
  // token ids). Fails only if the quant plugin's decoder does.
  Status lookup(int64_t row, float* out) const;
  // out[tokens.size(), cols] = the tokens' rows; a token outside [0, vocab)
  // (vocab <= rows(): padding rows are not tokens) is refused, naming `who`.
  Status lookup_tokens(std::span<const TokenId> tokens, int64_t vocab, std::string_view who, float* out) const;
  // Bytes held beyond the mapped weights (0 for plain formats).
  uint64_t owned_bytes() const { return owned_.size() * sizeof(float); }

 private:
  enum class Source { f32, f16, bf16, decoded, owned };
  Source source_ = Source::owned;
  const void* data_ = nullptr;  // mapped rows for f32/f16/bf16
  std::unique_ptr<RowDecoder> decoder_;  // quantized formats
  std::vector<float> owned_;    // [rows, cols] for dequantized formats
  int64_t rows_ = 0;
  int64_t cols_ = 0;
};

}  // namespace tessera::blocks

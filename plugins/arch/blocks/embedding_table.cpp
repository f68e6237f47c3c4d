#include "tessera/blocks/embedding_table.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "tessera/half.hpp"

namespace tessera::blocks {

Result<EmbeddingTable> EmbeddingTable::create(ModelBuilder& builder, const TensorRef& tensor) {
  EmbeddingTable table;
  table.rows_ = tensor.rows();
  table.cols_ = tensor.cols();
  const uint64_t n = static_cast<uint64_t>(table.rows_) * static_cast<uint64_t>(table.cols_);

  struct Plain {
    const char* format;
    DType dtype;
    Source source;
    uint64_t elem_bytes;
  };
  static constexpr Plain kPlain[] = {{"f32", DType::f32, Source::f32, 4},
                                     {"f16", DType::f16, Source::f16, 2},
                                     {"bf16", DType::bf16, Source::bf16, 2}};
  for (const Plain& p : kPlain) {
    if (tensor.format != p.format || tensor.dtype != p.dtype) continue;
    if (tensor.data == nullptr || tensor.nbytes < n * p.elem_bytes)
      return CorruptData(builder.weights().source() + ": tensor " + tensor.name + " holds " +
                         std::to_string(tensor.nbytes) + " bytes, fewer than its shape needs (" +
                         std::to_string(n * p.elem_bytes) + ")");
    table.source_ = p.source;
    table.data_ = tensor.data;
    return table;
  }

  // A quantized format: only its quant plugin can decode it, through a
  // decoder that outlives the builder where the core makes one.
  auto decoder = builder.row_decoder(tensor);
  if (decoder.ok()) {
    table.source_ = Source::decoded;
    table.decoder_ = std::move(decoder).value();
    return table;
  }
  if (decoder.status().code() != StatusCode::unsupported) return decoder.status();
  table.source_ = Source::owned;
  table.owned_.resize(n);
  constexpr int64_t kChunkRows = 1024;
  for (int64_t first = 0; first < table.rows_; first += kChunkRows) {
    const int64_t count = std::min(kChunkRows, table.rows_ - first);
    TESSERA_RETURN_IF_ERROR(
        builder.dequantize_rows(tensor, first, count, table.owned_.data() + first * table.cols_));
  }
  return table;
}

Status EmbeddingTable::lookup_tokens(std::span<const TokenId> tokens, int64_t vocab, std::string_view who,
                                     float* out) const {
  const int64_t ids = std::min(vocab, rows_);  // a table shorter than the vocabulary bounds the ids too
  for (size_t r = 0; r < tokens.size(); ++r) {
    if (tokens[r] < 0 || tokens[r] >= ids)
      return InvalidArgument(std::string(who) + ": token " + std::to_string(tokens[r]) + " is outside [0, " +
                             std::to_string(ids) + ")");
    TESSERA_RETURN_IF_ERROR(lookup(tokens[r], out + static_cast<int64_t>(r) * cols_));
  }
  return Status::Ok();
}

Status EmbeddingTable::lookup(int64_t row, float* out) const {
  const int64_t base = row * cols_;
  switch (source_) {
    case Source::f32:
      std::memcpy(out, static_cast<const float*>(data_) + base, static_cast<size_t>(cols_) * sizeof(float));
      return Status::Ok();
    case Source::f16: {
      const auto* h = static_cast<const uint16_t*>(data_) + base;
      for (int64_t i = 0; i < cols_; ++i) out[i] = f16_to_f32(h[i]);
      return Status::Ok();
    }
    case Source::bf16: {
      const auto* h = static_cast<const uint16_t*>(data_) + base;
      for (int64_t i = 0; i < cols_; ++i) out[i] = bf16_to_f32(h[i]);
      return Status::Ok();
    }
    case Source::decoded:
      return decoder_->decode(row, 1, out);
    case Source::owned:
      std::memcpy(out, owned_.data() + base, static_cast<size_t>(cols_) * sizeof(float));
      return Status::Ok();
  }
  return Internal("embedding table: unknown source");
}

}  // namespace tessera::blocks

#include "engine/model_builder.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/permuted_input_linear.hpp"
#include "engine/vocabulary_subset_linear.hpp"

namespace tessera {

CoreModelBuilder::CoreModelBuilder(const ModelFile& weights, const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                                   AttentionFactory make_attention, LinearWrapper wrap_linear)
    : weights_(weights), make_attention_(std::move(make_attention)), wrap_linear_(std::move(wrap_linear)) {
  for (const auto& q : quantizers) {
    for (const auto& format : q->formats()) by_format_.try_emplace(std::string(format), q);
  }
}

Result<AttentionKernel*> CoreModelBuilder::attention() noexcept {
  return guard([&]() -> Result<AttentionKernel*> {
    if (!attention_) {
      if (!make_attention_) return Unsupported("this builder has no attention kernel to give");
      auto made = make_attention_();
      if (!made.ok()) return made.status();
      attention_ = std::move(made).value();
    }
    return attention_.get();
  });
}

void CoreModelBuilder::warn(std::string_view message) noexcept {
  try {
    spdlog::warn("{}", message);
  } catch (...) {
    // Logging is best effort; a warning lost to a full disk is no reason to fail.
  }
}

std::vector<std::string> CoreModelBuilder::formats() const {
  std::vector<std::string> out;
  for (const auto& [format, q] : by_format_) out.push_back(format);
  return out;
}

Result<std::shared_ptr<Quantizer>> CoreModelBuilder::quantizer_for(const TensorRef& tensor) const {
  auto it = by_format_.find(tensor.format);
  if (it == by_format_.end())
    return Unsupported(
        fmt::format("{}: tensor '{}' is stored as '{}', which no quant plugin executes "
                    "(formats available: {})",
                    weights_.source(), tensor.name, tensor.format, fmt::join(formats(), ", ")));
  return it->second;
}

namespace {

// Whether part `index` of `format` may be missing (ABI 3.8; always required before).
bool part_optional(const Quantizer& quantizer, std::string_view format, size_t index) {
  return provides(quantizer, 8) && quantizer.part_optional(format, index);
}

}  // namespace

Result<std::vector<const TensorRef*>> CoreModelBuilder::parts_of(const Quantizer& quantizer,
                                                                 const TensorRef& tensor) const {
  std::vector<const TensorRef*> parts;
  if (!provides(quantizer, 4)) return parts;
  const auto suffixes = quantizer.part_suffixes(tensor.format);
  for (size_t i = 0; i < suffixes.size(); ++i) {
    const std::string name = tensor.name + std::string(suffixes[i]);
    const TensorRef* part = weights_.find(name);
    if (part == nullptr && part_optional(quantizer, tensor.format, i)) {
      parts.push_back(nullptr);
      continue;
    }
    if (part == nullptr)
      return CorruptData(fmt::format("{}: tensor '{}' is stored as '{}', which keeps '{}' beside it; the file has no "
                                     "such tensor",
                                     weights_.source(), tensor.name, tensor.format, name));
    parts.push_back(part);
  }
  return parts;
}

Result<std::vector<const TensorRef*>> CoreModelBuilder::parts(const TensorRef& tensor) const noexcept {
  return guard([&]() -> Result<std::vector<const TensorRef*>> {
    auto q = quantizer_for(tensor);
    if (!q.ok()) return q.status();
    return parts_of(**q, tensor);
  });
}

namespace {

// Rows of `tensor` as f32 with columns in input order: `order` (ModelFile::
// input_order, nullptr for most tensors) says which input channel each
// stored column holds.
Status dequantize_with_parts(Quantizer& quantizer, const TensorRef& tensor, std::span<const TensorRef* const> parts,
                             const std::vector<int32_t>* order, int64_t first_row, int64_t n_rows,
                             float* out) noexcept {
  const Status decoded = parts.empty() ? quantizer.dequantize_rows(tensor, first_row, n_rows, out)
                                       : quantizer.dequantize_rows_from_parts(tensor, parts, first_row, n_rows, out);
  if (!decoded.ok() || order == nullptr) return decoded;
  return guard([&]() -> Status {
    const int64_t cols = tensor.cols();
    std::vector<float> stored(static_cast<size_t>(cols));
    for (int64_t r = 0; r < n_rows; ++r) {
      float* row = out + r * cols;
      std::copy(row, row + cols, stored.begin());
      for (int64_t j = 0; j < cols; ++j) row[(*order)[j]] = stored[j];
    }
    return Status::Ok();
  });
}

// Holding the Quantizer (and through it its library) keeps the decoder valid
// after the builder is gone.
class QuantizerRowDecoder final : public RowDecoder {
 public:
  QuantizerRowDecoder(std::shared_ptr<Quantizer> quantizer, const TensorRef& tensor,
                      std::vector<const TensorRef*> parts, const std::vector<int32_t>* order)
      : quantizer_(std::move(quantizer)), tensor_(tensor), parts_(std::move(parts)), order_(order) {}
  Status decode(int64_t first_row, int64_t n_rows, float* out) const noexcept override {
    if (first_row < 0 || n_rows < 0 || first_row + n_rows > tensor_.rows())
      return InvalidArgument("rows out of range of tensor " + tensor_.name);  // no fmt: keeps decode cheap
    return dequantize_with_parts(*quantizer_, tensor_, parts_, order_, first_row, n_rows, out);
  }

 private:
  std::shared_ptr<Quantizer> quantizer_;
  const TensorRef& tensor_;
  std::vector<const TensorRef*> parts_;
  const std::vector<int32_t>* order_;  // lives in the ModelFile, as tensor_ does
};

}  // namespace

const std::vector<int32_t>* CoreModelBuilder::input_order_of(const TensorRef& tensor) const noexcept {
  // Only the file's own data (a copy of its TensorRef included): a quantized
  // copy under the same name keeps its columns in input order.
  const TensorRef* own = weights_.find(tensor.name);
  return own != nullptr && own->data == tensor.data ? weights_.input_order(tensor.name) : nullptr;
}

Result<std::unique_ptr<RowDecoder>> CoreModelBuilder::row_decoder(const TensorRef& tensor) noexcept {
  return guard([&]() -> Result<std::unique_ptr<RowDecoder>> {
    if (tensor.ndim != 2)
      return InvalidArgument(fmt::format("{}: tensor '{}' must be 2-D to be decoded by rows, it has {} dimensions",
                                         weights_.source(), tensor.name, tensor.ndim));
    auto q = quantizer_for(tensor);
    if (!q.ok()) return q.status();
    auto parts = parts_of(**q, tensor);
    if (!parts.ok()) return parts.status();
    return std::unique_ptr<RowDecoder>(
        std::make_unique<QuantizerRowDecoder>(std::move(q).value(), tensor, std::move(parts).value(),
                                              input_order_of(tensor)));
  });
}

Result<std::unique_ptr<Linear>> CoreModelBuilder::linear(std::string_view name, std::string_view bias_name) noexcept {
  return guard([&]() -> Result<std::unique_ptr<Linear>> {
    const TensorRef* weight = weights_.find(name);
    if (weight == nullptr) return NotFound(fmt::format("{}: the model has no tensor '{}'", weights_.source(), name));
    if (weight->ndim != 2)
      return CorruptData(fmt::format("{}: tensor '{}' must be 2-D for a linear layer, it has {} dimensions",
                                     weights_.source(), name, weight->ndim));
    const TensorRef* bias = bias_name.empty() ? nullptr : weights_.find(bias_name);
    if (bias != nullptr && (bias->numel() != weight->shape[0]))
      return CorruptData(fmt::format("{}: bias '{}' has {} elements, its weight has {} rows", weights_.source(),
                                     bias_name, bias->numel(), weight->shape[0]));
    auto made = make_linear(*weight, bias);
    if (!made.ok()) return made;
    if (const std::vector<int32_t>* order = weights_.input_order(name))
      made = std::unique_ptr<Linear>(std::make_unique<PermutedInputLinear>(std::move(made).value(), *order));
    weights_.release_resident(*weight);
    if (auto q = quantizer_for(*weight); q.ok()) {
      if (auto parts = parts_of(**q, *weight); parts.ok())
        for (const TensorRef* part : *parts)
          if (part != nullptr) weights_.release_resident(*part);
    }
    if (!wrap_linear_) return made;
    return wrap_linear_(*weight, bias, std::move(made).value());
  });
}

Result<std::unique_ptr<Linear>> CoreModelBuilder::output_linear(std::string_view name,
                                                                std::string_view bias_name) noexcept {
  return guard([&]() -> Result<std::unique_ptr<Linear>> {
    if (output_ids_.empty()) return linear(name, bias_name);
    const TensorRef* weight = weights_.find(name);
    if (weight == nullptr) return NotFound(fmt::format("{}: the model has no tensor '{}'", weights_.source(), name));
    if (weight->ndim != 2)
      return CorruptData(fmt::format("{}: tensor '{}' must be 2-D for an output head, it has {} dimensions",
                                     weights_.source(), name, weight->ndim));
    // A head stored in parts, with its input columns reordered or with a
    // bias keeps every row: gathering those is not worth their rarity. So
    // does one `tessera quantize` observes (a draft is never calibrated).
    auto q = quantizer_for(*weight);
    if (!q.ok()) return q.status();
    auto parts = parts_of(**q, *weight);
    if (!parts.ok()) return parts.status();
    const bool has_bias = !bias_name.empty() && weights_.find(bias_name) != nullptr;
    if (!parts->empty() || weights_.input_order(name) != nullptr || has_bias || wrap_linear_) {
      warn(
          fmt::format("{}: the output head '{}' keeps its whole vocabulary (it is stored in parts, reordered, "
                      "with a bias or observed for calibration)",
                      weights_.source(), name));
      return linear(name, bias_name);
    }
    if (output_ids_.back() >= weight->rows())
      return InvalidArgument(fmt::format("{}: output id {} is past the {} rows of '{}'", weights_.source(),
                                         output_ids_.back(), weight->rows(), name));
    AlignedBytes storage;
    auto kept = gather_rows(*weight, output_ids_, storage);
    if (!kept.ok()) return kept.status();
    auto made = (*q)->make_linear(*kept, nullptr);
    if (!made.ok()) return made.status();
    weights_.release_resident(*weight);  // gathered: the decoder below faults back the rows it reads
    auto decoder = row_decoder(*weight);
    if (!decoder.ok()) return decoder.status();
    std::vector<bool> is_kept(static_cast<size_t>(weight->rows()), false);
    for (int32_t id : output_ids_) is_kept[static_cast<size_t>(id)] = true;
    request_vocabulary_ =
        std::make_shared<RequestVocabulary>(std::move(decoder).value(), weight->cols(), std::move(is_kept));
    return std::unique_ptr<Linear>(std::make_unique<VocabularySubsetLinear>(
        std::move(made).value(), output_ids_, weight->rows(), std::move(storage), request_vocabulary_));
  });
}

Result<std::unique_ptr<Linear>> CoreModelBuilder::make_linear(const TensorRef& weight, const TensorRef* bias) noexcept {
  return guard([&]() -> Result<std::unique_ptr<Linear>> {
    auto q = quantizer_for(weight);
    if (!q.ok()) return q.status();
    auto parts = parts_of(**q, weight);
    if (!parts.ok()) return parts.status();
    if (parts->empty()) return (*q)->make_linear(weight, bias);
    return (*q)->make_linear_from_parts(weight, *parts, bias);
  });
}

Result<std::unique_ptr<Linear>> CoreModelBuilder::make_linear(const TensorRef& weight,
                                                              std::span<const TensorRef* const> parts,
                                                              const TensorRef* bias) noexcept {
  return guard([&]() -> Result<std::unique_ptr<Linear>> {
    auto q = quantizer_for(weight);
    if (!q.ok()) return q.status();
    // The parts must be the ones the format names: put in its order, with
    // nullptr for an optional one not given.
    const auto suffixes =
        provides(**q, 4) ? (*q)->part_suffixes(weight.format) : std::span<const std::string_view>{};
    std::vector<const TensorRef*> ordered(suffixes.size(), nullptr);
    size_t matched = 0;
    for (size_t i = 0; i < suffixes.size(); ++i) {
      const std::string name = weight.name + std::string(suffixes[i]);
      const auto given = std::find_if(parts.begin(), parts.end(),
                                      [&](const TensorRef* p) { return p != nullptr && p->name == name; });
      if (given != parts.end()) {
        ordered[i] = *given;
        ++matched;
      } else if (!part_optional(**q, weight.format, i)) {
        return Internal(fmt::format("tensor '{}' ({}) came without its part '{}'", weight.name, weight.format, name));
      }
    }
    if (matched != static_cast<size_t>(std::count_if(parts.begin(), parts.end(), [](auto* p) { return p != nullptr; })))
      return Internal(fmt::format("tensor '{}' ({}) came with parts its format does not name", weight.name,
                                  weight.format));
    if (ordered.empty()) return (*q)->make_linear(weight, bias);
    return (*q)->make_linear_from_parts(weight, ordered, bias);
  });
}

Status CoreModelBuilder::dequantize(const TensorRef& tensor, float* out) noexcept {
  return guard([&]() -> Status {
    auto q = quantizer_for(tensor);
    if (!q.ok()) return q.status();
    auto parts = parts_of(**q, tensor);
    if (!parts.ok()) return parts.status();
    return dequantize_with_parts(**q, tensor, *parts, input_order_of(tensor), 0, tensor.rows(), out);
  });
}

Status CoreModelBuilder::dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows,
                                         float* out) noexcept {
  return guard([&]() -> Status {
    if (first_row < 0 || n_rows < 0 || first_row + n_rows > tensor.rows())
      return InvalidArgument(fmt::format("rows [{}, {}) of tensor '{}' are out of range (it has {} rows)", first_row,
                                         first_row + n_rows, tensor.name, tensor.rows()));
    auto q = quantizer_for(tensor);
    if (!q.ok()) return q.status();
    auto parts = parts_of(**q, tensor);
    if (!parts.ok()) return parts.status();
    return dequantize_with_parts(**q, tensor, *parts, input_order_of(tensor), first_row, n_rows, out);
  });
}

}  // namespace tessera

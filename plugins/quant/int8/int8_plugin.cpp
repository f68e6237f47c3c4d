// int8_plugin.cpp: the "int8" quant plugin: INT8 W8A8 weights (int8 values
// with one f32 scale per row, stored as two tensors; the rows plain or
// rotated by hadamard_rotation.hpp's R) executed with int8
// activations quantized per row at run time, and `tessera quantize
// --method int8`, which writes them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "hadamard_rotation.hpp"
#include "rowwise_quantizer.hpp"
#include "tessera/half.hpp"
#include "tessera/plugin.hpp"
#include "tessera/quantizer.hpp"
#include "w8a8_layout.hpp"
#include "w8a8_linear.hpp"

namespace tessera::int8 {
namespace {

constexpr std::string_view kFormats[] = {kFormat};
// One of the two is stored: plain rows' scales, or rotated rows' (both optional, ABI 3.8).
constexpr std::string_view kParts[] = {kScaleSuffix, kHadamardScaleSuffix};

// A 1-D (or [n, 1]) f32/f16/bf16 tensor of n values, as f32.
Result<std::vector<float>> read_vector(const TensorRef& t, int64_t n, const std::string& what) {
  if (t.numel() != n || t.ndim < 1 || t.ndim > 2 || (t.ndim == 2 && t.shape[1] != 1))
    return CorruptData("tensor '" + t.name + "': " + what + " needs " + std::to_string(n) + " values ([" +
                       std::to_string(n) + "] or [" + std::to_string(n) + ", 1])");
  const uint64_t width = t.dtype == DType::f32 ? 4 : 2;
  if ((t.dtype != DType::f32 && t.dtype != DType::f16 && t.dtype != DType::bf16) ||
      t.nbytes < static_cast<uint64_t>(n) * width || t.data == nullptr)
    return CorruptData("tensor '" + t.name + "': " + what + " must be f32, f16 or bf16 values");
  std::vector<float> v(static_cast<size_t>(n));
  const auto* bytes = static_cast<const uint8_t*>(t.data);
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype == DType::f32) {
      std::memcpy(&v[static_cast<size_t>(i)], bytes + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      v[static_cast<size_t>(i)] = t.dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
  return v;
}

Status check_weight(const TensorRef& w) {
  if (w.format != kFormat || w.dtype != DType::i8)
    return Unsupported("tensor '" + w.name + "': format '" + w.format + "' is not the int8 plugin's");
  if (w.ndim != 2 || w.shape[0] <= 0 || w.shape[1] <= 0)
    return InvalidArgument("tensor '" + w.name + "': an INT8 W8A8 weight must be 2-D [out, in]");
  if (w.shape[1] > kMaxInFeatures)
    return Unsupported("tensor '" + w.name + "': rows of " + std::to_string(w.shape[1]) +
                       " values; INT8 W8A8 takes up to " + std::to_string(kMaxInFeatures));
  if (w.data == nullptr || w.nbytes < static_cast<uint64_t>(w.shape[0]) * static_cast<uint64_t>(w.shape[1]))
    return CorruptData("tensor '" + w.name + "': fewer bytes than its shape");
  return Status::Ok();
}

// A weight's row scales, and whether its rows are stored rotated (W·R).
struct RowScales {
  std::vector<float> scales;
  bool rotated = false;
};

Result<RowScales> row_scales(const TensorRef& weight, std::span<const TensorRef* const> parts) {
  const TensorRef* plain = parts.size() > 0 ? parts[0] : nullptr;
  const TensorRef* rotated = parts.size() > 1 ? parts[1] : nullptr;
  if (plain == nullptr && rotated == nullptr)
    return CorruptData("tensor '" + weight.name + "': INT8 W8A8 needs its row scales '" + weight.name +
                       std::string(kScaleSuffix) + "' (or, for rotated rows, '" + weight.name +
                       std::string(kHadamardScaleSuffix) + "')");
  if (plain != nullptr && rotated != nullptr)
    return CorruptData("tensor '" + weight.name + "': both '" + plain->name + "' and '" + rotated->name +
                       "' are stored; its rows are either plain or rotated");
  const TensorRef& part = plain != nullptr ? *plain : *rotated;
  auto scales = read_vector(part, weight.shape[0], "the row scales of '" + weight.name + "'");
  if (!scales.ok()) return scales.status();
  for (float s : *scales) {
    if (!std::isfinite(s) || s < 0)
      return CorruptData("tensor '" + part.name + "': a row scale is negative, NaN or infinite");
  }
  return RowScales{std::move(scales).value(), rotated != nullptr};
}

const ParamSpec kParams[] = {
    param_string("activations", "\"q8\"", "q8|q8x2",
                 "q8: W8A8, each activation row as int8 with one scale (per token); q8x2: each row as two int8 "
                 "terms, the second quantizing what the first left out (the activations' rounding ~254x smaller, "
                 "twice the integer work; docs/quantization.md)"),
};

class Int8Quantizer final : public Quantizer {
 public:
  explicit Int8Quantizer(const ParamValues& params)
      : two_terms_(params.has("activations") && params.get_string("activations") == "q8x2") {}

  std::span<const std::string_view> formats() const noexcept override { return kFormats; }

  std::span<const std::string_view> part_suffixes(std::string_view format) const noexcept override {
    if (format == kFormat) return kParts;
    return {};
  }

  bool part_optional(std::string_view format, size_t /*index*/) const noexcept override { return format == kFormat; }

  Result<std::unique_ptr<Linear>> make_linear(const TensorRef& weight, const TensorRef* /*bias*/) noexcept override {
    return InvalidArgument("tensor '" + weight.name + "': INT8 W8A8 needs its row scales '" + weight.name +
                           std::string(kScaleSuffix) + "' beside it");
  }

  Result<std::unique_ptr<Linear>> make_linear_from_parts(const TensorRef& weight,
                                                         std::span<const TensorRef* const> parts,
                                                         const TensorRef* bias) noexcept override {
    return guard([&]() -> Result<std::unique_ptr<Linear>> {
      TESSERA_RETURN_IF_ERROR(check_weight(weight));
      auto scales = row_scales(weight, parts);
      if (!scales.ok()) return scales.status();
      std::vector<float> b;
      if (bias != nullptr) {
        auto read = read_vector(*bias, weight.shape[0], "the bias of '" + weight.name + "'");
        if (!read.ok()) return read.status();
        b = std::move(read).value();
      }
      // The kernels take weights in [-127, 127] (AVX2's sign trick cannot
      // negate -128); symmetric int8 quantizers never write -128.
      const auto* values = static_cast<const int8_t*>(weight.data);
      const int64_t count = weight.shape[0] * weight.shape[1];
      if (std::find(values, values + count, int8_t{-128}) != values + count)
        return CorruptData("tensor '" + weight.name + "' holds -128: INT8 W8A8 weights are symmetric, in [-127, 127]");
      PackedWeight packed =
          pack_weight(static_cast<const int8_t*>(weight.data), scales->scales.data(), weight.shape[0], weight.shape[1]);
      return std::unique_ptr<Linear>(
          std::make_unique<W8A8Linear>(std::move(packed), std::move(b), two_terms_, scales->rotated));
    });
  }

  Status dequantize_rows(const TensorRef& tensor, int64_t, int64_t, float*) noexcept override {
    return InvalidArgument("tensor '" + tensor.name + "': INT8 W8A8 needs its row scales '" + tensor.name +
                           std::string(kScaleSuffix) + "' beside it");
  }

  Status dequantize_rows_from_parts(const TensorRef& tensor, std::span<const TensorRef* const> parts, int64_t first_row,
                                    int64_t n_rows, float* out) noexcept override {
    return guard([&]() -> Status {
      TESSERA_RETURN_IF_ERROR(check_weight(tensor));
      auto scales = row_scales(tensor, parts);
      if (!scales.ok()) return scales.status();
      const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
      if (out == nullptr || first_row < 0 || n_rows < 0 || first_row > rows || n_rows > rows - first_row)
        return InvalidArgument("dequantize_rows('" + tensor.name + "'): rows out of range");
      const auto* q = static_cast<const int8_t*>(tensor.data);
      for (int64_t r = 0; r < n_rows; ++r) {
        const float s = scales->scales[static_cast<size_t>(first_row + r)];
        for (int64_t k = 0; k < cols; ++k) out[r * cols + k] = s * q[(first_row + r) * cols + k];
        if (scales->rotated) rotate_row(out + r * cols, cols);  // W = (W·R)·R: R is its own inverse
      }
      return Status::Ok();
    });
  }

  Result<std::unique_ptr<WeightQuantizer>> weight_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                            int64_t in_features) noexcept override {
    return guard([&] { return make_rowwise_quantizer(spec, out_features, in_features); });
  }

 private:
  bool two_terms_;
};

const PluginLibrary* int8_quant_entry() {
  static const PluginInfo plugins[] = {{
      PluginFamily::quant,
      "int8",
      "0.2.0",
      "INT8 W8A8: int8 weights with a scale per row, int8 activations with a scale per token, integer products "
      "(AVX2, AVX-512 VNNI, AMX-INT8 tiles)",
      kParams,
      std::size(kParams),
      &make_plugin<Int8Quantizer>,
  }};
  static const PluginLibrary library = plugin_library(plugins);
  return &library;
}

}  // namespace
}  // namespace tessera::int8

TESSERA_PLUGIN_ENTRY(tessera::int8::int8_quant_entry)

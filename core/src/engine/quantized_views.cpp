#include "engine/quantized_views.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "engine/model_builder.hpp"
#include "model/model_file.hpp"

namespace tessera {

Status check_part(const std::string& weight_name, const QuantizedPart& part) {
  const auto where = [&] { return fmt::format("{}: the quant plugin's part '{}'", weight_name, part.suffix); };
  if (part.suffix.empty()) return Internal(where() + " has no name suffix");
  if (is_block_format(part.dtype) || part.shape.empty() || part.shape.size() > static_cast<size_t>(kMaxDims))
    return Internal(fmt::format("{} is not a plain tensor of 1 to {} dimensions", where(), kMaxDims));
  uint64_t elements = 1;
  for (int64_t d : part.shape) {
    if (d <= 0) return Internal(where() + " has an empty dimension");
    elements *= static_cast<uint64_t>(d);
  }
  if (elements * dtype_info(part.dtype).block_bytes != part.data.size())
    return Internal(fmt::format("{} holds {} bytes, not the {} its shape needs", where(), part.data.size(),
                                elements * dtype_info(part.dtype).block_bytes));
  return Status::Ok();
}

TensorRef part_view(const std::string& weight_name, const QuantizedPart& part) {
  TensorRef view;
  view.name = weight_name + part.suffix;
  view.dtype = part.dtype;
  view.format = storage_format(part.dtype);
  view.ndim = static_cast<int32_t>(part.shape.size());
  for (int i = 0; i < view.ndim; ++i) view.shape[i] = part.shape[i];  // check_part: ndim <= kMaxDims
  view.data = part.data.data();
  view.nbytes = part.data.size();
  return view;
}

TensorRef quantized_view(const TensorRef& weight, const QuantizedWeight& quantized) {
  TensorRef view = weight;
  view.dtype = quantized.dtype;
  view.format = quantized.format;
  view.data = quantized.data.data();
  view.nbytes = quantized.data.size();
  return view;
}

Result<QuantizedLinear> quantize_to_linear(CoreModelBuilder& builder, const TensorRef& weight,
                                           WeightQuantizer& quantizer, const float* values, bool run_parts,
                                           const TensorRef* bias) {
  const auto failed = [&](const Status& status) {
    return Status(status.code(), fmt::format("{}: {}", weight.name, status.message()));
  };
  auto quantized = quantizer.quantize(values);
  if (!quantized.ok()) return failed(quantized.status());
  const uint64_t expected = dtype_row_bytes(quantized->dtype, static_cast<uint64_t>(weight.shape[1])) *
                            static_cast<uint64_t>(weight.shape[0]);
  if (quantized->data.size() != expected)
    return Internal(fmt::format("{}: the quant plugin wrote {} bytes for a {} weight of {}x{}, not {}", weight.name,
                                quantized->data.size(), dtype_name(quantized->dtype), weight.shape[0],
                                weight.shape[1], expected));
  QuantizedLinear made;
  made.weight = std::move(quantized).value();
  if (provides(quantizer, 4)) {
    auto parts = quantizer.parts();
    if (!parts.ok()) return failed(parts.status());
    made.parts = std::move(parts).value();
  }
  for (const QuantizedPart& part : made.parts) {
    TESSERA_RETURN_IF_ERROR(check_part(weight.name, part));
    made.part_views.push_back(part_view(weight.name, part));
  }
  std::vector<const TensorRef*> part_refs;
  if (run_parts)
    for (const TensorRef& view : made.part_views) part_refs.push_back(&view);
  auto linear = builder.make_linear(quantized_view(weight, made.weight), part_refs, bias);
  if (!linear.ok()) return failed(linear.status());
  made.linear = std::move(linear).value();
  return made;
}

}  // namespace tessera

// tessera/quantizer.hpp: quant plugins: storage formats, their kernels, and offline quantization.
//
// A quant plugin declares the storage formats it executes (TensorRef::format:
// "f32", "f16", "bf16", "ggml.q4_1", "gptq", ...). When a model is built, the
// core hands each weight to the plugin that declares its format, so a third
// party adds a format without touching the core.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "tessera/linear.hpp"
#include "tessera/abi.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

class Quantizer : public PluginObject {
 public:
  // Storage formats this plugin executes (static storage). Required.
  virtual std::span<const std::string_view> formats() const noexcept = 0;

  // A Linear for `weight` [out, in] with optional `bias` [out] (nullptr = none). Required.
  virtual Result<std::unique_ptr<Linear>> make_linear(const TensorRef& weight,
                                                      const TensorRef* bias) noexcept = 0;

  // Rows [first_row, first_row + n_rows) of a 2-D tensor (or all of a 1-D one,
  // first_row = 0, n_rows = 1) converted to f32 into out[n_rows, cols]. Required:
  // embeddings and norms are read this way.
  virtual Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows,
                                 float* out) noexcept = 0;
};

}  // namespace tessera

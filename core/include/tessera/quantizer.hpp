// tessera/quantizer.hpp: quant plugins: storage formats, their kernels, and offline quantization.
//
// A quant plugin declares the storage formats it executes (TensorRef::format:
// "f32", "f16", "bf16", "ggml.q4_1", "gptq", ...). When a model is built, the
// core hands each weight to the plugin that declares its format, so a third
// party adds a format without touching the core.
//
// A format may store a weight as several tensors (ABI 3.4): INT8 W8A8 keeps
// the int8 values under the weight's name and one f32 scale per row under
// name + "_scale" (or "_hadamard_scale" for rows stored rotated, ABI 3.8's
// optional parts); the plugin names the suffixes, the core finds the tensors.
//
// Offline quantization (ABI 3.2, `tessera quantize`): the core asks each quant
// plugin for a WeightQuantizer per weight matrix; a calibrated method sees the
// inputs the weight's Linear receives while the core runs the model over a
// calibration text, then writes the weight in one of the plugin's formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/linear.hpp"
#include "tessera/abi.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

#if TESSERA_ABI_MINOR >= 2
// What `tessera quantize` asks for, per weight (ABI 3.2).
struct QuantizeSpec {
  std::string method;       // "rtn", "gptq", ...
  std::string format;       // the storage format to write, e.g. "ggml.q4_0"
  int32_t bits = 4;
  int32_t group_size = 32;  // input columns sharing a scale; -1: the whole row
  bool symmetric = true;
  bool act_order = false;   // GPTQ: columns in order of decreasing input energy
  double damp = 0.1;        // GPTQ: this fraction of the mean Hessian diagonal is added to it
#if TESSERA_ABI_MINOR >= 3
  // AWQ (ABI 3.3): search each group's clipping range against its share of
  // the output error (the core leaves it off for the query and key weights,
  // whose errors the attention scores amplify).
  bool search_clipping = false;
#endif
#if TESSERA_ABI_MINOR >= 8
  // ABI 3.8: multiply each input row by the format's fixed orthogonal
  // rotation before quantizing, and the weight's rows by it too, so the
  // product is unchanged (INT8 W8A8's Hadamard rotation, which spreads
  // outlier channels before the per-token rounding). A format without one
  // refuses it.
  bool rotate_inputs = false;
#endif
};

// A quantized weight: its stored bytes and how far it is from the original.
struct QuantizedWeight {
  DType dtype = DType::f32;     // the element/block type of `data` (GGUF's tensor type)
  std::string format;           // the storage format, as a TensorRef::format
  std::vector<std::byte> data;  // [out_features, in_features] in that format
  // ||(W - Q) Xᵀ||² / ||W Xᵀ||² over the observed inputs X (with none
  // observed, ||W - Q||² / ||W||²): the share of the output's energy lost.
  double relative_error = 0;
  // The same for rounding each weight to nearest in the same format: what a
  // calibrated method gained (equal to relative_error for round-to-nearest).
  double rounding_relative_error = 0;
};

#if TESSERA_ABI_MINOR >= 4
// A tensor a format stores beside its weight (ABI 3.4): INT8 W8A8's per-row
// scales, "_scale" [out_features] f32. The format kGptqFormat is the one
// whose parts stand in for the weight: a Hugging Face GPTQ checkpoint's
// packed tensors (".qweight", ".qzeros", ".scales"), written under the
// weight's name less ".weight" plus the suffix, as such checkpoints name
// them; the QuantizedWeight's blocks are what they load as (the core's
// loader repacks them into those blocks) and run while calibrating.
inline constexpr std::string_view kGptqFormat = "gptq";

struct QuantizedPart {
  std::string suffix;           // appended to the weight's name
  DType dtype = DType::f32;
  std::vector<int64_t> shape;   // row-major, outermost first
  std::vector<std::byte> data;
};
#endif

// Quantizes one weight matrix W [out_features, in_features]. Made per weight;
// for a calibrated method the core calls observe() with every input the
// weight's Linear receives during calibration, then quantize() once.
class WeightQuantizer : public AbiObject {
 public:
  // Whether this method uses inputs (RTN does not: the core skips calibration).
  virtual bool wants_inputs() const noexcept = 0;
  // x: [n_rows, in_features] f32, inputs of the Linear. May be called many times.
  virtual Status observe(const float* x, int64_t n_rows) noexcept = 0;
  // weight: [out_features, in_features] f32, row-major.
  virtual Result<QuantizedWeight> quantize(const float* weight) noexcept = 0;

#if TESSERA_ABI_MINOR >= 3
  // ABI 3.3, optional: what AWQ's scale search asks (the core calls these
  // only when provides(*this, 3); a method that does not support them says
  // unsupported). s is a per-input-channel scale [in_features], all > 0.
  //
  // ||(W - Q(W·diag(s))·diag(s)⁻¹) Xᵀ||² over the inputs observed so far:
  // the output error of rounding W to nearest in this format after its
  // input channels are scaled by s (s = nullptr: by 1). Changes nothing.
  virtual Result<double> rounding_output_error(const float* /*weight*/, const float* /*input_scale*/) noexcept {
    return Unsupported("this weight quantizer does not evaluate input scales");
  }
  // From now on the Linear's inputs are divided by s channel-wise (the core
  // folded 1/s into the operation before it) and quantize() receives
  // W·diag(s): the quantizer rescales what it observed to match. Errors
  // are still reported on the Linear's output, which the scaling preserves.
  virtual Status scale_inputs(const float* /*input_scale*/) noexcept {
    return Unsupported("this weight quantizer does not take input scales");
  }
#endif

#if TESSERA_ABI_MINOR >= 4
  // ABI 3.4, optional (called only when provides(*this, 4)): the tensors a
  // format stores beside the weight (Quantizer::part_suffixes), for the
  // weight quantize() returned last. The core writes each under the
  // weight's name + suffix.
  virtual Result<std::vector<QuantizedPart>> parts() noexcept { return std::vector<QuantizedPart>{}; }
#endif
};
#endif

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

#if TESSERA_ABI_MINOR >= 2
  // ABI 3.2, optional: a WeightQuantizer for `spec` and a weight of this shape.
  // unsupported (saying why) when this plugin cannot write spec.format or run
  // spec.method; invalid_argument when the shape or settings do not fit the format.
  virtual Result<std::unique_ptr<WeightQuantizer>> weight_quantizer(const QuantizeSpec& /*spec*/,
                                                                    int64_t /*out_features*/,
                                                                    int64_t /*in_features*/) noexcept {
    return Unsupported("this quant plugin does not quantize");
  }
#endif

#if TESSERA_ABI_MINOR >= 4
  // ABI 3.4, optional: formats stored as several tensors. A weight `name` of
  // such a format runs with the tensors `name + suffix` stored beside it
  // (INT8 W8A8: "_scale", one scale per row); the core finds them and passes
  // them in this order to the two methods below, which then stand in for
  // make_linear() and dequantize_rows(). Empty (the default): one tensor.
  virtual std::span<const std::string_view> part_suffixes(std::string_view /*format*/) const noexcept { return {}; }
  virtual Result<std::unique_ptr<Linear>> make_linear_from_parts(const TensorRef& /*weight*/,
                                                                 std::span<const TensorRef* const> /*parts*/,
                                                                 const TensorRef* /*bias*/) noexcept {
    return Unsupported("this quant plugin has no formats stored as several tensors");
  }
  virtual Status dequantize_rows_from_parts(const TensorRef& /*tensor*/, std::span<const TensorRef* const> /*parts*/,
                                            int64_t /*first_row*/, int64_t /*n_rows*/, float* /*out*/) noexcept {
    return Unsupported("this quant plugin has no formats stored as several tensors");
  }
#endif

#if TESSERA_ABI_MINOR >= 8
  // ABI 3.8, optional: whether part `index` of part_suffixes(format) may be
  // absent from a file; the core then passes nullptr in its place. (INT8 W8A8
  // keeps its row scales under "_scale", or under "_hadamard_scale" when the
  // rows are stored rotated: one of the two, so that an older library, which
  // knows only "_scale", refuses a rotated weight by name.)
  virtual bool part_optional(std::string_view /*format*/, size_t /*index*/) const noexcept { return false; }
#endif
};

}  // namespace tessera

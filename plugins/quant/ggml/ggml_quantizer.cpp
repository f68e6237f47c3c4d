// ggml_quantizer.cpp: the "ggml" quant plugin: executes GGUF block formats and
// plain float weights, and exports the library's single entry.
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "float_linear.hpp"
#include "formats.hpp"
#include "kquant_linear.hpp"
#include "prefetch_choice.hpp"
#include "quant_linear.hpp"
#include "reference.hpp"
#include "tessera/plugin.hpp"
#include "tessera/quantizer.hpp"
#include "weight_arena.hpp"
#include "weight_quantizer.hpp"

namespace tessera::ggml {
namespace {

class GgmlQuantizer final : public Quantizer {
 public:
  // activations (activation_terms.hpp): "q8x2" (the default): the
  // block-format products write each activation block as two 8-bit terms and
  // multiply in integers; greedy decoding follows exact arithmetic, decode
  // runs about a tenth slower than q8, prefill at about half. "q8": one term
  // (llama.cpp's arithmetic, the fastest prefill). "f32": each weight row
  // dequantized and multiplied in f32, the exact product of the stored
  // weights, for checking against an f32 reference engine
  // (tools/f32-reference); decode about half as fast.
  explicit GgmlQuantizer(const ParamValues& params) {
    const std::string mode = params.has("activations") ? params.get_string("activations") : "q8x2";
    f32_activations_ = mode == "f32";
    terms_ = mode == "q8" ? ActivationTerms::q8 : ActivationTerms::q8x2;
    // prefetch (prefetch_choice.hpp): one choice for the whole process, since
    // it depends on the machine's memory, not on the model; the core checked
    // the value against the spec's choices.
    PrefetchMode prefetch = PrefetchMode::automatic;
    if (params.has("prefetch")) parse_prefetch_mode(params.get_string("prefetch"), &prefetch);
    prefetch_choice().set_mode(prefetch);
  }

  std::span<const std::string_view> formats() const noexcept override { return supported_formats(); }

  Result<std::unique_ptr<Linear>> make_linear(const TensorRef& weight, const TensorRef* bias) noexcept override {
    try {
      DType type{};
      if (Status s = check_tensor(weight, &type); !s.ok()) return s;
      if (weight.ndim != 2) {
        return InvalidArgument("tensor '" + weight.name + "': a linear weight must be 2-D [out, in], it has " +
                               std::to_string(weight.ndim) + " dimensions");
      }
      const int64_t out = weight.shape[0], in = weight.shape[1];
      std::vector<float> b;
      if (bias != nullptr) {
        DType bias_type{};
        if (Status s = check_tensor(*bias, &bias_type); !s.ok()) return s;
        if (bias->numel() != out || is_block_format(bias_type)) {
          return InvalidArgument("tensor '" + bias->name + "': a bias for '" + weight.name + "' needs " +
                                 std::to_string(out) + " plain (f32/f16/bf16) values");
        }
        b.resize(static_cast<size_t>(out));
        dequantize_row(bias_type, bias->data, b.data(), out);
      }
      if (!f32_activations_ && is_quantized_domain(type)) {
        return std::unique_ptr<Linear>(
            std::make_unique<QuantLinear>(weight.data, type, out, in, std::move(b), true, &arena_, terms_));
      }
      if (!f32_activations_ && is_kquant(type)) {
        return std::unique_ptr<Linear>(std::make_unique<KQuantLinear>(weight.data, type, out, in, std::move(b), true, &arena_, terms_));
      }
      return std::unique_ptr<Linear>(std::make_unique<FloatLinear>(weight.data, type, out, in, std::move(b)));
    } catch (const std::exception& e) {
      return Internal(std::string("ggml make_linear: ") + e.what());
    }
  }

  Result<std::unique_ptr<WeightQuantizer>> weight_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                            int64_t in_features) noexcept override {
    return make_weight_quantizer(spec, out_features, in_features);
  }

  Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows, float* out) noexcept override {
    return guard([&]() -> Status {
      DType type{};
      TESSERA_RETURN_IF_ERROR(check_tensor(tensor, &type));
      const int64_t rows = tensor.rows(), cols = tensor.cols();
      if (out == nullptr) return InvalidArgument("dequantize_rows('" + tensor.name + "'): null output");
      if (first_row < 0 || n_rows < 0 || first_row > rows || n_rows > rows - first_row) {
        return InvalidArgument("dequantize_rows('" + tensor.name + "'): rows [" + std::to_string(first_row) + ", " +
                               std::to_string(first_row + n_rows) + ") outside its " + std::to_string(rows) + " rows");
      }
      const uint64_t row_bytes = dtype_row_bytes(type, static_cast<uint64_t>(cols));
      const auto* base = static_cast<const uint8_t*>(tensor.data);
      for (int64_t r = 0; r < n_rows; ++r) {
        dequantize_row(type, base + static_cast<uint64_t>(first_row + r) * row_bytes, out + r * cols, cols);
      }
      return Status::Ok();
    });
  }

 private:
  bool f32_activations_ = false;
  ActivationTerms terms_ = ActivationTerms::q8x2;
  WeightArena arena_;  // repacked weights of every Linear made here, in 2 MiB pages
};

constexpr ParamSpec kGgmlParams[] = {
    param_string("activations", "\"q8x2\"", "q8x2|q8|f32",
                 "q8x2: block-format products write each activation block (32, or 256 for K-quants) as two 8-bit "
                 "terms, the second quantizing what the first left out, and multiply in integers (follows exact "
                 "arithmetic; decode about a tenth slower than q8, prefill about half as fast); q8: one 8-bit term (llama.cpp's arithmetic, "
                 "the fastest prefill); f32: exact f32 products of the dequantized weights (slower, for reference checks)"),
    param_string("prefetch", "\"auto\"", "auto|on|off",
                 "software prefetch of the weights decode streams (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 layouts), for the "
                 "whole process: auto times both while the model runs, alternating, and keeps the faster, trying both "
                 "again every few hundred decode steps (on one Intel Xeon VM it took a 0.5B Q4_0 model from 51-54 to 79-81 tok/s; "
                 "it has cost a few per cent elsewhere); on or off fixes it. "
                 "Results are the same bits either way"),
};

const PluginLibrary* ggml_quant_entry() {
  static const PluginInfo plugins[] = {{
      PluginFamily::quant,
      "ggml",
      "0.1.0",
      "GGUF block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to Q6_K) and f32/f16/bf16 weights on x86 CPUs (AVX2/AVX-512/VNNI)",
      kGgmlParams,
      std::size(kGgmlParams),
      &make_plugin<GgmlQuantizer>,
  }};
  static const PluginLibrary library = plugin_library(plugins);
  return &library;
}

}  // namespace
}  // namespace tessera::ggml

TESSERA_PLUGIN_ENTRY(tessera::ggml::ggml_quant_entry)

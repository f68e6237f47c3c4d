#include "weight_quantizer.hpp"

#include <Eigen/Core>

#include <array>
#include <cmath>
#include <numeric>
#include <new>
#include <string>

#include "block_grid.hpp"
#include "blocks.hpp"
#include "formats.hpp"
#include "grid_quantize.hpp"
#include "hessian_products.hpp"

namespace tessera::ggml {
namespace {

// What each writable format holds: groups of grid_width(type) columns (32;
// Q3_K and Q6_K 16). A K format stores rows of 256-column super-blocks; a
// weight whose rows are not whole super-blocks is written in `fallback`, as
// llama-quantize does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0: more bits,
// never fewer; Q3_K -> Q4_0, where llama-quantize writes IQ4_NL, which this
// plugin does not write), so its rows must be whole groups of 32.
struct FormatShape {
  DType type;
  int bits;
  bool symmetric;
  DType fallback;
};
constexpr std::array<FormatShape, 9> kWritable = {{
    {DType::q4_0, 4, true, DType::q4_0},
    {DType::q4_1, 4, false, DType::q4_1},
    {DType::q5_0, 5, true, DType::q5_0},
    {DType::q5_1, 5, false, DType::q5_1},
    {DType::q8_0, 8, true, DType::q8_0},
    {DType::q4_k, 4, false, DType::q5_0},
    {DType::q5_k, 5, false, DType::q5_1},
    {DType::q6_k, 6, true, DType::q8_0},
    {DType::q3_k, 3, true, DType::q4_0},
}};

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// H is kept as observed, on the Linear's original inputs X. After
// scale_inputs() the Linear sees X' = X·diag(1/S) and is given W' = W·diag(S)
// (S: the product of the scales so far), so an error Δ' on W' is the error
// Δ'·diag(1/S) on X, measured with H itself: tr(Δ' H' Δ'ᵀ) = tr(Δ H Δᵀ).
class GridWeightQuantizer final : public WeightQuantizer {
 public:
  GridWeightQuantizer(const QuantizeSpec& spec, const GridLayout& layout, int64_t rows, int64_t cols)
      : spec_(spec), layout_(layout), rows_(rows), cols_(cols) {
    if (wants_inputs()) hessian_ = Eigen::MatrixXf::Zero(cols, cols);
  }

  bool wants_inputs() const noexcept override { return spec_.method != "rtn"; }

  Status observe(const float* x, int64_t n_rows) noexcept override {
    if (!wants_inputs()) return Status::Ok();
    if (x == nullptr || n_rows < 0) return InvalidArgument("observe: no inputs");
    if (symmetric_) return InvalidArgument("observe: the inputs were already used");
    try {
      if (!add_gram(x, n_rows, cols_, hessian_.data()))  // H += Xᵀ X, lower triangle
        return OutOfMemory("observe: out of memory adding the inputs' X·Xᵀ");
      return Status::Ok();
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

  Result<QuantizedWeight> quantize(const float* weight) noexcept override {
    try {
      GridWeights grid;
      if (spec_.method == "gptq") {
        auto done = gptq(layout_, weight, rows_, cols_, current_hessian(),
                         GptqSettings{.act_order = spec_.act_order, .damp = spec_.damp});
        if (!done.ok()) return done.status();
        grid = std::move(done).value();
      } else if (spec_.method == "awq" && spec_.search_clipping) {
        grid = round_to_nearest_clipped(layout_, weight, rows_, cols_, current_hessian());
      } else {
        grid = round_to_nearest(layout_, weight, rows_, cols_);
      }
      QuantizedWeight out;
      out.dtype = grid.type;
      out.format = "ggml." + std::string(dtype_name(grid.type));  // the fallback's, or the groups' blocks
      out.data = grid.pack();
      if (layout_.is_groups()) gptq_tensors_ = pack_gptq(layout_.groups, grid.grids.data(), grid.q.data(), rows_, cols_);
      const Eigen::Map<const RowMajorMatrix> w(weight, rows_, cols_);
      const double energy = output_energy(w);
      out.relative_error = energy > 0 ? output_energy(w - values(grid)) / energy : 0.0;
      if (spec_.method == "rtn") {
        out.rounding_relative_error = out.relative_error;
      } else {
        // Rounding the weight as it was before any scale_inputs(): W = W'·diag(1/S).
        RowMajorMatrix original = w;
        if (total_scale_.size() > 0) original.array().rowwise() /= total_scale_.array();
        const RowMajorMatrix error = original - values(round_to_nearest(layout_, original.data(), rows_, cols_));
        const double original_energy = original_output_energy(original);
        out.rounding_relative_error = original_energy > 0 ? original_output_energy(error) / original_energy : 0.0;
      }
      return out;
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

  Result<double> rounding_output_error(const float* weight, const float* input_scale) noexcept override {
    if (!wants_inputs()) return Unsupported("round-to-nearest observes no inputs to weigh errors by");
    try {
      const Eigen::Map<const RowMajorMatrix> w(weight, rows_, cols_);
      if (input_scale == nullptr) return output_energy(w - values(round_to_nearest(layout_, weight, rows_, cols_)));
      const Eigen::Map<const Eigen::RowVectorXf> s(input_scale, cols_);
      RowMajorMatrix scaled = w;
      scaled.array().rowwise() *= s.array();
      // Q(W·diag(s))·diag(1/s) against W.
      RowMajorMatrix error = values(round_to_nearest(layout_, scaled.data(), rows_, cols_));
      error.array().rowwise() /= s.array();
      return output_energy(w - error);
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

  // GPTQ groups: the checkpoint's packed tensors of the last quantize(),
  // which the core writes in place of the weight (group_grid.hpp).
  Result<std::vector<QuantizedPart>> parts() noexcept override {
    if (!layout_.is_groups()) return std::vector<QuantizedPart>{};
    if (gptq_tensors_.scales.empty()) return InvalidArgument("parts: nothing quantized yet");
    try {
      std::vector<QuantizedPart> out(3);
      out[0] = {".qweight", DType::i32, gptq_tensors_.qweight_shape, gptq_tensors_.qweight};
      out[1] = {".qzeros", DType::i32, gptq_tensors_.qzeros_shape, gptq_tensors_.qzeros};
      out[2] = {".scales", DType::f16, gptq_tensors_.scales_shape, gptq_tensors_.scales};
      return out;
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

  Status scale_inputs(const float* input_scale) noexcept override {
    if (!wants_inputs()) return Unsupported("round-to-nearest observes no inputs to rescale");
    if (input_scale == nullptr) return InvalidArgument("scale_inputs: no scales");
    for (int64_t c = 0; c < cols_; ++c) {
      if (!(input_scale[c] > 0.0f) || !std::isfinite(input_scale[c]))
        return InvalidArgument("scale_inputs: input scale " + std::to_string(c) + " is not a positive number");
    }
    try {
      if (total_scale_.size() == 0) total_scale_ = Eigen::RowVectorXf::Ones(cols_);
      total_scale_.array() *= Eigen::Map<const Eigen::RowVectorXf>(input_scale, cols_).array();
      return Status::Ok();
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

 private:
  RowMajorMatrix values(const GridWeights& grid) const {
    RowMajorMatrix v(rows_, cols_);
    grid.values(v.data());
    return v;
  }

  // H with both triangles filled (once observing is over).
  const Eigen::MatrixXf& hessian() {
    if (!symmetric_) {
      hessian_.triangularView<Eigen::StrictlyUpper>() = hessian_.transpose();
      symmetric_ = true;
    }
    return hessian_;
  }

  // H' = diag(1/S) H diag(1/S): the statistics of the inputs the Linear now sees.
  Eigen::MatrixXf current_hessian() {
    if (total_scale_.size() == 0) return hessian();
    Eigen::MatrixXf h = hessian();
    h.array().colwise() /= total_scale_.transpose().array();
    h.array().rowwise() /= total_scale_.array();
    return h;
  }

  // tr(M H Mᵀ) for M [rows, cols] on the original inputs (with none observed: ||M||²).
  double original_output_energy(const RowMajorMatrix& m) {
    if (hessian_.size() == 0) return static_cast<double>(m.squaredNorm());
    const auto energy = hessian_quadratic(m.data(), rows_, cols_, hessian().data());
    if (!energy) throw std::bad_alloc();  // the callers turn it into a status
    return *energy;
  }

  // The same for M on the inputs the Linear now sees: tr((M·diag(1/S)) H (M·diag(1/S))ᵀ).
  double output_energy(const RowMajorMatrix& m) {
    if (total_scale_.size() == 0) return original_output_energy(m);
    RowMajorMatrix original = m;
    original.array().rowwise() /= total_scale_.array();
    return original_output_energy(original);
  }

  QuantizeSpec spec_;
  GridLayout layout_;
  int64_t rows_, cols_;
  GptqTensors gptq_tensors_;        // groups only: the last quantize()'s packed tensors
  Eigen::MatrixXf hessian_;         // [cols, cols]: sum of x xᵀ over the original inputs; lower triangle
                                    // while observing, both once symmetric_
  bool symmetric_ = false;
  Eigen::RowVectorXf total_scale_;  // [cols]: S, the product of the scale_inputs() scales; empty: none
};

}  // namespace

namespace {

// The settings' own checks, for every format.
Status check_method_settings(const QuantizeSpec& spec) {
  if (spec.act_order && spec.method != "gptq") return InvalidArgument("act-order is a GPTQ setting");
  if (spec.search_clipping && spec.method != "awq") return InvalidArgument("the clipping search is an AWQ setting");
  if (!(spec.damp > 0 && spec.damp <= 1)) return InvalidArgument("GPTQ damping must be in (0, 1]");
  return Status::Ok();
}

template <class... Args>
Result<std::unique_ptr<WeightQuantizer>> make_grid_quantizer(Args&&... args) {
  try {
    return std::unique_ptr<WeightQuantizer>(std::make_unique<GridWeightQuantizer>(std::forward<Args>(args)...));
  } catch (const std::exception& e) {
    return exception_status(e.what());
  }
}

// "gptq": GPTQ checkpoint groups (group_grid.hpp) of 2, 3, 4 or 8 bits.
Result<std::unique_ptr<WeightQuantizer>> make_group_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                              int64_t in_features) {
  const std::string asked = std::to_string(spec.bits) + "-bit " + (spec.symmetric ? "symmetric" : "asymmetric") +
                            " groups of " +
                            (spec.group_size == -1 ? std::string("a whole row") : std::to_string(spec.group_size));
  if (spec.bits != 2 && spec.bits != 3 && spec.bits != 4 && spec.bits != 8)
    return InvalidArgument("gptq holds 2-, 3-, 4- or 8-bit groups; asked for " + asked);
  if (spec.bits == 8 && !spec.symmetric)
    return InvalidArgument("gptq's 8-bit groups are symmetric (they run as Q8_0 blocks); asked for " + asked);
  if (spec.group_size != -1 && (spec.group_size <= 0 || spec.group_size % kBlock != 0))
    return InvalidArgument("gptq's groups are whole rows (-1) or multiples of 32 columns; asked for " + asked);
  const GroupShape shape{spec.bits, spec.group_size == -1 ? static_cast<int>(in_features) : spec.group_size,
                         spec.symmetric};
  if (out_features <= 0 || in_features <= 0 || in_features % kBlock != 0 || !group_rows_fit(shape, out_features))
    return InvalidArgument("gptq " + asked + ": a weight of " + std::to_string(out_features) + "x" +
                           std::to_string(in_features) + " needs rows of whole 32-column blocks and " +
                           std::to_string(32 / std::gcd(32, spec.bits)) +
                           "·k output rows (its zeros fill 32-bit words)");
  TESSERA_RETURN_IF_ERROR(check_method_settings(spec));
  return make_grid_quantizer(spec, GridLayout(shape), out_features, in_features);
}

}  // namespace

Result<std::unique_ptr<WeightQuantizer>> make_weight_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                               int64_t in_features) {
  if (spec.method != "rtn" && spec.method != "gptq" && spec.method != "awq")
    return Unsupported("the ggml quant plugin quantizes with rtn, gptq or awq, not '" + spec.method + "'");
  if (spec.rotate_inputs)
    return InvalidArgument("the ggml formats store their rows as they are: no input rotation (" + spec.format + ")");
  if (spec.format == kGptqFormat) return make_group_quantizer(spec, out_features, in_features);
  const auto type = format_dtype(spec.format);
  const FormatShape* shape = nullptr;
  for (const auto& f : kWritable)
    if (type && f.type == *type) shape = &f;
  if (shape == nullptr)
    return Unsupported(
        "the ggml quant plugin writes ggml.q4_0, ggml.q4_1, ggml.q5_0, ggml.q5_1, ggml.q8_0, ggml.q3_k, ggml.q4_k, "
        "ggml.q5_k, ggml.q6_k and gptq, not '" + spec.format + "'");
  const int width = grid_width(*type);
  const std::string holds = spec.format + " holds " + std::to_string(shape->bits) + "-bit " +
                            (shape->symmetric ? "symmetric" : "asymmetric") + " groups of " + std::to_string(width);
  if (spec.bits != shape->bits || spec.symmetric != shape->symmetric || spec.group_size != width) {
    return InvalidArgument(holds + "; asked for " + std::to_string(spec.bits) + "-bit " +
                           (spec.symmetric ? "symmetric" : "asymmetric") + " groups of " +
                           (spec.group_size < 0 ? std::string("a whole row") : std::to_string(spec.group_size)));
  }
  if (out_features <= 0 || in_features <= 0 || in_features % kBlock != 0)
    return InvalidArgument(holds + ": a weight of " + std::to_string(out_features) + "x" + std::to_string(in_features) +
                           " has rows that are not whole groups");
  const DType written = in_features % grid_span(*type) == 0 ? *type : shape->fallback;
  TESSERA_RETURN_IF_ERROR(check_method_settings(spec));
  return make_grid_quantizer(spec, GridLayout(written), out_features, in_features);
}

}  // namespace tessera::ggml

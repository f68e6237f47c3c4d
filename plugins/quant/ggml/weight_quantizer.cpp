#include "weight_quantizer.hpp"

#include <Eigen/Core>

#include <array>
#include <string>

#include "blocks.hpp"
#include "formats.hpp"
#include "grid_quantize.hpp"

namespace tessera::ggml {
namespace {

// What each writable format holds: every one groups 32 columns.
struct FormatShape {
  DType type;
  int bits;
  bool symmetric;
};
constexpr std::array<FormatShape, 5> kWritable = {{
    {DType::q4_0, 4, true},
    {DType::q4_1, 4, false},
    {DType::q5_0, 5, true},
    {DType::q5_1, 5, false},
    {DType::q8_0, 8, true},
}};

class GridWeightQuantizer final : public WeightQuantizer {
 public:
  GridWeightQuantizer(const QuantizeSpec& spec, DType type, int64_t rows, int64_t cols)
      : spec_(spec), type_(type), rows_(rows), cols_(cols) {
    if (wants_inputs()) hessian_ = Eigen::MatrixXf::Zero(cols, cols);
  }

  bool wants_inputs() const noexcept override { return spec_.method == "gptq"; }

  Status observe(const float* x, int64_t n_rows) noexcept override {
    if (!wants_inputs()) return Status::Ok();
    if (x == nullptr || n_rows < 0) return InvalidArgument("observe: no inputs");
    try {
      const Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> inputs(x, n_rows,
                                                                                                             cols_);
      hessian_.selfadjointView<Eigen::Lower>().rankUpdate(inputs.transpose());  // H += Xᵀ X
      return Status::Ok();
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

  Result<QuantizedWeight> quantize(const float* weight) noexcept override {
    try {
      GridWeights grid;
      if (spec_.method == "gptq") {
        auto done = gptq(type_, weight, rows_, cols_, hessian_,
                         GptqSettings{.act_order = spec_.act_order, .damp = spec_.damp});
        if (!done.ok()) return done.status();
        grid = std::move(done).value();
      } else {
        grid = round_to_nearest(type_, weight, rows_, cols_);
      }
      QuantizedWeight out;
      out.dtype = type_;
      out.format = spec_.format;
      out.data = grid.pack();
      out.relative_error = relative_error(weight, grid, hessian_);
      out.rounding_relative_error =
          spec_.method == "rtn" ? out.relative_error
                                : relative_error(weight, round_to_nearest(type_, weight, rows_, cols_), hessian_);
      return out;
    } catch (const std::exception& e) {
      return exception_status(e.what());
    }
  }

 private:
  QuantizeSpec spec_;
  DType type_;
  int64_t rows_, cols_;
  Eigen::MatrixXf hessian_;  // [cols, cols], lower triangle: sum of x xᵀ (GPTQ only)
};

}  // namespace

Result<std::unique_ptr<WeightQuantizer>> make_weight_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                               int64_t in_features) {
  if (spec.method != "rtn" && spec.method != "gptq")
    return Unsupported("the ggml quant plugin quantizes with rtn or gptq, not '" + spec.method + "'");
  const auto type = format_dtype(spec.format);
  const FormatShape* shape = nullptr;
  for (const auto& f : kWritable)
    if (type && f.type == *type) shape = &f;
  if (shape == nullptr)
    return Unsupported("the ggml quant plugin writes ggml.q4_0, ggml.q4_1, ggml.q5_0, ggml.q5_1 and ggml.q8_0, not '" +
                       spec.format + "'");
  const std::string holds = spec.format + " holds " + std::to_string(shape->bits) + "-bit " +
                            (shape->symmetric ? "symmetric" : "asymmetric") + " groups of 32";
  if (spec.bits != shape->bits || spec.symmetric != shape->symmetric || spec.group_size != kBlock) {
    return InvalidArgument(holds + "; asked for " + std::to_string(spec.bits) + "-bit " +
                           (spec.symmetric ? "symmetric" : "asymmetric") + " groups of " +
                           (spec.group_size < 0 ? std::string("a whole row") : std::to_string(spec.group_size)));
  }
  if (out_features <= 0 || in_features <= 0 || in_features % kBlock != 0)
    return InvalidArgument(holds + ": a weight of " + std::to_string(out_features) + "x" + std::to_string(in_features) +
                           " has rows that are not whole groups");
  if (spec.act_order && spec.method != "gptq") return InvalidArgument("act-order is a GPTQ setting");
  if (!(spec.damp > 0 && spec.damp <= 1)) return InvalidArgument("GPTQ damping must be in (0, 1]");
  try {
    return std::unique_ptr<WeightQuantizer>(
        std::make_unique<GridWeightQuantizer>(spec, *type, out_features, in_features));
  } catch (const std::exception& e) {
    return exception_status(e.what());
  }
}

}  // namespace tessera::ggml

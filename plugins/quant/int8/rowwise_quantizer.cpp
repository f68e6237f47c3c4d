#include "rowwise_quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "hadamard_rotation.hpp"
#include "w8a8_layout.hpp"

namespace tessera::int8 {

void quantize_rows(const float* w, int64_t out, int64_t in, int8_t* q, float* scales) {
  // Rows are independent: the same bytes on any number of threads. SmoothQuant's
  // alpha search quantizes every group once a candidate, so this is most of it.
#pragma omp parallel for schedule(static) if (out * in >= kParallelWeightValues)
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w + o * in;
    float amax = 0.0f;
    for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(row[k]));
    const float scale = amax / 127.0f;
    scales[o] = scale;
    for (int64_t k = 0; k < in; ++k) {
      // |row[k] / scale| <= 127 up to rounding: within round_to_even_small's range.
      const float v = scale == 0.0f ? 0.0f : round_to_even_small(row[k] / scale);
      q[o * in + k] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

namespace {

class RowwiseQuantizer final : public WeightQuantizer {
 public:
  RowwiseQuantizer(int64_t out, int64_t in, bool rotated) : out_(out), in_(in), rotated_(rotated) {}

  bool wants_inputs() const noexcept override { return false; }
  Status observe(const float* /*x*/, int64_t /*n_rows*/) noexcept override { return Status::Ok(); }
  // SmoothQuant's migration: the core scaled the weight it will pass; this
  // quantizer keeps no inputs to rescale.
  Status scale_inputs(const float* /*input_scale*/) noexcept override { return Status::Ok(); }

  Result<QuantizedWeight> quantize(const float* weight) noexcept override {
    return guard([&]() -> Result<QuantizedWeight> {
      bool finite = true;
#pragma omp parallel for schedule(static) reduction(&& : finite) if (out_ * in_ >= kParallelWeightValues)
      for (int64_t i = 0; i < out_ * in_; ++i) finite = finite && std::isfinite(weight[i]);
      if (!finite) return InvalidArgument("the weight holds a NaN or infinity");
      QuantizedWeight result;
      result.dtype = DType::i8;
      result.format = std::string(kFormat);
      result.data.resize(static_cast<size_t>(out_ * in_));
      scales_.assign(static_cast<size_t>(out_), 0.0f);
      auto* q = reinterpret_cast<int8_t*>(result.data.data());
      std::vector<float> rotated;  // [out, in]: W·R
      if (rotated_) {
        rotated.assign(weight, weight + out_ * in_);
#pragma omp parallel for schedule(static) if (out_ * in_ >= kParallelWeightValues)
        for (int64_t o = 0; o < out_; ++o) rotate_row(rotated.data() + o * in_, in_);
        weight = rotated.data();  // R is orthogonal: the errors below are the same in either basis
      }
      quantize_rows(weight, out_, in_, q, scales_.data());
      // Without inputs the error is the weights' own: ||W - Q||² / ||W||².
      // Summed a row at a time, in parallel, then over rows in order: the
      // same figure on any number of threads.
      std::vector<double> row_err(static_cast<size_t>(out_)), row_energy(static_cast<size_t>(out_));
#pragma omp parallel for schedule(static) if (out_ * in_ >= kParallelWeightValues)
      for (int64_t o = 0; o < out_; ++o) {
        double e = 0, w2 = 0;
        for (int64_t k = 0; k < in_; ++k) {
          const double w = weight[o * in_ + k];
          const double d = w - static_cast<double>(scales_[static_cast<size_t>(o)]) * q[o * in_ + k];
          e += d * d;
          w2 += w * w;
        }
        row_err[static_cast<size_t>(o)] = e;
        row_energy[static_cast<size_t>(o)] = w2;
      }
      double err = 0, energy = 0;
      for (int64_t o = 0; o < out_; ++o) {
        err += row_err[static_cast<size_t>(o)];
        energy += row_energy[static_cast<size_t>(o)];
      }
      result.relative_error = energy > 0 ? err / energy : 0.0;
      result.rounding_relative_error = result.relative_error;
      return result;
    });
  }

  Result<std::vector<QuantizedPart>> parts() noexcept override {
    return guard([&]() -> Result<std::vector<QuantizedPart>> {
      if (scales_.empty()) return Internal("parts() asked before quantize()");
      QuantizedPart scale;
      scale.suffix = std::string(rotated_ ? kHadamardScaleSuffix : kScaleSuffix);
      scale.dtype = DType::f32;
      scale.shape = {out_};
      scale.data.resize(scales_.size() * sizeof(float));
      std::memcpy(scale.data.data(), scales_.data(), scale.data.size());
      return std::vector<QuantizedPart>{std::move(scale)};
    });
  }

 private:
  int64_t out_, in_;
  bool rotated_;               // the rows are W·R, the scales stored as kHadamardScaleSuffix
  std::vector<float> scales_;  // [out]: the last quantize()'s
};

}  // namespace

Result<std::unique_ptr<WeightQuantizer>> make_rowwise_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                                int64_t in_features) {
  if (spec.format != kFormat)
    return Unsupported("the int8 plugin writes '" + std::string(kFormat) + "', not '" + spec.format + "'");
  if (spec.method != "int8")
    return Unsupported("the int8 plugin's format is written by method 'int8' (INT8 W8A8), not '" + spec.method + "'");
  if (spec.bits != 8) return InvalidArgument("INT8 W8A8 stores 8-bit weights, not " + std::to_string(spec.bits));
  if (spec.group_size != -1)
    return InvalidArgument("INT8 W8A8 has one scale per output row (group size -1), not groups of " +
                           std::to_string(spec.group_size));
  if (!spec.symmetric) return InvalidArgument("INT8 W8A8 weights are symmetric (no minimum)");
  if (spec.act_order) return InvalidArgument("act-order is a GPTQ setting; INT8 W8A8 rounds each row to nearest");
  if (out_features <= 0 || in_features <= 0 || in_features > kMaxInFeatures)
    return InvalidArgument("INT8 W8A8 takes rows of 1 to " + std::to_string(kMaxInFeatures) + " values, not " +
                           std::to_string(in_features));
  return std::unique_ptr<WeightQuantizer>(
      std::make_unique<RowwiseQuantizer>(out_features, in_features, spec.rotate_inputs));
}

}  // namespace tessera::int8

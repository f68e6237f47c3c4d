#include "engine/quantized_output_error.hpp"

#include <cblas.h>

#include <exception>
#include <utility>

#include <fmt/format.h>

#include "engine/model_builder.hpp"
#include "engine/quantized_views.hpp"

namespace tessera {

Result<QuantizedOutputError> QuantizedOutputError::make(CoreModelBuilder& builder,
                                                        std::vector<OutputErrorMember> members,
                                                        std::span<const float> inputs) {
  if (members.empty()) return InvalidArgument("output error: no Linears to score");
  for (const OutputErrorMember& m : members) {
    if (m.weight == nullptr || m.values == nullptr || m.quantizer == nullptr || m.weight->ndim != 2 ||
        m.weight->shape[1] != members.front().weight->shape[1])
      return InvalidArgument("output error: the Linears must be 2-D weights reading one input");
  }
  const int64_t cols = members.front().weight->shape[1];
  if (inputs.empty()) return InvalidArgument("output error: no calibration rows were kept");
  if (inputs.size() % static_cast<size_t>(cols) != 0)
    return InvalidArgument(fmt::format("output error: {} input values are not rows of {}", inputs.size(), cols));
  try {
    QuantizedOutputError e;
    e.builder_ = &builder;
    e.inputs_ = inputs;
    e.cols_ = cols;
    e.rows_ = static_cast<int64_t>(inputs.size()) / cols;
    for (const OutputErrorMember& m : members) {
      const int64_t out = m.weight->shape[0];
      std::vector<float>& product = e.products_.emplace_back(static_cast<size_t>(e.rows_ * out));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(e.rows_), static_cast<int>(out),
                  static_cast<int>(cols), 1.0f, inputs.data(), static_cast<int>(cols), m.values, static_cast<int>(cols),
                  0.0f, product.data(), static_cast<int>(out));
    }
    e.members_ = std::move(members);
    return e;
  } catch (const std::exception& ex) {
    return exception_status(ex.what());
  }
}

Result<double> QuantizedOutputError::operator()(std::span<const float> input_scale) {
  if (static_cast<int64_t>(input_scale.size()) != cols_)
    return InvalidArgument(fmt::format("output error: {} scales for {} input channels", input_scale.size(), cols_));
  try {
    scaled_inputs_.resize(inputs_.size());
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t j = 0; j < cols_; ++j) scaled_inputs_[r * cols_ + j] = inputs_[r * cols_ + j] / input_scale[j];
    double error = 0;
    for (size_t i = 0; i < members_.size(); ++i) {
      const OutputErrorMember& m = members_[i];
      const int64_t out = m.weight->shape[0];
      scaled_weight_.resize(static_cast<size_t>(out * cols_));
      for (int64_t r = 0; r < out; ++r)
        for (int64_t j = 0; j < cols_; ++j) scaled_weight_[r * cols_ + j] = m.values[r * cols_ + j] * input_scale[j];
      auto made = quantize_to_linear(*builder_, *m.weight, *m.quantizer, scaled_weight_.data());
      if (!made.ok()) return made.status();
      outputs_.resize(static_cast<size_t>(rows_ * out));
      if (Status ran = made->linear->forward(scaled_inputs_.data(), outputs_.data(), rows_); !ran.ok())
        return Status(ran.code(), fmt::format("{}: {}", m.weight->name, ran.message()));
      const std::vector<float>& product = products_[i];
      for (size_t k = 0; k < outputs_.size(); ++k) {
        const double d = static_cast<double>(outputs_[k]) - product[k];
        error += d * d;
      }
    }
    return error;
  } catch (const std::exception& ex) {
    return exception_status(ex.what());
  }
}

}  // namespace tessera

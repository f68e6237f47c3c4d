#include "engine/held_out_error.hpp"

#include <cblas.h>

#include <algorithm>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "engine/quantized_views.hpp"

namespace tessera {

Result<OutputError> measure_output_error(Linear& linear, const float* weight, std::span<const float> bias,
                                         const LinearRescaling& rescaling, std::span<const float> inputs) {
  const std::span<const float> input_divisor = rescaling.input_divisor;
  const std::span<const float> output_scale = rescaling.output_scale;
  const int64_t in = linear.in_features();
  const int64_t out = linear.out_features();
  if (in <= 0 || inputs.size() % static_cast<size_t>(in) != 0)
    return InvalidArgument(fmt::format("output error: {} input values are not rows of {}", inputs.size(), in));
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != out)
    return InvalidArgument(fmt::format("output error: a bias of {} for {} outputs", bias.size(), out));
  if (!input_divisor.empty() && static_cast<int64_t>(input_divisor.size()) != in)
    return InvalidArgument(fmt::format("output error: {} input divisors for {} inputs", input_divisor.size(), in));
  if (!output_scale.empty() && static_cast<int64_t>(output_scale.size()) != out)
    return InvalidArgument(fmt::format("output error: {} output scales for {} outputs", output_scale.size(), out));
  // Rows at a time, so that the products of a wide Linear over many held-out
  // rows need not all be in memory at once.
  constexpr int64_t kRowsAtATime = 256;
  const int64_t rows = static_cast<int64_t>(inputs.size()) / in;
  try {
    std::vector<float> x(static_cast<size_t>(std::min(rows, kRowsAtATime) * in));         // [n, in]
    std::vector<float> product(static_cast<size_t>(std::min(rows, kRowsAtATime) * out));  // [n, out]
    std::vector<float> y(product.size());                                                  // [n, out]
    OutputError e;
    for (int64_t r0 = 0; r0 < rows; r0 += kRowsAtATime) {
      const int64_t n = std::min(kRowsAtATime, rows - r0);
      const float* source = inputs.data() + r0 * in;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < in; ++j)
          x[r * in + j] = input_divisor.empty() ? source[r * in + j] : source[r * in + j] / input_divisor[j];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(out),
                  static_cast<int>(in), 1.0f, x.data(), static_cast<int>(in), weight, static_cast<int>(in), 0.0f,
                  product.data(), static_cast<int>(out));
      TESSERA_RETURN_IF_ERROR(linear.forward(x.data(), y.data(), n));
      for (int64_t r = 0; r < n; ++r) {
        double row_lost = 0, row_energy = 0;
        for (int64_t o = 0; o < out; ++o) {
          const double scale = output_scale.empty() ? 1.0 : output_scale[o];
          const double reference = scale * product[r * out + o];
          const double d = scale * (static_cast<double>(y[r * out + o]) - (bias.empty() ? 0.0f : bias[o])) - reference;
          row_lost += d * d;
          row_energy += reference * reference;
        }
        e.lost += row_lost;
        e.energy += row_energy;
        if (row_energy > 0) {
          e.row_relative_sum += row_lost / row_energy;
          ++e.rows;
        }
      }
    }
    return e;
  } catch (const std::exception& ex) {
    return exception_status(ex.what());
  }
}

Result<OutputError> measure_quantized_output_error(CoreModelBuilder& builder, const TensorRef& weight,
                                                   WeightQuantizer& quantizer, const float* values,
                                                   std::span<const float> inputs, bool run_parts) {
  auto made = quantize_to_linear(builder, weight, quantizer, values, run_parts);
  if (!made.ok()) return made.status();
  auto error = measure_output_error(*made->linear, values, {}, {}, inputs);
  if (!error.ok()) return Status(error.status().code(), fmt::format("{}: {}", weight.name, error.status().message()));
  return *error;
}

}  // namespace tessera

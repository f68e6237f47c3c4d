// calibration_linear.hpp: the Linear `tessera quantize` puts between the model
// and each weight it quantizes.
//
// GPTQ calibrates layer by layer so that each layer sees the outputs of the
// layers before it as quantized (Frantar et al. and the reference
// implementations do the same). The engine runs whole forwards, so each
// weight's Linear plays a role per calibration pass over layer l:
//   quantized  layers before l: the quantized weight, already chosen;
//   observe    layer l: hands its inputs to the WeightQuantizer, then
//              multiplies by the original weight (so the layer's later
//              Linears see what the original layer computes);
//   stop       layers after l: ends the forward early, nothing after l matters;
//   reference  weights that are not quantized (the output head).
#pragma once

#include <memory>

#include "tessera/linear.hpp"
#include "tessera/quantizer.hpp"

namespace tessera {

class CalibrationLinear final : public Linear {
 public:
  enum class Role { reference, observe, stop, quantized };

  // `stopped` is set when a forward reaches a Linear in the stop role.
  CalibrationLinear(std::unique_ptr<Linear> reference, bool* stopped)
      : reference_(std::move(reference)), stopped_(stopped) {}

  void observe_into(WeightQuantizer* quantizer) {
    observer_ = quantizer;
    role_ = Role::observe;
  }
  void stop() { role_ = Role::stop; }
  // From now on the product uses `quantized`; the original weight is released.
  void use_quantized(std::unique_ptr<Linear> quantized) {
    quantized_ = std::move(quantized);
    reference_.reset();
    observer_ = nullptr;
    role_ = Role::quantized;
  }
  Role role() const { return role_; }
  // Input rows handed to the quantizer so far.
  int64_t observed_rows() const { return observed_rows_; }

  int64_t in_features() const noexcept override { return current().in_features(); }
  int64_t out_features() const noexcept override { return current().out_features(); }
  uint64_t weight_bytes() const noexcept override { return current().weight_bytes(); }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;

 private:
  const Linear& current() const { return quantized_ ? *quantized_ : *reference_; }

  std::unique_ptr<Linear> reference_;
  std::unique_ptr<Linear> quantized_;
  WeightQuantizer* observer_ = nullptr;
  bool* stopped_;
  Role role_ = Role::reference;
  int64_t observed_rows_ = 0;
};

}  // namespace tessera

// calibration_linear.hpp: the Linear `tessera quantize` puts between the model
// and each weight it quantizes.
//
// GPTQ calibrates layer by layer so that each layer sees the outputs of the
// layers before it as quantized (Frantar et al. and the reference
// implementations do the same). The engine runs whole forwards, so each
// weight's Linear plays a role per calibration pass over layer l:
//   quantized  layers before l: the quantized weight, already chosen (its
//              inputs divided by AWQ's scales where they were folded into a
//              norm, which the running model still holds unscaled);
//   observe    layer l: hands its inputs to the WeightQuantizer (and keeps
//              their mean and largest magnitude per channel, for AWQ and
//              SmoothQuant), then
//              multiplies by the original weight (so the layer's later
//              Linears see what the original layer computes), or, where
//              nothing kept reads the product, writes zeros: in a
//              true-sequential stage, whose pass ends before anything reads
//              it, and in the layer's last stage (the down projection),
//              whose product reaches only the layer's output, which an
//              observing pass throws away;
//   stop       layers after l, and layer l's later true-sequential stages:
//              ends the pass early, nothing after it matters;
//   reference  weights that are not quantized (the output head);
//   capture    layer l, over the held-out text (--held-out): keeps its inputs
//              and multiplies by the original weight.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "tessera/linear.hpp"
#include "tessera/quantizer.hpp"

namespace tessera {

class CalibrationLinear final : public Linear {
 public:
  enum class Role { reference, observe, stop, quantized, capture };

  // `stopped` is set when a forward reaches a Linear in the stop role.
  CalibrationLinear(std::unique_ptr<Linear> reference, bool* stopped)
      : reference_(std::move(reference)), stopped_(stopped) {}

  // keep_every > 0: also keep every keep_every-th input row, from row
  // keep_every / 2 on (kept_inputs). product = false: the outputs are
  // zeros instead of the original weight's product, for passes in which
  // nothing kept reads them (a true-sequential stage's: its pass stops at
  // the next stage's first Linear; the layer's last stage's: only the
  // layer's output reads it, and that is thrown away).
  void observe_into(WeightQuantizer* quantizer, int64_t keep_every = 0, bool product = true) {
    observer_ = quantizer;
    observe_product_ = product;
    sum_abs_input_.assign(static_cast<size_t>(reference_->in_features()), 0.0);
    max_abs_input_.assign(static_cast<size_t>(reference_->in_features()), 0.0f);
    keep_every_ = keep_every;
    kept_inputs_.clear();
    role_ = Role::observe;
  }
  void stop() { role_ = Role::stop; }
  // Keeps every input row from now on (take_captured), the original weight
  // computing the output; nothing reaches a quantizer.
  void capture() {
    captured_.clear();
    role_ = Role::capture;
  }
  // The rows kept since capture(), [rows, in_features]; the Linear is left
  // in the reference role.
  std::vector<float> take_captured() {
    role_ = Role::reference;
    return std::exchange(captured_, {});
  }
  // The original weight again, once the passes reach the layer of a weight
  // that stays unquantized (its format cannot hold its shape).
  void use_reference() {
    if (role_ == Role::stop) role_ = Role::reference;
  }
  // From now on the product uses `quantized`, on inputs divided channel-wise
  // by `input_divisor` [in_features] (empty: as they come); the original
  // weight is released.
  void use_quantized(std::unique_ptr<Linear> quantized, std::vector<float> input_divisor = {}) {
    quantized_ = std::move(quantized);
    input_divisor_ = std::move(input_divisor);
    reference_.reset();
    std::vector<float>().swap(kept_inputs_);  // frees it (`= {}` would keep the capacity)
    observer_ = nullptr;
    role_ = Role::quantized;
  }
  Role role() const { return role_; }
  // Input rows handed to the quantizer so far.
  int64_t observed_rows() const { return observed_rows_; }
  // Mean |x| per input channel over the rows observed: [in_features].
  std::vector<float> mean_abs_input() const;
  // Largest |x| per input channel over the rows observed: [in_features].
  const std::vector<float>& max_abs_input() const { return max_abs_input_; }
  // The input rows kept while observing (observe_into's keep_every):
  // [kept rows, in_features].
  const std::vector<float>& kept_inputs() const { return kept_inputs_; }

  int64_t in_features() const noexcept override { return current().in_features(); }
  int64_t out_features() const noexcept override { return current().out_features(); }
  uint64_t weight_bytes() const noexcept override { return current().weight_bytes(); }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;

 private:
  const Linear& current() const { return quantized_ ? *quantized_ : *reference_; }
  Status forward_quantized(const float* x, float* y, int64_t n_rows) noexcept;

  std::unique_ptr<Linear> reference_;
  std::unique_ptr<Linear> quantized_;
  WeightQuantizer* observer_ = nullptr;
  bool* stopped_;
  Role role_ = Role::reference;
  bool observe_product_ = true;  // observe: multiply by the original weight (else zeros)
  int64_t observed_rows_ = 0;
  std::vector<double> sum_abs_input_;  // [in_features] while observing
  std::vector<float> max_abs_input_;   // [in_features] while observing
  int64_t keep_every_ = 0;
  std::vector<float> kept_inputs_;     // [kept rows, in_features] while observing
  std::vector<float> captured_;        // [rows, in_features] while capturing
  std::vector<float> input_divisor_;   // [in_features] or empty
  std::vector<float> scaled_input_;    // scratch: [n_rows, in_features]
};

}  // namespace tessera

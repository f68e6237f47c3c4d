// awq_scales.hpp: AWQ's per-input-channel scales (Lin et al., 2023, "AWQ:
// Activation-aware Weight Quantization for LLM Compression and
// Acceleration"), the part `tessera quantize --method awq` does in the core.
//
// Scaling input channel j of a weight by s_j and dividing the input by s_j
// leaves the product unchanged, but rounding the scaled weight protects the
// channels the inputs use most. The 1/s goes into the operation that makes
// the input (a norm's weight, or the output rows of the Linear before), so it
// costs nothing at run time; every Linear reading that input shares one s.
// Which Linears share an input is the model's structure, so the groups and
// the search live here; the error of rounding under a candidate s is the
// quant plugin's (WeightQuantizer::rounding_output_error, ABI 3.3).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tessera/quantizer.hpp"

namespace tessera {

// Linears that read one input, and where 1/s is folded.
struct ScaleGroup {
  enum class Fold {
    norm,  // the norm's weight is multiplied by 1/s
    rows,  // the Linear's output rows (and bias) are divided by s
  };
  Fold fold = Fold::norm;
  std::string folds_into;            // the norm's weight, or the Linear's weight
  std::vector<std::string> members;  // the weights reading its output
};

// The groups of a Llama-family layer `layer` (GGUF tensor names), given the
// shapes of that layer's tensors (weights [out, in], norms [n]): the input
// norm before q/k/v, the post-attention norm before gate/up, up before
// down, and v before o where v's output is o's whole input (not under
// grouped-query attention, where one v head feeds several query heads). A
// group is left out when a tensor it needs is missing or its shapes do not
// line up.
std::vector<ScaleGroup> awq_scale_groups(int layer, const std::map<std::string, std::vector<int64_t>>& shapes);

// One Linear of a group: its weight [out, in] (f32, row-major) and quantizer.
struct ScaleMember {
  const float* weight = nullptr;
  WeightQuantizer* quantizer = nullptr;
  int64_t rows = 0;  // out_features of the weight (SmoothQuant reads its columns)
};

struct ScaleSearch {
  std::vector<float> scales;  // [in]
  double exponent = 0;        // the chosen a in s = mean|x|^a
  double loss = 0;            // summed output error of rounding the members under `scales`
  double unscaled_loss = 0;   // the same with s = 1 (a = 0)
};

// AWQ's grid search: for a = 0, 1/grid, ..., (grid-1)/grid, s = max(mean|x|^a,
// 1e-4) normalised by sqrt(max s · min s), scored by the members' summed
// output error of rounding under s; the least wins (a = 0 on ties, so AWQ
// never rounds worse than plain rounding by this measure). The reference
// scores the whole block's output (attention or MLP); the summed Linear
// outputs are what the observed inputs give exactly, and need no re-run.
// mean_abs_input: [in], the members' shared input.
Result<ScaleSearch> search_input_scales(std::span<const ScaleMember> members, std::span<const float> mean_abs_input,
                                        int grid = 20);

// SmoothQuant's migration (Xiao et al., 2023, "SmoothQuant: Accurate and
// Efficient Post-Training Quantization for Large Language Models"): per
// input channel j, s_j = max|x_j|^alpha / max_i |W_ij|^(1 - alpha), the
// weight maximum taken over every member's column j, so that dividing the
// input by s moves the activations' outlier channels into the weights, where
// per-row rounding absorbs them. A channel the inputs never reached, or
// whose weights are all zero, keeps s_j = 1; s is clamped to [1e-5, 1e5].
// max_abs_input: [in], the members' shared input; alpha in (0, 1).
Result<std::vector<float>> smoothquant_scales(std::span<const ScaleMember> members,
                                              std::span<const float> max_abs_input, double alpha);

// The members' summed squared output error under a candidate input scale
// s [in]: their weights times diag(s) quantized and run as the engine will
// run them, on kept inputs divided by s, against the float product.
using ScaledOutputError = std::function<Result<double>(std::span<const float> input_scale)>;

struct SmoothingSearch {
  std::vector<float> scales;      // [in]
  double alpha = 0;               // the chosen strength (0: no migration, s = 1)
  double error = 0;               // the output error under `scales`
  double unsmoothed_error = 0;    // the same with s = 1
};

// SmoothQuant's alpha per group (`--smooth auto`): a fixed alpha suits some
// of a model's inputs and hurts others (an input without outlier channels
// only loses weight precision to it), so each group tries alpha = 0, 1/grid,
// ..., (grid-1)/grid and keeps the one whose measured output error is least
// (alpha = 0 on ties: never worse than no migration by this measure).
Result<SmoothingSearch> search_smoothing(std::span<const ScaleMember> members, std::span<const float> max_abs_input,
                                         int grid, const ScaledOutputError& output_error);

}  // namespace tessera

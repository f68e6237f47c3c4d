// quantize_model.hpp: `tessera quantize`: a GGUF model's Linear weights
// quantized by a quant plugin's WeightQuantizer (ABI 3.2), written as a new GGUF.
//
// The model is opened as `tessera run` opens it (its architecture plugin
// builds it), with every Linear wrapped (calibration_linear.hpp). The weights
// quantized are those of the numbered layers (GGUF "blk.N."); the rest
// (embeddings, norms, the output head) are copied as they are. A method that
// wants inputs (GPTQ) calibrates layer by layer: for layer l, every
// calibration sample runs through the model with layers before l already
// quantized, layer l's Linears handing their inputs to their quantizers, and
// the forward stopped after layer l. AWQ then searches each layer's input
// scales (awq_scales.hpp) and folds them into the norms and Linears before,
// which the output file holds rewritten in f32. Input weights stored in a
// block format are dequantized to f32 first (the report lists those types).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugin/registry.hpp"
#include "tessera/quantizer.hpp"

namespace tessera {

struct QuantizeJob {
  std::string input;   // a GGUF file, or a Hugging Face folder (written as GGUF beside OUT first)
  std::string output;  // the GGUF to write (through a temporary file renamed into place)
  QuantizeSpec spec;
  std::string calibration_text;  // for methods that want inputs
  int64_t samples = 128;         // calibration windows ...
  int64_t sample_tokens = 512;   // ... of this many tokens, consecutive in the text
  // A second text, never calibrated on: each quantized Linear's output error
  // on its inputs over held_out_samples windows of sample_tokens (taken
  // through the quantized layers before, as the calibration inputs are),
  // beside rounding to nearest's (held_out_error.hpp). "": not measured.
  // Needs a calibrating method and layer-by-layer calibration.
  std::string held_out_text;
  int64_t held_out_samples = 8;
  // How the calibration passes' block-format products (the input's
  // quantized weights, the layers already quantized into GGUF block
  // formats) take their activations: the ggml plugin's `activations`,
  // "q8x2", "q8" or "f32" (INT8 W8A8's Linears keep their own plugin's).
  // "": "q8", one int8 term: prefill at about twice q8x2's speed, and on
  // Qwen2.5-0.5B the same output errors to three digits and no measured
  // loss in perplexity or KL divergence (docs/quantization.md); with a
  // held-out text "q8x2", the arithmetic its per-Linear errors were always
  // measured in.
  std::string calibration_activations;
  int64_t threads = 0;           // 0: every core
  int32_t awq_grid = 20;         // AWQ: exponents tried, 0, 1/n, ..., (n-1)/n
  bool awq_clip = true;          // AWQ: search each group's clipping (q/k excepted) after the scales
  // INT8 W8A8: SmoothQuant's migration strength alpha in (0, 1); 0: none.
  double smooth = 0;
  // INT8 W8A8, instead of one alpha: per scale group, the alpha of 0, 1/n,
  // ..., (n-1)/n whose measured output error is least; 0: no search.
  int32_t smooth_search = 0;
  bool force = false;            // replace an existing output
  // Calibrate over each layer's stored inputs, one layer at a time, where the
  // model offers it (Model ABI 3.6; about 2 forwards over the text), else by
  // whole forwards stopped after the layer (about L/2). false: whole forwards
  // always (tests compare the two: the same bits).
  bool layer_by_layer = true;
  // GPTQ: calibrate and quantize each layer in stages in forward order
  // (q/k/v, o, gate/up, down), each observing the stages before it
  // quantized (sequential_stages.hpp; the reference's --true-sequential).
  // false: the whole layer at once, every Linear on the original layer's
  // outputs; the default, as it measured as good or better on the 0.5B
  // (docs/quantization.md, "True sequential"). AWQ and SmoothQuant always
  // take the layer at once.
  bool true_sequential = false;
  // The token embedding and the output head (token_embd.weight and
  // output.weight; with tied embeddings token_embd.weight is the head and
  // takes head_format), rounded to nearest into these formats ("ggml.q8_0"),
  // as llama-quantize rounds them (its --token-embedding-type and
  // --output-tensor-type); "": copied as stored. Rows a K format does not
  // hold take its fallback, as the Linears' do; a result in the type the
  // input stores is the input's bytes, copied.
  std::string embedding_format;
  std::string head_format;
};

// What llama-quantize would give the embedding and the head next to Linears in
// `format` ("q4_0", "q4_k", ...; "i8" for INT8 W8A8): the embedding in the
// format itself (Q8_0 beside INT8), the head in Q6_K (Q8_0 beside Q8_0 and
// INT8), each as "ggml.<type>".
std::string default_embedding_format(std::string_view format);
std::string default_head_format(std::string_view format);

// The bits, symmetry and group size a GGUF block format ("q4_0", "q6_k", ...)
// implies for a QuantizeSpec; nullopt for a name that is not one.
struct BlockFormatShape {
  int32_t bits = 4;
  bool symmetric = true;
  int32_t group_size = 32;  // Q3_K and Q6_K: 16
};
std::optional<BlockFormatShape> block_format_shape(std::string_view format);

struct QuantizedWeightReport {
  std::string name;
  std::string source_type;  // as stored in the input
  std::string written_type;  // as stored in the output (a K format's fallback where rows are not whole super-blocks)
  int64_t rows = 0;
  int64_t cols = 0;
  double relative_error = 0;           // QuantizedWeight::relative_error
  double rounding_relative_error = 0;  // QuantizedWeight::rounding_relative_error
  int64_t calibration_rows = 0;        // input rows its quantizer observed
  // On the held-out text's inputs (QuantizeJob::held_out_text), the
  // Linear's measured output error relative to the float output's energy,
  // and the same for rounding to nearest in the same format; unset when not
  // measured.
  std::optional<double> held_out_error;
  std::optional<double> held_out_rounding_error;
  // The same as the mean over held-out tokens of each token's relative
  // output error (held_out_error.hpp, OutputError::mean_row_relative).
  std::optional<double> held_out_token_error;
  std::optional<double> held_out_rounding_token_error;
};

// A weight left as the input stores it: the format cannot hold its shape.
struct KeptWeightReport {
  std::string name;
  std::string type;  // as stored in the input, and so in the output
  int64_t rows = 0;
  int64_t cols = 0;
  std::string why;   // the quant plugin's refusal
};

// One scale group of one layer (AWQ's, or SmoothQuant's for INT8).
struct ScaleGroupReport {
  std::string folds_into;            // the norm or Linear weight that took 1/s
  std::vector<std::string> members;  // the weights scaled by s
  double exponent = 0;               // AWQ: s = mean|x|^exponent (normalised); SmoothQuant: alpha
  // AWQ: the members' rounding output error with s over without; SmoothQuant
  // with its alpha searched: their measured output error with s over without;
  // with one alpha: 1 (not measured).
  double loss_ratio = 1;
  // SmoothQuant only: the inputs' largest channel maximum over the mean
  // channel maximum, before and after dividing by s (how far the outlier
  // channels that per-token rounding suffers from were flattened).
  double activation_range_before = 0;
  double activation_range_after = 0;
};

struct QuantizeReport {
  std::string method;
  bool smooth_searched = false;  // SmoothQuant's alpha chosen per group (QuantizeJob::smooth_search)
  bool rotated_inputs = false;   // rows stored rotated (QuantizeSpec::rotate_inputs)
  std::string format;
  std::vector<QuantizedWeightReport> weights;  // in the order quantized
  std::vector<KeptWeightReport> kept;           // weights the format cannot hold, left as they were
  std::vector<QuantizedWeightReport> rounded;   // the embedding and the head (QuantizeJob::embedding_format)
  std::vector<std::string> dequantized_types;   // block types of the input weights, dequantized first
  std::string converted_from_folder;  // the input, when a Hugging Face folder was written as GGUF first
  uint64_t converted_bytes = 0;       // that GGUF's size (a temporary file beside the output)
  std::vector<ScaleGroupReport> scale_groups;   // AWQ's, in order
  uint64_t quantized_elements = 0;
  uint64_t quantized_bytes = 0;
  uint64_t tensor_elements = 0;  // every tensor of the output
  uint64_t tensor_bytes = 0;
  uint64_t output_file_bytes = 0;
  int64_t calibration_tokens = 0;
  int64_t held_out_tokens = 0;     // QuantizeJob::held_out_text's, 0: not measured
  double calibration_seconds = 0;  // forwards over the calibration samples
  bool layer_by_layer = false;     // calibrated over stored layer inputs (QuantizeJob::layer_by_layer)
  bool true_sequential = false;    // GPTQ's layers in stages (QuantizeJob::true_sequential)
  std::string calibration_activations;  // as the passes ran them (QuantizeJob::calibration_activations)
  double seconds = 0;              // the whole job

  double bits_per_weight() const;       // of the quantized weights
  double file_bits_per_weight() const;  // of every tensor's data
  double mean_relative_error() const;
  // Geometric mean over the weights of relative_error / rounding_relative_error
  // (1 for round-to-nearest; below 1 where calibration helped).
  double mean_gain_over_rounding() const;
  // The same on the held-out text: geometric mean over the weights measured
  // of held_out_error / held_out_rounding_error (nullopt: none measured).
  std::optional<double> mean_held_out_gain_over_rounding() const;
  // The same of held_out_token_error / held_out_rounding_token_error.
  std::optional<double> mean_held_out_token_gain_over_rounding() const;
  // Both gains per kind of weight (its name less "blk.N.": "attn_q.weight",
  // ...), in name order.
  struct KindGain {
    std::string kind;
    int64_t weights = 0;
    double calibration = 1;                // relative_error / rounding_relative_error
    std::optional<double> held_out;        // held_out_error / held_out_rounding_error
    std::optional<double> held_out_tokens;  // held_out_token_error / held_out_rounding_token_error
  };
  std::vector<KindGain> gains_by_kind() const;
  // Geometric mean of the scale groups' loss_ratio (1 with none).
  double mean_scale_loss_ratio() const;
  nlohmann::json to_json() const;
};

struct QuantizeProgress {
  int64_t done = 0;   // layers finished
  int64_t total = 0;  // layers
  std::string_view stage;  // of layer done + 1: "calibrating", "quantizing"; "done" after each layer
  double elapsed_seconds = 0;
};

// Errors: invalid_argument for settings the job cannot run with (the output
// exists without force, a calibration text too short, a format that cannot
// hold the spec, a folder that cannot be written as GGUF), others from the model and plugins.
Result<QuantizeReport> quantize_model(const QuantizeJob& job, PluginRegistry& registry,
                                      const std::function<void(const QuantizeProgress&)>& progress = {});

}  // namespace tessera

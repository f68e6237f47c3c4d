#include "engine/quantize_model.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "engine/awq_scales.hpp"
#include "engine/calibration_linear.hpp"
#include "engine/convert_model.hpp"
#include "engine/held_out_error.hpp"
#include "engine/quantized_output_error.hpp"
#include "engine/sequential_stages.hpp"
#include "engine/quantized_views.hpp"
#include "engine/model_builder.hpp"
#include "engine/session.hpp"
#include "io/output_path.hpp"
#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/hf_quantized.hpp"
#include "model/model_file.hpp"
#include "pipeline/pipeline.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The layer a GGUF tensor belongs to: N in "blk.N.".
std::optional<int> layer_of(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  int layer = 0;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(first, last, layer);
  if (ec != std::errc() || end == first || end == last || *end != '.') return std::nullopt;
  return layer;
}

// llama.cpp's general.file_type for a file whose layers are mostly `type`.
std::optional<uint32_t> llama_file_type(DType type) {
  switch (type) {
    case DType::q4_0: return 2;
    case DType::q4_1: return 3;
    case DType::q8_0: return 7;
    case DType::q5_0: return 8;
    case DType::q5_1: return 9;
    case DType::q3_k: return 11;  // Q3_K_S: Q3_K wherever rows are whole super-blocks
    case DType::q4_k: return 14;  // Q4_K_S: Q4_K wherever rows are whole super-blocks
    case DType::q5_k: return 16;  // Q5_K_S
    case DType::q6_k: return 18;
    default: return std::nullopt;
  }
}

// The type the job wrote its weights in: a K type where any weight holds it
// (the others are its fallbacks for rows that are not whole super-blocks, as
// in llama-quantize's files), else the one type every weight holds.
std::optional<DType> written_type(const std::map<std::string, QuantizedWeight>& done) {
  if (done.empty()) return std::nullopt;
  for (const auto& [name, weight] : done)
    if (weight.dtype == DType::q3_k || weight.dtype == DType::q4_k || weight.dtype == DType::q5_k ||
        weight.dtype == DType::q6_k)
      return weight.dtype;
  return done.begin()->second.dtype;
}

// "blk.0.attn_q.weight" -> "blk.0.attn_q": the name a GPTQ checkpoint's
// packed tensors extend.
std::string checkpoint_base(const std::string& weight) {
  constexpr std::string_view kWeight = ".weight";
  return weight.ends_with(kWeight) ? weight.substr(0, weight.size() - kWeight.size()) : weight;
}

// One weight the job quantizes, with the Linear standing in for it.
struct Target {
  const TensorRef* weight = nullptr;
  const TensorRef* bias = nullptr;
  CalibrationLinear* linear = nullptr;  // owned by the model
  int layer = 0;
};

// QuantizeJob::calibration_activations, "" resolved.
Result<std::string> calibration_activations(const QuantizeJob& job) {
  if (job.calibration_activations.empty()) return std::string(job.held_out_text.empty() ? "q8" : "q8x2");
  if (job.calibration_activations == "q8" || job.calibration_activations == "q8x2" ||
      job.calibration_activations == "f32")
    return job.calibration_activations;
  return InvalidArgument(fmt::format("calibration activations '{}': give q8, q8x2 or f32", job.calibration_activations));
}

// The model as the calibration passes run it: the ggml plugin (the block
// formats' products) first, its activations as the job says.
Result<Pipeline> pipeline_for(const QuantizeJob& job, PluginRegistry& registry) {
  auto activations = calibration_activations(job);
  if (!activations.ok()) return activations.status();
  toml::table run{{"threads", job.threads}};
  toml::table doc{{"model", toml::table{{"path", job.input}}},
                  {"quant", toml::table{{"activations", *activations}}},
                  {"run", std::move(run)}};
  std::ostringstream text;
  text << doc;
  return parse_pipeline(text.str(), "<tessera quantize>", fs::current_path(), {}, registry, /*scan_plugins=*/true);
}

Status check_paths(const QuantizeJob& job) {
  if (job.input.empty() || job.output.empty()) return InvalidArgument("quantize needs an input and an output path");
  return check_output_path(job.output, job.force);
}

// `count` windows of `tokens` tokens, consecutive in `text` (`what`: "the
// calibration text"), BOS first where the model adds one.
Result<std::vector<std::vector<int32_t>>> text_samples(const std::string& text, std::string_view what, int64_t count,
                                                       int64_t tokens, const Session& session) {
  if (count <= 0 || tokens <= 1) return InvalidArgument(fmt::format("{}: give at least one sample of at least 2 tokens", what));
  if (tokens > session.context_length())
    return InvalidArgument(fmt::format("{}: samples of {} tokens do not fit the model's context of {}", what, tokens,
                                       session.context_length()));
  const auto& tokenizer = session.tokenizer();
  const std::vector<int32_t> encoded = tokenizer.encode(text, false, /*parse_special=*/false);
  const int64_t needed = count * tokens;
  if (static_cast<int64_t>(encoded.size()) < needed)
    return InvalidArgument(fmt::format("{} has {} tokens; {} samples of {} tokens need {}: give a longer text or "
                                       "fewer or shorter samples",
                                       what, encoded.size(), count, tokens, needed));
  const bool add_bos = tokenizer.add_bos() && tokenizer.bos_id() >= 0;
  std::vector<std::vector<int32_t>> samples;
  for (int64_t s = 0; s < count; ++s) {
    const auto begin = encoded.begin() + s * tokens;
    samples.emplace_back(begin, begin + tokens);
    if (add_bos) samples.back()[0] = tokenizer.bos_id();
  }
  return samples;
}

// The first quant plugin that makes a WeightQuantizer for `spec`; when none
// does, a plugin's invalid_argument (the format cannot hold the spec) wins
// over unsupported.
Result<std::unique_ptr<WeightQuantizer>> weight_quantizer(const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                                                          const QuantizeSpec& spec, int64_t rows, int64_t cols,
                                                          std::string_view name) {
  std::vector<std::string> why;
  for (const auto& q : quantizers) {
    if (!provides(*q, 2)) continue;
    // An older plugin would not see the request to rotate (ABI 3.8).
    if (spec.rotate_inputs && !provides(*q, 8)) {
      why.push_back("a quant plugin built for an ABI older than 3.8 cannot rotate its inputs (--rotation none)");
      continue;
    }
    auto made = q->weight_quantizer(spec, rows, cols);
    if (made.ok()) return made;
    if (made.status().code() == StatusCode::invalid_argument)
      return InvalidArgument(fmt::format("{} ({})", made.status().message(), name));
    why.push_back(made.status().message());
  }
  return Unsupported(fmt::format("no quant plugin quantizes with method '{}' into '{}'{}{}", spec.method, spec.format,
                                 why.empty() ? "" : ": ", fmt::join(why, "; ")));
}

// The tensors of layer `layer` and their shapes ([out, in] or [n]).
std::map<std::string, std::vector<int64_t>> layer_shapes(const ModelFile& file, int layer) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const TensorRef& t : file.tensors()) {
    if (layer_of(t.name) == layer) shapes[t.name].assign(t.shape.begin(), t.shape.begin() + t.ndim);
  }
  return shapes;
}

// The query and key weights: AWQ leaves their clipping alone (the attention
// scores amplify their errors), as the reference does.
bool searches_clipping(const QuantizeSpec& spec, std::string_view weight) {
  return spec.method == "awq" && weight.find(".attn_q.") == std::string_view::npos &&
         weight.find(".attn_k.") == std::string_view::npos;
}

// A copy of `tensor` pointing at f32 values.
TensorRef f32_view(const TensorRef& tensor, const std::vector<float>& values) {
  TensorRef view = tensor;
  view.dtype = DType::f32;
  view.format = "f32";
  view.data = values.data();
  view.nbytes = values.size() * sizeof(float);
  return view;
}

// What AWQ does to one layer once its Linears have observed their inputs:
// per scale group, the search, then s into the members' weights (columns)
// and quantizers, 1/s into the norm (rewritten) or the Linear before (its
// rows and bias). `weights`: the layer's, f32 [out, in], changed in place.
// Members after a norm get `input_divisors` for the calibration passes
// still to come, which run with the original norm.
struct LayerScaling {
  std::map<std::string, std::vector<float>>* weights;
  std::map<std::string, std::unique_ptr<WeightQuantizer>>* quantizers;
  std::map<std::string, std::vector<float>>* rewritten;  // every layer's, kept for the output
  std::map<std::string, std::vector<float>>* input_divisors;
  // For --held-out: every member's s, and each Linear's whose rows took a
  // group's 1/s (up, before down), that s.
  std::map<std::string, std::vector<float>>* member_scales;
  std::map<std::string, std::vector<float>>* output_scales;
};

// The inputs' largest channel maximum over the mean channel maximum, each divided by s.
double outlier_factor(const std::vector<float>& max_abs, const std::vector<float>& s) {
  double largest = 0, sum = 0;
  for (size_t j = 0; j < max_abs.size(); ++j) {
    const double m = max_abs[j] / s[j];
    largest = std::max(largest, m);
    sum += m;
  }
  return sum > 0 ? largest * static_cast<double>(max_abs.size()) / sum : 0.0;
}

// The job's SmoothQuant settings (smooth, smooth_search) choose SmoothQuant's
// migration instead of AWQ's search.
Status apply_input_scales(const QuantizeJob& job, int layer, const Session& session, CoreModelBuilder& builder,
                        const std::map<std::string, Target, std::less<>>& targets, const LayerScaling& out,
                        QuantizeReport& report) {
  for (const ScaleGroup& group : awq_scale_groups(layer, layer_shapes(session.file(), layer))) {
    std::vector<ScaleMember> members;
    for (const std::string& name : group.members) {
      const auto weight = out.weights->find(name);
      const auto quantizer = out.quantizers->find(name);
      if (weight == out.weights->end() || quantizer == out.quantizers->end()) break;
      if (!provides(*quantizer->second, 3))
        return Unsupported(fmt::format("{}: its quant plugin was built for ABI 3.{}; input scales (AWQ, SmoothQuant) need 3.3",
                                       name, quantizer->second->abi_minor()));
      const auto cols = targets.find(name)->second.weight->shape[1];
      members.push_back({weight->second.data(), quantizer->second.get(),
                         static_cast<int64_t>(weight->second.size()) / cols});
    }
    // A member, or the Linear before, that is not a weight this job quantizes.
    if (members.size() != group.members.size()) continue;
    if (group.fold == ScaleGroup::Fold::rows && !out.weights->contains(group.folds_into)) continue;
    const CalibrationLinear& input = *targets.find(group.members.front())->second.linear;
    ScaleGroupReport done{group.folds_into, group.members};
    std::vector<float> scale;
    const auto failed = [&](const Status& status) {
      return Status(status.code(), fmt::format("{}: {}", group.members.front(), status.message()));
    };
    if (job.smooth_search > 0) {
      std::vector<OutputErrorMember> scored;
      for (size_t i = 0; i < members.size(); ++i)
        scored.push_back({targets.find(group.members[i])->second.weight, members[i].weight, members[i].quantizer});
      auto error = QuantizedOutputError::make(builder, std::move(scored), input.kept_inputs());
      if (!error.ok()) return failed(error.status());
      auto search = search_smoothing(members, input.max_abs_input(), job.smooth_search,
                                     [&](std::span<const float> s) { return (*error)(s); });
      if (!search.ok()) return failed(search.status());
      scale = std::move(search->scales);
      done.exponent = search->alpha;
      if (search->alpha == 0) {  // no migration: nothing to fold
        report.scale_groups.push_back(std::move(done));
        continue;
      }
      done.loss_ratio = search->unsmoothed_error > 0 ? search->error / search->unsmoothed_error : 1.0;
      done.activation_range_before = outlier_factor(input.max_abs_input(), std::vector<float>(scale.size(), 1.0f));
      done.activation_range_after = outlier_factor(input.max_abs_input(), scale);
    } else if (job.smooth > 0) {
      auto made = smoothquant_scales(members, input.max_abs_input(), job.smooth);
      if (!made.ok()) return failed(made.status());
      scale = std::move(made).value();
      done.exponent = job.smooth;
      done.activation_range_before = outlier_factor(input.max_abs_input(), std::vector<float>(scale.size(), 1.0f));
      done.activation_range_after = outlier_factor(input.max_abs_input(), scale);
    } else {
      auto search = search_input_scales(members, input.mean_abs_input(), job.awq_grid);
      if (!search.ok()) return failed(search.status());
      scale = std::move(search->scales);
      done.exponent = search->exponent;
      done.loss_ratio = search->unscaled_loss > 0 ? search->loss / search->unscaled_loss : 1.0;
    }
    const auto cols = static_cast<int64_t>(scale.size());

    for (const std::string& name : group.members) {
      std::vector<float>& w = (*out.weights)[name];
      for (size_t i = 0; i < w.size(); ++i) w[i] *= scale[i % scale.size()];
      TESSERA_RETURN_IF_ERROR((*out.quantizers)[name]->scale_inputs(scale.data()));
      if (group.fold == ScaleGroup::Fold::norm) (*out.input_divisors)[name] = scale;
      (*out.member_scales)[name] = scale;
    }
    if (group.fold == ScaleGroup::Fold::norm) {
      const TensorRef* norm = session.file().find(group.folds_into);
      std::vector<float>& values = (*out.rewritten)[group.folds_into];
      values.resize(static_cast<size_t>(cols));
      TESSERA_RETURN_IF_ERROR(builder.dequantize(*norm, values.data()));
      for (int64_t j = 0; j < cols; ++j) values[j] /= scale[j];
    } else {
      std::vector<float>& before = (*out.weights)[group.folds_into];
      const auto row_length = static_cast<int64_t>(before.size()) / cols;
      for (int64_t r = 0; r < cols; ++r)
        for (int64_t c = 0; c < row_length; ++c) before[r * row_length + c] /= scale[r];
      (*out.output_scales)[group.folds_into] = scale;
      if (const TensorRef* bias = targets.find(group.folds_into)->second.bias) {
        std::vector<float>& values = (*out.rewritten)[bias->name];
        if (values.empty()) {
          values.resize(static_cast<size_t>(cols));
          TESSERA_RETURN_IF_ERROR(builder.dequantize(*bias, values.data()));
        }
        for (int64_t r = 0; r < cols; ++r) values[r] /= scale[r];
      }
    }
    report.scale_groups.push_back(std::move(done));
  }
  return Status::Ok();
}

// Whether the job writes each Linear as a GPTQ checkpoint's packed tensors
// (named after the weight, less ".weight") instead of one block tensor.
bool writes_checkpoint_tensors(const QuantizeJob& job) { return job.spec.format == kGptqFormat; }

// `rewritten`: tensors (norms, biases) whose values AWQ changed, written as f32.
// `parts`: what a format stores beside a weight (INT8's row scales), written
// after it under the weight's name + suffix.
// `replaced`: the input's tensors stored beside weights that were quantized
// (an INT8 input's row scales), which the new weights do not keep.
// `rounded`: the embedding and the head, rounded to nearest (they do not
// decide general.file_type).
Status write_output(const QuantizeJob& job, const GgufFile& input, const std::map<std::string, QuantizedWeight>& done,
                    const std::map<std::string, QuantizedWeight>& rounded,
                    const std::map<std::string, std::vector<QuantizedPart>>& parts,
                    const std::set<std::string, std::less<>>& replaced,
                    const std::map<std::string, std::vector<float>>& rewritten, QuantizeReport& report) {
  GgufWriter writer(static_cast<uint32_t>(input.alignment()));
  // general.file_type names llama.cpp's file types; a format it has none for
  // (INT8 W8A8) drops the input's rather than keep a false one.
  const bool checkpoint_tensors = writes_checkpoint_tensors(job);
  const std::optional<DType> type = written_type(done);
  const std::optional<uint32_t> file_type = type && !checkpoint_tensors ? llama_file_type(*type) : std::nullopt;
  for (const auto& [key, value] : input.metadata()) {
    if (key == "general.file_type" && type && !file_type) continue;
    // What an earlier `tessera quantize` of the input recorded (its method,
    // rotation, SmoothQuant settings) describes weights this run replaces:
    // only this run's keys, written below.
    if (key.starts_with("tessera.quantize.")) continue;
    writer.set(key, value);
  }
  for (const auto& t : input.tensors()) {
    if (replaced.contains(t.name)) continue;
    const auto it = done.find(t.name);
    const auto changed = rewritten.find(t.name);
    const auto round = rounded.find(t.name);
    report.tensor_elements += t.numel();
    if (round != rounded.end()) {
      report.tensor_bytes += round->second.data.size();
      TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, round->second.dtype, t.dims, round->second.data));
    } else if (changed != rewritten.end()) {
      const auto bytes = std::as_bytes(std::span(changed->second));
      report.tensor_bytes += bytes.size();
      TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, DType::f32, t.dims, bytes));
    } else if (it == done.end()) {
      report.tensor_bytes += t.nbytes;
      TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, t.dtype, t.dims, {t.data, t.nbytes}));
    } else {
      // GPTQ checkpoint tensors replace the weight, named as such checkpoints name them.
      const std::string part_base = checkpoint_tensors ? checkpoint_base(t.name) : t.name;
      if (!checkpoint_tensors) {
        report.tensor_bytes += it->second.data.size();
        TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, it->second.dtype, t.dims, it->second.data));
      }
      if (const auto p = parts.find(t.name); p != parts.end()) {
        for (const QuantizedPart& part : p->second) {
          std::vector<uint64_t> dims(part.shape.rbegin(), part.shape.rend());  // GGUF: innermost first
          report.tensor_bytes += part.data.size();
          TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(part_base + part.suffix, part.dtype, std::move(dims), part.data));
        }
      }
    }
  }
  if (file_type) writer.set_u32("general.file_type", *file_type);
  if (checkpoint_tensors) {
    // What the loader reads back (model/hf_quantized.hpp), as config.json's
    // quantization_config says it in a Hugging Face folder.
    const nlohmann::json config = {{"quant_method", "gptq"},        {"bits", job.spec.bits},
                                   {"group_size", job.spec.group_size}, {"sym", job.spec.symmetric},
                                   {"desc_act", false},            {"checkpoint_format", "gptq_v2"},
                                   {"true_sequential", report.true_sequential}};
    writer.set_string(std::string(kGgufQuantizationConfigKey), config.dump());
  }
  writer.set_string("tessera.quantize.method", job.spec.method);
  writer.set_string("tessera.quantize.format", job.spec.format);
  if (job.spec.method == "gptq") {
    writer.set_bool("tessera.quantize.act_order", job.spec.act_order);
    writer.set_f32("tessera.quantize.damp", static_cast<float>(job.spec.damp));
    writer.set_bool("tessera.quantize.true_sequential", report.true_sequential);
  }
  if (job.spec.rotate_inputs) writer.set_bool("tessera.quantize.rotate_inputs", true);
  if (job.smooth > 0) writer.set_f32("tessera.quantize.smoothquant_alpha", static_cast<float>(job.smooth));
  if (job.smooth_search > 0)
    writer.set_u32("tessera.quantize.smoothquant_alpha_search", static_cast<uint32_t>(job.smooth_search));
  if (report.calibration_tokens > 0) {
    writer.set_u32("tessera.quantize.calibration_tokens", static_cast<uint32_t>(report.calibration_tokens));
    writer.set_string("tessera.quantize.calibration_activations", report.calibration_activations);
  }
  TESSERA_RETURN_IF_ERROR(writer.write(job.output));
  std::error_code ec;
  report.output_file_bytes = fs::file_size(job.output, ec);
  return Status::Ok();
}

// The token embedding and the head, rounded to nearest into
// job.embedding_format / job.head_format (QuantizeJob says how), into
// `rounded`; a tensor left as stored gets no entry. They are not Linears of
// numbered layers, so calibration never sees them, as llama-quantize without
// an importance matrix treats them.
Status round_embedding_and_head(const QuantizeJob& job, Session& s, CoreModelBuilder& builder,
                                std::map<std::string, QuantizedWeight>& rounded, QuantizeReport& report) {
  const TensorRef* head = s.file().find("output.weight");
  const TensorRef* embedding = s.file().find("token_embd.weight");
  std::vector<std::pair<const TensorRef*, std::string_view>> todo;
  if (head != nullptr) todo.emplace_back(head, job.head_format);
  if (embedding != nullptr) todo.emplace_back(embedding, head != nullptr ? job.embedding_format : job.head_format);
  for (const auto& [t, format] : todo) {
    if (format.empty() || t->ndim != 2) continue;
    const std::string_view type = format.starts_with("ggml.") ? format.substr(5) : format;
    const auto shape = block_format_shape(type);
    if (!shape) return InvalidArgument(fmt::format("{}: '{}' is not a GGUF block format to round it into", t->name, format));
    QuantizeSpec spec;
    spec.method = "rtn";
    spec.format = std::string(format);
    spec.bits = shape->bits;
    spec.symmetric = shape->symmetric;
    spec.group_size = shape->group_size;
    auto quantizer = weight_quantizer(s.quantizers(), spec, t->shape[0], t->shape[1], t->name);
    if (!quantizer.ok()) return quantizer.status();
    std::vector<float> values(static_cast<size_t>(t->numel()));  // [rows, cols]
    TESSERA_RETURN_IF_ERROR(builder.dequantize(*t, values.data()));
    auto quantized = (*quantizer)->quantize(values.data());
    if (!quantized.ok())
      return Status(quantized.status().code(), fmt::format("{}: {}", t->name, quantized.status().message()));
    if (quantized->dtype == t->dtype) continue;  // the input's bytes already are this type
    report.rounded.push_back({t->name, std::string(dtype_name(t->dtype)), std::string(dtype_name(quantized->dtype)),
                              t->shape[0], t->shape[1], quantized->relative_error, quantized->relative_error, 0,
                              /*held out: not measured*/ {}, {}, {}, {}});
    rounded[t->name] = std::move(quantized).value();
  }
  return Status::Ok();
}

// Runs one calibration pass, which a Linear in the stop role may end early
// (CalibrationLinear sets `stopped`): its error only when it failed otherwise.
template <typename Pass>
Status run_pass(bool& stopped, Pass&& pass) {
  stopped = false;
  Status ran = pass();
  return ran.ok() || stopped ? Status::Ok() : ran;
}

// The calibration samples' inputs to one layer, [samples][tokens, hidden],
// moved on a layer at a time (Session::run_layers).
class LayerInputs {
 public:
  // `stopped`: set by a Linear that ends a pass (CalibrationLinear's stop role).
  LayerInputs(Session& session, const std::vector<std::vector<int32_t>>& samples, bool& stopped)
      : session_(session), samples_(samples), stopped_(stopped) {}

  // The inputs of layer 0: the samples' embeddings.
  Status start() {
    const auto width = static_cast<size_t>(session_.model().hidden_size());
    hidden_.resize(samples_.size());
    for (size_t i = 0; i < samples_.size(); ++i) {
      hidden_[i].resize(samples_[i].size() * width);
      TESSERA_RETURN_IF_ERROR(session_.embed(samples_[i], hidden_[i].data()));
    }
    layer_ = 0;
    return Status::Ok();
  }
  // Runs the layers before `layer` not run yet (as their Linears are now:
  // quantized), so the inputs are layer `layer`'s.
  Status advance_to(int layer) {
    if (layer < layer_) return Internal("calibration: layers must be calibrated in order");
    if (layer == layer_) return Status::Ok();
    for (size_t i = 0; i < samples_.size(); ++i)
      TESSERA_RETURN_IF_ERROR(session_.run_layers(samples_[i], layer_, layer, hidden_[i].data()));
    layer_ = layer;
    return Status::Ok();
  }
  // Runs layer `layer` (advance_to'd) on a copy of its inputs, for what its
  // Linears observe on the way, up to a Linear that ends the pass (a later
  // true-sequential stage's); the inputs stay the layer's.
  Status observe(int layer) {
    if (layer != layer_) return Internal("calibration: the stored inputs are another layer's");
    for (size_t i = 0; i < samples_.size(); ++i) {
      scratch_ = hidden_[i];
      TESSERA_RETURN_IF_ERROR(
          run_pass(stopped_, [&] { return session_.run_layers(samples_[i], layer, layer + 1, scratch_.data()); }));
    }
    return Status::Ok();
  }

 private:
  Session& session_;
  const std::vector<std::vector<int32_t>>& samples_;
  std::vector<std::vector<float>> hidden_;  // [samples][tokens, hidden]: the inputs of layer_
  std::vector<float> scratch_;              // [tokens, hidden]
  bool& stopped_;
  int layer_ = 0;
};

}  // namespace

std::optional<BlockFormatShape> block_format_shape(std::string_view format) {
  static constexpr std::array<std::string_view, 9> kFormats = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0",
                                                               "q3_k", "q4_k", "q5_k", "q6_k"};
  if (std::find(kFormats.begin(), kFormats.end(), format) == kFormats.end()) return std::nullopt;
  BlockFormatShape shape;
  shape.bits = format[1] - '0';
  shape.symmetric = format.ends_with("_0") || format == "q3_k" || format == "q6_k";
  if (format == "q3_k" || format == "q6_k") shape.group_size = 16;  // sub-blocks of 16 under one scale
  return shape;
}

std::string default_embedding_format(std::string_view format) {
  return format == "i8" ? "ggml.q8_0" : "ggml." + std::string(format);
}

std::string default_head_format(std::string_view format) {
  return format == "i8" || format == "q8_0" ? "ggml.q8_0" : "ggml.q6_k";
}

double QuantizeReport::bits_per_weight() const {
  return quantized_elements > 0 ? 8.0 * static_cast<double>(quantized_bytes) / static_cast<double>(quantized_elements)
                                : 0.0;
}

double QuantizeReport::file_bits_per_weight() const {
  return tensor_elements > 0 ? 8.0 * static_cast<double>(tensor_bytes) / static_cast<double>(tensor_elements) : 0.0;
}

double QuantizeReport::mean_relative_error() const {
  if (weights.empty()) return 0.0;
  double sum = 0;
  for (const auto& w : weights) sum += w.relative_error;
  return sum / static_cast<double>(weights.size());
}

namespace {

// The geometric mean of ratios a / b, pairs with a non-positive member left out.
class RatioMean {
 public:
  void add(double a, double b) {
    if (!(a > 0) || !(b > 0)) return;
    log_sum_ += std::log(a / b);
    ++n_;
  }
  void add(const std::optional<double>& a, const std::optional<double>& b) {
    if (a && b) add(*a, *b);
  }
  std::optional<double> value() const {
    if (n_ == 0) return std::nullopt;
    return std::exp(log_sum_ / static_cast<double>(n_));
  }

 private:
  double log_sum_ = 0;
  int64_t n_ = 0;
};

nlohmann::json optional_json(const std::optional<double>& value) { return value ? nlohmann::json(*value) : nlohmann::json(); }

// "blk.3.attn_q.weight" -> "attn_q.weight".
std::string weight_kind(const std::string& name) {
  if (!name.starts_with("blk.")) return name;
  const auto dot = name.find('.', 4);
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

}  // namespace

double QuantizeReport::mean_gain_over_rounding() const {
  RatioMean mean;
  for (const auto& w : weights) mean.add(w.relative_error, w.rounding_relative_error);
  return mean.value().value_or(1.0);
}

std::optional<double> QuantizeReport::mean_held_out_gain_over_rounding() const {
  RatioMean mean;
  for (const auto& w : weights) mean.add(w.held_out_error, w.held_out_rounding_error);
  return mean.value();
}

std::optional<double> QuantizeReport::mean_held_out_token_gain_over_rounding() const {
  RatioMean mean;
  for (const auto& w : weights) mean.add(w.held_out_token_error, w.held_out_rounding_token_error);
  return mean.value();
}

std::vector<QuantizeReport::KindGain> QuantizeReport::gains_by_kind() const {
  struct Means {
    int64_t weights = 0;
    RatioMean calibration, held_out, held_out_tokens;
  };
  std::map<std::string, Means> kinds;
  for (const auto& w : weights) {
    Means& m = kinds[weight_kind(w.name)];
    ++m.weights;
    m.calibration.add(w.relative_error, w.rounding_relative_error);
    m.held_out.add(w.held_out_error, w.held_out_rounding_error);
    m.held_out_tokens.add(w.held_out_token_error, w.held_out_rounding_token_error);
  }
  std::vector<KindGain> out;
  for (const auto& [kind, m] : kinds)
    out.push_back(
        {kind, m.weights, m.calibration.value().value_or(1.0), m.held_out.value(), m.held_out_tokens.value()});
  return out;
}

double QuantizeReport::mean_scale_loss_ratio() const {
  double log_sum = 0;
  int64_t n = 0;
  for (const auto& g : scale_groups) {
    if (g.loss_ratio <= 0) continue;
    log_sum += std::log(g.loss_ratio);
    ++n;
  }
  return n > 0 ? std::exp(log_sum / static_cast<double>(n)) : 1.0;
}

nlohmann::json QuantizeReport::to_json() const {
  nlohmann::json per_weight = nlohmann::json::array();
  for (const auto& w : weights)
    per_weight.push_back({{"name", w.name},
                          {"source_type", w.source_type},
                          {"written_type", w.written_type},
                          {"shape", {w.rows, w.cols}},
                          {"relative_error", w.relative_error},
                          {"rounding_relative_error", w.rounding_relative_error},
                          {"calibration_rows", w.calibration_rows},
                          {"held_out_error", optional_json(w.held_out_error)},
                          {"held_out_rounding_error",
                           optional_json(w.held_out_rounding_error)},
                          {"held_out_token_error", optional_json(w.held_out_token_error)},
                          {"held_out_rounding_token_error", optional_json(w.held_out_rounding_token_error)}});
  nlohmann::json kept_weights = nlohmann::json::array();
  for (const auto& k : kept)
    kept_weights.push_back({{"name", k.name}, {"type", k.type}, {"shape", {k.rows, k.cols}}, {"why", k.why}});
  nlohmann::json rounded_weights = nlohmann::json::array();
  for (const auto& r : rounded)
    rounded_weights.push_back({{"name", r.name},
                               {"source_type", r.source_type},
                               {"written_type", r.written_type},
                               {"shape", {r.rows, r.cols}},
                               {"relative_error", r.relative_error}});
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : scale_groups)
    groups.push_back(
        {{"folds_into", g.folds_into},
         {"members", g.members},
         {"exponent", g.exponent},
         {"loss_ratio", g.loss_ratio},
         {"activation_range_before", g.activation_range_before},
         {"activation_range_after", g.activation_range_after}});
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindGain& k : gains_by_kind())
    kinds.push_back({{"kind", k.kind},
                     {"weights", k.weights},
                     {"calibration", k.calibration},
                     {"held_out", optional_json(k.held_out)},
                     {"held_out_tokens", optional_json(k.held_out_tokens)}});
  return {{"method", method},
          {"format", format},
          {"rotated_inputs", rotated_inputs},
          {"weights_quantized", weights.size()},
          {"weights_kept", kept_weights},
          {"weights_rounded", rounded_weights},
          {"bits_per_weight", bits_per_weight()},
          {"file_bits_per_weight", file_bits_per_weight()},
          {"output_file_bytes", output_file_bytes},
          {"dequantized_types", dequantized_types},
          {"converted_from_folder", converted_from_folder},
          {"converted_bytes", converted_bytes},
          {"calibration_tokens", calibration_tokens},
          {"calibration_seconds", calibration_seconds},
          {"calibration_layer_by_layer", layer_by_layer},
          {"calibration_true_sequential", true_sequential},
          {"calibration_activations", calibration_tokens > 0 ? nlohmann::json(calibration_activations) : nlohmann::json()},
          {"seconds", seconds},
          {"mean_relative_error", mean_relative_error()},
          {"mean_gain_over_rounding", mean_gain_over_rounding()},
          {"held_out_tokens", held_out_tokens},
          {"mean_held_out_gain_over_rounding", optional_json(mean_held_out_gain_over_rounding())},
          {"mean_held_out_token_gain_over_rounding", optional_json(mean_held_out_token_gain_over_rounding())},
          {"gains_by_kind", kinds},
          {"mean_scale_loss_ratio", mean_scale_loss_ratio()},
          {"scale_groups", groups},
          {"weights", per_weight}};
}

// The job on a GGUF input (quantize_model() converts a folder first).
static Result<QuantizeReport> quantize_gguf(const QuantizeJob& job, PluginRegistry& registry,
                                            const std::function<void(const QuantizeProgress&)>& progress) {
  const auto start = Clock::now();
  TESSERA_RETURN_IF_ERROR(check_paths(job));
  auto pipeline = pipeline_for(job, registry);
  if (!pipeline.ok()) return pipeline.status();

  // Every Linear of the model, by weight name, wrapped.
  bool stopped = false;
  std::map<std::string, Target, std::less<>> targets;
  auto wrap = [&](const TensorRef& weight, const TensorRef* bias,
                  std::unique_ptr<Linear> made) -> Result<std::unique_ptr<Linear>> {
    auto wrapped = std::make_unique<CalibrationLinear>(std::move(made), &stopped);
    if (const auto layer = layer_of(weight.name))
      targets[weight.name] = Target{&weight, bias, wrapped.get(), *layer};
    return std::unique_ptr<Linear>(std::move(wrapped));
  };
  auto session = Session::open(*pipeline, registry, wrap);
  if (!session.ok()) return session.status();
  Session& s = **session;
  const auto& gguf = s.file().gguf();
  if (!gguf) return InvalidArgument(fmt::format("{}: tessera quantize reads GGUF files", job.input));
  // The file's tensors are packed ones the loader repacked into blocks under
  // other names: what the writer copies from the file would not be them.
  if (!s.file().repacked_from().empty())
    return Unsupported(fmt::format("{}: a {} checkpoint; its weights were repacked into blocks at load, and "
                                   "quantizing them again is not supported (quantize the float model instead)",
                                   job.input, s.file().repacked_from()));
  if (targets.empty())
    return InvalidArgument(fmt::format("{}: the model has no Linear weights in numbered layers (blk.N.) to quantize",
                                       job.input));

  QuantizeReport report;
  report.method = job.spec.method;
  report.calibration_activations = *calibration_activations(job);  // checked by pipeline_for
  report.smooth_searched = job.smooth_search > 0;
  report.rotated_inputs = job.spec.rotate_inputs;
  report.format = job.spec.format;

  // Fails fast, before any calibration, when no plugin can do what is asked:
  // the settings are tried on a shape every format holds (whole groups of
  // 32 and 128, whole 256-column super-blocks), so that a refusal of a
  // weight's own shape later means only that this weight does not fit.
  constexpr int64_t kAnyFormatsShape = 256;
  auto probe = weight_quantizer(s.quantizers(), job.spec, kAnyFormatsShape, kAnyFormatsShape, "the settings");
  if (!probe.ok()) return probe.status();
  // SmoothQuant's migration needs the inputs' channel maxima even though
  // the INT8 quantizer rounds without them.
  const bool smoothing = job.smooth > 0 || job.smooth_search > 0;
  const bool calibrate = (*probe)->wants_inputs() || smoothing;
  if ((job.smooth != 0 || job.smooth_search != 0) && job.spec.method != "int8")
    return InvalidArgument("SmoothQuant's migration (smooth) is an INT8 W8A8 setting, not " + job.spec.method + "'s");
  if (job.smooth != 0 && !(job.smooth > 0 && job.smooth < 1))
    return InvalidArgument(fmt::format("SmoothQuant's alpha {} is outside (0, 1)", job.smooth));
  if (job.smooth_search < 0 || job.smooth_search > 100)
    return InvalidArgument(fmt::format("SmoothQuant's alpha search over {} values: give 1 to 100", job.smooth_search));
  if (job.smooth != 0 && job.smooth_search != 0)
    return InvalidArgument("SmoothQuant: give one alpha or search for it per group, not both");
  if (job.spec.method == "awq" && (job.awq_grid < 1 || job.awq_grid > 1000))
    return InvalidArgument(fmt::format("AWQ's grid of {} exponents: give 1 to 1000", job.awq_grid));
  if (job.spec.method == "awq" && !provides(**probe, 3))
    return Unsupported(fmt::format("the quant plugin writing '{}' was built for ABI 3.{}; AWQ's scale search needs 3.3",
                                   job.spec.format, (*probe)->abi_minor()));
  probe->reset();

  // Layers in order, each with its weights in name order: those the format
  // holds. A weight whose shape it cannot hold (rows that are not whole
  // groups: Mamba-1's dt projection has 8 columns) stays as the input stores
  // it, as llama-quantize leaves such tensors, and the report names it.
  std::map<int, std::vector<Target*>> layers;
  for (auto& [name, target] : targets) {
    const TensorRef& w = *target.weight;
    auto fits = weight_quantizer(s.quantizers(), job.spec, w.shape[0], w.shape[1], w.name);
    if (fits.ok()) {
      layers[target.layer].push_back(&target);
    } else if (fits.status().code() == StatusCode::invalid_argument) {
      report.kept.push_back({w.name, std::string(dtype_name(w.dtype)), w.shape[0], w.shape[1], fits.status().message()});
    } else {
      return fits.status();
    }
  }
  if (layers.empty())
    return InvalidArgument(fmt::format("{}: no weight of the model fits {}; the first: {}", job.input, job.spec.format,
                                       report.kept.front().why));
  std::set<std::string> dequantized;
  for (const auto& [layer, weights] : layers) {
    for (const Target* t : weights)
      if (is_block_format(t->weight->dtype)) dequantized.insert(std::string(dtype_name(t->weight->dtype)));
  }
  report.dequantized_types.assign(dequantized.begin(), dequantized.end());
  std::vector<std::vector<int32_t>> samples;
  if (calibrate) {
    if (job.calibration_text.empty())
      return InvalidArgument(fmt::format("method '{}'{} calibrates: give it a text (--calibration FILE)", job.spec.method,
                                         smoothing ? " with SmoothQuant" : ""));
    auto made = text_samples(job.calibration_text, "the calibration text", job.samples, job.sample_tokens, s);
    if (!made.ok()) return made.status();
    samples = std::move(made).value();
    report.calibration_tokens = job.samples * job.sample_tokens;
  }
  const bool measure_held_out = !job.held_out_text.empty();
  std::vector<std::vector<int32_t>> held_out_samples;
  if (measure_held_out) {
    if (!calibrate)
      return InvalidArgument(fmt::format("--held-out compares a calibrated method with rounding; '{}' does not calibrate",
                                         job.spec.method));
    auto made = text_samples(job.held_out_text, "the held-out text", job.held_out_samples, job.sample_tokens, s);
    if (!made.ok()) return made.status();
    held_out_samples = std::move(made).value();
    report.held_out_tokens = job.held_out_samples * job.sample_tokens;
  }
  // Layer by layer: each sample's input to the next layer to run, kept
  // between layers, so layer l's pass runs layer l-1 (quantized) and layer
  // l (observing) instead of layers 0..l. Layers must be numbered 0..L-1 with
  // none missing, as the model counts them.
  const int32_t separable = s.separable_layers();
  const bool layered = calibrate && job.layer_by_layer && separable > 0 && layers.rbegin()->first < separable;
  if (measure_held_out && !layered)
    return InvalidArgument("--held-out needs layer-by-layer calibration, which this model (or the job) does not offer");
  LayerInputs layer_inputs(s, samples, stopped);
  if (layered) TESSERA_RETURN_IF_ERROR(layer_inputs.start());
  report.layer_by_layer = layered;
  // GPTQ quantizes each layer in stages (sequential_stages.hpp); AWQ's and
  // SmoothQuant's scales fold across the layer's Linears, so they take the
  // layer at once, as their references do.
  const bool sequential = calibrate && job.true_sequential && job.spec.method == "gptq";
  report.true_sequential = sequential;
  // A pass that ends early (at a later stage's Linear, or by whole forwards
  // at layer l+1) ends its sample's prefill there: the chunks after the
  // first would never run, and the Linears observe only the first chunk.
  if ((sequential || (calibrate && !layered)) && job.sample_tokens > Session::kPrefillChunk)
    return InvalidArgument(fmt::format("--sample-tokens {}: {} calibrates windows of at most {} tokens (one prefill "
                                       "chunk); give {} or fewer",
                                       job.sample_tokens,
                                       sequential ? "true-sequential GPTQ" : "calibration by whole forwards",
                                       Session::kPrefillChunk, Session::kPrefillChunk));
  LayerInputs held_out_inputs(s, held_out_samples, stopped);
  if (measure_held_out) TESSERA_RETURN_IF_ERROR(held_out_inputs.start());

  CoreModelBuilder builder(s.file(), s.quantizers(), {});
  std::map<std::string, QuantizedWeight> done;  // node-stable: the quantized Linears point into it
  std::map<std::string, std::vector<float>> rewritten;  // AWQ's norms and biases, f32; node-stable too
  std::map<std::string, std::vector<QuantizedPart>> parts;  // beside each weight (INT8's scales); node-stable
  std::map<std::string, std::vector<TensorRef>> part_views;  // views of `parts` the quantized Linears read
  std::set<std::string, std::less<>> replaced;  // the input's parts of the weights quantized
  // SmoothQuant's alpha search runs the candidates on up to
  // kSmoothSearchRows input rows, every keep_every-th, spread evenly over
  // the samples.
  constexpr int64_t kSmoothSearchRows = 2048;
  const int64_t calibration_rows = job.samples * job.sample_tokens;
  const int64_t keep_every =
      job.smooth_search > 0 ? std::max<int64_t>(1, (calibration_rows + kSmoothSearchRows - 1) / kSmoothSearchRows) : 0;
  int64_t layers_done = 0;
  for (auto& [layer, weights] : layers) {
    // The held-out rows each weight reads, [rows, in], kept once per input:
    // the members of a scale group (q/k/v, gate/up) read the same rows, kept
    // by the group's first member (held_out_source).
    std::map<std::string, std::vector<float>> held_out_rows;
    std::map<std::string, std::string> held_out_source;
    if (measure_held_out) {
      for (const Target* t : weights) held_out_source[t->weight->name] = t->weight->name;
      for (const ScaleGroup& group : awq_scale_groups(layer, layer_shapes(s.file(), layer))) {
        if (!held_out_source.contains(group.members.front())) continue;
        for (const std::string& member : group.members)
          if (held_out_source.contains(member)) held_out_source[member] = group.members.front();
      }
    }
    const auto held_out_rows_of = [&](const std::string& weight) -> const std::vector<float>& {
      return held_out_rows[held_out_source.at(weight)];
    };
    std::map<std::string, std::unique_ptr<WeightQuantizer>> quantizers;
    for (Target* t : weights) {
      QuantizeSpec spec = job.spec;
      spec.search_clipping = job.awq_clip && searches_clipping(spec, t->weight->name);
      auto q = weight_quantizer(s.quantizers(), spec, t->weight->shape[0], t->weight->shape[1], t->weight->name);
      if (!q.ok()) return q.status();
      quantizers[t->weight->name] = std::move(q).value();
    }
    // The layer's weights in the stages they are calibrated and quantized in:
    // all at once, or GPTQ's true-sequential stages (sequential_stages.hpp).
    std::vector<std::string> names;
    for (const Target* t : weights) names.push_back(t->weight->name);
    const std::vector<std::vector<size_t>> forward_stages = sequential_stages(names);
    std::vector<std::vector<Target*>> stages;
    if (sequential) {
      for (const std::vector<size_t>& stage : forward_stages) {
        std::vector<Target*>& members = stages.emplace_back();
        for (const size_t i : stage) members.push_back(weights[i]);
      }
    } else {
      stages.push_back(weights);
    }
    // Nothing reads the products of the layer's last stage (the down
    // projection, Mamba's out projection) but the layer's output, which a
    // pass observing the layer throws away (the next layer's inputs come from
    // its quantized weights), so they are not computed. Where that is not
    // known (output_only_weights), every product is.
    std::set<std::string> unread_products;
    for (const size_t i : output_only_weights(names)) unread_products.insert(names[i]);
    // The rows SmoothQuant's search keeps, by the first Linear of each
    // scale group (the others read the same).
    std::set<std::string> keepers;
    if (keep_every > 0) {
      for (const ScaleGroup& group : awq_scale_groups(layer, layer_shapes(s.file(), layer)))
        keepers.insert(group.members.front());
    }
    if (calibrate) {
      for (auto& [name, target] : targets) {
        if (target.layer > layer) target.linear->stop();
        if (target.layer <= layer) target.linear->use_reference();  // a kept weight's layer is reached
      }
    }
    for (const std::vector<Target*>& stage : stages) {
      if (calibrate) {
        if (progress) progress({layers_done, static_cast<int64_t>(layers.size()), "calibrating", seconds_since(start)});
        // The layer's Linears of later stages end the passes (those of earlier
        // ones are quantized by now).
        // An init-capture: clang 14 (the fuzz build) cannot capture `weights`,
        // a structured binding, by name.
        const auto end_passes_after_stage = [&layer_weights = weights] {
          for (Target* t : layer_weights)
            if (t->linear->role() != CalibrationLinear::Role::quantized) t->linear->stop();
        };
        if (measure_held_out) {  // before observing: that starts the statistics AWQ reads
          const auto keeps_rows = [&](const Target* t) {
            return held_out_source.at(t->weight->name) == t->weight->name;
          };
          end_passes_after_stage();
          for (Target* t : stage) {
            if (keeps_rows(t)) {
              t->linear->capture();
            } else {
              t->linear->use_reference();
            }
          }
          TESSERA_RETURN_IF_ERROR(held_out_inputs.advance_to(layer));
          TESSERA_RETURN_IF_ERROR(held_out_inputs.observe(layer));
          for (Target* t : stage)
            if (keeps_rows(t)) held_out_rows[t->weight->name] = t->linear->take_captured();
        }
        end_passes_after_stage();
        for (Target* t : stage) {
          const std::string& name = t->weight->name;
          // Of several stages, a stage's products go unread too: its members
          // read one input, and its pass ends at the next stage.
          t->linear->observe_into(quantizers.at(name).get(), keepers.contains(name) ? keep_every : 0,
                                  /*product=*/stages.size() == 1 && !unread_products.contains(name));
        }
        const auto calibration_start = Clock::now();
        if (layered) {
          TESSERA_RETURN_IF_ERROR(layer_inputs.advance_to(layer));
          TESSERA_RETURN_IF_ERROR(layer_inputs.observe(layer));
        } else {
          for (const auto& sample : samples)
            TESSERA_RETURN_IF_ERROR(run_pass(stopped, [&] { return s.run_through(sample); }));
        }
        report.calibration_seconds += seconds_since(calibration_start);
        // Every stage sees every row: a pass that ended early would not.
        for (const Target* t : stage)
          if (t->linear->observed_rows() != calibration_rows)
            return Internal(fmt::format("{}: the calibration passes gave it {} of the samples' {} rows (layer {})",
                                        t->weight->name, t->linear->observed_rows(), calibration_rows, layer));
      }
      if (progress) progress({layers_done, static_cast<int64_t>(layers.size()), "quantizing", seconds_since(start)});
      std::map<std::string, std::vector<float>> originals;  // the stage's weights, f32 [out, in]
      for (Target* t : stage) {
        auto input_parts = builder.parts(*t->weight);
        if (!input_parts.ok()) return input_parts.status();
        for (const TensorRef* part : *input_parts)
          if (part != nullptr) replaced.insert(part->name);
        std::vector<float>& original = originals[t->weight->name];
        original.resize(static_cast<size_t>(t->weight->numel()));
        TESSERA_RETURN_IF_ERROR(builder.dequantize(*t->weight, original.data()));
      }
      // Rounding to nearest's held-out error, on the weights as they are
      // before any scaling: method rtn in the job's format, or for INT8 W8A8
      // (which rounds each row to nearest; what it calibrates is SmoothQuant's
      // scales) the int8 quantizer on the unscaled weights.
      std::map<std::string, OutputError> held_out_rounding;
      if (measure_held_out) {
        for (Target* t : stage) {
          const TensorRef& w = *t->weight;
          QuantizeSpec rounding = job.spec;
          if (rounding.method != "int8") rounding.method = "rtn";
          rounding.act_order = false;
          rounding.search_clipping = false;
          auto q = weight_quantizer(s.quantizers(), rounding, w.shape[0], w.shape[1], w.name);
          if (!q.ok()) return q.status();
          auto error = measure_quantized_output_error(builder, w, **q, originals[w.name].data(),
                                                      held_out_rows_of(w.name), !writes_checkpoint_tensors(job));
          if (!error.ok()) return error.status();
          held_out_rounding[w.name] = *error;
        }
      }
      std::map<std::string, std::vector<float>> input_divisors;
      std::map<std::string, std::vector<float>> member_scales, output_scales;
      if (job.spec.method == "awq" || smoothing) {
        TESSERA_RETURN_IF_ERROR(apply_input_scales(
            job, layer, s, builder, targets,
            {&originals, &quantizers, &rewritten, &input_divisors, &member_scales, &output_scales}, report));
      }
      for (Target* t : stage) {
        const TensorRef& w = *t->weight;
        const std::vector<float>& original = originals[w.name];
        std::optional<TensorRef> rescaled_bias;
        if (t->bias != nullptr) {
          if (const auto b = rewritten.find(t->bias->name); b != rewritten.end())
            rescaled_bias = f32_view(*t->bias, b->second);
        }
        auto made = quantize_to_linear(builder, w, *quantizers[w.name], original.data(),
                                       !writes_checkpoint_tensors(job), rescaled_bias ? &*rescaled_bias : t->bias);
        if (!made.ok()) return made.status();
        // The Linear reads these where they are: moved, the buffers stay.
        const QuantizedWeight& kept = done[w.name] = std::move(made->weight);
        parts[w.name] = std::move(made->parts);
        part_views[w.name] = std::move(made->part_views);
        for (const QuantizedPart& part : parts[w.name]) report.quantized_bytes += part.data.size();
        if (writes_checkpoint_tensors(job) && parts[w.name].empty())
          return Internal(
              fmt::format("{}: the quant plugin gave no GPTQ tensors for format '{}'", w.name, kGptqFormat));
        report.weights.push_back({w.name,
                                  std::string(dtype_name(w.dtype)),
                                  std::string(dtype_name(kept.dtype)),
                                  w.shape[0],
                                  w.shape[1],
                                  kept.relative_error,
                                  kept.rounding_relative_error,
                                  t->linear->observed_rows(),
                                  /*held out: below*/ {},
                                  {},
                                  {},
                                  {}});
        report.quantized_elements += static_cast<uint64_t>(w.numel());
        if (!writes_checkpoint_tensors(job)) report.quantized_bytes += kept.data.size();
        std::unique_ptr<Linear>& linear = made->linear;
        if (measure_held_out) {
          // Against the float Linear the quantized one stands for: the
          // weights as AWQ or SmoothQuant scaled them, on inputs divided by
          // their scales, and the outputs of a Linear whose rows were divided
          // (up) multiplied back: the float model's products again.
          std::vector<float> bias;
          if (t->bias != nullptr) {
            if (rescaled_bias) {
              bias = rewritten.find(t->bias->name)->second;
            } else {
              bias.resize(static_cast<size_t>(t->bias->numel()));
              TESSERA_RETURN_IF_ERROR(builder.dequantize(*t->bias, bias.data()));
            }
          }
          LinearRescaling rescaling;
          if (const auto in = member_scales.find(w.name); in != member_scales.end())
            rescaling.input_divisor = in->second;
          if (const auto out = output_scales.find(w.name); out != output_scales.end())
            rescaling.output_scale = out->second;
          auto error = measure_output_error(*linear, original.data(), bias, rescaling, held_out_rows_of(w.name));
          if (!error.ok())
            return Status(error.status().code(), fmt::format("{}: {}", w.name, error.status().message()));
          QuantizedWeightReport& reported = report.weights.back();
          reported.held_out_error = error->relative();
          reported.held_out_token_error = error->mean_row_relative();
          if (const auto r = held_out_rounding.find(w.name); r != held_out_rounding.end()) {
            reported.held_out_rounding_error = r->second.relative();
            reported.held_out_rounding_token_error = r->second.mean_row_relative();
          }
        }
        t->linear->use_quantized(std::move(linear), std::move(input_divisors[w.name]));
      }
    }
    ++layers_done;
    if (progress) progress({layers_done, static_cast<int64_t>(layers.size()), "done", seconds_since(start)});
  }

  std::map<std::string, QuantizedWeight> rounded;
  TESSERA_RETURN_IF_ERROR(round_embedding_and_head(job, s, builder, rounded, report));
  TESSERA_RETURN_IF_ERROR(write_output(job, *gguf, done, rounded, parts, replaced, rewritten, report));
  report.seconds = seconds_since(start);
  return report;
}

// A Hugging Face folder is written as GGUF beside OUT first (its float
// weights as stored), quantized from there like any GGUF, and removed.
Result<QuantizeReport> quantize_model(const QuantizeJob& job, PluginRegistry& registry,
                                      const std::function<void(const QuantizeProgress&)>& progress) {
  std::error_code ec;
  if (!fs::is_directory(job.input, ec)) return quantize_gguf(job, registry, progress);
  const auto start = Clock::now();
  TESSERA_RETURN_IF_ERROR(check_paths(job));
  if (auto activations = calibration_activations(job); !activations.ok()) return activations.status();  // before converting
  QuantizeJob from_gguf = job;
  from_gguf.input = fmt::format("{}.hf-{}.gguf.tmp", job.output, ::getpid());  // never a file of the user's
  struct RemoveAtExit {
    std::string path;
    ~RemoveAtExit() {
      std::error_code ignored;
      fs::remove(path, ignored);
    }
  } converted{from_gguf.input};
  registry.scan(plugin_search_path({}));  // as the pipeline will: folders scanned before are skipped
  auto conversion = convert_model({job.input, from_gguf.input, /*force=*/true}, registry);
  if (!conversion.ok()) return conversion.status();
  auto report = quantize_gguf(from_gguf, registry, progress);
  if (!report.ok()) {
    // Errors name the input: the folder, not the temporary file.
    std::string message = report.status().message();
    for (size_t at = message.find(from_gguf.input); at != std::string::npos;
         at = message.find(from_gguf.input, at + job.input.size()))
      message.replace(at, from_gguf.input.size(), job.input);
    return Status(report.status().code(), std::move(message));
  }
  report->converted_from_folder = job.input;
  report->converted_bytes = conversion->output_file_bytes;
  report->seconds = seconds_since(start);
  return report;
}

}  // namespace tessera

#include "engine/quantize_model.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "engine/calibration_linear.hpp"
#include "engine/model_builder.hpp"
#include "engine/session.hpp"
#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
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
    default: return std::nullopt;
  }
}

// One weight the job quantizes, with the Linear standing in for it.
struct Target {
  const TensorRef* weight = nullptr;
  const TensorRef* bias = nullptr;
  CalibrationLinear* linear = nullptr;  // owned by the model
  int layer = 0;
};

Result<Pipeline> pipeline_for(const QuantizeJob& job, PluginRegistry& registry) {
  toml::table run{{"threads", job.threads}};
  toml::table doc{{"model", toml::table{{"path", job.input}}}, {"run", std::move(run)}};
  std::ostringstream text;
  text << doc;
  return parse_pipeline(text.str(), "<tessera quantize>", fs::current_path(), {}, registry, /*scan_plugins=*/true);
}

Status check_paths(const QuantizeJob& job) {
  if (job.input.empty() || job.output.empty()) return InvalidArgument("quantize needs an input and an output path");
  std::error_code ec;
  if (fs::is_directory(job.input, ec))
    return InvalidArgument(fmt::format(
        "{}: tessera quantize reads GGUF files; a Hugging Face folder needs its config and tokenizer turned into "
        "GGUF metadata first (llama.cpp's convert_hf_to_gguf.py does it)",
        job.input));
  if (fs::exists(job.output, ec)) {
    if (!job.force) return InvalidArgument(fmt::format("{} exists; pass --force to replace it", job.output));
    if (fs::is_directory(job.output, ec)) return InvalidArgument(fmt::format("{} is a directory", job.output));
  }
  const fs::path parent = fs::absolute(job.output, ec).parent_path();
  if (!fs::is_directory(parent, ec))
    return InvalidArgument(fmt::format("{}: the folder {} does not exist", job.output, parent.string()));
  return Status::Ok();
}

// Windows of `tokens` tokens, consecutive in the text, BOS first where the model adds one.
Result<std::vector<std::vector<int32_t>>> calibration_samples(const QuantizeJob& job, const Session& session) {
  if (job.samples <= 0 || job.sample_tokens <= 1)
    return InvalidArgument("calibration needs at least one sample of at least 2 tokens");
  if (job.sample_tokens > session.context_length())
    return InvalidArgument(fmt::format("calibration samples of {} tokens do not fit the model's context of {}",
                                       job.sample_tokens, session.context_length()));
  const auto& tokenizer = session.tokenizer();
  const std::vector<int32_t> tokens = tokenizer.encode(job.calibration_text, false, /*parse_special=*/false);
  const int64_t needed = job.samples * job.sample_tokens;
  if (static_cast<int64_t>(tokens.size()) < needed)
    return InvalidArgument(fmt::format("the calibration text has {} tokens; {} samples of {} tokens need {}: give a "
                                       "longer text or fewer or shorter samples",
                                       tokens.size(), job.samples, job.sample_tokens, needed));
  const bool add_bos = tokenizer.add_bos() && tokenizer.bos_id() >= 0;
  std::vector<std::vector<int32_t>> samples;
  for (int64_t s = 0; s < job.samples; ++s) {
    const auto begin = tokens.begin() + s * job.sample_tokens;
    samples.emplace_back(begin, begin + job.sample_tokens);
    if (add_bos) samples.back()[0] = tokenizer.bos_id();
  }
  return samples;
}

// The first quant plugin that makes a WeightQuantizer for `spec`; when none
// does, a plugin's invalid_argument (the format cannot hold the spec) wins
// over unsupported.
Result<std::unique_ptr<WeightQuantizer>> weight_quantizer(const std::vector<std::shared_ptr<Quantizer>>& quantizers,
                                                          const QuantizeSpec& spec, const TensorRef& weight) {
  std::vector<std::string> why;
  for (const auto& q : quantizers) {
    if (!provides(*q, 2)) continue;
    auto made = q->weight_quantizer(spec, weight.shape[0], weight.shape[1]);
    if (made.ok()) return made;
    if (made.status().code() == StatusCode::invalid_argument)
      return InvalidArgument(fmt::format("{} ({})", made.status().message(), weight.name));
    why.push_back(made.status().message());
  }
  return Unsupported(fmt::format("no quant plugin quantizes with method '{}' into '{}'{}{}", spec.method, spec.format,
                                 why.empty() ? "" : ": ", fmt::join(why, "; ")));
}

Status write_output(const QuantizeJob& job, const GgufFile& input, const std::map<std::string, QuantizedWeight>& done,
                    QuantizeReport& report) {
  GgufWriter writer(static_cast<uint32_t>(input.alignment()));
  for (const auto& [key, value] : input.metadata()) writer.set(key, value);
  std::map<DType, uint64_t> elements_by_type;
  for (const auto& t : input.tensors()) {
    const auto it = done.find(t.name);
    const DType type = it == done.end() ? t.dtype : it->second.dtype;
    elements_by_type[type] += t.numel();
    report.tensor_elements += t.numel();
    if (it == done.end()) {
      report.tensor_bytes += t.nbytes;
      TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, t.dtype, t.dims, {t.data, t.nbytes}));
    } else {
      report.tensor_bytes += it->second.data.size();
      TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(t.name, it->second.dtype, t.dims, it->second.data));
    }
  }
  if (!done.empty()) {
    if (const auto ftype = llama_file_type(done.begin()->second.dtype)) writer.set_u32("general.file_type", *ftype);
  }
  writer.set_string("tessera.quantize.method", job.spec.method);
  writer.set_string("tessera.quantize.format", job.spec.format);
  if (job.spec.method == "gptq") {
    writer.set_bool("tessera.quantize.act_order", job.spec.act_order);
    writer.set_f32("tessera.quantize.damp", static_cast<float>(job.spec.damp));
    writer.set_u32("tessera.quantize.calibration_tokens", static_cast<uint32_t>(report.calibration_tokens));
  }
  TESSERA_RETURN_IF_ERROR(writer.write(job.output));
  std::error_code ec;
  report.output_file_bytes = fs::file_size(job.output, ec);
  return Status::Ok();
}

}  // namespace

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

double QuantizeReport::mean_gain_over_rounding() const {
  double log_sum = 0;
  int64_t n = 0;
  for (const auto& w : weights) {
    if (w.relative_error <= 0 || w.rounding_relative_error <= 0) continue;
    log_sum += std::log(w.relative_error / w.rounding_relative_error);
    ++n;
  }
  return n > 0 ? std::exp(log_sum / static_cast<double>(n)) : 1.0;
}

nlohmann::json QuantizeReport::to_json() const {
  nlohmann::json per_weight = nlohmann::json::array();
  for (const auto& w : weights)
    per_weight.push_back({{"name", w.name},
                          {"source_type", w.source_type},
                          {"shape", {w.rows, w.cols}},
                          {"relative_error", w.relative_error},
                          {"rounding_relative_error", w.rounding_relative_error},
                          {"calibration_rows", w.calibration_rows}});
  return {{"method", method},
          {"format", format},
          {"weights_quantized", weights.size()},
          {"bits_per_weight", bits_per_weight()},
          {"file_bits_per_weight", file_bits_per_weight()},
          {"output_file_bytes", output_file_bytes},
          {"dequantized_types", dequantized_types},
          {"calibration_tokens", calibration_tokens},
          {"calibration_seconds", calibration_seconds},
          {"seconds", seconds},
          {"mean_relative_error", mean_relative_error()},
          {"mean_gain_over_rounding", mean_gain_over_rounding()},
          {"weights", per_weight}};
}

Result<QuantizeReport> quantize_model(const QuantizeJob& job, PluginRegistry& registry,
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
  if (targets.empty())
    return InvalidArgument(fmt::format("{}: the model has no Linear weights in numbered layers (blk.N.) to quantize",
                                       job.input));

  // Layers in order, each with its weights in name order.
  std::map<int, std::vector<Target*>> layers;
  for (auto& [name, target] : targets) layers[target.layer].push_back(&target);

  QuantizeReport report;
  report.method = job.spec.method;
  report.format = job.spec.format;
  std::set<std::string> dequantized;
  for (const auto& [name, target] : targets) {
    if (is_block_format(target.weight->dtype)) dequantized.insert(std::string(dtype_name(target.weight->dtype)));
  }
  report.dequantized_types.assign(dequantized.begin(), dequantized.end());

  // Fails fast, before any calibration, when no plugin can do what is asked.
  auto probe = weight_quantizer(s.quantizers(), job.spec, *layers.begin()->second.front()->weight);
  if (!probe.ok()) return probe.status();
  const bool calibrate = (*probe)->wants_inputs();
  probe->reset();
  std::vector<std::vector<int32_t>> samples;
  if (calibrate) {
    if (job.calibration_text.empty())
      return InvalidArgument(fmt::format("method '{}' calibrates: give it a text (--calibration FILE)", job.spec.method));
    auto made = calibration_samples(job, s);
    if (!made.ok()) return made.status();
    samples = std::move(made).value();
    report.calibration_tokens = job.samples * job.sample_tokens;
  }

  CoreModelBuilder builder(s.file(), s.quantizers(), {});
  std::map<std::string, QuantizedWeight> done;  // node-stable: the quantized Linears point into it
  int64_t layers_done = 0;
  for (auto& [layer, weights] : layers) {
    std::map<std::string, std::unique_ptr<WeightQuantizer>> quantizers;
    for (Target* t : weights) {
      auto q = weight_quantizer(s.quantizers(), job.spec, *t->weight);
      if (!q.ok()) return q.status();
      quantizers[t->weight->name] = std::move(q).value();
    }
    if (calibrate) {
      if (progress) progress({layers_done, static_cast<int64_t>(layers.size()), "calibrating", seconds_since(start)});
      for (auto& [name, target] : targets) {
        if (target.layer > layer) target.linear->stop();
        if (target.layer == layer) target.linear->observe_into(quantizers[name].get());
      }
      const auto calibration_start = Clock::now();
      for (const auto& sample : samples) {
        stopped = false;
        const Status ran = s.run_through(sample);
        if (!ran.ok() && !stopped) return ran;
      }
      report.calibration_seconds += seconds_since(calibration_start);
    }
    if (progress) progress({layers_done, static_cast<int64_t>(layers.size()), "quantizing", seconds_since(start)});
    for (Target* t : weights) {
      const TensorRef& w = *t->weight;
      std::vector<float> original(static_cast<size_t>(w.numel()));
      TESSERA_RETURN_IF_ERROR(builder.dequantize(w, original.data()));
      auto quantized = quantizers[w.name]->quantize(original.data());
      if (!quantized.ok())
        return Status(quantized.status().code(), fmt::format("{}: {}", w.name, quantized.status().message()));
      const uint64_t expected = dtype_row_bytes(quantized->dtype, static_cast<uint64_t>(w.shape[1])) *
                                static_cast<uint64_t>(w.shape[0]);
      if (quantized->data.size() != expected)
        return Internal(fmt::format("{}: the quant plugin wrote {} bytes for a {} weight of {}x{}, not {}", w.name,
                                    quantized->data.size(), dtype_name(quantized->dtype), w.shape[0], w.shape[1],
                                    expected));
      QuantizedWeight& kept = done[w.name] = std::move(quantized).value();
      report.weights.push_back({w.name, std::string(dtype_name(w.dtype)), w.shape[0], w.shape[1], kept.relative_error,
                                kept.rounding_relative_error, t->linear->observed_rows()});
      report.quantized_elements += static_cast<uint64_t>(w.numel());
      report.quantized_bytes += kept.data.size();

      TensorRef stored = w;
      stored.dtype = kept.dtype;
      stored.format = kept.format;
      stored.data = kept.data.data();
      stored.nbytes = kept.data.size();
      auto linear = builder.make_linear(stored, t->bias);
      if (!linear.ok()) return linear.status();
      t->linear->use_quantized(std::move(linear).value());
    }
    ++layers_done;
    if (progress) progress({layers_done, static_cast<int64_t>(layers.size()), "done", seconds_since(start)});
  }

  TESSERA_RETURN_IF_ERROR(write_output(job, *gguf, done, report));
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace tessera

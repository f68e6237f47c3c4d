// tessera quantize IN OUT --method rtn|gptq|awq|int8 [--format F|gptq | --bits N --sym/--asym] [--group-size N]
//   [--act-order] [--true-sequential] [--damp X] [--awq-grid N] [--smooth A|auto] [--rotation hadamard|none] [--calibration FILE --samples N --sample-tokens L] [--calibration-activations q8|q8x2|f32] [--held-out FILE [--held-out-samples N]] [--threads N] [--force] [--json]
#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include <cstdio>
#include <system_error>
#include <optional>
#include <string>

#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/quantize_model.hpp"
#include "io/read_file.hpp"
#include "plugin/registry.hpp"
#include "tessera/quantizer.hpp"

namespace tessera::cli {
namespace {

// The block format a bit width and symmetry name, when --format is absent.
std::optional<std::string> format_for(int bits, bool symmetric) {
  if (bits == 4) return symmetric ? "q4_0" : "q4_1";
  if (bits == 5) return symmetric ? "q5_0" : "q5_1";
  if (bits == 3 && symmetric) return "q3_k";
  if (bits == 6 && symmetric) return "q6_k";
  if (bits == 8 && symmetric) return "q8_0";
  return std::nullopt;
}

// The bits and symmetry a format implies, for flags not given.
void implied_by(const std::string& format, int* bits, bool* symmetric) {
  if (const auto shape = block_format_shape(format)) {
    *bits = shape->bits;
    *symmetric = shape->symmetric;
  }
}

// --token-embedding-type / --output-tensor-type: a block format, or "keep".
std::optional<std::string> outer_weight_format(const std::string& value) {
  if (value == "keep") return std::string();
  if (!block_format_shape(value)) return std::nullopt;
  return "ggml." + value;
}

// The progress line on stderr. The time left is a finished layer's mean
// time times the layers not finished, less what the current layer has taken
// so far. (Taken as the whole elapsed time over the finished layers, it rose
// through every layer and fell back at its end: 602, 967, 600 s left across
// one layer of Qwen2.5-Coder-0.5B.)
class ProgressLine {
 public:
  void print(const QuantizeProgress& p) {
    constexpr int kWidth = 30;
    if (p.done != done_) {
      done_ = p.done;
      done_at_ = p.elapsed_seconds;
    }
    const auto filled = static_cast<int>(kWidth * p.done / std::max<int64_t>(1, p.total));
    const double per_layer = done_ > 0 ? done_at_ / static_cast<double>(done_) : 0;
    const double eta =
        std::max(0.0, per_layer * static_cast<double>(p.total - p.done) - (p.elapsed_seconds - done_at_));
    const std::string layer = p.done < p.total ? fmt::format("layer {}/{} {}", p.done + 1, p.total, p.stage)
                                               : fmt::format("{} layers", p.total);
    fmt::print(stderr, "\r[{}{}] {}, {:.0f} s{}", std::string(static_cast<size_t>(filled), '#'),
               std::string(static_cast<size_t>(kWidth - filled), '.'), layer, p.elapsed_seconds,
               p.done > 0 && p.done < p.total ? fmt::format(", about {:.0f} s left   ", eta) : std::string("        "));
  }

 private:
  int64_t done_ = 0;     // layers finished at the last report that changed it
  double done_at_ = 0;   // elapsed seconds then
};

void print_summary(const QuantizeJob& job, const QuantizeReport& r) {
  if (!r.converted_from_folder.empty())
    fmt::print("note: {} is a Hugging Face folder; it was written as GGUF first ({:.1f} MiB beside the output, "
               "removed), as `tessera convert` writes it\n",
               r.converted_from_folder, static_cast<double>(r.converted_bytes) / (1 << 20));
  if (!r.dequantized_types.empty())
    fmt::print("note: the input's weights were stored as {}; they were dequantized to f32 first, so the output "
               "carries both roundings\n",
               fmt::join(r.dequantized_types, ", "));
  fmt::print("{} -> {}: {} weights quantized with {} into {}\n", job.input, job.output, r.weights.size(), r.method,
             r.format);
  std::map<std::string, int> written;  // weights per type written
  for (const auto& w : r.weights) ++written[w.written_type];
  if (written.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [type, count] : written) parts.push_back(fmt::format("{} in {}", count, type));
    fmt::print("  written: {} ({})\n", fmt::join(parts, ", "),
               job.spec.format == kGptqFormat
                   ? "the blocks each weight loads as, the smallest that holds it: Q4_0 where every q - z + 8 "
                     "is a nibble, else Q4_1 where every offset -s*z is an f16 value, else Q5_0"
                   : "rows that are not whole 256-column super-blocks take the K format's fallback");
  }
  if (!r.kept.empty()) {
    // Named up to a few; --json lists them all.
    constexpr size_t kNamed = 4;
    std::vector<std::string> named;
    for (size_t i = 0; i < std::min(kNamed, r.kept.size()); ++i)
      named.push_back(fmt::format("{} ({} {}x{})", r.kept[i].name, r.kept[i].type, r.kept[i].rows, r.kept[i].cols));
    fmt::print("  kept as stored: {} weights the format cannot hold: {}{} ({})\n", r.kept.size(), fmt::join(named, ", "),
               r.kept.size() > kNamed ? fmt::format(" and {} more", r.kept.size() - kNamed) : std::string(),
               r.kept.front().why);
  }
  if (!r.rounded.empty()) {
    std::vector<std::string> named;
    for (const auto& w : r.rounded) named.push_back(fmt::format("{} {} -> {}", w.name, w.source_type, w.written_type));
    fmt::print("  rounded to nearest: {} (--token-embedding-type, --output-tensor-type)\n", fmt::join(named, ", "));
  }
  if (r.rotated_inputs)
    fmt::print("  rows stored rotated by a block Hadamard matrix, which the Linears apply to their inputs too "
               "(--rotation none: plain rows)\n");
  fmt::print("  bits per weight: {:.3f} (quantized weights), {:.3f} (every tensor); file {:.1f} MiB\n",
             r.bits_per_weight(), r.file_bits_per_weight(), static_cast<double>(r.output_file_bytes) / (1 << 20));
  if (r.calibration_tokens > 0)
    fmt::print("  calibration: {} tokens, {:.1f} s of forwards ({}{}; activations {})\n", r.calibration_tokens,
               r.calibration_seconds,
               r.layer_by_layer ? "layer by layer over stored inputs" : "whole forwards, layers 0..l for layer l",
               r.true_sequential ? "; true sequential: each layer in stages, in forward order" : "",
               r.calibration_activations);
  fmt::print("  time: {:.1f} s\n", r.seconds);
  const QuantizedWeightReport* worst = nullptr;
  for (const auto& w : r.weights)
    if (worst == nullptr || w.relative_error > worst->relative_error) worst = &w;
  fmt::print("  relative {} error: mean {:.3e}{}\n", r.calibration_tokens > 0 && r.method != "int8" ? "output" : "weight", r.mean_relative_error(),
             worst != nullptr ? fmt::format(", largest {:.3e} ({})", worst->relative_error, worst->name) : "");
  if (r.calibration_tokens > 0 && r.method != "int8")
    fmt::print("  against rounding to nearest on the calibration inputs: {:.3f}x its output error (geometric mean)\n",
               r.mean_gain_over_rounding());
  if (const auto held_out = r.mean_held_out_gain_over_rounding()) {
    const auto shown = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("-"); };
    fmt::print("  on the held-out text ({} tokens): {:.3f}x rounding's output error, {} token by token; per kind, "
               "calibration / held out / held out token by token:\n",
               r.held_out_tokens, *held_out, shown(r.mean_held_out_token_gain_over_rounding()));
    for (const auto& k : r.gains_by_kind())
      fmt::print("    {:<20} {:.3f} / {} / {}\n", k.kind, k.calibration, shown(k.held_out), shown(k.held_out_tokens));
  }
  if (!r.scale_groups.empty() && r.method == "int8") {
    double before = 0, after = 0;
    for (const auto& g : r.scale_groups) {
      before = std::max(before, g.activation_range_before);
      after = std::max(after, g.activation_range_after);
    }
    const auto [lo, hi] = std::minmax_element(r.scale_groups.begin(), r.scale_groups.end(),
                                              [](const auto& a, const auto& b) { return a.exponent < b.exponent; });
    const std::string alpha = !r.smooth_searched
                                  ? fmt::format("alpha {:.2f}", lo->exponent)
                                  : fmt::format("alpha searched per group, {:.2f} to {:.2f}, output error {:.3f}x "
                                                "that without (geometric mean)",
                                                lo->exponent, hi->exponent, r.mean_scale_loss_ratio());
    fmt::print("  SmoothQuant: {} groups, {}; the inputs' largest channel maximum over the mean one went "
               "from {:.1f} to {:.1f} (worst group)\n",
               r.scale_groups.size(), alpha, before, after);
  } else if (!r.scale_groups.empty()) {
    double exponents = 0;
    for (const auto& g : r.scale_groups) exponents += g.exponent;
    fmt::print("  AWQ scales: {} groups, mean exponent {:.2f}, rounding error under them {:.3f}x that without "
               "(geometric mean)\n",
               r.scale_groups.size(), exponents / static_cast<double>(r.scale_groups.size()),
               r.mean_scale_loss_ratio());
  }
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  cxxopts::Options options("tessera quantize",
                           "Quantize the Linear weights of a model's layers (a GGUF file or a Hugging Face folder) into a new GGUF that llama.cpp runs "
                           "too: round-to-nearest, or GPTQ or AWQ calibrated on a text through the model itself; "
                           "or into INT8 W8A8, which Tessera runs with integer kernels.");
  options.positional_help("IN OUT");
  options.add_options()("input", "the model to quantize (GGUF, or a Hugging Face folder at f32/f16/bf16)", cxxopts::value<std::string>())(
      "output", "the GGUF to write", cxxopts::value<std::string>())(
      "method", "rtn, gptq, awq or int8 (INT8 W8A8: int8 weights with a scale per row, int8 activations per token)", cxxopts::value<std::string>()->default_value("rtn"))(
      "format", "q4_0, q4_1, q5_0, q5_1, q8_0, q3_k, q4_k, q5_k or q6_k (default: from --bits and --sym/--asym; K formats: weights whose "
      "rows are not whole 256-column super-blocks go into q5_0/q5_1/q8_0 as llama-quantize does, q3_k into q4_0); int8 writes its "
      "own (i8); gptq: GPTQ checkpoint groups of 2, 3, 4 or 8 bits (--bits) in groups of --group-size columns (default 128), "
      "a Tessera GGUF llama.cpp does not run (docs/quantization.md)",
      cxxopts::value<std::string>())("bits", "bits per weight value (3, 4, 5, 6 or 8; gptq 2, 3, 4 or 8; default 4)", cxxopts::value<int>())(
      "group-size", "input columns sharing a scale (GGUF's block formats: 32, q3_k/q6_k 16; gptq: a multiple of 32, "
      "default 128; -1: a whole row)",
      cxxopts::value<int>()->default_value("32"))("sym", "symmetric groups (no minimum)")(
      "asym", "asymmetric groups (a minimum per group)")("act-order", "GPTQ: columns by decreasing input energy")(
      "true-sequential", "GPTQ: calibrate each layer in stages (q/k/v, o, gate/up, down), each on the outputs of "
      "the stages before it quantized, instead of the whole layer at once on the original layer's outputs")(
      "damp", "GPTQ: fraction of the Hessian's mean diagonal added to it", cxxopts::value<double>()->default_value(fmt::format("{}", QuantizeSpec{}.damp)))(
      "calibration", "calibration text file (GPTQ, AWQ)", cxxopts::value<std::string>())(
      "samples", "calibration windows", cxxopts::value<int64_t>()->default_value("128"))(
      "sample-tokens", "tokens per calibration window", cxxopts::value<int64_t>()->default_value("512"))(
      "calibration-activations", "how the calibration passes' block-format products take their activations: q8 "
      "(one int8 term, the default), q8x2 (two, the default with --held-out, and of `tessera run`) or f32",
      cxxopts::value<std::string>())(
      "held-out", "a second text, never calibrated on: report each Linear's output error on its inputs beside "
      "rounding to nearest's (--held-out-samples windows of --sample-tokens)", cxxopts::value<std::string>())(
      "held-out-samples", "held-out windows", cxxopts::value<int64_t>()->default_value("8"))(
      "awq-grid", "AWQ: scale exponents tried, 0, 1/N, ..., (N-1)/N", cxxopts::value<int>()->default_value("20"))(
      "awq-no-clip", "AWQ: the input scales alone, without the clipping search after them")(
      "smooth", "INT8: SmoothQuant's migration strength alpha in (0, 1), e.g. 0.5, or 'auto': per group, the alpha "
      "of 0, 0.05, ..., 0.95 whose measured output error is least (needs --calibration); 0: none",
      cxxopts::value<std::string>()->default_value("0"))(
      "rotation", "INT8: 'hadamard' (the default) stores each weight's rows rotated by a fixed block Hadamard "
      "matrix, and the Linear rotates each input row by it before its per-token rounding, which spreads "
      "outlier channels (QuaRot); 'none': plain rows (docs/quantization.md)",
      cxxopts::value<std::string>())(
      "token-embedding-type", "the token embedding's format (q4_0, ..., q6_k), rounded to nearest, or 'keep' to copy "
      "it as stored (default: --format's; q8_0 with int8)", cxxopts::value<std::string>())(
      "output-tensor-type", "the output head's format (with tied embeddings the token embedding is the head), "
      "rounded to nearest, or 'keep' (default: q6_k, q8_0 beside q8_0 and int8; rows that are not whole "
      "super-blocks: q8_0), as llama-quantize does", cxxopts::value<std::string>())("force", "replace OUT if it exists");
  add_shared_options(options, kThreadsOption | kJsonOption);
  options.parse_positional({"input", "output"});
  cxxopts::ParseResult args;
  const CommandSyntax syntax{"input", "tessera quantize needs IN and OUT paths (see --help)", nullptr, "output"};
  if (auto exit = parse_command_line(options, argc, argv, &args, syntax)) return *exit;
  if (args.count("sym") && args.count("asym")) return report_usage("--sym and --asym contradict each other");

  QuantizeJob job;
  job.input = args["input"].as<std::string>();
  job.output = args["output"].as<std::string>();
  job.force = args.count("force") > 0;
  job.threads = args.count("threads") ? args["threads"].as<int32_t>() : 0;
  job.samples = args["samples"].as<int64_t>();
  job.sample_tokens = args["sample-tokens"].as<int64_t>();
  job.awq_grid = args["awq-grid"].as<int>();
  job.awq_clip = args.count("awq-no-clip") == 0;
  job.true_sequential = args.count("true-sequential") > 0;
  if (args.count("calibration-activations")) {
    job.calibration_activations = args["calibration-activations"].as<std::string>();
    if (job.calibration_activations != "q8" && job.calibration_activations != "q8x2" &&
        job.calibration_activations != "f32")
      return report_usage("--calibration-activations: give q8, q8x2 or f32");
  }
  if (job.true_sequential && args["method"].as<std::string>() != "gptq")
    return report_usage("--true-sequential is a GPTQ setting");
  if (!job.awq_clip && args["method"].as<std::string>() != "awq") return report_usage("--awq-no-clip is an AWQ setting");
  const std::string smooth = args["smooth"].as<std::string>();
  if (smooth == "auto") {
    job.smooth_search = 20;
  } else {
    const auto [end, error] = std::from_chars(smooth.data(), smooth.data() + smooth.size(), job.smooth);
    if (error != std::errc{} || end != smooth.data() + smooth.size())
      return report_usage(fmt::format("--smooth takes an alpha in (0, 1) or 'auto', not '{}'", smooth));
  }
  if ((job.smooth != 0 || job.smooth_search != 0) && args["method"].as<std::string>() != "int8")
    return report_usage("--smooth (SmoothQuant's migration) goes with --method int8");
  QuantizeSpec& spec = job.spec;
  spec.method = args["method"].as<std::string>();
  if (args.count("rotation")) {
    const std::string rotation = args["rotation"].as<std::string>();
    if (spec.method != "int8") return report_usage("--rotation is an INT8 W8A8 setting (--method int8)");
    if (rotation != "hadamard" && rotation != "none")
      return report_usage(fmt::format("--rotation takes 'hadamard' or 'none', not '{}'", rotation));
    spec.rotate_inputs = rotation == "hadamard";
  } else {
    spec.rotate_inputs = spec.method == "int8";
  }
  spec.group_size = args["group-size"].as<int>();
  spec.act_order = args.count("act-order") > 0;
  spec.damp = args["damp"].as<double>();
  spec.bits = 4;
  spec.symmetric = true;
  std::string format;
  if (spec.method == "int8") {
    // INT8 W8A8 has one format: int8 values, one scale per row (the int8 plugin's "i8").
    if (args.count("format") && args["format"].as<std::string>() != "i8")
      return report_usage("--method int8 writes int8 weights with a scale per row (format i8); --format " +
                          args["format"].as<std::string>() + " does not apply");
    if (args.count("bits") && args["bits"].as<int>() != 8) return report_usage("--method int8 writes 8-bit weights");
    if (args.count("group-size") && spec.group_size != -1)
      return report_usage("--method int8 has one scale per output row (--group-size -1)");
    if (args.count("asym")) return report_usage("--method int8 weights are symmetric");
    spec.bits = 8;
    spec.group_size = -1;
    spec.format = "i8";
  } else if (args.count("format")) {
    format = args["format"].as<std::string>();
    implied_by(format, &spec.bits, &spec.symmetric);
    // GPTQ checkpoints' groups are 128 wide unless asked otherwise, as GPTQ's packers default to.
    if (format == kGptqFormat && !args.count("group-size")) spec.group_size = 128;
  }
  if (args.count("bits")) spec.bits = args["bits"].as<int>();
  if (args.count("sym")) spec.symmetric = true;
  if (args.count("asym")) spec.symmetric = false;
  if (spec.method != "int8" && format.empty()) {
    const auto f = format_for(spec.bits, spec.symmetric);
    if (!f)
      return report_usage(fmt::format("no GGUF block format holds {}-bit {} groups; pass --format (see --help)",
                                      spec.bits, spec.symmetric ? "symmetric" : "asymmetric"));
    format = *f;
  }
  // Q3_K's and Q6_K's scales are per 16 columns (sub-blocks of 16 under one f16 scale).
  if (const auto shape = block_format_shape(format); shape && !args.count("group-size")) spec.group_size = shape->group_size;
  if (spec.method != "int8") spec.format = format == kGptqFormat ? format : "ggml." + format;
  // The embedding and head of a gptq file are rounded as those of the
  // nearest block format's file would be.
  const std::string written = spec.method == "int8"       ? "i8"
                              : format == kGptqFormat ? (spec.bits == 8 ? "q8_0" : "q4_0")
                                                          : format;
  job.embedding_format = default_embedding_format(written);
  job.head_format = default_head_format(written);
  for (const auto& [flag, target] : {std::pair{"token-embedding-type", &job.embedding_format},
                                     std::pair{"output-tensor-type", &job.head_format}}) {
    if (!args.count(flag)) continue;
    const auto value = outer_weight_format(args[flag].as<std::string>());
    if (!value)
      return report_usage(fmt::format("--{} takes q4_0, q4_1, q5_0, q5_1, q8_0, q3_k, q4_k, q5_k, q6_k or keep, not '{}'",
                                      flag, args[flag].as<std::string>()));
    *target = *value;
  }

  if (args.count("calibration")) {
    const auto text = read_file(args["calibration"].as<std::string>(), "calibration text");
    if (!text.ok()) return report(text.status());
    job.calibration_text = *text;
  }
  job.held_out_samples = args["held-out-samples"].as<int64_t>();
  if (args.count("held-out-samples") && !args.count("held-out"))
    return report_usage("--held-out-samples needs --held-out TEXT");
  if (args.count("held-out")) {
    const auto text = read_file(args["held-out"].as<std::string>(), "held-out text");
    if (!text.ok()) return report(text.status());
    if (text->empty()) return report_usage("--held-out: the file is empty");
    job.held_out_text = *text;
  }

  const bool quiet = args.count("quiet") > 0 || args.count("json") > 0;
  PluginRegistry registry;
  ProgressLine progress;
  auto report_or = quantize_model(job, registry, [&](const QuantizeProgress& p) {
    if (!quiet) progress.print(p);
  });
  if (!quiet) fmt::print(stderr, "\n");
  if (!report_or.ok()) return report(report_or.status());
  if (args.count("json")) {
    fmt::print("{}\n", report_or->to_json().dump(2));
  } else if (args.count("quiet") == 0) {
    print_summary(job, *report_or);
  }
  return kExitOk;
}

}  // namespace tessera::cli

// tessera convert FOLDER OUT.gguf [--force] [--json]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/convert_model.hpp"
#include "plugin/registry.hpp"

namespace tessera::cli {

int cmd_convert(int argc, char** argv) {
  cxxopts::Options options("tessera convert",
                           "Write a Hugging Face safetensors folder (config.json, *.safetensors, tokenizer.json) as a "
                           "GGUF file that Tessera and llama.cpp run: the weights as stored (f32, f16, bf16), the "
                           "architecture's keys and tensor names, the tokenizer.");
  options.positional_help("FOLDER OUT");
  options.add_options()("input", "the Hugging Face folder", cxxopts::value<std::string>())(
      "output", "the GGUF file to write", cxxopts::value<std::string>())("force", "replace OUT if it exists");
  add_shared_options(options, kJsonOption);
  options.parse_positional({"input", "output"});
  cxxopts::ParseResult args;
  const CommandSyntax syntax{"input", "tessera convert needs FOLDER and OUT paths (see --help)", nullptr, "output"};
  if (auto exit = parse_command_line(options, argc, argv, &args, syntax)) return *exit;

  const ConvertJob job{args["input"].as<std::string>(), args["output"].as<std::string>(), args.count("force") > 0};
  PluginRegistry registry;
  registry.scan(plugin_search_path({}));
  auto r = convert_model(job, registry);
  if (!r.ok()) return report(r.status());
  if (args.count("json")) {
    const nlohmann::json j = {{"architecture", r->architecture}, {"tensor_types", r->types},
                              {"tensor_bytes", r->tensor_bytes}, {"output_file_bytes", r->output_file_bytes},
                              {"notes", r->notes},                {"seconds", r->seconds}};
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  for (const auto& note : r->notes) fmt::print("note: {}\n", note);
  std::vector<std::string> types;
  for (const auto& [type, count] : r->types) types.push_back(fmt::format("{} {}", count, type));
  fmt::print("{} -> {}: {}, {} tensors ({}), {:.1f} MiB, {:.1f} s\n", job.input, job.output, r->architecture,
             [&] {
               int n = 0;
               for (const auto& [type, count] : r->types) n += count;
               return n;
             }(),
             fmt::join(types, ", "), static_cast<double>(r->output_file_bytes) / (1 << 20), r->seconds);
  return kExitOk;
}

}  // namespace tessera::cli

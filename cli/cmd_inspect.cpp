// tessera inspect MODEL [--json]
#include <fmt/format.h>

#include "cli_common.hpp"
#include "cxxopts_include.hpp"
#include "engine/architecture_choice.hpp"
#include "model/inspect.hpp"
#include "model/model_file.hpp"
#include "plugin/registry.hpp"

namespace tessera::cli {

int cmd_inspect(int argc, char** argv) {
  cxxopts::Options options("tessera inspect", "Describe a model file: architecture, sizes, tokenizer, template.");
  options.positional_help("MODEL");
  options.add_options()("model", "a .gguf file or a Hugging Face safetensors folder", cxxopts::value<std::string>());
  add_shared_options(options, kJsonOption);
  options.parse_positional({"model"});
  cxxopts::ParseResult args;
  if (auto exit = parse_command_line(options, argc, argv, &args,
                                     {"model", "tessera inspect needs a model file or folder (see --help)"}))
    return *exit;
  auto model = open_model(args["model"].as<std::string>());
  if (!model.ok()) return report(model.status());
  nlohmann::json info = inspect_model(**model);
  // The hyper-parameters are read by the architecture plugin that serves the file.
  PluginRegistry registry;
  registry.scan(plugin_search_path({}));
  add_architecture_view(info, **model, registry);
  if (args.count("json")) {
    fmt::print("{}\n", info.dump(2));
  } else {
    fmt::print("{}", format_inspect(info));
  }
  return kExitOk;
}

}  // namespace tessera::cli

// tessera inspect MODEL [--json]
#include <cxxopts.hpp>
#include <fmt/format.h>

#include "cli_common.hpp"
#include "model/inspect.hpp"
#include "model/model_file.hpp"

namespace tessera::cli {

int cmd_inspect(int argc, char** argv) {
  cxxopts::Options options("tessera inspect", "Describe a model file: architecture, sizes, tokenizer, template.");
  options.positional_help("MODEL");
  options.add_options()
      ("model", "a .gguf file or a Hugging Face safetensors folder", cxxopts::value<std::string>())
      ("json", "print JSON for scripts")
      ("v,verbose", "debug logging")
      ("q,quiet", "only errors on stderr")
      ("h,help", "show this help");
  options.parse_positional({"model"});
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const std::exception& e) {
    return report_usage(e.what());
  }
  if (args.count("help")) {
    fmt::print("{}\n", options.help());
    return kExitOk;
  }
  if (!args.count("model")) return report_usage("tessera inspect needs a model file or folder (see --help)");
  configure_logging(args.count("verbose") > 0, args.count("quiet") > 0);
  auto model = open_model(args["model"].as<std::string>());
  if (!model.ok()) return report(model.status());
  const nlohmann::json info = inspect_model(**model);
  if (args.count("json")) {
    fmt::print("{}\n", info.dump(2));
  } else {
    fmt::print("{}", format_inspect(info));
  }
  return kExitOk;
}

}  // namespace tessera::cli

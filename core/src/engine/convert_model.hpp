// engine/convert_model.hpp: a Hugging Face safetensors folder written as a
// GGUF file (`tessera convert`, and `tessera quantize` of such a folder).
//
// The architecture plugin says what only it knows (Architecture::gguf_layout,
// ABI 3.7: the GGUF architecture, its keys, the tensors' GGUF names and which
// rows to interleave); the core adds general.*, the tokenizer from
// tokenizer.json and tokenizer_config.json (tokenizer/gguf_keys.hpp), and the
// tensors' bytes as stored (f32, f16, bf16: nothing is rounded).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_file.hpp"
#include "plugin/registry.hpp"
#include "tessera/architecture.hpp"
#include "tessera/status.hpp"

namespace tessera {

struct ConvertReport {
  std::string architecture;            // general.architecture written
  std::map<std::string, int> types;    // tensors written per stored type ("f16": 170)
  uint64_t tensor_bytes = 0;
  uint64_t output_file_bytes = 0;
  std::vector<std::string> notes;      // stored tensors left out, and why
  double seconds = 0;
};

// Writes the GGUF form of `model` (a safetensors folder) to `path`, through
// a temporary file renamed into place. Errors: a folder whose tokenizer or
// tensors GGUF cannot say as Tessera and llama.cpp would read them, a
// GPTQ/AWQ checkpoint (its repacked weights are not the stored ones), an
// architecture plugin without gguf_layout (ABI 3.7).
Result<ConvertReport> write_gguf_form(const ModelFile& model, const Architecture& architecture,
                                      const std::string& path);

struct ConvertJob {
  std::string input;   // a Hugging Face folder
  std::string output;  // the GGUF file to write
  bool force = false;  // replace an existing output
};

// Opens the folder, finds the architecture plugin that serves it in `registry`
// and writes the GGUF form. invalid_argument for an input that is not a
// folder or an output that exists without `force`.
Result<ConvertReport> convert_model(const ConvertJob& job, const PluginRegistry& registry);

}  // namespace tessera

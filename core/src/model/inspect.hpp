// model/inspect.hpp: a summary of a model file for `tessera inspect MODEL [--json]`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/model_file.hpp"

namespace tessera {

// {"source", "format" ("gguf"|"safetensors"), "architecture", "name",
//  "tensors": {"count", "bytes", "by_type": {"q4_1": {"count", "bytes"}, ...}},
//  "tokenizer": {"kind", "vocab_size", "special_tokens": {"bos": id, ...}, "add_bos",
//                "chat_template": {"present", "name"}}}
// GGUF files also carry "gguf": {"version", "alignment", "metadata_count"}.
// The hyper-parameters are the architecture plugin's to read: the engine adds
// them (engine/inspect_architecture.hpp) as "arch_plugin" and "hparams", or
// "hparams_error"; format_inspect renders whichever is there.
nlohmann::json inspect_model(const ModelFile& model);

// Human-readable rendering of inspect_model's result.
std::string format_inspect(const nlohmann::json& info);

// A short name for a chat template: "chatml" (<|im_start|>), "llama3"
// (<|start_header_id|>), "llama2" ([INST]), else "custom"; "" when empty.
std::string chat_template_name(const std::string& jinja);

}  // namespace tessera

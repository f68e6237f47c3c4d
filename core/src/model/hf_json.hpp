// model/hf_json.hpp: reading the JSON files of a Hugging Face folder
// (config.json, model.safetensors.index.json) as Python writes them.
//
// Python's json module writes float("inf") and float("nan") as the bare
// tokens Infinity, -Infinity and NaN, which strict JSON (and nlohmann's
// parser) refuses; transformers 4 saves Mamba-2's default time_step_limit
// (0, inf) that way. transformers 5 writes {"__float__": "Infinity"} instead.
// Both become JSON numbers holding the non-finite double, so a reader sees
// one form.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tessera/status.hpp"

namespace tessera {

// Parses `text` (errors name `source`).
Result<nlohmann::json> parse_hf_json(std::string_view text, const std::string& source);

// Reads and parses the file at `path` (a missing or unreadable file: io/read_file.hpp's errors).
Result<nlohmann::json> read_hf_json(const std::filesystem::path& path);

}  // namespace tessera

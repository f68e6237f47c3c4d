// batch_requests.hpp: the requests of a batch run, from [run] prompts or --prompts-file.
#pragma once

#include <string>
#include <vector>

#include "engine/session.hpp"

namespace tessera::cli {

// A prompts file holds one request per line: plain text, or a JSON object
// (JSONL) with "prompt" and optional per-request "max_tokens", "chat",
// "system", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
// "seed". Blank lines are skipped. Errors name the file and the line.
Result<std::vector<GenerationRequest>> read_prompts_file(const std::string& path, const GenerationRequest& defaults);

}  // namespace tessera::cli

#include "batch_requests.hpp"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tessera::cli {
namespace {

template <typename T>
Status read_field(const nlohmann::json& j, const char* key, T* out, const std::string& where) {
  if (!j.contains(key)) return Status::Ok();
  try {
    *out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    return InvalidArgument(fmt::format("{}: \"{}\" has the wrong type", where, key));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<GenerationRequest>> read_prompts_file(const std::string& path,
                                                          const GenerationRequest& defaults) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read the prompts file '{}'", path));
  std::vector<GenerationRequest> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    GenerationRequest r = defaults;
    const std::string where = fmt::format("{}:{}", path, number);
    if (line.front() != '{') {
      r.prompt = line;
      out.push_back(std::move(r));
      continue;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      return InvalidArgument(fmt::format("{}: not valid JSON: {}", where, e.what()));
    }
    if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string())
      return InvalidArgument(fmt::format("{}: a JSON line needs a string \"prompt\"", where));
    for (const auto& [key, value] : j.items()) {
      static const char* kKeys[] = {"prompt", "max_tokens", "chat", "system", "temperature", "top_k",
                                    "top_p", "min_p", "repetition_penalty", "seed"};
      if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
        return InvalidArgument(fmt::format("{}: unknown key \"{}\"", where, key));
    }
    TESSERA_RETURN_IF_ERROR(read_field(j, "prompt", &r.prompt, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "max_tokens", &r.max_tokens, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "chat", &r.chat, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "system", &r.system, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "temperature", &r.sampling.temperature, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "top_k", &r.sampling.top_k, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "top_p", &r.sampling.top_p, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "min_p", &r.sampling.min_p, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "repetition_penalty", &r.sampling.repetition_penalty, where));
    TESSERA_RETURN_IF_ERROR(read_field(j, "seed", &r.sampling.seed, where));
    if (r.max_tokens < 0) return InvalidArgument(fmt::format("{}: \"max_tokens\" must be >= 0", where));
    out.push_back(std::move(r));
  }
  if (out.empty()) return InvalidArgument(fmt::format("the prompts file '{}' holds no prompt", path));
  return out;
}

}  // namespace tessera::cli

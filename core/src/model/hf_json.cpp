#include "model/hf_json.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "io/read_file.hpp"

namespace tessera {

namespace {

using nlohmann::json;

// The non-finite value a Python float token or transformers' "__float__"
// string spells, if it is one.
std::optional<double> non_finite(std::string_view spelling) {
  if (spelling == "Infinity") return std::numeric_limits<double>::infinity();
  if (spelling == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (spelling == "NaN") return std::numeric_limits<double>::quiet_NaN();
  return std::nullopt;
}

constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "NaN"};

// `text` with every bare Infinity, -Infinity and NaN outside strings spelled
// as transformers 5 does, {"__float__": "<token>"}. Outside strings strict
// JSON has no capital letters, so a capital I or N starts such a token or is
// an error either way (left for the parser to report).
std::string quote_python_floats(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      out += ch;
      if (ch == '\\' && i + 1 < text.size()) {
        out += text[++i];  // an escaped character, quote included
      } else if (ch == '"') {
        in_string = false;
      }
      continue;
    }
    if (ch == '"') in_string = true;
    const std::string_view rest = text.substr(i);
    const auto token =
        std::find_if(std::begin(kTokens), std::end(kTokens), [&](std::string_view t) { return rest.starts_with(t); });
    if (token == std::end(kTokens)) {
      out += ch;
      continue;
    }
    out += R"({"__float__":")";
    out += *token;
    out += "\"}";
    i += token->size() - 1;
  }
  return out;
}

// Deeper nesting than any real config has; readers below (JsonMetadata's
// flattening) recurse, so deeper files are refused here.
constexpr size_t kMaxDepth = 64;

// Replaces every {"__float__": "<Infinity|-Infinity|NaN>"} in `root` by the
// number; false when the nesting is deeper than kMaxDepth. Iterative: the
// depth is not known until it is walked.
bool unquote_floats(json& root) {
  std::vector<std::pair<json*, size_t>> pending = {{&root, 0}};  // value, depth
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxDepth) return false;
    if (value->is_object()) {
      if (value->size() == 1 && value->contains("__float__") && (*value)["__float__"].is_string()) {
        if (auto v = non_finite((*value)["__float__"].get_ref<const std::string&>())) {
          *value = *v;
          continue;
        }
      }
      for (auto& [key, item] : value->items()) pending.emplace_back(&item, depth + 1);
    } else if (value->is_array()) {
      for (auto& item : *value) pending.emplace_back(&item, depth + 1);
    }
  }
  return true;
}

}  // namespace

Result<json> parse_hf_json(std::string_view text, const std::string& source) {
  json parsed;
  try {
    parsed = json::parse(quote_python_floats(text));
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    return CorruptData(source + ": not valid JSON: " + e.what());
  }
  if (!unquote_floats(parsed))
    return CorruptData(source + ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
  return parsed;
}

Result<json> read_hf_json(const std::filesystem::path& path) {
  auto text = read_file(path, "JSON file");
  if (!text.ok()) return text.status();
  return parse_hf_json(*text, path.string());
}

}  // namespace tessera

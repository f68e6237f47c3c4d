#include "model/inspect.hpp"

#include <fstream>
#include <map>

#include <fmt/format.h>

namespace tessera {

using nlohmann::json;

std::string chat_template_name(const std::string& jinja) {
  if (jinja.empty()) return "";
  if (jinja.find("<|im_start|>") != std::string::npos) return "chatml";
  if (jinja.find("<|start_header_id|>") != std::string::npos) return "llama3";
  if (jinja.find("[INST]") != std::string::npos) return "llama2";
  return "custom";
}

namespace {

json tensors_json(const ModelFile& model) {
  uint64_t total = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;  // dtype -> (count, bytes)
  const auto tensors = model.tensors();
  for (const TensorRef& t : tensors) {
    total += t.nbytes;
    auto& [count, bytes] = by_type[std::string(dtype_name(t.dtype))];
    ++count;
    bytes += t.nbytes;
  }
  json types = json::object();
  for (const auto& [name, cb] : by_type) types[name] = {{"count", cb.first}, {"bytes", cb.second}};
  return {{"count", tensors.size()}, {"bytes", total}, {"by_type", types}};
}

json gguf_tokenizer_json(const GgufFile& g) {
  json tok = {{"kind", g.get_string("tokenizer.ggml.model").value_or("")},
              {"vocab_size", g.array_length("tokenizer.ggml.tokens").value_or(0)}};
  if (auto pre = g.get_string("tokenizer.ggml.pre")) tok["pre"] = *pre;
  json special = json::object();
  for (const auto& [label, key] : {std::pair{"bos", "tokenizer.ggml.bos_token_id"},
                                   {"eos", "tokenizer.ggml.eos_token_id"},
                                   {"eot", "tokenizer.ggml.eot_token_id"},
                                   {"pad", "tokenizer.ggml.padding_token_id"},
                                   {"unk", "tokenizer.ggml.unknown_token_id"}}) {
    if (auto id = g.get_int(key)) special[label] = *id;
  }
  tok["special_tokens"] = special;
  if (auto add_bos = g.get_bool("tokenizer.ggml.add_bos_token")) tok["add_bos"] = *add_bos;
  const std::string tmpl = g.get_string("tokenizer.chat_template").value_or("");
  tok["chat_template"] = {{"present", !tmpl.empty()}, {"name", chat_template_name(tmpl)}};
  return tok;
}

// Hugging Face folders: what tokenizer.json / tokenizer_config.json say, read leniently
// (inspect reports; the tokenizer itself validates).
json hf_tokenizer_json(const ModelFile& model) {
  json tok = {{"kind", ""}, {"vocab_size", 0}, {"special_tokens", json::object()}};
  auto read = [](const std::string& path) -> json {
    if (path.empty()) return nullptr;
    std::ifstream in(path);
    return json::parse(in, nullptr, /*allow_exceptions=*/false);
  };
  const json tj = read(model.tokenizer_json_path());
  if (tj.is_object() && tj.contains("model") && tj["model"].is_object() && tj["model"].contains("type") &&
      tj["model"]["type"].is_string()) {
    std::string type = tj["model"]["type"].get<std::string>();
    for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    tok["kind"] = type;
  }
  if (tj.is_object() && tj.contains("model") && tj["model"].is_object() && tj["model"].contains("vocab") &&
      tj["model"]["vocab"].is_object()) {
    size_t n = tj["model"]["vocab"].size();
    if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
      for (const auto& t : tj["added_tokens"])
        if (t.is_object() && t.contains("id") && t["id"].is_number_unsigned())
          n = std::max(n, t["id"].get<size_t>() + 1);
    }
    tok["vocab_size"] = n;
  }
  const json cfg = read(model.tokenizer_config_path());
  std::string tmpl;
  if (cfg.is_object()) {
    if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) tmpl = cfg["chat_template"].get<std::string>();
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) tok["add_bos"] = cfg["add_bos_token"];
  }
  tok["chat_template"] = {{"present", !tmpl.empty()}, {"name", chat_template_name(tmpl)}};
  return tok;
}

}  // namespace

json inspect_model(const ModelFile& model) {
  json j = {
      {"source", model.source()},
      {"format", model.kind() == ModelFile::Kind::gguf ? "gguf" : "safetensors"},
      {"architecture", std::string(model.architecture())},
      {"name", model.name()},
      {"tensors", tensors_json(model)},
  };
  if (!model.repacked_from().empty())
    j["repacked_from"] = model.repacked_from() + " (Linears repacked into ggml blocks at load)";
  if (const auto& g = model.gguf()) {
    j["gguf"] = {{"version", g->version()}, {"alignment", g->alignment()}, {"metadata_count", g->metadata().size()}};
    j["tokenizer"] = gguf_tokenizer_json(*g);
  } else {
    j["tokenizer"] = hf_tokenizer_json(model);
  }
  return j;
}

namespace {

std::string human_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.2f} KiB", static_cast<double>(b) / (1ull << 10));
  return fmt::format("{} B", b);
}

// A JSON scalar as plain text (strings without quotes).
std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string format_inspect(const json& info) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("{:<22}{}\n", std::string(label) + ":", value);
  };
  line("model", text(info.value("source", json(""))));
  line("format", text(info.value("format", json(""))));
  if (info.contains("repacked_from")) line("quantized", text(info["repacked_from"]));
  if (info.contains("gguf"))
    line("gguf", fmt::format("version {}, alignment {}, {} metadata keys", text(info["gguf"]["version"]),
                             text(info["gguf"]["alignment"]), text(info["gguf"]["metadata_count"])));
  line("architecture", text(info.value("architecture", json(""))));
  if (!info.value("name", std::string()).empty()) line("name", text(info["name"]));
  if (info.contains("arch_plugin")) line("arch plugin", text(info["arch_plugin"]));
  if (info.contains("hparams_error")) line("hyper-parameters", text(info["hparams_error"]));
  if (info.contains("hparams")) {
    out += "hyper-parameters:\n";
    for (const auto& [k, v] : info["hparams"].items()) out += fmt::format("  {:<20}{}\n", k, text(v));
  }
  if (info.contains("tensors")) {
    const json& t = info["tensors"];
    line("tensors", fmt::format("{} ({})", text(t["count"]), human_bytes(t["bytes"].get<uint64_t>())));
    for (const auto& [type, cb] : t["by_type"].items())
      out += fmt::format("  {:<20}{} tensors, {}\n", type, text(cb["count"]), human_bytes(cb["bytes"].get<uint64_t>()));
  }
  if (info.contains("tokenizer")) {
    const json& tok = info["tokenizer"];
    out += "tokenizer:\n";
    out += fmt::format("  {:<20}{}\n", "kind", text(tok.value("kind", json(""))));
    if (tok.contains("pre")) out += fmt::format("  {:<20}{}\n", "pre-tokenizer", text(tok["pre"]));
    out += fmt::format("  {:<20}{}\n", "vocab_size", text(tok.value("vocab_size", json(0))));
    std::string specials;
    const json special = tok.value("special_tokens", json::object());
    for (const auto& [k, v] : special.items())
      specials += fmt::format("{}{}={}", specials.empty() ? "" : ", ", k, text(v));
    out += fmt::format("  {:<20}{}\n", "special tokens", specials.empty() ? "none" : specials);
    if (tok.contains("add_bos")) out += fmt::format("  {:<20}{}\n", "add_bos", text(tok["add_bos"]));
    const json ct = tok.value("chat_template", json::object());
    const bool present = ct.value("present", false);
    out += fmt::format("  {:<20}{}\n", "chat template",
                       present ? fmt::format("yes ({})", ct.value("name", std::string())) : std::string("no"));
  }
  return out;
}

}  // namespace tessera

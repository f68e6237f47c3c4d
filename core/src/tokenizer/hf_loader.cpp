// Hugging Face tokenizer.json (+ tokenizer_config.json) -> TokenizerSpec.
//
// Supported: model "BPE" with a ByteLevel pre-tokenizer (GPT-2, Llama 3,
// Qwen2, SmolLM, ...), pre-tokenizers ByteLevel / Split(Isolated) / Digits /
// Sequence, merges as "a b" strings or ["a", "b"] pairs, added_tokens; and
// SentencePiece BPE models as transformers converts them (byte_fallback,
// spaces as U+2581 by a Prepend/Replace normalizer or a Metaspace
// pre-tokenizer), run by the SentencePiece encoder with merge ranks as scores.
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "io/read_file.hpp"
#include "tokenizer/regex_splitter.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::tok {
namespace {

using json = nlohmann::json;

struct Ctx {
  const std::string& source;
  Status error(const std::string& what) const { return InvalidArgument(source + ": " + what); }
};

Result<json> parse_json(std::string_view text, const std::string& source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return InvalidArgument(source + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const json::exception& e) {  // out_of_range for a number like 1e999
    return InvalidArgument(source + ": invalid JSON: " + e.what());
  }
}

// Escapes a literal string for use inside a PCRE2 pattern.
std::string regex_quote(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Appends the split regexes of one pre-tokenizer node; sets `byte_level` when
// a ByteLevel node is seen.
Status collect_pre_tokenizer(const Ctx& ctx, const json& node, std::vector<std::string>& regexes, bool& byte_level) {
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) {
    return ctx.error("pre_tokenizer entries must be objects with a string \"type\"");
  }
  const std::string type = node["type"];
  if (type == "Sequence") {
    if (!node.contains("pretokenizers") || !node["pretokenizers"].is_array()) {
      return ctx.error("pre_tokenizer Sequence needs a \"pretokenizers\" array");
    }
    for (const auto& child : node["pretokenizers"]) {
      TESSERA_RETURN_IF_ERROR(collect_pre_tokenizer(ctx, child, regexes, byte_level));
    }
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    byte_level = true;
    if (node.value("add_prefix_space", false)) {
      return Unsupported(ctx.source + ": ByteLevel pre-tokenizer with add_prefix_space = true is not supported");
    }
    if (node.value("use_regex", true)) regexes.push_back(gpt2_split_regex());
    return Status::Ok();
  }
  if (type == "Digits") {
    regexes.push_back(node.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    return Status::Ok();
  }
  if (type == "Split") {
    if (node.value("behavior", std::string()) != "Isolated" || node.value("invert", false)) {
      return Unsupported(ctx.source + ": only Split pre-tokenizers with behavior \"Isolated\" and invert = false "
                         "are supported");
    }
    const json& pattern = node.contains("pattern") ? node["pattern"] : json();
    if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
      regexes.push_back(pattern["Regex"].get<std::string>());
    } else if (pattern.contains("String") && pattern["String"].is_string()) {
      regexes.push_back(regex_quote(pattern["String"].get<std::string>()));
    } else {
      return ctx.error("Split pre-tokenizer needs pattern {\"Regex\": ...} or {\"String\": ...}");
    }
    return Status::Ok();
  }
  return Unsupported(ctx.source + ": pre-tokenizer type '" + type + "' is not supported");
}

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// The text rules of a SentencePiece model in tokenizer.json: spaces become
// U+2581 and (unless the scheme says never) one is put before the text; no
// other normalizer or pre-tokenizer is accepted. Sets add_space_prefix.
Status read_sentencepiece_text_rules(const Ctx& ctx, const json& root, TokenizerSpec& spec) {
  bool prepend = false, replace = false;
  const auto normalizer_step = [&](const json& n) -> Status {
    const std::string type = n.is_object() ? n.value("type", std::string("?")) : "?";
    if (type == "Prepend" && n.value("prepend", std::string()) == kSpaceMark) return prepend = true, Status::Ok();
    if (type == "Replace" && n.value("content", std::string()) == kSpaceMark && n.contains("pattern") &&
        n["pattern"].is_object() && n["pattern"].value("String", std::string()) == " ")
      return replace = true, Status::Ok();
    return Unsupported(ctx.source + ": normalizer '" + type + "' of a SentencePiece tokenizer is not supported");
  };
  if (root.contains("normalizer") && !root["normalizer"].is_null()) {
    const json& n = root["normalizer"];
    if (n.is_object() && n.value("type", std::string()) == "Sequence" && n.contains("normalizers") &&
        n["normalizers"].is_array()) {
      for (const auto& step : n["normalizers"]) TESSERA_RETURN_IF_ERROR(normalizer_step(step));
    } else {
      TESSERA_RETURN_IF_ERROR(normalizer_step(n));
    }
  }
  bool metaspace = false;
  std::string scheme;
  if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
    const json& p = root["pre_tokenizer"];
    if (!p.is_object() || p.value("type", std::string()) != "Metaspace" ||
        p.value("replacement", std::string()) != kSpaceMark)
      return Unsupported(ctx.source + ": a SentencePiece tokenizer's pre-tokenizer must be a Metaspace with "
                         "replacement U+2581");
    metaspace = replace = true;
    // "split" defaults to true (older files have no such key and split).
    spec.split_at_space_marks = p.value("split", true);
    // add_prefix_space = false means no prefix whatever prepend_scheme says.
    scheme = p.value("add_prefix_space", true) ? p.value("prepend_scheme", std::string("always")) : "never";
    if (scheme != "always" && scheme != "first" && scheme != "never")
      return Unsupported(ctx.source + ": Metaspace prepend_scheme '" + scheme + "' is not supported");
  }
  if (!replace) return Unsupported(ctx.source + ": a byte-fallback BPE tokenizer must mark spaces with U+2581");
  // A Prepend normalizer puts U+2581 before every segment whatever it starts
  // with, and Metaspace then sees it there; Metaspace alone skips a segment
  // that starts with a space, and under "first" all but the text's start.
  if (!prepend && metaspace) {
    prepend = scheme != "never";
    spec.space_prefix_unless_space = true;
    spec.space_prefix_first_segment_only = scheme == "first";
  }
  spec.add_space_prefix = prepend;
  return Status::Ok();
}

// Byte fallback's pieces, <0x00> ... <0xFF>.
void type_byte_pieces(TokenizerSpec& spec) {
  for (SpecToken& t : spec.tokens)
    if (t.type == TokenType::normal && t.text.size() == 6 && t.text.starts_with("<0x") && t.text.back() == '>')
      t.type = TokenType::byte;
}

// The SentencePiece encoder joins any two adjacent pieces whose
// concatenation is a piece; BPE joins only listed pairs. They agree when
// every way of cutting a piece into two pieces is a listed merge, as in the
// files transformers converts from SentencePiece models (it lists them all).
// A byte-fallback BPE trained by `tokenizers` itself lists one merge per
// piece, so it is refused rather than tokenized differently.
Status check_every_split_is_merged(const Ctx& ctx, const TokenizerSpec& spec) {
  std::unordered_set<std::string_view> pieces;
  for (const SpecToken& t : spec.tokens)
    if (t.type == TokenType::normal) pieces.insert(t.text);
  // "<length of a>:" + a + b names the pair (a, b) unambiguously.
  const auto pair_key = [](std::string_view a, std::string_view b) {
    return std::to_string(a.size()) + ':' + std::string(a) + std::string(b);
  };
  std::unordered_set<std::string> merged;
  for (const auto& [a, b] : spec.merges) merged.insert(pair_key(a, b));
  for (const SpecToken& t : spec.tokens) {
    if (t.type != TokenType::normal) continue;
    const std::string_view text = t.text;
    for (size_t cut = 1; cut < text.size(); ++cut) {
      if ((static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
      const std::string_view a = text.substr(0, cut), b = text.substr(cut);
      if (pieces.contains(a) && pieces.contains(b) && !merged.contains(pair_key(a, b)))
        return Unsupported(ctx.source + ": pieces '" + std::string(a) + "' and '" + std::string(b) + "' make '" +
                           std::string(text) + "' but are not a listed merge; only byte-fallback BPE converted "
                           "from SentencePiece (every cut of a piece listed) is supported");
    }
  }
  return Status::Ok();
}

// SentencePiece's encoder merges the adjacent pair whose merged piece scores
// highest; BPE applies the lowest-ranked merge first. A merged piece scores
// -(rank + 1) of the first merge making it, so both choose the same pair.
void scores_from_merge_ranks(TokenizerSpec& spec) {
  std::unordered_map<std::string, size_t> id_of;
  for (size_t i = 0; i < spec.tokens.size(); ++i) id_of.emplace(spec.tokens[i].text, i);
  for (size_t rank = spec.merges.size(); rank-- > 0;) {
    const auto it = id_of.find(spec.merges[rank].first + spec.merges[rank].second);
    if (it != id_of.end()) spec.tokens[it->second].score = -static_cast<float>(rank + 1);
  }
  spec.merges.clear();
}

// A token named in tokenizer_config.json: a string or {"content": string}.
std::optional<std::string> config_token(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// The special token a TemplateProcessing post-processor puts before a single
// sequence ("<|begin_of_text|>" in Llama 3's tokenizer.json), alone or inside
// a Sequence of processors; nullopt when there is none.
std::optional<std::string> template_prefix_token(const json& root) {
  if (!root.contains("post_processor") || !root["post_processor"].is_object()) return std::nullopt;
  const json& top = root["post_processor"];
  std::vector<const json*> processors{&top};
  if (top.value("type", std::string()) == "Sequence" && top.contains("processors") && top["processors"].is_array())
    for (const json& p : top["processors"]) processors.push_back(&p);
  for (const json* p : processors) {
    if (!p->is_object() || p->value("type", std::string()) != "TemplateProcessing") continue;
    if (!p->contains("single") || !(*p)["single"].is_array() || (*p)["single"].empty()) return std::nullopt;
    const json& first = (*p)["single"][0];
    if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
        first["SpecialToken"].contains("id") && first["SpecialToken"]["id"].is_string())
      return first["SpecialToken"]["id"].get<std::string>();
    return std::nullopt;
  }
  return std::nullopt;
}

Result<TokenizerSpec> spec_from_hf_json(std::string_view tokenizer_json, std::string_view config_json,
                                        const std::string& source) {
  const Ctx ctx{source};
  auto parsed = parse_json(tokenizer_json, source);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  if (!root.is_object()) return ctx.error("the top level must be a JSON object");
  if (!root.contains("model") || !root["model"].is_object()) return ctx.error("\"model\" is missing");
  const json& model = root["model"];
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return Unsupported(source + ": tokenizer model type '" + type + "' is not supported (only byte-level BPE)");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) return ctx.error("\"model.vocab\" is missing");
  if (!model.contains("merges") || !model["merges"].is_array()) return ctx.error("\"model.merges\" is missing");

  TokenizerSpec spec;
  spec.source = source;
  spec.kind = TokenizerKind::bpe;

  // Tokens: model.vocab (text -> id) and added_tokens; ids must be 0..n-1 without gaps.
  std::vector<std::optional<SpecToken>> slots;
  const auto place = [&](int64_t id, SpecToken t) -> Status {
    if (id < 0 || id >= (1 << 24)) {
      return ctx.error("token '" + t.text.substr(0, 40) + "' has id " + std::to_string(id) +
                       ", outside 0..16777215");
    }
    if (static_cast<size_t>(id) >= slots.size()) slots.resize(static_cast<size_t>(id) + 1);
    slots[static_cast<size_t>(id)] = std::move(t);
    return Status::Ok();
  };
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) return ctx.error("model.vocab['" + text.substr(0, 40) + "'] is not an integer id");
    TESSERA_RETURN_IF_ERROR(place(id.get<int64_t>(), SpecToken{text, 0.0f, TokenType::normal}));
  }
  if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
    if (!root["added_tokens"].is_array()) return ctx.error("\"added_tokens\" must be an array");
    for (const auto& a : root["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string()) {
        return ctx.error("each added_tokens entry needs an integer \"id\" and a string \"content\"");
      }
      SpecToken t{a["content"].get<std::string>(), 0.0f,
                  a.value("special", false) ? TokenType::control : TokenType::user_defined};
      t.lstrip = a.value("lstrip", false);
      t.rstrip = a.value("rstrip", false);
      TESSERA_RETURN_IF_ERROR(place(a["id"].get<int64_t>(), std::move(t)));
    }
  }
  if (slots.empty()) return ctx.error("the vocabulary is empty");
  spec.tokens.reserve(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i]) return ctx.error("no token has id " + std::to_string(i) + " (ids must be contiguous)");
    spec.tokens.push_back(std::move(*slots[i]));
  }

  // Merges: "a b" or ["a", "b"].
  const json& merges = model["merges"];
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ', 1);
      if (space == std::string::npos) {
        return ctx.error("model.merges[" + std::to_string(i) + "] = '" + s.substr(0, 40) +
                         "' is not two tokens separated by a space");
      }
      spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return ctx.error("model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  if (model.contains("ignore_merges") && model["ignore_merges"].is_boolean()) {
    spec.ignore_merges = model["ignore_merges"].get<bool>();
  } else {
    spec.ignore_merges = false;
  }

  const bool sentencepiece = model.value("byte_fallback", false);
  if (sentencepiece) {
    spec.kind = TokenizerKind::spm;
    TESSERA_RETURN_IF_ERROR(read_sentencepiece_text_rules(ctx, root, spec));
    type_byte_pieces(spec);
    TESSERA_RETURN_IF_ERROR(check_every_split_is_merged(ctx, spec));
    scores_from_merge_ranks(spec);
  } else {
    // Normalizers would change the text before splitting; NFC is accepted
    // because byte-level vocabularies (Qwen2) use it only as a no-op safeguard
    // for already-composed text, as llama.cpp also assumes.
    if (root.contains("normalizer") && !root["normalizer"].is_null()) {
      const std::string n = root["normalizer"].value("type", std::string("?"));
      if (n != "NFC") return Unsupported(source + ": normalizer '" + n + "' is not supported");
    }
    bool byte_level = false;
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
      TESSERA_RETURN_IF_ERROR(collect_pre_tokenizer(ctx, root["pre_tokenizer"], spec.pre_regexes, byte_level));
    }
    if (!byte_level) {
      return Unsupported(source + ": only byte-level BPE (a ByteLevel pre-tokenizer) is supported; "
                         "convert SentencePiece models to GGUF instead");
    }
    spec.pre = spec.pre_regexes.empty() ? "none" : "";
  }

  // Which token texts are which: tokenizer_config.json, then the model's unk_token.
  const auto id_of = [&](const std::string& text) -> std::optional<int32_t> {
    for (size_t i = 0; i < spec.tokens.size(); ++i) {
      if (spec.tokens[i].text == text) return static_cast<int32_t>(i);
    }
    return std::nullopt;
  };
  if (model.contains("unk_token") && model["unk_token"].is_string()) spec.unk_id = id_of(model["unk_token"]);
  if (!config_json.empty()) {
    const std::string config_source = source + " (tokenizer_config.json)";
    auto config = parse_json(config_json, config_source);
    if (!config.ok()) return config.status();
    if (!config->is_object()) return InvalidArgument(config_source + ": the top level must be a JSON object");
    const auto resolve = [&](const char* key, std::optional<int32_t>& dst) -> Status {
      const auto text = config_token(*config, key);
      if (!text) return Status::Ok();
      dst = id_of(*text);
      if (!dst) return InvalidArgument(config_source + ": " + key + " '" + *text + "' is not in the vocabulary");
      return Status::Ok();
    };
    TESSERA_RETURN_IF_ERROR(resolve("bos_token", spec.bos_id));
    TESSERA_RETURN_IF_ERROR(resolve("eos_token", spec.eos_id));
    TESSERA_RETURN_IF_ERROR(resolve("pad_token", spec.pad_id));
    TESSERA_RETURN_IF_ERROR(resolve("unk_token", spec.unk_id));
    if ((*config).contains("add_bos_token") && (*config)["add_bos_token"].is_boolean()) {
      spec.add_bos = (*config)["add_bos_token"].get<bool>();
    }
    if ((*config).contains("add_eos_token") && (*config)["add_eos_token"].is_boolean()) {
      spec.add_eos = (*config)["add_eos_token"].get<bool>();
    }
    if ((*config).contains("chat_template")) {
      const json& ct = (*config)["chat_template"];
      if (ct.is_string()) {
        spec.chat_template = ct.get<std::string>();
      } else if (ct.is_array()) {
        // Named templates: prefer "default", else the first.
        for (const auto& entry : ct) {
          if (entry.is_object() && entry.value("name", std::string()) == "default" && entry.contains("template") &&
              entry["template"].is_string()) {
            spec.chat_template = entry["template"].get<std::string>();
          }
        }
        if (spec.chat_template.empty() && !ct.empty() && ct[0].is_object() && ct[0].contains("template") &&
            ct[0]["template"].is_string()) {
          spec.chat_template = ct[0]["template"].get<std::string>();
        }
      }
    }
  }
  // Typed after tokenizer_config.json, which may name another unk token.
  if (sentencepiece && spec.unk_id) spec.tokens[static_cast<size_t>(*spec.unk_id)].type = TokenType::unknown;
  // Where tokenizer_config.json does not say, a fast tokenizer adds what its
  // post-processor's template puts first (Llama 3: <|begin_of_text|>).
  if (!spec.add_bos) {
    if (const auto prefix = template_prefix_token(root)) {
      const auto id = id_of(*prefix);
      if (id && (!spec.bos_id || *spec.bos_id == *id)) {
        spec.bos_id = id;
        spec.add_bos = true;
      }
    }
  }
  // transformers' LlamaTokenizer adds BOS unless told otherwise; byte-level BPE tokenizers do not.
  spec.add_bos = spec.add_bos.value_or(sentencepiece);
  return spec;
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_hf_json(std::string_view tokenizer_json, std::string_view config_json,
                                                  const std::string& source) {
  try {
    return spec_from_hf_json(tokenizer_json, config_json, source);
  } catch (const json::exception& e) {
    // A field of the wrong JSON type somewhere the checks above do not look.
    return InvalidArgument(source + ": unexpected JSON structure: " + e.what());
  }
}

Result<Tokenizer> load_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  const auto text = read_file(tokenizer_json, "tokenizer file");
  if (!text.ok()) return text.status();
  // tokenizer_config.json (the chat template) may be absent, but not broken.
  std::string config;
  auto config_file = read_file(tokenizer_json.parent_path() / "tokenizer_config.json", "tokenizer config file");
  if (config_file.ok()) {
    config = std::move(config_file).value();
  } else if (config_file.status().code() != StatusCode::not_found) {
    return config_file.status();
  }
  auto spec = tokenizer_spec_from_hf_json(*text, config, tokenizer_json.string());
  if (!spec.ok()) return spec.status();
  return Tokenizer::create(std::move(spec).value());
}

}  // namespace tessera::tok

#include "tokenizer/gguf_loader.hpp"

#include <algorithm>
#include <cctype>

namespace tessera::tok {
namespace {

Status bad(const GgufFile& f, const std::string& what) { return CorruptData(f.path() + ": " + what); }

// llama.cpp marks the special tokens of Phi-3 models as swallowing the
// whitespace on their right (from the model's tokenizer_config, which GGUF lacks).
void apply_phi3_strip_rule(const GgufFile& f, TokenizerSpec& spec) {
  std::string name = f.get_string("general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  for (auto& t : spec.tokens) {
    const bool special = t.type == TokenType::control || t.type == TokenType::user_defined ||
                         t.type == TokenType::unknown;
    if (special || t.text == "</s>") t.rstrip = true;
    if (t.text == "<unk>" || t.text == "<s>" || t.text == "<|endoftext|>") t.rstrip = false;
  }
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_gguf(const GgufFile& f) {
  TokenizerSpec spec;
  spec.source = f.path();
  const auto model = f.get_string("tokenizer.ggml.model");
  if (!model) return bad(f, "tokenizer.ggml.model is missing, so the file has no tokenizer");
  if (*model == "llama") {
    spec.kind = TokenizerKind::spm;
  } else if (*model == "gpt2") {
    spec.kind = TokenizerKind::bpe;
  } else {
    return Unsupported(f.path() + ": tokenizer model '" + *model +
                       "' is not supported (supported: 'llama' SentencePiece, 'gpt2' byte-level BPE)");
  }
  spec.pre = f.get_string("tokenizer.ggml.pre").value_or("");

  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return bad(f, "tokenizer.ggml.tokens is missing or not an array of strings");
  const size_t n = tokens->size();
  std::optional<std::vector<float>> scores;
  if (f.find("tokenizer.ggml.scores") != nullptr) {
    scores = f.get_float_array("tokenizer.ggml.scores");
    if (!scores || scores->size() < n) {
      return bad(f, "tokenizer.ggml.scores must be a numeric array with one score per token (" + std::to_string(n) + ")");
    }
  }
  std::optional<std::vector<int64_t>> types;
  if (f.find("tokenizer.ggml.token_type") != nullptr) {
    types = f.get_int_array("tokenizer.ggml.token_type");
    if (!types || types->size() < n) {
      return bad(f, "tokenizer.ggml.token_type must be an integer array with one type per token (" +
                        std::to_string(n) + ")");
    }
  }
  spec.tokens.resize(n);
  for (size_t i = 0; i < n; ++i) {
    SpecToken& t = spec.tokens[i];
    t.text = std::move((*tokens)[i]);
    if (t.text.empty()) t.text = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp: keeps texts unique
    if (scores) t.score = (*scores)[i];
    if (types) {
      const int64_t ty = (*types)[i];
      t.type = ty >= 0 && ty <= 6 ? static_cast<TokenType>(ty) : TokenType::undefined;
    }
  }

  if (spec.kind == TokenizerKind::bpe) {
    auto merges = f.get_string_array("tokenizer.ggml.merges");
    if (!merges) return bad(f, "tokenizer.ggml.merges is missing or not an array of strings (needed by 'gpt2')");
    spec.merges.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
      const std::string& m = (*merges)[i];
      const size_t space = m.find(' ', 1);  // a part may itself start with a space
      if (space == std::string::npos) {
        return bad(f, "tokenizer.ggml.merges[" + std::to_string(i) + "] = '" + m.substr(0, 40) +
                          "' is not two tokens separated by a space");
      }
      spec.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
  } else {
    // SentencePiece defaults, used when the metadata does not say.
    spec.unk_id = 0;
    spec.bos_id = 1;
    spec.eos_id = 2;
  }

  const auto read_id = [&](const char* key, std::optional<int32_t>& dst) -> Status {
    if (f.find(key) == nullptr) return Status::Ok();
    const auto v = f.get_int(key);
    if (!v || *v < 0 || *v >= static_cast<int64_t>(n)) {
      return bad(f, std::string(key) + " is not a token id below the vocabulary size " + std::to_string(n));
    }
    dst = static_cast<int32_t>(*v);
    return Status::Ok();
  };
  TESSERA_RETURN_IF_ERROR(read_id("tokenizer.ggml.bos_token_id", spec.bos_id));
  TESSERA_RETURN_IF_ERROR(read_id("tokenizer.ggml.eos_token_id", spec.eos_id));
  TESSERA_RETURN_IF_ERROR(read_id("tokenizer.ggml.eot_token_id", spec.eot_id));
  TESSERA_RETURN_IF_ERROR(read_id("tokenizer.ggml.eom_token_id", spec.eom_id));
  TESSERA_RETURN_IF_ERROR(read_id("tokenizer.ggml.unknown_token_id", spec.unk_id));
  TESSERA_RETURN_IF_ERROR(read_id("tokenizer.ggml.padding_token_id", spec.pad_id));
  // Defaults that point outside a small vocabulary are dropped, as in llama.cpp.
  for (auto* id : {&spec.unk_id, &spec.bos_id, &spec.eos_id}) {
    if (*id && **id >= static_cast<int32_t>(n)) id->reset();
  }
  if (f.find("tokenizer.ggml.add_bos_token")) spec.add_bos = f.get_bool("tokenizer.ggml.add_bos_token");
  if (f.find("tokenizer.ggml.add_eos_token")) spec.add_eos = f.get_bool("tokenizer.ggml.add_eos_token");
  if (f.find("tokenizer.ggml.add_space_prefix")) spec.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix");
  spec.chat_template = f.get_string("tokenizer.chat_template").value_or("");
  apply_phi3_strip_rule(f, spec);
  return spec;
}

Result<Tokenizer> tokenizer_from_gguf(const GgufFile& file) {
  auto spec = tokenizer_spec_from_gguf(file);
  if (!spec.ok()) return spec.status();
  return Tokenizer::create(std::move(spec).value());
}

}  // namespace tessera::tok

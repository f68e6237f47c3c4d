#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <array>

#include "tokenizer/bpe_encoder.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/regex_splitter.hpp"
#include "tokenizer/special_partition.hpp"
#include "tokenizer/spm_encoder.hpp"
#include "tokenizer/vocab.hpp"

namespace tessera::tok {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// Token texts llama.cpp recognizes as end-of-turn, in order of preference.
constexpr std::array<std::string_view, 10> kEotNames = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<end_of_utterance>"};
// Further texts that also end generation (llama.cpp's EOG list).
constexpr std::array<std::string_view, 3> kExtraEogNames = {"<|eom_id|>", "<|return|>", "<|call|>"};

// Pre-tokenizers whose Hugging Face config emits a whole word that is a token
// without merging, and (for Llama 3) add BOS by default; from llama.cpp.
bool pre_adds_bos(std::string_view pre) { return pre_tokenizer_ignores_merges(pre); }

}  // namespace

struct Tokenizer::Impl {
  TokenizerSpec spec;  // settings; spec.tokens/merges are moved into vocab
  Vocab vocab;
  std::optional<RegexSplitter> splitter;  // BPE only
  std::vector<int32_t> specials;          // control/user-defined/unknown ids, longest text first
  std::vector<int32_t> eog;               // sorted end-of-generation ids
  int32_t bos = -1, eos = -1, eot = -1, pad = -1, unk = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false, ignore_merges = false;

  std::optional<int32_t> unk_opt() const { return unk >= 0 ? std::optional<int32_t>(unk) : std::nullopt; }
  void encode_raw(std::string_view text, bool prefix_space, std::vector<int32_t>& out) const;
};

Result<Tokenizer> Tokenizer::create(TokenizerSpec spec) {
  auto vocab = Vocab::build(spec);
  if (!vocab.ok()) return vocab.status();
  auto impl = std::make_shared<Impl>();
  impl->vocab = std::move(vocab).value();
  const int32_t n = impl->vocab.size();

  // Special ids: out-of-range ids are an error rather than a silent fallback,
  // since they would point the engine at the wrong token.
  const auto check_id = [&](const std::optional<int32_t>& id, const char* what, int32_t& dst) -> Status {
    if (!id) return Status::Ok();
    if (*id < 0 || *id >= n) {
      return InvalidArgument(spec.source + ": " + what + " token id " + std::to_string(*id) +
                             " is outside the vocabulary of " + std::to_string(n) + " tokens");
    }
    dst = *id;
    return Status::Ok();
  };
  int32_t eom = -1;
  TESSERA_RETURN_IF_ERROR(check_id(spec.bos_id, "BOS", impl->bos));
  TESSERA_RETURN_IF_ERROR(check_id(spec.eos_id, "EOS", impl->eos));
  TESSERA_RETURN_IF_ERROR(check_id(spec.eot_id, "EOT", impl->eot));
  TESSERA_RETURN_IF_ERROR(check_id(spec.eom_id, "EOM", eom));
  TESSERA_RETURN_IF_ERROR(check_id(spec.pad_id, "padding", impl->pad));
  TESSERA_RETURN_IF_ERROR(check_id(spec.unk_id, "unknown", impl->unk));

  if (spec.kind == TokenizerKind::bpe) {
    std::vector<std::string> regexes = spec.pre_regexes;
    if (regexes.empty()) {
      auto named = pre_tokenizer_regexes(spec.pre.empty() ? "default" : spec.pre);
      if (!named.ok()) return Status(named.status().code(), spec.source + ": " + named.status().message());
      regexes = std::move(named).value();
    }
    auto splitter = RegexSplitter::create(std::move(regexes));
    if (!splitter.ok()) return Status(splitter.status().code(), spec.source + ": " + splitter.status().message());
    impl->splitter = std::move(splitter).value();
    impl->ignore_merges = spec.ignore_merges.value_or(pre_tokenizer_ignores_merges(spec.pre));
    impl->add_bos = spec.add_bos.value_or(pre_adds_bos(spec.pre));
    impl->add_space_prefix = false;
  } else {
    impl->add_bos = spec.add_bos.value_or(true);
    impl->add_space_prefix = spec.add_space_prefix.value_or(true);
  }
  impl->add_eos = spec.add_eos.value_or(false);
  if (impl->add_bos && impl->bos < 0) {
    return InvalidArgument(spec.source + ": the model asks for a BOS token (add_bos_token) but names none");
  }
  if (impl->add_eos && impl->eos < 0) {
    return InvalidArgument(spec.source + ": the model asks for an EOS token (add_eos_token) but names none");
  }

  // End of turn by name when the metadata does not say, then the EOG set.
  if (impl->eot < 0) {
    for (const auto name : kEotNames) {
      if (const auto id = impl->vocab.find(name)) {
        impl->eot = *id;
        break;
      }
    }
  }
  for (const int32_t id : {impl->eos, impl->eot, eom}) {
    if (id >= 0) impl->eog.push_back(id);
  }
  const auto add_eog_by_name = [&](std::string_view name) {
    const auto id = impl->vocab.find(name);
    if (id && impl->vocab.token(*id).type == TokenType::control) impl->eog.push_back(*id);
  };
  for (const auto name : kEotNames) add_eog_by_name(name);
  for (const auto name : kExtraEogNames) add_eog_by_name(name);
  std::sort(impl->eog.begin(), impl->eog.end());
  impl->eog.erase(std::unique(impl->eog.begin(), impl->eog.end()), impl->eog.end());

  for (int32_t id = 0; id < n; ++id) {
    const auto t = impl->vocab.token(id).type;
    if (t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown) {
      impl->specials.push_back(id);
    }
  }
  std::stable_sort(impl->specials.begin(), impl->specials.end(), [&](int32_t a, int32_t b) {
    return impl->vocab.token(a).text.size() > impl->vocab.token(b).text.size();
  });

  spec.tokens.clear();
  spec.tokens.shrink_to_fit();
  spec.merges.clear();
  spec.merges.shrink_to_fit();
  impl->spec = std::move(spec);
  return Tokenizer(std::move(impl));
}

void Tokenizer::Impl::encode_raw(std::string_view text, bool prefix_space, std::vector<int32_t>& out) const {
  if (spec.kind == TokenizerKind::spm) {
    std::string escaped = prefix_space ? " " : "";
    escaped += text;
    replace_all(escaped, " ", kSpmSpace);
    if (!spec.split_at_space_marks) return spm_encode(vocab, escaped, unk_opt(), out);
    const std::string_view all(escaped);
    for (size_t start = 0; start < all.size();) {
      const size_t next = all.find(kSpmSpace, start + 1);
      const size_t end = next == std::string_view::npos ? all.size() : next;
      spm_encode(vocab, all.substr(start, end - start), unk_opt(), out);
      start = end;
    }
    return;
  }
  for (const auto piece : splitter->split(text)) {
    bpe_encode_word(vocab, bytes_to_symbols(piece), ignore_merges, out);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, std::optional<bool> add_bos, bool parse_special) const {
  const Impl& m = *impl_;
  const bool with_specials = add_bos.value_or(true);
  std::vector<int32_t> out;
  if (add_bos.value_or(m.add_bos) && m.bos >= 0) out.push_back(m.bos);

  std::vector<int32_t> candidates;
  const std::vector<int32_t>* specials = &m.specials;
  if (!parse_special) {
    // Control and unknown tokens are plain text then; user-defined ones still split.
    for (const int32_t id : m.specials) {
      if (m.vocab.token(id).type == TokenType::user_defined) candidates.push_back(id);
    }
    specials = &candidates;
  }
  // SPM: a space is put before the text and after each special token (less
  // where tokenizer.json's Metaspace rules say otherwise: see TokenizerSpec).
  bool prev_special = true, at_start = true;
  for (const auto& f : partition_special(text, m.vocab, *specials)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
    } else {
      const bool prefix = m.add_space_prefix && prev_special &&
                          !(m.spec.space_prefix_first_segment_only && !at_start) &&
                          !(m.spec.space_prefix_unless_space &&
                            (f.text.starts_with(' ') || f.text.starts_with(kSpmSpace)));
      m.encode_raw(f.text, prefix, out);
      prev_special = false;
    }
    at_start = false;
  }
  if (with_specials && m.add_eos && m.eos >= 0) out.push_back(m.eos);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  const Impl& m = *impl_;
  if (id < 0 || id >= m.vocab.size()) return {};
  const SpecToken& t = m.vocab.token(id);
  switch (t.type) {
    case TokenType::control:
    case TokenType::unknown:
      return render_special ? t.text : std::string();
    case TokenType::user_defined:
      return t.text;
    case TokenType::byte: {
      // <0xNN>
      const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
      };
      if (t.text.size() == 6 && t.text.starts_with("<0x") && t.text.back() == '>' && hex(t.text[3]) >= 0 &&
          hex(t.text[4]) >= 0) {
        return std::string(1, static_cast<char>(hex(t.text[3]) * 16 + hex(t.text[4])));
      }
      return t.text;
    }
    case TokenType::normal: {
      if (m.spec.kind == TokenizerKind::spm) {
        std::string s = t.text;
        replace_all(s, kSpmSpace, " ");
        return s;
      }
      auto bytes = symbols_to_bytes(t.text);
      return bytes ? *bytes : t.text;
    }
    case TokenType::undefined:
    case TokenType::unused:
      return {};
  }
  return {};
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  bool strip_space = impl_->add_space_prefix;  // undo the space encode() put in front
  for (const int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (piece.empty()) continue;
    if (strip_space && token_type(id) != TokenType::control && piece.front() == ' ') piece.erase(0, 1);
    strip_space = false;
    out += piece;
  }
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return id >= 0 && id < impl_->vocab.size() ? impl_->vocab.token(id).text : kEmpty;
}
std::optional<int32_t> Tokenizer::find_token(std::string_view text) const { return impl_->vocab.find(text); }
TokenType Tokenizer::token_type(int32_t id) const {
  return id >= 0 && id < impl_->vocab.size() ? impl_->vocab.token(id).type : TokenType::undefined;
}
int32_t Tokenizer::vocab_size() const { return impl_->vocab.size(); }
TokenizerKind Tokenizer::kind() const { return impl_->spec.kind; }
int32_t Tokenizer::bos_id() const { return impl_->bos; }
int32_t Tokenizer::eos_id() const { return impl_->eos; }
int32_t Tokenizer::eot_id() const { return impl_->eot; }
int32_t Tokenizer::pad_id() const { return impl_->pad; }
int32_t Tokenizer::unk_id() const { return impl_->unk; }
bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(impl_->eog.begin(), impl_->eog.end(), id);
}
bool Tokenizer::add_bos() const { return impl_->add_bos; }
bool Tokenizer::add_eos() const { return impl_->add_eos; }
bool Tokenizer::add_space_prefix() const { return impl_->add_space_prefix; }
const std::string& Tokenizer::chat_template() const { return impl_->spec.chat_template; }
const std::string& Tokenizer::source() const { return impl_->spec.source; }

}  // namespace tessera::tok

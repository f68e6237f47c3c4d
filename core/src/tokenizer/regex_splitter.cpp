#include "tokenizer/regex_splitter.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

namespace tessera::tok {

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;
RegexSplitter::~RegexSplitter() = default;

Result<RegexSplitter> RegexSplitter::create(std::vector<std::string> patterns) {
  RegexSplitter s;
  for (const auto& p : patterns) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    // DOLLAR_ENDONLY: `$` means the end of the piece, not "before a final newline".
    const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p.data()), p.size(), options,
                                     &err, &err_offset, nullptr);
    if (code == nullptr) {
      std::array<PCRE2_UCHAR, 256> msg{};
      pcre2_get_error_message(err, msg.data(), msg.size());
      return InvalidArgument("pre-tokenizer regex '" + p + "' is invalid at offset " +
                             std::to_string(err_offset) + ": " + reinterpret_cast<const char*>(msg.data()));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; the interpreter is the fallback
    auto c = std::make_unique<Compiled>();
    c->code = code;
    s.compiled_.push_back(std::move(c));
  }
  s.patterns_ = std::move(patterns);
  return s;
}

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  for (const auto& c : compiled_) {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(c->code, nullptr), &pcre2_match_data_free);
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2);
    for (const auto piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t pos = 0;   // where the search resumes
      size_t kept = 0;  // end of the last piece emitted
      while (pos <= piece.size()) {
        const int rc = pcre2_match(c->code, subject, piece.size(), pos, 0, md.get(), nullptr);
        if (rc < 0) break;  // no further match (errors are treated the same: keep the rest whole)
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        const size_t start = ov[0], end = ov[1];
        if (end == start) {
          // Empty match: nothing to emit; step over one byte so the loop advances.
          pos = end + 1;
          continue;
        }
        if (start > kept) next.push_back(piece.substr(kept, start - kept));
        next.push_back(piece.substr(start, end - start));
        kept = pos = end;
      }
      if (kept < piece.size()) next.push_back(piece.substr(kept));
    }
    pieces = std::move(next);
  }
  return pieces;
}

const std::string& gpt2_split_regex() {
  static const std::string r =
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  return r;
}

Result<std::vector<std::string>> pre_tokenizer_regexes(std::string_view pre) {
  // Llama 3 and its relatives: case-insensitive contractions, digits in groups of three.
  static const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  // Qwen2: as Llama 3 but one digit per piece.
  static const std::string qwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static const std::string qwen35 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  // GPT-2 without the final `|\s+`, as llama.cpp writes it; identical splits
  // because unmatched whitespace becomes its own piece anyway.
  const std::string& gpt2 = gpt2_split_regex();

  if (pre == "default") {
    return std::vector<std::string>{R"([\p{P}\$\+<=>\^~\|]+)", gpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  }
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "dbrx" || pre == "smaug-bpe" ||
      pre == "falcon3" || pre == "pixtral" || pre == "chatglm-bpe") {
    return std::vector<std::string>{llama3};
  }
  if (pre == "qwen2" || pre == "stablelm2" || pre == "deepseek-r1-qwen") {
    return std::vector<std::string>{qwen2};
  }
  if (pre == "qwen35") return std::vector<std::string>{qwen35};
  if (pre == "gpt-2" || pre == "mpt" || pre == "olmo" || pre == "phi-2" || pre == "jais") {
    return std::vector<std::string>{gpt2};
  }
  // Digits one by one, then the GPT-2 regex (Hugging Face: Digits(individual) + ByteLevel).
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" || pre == "codeshell" ||
      pre == "exaone") {
    return std::vector<std::string>{R"(\p{N})", gpt2};
  }
  if (pre == "falcon") {
    return std::vector<std::string>{R"([\p{P}\$\+<=>\^~\|`]+)", gpt2, "[0-9][0-9][0-9]"};
  }
  if (pre == "deepseek-coder") {
    return std::vector<std::string>{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)",
                                    "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+", R"(\p{N})"};
  }
  if (pre == "deepseek-llm") {
    return std::vector<std::string>{
        "[\r\n]",
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
        "\\s+$",
        "[一-龥ࠀ-一가-퟿]+",
        "\\p{N}+"};
  }
  return Unsupported("unknown pre-tokenizer type '" + std::string(pre) +
                     "' (supported: default, gpt-2, llama-bpe/llama3, qwen2, qwen35, smollm, starcoder, refact, "
                     "command-r, falcon, mpt, olmo, deepseek-llm, deepseek-coder, ...)");
}

}  // namespace tessera::tok

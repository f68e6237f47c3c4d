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

bool pre_tokenizer_ignores_merges(std::string_view pre) {
  return pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" || pre == "pixtral" ||
         pre == "stablelm2";
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

  if (pre == "none") return std::vector<std::string>{};  // no splitting: the text is one word
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
  // Character ranges are written as \x{...} escapes: literal characters here
  // would be at the mercy of editors that normalize Unicode (U+1FD3 -> U+0390).
  static const std::string cjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
  if (pre == "deepseek-coder") {
    return std::vector<std::string>{R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", cjk, R"(\p{N})"};
  }
  if (pre == "deepseek-llm") {
    return std::vector<std::string>{
        R"([\r\n])",
        R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
        R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
        R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
        R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
        R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
        R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
        R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
        R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
        R"(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
        R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
        R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
        R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
        R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)",
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)",
        cjk,
        R"(\p{N}+)"};
  }
  return Unsupported("unknown pre-tokenizer type '" + std::string(pre) +
                     "' (supported: default, gpt-2, llama-bpe/llama3, qwen2, qwen35, smollm, starcoder, refact, "
                     "command-r, falcon, mpt, olmo, deepseek-llm, deepseek-coder, ...)");
}

}  // namespace tessera::tok

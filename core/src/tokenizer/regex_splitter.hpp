// tokenizer/regex_splitter.hpp: pre-tokenization by a sequence of Unicode regexes.
//
// Each regex splits every current piece further: the matches and the stretches
// between them both become pieces (Hugging Face's Split with behavior
// "Isolated", which is how ByteLevel, Digits and Split pre-tokenizers compose).
// Regexes are PCRE2 with UTF + UCP, so \p{L}, \p{N}, \s and (?i:...) follow
// Unicode properties exactly as the original (Rust/Oniguruma) patterns intend.
// Invalid UTF-8 in the input never matches and ends up in the gaps, so arbitrary
// bytes are split without error.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.hpp"

namespace tessera::tok {

class RegexSplitter {
 public:
  // Compiles the patterns; a pattern PCRE2 rejects is an invalid_argument error
  // naming it and the offset of the problem.
  static Result<RegexSplitter> create(std::vector<std::string> patterns);

  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  ~RegexSplitter();

  // Pieces of `text`, in order; their concatenation is `text`. Thread-safe.
  std::vector<std::string_view> split(std::string_view text) const;

  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Compiled;
  RegexSplitter() = default;
  std::vector<std::string> patterns_;
  std::vector<std::unique_ptr<Compiled>> compiled_;
};

// The split regexes llama.cpp uses for a GGUF `tokenizer.ggml.pre` name
// ("gpt-2", "llama-bpe", "qwen2", "smollm", ...); unsupported for an unknown name.
Result<std::vector<std::string>> pre_tokenizer_regexes(std::string_view pre);

// Whether llama.cpp emits a word that is itself a token whole, without its
// merges, for a GGUF `tokenizer.ggml.pre` name (Llama 3's ignore_merges).
bool pre_tokenizer_ignores_merges(std::string_view pre);

// The regex inside Hugging Face's ByteLevel pre-tokenizer (use_regex = true).
const std::string& gpt2_split_regex();

}  // namespace tessera::tok

// Hand-made tiny vocabularies for the tokenizer tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer_spec.hpp"

namespace tessera::tok::testing {

// A byte-level BPE spec: the 256 byte symbols (ids 0..255), then `extra`
// tokens in order (merge results and specials), with `merges` given in
// readable text ("he" + "llo"); spaces in them are written as ' ' and
// converted to the byte-level 'Ġ'.
inline TokenizerSpec tiny_bpe(const std::vector<std::string>& extra,
                              const std::vector<std::pair<std::string, std::string>>& merges,
                              const std::vector<std::string>& control = {}) {
  TokenizerSpec s;
  s.source = "tiny-bpe";
  s.kind = TokenizerKind::bpe;
  s.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) s.tokens.push_back({byte_to_symbol(static_cast<uint8_t>(b))});
  for (const auto& t : extra) s.tokens.push_back({bytes_to_symbols(t)});
  for (const auto& [a, b] : merges) s.merges.emplace_back(bytes_to_symbols(a), bytes_to_symbols(b));
  for (const auto& c : control) s.tokens.push_back({c, 0.0f, TokenType::control});
  return s;
}

// A SentencePiece spec: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>
// (ids 3..258), then `pieces` with their scores ("▁" written as U+2581).
inline TokenizerSpec tiny_spm(const std::vector<std::pair<std::string, float>>& pieces) {
  TokenizerSpec s;
  s.source = "tiny-spm";
  s.kind = TokenizerKind::spm;
  s.tokens.push_back({"<unk>", 0.0f, TokenType::unknown});
  s.tokens.push_back({"<s>", 0.0f, TokenType::control});
  s.tokens.push_back({"</s>", 0.0f, TokenType::control});
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    s.tokens.push_back({std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0.0f, TokenType::byte});
  }
  for (const auto& [text, score] : pieces) s.tokens.push_back({text, score, TokenType::normal});
  s.unk_id = 0;
  s.bos_id = 1;
  s.eos_id = 2;
  return s;
}

}  // namespace tessera::tok::testing

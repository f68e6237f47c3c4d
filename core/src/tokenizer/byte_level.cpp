#include "tokenizer/byte_level.hpp"

#include <array>
#include <unordered_map>

#include "tokenizer/utf8.hpp"

namespace tessera::tok {
namespace {

struct ByteTables {
  std::array<std::string, 256> symbol;             // byte -> UTF-8 symbol
  std::unordered_map<uint32_t, uint8_t> to_byte;   // symbol code point -> byte

  ByteTables() {
    const auto printable = [](uint32_t b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next_extra = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? b : next_extra++;
      utf8_append(symbol[b], cp);
      to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byte_to_symbol(uint8_t b) { return tables().symbol[b]; }

std::string bytes_to_symbols(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += tables().symbol[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> symbols_to_bytes(std::string_view symbols) {
  std::string out;
  out.reserve(symbols.size());
  size_t i = 0;
  while (i < symbols.size()) {
    const size_t len = utf8_valid_prefix_char(symbols.substr(i));
    if (len == 0) return std::nullopt;
    const auto it = tables().to_byte.find(utf8_decode(symbols.substr(i), len));
    if (it == tables().to_byte.end()) return std::nullopt;
    out += static_cast<char>(it->second);
    i += len;
  }
  return out;
}

}  // namespace tessera::tok

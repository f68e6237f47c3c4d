#include "tokenizer/utf8.hpp"

namespace tessera::tok {

size_t utf8_sequence_length(uint8_t b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;  // continuation or invalid lead byte: consume one byte
}

namespace {

// Checks the sequence at s[0, len): continuation bytes, no overlongs, no
// surrogates, nothing above U+10FFFF. `have` bytes are available (may be < len).
// Returns 1 when valid and complete, 0 when invalid, -1 when a valid prefix is cut short.
int check_sequence(std::string_view s, size_t len, size_t have) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (len == 1) return b0 < 0x80 ? 1 : 0;
  for (size_t i = 1; i < len && i < have; ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    if ((b & 0xC0) != 0x80) return 0;
    if (i == 1) {
      // The second byte carries the overlong/surrogate/range constraints.
      if (b0 == 0xE0 && b < 0xA0) return 0;
      if (b0 == 0xED && b > 0x9F) return 0;
      if (b0 == 0xF0 && b < 0x90) return 0;
      if (b0 == 0xF4 && b > 0x8F) return 0;
    }
  }
  if (len == 2 && b0 < 0xC2) return 0;
  if (len == 4 && b0 > 0xF4) return 0;
  return have >= len ? 1 : -1;
}

}  // namespace

size_t utf8_valid_prefix_char(std::string_view s) {
  if (s.empty()) return 0;
  const size_t len = utf8_sequence_length(static_cast<uint8_t>(s[0]));
  return check_sequence(s, len, s.size()) == 1 ? len : 0;
}

Utf8Scan utf8_scan(std::string_view s) {
  Utf8Scan r;
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = utf8_sequence_length(static_cast<uint8_t>(s[i]));
    const int state = check_sequence(s.substr(i), len, s.size() - i);
    if (state == 1) {
      i += len;
      continue;
    }
    r.incomplete_tail = state == -1;
    break;
  }
  r.valid_bytes = i;
  return r;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = utf8_valid_prefix_char(s.substr(i));
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for one invalid byte
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

uint32_t utf8_decode(std::string_view s, size_t len) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i])); };
  switch (len) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

}  // namespace tessera::tok

// tokenizer/utf8.hpp: the few UTF-8 operations the tokenizers need.
//
// All functions accept arbitrary bytes: invalid or truncated sequences are
// reported, never read past the end of the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tok {

// Length in bytes of a UTF-8 sequence announced by lead byte `b` (1 for ASCII,
// continuation bytes and invalid lead bytes, so callers always make progress).
size_t utf8_sequence_length(uint8_t b);

// Length of the complete, valid UTF-8 sequence at the start of `s`; 0 when `s`
// starts with an invalid or truncated sequence (or is empty).
size_t utf8_valid_prefix_char(std::string_view s);

// Number of bytes at the start of `s` that form whole, valid characters, and
// how the rest looks: `incomplete_tail` is true when the remaining bytes are a
// valid but unfinished sequence (more bytes may complete it).
struct Utf8Scan {
  size_t valid_bytes = 0;
  bool incomplete_tail = false;
};
Utf8Scan utf8_scan(std::string_view s);

// Appends the UTF-8 encoding of code point `cp` (cp <= 0x10FFFF).
void utf8_append(std::string& out, uint32_t cp);

// Replaces every invalid byte sequence in `s` with U+FFFD.
std::string utf8_sanitize(std::string_view s);

// Code point at the start of a valid sequence of `len` bytes.
uint32_t utf8_decode(std::string_view s, size_t len);

}  // namespace tessera::tok

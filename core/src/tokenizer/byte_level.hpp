// tokenizer/byte_level.hpp: GPT-2's reversible byte <-> printable character map.
//
// Byte-level BPE vocabularies spell every byte as a visible Unicode character so
// that merges never see control bytes or spaces: the printable Latin-1 bytes map
// to themselves and the other 68 bytes to U+0100.. in byte order (space becomes
// 'Ġ', newline 'Ċ').
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::tok {

// The UTF-8 spelling of byte `b` in a byte-level vocabulary.
const std::string& byte_to_symbol(uint8_t b);

// Text -> byte-level spelling (each input byte becomes one symbol).
std::string bytes_to_symbols(std::string_view bytes);

// Byte-level spelling -> raw bytes; std::nullopt when a character is not one of
// the 256 symbols (e.g. an added token written in plain text).
std::optional<std::string> symbols_to_bytes(std::string_view symbols);

}  // namespace tessera::tok

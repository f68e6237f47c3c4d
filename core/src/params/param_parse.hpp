// param_parse.hpp: turning TOML values into validated plugin parameters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "tessera/params.hpp"
#include "tessera/status.hpp"

namespace tessera {

// "512MiB", "2GB", "64 KiB", "1048576" -> bytes. Binary (KiB, MiB, GiB, TiB)
// and decimal (KB, MB, GB, TB) units; a bare number is bytes.
Result<int64_t> parse_byte_size(std::string_view text);

// A TOML node converted to the spec's type and checked against its range and
// choices. Messages carry no location; the caller prefixes file:line:column.
Result<ParamValue> param_from_toml(const ParamSpec& spec, const toml::node& node);

// A literal written in TOML syntax ("16", "0.7", "\"auto\"", "[\"a\"]") parsed for
// `spec`: defaults in ParamSpec tables and `--set key=value` overrides use it. For
// string and path parameters, text that is not a TOML literal is taken verbatim.
Result<ParamValue> parse_param_literal(const ParamSpec& spec, std::string_view text);

// Human form of a value, for `tessera plugins --describe` and messages.
std::string format_param_value(const ParamValue& value);

}  // namespace tessera

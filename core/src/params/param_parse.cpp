#include "params/param_parse.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tessera {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::array: return "array";
    case toml::node_type::table: return "table";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

Status wrong_type(const ParamSpec& spec, const toml::node& node) {
  return InvalidArgument(fmt::format("'{}' must be a {}, not a {}", spec.name, param_type_name(spec.type),
                                     node_type_name(node)));
}

bool has_range(const ParamSpec& spec) { return spec.min_value <= spec.max_value; }

Status check_range(const ParamSpec& spec, double v) {
  if (!has_range(spec)) return Status::Ok();
  if (v < spec.min_value || v > spec.max_value)
    return InvalidArgument(fmt::format("'{}' = {} is out of range [{}, {}]", spec.name, v, spec.min_value,
                                       spec.max_value));
  return Status::Ok();
}

Status check_choice(const ParamSpec& spec, const std::string& v) {
  if (spec.choices == nullptr) return Status::Ok();
  std::string_view rest = spec.choices;
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    if (rest.substr(0, bar) == v) return Status::Ok();
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  std::string list(spec.choices);
  for (auto& c : list) if (c == '|') c = ',';
  return InvalidArgument(fmt::format("'{}' = \"{}\" is not one of: {}", spec.name, v, list));
}

}  // namespace

Result<int64_t> parse_byte_size(std::string_view text) {
  const std::string_view s = trim(text);
  double number = 0;
  const auto* begin = s.data();
  const auto* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || ptr == begin)
    return InvalidArgument(fmt::format("\"{}\" is not a byte size (try \"512MiB\" or \"2GB\")", text));
  std::string unit(trim(std::string_view(ptr, static_cast<size_t>(end - ptr))));
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kib" || unit == "k") scale = 1024.0;
  else if (unit == "mib" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else
    return InvalidArgument(fmt::format("\"{}\" has an unknown unit '{}' (use B, KiB, MiB, GiB, KB, MB, GB)", text,
                                       unit));
  const double bytes = number * scale;
  if (!(bytes >= 0) || bytes > 9.0e18)
    return InvalidArgument(fmt::format("\"{}\" is not a valid byte size", text));
  return static_cast<int64_t>(std::llround(bytes));
}

Result<ParamValue> param_from_toml(const ParamSpec& spec, const toml::node& node) {
  switch (spec.type) {
    case ParamType::boolean:
      if (auto v = node.value_exact<bool>()) return ParamValue(*v);
      return wrong_type(spec, node);
    case ParamType::integer: {
      auto v = node.value_exact<int64_t>();
      if (!v) return wrong_type(spec, node);
      TESSERA_RETURN_IF_ERROR(check_range(spec, static_cast<double>(*v)));
      return ParamValue(*v);
    }
    case ParamType::real: {
      double d = 0;
      if (auto f = node.value_exact<double>()) d = *f;
      else if (auto i = node.value_exact<int64_t>()) d = static_cast<double>(*i);
      else return wrong_type(spec, node);
      if (!std::isfinite(d)) return InvalidArgument(fmt::format("'{}' must be finite", spec.name));
      TESSERA_RETURN_IF_ERROR(check_range(spec, d));
      return ParamValue(d);
    }
    case ParamType::string:
    case ParamType::path: {
      auto v = node.value_exact<std::string>();
      if (!v) return wrong_type(spec, node);
      if (spec.type == ParamType::string) TESSERA_RETURN_IF_ERROR(check_choice(spec, *v));
      return ParamValue(*v);
    }
    case ParamType::bytes: {
      int64_t bytes = 0;
      if (auto i = node.value_exact<int64_t>()) {
        bytes = *i;
      } else if (auto s = node.value_exact<std::string>()) {
        auto parsed = parse_byte_size(*s);
        if (!parsed.ok()) return InvalidArgument(fmt::format("'{}': {}", spec.name, parsed.status().message()));
        bytes = *parsed;
      } else {
        return wrong_type(spec, node);
      }
      TESSERA_RETURN_IF_ERROR(check_range(spec, static_cast<double>(bytes)));
      return ParamValue(bytes);
    }
    case ParamType::string_list: {
      const auto* arr = node.as_array();
      if (arr == nullptr) return wrong_type(spec, node);
      std::vector<std::string> out;
      for (const auto& item : *arr) {
        auto s = item.value_exact<std::string>();
        if (!s) return InvalidArgument(fmt::format("'{}' must be an array of strings; it holds a {}", spec.name,
                                                   node_type_name(item)));
        out.push_back(*s);
      }
      return ParamValue(std::move(out));
    }
  }
  return Internal("unknown parameter type");
}

Result<ParamValue> parse_param_literal(const ParamSpec& spec, std::string_view text) {
  toml::table doc;
  bool parsed = false;
  try {
    doc = toml::parse(fmt::format("v = {}", text));
    parsed = true;
  } catch (const toml::parse_error&) {
  }
  if (parsed) {
    if (const toml::node* node = doc.get("v")) {
      auto v = param_from_toml(spec, *node);
      if (v.ok() || (spec.type != ParamType::string && spec.type != ParamType::path && spec.type != ParamType::bytes))
        return v;
    }
  }
  // Unquoted text is taken verbatim for strings, paths and byte sizes.
  if (spec.type == ParamType::string || spec.type == ParamType::path || spec.type == ParamType::bytes) {
    toml::value<std::string> node{std::string(text)};
    return param_from_toml(spec, node);
  }
  return InvalidArgument(fmt::format("'{}': \"{}\" is not a valid {}", spec.name, text, param_type_name(spec.type)));
}

std::string format_param_value(const ParamValue& value) {
  struct Visitor {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(const std::string& s) const { return fmt::format("\"{}\"", s); }
    std::string operator()(const std::vector<std::string>& l) const {
      return fmt::format("[{}]", fmt::join(l, ", "));
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace tessera

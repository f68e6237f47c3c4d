// tessera/params.hpp: a plugin declares its parameters; the core validates them.
//
// Each plugin publishes a table of ParamSpec. The core checks the plugin's TOML
// table against it (unknown keys, wrong types, out-of-range values and invalid
// choices are reported with file:line:column) and hands the plugin a ParamValues
// holding every declared parameter, defaults filled in. A plugin therefore never
// sees an undeclared key or a value of the wrong type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tessera {

enum class ParamType : uint32_t {
  boolean = 0,
  integer = 1,   // int64
  real = 2,      // double; an integer literal is accepted too
  string = 3,
  bytes = 4,     // "512MiB", "2GB", or a plain integer count of bytes -> int64
  path = 5,      // string, resolved against the pipeline file's folder
  string_list = 6,
};

constexpr std::string_view param_type_name(ParamType t) {
  switch (t) {
    case ParamType::boolean: return "boolean";
    case ParamType::integer: return "integer";
    case ParamType::real: return "float";
    case ParamType::string: return "string";
    case ParamType::bytes: return "byte size";
    case ParamType::path: return "path";
    case ParamType::string_list: return "array of strings";
  }
  return "unknown";
}

// One declared parameter. POD so that a plugin can publish a static table.
struct ParamSpec {
  const char* name;
  ParamType type;
  const char* default_value;  // TOML literal text ("16", "0.7", "true", "\"auto\""); nullptr = required
  double min_value;           // inclusive range for integer/real/bytes; ignored when min > max
  double max_value;
  const char* choices;        // for string: "a|b|c"; nullptr = any string
  const char* doc;            // one line
};

// Convenience constructors for readable plugin tables.
constexpr ParamSpec param_int(const char* name, const char* def, double lo, double hi, const char* doc) {
  return {name, ParamType::integer, def, lo, hi, nullptr, doc};
}
constexpr ParamSpec param_real(const char* name, const char* def, double lo, double hi, const char* doc) {
  return {name, ParamType::real, def, lo, hi, nullptr, doc};
}
constexpr ParamSpec param_bool(const char* name, const char* def, const char* doc) {
  return {name, ParamType::boolean, def, 1, 0, nullptr, doc};
}
constexpr ParamSpec param_string(const char* name, const char* def, const char* choices, const char* doc) {
  return {name, ParamType::string, def, 1, 0, choices, doc};
}
constexpr ParamSpec param_bytes(const char* name, const char* def, double lo, double hi, const char* doc) {
  return {name, ParamType::bytes, def, lo, hi, nullptr, doc};
}
constexpr ParamSpec param_path(const char* name, const char* def, const char* doc) {
  return {name, ParamType::path, def, 1, 0, nullptr, doc};
}

using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

// Validated values of one plugin's parameters. Accessors assume the key was
// declared with a matching type (validation guarantees it); a mismatch is a
// programming error and returns the type's zero value.
class ParamValues {
 public:
  void set(std::string key, ParamValue value) { values_[std::move(key)] = std::move(value); }
  bool has(std::string_view key) const { return values_.find(std::string(key)) != values_.end(); }

  bool get_bool(std::string_view key) const { return get<bool>(key); }
  int64_t get_int(std::string_view key) const { return get<int64_t>(key); }
  double get_real(std::string_view key) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return 0.0;
    if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&it->second)) return *d;
    return 0.0;
  }
  std::string get_string(std::string_view key) const { return get<std::string>(key); }
  std::vector<std::string> get_list(std::string_view key) const { return get<std::vector<std::string>>(key); }
  const std::map<std::string, ParamValue, std::less<>>& all() const { return values_; }

 private:
  template <typename T>
  T get(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return T{};
    if (auto* v = std::get_if<T>(&it->second)) return *v;
    return T{};
  }
  std::map<std::string, ParamValue, std::less<>> values_;
};

}  // namespace tessera

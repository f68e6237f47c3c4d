#include "model/metadata.hpp"

#include <limits>

namespace tessera {

namespace {

MetaType meta_type(GgufType t) {
  switch (t) {
    case GgufType::f32:
    case GgufType::f64: return MetaType::real;
    case GgufType::boolean: return MetaType::boolean;
    case GgufType::string: return MetaType::string;
    case GgufType::array: return MetaType::array;
    default: return MetaType::integer;
  }
}

MetaType meta_type(const nlohmann::json& v) {
  if (v.is_null()) return MetaType::null;
  if (v.is_boolean()) return MetaType::boolean;
  if (v.is_number_integer()) return MetaType::integer;
  if (v.is_number()) return MetaType::real;
  if (v.is_string()) return MetaType::string;
  if (v.is_array()) return MetaType::array;
  return MetaType::none;  // objects are flattened away
}

std::optional<int64_t> json_int(const nlohmann::json* v) {
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return std::nullopt;
  return v->get<int64_t>();
}

std::optional<double> json_real(const nlohmann::json* v) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<std::string_view> json_string(const nlohmann::json* v) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string_view(v->get_ref<const std::string&>());
}

}  // namespace

// ---- GGUF

std::string_view GgufMetadata::key(size_t index) const noexcept {
  const auto& kv = file_->metadata();
  return index < kv.size() ? std::string_view(kv[index].first) : std::string_view();
}

MetaType GgufMetadata::type(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  return v == nullptr ? MetaType::none : meta_type(v->type());
}

std::optional<int64_t> GgufMetadata::get_int(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  return v == nullptr ? std::nullopt : v->as_int();
}

std::optional<double> GgufMetadata::get_real(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  return v == nullptr ? std::nullopt : v->as_float();
}

std::optional<bool> GgufMetadata::get_bool(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  return v == nullptr ? std::nullopt : v->as_bool();
}

std::optional<std::string_view> GgufMetadata::get_string(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  const std::string* s = v == nullptr ? nullptr : v->as_string();
  return s == nullptr ? std::nullopt : std::optional<std::string_view>(*s);
}

size_t GgufMetadata::array_length(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  const GgufArray* a = v == nullptr ? nullptr : v->as_array();
  return a == nullptr ? 0 : a->items.size();
}

MetaType GgufMetadata::element_type(std::string_view key) const noexcept {
  const GgufValue* v = file_->find(key);
  const GgufArray* a = v == nullptr ? nullptr : v->as_array();
  return a == nullptr || a->items.empty() ? MetaType::none : meta_type(a->elem_type);
}

const GgufValue* GgufMetadata::item(std::string_view key, size_t index) const noexcept {
  const GgufValue* v = file_->find(key);
  const GgufArray* a = v == nullptr ? nullptr : v->as_array();
  return a == nullptr || index >= a->items.size() ? nullptr : &a->items[index];
}

std::optional<int64_t> GgufMetadata::get_int(std::string_view key, size_t index) const noexcept {
  const GgufValue* v = item(key, index);
  return v == nullptr ? std::nullopt : v->as_int();
}

std::optional<double> GgufMetadata::get_real(std::string_view key, size_t index) const noexcept {
  const GgufValue* v = item(key, index);
  return v == nullptr ? std::nullopt : v->as_float();
}

std::optional<std::string_view> GgufMetadata::get_string(std::string_view key, size_t index) const noexcept {
  const GgufValue* v = item(key, index);
  const std::string* s = v == nullptr ? nullptr : v->as_string();
  return s == nullptr ? std::nullopt : std::optional<std::string_view>(*s);
}

// ---- config.json

JsonMetadata::JsonMetadata(const nlohmann::json& object) {
  if (object.is_object()) flatten("", object);
}

void JsonMetadata::flatten(const std::string& prefix, const nlohmann::json& value) {
  auto add = [this](const std::string& key, const nlohmann::json& v) {
    if (values_.emplace(key, v).second) keys_.push_back(key);
  };
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) flatten(prefix.empty() ? k : prefix + "." + k, v);
    return;
  }
  if (value.is_array()) {
    bool has_objects = false;
    for (const auto& v : value) has_objects = has_objects || v.is_object() || v.is_array();
    if (has_objects) {
      for (size_t i = 0; i < value.size(); ++i) flatten(prefix + "." + std::to_string(i), value[i]);
      return;
    }
  }
  add(prefix, value);
}

std::string_view JsonMetadata::key(size_t index) const noexcept {
  return index < keys_.size() ? std::string_view(keys_[index]) : std::string_view();
}

const nlohmann::json* JsonMetadata::find(std::string_view key) const noexcept {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

const nlohmann::json* JsonMetadata::item(std::string_view key, size_t index) const noexcept {
  const nlohmann::json* v = find(key);
  return v == nullptr || !v->is_array() || index >= v->size() ? nullptr : &(*v)[index];
}

MetaType JsonMetadata::type(std::string_view key) const noexcept {
  const nlohmann::json* v = find(key);
  return v == nullptr ? MetaType::none : meta_type(*v);
}

std::optional<int64_t> JsonMetadata::get_int(std::string_view key) const noexcept { return json_int(find(key)); }
std::optional<double> JsonMetadata::get_real(std::string_view key) const noexcept { return json_real(find(key)); }

std::optional<bool> JsonMetadata::get_bool(std::string_view key) const noexcept {
  const nlohmann::json* v = find(key);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::optional<std::string_view> JsonMetadata::get_string(std::string_view key) const noexcept {
  return json_string(find(key));
}

size_t JsonMetadata::array_length(std::string_view key) const noexcept {
  const nlohmann::json* v = find(key);
  return v == nullptr || !v->is_array() ? 0 : v->size();
}

MetaType JsonMetadata::element_type(std::string_view key) const noexcept {
  const nlohmann::json* v = find(key);
  if (v == nullptr || !v->is_array() || v->empty()) return MetaType::none;
  const MetaType first = meta_type(v->front());
  for (const auto& item : *v) {
    const MetaType t = meta_type(item);
    // Integers among reals read as reals; anything else mixed has no one type.
    if (t == first) continue;
    if ((t == MetaType::integer || t == MetaType::real) && (first == MetaType::integer || first == MetaType::real))
      continue;
    return MetaType::none;
  }
  for (const auto& item : *v)
    if (meta_type(item) == MetaType::real) return MetaType::real;
  return first;
}

std::optional<int64_t> JsonMetadata::get_int(std::string_view key, size_t index) const noexcept {
  return json_int(item(key, index));
}
std::optional<double> JsonMetadata::get_real(std::string_view key, size_t index) const noexcept {
  return json_real(item(key, index));
}
std::optional<std::string_view> JsonMetadata::get_string(std::string_view key, size_t index) const noexcept {
  return json_string(item(key, index));
}

}  // namespace tessera

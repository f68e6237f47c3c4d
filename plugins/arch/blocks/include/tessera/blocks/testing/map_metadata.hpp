// tessera/blocks/testing/map_metadata.hpp: an in-memory Metadata for the
// tests of architecture plugins: a fake weight store sets the keys a real
// file would hold ("llama.block_count", ...), and a test changes them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tessera/metadata.hpp"

namespace tessera::blocks::testing {

class MapMetadata final : public Metadata {
 public:
  using Value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                             std::vector<std::string>>;

  void set(const std::string& key, Value value) {
    if (values_.emplace(key, value).second) keys_.push_back(key);
    else values_[key] = std::move(value);
  }
  void erase(const std::string& key) {
    values_.erase(key);
    std::erase(keys_, key);
  }

  size_t size() const noexcept override { return keys_.size(); }
  std::string_view key(size_t index) const noexcept override {
    return index < keys_.size() ? std::string_view(keys_[index]) : std::string_view();
  }
  MetaType type(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr) return MetaType::none;
    switch (v->index()) {
      case 0: return MetaType::integer;
      case 1: return MetaType::real;
      case 2: return MetaType::boolean;
      case 3: return MetaType::string;
      default: return MetaType::array;
    }
  }
  std::optional<int64_t> get_int(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr || !std::holds_alternative<int64_t>(*v)) return std::nullopt;
    return std::get<int64_t>(*v);
  }
  std::optional<double> get_real(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (const auto* d = std::get_if<double>(v)) return *d;
    if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
    return std::nullopt;
  }
  std::optional<bool> get_bool(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr || !std::holds_alternative<bool>(*v)) return std::nullopt;
    return std::get<bool>(*v);
  }
  std::optional<std::string_view> get_string(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr || !std::holds_alternative<std::string>(*v)) return std::nullopt;
    return std::string_view(std::get<std::string>(*v));
  }
  size_t array_length(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr) return 0;
    return std::visit(
        [](const auto& x) -> size_t {
          if constexpr (requires { x.size(); } && !std::is_same_v<std::decay_t<decltype(x)>, std::string>)
            return x.size();
          return 0;
        },
        *v);
  }
  MetaType element_type(std::string_view key) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr || array_length(key) == 0) return MetaType::none;
    if (std::holds_alternative<std::vector<int64_t>>(*v)) return MetaType::integer;
    if (std::holds_alternative<std::vector<double>>(*v)) return MetaType::real;
    if (std::holds_alternative<std::vector<std::string>>(*v)) return MetaType::string;
    return MetaType::none;
  }
  std::optional<int64_t> get_int(std::string_view key, size_t index) const noexcept override {
    const Value* v = find(key);
    const auto* a = v == nullptr ? nullptr : std::get_if<std::vector<int64_t>>(v);
    if (a == nullptr || index >= a->size()) return std::nullopt;
    return (*a)[index];
  }
  std::optional<double> get_real(std::string_view key, size_t index) const noexcept override {
    const Value* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (const auto* a = std::get_if<std::vector<double>>(v); a != nullptr && index < a->size()) return (*a)[index];
    if (const auto* a = std::get_if<std::vector<int64_t>>(v); a != nullptr && index < a->size())
      return static_cast<double>((*a)[index]);
    return std::nullopt;
  }
  std::optional<std::string_view> get_string(std::string_view key, size_t index) const noexcept override {
    const Value* v = find(key);
    const auto* a = v == nullptr ? nullptr : std::get_if<std::vector<std::string>>(v);
    if (a == nullptr || index >= a->size()) return std::nullopt;
    return std::string_view((*a)[index]);
  }

 private:
  const Value* find(std::string_view key) const noexcept {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> keys_;
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace tessera::blocks::testing

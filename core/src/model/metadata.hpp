// model/metadata.hpp: the two kinds of raw metadata a WeightStore offers
// (tessera/metadata.hpp): a GGUF file's key/values, read in place, and a
// Hugging Face config.json flattened to dotted keys.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gguf.hpp"
#include "tessera/metadata.hpp"

namespace tessera {

// Reads the key/values of `file` without copying them (token lists run to
// hundreds of thousands of strings).
class GgufMetadata final : public Metadata {
 public:
  explicit GgufMetadata(std::shared_ptr<const GgufFile> file) : file_(std::move(file)) {}

  size_t size() const noexcept override { return file_->metadata().size(); }
  std::string_view key(size_t index) const noexcept override;
  MetaType type(std::string_view key) const noexcept override;
  std::optional<int64_t> get_int(std::string_view key) const noexcept override;
  std::optional<double> get_real(std::string_view key) const noexcept override;
  std::optional<bool> get_bool(std::string_view key) const noexcept override;
  std::optional<std::string_view> get_string(std::string_view key) const noexcept override;
  size_t array_length(std::string_view key) const noexcept override;
  MetaType element_type(std::string_view key) const noexcept override;
  std::optional<int64_t> get_int(std::string_view key, size_t index) const noexcept override;
  std::optional<double> get_real(std::string_view key, size_t index) const noexcept override;
  std::optional<std::string_view> get_string(std::string_view key, size_t index) const noexcept override;

 private:
  const GgufValue* item(std::string_view key, size_t index) const noexcept;
  std::shared_ptr<const GgufFile> file_;
};

// config.json as metadata: objects flattened with '.' ("rope_scaling.factor"),
// arrays of objects as "key.N.field", arrays of scalars kept as arrays.
class JsonMetadata final : public Metadata {
 public:
  explicit JsonMetadata(const nlohmann::json& object);

  size_t size() const noexcept override { return keys_.size(); }
  std::string_view key(size_t index) const noexcept override;
  MetaType type(std::string_view key) const noexcept override;
  std::optional<int64_t> get_int(std::string_view key) const noexcept override;
  std::optional<double> get_real(std::string_view key) const noexcept override;
  std::optional<bool> get_bool(std::string_view key) const noexcept override;
  std::optional<std::string_view> get_string(std::string_view key) const noexcept override;
  size_t array_length(std::string_view key) const noexcept override;
  MetaType element_type(std::string_view key) const noexcept override;
  std::optional<int64_t> get_int(std::string_view key, size_t index) const noexcept override;
  std::optional<double> get_real(std::string_view key, size_t index) const noexcept override;
  std::optional<std::string_view> get_string(std::string_view key, size_t index) const noexcept override;

 private:
  void flatten(const std::string& prefix, const nlohmann::json& value);
  const nlohmann::json* find(std::string_view key) const noexcept;
  const nlohmann::json* item(std::string_view key, size_t index) const noexcept;

  std::vector<std::string> keys_;  // in config order
  std::map<std::string, nlohmann::json, std::less<>> values_;
};

}  // namespace tessera

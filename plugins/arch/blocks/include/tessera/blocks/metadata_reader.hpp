// tessera/blocks/metadata_reader.hpp: reading an architecture's
// hyper-parameters from a model file's raw metadata (tessera/metadata.hpp),
// with errors that name the file and the key.
//
// GGUF files prefix their keys with the architecture ("llama.block_count");
// a Hugging Face config.json has plain keys ("num_hidden_layers"). A reader
// is made with the prefix to put before every key ("" for config.json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::blocks {

class MetadataReader {
 public:
  MetadataReader(const WeightStore& store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}

  // An integer >= `min` (0 or 1). Absent (or JSON null): `fallback`, or an
  // error when there is none.
  Status integer(std::string_view key, int64_t& out, int64_t min, std::optional<int64_t> fallback = std::nullopt) const;
  // A finite number; absent or null leaves `out` as it is.
  Status real(std::string_view key, double& out) const;
  // true/false; absent or null leaves `out` as it is.
  Status boolean(std::string_view key, bool& out) const;
  // A string, when present as one.
  std::optional<std::string_view> string(std::string_view key) const;
  bool has(std::string_view key) const;

  // "<source>: metadata '<prefix><key>'" for messages.
  std::string where(std::string_view key) const;
  const std::string& source() const { return store_.source(); }
  const WeightStore& store() const { return store_; }

 private:
  std::string full(std::string_view key) const { return prefix_ + std::string(key); }
  const WeightStore& store_;
  std::string prefix_;
};

}  // namespace tessera::blocks

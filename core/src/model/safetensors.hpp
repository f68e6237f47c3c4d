// model/safetensors.hpp: memory-mapped safetensors files and sharded checkpoints.
//
// A safetensors file is: an 8-byte little-endian header length N, N bytes of
// JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}), then the data; offsets are relative to the data.
// Every offset is checked against the file, each tensor's byte range must equal
// its shape times its element size, and ranges may not overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

class MappedFile;

struct SafetensorsTensor {
  std::string name;            // as stored (Hugging Face name)
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // row-major, 1..4 dimensions
  const std::byte* data = nullptr;
  uint64_t nbytes = 0;
  uint64_t begin = 0;          // data_offsets, relative to the data section
};

// dtype strings accepted: F32, F16, BF16, I32, I8, U8. nullopt = unsupported.
std::optional<DType> dtype_from_safetensors(std::string_view name);

class SafetensorsFile {
 public:
  // The header is at most this large (the format's reference reader uses the same bound).
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Parses a copy of `bytes`; `name` is used in messages.
  static Result<std::shared_ptr<SafetensorsFile>> open_memory(std::span<const std::byte> bytes,
                                                              std::string name = "<memory>");
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  // The "__metadata__" string map (empty if absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // MappedFile::release_resident on the mapping, when opened from a path.
  void release_resident(const void* p, uint64_t bytes) const;

 private:
  SafetensorsFile() = default;
  static Result<std::shared_ptr<SafetensorsFile>> parse(std::shared_ptr<SafetensorsFile> file);
  Status parse_header();

  std::string path_;
  std::unique_ptr<MappedFile> mapping_;
  std::vector<std::byte> owned_;
  const std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// The safetensors files of a checkpoint folder: model.safetensors, or the shards
// listed by model.safetensors.index.json (each tensor of its weight_map must be
// in the shard it names; shard names must be plain file names in the folder).
// Also accepts a path to a single .safetensors file.
Result<std::vector<std::shared_ptr<SafetensorsFile>>> open_safetensors_checkpoint(const std::string& path);

}  // namespace tessera

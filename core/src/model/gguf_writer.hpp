// model/gguf_writer.hpp: writes GGUF version 3 files (metadata of every type, aligned tensors).
//
// Used by `tessera quantize` and by tests that need small synthetic models.
// Metadata keys keep the order in which they were first set; tensors are laid
// out in the order added, each at an offset that is a multiple of the alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/gguf.hpp"
#include "tessera/status.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

class GgufWriter {
 public:
  // `alignment` must be a power of two; anything but 32 is recorded as general.alignment.
  explicit GgufWriter(uint32_t alignment = GgufFile::kDefaultAlignment);

  // Sets (or replaces, keeping its position) one metadata value.
  void set(const std::string& key, GgufValue value);
  void set_string(const std::string& key, std::string v) { set(key, std::move(v)); }
  void set_u32(const std::string& key, uint32_t v) { set(key, v); }
  void set_i32(const std::string& key, int32_t v) { set(key, v); }
  void set_u64(const std::string& key, uint64_t v) { set(key, v); }
  void set_f32(const std::string& key, float v) { set(key, v); }
  void set_bool(const std::string& key, bool v) { set(key, v); }
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);

  // Adds a tensor with `dims` in GGUF order (ne[0] = row length, innermost) and
  // copies its bytes. Fails when the type has no ggml id, the name is taken, the
  // dims are invalid, or data.size() differs from the size dims and dtype imply.
  Status add_tensor(const std::string& name, DType dtype, std::vector<uint64_t> dims,
                    std::span<const std::byte> data);
  // Same without copying: `data` must stay valid until write()/to_bytes() returns.
  Status add_tensor_view(const std::string& name, DType dtype, std::vector<uint64_t> dims,
                         std::span<const std::byte> data);

  // The whole file in memory (small models, tests, fuzz seeds).
  std::vector<std::byte> to_bytes() const;
  // Writes `path` (through a temporary file renamed into place).
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    uint32_t ggml_type;
    std::vector<uint64_t> dims;
    std::vector<std::byte> owned;
    std::span<const std::byte> data;
  };
  template <typename Sink>
  void serialize(Sink& sink) const;
  Status check_tensor(const std::string& name, DType dtype, const std::vector<uint64_t>& dims,
                      size_t data_size, uint32_t& ggml_type) const;

  uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tessera

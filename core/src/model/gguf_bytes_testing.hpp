// Test helper: builds GGUF bytes field by field, so tests can write files the
// writer never would (bad counts, bad offsets, overlapping tensors, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tessera::test {

class RawGguf {
 public:
  std::vector<std::byte> bytes;

  RawGguf& raw(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  RawGguf& u8(uint8_t v) { return raw(&v, 1); }
  RawGguf& u32(uint32_t v) { return raw(&v, 4); }
  RawGguf& u64(uint64_t v) { return raw(&v, 8); }
  RawGguf& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  // A metadata entry holding a u32.
  RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
  // A tensor info: name, dims (GGUF order), ggml type, offset.
  RawGguf& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (auto d : dims) u64(d);
    return u32(type).u64(offset);
  }
  RawGguf& pad_to(size_t alignment) {
    while (bytes.size() % alignment != 0) u8(0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    bytes.resize(bytes.size() + n);
    return *this;
  }
};

inline void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A fresh, empty folder under the build tree for one test.
inline std::string scratch_dir(const std::string& name) {
  const std::string dir = std::string(TESSERA_BINARY_DIR) + "/test-scratch/model/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace tessera::test

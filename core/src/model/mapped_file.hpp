// model/mapped_file.hpp: a whole file mapped read-only into memory (POSIX mmap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tessera/status.hpp"

namespace tessera {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to data() == nullptr, size() == 0.
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace tessera

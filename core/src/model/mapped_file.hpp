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

  // Drops this process's resident pages of [p, p + bytes) (whole pages inside
  // the range only; nothing if the range is not in this mapping). The mapping
  // is private and read-only, so nothing is lost: a later read faults the
  // pages back in from the file (from the page cache, while it holds them).
  // Used once a weight has been copied into a plugin's own layout, so that
  // the process does not hold both copies.
  void release_resident(const void* p, uint64_t bytes) const;

 private:
  MappedFile() = default;
  std::string path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace tessera

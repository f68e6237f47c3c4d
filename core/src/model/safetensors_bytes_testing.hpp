// Test helper: builds safetensors files (header JSON + data) for tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::test {

class SafetensorsBuilder {
 public:
  // Appends a tensor with consecutive data; `bytes` of payload (pattern-filled).
  SafetensorsBuilder& add(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                          size_t bytes) {
    header_[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data_.size(), data_.size() + bytes}}};
    for (size_t i = 0; i < bytes; ++i) data_.push_back(static_cast<std::byte>((data_.size() * 7 + 3) & 0xff));
    return *this;
  }
  nlohmann::json& header() { return header_; }
  std::vector<std::byte>& data() { return data_; }

  std::vector<std::byte> bytes() const { return with_header_text(header_.dump()); }
  std::vector<std::byte> with_header_text(const std::string& text) const {
    std::vector<std::byte> out(8);
    const uint64_t n = text.size();
    std::memcpy(out.data(), &n, 8);
    for (char c : text) out.push_back(static_cast<std::byte>(c));
    out.insert(out.end(), data_.begin(), data_.end());
    return out;
  }

 private:
  nlohmann::json header_ = nlohmann::json::object();
  std::vector<std::byte> data_;
};

}  // namespace tessera::test

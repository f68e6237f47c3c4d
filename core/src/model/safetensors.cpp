#include "model/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/hf_json.hpp"
#include "model/mapped_file.hpp"

namespace tessera {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;
  if (name == "I8") return DType::i8;
  if (name == "U8") return DType::u8;
  return std::nullopt;
}

SafetensorsFile::~SafetensorsFile() = default;

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->mapping_ = std::move(mapped).value();
  f->base_ = f->mapping_->data();
  f->size_ = f->mapping_->size();
  return parse(std::move(f));
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open_memory(std::span<const std::byte> bytes,
                                                                      std::string name) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = std::move(name);
  f->owned_.assign(bytes.begin(), bytes.end());
  f->base_ = f->owned_.data();
  f->size_ = f->owned_.size();
  return parse(std::move(f));
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::shared_ptr<SafetensorsFile> f) {
  Status st;
  try {
    st = f->parse_header();
  } catch (const std::bad_alloc&) {
    st = OutOfMemory(f->path_ + ": out of memory while reading the header");
  } catch (const std::exception& e) {  // nlohmann type errors; the checks below should prevent them
    st = CorruptData(f->path_ + ": malformed header: " + e.what());
  }
  if (!st.ok()) return st;
  return f;
}

void SafetensorsFile::release_resident(const void* p, uint64_t bytes) const {
  if (mapping_) mapping_->release_resident(p, bytes);
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// A non-negative integer JSON value that fits in int64, or nullopt.
std::optional<uint64_t> json_count(const json& v) {
  if (!v.is_number_unsigned()) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
    return std::nullopt;
  }
  const uint64_t x = v.get<uint64_t>();
  if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return x;
}

}  // namespace

Status SafetensorsFile::parse_header() {
  auto corrupt = [&](const std::string& what) { return CorruptData(path_ + ": " + what); };
  if (size_ < 8) return corrupt(fmt::format("file of {} bytes is too short for a safetensors header", size_));
  uint64_t header_len = 0;
  std::memcpy(&header_len, base_, 8);
  if (header_len > size_ - 8)
    return corrupt(fmt::format("header length {} exceeds the {} bytes after it", header_len, size_ - 8));
  if (header_len > kMaxHeaderBytes)
    return corrupt(fmt::format("header length {} is above the {}-byte limit", header_len, kMaxHeaderBytes));
  const char* text = reinterpret_cast<const char*>(base_ + 8);
  json header;
  try {
    header = json::parse(text, text + header_len);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    return corrupt(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return corrupt("header is not a JSON object");

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size_ - data_start;
  tensors_.reserve(header.size());
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return corrupt("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return corrupt(fmt::format("__metadata__ value '{}' is not a string", k));
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object()) return corrupt(fmt::format("tensor '{}': entry is not an object", name));
    const auto dt = entry.find("dtype");
    const auto shape = entry.find("shape");
    const auto offsets = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) return corrupt(fmt::format("tensor '{}': missing string 'dtype'", name));
    if (shape == entry.end() || !shape->is_array())
      return corrupt(fmt::format("tensor '{}': missing array 'shape'", name));
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
      return corrupt(fmt::format("tensor '{}': 'data_offsets' must be [begin, end]", name));
    const std::string dtype_str = dt->get<std::string>();
    const auto dtype = dtype_from_safetensors(dtype_str);
    if (!dtype)
      return Unsupported(fmt::format("{}: tensor '{}' has unsupported dtype '{}' (supported: F32, F16, BF16, I32, I8, U8)",
                                     path_, name, dtype_str));
    if (shape->empty() || shape->size() > static_cast<size_t>(kMaxDims))
      return Unsupported(fmt::format("{}: tensor '{}' has {} dimensions (1 to {} supported)", path_, name,
                                     shape->size(), kMaxDims));
    SafetensorsTensor t;
    t.name = name;
    t.dtype = *dtype;
    uint64_t elems = 1;
    for (const auto& d : *shape) {
      const auto n = json_count(d);
      if (!n) return corrupt(fmt::format("tensor '{}': shape entries must be non-negative integers", name));
      if (__builtin_mul_overflow(elems, *n, &elems) || elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return corrupt(fmt::format("tensor '{}': element count overflows", name));
      t.shape.push_back(static_cast<int64_t>(*n));
    }
    const auto begin = json_count((*offsets)[0]);
    const auto end = json_count((*offsets)[1]);
    if (!begin || !end || *begin > *end)
      return corrupt(fmt::format("tensor '{}': data_offsets must be non-negative integers with begin <= end", name));
    if (*end > data_size)
      return corrupt(fmt::format("tensor '{}' data [{}, {}) extends past the {} bytes of data (file size {})", name,
                                 *begin, *end, data_size, size_));
    uint64_t expected = 0;
    if (__builtin_mul_overflow(elems, dtype_info(t.dtype).block_bytes, &expected) || expected != *end - *begin)
      return corrupt(fmt::format("tensor '{}': shape and dtype {} need {} bytes but data_offsets give {}", name,
                                 dtype_str, elems * dtype_info(t.dtype).block_bytes, *end - *begin));
    t.begin = *begin;
    t.nbytes = expected;
    t.data = base_ + data_start + *begin;
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  std::vector<const SafetensorsTensor*> sorted;
  for (const auto& t : tensors_) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    const auto* a = sorted[i - 1];
    const auto* b = sorted[i];
    if (a->begin + a->nbytes > b->begin)
      return corrupt(fmt::format("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", a->name, a->begin,
                                 a->begin + a->nbytes, b->name, b->begin, b->begin + b->nbytes));
  }
  return Status::Ok();
}


Result<std::vector<std::shared_ptr<SafetensorsFile>>> open_safetensors_checkpoint(const std::string& path) {
  std::vector<std::shared_ptr<SafetensorsFile>> shards;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    auto f = SafetensorsFile::open(path);
    if (!f.ok()) return f.status();
    shards.push_back(std::move(f).value());
    return shards;
  }
  const fs::path dir(path);
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (!fs::exists(index_path, ec)) {
    const fs::path single = dir / "model.safetensors";
    if (!fs::exists(single, ec))
      return Unavailable(path + ": neither model.safetensors nor model.safetensors.index.json found");
    auto f = SafetensorsFile::open(single.string());
    if (!f.ok()) return f.status();
    shards.push_back(std::move(f).value());
    return shards;
  }
  const std::string index_name = index_path.string();
  auto index = read_hf_json(index_path);
  if (!index.ok()) return index.status();
  const json& root = index.value();
  if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object())
    return CorruptData(index_name + ": missing object 'weight_map'");
  std::map<std::string, size_t> shard_of_file;
  std::vector<std::pair<std::string, std::string>> entries;  // tensor -> shard file
  for (const auto& [tensor, file] : root["weight_map"].items()) {
    if (!file.is_string()) return CorruptData(fmt::format("{}: weight_map['{}'] is not a string", index_name, tensor));
    const std::string name = file.get<std::string>();
    // A shard is a file beside the index, never a path that escapes the folder.
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
        name == "." || name == "..")
      return CorruptData(fmt::format("{}: shard name '{}' for tensor '{}' is not a plain file name", index_name,
                                     name, tensor));
    entries.emplace_back(tensor, name);
    if (shard_of_file.count(name) == 0) {
      auto f = SafetensorsFile::open((dir / name).string());
      if (!f.ok()) return f.status();
      shard_of_file[name] = shards.size();
      shards.push_back(std::move(f).value());
    }
  }
  if (entries.empty()) return CorruptData(index_name + ": weight_map is empty");
  for (const auto& [tensor, file] : entries) {
    if (shards[shard_of_file[file]]->find(tensor) == nullptr)
      return CorruptData(fmt::format("{}: tensor '{}' is listed in shard '{}' but not found there", index_name,
                                     tensor, file));
  }
  return shards;
}

}  // namespace tessera

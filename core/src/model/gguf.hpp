// model/gguf.hpp: a read-only, memory-mapped GGUF reader (format versions 2 and 3).
//
// A GGUF file is: magic "GGUF", version (u32), tensor count (u64), metadata
// count (u64), the metadata key/value pairs, the tensor infos, padding to the
// alignment, then the tensor data. Every count, length and offset read from the
// file is checked against the bytes that remain before it is used, so a damaged
// or hostile file yields a Status naming the file and the problem, never a
// crash or an allocation sized by an unchecked number.
//
// Thread-safety: immutable after open(); safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tessera/status.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

class MappedFile;

// Metadata value types, numbered as in the GGUF specification.
enum class GgufType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
std::string_view gguf_type_name(GgufType t);

struct GgufValue;

// An array value: every item has type `elem_type` (arrays may nest).
struct GgufArray {
  GgufType elem_type = GgufType::u8;
  std::vector<GgufValue> items;
};

// One metadata value. The variant's alternatives are in GgufType order, so
// `type()` is simply the active index.
struct GgufValue {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;
  Storage value;

  GgufValue() = default;
  template <typename T>
    requires(!std::is_same_v<std::decay_t<T>, GgufValue> && std::is_constructible_v<Storage, T>)
  GgufValue(T&& v) : value(std::forward<T>(v)) {}  // NOLINT: implicit from any alternative

  GgufType type() const { return static_cast<GgufType>(value.index()); }
  // Any integer type whose value fits in int64 (u64 above INT64_MAX -> nullopt).
  std::optional<int64_t> as_int() const;
  // f32/f64, or any integer type (converted).
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const { return std::get_if<std::string>(&value); }
  const GgufArray* as_array() const { return std::get_if<GgufArray>(&value); }
};

// One tensor as described by the file. `dims` are GGUF order (ne[0] innermost,
// i.e. the row length); ModelFile reverses them into row-major shapes.
struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;       // type id as stored
  DType dtype = DType::f32;     // the same type in tessera terms
  std::vector<uint64_t> dims;   // ne[0..n_dims), 1..4 entries, each >= 1
  uint64_t offset = 0;          // relative to the data section (GgufFile::data_offset())
  const std::byte* data = nullptr;  // points into the mapping
  uint64_t nbytes = 0;          // bytes of data, computed from dims and type

  uint64_t numel() const {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
  }
};

// ggml type id <-> DType (F32=0, F16=1, Q4_0=2, Q4_1=3, Q5_0=6, Q5_1=7, Q8_0=8, Q2_K=10, Q3_K=11,
// Q4_K=12, Q5_K=13, Q6_K=14, I8=24, I16=25, I32=26, I64=27, F64=28, BF16=30). nullopt = unsupported.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
std::optional<uint32_t> ggml_from_dtype(DType dtype);

class GgufFile {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;

  // Maps `path` read-only and parses it.
  static Result<std::shared_ptr<GgufFile>> open(const std::string& path);
  // Parses a copy of `bytes` (fuzzing, tests). `name` is used in messages.
  static Result<std::shared_ptr<GgufFile>> open_memory(std::span<const std::byte> bytes,
                                                       std::string name = "<memory>");

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute start of the data section
  uint64_t file_size() const { return size_; }

  // Metadata in file order; keys are unique.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed helpers: nullopt when the key is absent or has an incompatible type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;     // any integer type
  std::optional<double> get_float(std::string_view key) const;    // f32/f64 or integer
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;   // f32/f64/ints
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;   // integer items
  // Length of an array value without copying it (nullopt if absent/not an array).
  std::optional<size_t> array_length(std::string_view key) const;

  // general.architecture, or "" when absent.
  std::string architecture() const { return get_string("general.architecture").value_or(""); }

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // MappedFile::release_resident on the mapping, when opened from a path.
  void release_resident(const void* p, uint64_t bytes) const;

 private:
  GgufFile() = default;
  class Parser;
  static Result<std::shared_ptr<GgufFile>> parse(std::shared_ptr<GgufFile> file);

  std::string path_;
  std::unique_ptr<MappedFile> mapping_;   // when opened from a path
  std::vector<std::byte> owned_;          // when opened from memory
  const std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tessera

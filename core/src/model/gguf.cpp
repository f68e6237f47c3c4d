// GGUF reader: parses the header, metadata and tensor infos of a mapped file,
// checking every number read against the bytes that remain.
#include "model/gguf.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "model/mapped_file.hpp"

namespace tessera {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader reads little-endian numbers in place");

namespace {

// Nested arrays deeper than this are refused (real files nest at most once);
// bounds the parser's recursion whatever the file says.
constexpr int kMaxArrayDepth = 8;
// Total metadata array items accepted, a sanity bound far above real vocabularies
// (each item becomes a ~40-byte GgufValue, so this caps memory at a few GiB).
constexpr uint64_t kMaxMetadataItems = uint64_t{1} << 26;
// Smallest possible encodings, used to bound counts before reserving memory.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;               // empty key, type, one byte
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, 1 dim, type, offset
constexpr int kMaxDimsGguf = 4;                           // GGML_MAX_DIMS

uint64_t min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    case GgufType::string: return 8;
    case GgufType::array: return 4 + 8;
  }
  return 1;
}

std::string u128_string(unsigned __int128 v) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::f64); }

}  // namespace

class GgufFile::Parser {
 public:
  explicit Parser(GgufFile& f) : f_(f) {}

  Status run() {
    TESSERA_RETURN_IF_ERROR(read_header());
    for (uint64_t i = 0; i < n_kv_; ++i) TESSERA_RETURN_IF_ERROR(read_kv(i));
    TESSERA_RETURN_IF_ERROR(apply_alignment());
    for (uint64_t i = 0; i < n_tensors_; ++i) TESSERA_RETURN_IF_ERROR(read_tensor_info(i));
    return place_tensors();
  }

 private:
  Status corrupt(const std::string& what) const { return CorruptData(f_.path_ + ": " + what); }
  uint64_t remaining() const { return f_.size_ - pos_; }

  Status need(uint64_t bytes, std::string_view what) const {
    if (bytes > remaining())
      return corrupt(fmt::format("truncated: {} needs {} bytes at offset {} but the file has {} left (size {})",
                                 what, bytes, pos_, remaining(), f_.size_));
    return Status::Ok();
  }

  template <typename T>
  Status read(T& out, std::string_view what) {
    TESSERA_RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(&out, f_.base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status read_string(std::string& out, std::string_view what) {
    uint64_t len = 0;
    TESSERA_RETURN_IF_ERROR(read(len, what));
    if (len > remaining())
      return corrupt(fmt::format("{}: string length {} at offset {} exceeds the {} bytes left in the file",
                                 what, len, pos_ - 8, remaining()));
    out.assign(reinterpret_cast<const char*>(f_.base_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status read_header() {
    uint32_t magic = 0;
    TESSERA_RETURN_IF_ERROR(read(magic, "the magic number"));
    if (std::memcmp(&magic, "GGUF", 4) != 0) {
      const auto* b = reinterpret_cast<const unsigned char*>(&magic);
      return corrupt(fmt::format("not a GGUF file (magic bytes {:02x} {:02x} {:02x} {:02x}, expected 'GGUF')",
                                 b[0], b[1], b[2], b[3]));
    }
    TESSERA_RETURN_IF_ERROR(read(f_.version_, "the version"));
    if (f_.version_ == 1)
      return Unsupported(f_.path_ + ": GGUF version 1 is not supported (versions 2 and 3 are)");
    if (f_.version_ == 0x02000000u || f_.version_ == 0x03000000u)
      return Unsupported(f_.path_ + ": big-endian GGUF files are not supported");
    if (f_.version_ != 2 && f_.version_ != 3)
      return Unsupported(fmt::format("{}: unsupported GGUF version {} (versions 2 and 3 are)", f_.path_, f_.version_));
    TESSERA_RETURN_IF_ERROR(read(n_tensors_, "the tensor count"));
    TESSERA_RETURN_IF_ERROR(read(n_kv_, "the metadata count"));
    // Each entry takes some bytes, so a count above this bound cannot be honest.
    if (n_kv_ > remaining() / kMinKvBytes)
      return corrupt(fmt::format("metadata count {} cannot fit in the {} bytes left in the file", n_kv_, remaining()));
    if (n_tensors_ > remaining() / kMinTensorInfoBytes)
      return corrupt(fmt::format("tensor count {} cannot fit in the {} bytes left in the file", n_tensors_, remaining()));
    f_.metadata_.reserve(n_kv_);
    f_.tensors_.reserve(n_tensors_);
    return Status::Ok();
  }

  Status read_kv(uint64_t index) {
    std::string key;
    TESSERA_RETURN_IF_ERROR(read_string(key, fmt::format("metadata key #{}", index)));
    uint32_t type = 0;
    TESSERA_RETURN_IF_ERROR(read(type, fmt::format("the type of metadata '{}'", key)));
    GgufValue value;
    TESSERA_RETURN_IF_ERROR(read_value(type, value, key, 0));
    if (f_.metadata_index_.count(key) != 0) return corrupt(fmt::format("duplicate metadata key '{}'", key));
    f_.metadata_index_.emplace(key, f_.metadata_.size());
    f_.metadata_.emplace_back(std::move(key), std::move(value));
    return Status::Ok();
  }

  template <typename T>
  Status read_scalar(GgufValue& out, const std::string& key) {
    T v{};
    TESSERA_RETURN_IF_ERROR(read(v, fmt::format("the value of metadata '{}'", key)));
    out.value = v;
    return Status::Ok();
  }

  Status read_value(uint32_t type, GgufValue& out, const std::string& key, int depth) {
    if (!valid_type(type)) return corrupt(fmt::format("metadata '{}' has unknown value type {}", key, type));
    switch (static_cast<GgufType>(type)) {
      case GgufType::u8: return read_scalar<uint8_t>(out, key);
      case GgufType::i8: return read_scalar<int8_t>(out, key);
      case GgufType::u16: return read_scalar<uint16_t>(out, key);
      case GgufType::i16: return read_scalar<int16_t>(out, key);
      case GgufType::u32: return read_scalar<uint32_t>(out, key);
      case GgufType::i32: return read_scalar<int32_t>(out, key);
      case GgufType::f32: return read_scalar<float>(out, key);
      case GgufType::u64: return read_scalar<uint64_t>(out, key);
      case GgufType::i64: return read_scalar<int64_t>(out, key);
      case GgufType::f64: return read_scalar<double>(out, key);
      case GgufType::boolean: {
        uint8_t b = 0;
        TESSERA_RETURN_IF_ERROR(read(b, fmt::format("the value of metadata '{}'", key)));
        if (b > 1) return corrupt(fmt::format("metadata '{}': bool byte is {}, expected 0 or 1", key, b));
        out.value = b != 0;
        return Status::Ok();
      }
      case GgufType::string: {
        std::string s;
        TESSERA_RETURN_IF_ERROR(read_string(s, fmt::format("metadata '{}'", key)));
        out.value = std::move(s);
        return Status::Ok();
      }
      case GgufType::array: return read_array(out, key, depth);
    }
    return corrupt(fmt::format("metadata '{}' has unknown value type {}", key, type));
  }

  Status read_array(GgufValue& out, const std::string& key, int depth) {
    if (depth >= kMaxArrayDepth)
      return corrupt(fmt::format("metadata '{}': arrays nested deeper than {}", key, kMaxArrayDepth));
    uint32_t elem_type = 0;
    uint64_t count = 0;
    TESSERA_RETURN_IF_ERROR(read(elem_type, fmt::format("the item type of array '{}'", key)));
    if (!valid_type(elem_type))
      return corrupt(fmt::format("metadata '{}': array item type {} is unknown", key, elem_type));
    TESSERA_RETURN_IF_ERROR(read(count, fmt::format("the length of array '{}'", key)));
    const auto et = static_cast<GgufType>(elem_type);
    if (count > remaining() / min_encoded_size(et))
      return corrupt(fmt::format("metadata '{}': array of {} {} items cannot fit in the {} bytes left in the file",
                                 key, count, gguf_type_name(et), remaining()));
    items_seen_ += count;
    if (items_seen_ > kMaxMetadataItems)
      return corrupt(fmt::format("metadata '{}': more than {} array items in total", key, kMaxMetadataItems));
    GgufArray arr;
    arr.elem_type = et;
    arr.items.resize(count);
    for (auto& item : arr.items) TESSERA_RETURN_IF_ERROR(read_value(elem_type, item, key, depth + 1));
    out.value = std::move(arr);
    return Status::Ok();
  }

  Status apply_alignment() {
    const GgufValue* v = f_.find("general.alignment");
    if (v == nullptr) return Status::Ok();
    const auto a = v->as_int();
    if (!a || *a <= 0 || !std::has_single_bit(static_cast<uint64_t>(*a)) || *a > (int64_t{1} << 30))
      return corrupt("general.alignment must be a power of two between 1 and 2^30");
    f_.alignment_ = static_cast<uint64_t>(*a);
    return Status::Ok();
  }

  Status read_tensor_info(uint64_t index) {
    GgufTensorInfo t;
    TESSERA_RETURN_IF_ERROR(read_string(t.name, fmt::format("the name of tensor #{}", index)));
    const std::string& name = t.name;
    uint32_t n_dims = 0;
    TESSERA_RETURN_IF_ERROR(read(n_dims, fmt::format("the dimension count of tensor '{}'", name)));
    if (n_dims < 1 || n_dims > kMaxDimsGguf)
      return corrupt(fmt::format("tensor '{}' has {} dimensions (1 to {} allowed)", name, n_dims, kMaxDimsGguf));
    t.dims.resize(n_dims);
    for (auto& d : t.dims) {
      TESSERA_RETURN_IF_ERROR(read(d, fmt::format("the dimensions of tensor '{}'", name)));
      if (d == 0 || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return corrupt(fmt::format("tensor '{}' has an invalid dimension {}", name, d));
    }
    TESSERA_RETURN_IF_ERROR(read(t.ggml_type, fmt::format("the type of tensor '{}'", name)));
    const auto dtype = dtype_from_ggml(t.ggml_type);
    if (!dtype)
      return Unsupported(fmt::format("{}: tensor '{}' has unsupported ggml type {}", f_.path_, name, t.ggml_type));
    t.dtype = *dtype;
    TESSERA_RETURN_IF_ERROR(read(t.offset, fmt::format("the data offset of tensor '{}'", name)));

    const auto info = dtype_info(t.dtype);
    if (t.dims[0] % info.block_elems != 0)
      return corrupt(fmt::format("tensor '{}': row length {} is not a multiple of the {} block size {}", name,
                                 t.dims[0], dtype_name(t.dtype), info.block_elems));
    uint64_t bytes = t.dims[0] / info.block_elems * info.block_bytes;  // cannot overflow: dims[0] < 2^63
    uint64_t elems = t.dims[0];
    for (size_t i = 1; i < t.dims.size(); ++i) {
      if (__builtin_mul_overflow(bytes, t.dims[i], &bytes) || __builtin_mul_overflow(elems, t.dims[i], &elems) ||
          elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return corrupt(fmt::format("tensor '{}': element count overflows", name));
    }
    t.nbytes = bytes;
    if (f_.tensor_index_.count(t.name) != 0) return corrupt(fmt::format("duplicate tensor name '{}'", name));
    f_.tensor_index_.emplace(t.name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(t));
    return Status::Ok();
  }

  Status place_tensors() {
    // The data section starts at the first aligned offset after the tensor infos.
    const uint64_t a = f_.alignment_;
    f_.data_offset_ = (pos_ + a - 1) / a * a;  // pos_ <= size < 2^63, no overflow
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(f_.tensors_.size());
    for (auto& t : f_.tensors_) {
      if (t.offset % a != 0)
        return corrupt(fmt::format("tensor '{}' data offset {} is not a multiple of the alignment {}", t.name,
                                   t.offset, a));
      // 128-bit sums: an offset near 2^64 must not wrap around into the file.
      const unsigned __int128 begin = static_cast<unsigned __int128>(f_.data_offset_) + t.offset;
      const unsigned __int128 end = begin + t.nbytes;
      if (end > f_.size_)
        return corrupt(fmt::format("tensor '{}' data [{}, {}) extends past end of file (size {})", t.name,
                                   u128_string(begin), u128_string(end), f_.size_));
      t.data = f_.base_ + static_cast<uint64_t>(begin);
      by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensorInfo* x, const GgufTensorInfo* y) { return x->offset < y->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const auto* prev = by_offset[i - 1];
      const auto* cur = by_offset[i];
      if (prev->offset + prev->nbytes > cur->offset)
        return corrupt(fmt::format("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", prev->name,
                                   prev->offset, prev->offset + prev->nbytes, cur->name, cur->offset,
                                   cur->offset + cur->nbytes));
    }
    return Status::Ok();
  }

  GgufFile& f_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t items_seen_ = 0;
};

GgufFile::~GgufFile() = default;

void GgufFile::release_resident(const void* p, uint64_t bytes) const {
  if (mapping_) mapping_->release_resident(p, bytes);
}

Result<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->mapping_ = std::move(mapped).value();
  file->base_ = file->mapping_->data();
  file->size_ = file->mapping_->size();
  return parse(std::move(file));
}

Result<std::shared_ptr<GgufFile>> GgufFile::open_memory(std::span<const std::byte> bytes, std::string name) {
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->path_ = std::move(name);
  file->owned_.assign(bytes.begin(), bytes.end());
  file->base_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return parse(std::move(file));
}

Result<std::shared_ptr<GgufFile>> GgufFile::parse(std::shared_ptr<GgufFile> file) {
  Status st;
  try {
    st = Parser(*file).run();
  } catch (const std::bad_alloc&) {
    st = OutOfMemory(file->path_ + ": out of memory while reading the metadata");
  }
  if (!st.ok()) return st;
  return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->as_string() == nullptr) return std::nullopt;
  return *v->as_string();
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  return v == nullptr ? std::nullopt : v->as_int();
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  return v == nullptr ? std::nullopt : v->as_float();
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  return v == nullptr ? std::nullopt : v->as_bool();
}

std::optional<size_t> GgufFile::array_length(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->as_array() == nullptr) return std::nullopt;
  return v->as_array()->items.size();
}

std::optional<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->as_array() == nullptr || v->as_array()->elem_type != GgufType::string)
    return std::nullopt;
  std::vector<std::string> out;
  out.reserve(v->as_array()->items.size());
  for (const auto& item : v->as_array()->items) out.push_back(*item.as_string());
  return out;
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->as_array() == nullptr) return std::nullopt;
  std::vector<float> out;
  out.reserve(v->as_array()->items.size());
  for (const auto& item : v->as_array()->items) {
    const auto f = item.as_float();
    if (!f) return std::nullopt;
    out.push_back(static_cast<float>(*f));
  }
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->as_array() == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(v->as_array()->items.size());
  for (const auto& item : v->as_array()->items) {
    const auto i = item.as_int();
    if (!i) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

}  // namespace tessera

#include "model/gguf_writer.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace tessera {

namespace {

// Appends to a byte vector.
struct VectorSink {
  std::vector<std::byte>& out;
  uint64_t written = 0;
  void put(const void* p, size_t n) {
    // resize + memcpy rather than insert(end, b, b + n): GCC 12 reports a
    // -Wstringop-overflow false positive for the inlined insert.
    if (n == 0) return;
    const size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
    written += n;
  }
};

// Streams to a FILE*, remembering the first failure.
struct FileSink {
  std::FILE* f;
  uint64_t written = 0;
  bool failed = false;
  void put(const void* p, size_t n) {
    if (n != 0 && !failed && std::fwrite(p, 1, n, f) != n) failed = true;
    written += n;
  }
};

template <typename Sink, typename T>
void put_pod(Sink& s, T v) {
  s.put(&v, sizeof(v));
}

template <typename Sink>
void put_string(Sink& s, const std::string& str) {
  put_pod<Sink, uint64_t>(s, str.size());
  s.put(str.data(), str.size());
}

template <typename Sink>
void put_zeros(Sink& s, uint64_t n) {
  static constexpr std::byte zeros[64] = {};
  while (n > 0) {
    const uint64_t k = n < sizeof(zeros) ? n : sizeof(zeros);
    s.put(zeros, k);
    n -= k;
  }
}

// The payload of one value (its type tag is written by the caller).
template <typename Sink>
void put_value(Sink& s, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_string(s, x);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          put_pod<Sink, uint32_t>(s, static_cast<uint32_t>(x.elem_type));
          put_pod<Sink, uint64_t>(s, x.items.size());
          for (const auto& item : x.items) put_value(s, item);
        } else if constexpr (std::is_same_v<T, bool>) {
          put_pod<Sink, uint8_t>(s, x ? 1 : 0);
        } else {
          put_pod<Sink, T>(s, x);
        }
      },
      v.value);
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment)
    : alignment_(alignment != 0 && std::has_single_bit(alignment) ? alignment : GgufFile::kDefaultAlignment) {
  if (alignment_ != GgufFile::kDefaultAlignment) set_u32("general.alignment", alignment_);
}

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  GgufArray a{GgufType::string, {}};
  a.items.reserve(v.size());
  for (const auto& s : v) a.items.emplace_back(s);
  set(key, std::move(a));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  GgufArray a{GgufType::f32, {}};
  a.items.reserve(v.size());
  for (float x : v) a.items.emplace_back(x);
  set(key, std::move(a));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  GgufArray a{GgufType::i32, {}};
  a.items.reserve(v.size());
  for (int32_t x : v) a.items.emplace_back(x);
  set(key, std::move(a));
}

Status GgufWriter::check_tensor(const std::string& name, DType dtype, const std::vector<uint64_t>& dims,
                                size_t data_size, uint32_t& ggml_type) const {
  const auto id = ggml_from_dtype(dtype);
  if (!id) return Unsupported(fmt::format("GGUF writer: tensor '{}': dtype {} has no ggml type", name, dtype_name(dtype)));
  ggml_type = *id;
  for (const auto& t : tensors_)
    if (t.name == name) return InvalidArgument(fmt::format("GGUF writer: duplicate tensor name '{}'", name));
  if (dims.empty() || dims.size() > 4)
    return InvalidArgument(fmt::format("GGUF writer: tensor '{}' has {} dimensions (1 to 4 allowed)", name, dims.size()));
  const auto info = dtype_info(dtype);
  uint64_t elems = 1;
  for (uint64_t d : dims) {
    if (d == 0 || __builtin_mul_overflow(elems, d, &elems) || elems > uint64_t{std::numeric_limits<int64_t>::max()})
      return InvalidArgument(fmt::format("GGUF writer: tensor '{}' has an invalid dimension", name));
  }
  if (dims[0] % info.block_elems != 0)
    return InvalidArgument(fmt::format("GGUF writer: tensor '{}': row length {} is not a multiple of {}", name,
                                       dims[0], info.block_elems));
  const uint64_t expected = elems / info.block_elems * info.block_bytes;
  if (expected != data_size)
    return InvalidArgument(fmt::format("GGUF writer: tensor '{}' needs {} bytes of {} data, got {}", name, expected,
                                       dtype_name(dtype), data_size));
  return Status::Ok();
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype, std::vector<uint64_t> dims,
                              std::span<const std::byte> data) {
  uint32_t id = 0;
  TESSERA_RETURN_IF_ERROR(check_tensor(name, dtype, dims, data.size(), id));
  PendingTensor t{name, id, std::move(dims), std::vector<std::byte>(data.begin(), data.end()), {}};
  t.data = t.owned;
  tensors_.push_back(std::move(t));
  return Status::Ok();
}

Status GgufWriter::add_tensor_view(const std::string& name, DType dtype, std::vector<uint64_t> dims,
                                   std::span<const std::byte> data) {
  uint32_t id = 0;
  TESSERA_RETURN_IF_ERROR(check_tensor(name, dtype, dims, data.size(), id));
  tensors_.push_back(PendingTensor{name, id, std::move(dims), {}, data});
  return Status::Ok();
}

template <typename Sink>
void GgufWriter::serialize(Sink& s) const {
  s.put("GGUF", 4);
  put_pod<Sink, uint32_t>(s, 3);
  put_pod<Sink, uint64_t>(s, tensors_.size());
  put_pod<Sink, uint64_t>(s, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(s, key);
    put_pod<Sink, uint32_t>(s, static_cast<uint32_t>(value.type()));
    put_value(s, value);
  }
  uint64_t offset = 0;  // relative to the data section
  for (const auto& t : tensors_) {
    put_string(s, t.name);
    put_pod<Sink, uint32_t>(s, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put_pod<Sink, uint64_t>(s, d);
    put_pod<Sink, uint32_t>(s, t.ggml_type);
    put_pod<Sink, uint64_t>(s, offset);
    offset = align_up(offset + t.data.size(), alignment_);
  }
  put_zeros(s, align_up(s.written, alignment_) - s.written);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    s.put(t.data.data(), t.data.size());
    // Pad between tensors (not after the last one: nothing follows it).
    if (i + 1 < tensors_.size()) put_zeros(s, align_up(t.data.size(), alignment_) - t.data.size());
  }
}

std::vector<std::byte> GgufWriter::to_bytes() const {
  std::vector<std::byte> out;
  VectorSink sink{out};
  serialize(sink);
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return InvalidArgument(fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  FileSink sink{f};
  serialize(sink);
  const bool closed = std::fclose(f) == 0;
  if (sink.failed || !closed) {
    std::remove(tmp.c_str());
    return Internal(fmt::format("{}: write failed (disk full?)", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Internal(fmt::format("cannot rename {} to {}: {}", tmp, path, why));
  }
  return Status::Ok();
}

}  // namespace tessera

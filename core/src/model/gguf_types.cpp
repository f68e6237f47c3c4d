// ggml tensor type ids and GGUF metadata value types: names and the mapping onto DType.
#include "model/gguf.hpp"

#include <charconv>

namespace tessera {

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::u8: return "u8";
    case GgufType::i8: return "i8";
    case GgufType::u16: return "u16";
    case GgufType::i16: return "i16";
    case GgufType::u32: return "u32";
    case GgufType::i32: return "i32";
    case GgufType::f32: return "f32";
    case GgufType::boolean: return "bool";
    case GgufType::string: return "string";
    case GgufType::array: return "array";
    case GgufType::u64: return "u64";
    case GgufType::i64: return "i64";
    case GgufType::f64: return "f64";
  }
  return "invalid";
}

namespace {
// Type ids from ggml's `enum ggml_type` (the ids GGUF stores), for the types tessera reads.
struct GgmlTypeId {
  uint32_t id;
  DType dtype;
};
constexpr GgmlTypeId kGgmlTypes[] = {
    {0, DType::f32},   {1, DType::f16},   {2, DType::q4_0},  {3, DType::q4_1},
    {6, DType::q5_0},  {7, DType::q5_1},  {8, DType::q8_0},  {10, DType::q2_k}, {11, DType::q3_k}, {12, DType::q4_k},
    {13, DType::q5_k}, {14, DType::q6_k},
    {24, DType::i8},   {25, DType::i16},  {26, DType::i32},  {27, DType::i64},
    {28, DType::f64},  {30, DType::bf16},
};
}  // namespace

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  for (const auto& t : kGgmlTypes)
    if (t.id == ggml_type) return t.dtype;
  return std::nullopt;
}

std::optional<uint32_t> ggml_from_dtype(DType dtype) {
  for (const auto& t : kGgmlTypes)
    if (t.dtype == dtype) return t.id;
  return std::nullopt;
}

std::optional<int64_t> GgufValue::as_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool> || std::is_floating_point_v<T> ||
                      !std::is_integral_v<T>) {
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
          return static_cast<int64_t>(v);
        } else {
          return static_cast<int64_t>(v);
        }
      },
      value);
}

std::optional<double> GgufValue::as_float() const {
  // An f32 becomes the double nearest its shortest decimal form, so 1e-5 stored
  // as f32 reads back as 1e-5 rather than 9.99999974e-06.
  if (auto* f = std::get_if<float>(&value)) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), *f);
    double d = *f;
    std::from_chars(buf, r.ptr, d);
    return d;
  }
  if (auto* d = std::get_if<double>(&value)) return *d;
  if (auto* u = std::get_if<uint64_t>(&value)) return static_cast<double>(*u);
  if (auto i = as_int()) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (auto* b = std::get_if<bool>(&value)) return *b;
  return std::nullopt;
}

}  // namespace tessera

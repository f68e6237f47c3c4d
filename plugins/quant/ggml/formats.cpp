// formats.cpp: format names and tensor validation.
#include "formats.hpp"

#include <iterator>

namespace tessera::ggml {
namespace {

constexpr std::string_view kFormatNames[] = {
    "f32", "f16", "bf16", "ggml.q4_0", "ggml.q4_1", "ggml.q5_0", "ggml.q5_1", "ggml.q8_0", "ggml.q4_k", "ggml.q5_k",
    "ggml.q6_k", "ggml.q2_k", "ggml.q3_k",
};
constexpr DType kFormatTypes[] = {
    DType::f32,  DType::f16,  DType::bf16, DType::q4_0, DType::q4_1, DType::q5_0,
    DType::q5_1, DType::q8_0, DType::q4_k, DType::q5_k, DType::q6_k, DType::q2_k, DType::q3_k,
};
static_assert(std::size(kFormatNames) == std::size(kFormatTypes));

}  // namespace

std::span<const std::string_view> supported_formats() { return kFormatNames; }

std::optional<DType> format_dtype(std::string_view format) {
  for (size_t i = 0; i < std::size(kFormatNames); ++i) {
    if (kFormatNames[i] == format) return kFormatTypes[i];
  }
  return std::nullopt;
}

Status check_tensor(const TensorRef& t, DType* dtype_out) {
  const auto dtype = format_dtype(t.format);
  if (!dtype) {
    return Unsupported("tensor '" + t.name + "': format '" + t.format + "' is not one the ggml quant plugin executes");
  }
  if (*dtype != t.dtype) {
    return CorruptData("tensor '" + t.name + "': format '" + t.format + "' disagrees with its element type '" +
                       std::string(dtype_name(t.dtype)) + "'");
  }
  if (t.ndim < 1 || t.ndim > kMaxDims) {
    return InvalidArgument("tensor '" + t.name + "': " + std::to_string(t.ndim) + " dimensions");
  }
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] <= 0) {
      return InvalidArgument("tensor '" + t.name + "': dimension " + std::to_string(i) + " is " +
                             std::to_string(t.shape[i]));
    }
  }
  const auto info = dtype_info(*dtype);
  const int64_t cols = t.cols();
  if (cols % info.block_elems != 0) {
    return CorruptData("tensor '" + t.name + "': rows of " + std::to_string(cols) + " elements are not whole " +
                       std::string(info.name) + " blocks of " + std::to_string(info.block_elems));
  }
  // Shapes come from files: multiply with overflow checks before trusting any product.
  uint64_t elems = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (__builtin_mul_overflow(elems, static_cast<uint64_t>(t.shape[i]), &elems) || elems > (uint64_t{1} << 48)) {
      return CorruptData("tensor '" + t.name + "': shape too large");
    }
  }
  const uint64_t expect = elems / info.block_elems * info.block_bytes;
  if (t.nbytes != expect) {
    return CorruptData("tensor '" + t.name + "': holds " + std::to_string(t.nbytes) + " bytes, its shape and format need " +
                       std::to_string(expect));
  }
  if (t.data == nullptr) return InvalidArgument("tensor '" + t.name + "': no data");
  *dtype_out = *dtype;
  return Status::Ok();
}

}  // namespace tessera::ggml

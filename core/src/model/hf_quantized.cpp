#include "model/hf_quantized.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "tessera/half.hpp"

namespace tessera {

namespace {

using nlohmann::json;

constexpr int64_t kBlock = 32;  // columns per ggml block (Q4_1, Q8_0)

struct Settings {
  std::string method;
  int32_t bits = 0;
  int32_t group_size = 0;
  int32_t zero_offset = 0;  // GPTQ v1 stores z - 1
};

std::optional<int64_t> int_field(const json& q, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = q.find(key);
    if (it != q.end() && it->is_number_integer()) return it->get<int64_t>();
  }
  return std::nullopt;
}

std::string string_field(const json& q, std::initializer_list<const char*> keys, std::string fallback) {
  for (const char* key : keys) {
    auto it = q.find(key);
    if (it != q.end() && it->is_string()) return it->get<std::string>();
  }
  return fallback;
}

Result<Settings> read_settings(const json& config, const std::string& config_source) {
  Settings s;
  auto qc = config.find("quantization_config");
  if (qc == config.end() || !qc->is_object()) return s;
  std::string method = string_field(*qc, {"quant_method"}, "");
  std::transform(method.begin(), method.end(), method.begin(), [](unsigned char c) { return std::tolower(c); });
  if (method != "gptq" && method != "awq") return s;
  const std::string where = config_source + ": quantization_config";
  const auto bits = int_field(*qc, {"bits", "w_bit"});
  const auto group = int_field(*qc, {"group_size", "q_group_size"});
  if (!bits) return CorruptData(where + " has no integer 'bits'");
  if (!group) return CorruptData(where + " has no integer 'group_size'");
  s.method = method;
  s.bits = static_cast<int32_t>(std::clamp<int64_t>(*bits, 0, 64));  // out of range: refused below by its value
  s.group_size = static_cast<int32_t>(std::clamp<int64_t>(*group, -2, 1 << 30));
  if (method == "gptq") {
    if (s.bits != 2 && s.bits != 3 && s.bits != 4 && s.bits != 8)
      return Unsupported(fmt::format("{}: {}-bit GPTQ is not supported (2, 3, 4 and 8 bits are)", where, *bits));
    if (*bits != s.bits) return Unsupported(fmt::format("{}: 'bits' {} is not supported", where, *bits));
    const std::string format = string_field(*qc, {"checkpoint_format", "format"}, "gptq");
    if (format == "gptq") s.zero_offset = 1;
    else if (format != "gptq_v2")
      return Unsupported(fmt::format("{}: GPTQ checkpoint_format '{}' is not supported ('gptq', 'gptq_v2' are)",
                                     where, format));
  } else {
    if (s.bits != 4 || *bits != 4)
      return Unsupported(fmt::format("{}: {}-bit AWQ is not supported (4 bits is)", where, *bits));
    std::string version = string_field(*qc, {"version"}, "gemm");
    std::transform(version.begin(), version.end(), version.begin(), [](unsigned char c) { return std::tolower(c); });
    if (version != "gemm")
      return Unsupported(fmt::format("{}: AWQ version '{}' is not supported ('gemm' is)", where, version));
    auto zp = qc->find("zero_point");
    if (zp != qc->end() && zp->is_boolean() && !zp->get<bool>())
      return Unsupported(where + ": AWQ without zero points is not supported");
  }
  if (*group != s.group_size || (s.group_size != -1 && (s.group_size <= 0 || s.group_size % kBlock != 0)))
    return Unsupported(fmt::format("{}: group_size {} is not supported (-1 or a multiple of {})", where, *group,
                                   kBlock));
  return s;
}

// A packed tensor of the checkpoint, checked for type and rank.
Result<const TensorRef*> packed_tensor(const std::function<const TensorRef*(std::string_view)>& find,
                                       const std::string& name, std::initializer_list<DType> dtypes,
                                       const std::string& source) {
  const TensorRef* t = find(name);
  if (t == nullptr) return CorruptData(fmt::format("{}: tensor '{}' is missing", source, name));
  if (std::find(dtypes.begin(), dtypes.end(), t->dtype) == dtypes.end())
    return CorruptData(fmt::format("{}: tensor '{}' has type {}, which a quantized checkpoint does not use", source,
                                   name, dtype_name(t->dtype)));
  return t;
}

// One stored scale as a float (f16, bf16 or f32).
float scale_at(const TensorRef& scales, int64_t index) {
  uint16_t h = 0;
  switch (scales.dtype) {
    case DType::f16:
      std::memcpy(&h, static_cast<const std::byte*>(scales.data) + 2 * index, 2);
      return f16_to_f32(h);
    case DType::bf16:
      std::memcpy(&h, static_cast<const std::byte*>(scales.data) + 2 * index, 2);
      return bf16_to_f32(h);
    default: {
      float f = 0;
      std::memcpy(&f, static_cast<const std::byte*>(scales.data) + 4 * index, 4);
      return f;
    }
  }
}

uint32_t word_at(const TensorRef& t, int64_t index) {
  uint32_t w = 0;
  std::memcpy(&w, static_cast<const std::byte*>(t.data) + 4 * index, 4);
  return w;
}

// Readers of value q and zero z of any (output row, input column) of one
// layer, one per packing; repack_blocks is instantiated for each, so the
// per-weight reads inline.

// GPTQ: qweight [in·b/32, out], the values of consecutive input columns one
// bit stream per output row (word k of it at row k), low bits first; qzeros
// [groups, out·b/32], the zeros of consecutive outputs one stream per group.
// With 2, 4 and 8 bits a value never crosses a word; with 3 it may.
class GptqLayer {
 public:
  GptqLayer(const TensorRef& qweight, const TensorRef& qzeros, int32_t bits, int32_t zero_offset, int64_t out)
      : qweight_(qweight), qzeros_(qzeros), bits_(bits), mask_((1u << bits) - 1), zero_offset_(zero_offset),
        out_(out) {}
  int32_t value(int64_t out, int64_t in) const { return read(qweight_, out, out_, in * bits_); }
  int32_t zero(int64_t group, int64_t out) const {
    return read(qzeros_, group * (out_ * bits_ / 32), 1, out * bits_) + zero_offset_;
  }

 private:
  // The value at bit `position` of the stream words t[first], t[first + stride], ...
  int32_t read(const TensorRef& t, int64_t first, int64_t stride, int64_t position) const {
    const int64_t word = position >> 5;
    const int shift = static_cast<int>(position & 31);
    uint64_t bits = word_at(t, first + word * stride) >> shift;
    if (shift + bits_ > 32) bits |= static_cast<uint64_t>(word_at(t, first + (word + 1) * stride)) << (32 - shift);
    return static_cast<int32_t>(bits & mask_);
  }
  const TensorRef& qweight_;
  const TensorRef& qzeros_;
  int32_t bits_;
  uint32_t mask_;
  int32_t zero_offset_;
  int64_t out_;
};

// AWQ GEMM: qweight [in, out / 8] and qzeros [groups, out / 8], eight output
// columns per word.
class AwqLayer {
 public:
  AwqLayer(const TensorRef& qweight, const TensorRef& qzeros, int64_t out) : qweight_(qweight), qzeros_(qzeros), out_(out) {}
  int32_t value(int64_t out, int64_t in) const { return nibble(word_at(qweight_, in * (out_ / 8) + out / 8), out); }
  int32_t zero(int64_t group, int64_t out) const { return nibble(word_at(qzeros_, group * (out_ / 8) + out / 8), out); }

 private:
  // Output column r of a word's eight sits in nibble kSlot[r] (AutoAWQ packs
  // columns 0, 2, 4, 6, 1, 3, 5, 7 into nibbles 0..7).
  static int32_t nibble(uint32_t word, int64_t out) {
    static constexpr std::array<int, 8> kSlot = {0, 4, 1, 5, 2, 6, 3, 7};
    return static_cast<int32_t>((word >> (4 * kSlot[out % 8])) & 0xF);
  }
  const TensorRef& qweight_;
  const TensorRef& qzeros_;
  int64_t out_;
};

void write_f16(std::byte* dst, float value) {
  const uint16_t h = f32_to_f16(value);
  std::memcpy(dst, &h, 2);
}

// The smallest block type that holds every s·(q − z) of a layer exactly:
// Q4_0 (4.5 bits a weight) where every x = q − z + 8 is a nibble, i.e. every
// z in [2^bits − 8, 8] (2- and 3-bit layers always, 4-bit ones with z = 8:
// symmetric); else Q4_1 (5.0) when each offset −s·z is an f16; else Q5_0
// (5.5), whose 5-bit x = q − z + 16 covers q − z in [−16, 15]; Q8_0 for 8
// bits. The quant plugin's group_block_type (tessera quantize --format gptq)
// makes the same choice.
template <class Layer>
DType exact_block_type(const Layer& layer, const TensorRef& scales, int32_t bits, int64_t groups, int64_t out) {
  if (bits == 8) return DType::q8_0;
  bool nibbles = true;
  for (int64_t g = 0; g < groups && nibbles; ++g)
    for (int64_t o = 0; o < out && nibbles; ++o) {
      const int32_t z = layer.zero(g, o);
      nibbles = z >= (1 << bits) - 8 && z <= 8;
    }
  if (nibbles) return DType::q4_0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < out; ++o) {
      // s has 11 significant bits and z at most 5, so the f32 product is exact.
      const float m = -scale_at(scales, g * out + o) * static_cast<float>(layer.zero(g, o));
      if (f16_to_f32(f32_to_f16(m)) != m) return DType::q5_0;
    }
  return DType::q4_1;
}

struct Blocks {
  DType dtype = DType::f32;
  std::vector<std::byte> bytes;  // [out, in / 32] blocks of dtype
};

// One layer as blocks of its exact_block_type, [out, in] with columns in
// `order`; `group_of` per input column. Rows are independent, so they are
// split over the OpenMP team (a 7B model has ~2 billion weights to move);
// nothing in the loop allocates or throws, and 8-bit zero points are
// checked before it.
template <class Layer>
Result<Blocks> repack_blocks(const Layer& layer, const TensorRef& scales, int32_t bits, int64_t out, int64_t in,
                             int64_t groups, const std::vector<int32_t>& order, const std::vector<int32_t>& group_of,
                             const std::string& what) {
  const DType dtype = exact_block_type(layer, scales, bits, groups, out);
  if (dtype == DType::q8_0) {
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t o = 0; o < out; ++o)
        if (const int32_t z = layer.zero(g, o); z != 128)
          return Unsupported(fmt::format("{}: row {} has zero point {}; 8-bit weights are supported symmetric only "
                                         "(zero 128)",
                                         what, o, z));
  }
  const int64_t block_bytes = dtype_info(dtype).block_bytes;
  const int64_t blocks_per_row = in / kBlock;
  Blocks blocks{dtype, std::vector<std::byte>(static_cast<size_t>(out * blocks_per_row * block_bytes))};
#pragma omp parallel for schedule(static) if (out * in >= (int64_t{1} << 20))
  for (int64_t o = 0; o < out; ++o) {
    std::array<int32_t, kBlock> q{};
    for (int64_t b = 0; b < blocks_per_row; ++b) {
      std::byte* block = blocks.bytes.data() + (o * blocks_per_row + b) * block_bytes;
      const int32_t group = group_of[order[b * kBlock]];
      const float s = scale_at(scales, group * out + o);  // an f16 value (checked)
      const int32_t z = layer.zero(group, o);
      for (int64_t j = 0; j < kBlock; ++j) q[j] = layer.value(o, order[b * kBlock + j]);
      write_f16(block, s);
      if (dtype == DType::q4_0) {  // d·(x − 8), x = q − z + 8 in [0, 15] (exact_block_type)
        auto* qs = reinterpret_cast<uint8_t*>(block + 2);
        for (int64_t j = 0; j < kBlock / 2; ++j)
          qs[j] = static_cast<uint8_t>((q[j] - z + 8) | ((q[j + kBlock / 2] - z + 8) << 4));
      } else if (dtype == DType::q4_1) {  // d·q + m
        write_f16(block + 2, -s * static_cast<float>(z));
        auto* qs = reinterpret_cast<uint8_t*>(block + 4);
        for (int64_t j = 0; j < kBlock / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kBlock / 2] << 4));
      } else if (dtype == DType::q5_0) {  // d·(x − 16), x's fifth bits in qh
        uint32_t qh = 0;
        auto* qs = reinterpret_cast<uint8_t*>(block + 6);
        for (int64_t j = 0; j < kBlock / 2; ++j) {
          // q in [0, 15] and z in [0, 16] (GPTQ v1 adds 1): x in [0, 31].
          const auto lo = static_cast<uint32_t>(q[j] - z + 16);
          const auto hi = static_cast<uint32_t>(q[j + kBlock / 2] - z + 16);
          qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
          qh |= ((lo >> 4) << j) | ((hi >> 4) << (j + kBlock / 2));
        }
        std::memcpy(block + 2, &qh, 4);
      } else {  // d·q8, z = 128 (checked above)
        auto* qs = reinterpret_cast<int8_t*>(block + 2);
        for (int64_t j = 0; j < kBlock; ++j) qs[j] = static_cast<int8_t>(q[j] - 128);
      }
    }
  }
  return blocks;
}

Result<RepackedLinearWeight> repack_layer(const Settings& s, const std::string& base,
                                          const std::function<const TensorRef*(std::string_view)>& find,
                                          const std::string& source) {
  const std::string what = fmt::format("{}: {} Linear '{}'", source, s.method == "gptq" ? "GPTQ" : "AWQ", base);
  auto qweight = packed_tensor(find, base + ".qweight", {DType::i32}, source);
  if (!qweight.ok()) return qweight.status();
  auto qzeros = packed_tensor(find, base + ".qzeros", {DType::i32}, source);
  if (!qzeros.ok()) return qzeros.status();
  auto scales = packed_tensor(find, base + ".scales", {DType::f16, DType::bf16, DType::f32}, source);
  if (!scales.ok()) return scales.status();
  const TensorRef& qw = **qweight;
  const TensorRef& qz = **qzeros;
  const TensorRef& sc = **scales;
  if (qw.ndim != 2 || qz.ndim != 2 || sc.ndim != 2)
    return CorruptData(what + ": qweight, qzeros and scales must be 2-D");

  constexpr int64_t kMaxFeatures = int64_t{1} << 24;
  // Bounded before any product: the reader accepts any dimension beside a 0.
  if (qw.shape[0] <= 0 || qw.shape[1] <= 0 || qw.shape[0] > kMaxFeatures || qw.shape[1] > kMaxFeatures)
    return CorruptData(fmt::format("{}: qweight {}x{} gives no sensible shape", what, qw.shape[0], qw.shape[1]));
  int64_t out = 0, in = 0;
  // Words hold 32 / b values (3 bits: 32 values in 3 words).
  if (s.method == "gptq") {
    in = qw.shape[0] * 32 / s.bits;
    out = qw.shape[1];
  } else {
    in = qw.shape[0];
    out = qw.shape[1] * 32 / s.bits;
  }
  if (in > kMaxFeatures || out > kMaxFeatures)
    return CorruptData(fmt::format("{}: qweight {}x{} gives no sensible shape", what, qw.shape[0], qw.shape[1]));
  if (s.method == "gptq" && qw.shape[0] * 32 % s.bits != 0)
    return CorruptData(fmt::format("{}: qweight's {} words a row do not hold whole {}-bit values", what, qw.shape[0],
                                   s.bits));
  if (in % kBlock != 0)
    return Unsupported(fmt::format("{}: {} input features are not a multiple of {}", what, in, kBlock));
  if (out * s.bits % 32 != 0)
    return CorruptData(fmt::format("{}: {} output features do not fill whole 32-bit words of zeros", what, out));
  const int64_t groups = s.group_size == -1 ? 1 : (in + s.group_size - 1) / s.group_size;
  if (sc.shape[0] != groups || sc.shape[1] != out)
    return CorruptData(fmt::format("{}: scales are {}x{}, expected {}x{} ({} inputs in groups of {})", what,
                                   sc.shape[0], sc.shape[1], groups, out, in, s.group_size));
  if (qz.shape[0] != groups || qz.shape[1] != out * s.bits / 32)
    return CorruptData(fmt::format("{}: qzeros are {}x{}, expected {}x{}", what, qz.shape[0], qz.shape[1], groups,
                                   out * s.bits / 32));

  // The blocks' d is an f16: a scale it cannot hold exactly (from a bf16 or
  // f32 tensor) would change the weights, so it is refused rather than rounded.
  for (int64_t i = 0; i < groups * out; ++i) {
    const float scale = scale_at(sc, i);
    if (!std::isfinite(scale) || f16_to_f32(f32_to_f16(scale)) != scale)
      return Unsupported(fmt::format("{}: scale {} of group {}, row {} is not a finite value an f16 holds exactly, as the blocks store it",
                                     what, scale, i / out, i % out));
  }

  // Each input column's group: GPTQ's g_idx where stored, else in order.
  std::vector<int32_t> group_of(static_cast<size_t>(in));
  for (int64_t c = 0; c < in; ++c) group_of[c] = static_cast<int32_t>(s.group_size == -1 ? 0 : c / s.group_size);
  bool in_order = true;
  if (const TensorRef* g_idx = s.method == "gptq" ? find(base + ".g_idx") : nullptr) {
    if (g_idx->dtype != DType::i32 || g_idx->numel() != in)
      return CorruptData(fmt::format("{}: g_idx must be {} int32 values", what, in));
    for (int64_t c = 0; c < in; ++c) {
      const int32_t g = static_cast<int32_t>(word_at(*g_idx, c));
      if (g < 0 || g >= groups)
        return CorruptData(fmt::format("{}: g_idx[{}] = {} is outside the {} groups", what, c, g, groups));
      in_order = in_order && g == group_of[c];
      group_of[c] = g;
    }
  }
  std::vector<int32_t> order(static_cast<size_t>(in));
  std::iota(order.begin(), order.end(), 0);
  if (!in_order)
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return group_of[a] < group_of[b]; });
  for (int64_t b = 0; b < in / kBlock; ++b) {
    for (int64_t j = 1; j < kBlock; ++j)
      if (group_of[order[b * kBlock + j]] != group_of[order[b * kBlock]])
        return Unsupported(fmt::format("{}: group {} of the input columns is not a whole number of {}-column blocks "
                                       "(g_idx gives groups of other sizes)",
                                       what, group_of[order[b * kBlock + j]], kBlock));
  }

  auto blocks = s.method == "gptq"
                    ? repack_blocks(GptqLayer(qw, qz, s.bits, s.zero_offset, out), sc, s.bits, out, in, groups, order,
                                    group_of, what)
                    : repack_blocks(AwqLayer(qw, qz, out), sc, s.bits, out, in, groups, order, group_of, what);
  if (!blocks.ok()) return blocks.status();

  RepackedLinearWeight w;
  w.name = base + ".weight";
  w.dtype = blocks->dtype;
  w.out_features = out;
  w.in_features = in;
  w.blocks = std::move(blocks->bytes);
  if (!in_order) w.input_order = std::move(order);
  return w;
}

Result<RepackedCheckpoint> repack_all(const json& config, std::span<const TensorRef> tensors,
                                      const std::function<const TensorRef*(std::string_view)>& find,
                                      const std::string& source, const std::string& config_source) {
  auto settings = read_settings(config, config_source);
  if (!settings.ok()) return settings.status();
  RepackedCheckpoint out;
  if (settings->method.empty()) return out;
  out.method = settings->method;
  out.bits = settings->bits;
  out.group_size = settings->group_size;
  constexpr std::string_view kSuffix = ".qweight";
  for (const TensorRef& t : tensors) {
    if (t.name.size() <= kSuffix.size() || !t.name.ends_with(kSuffix)) continue;
    const std::string base = t.name.substr(0, t.name.size() - kSuffix.size());
    if (find(base + ".weight") != nullptr)
      return CorruptData(fmt::format("{}: '{}' is stored both packed and as '{}.weight'", source, base, base));
    auto layer = repack_layer(*settings, base, find, source);
    if (!layer.ok()) return layer.status();
    out.weights.push_back(std::move(layer).value());
    for (const char* part : {".qweight", ".qzeros", ".scales", ".g_idx"})
      if (find(base + part) != nullptr) out.consumed.push_back(base + part);
  }
  if (out.weights.empty())
    return CorruptData(fmt::format("{}: {} says the model is {}-quantized but no tensor ends in '.qweight'", source,
                                   config_source, out.method));
  return out;
}

}  // namespace

Result<RepackedCheckpoint> repack_hf_quantized(const json& config, std::span<const TensorRef> tensors,
                                               const std::function<const TensorRef*(std::string_view)>& find,
                                               const std::string& source,
                                               const std::string& config_source) noexcept {
  try {
    return repack_all(config, tensors, find, source, config_source);
  } catch (const std::bad_alloc&) {
    return OutOfMemory(source + ": out of memory while repacking the GPTQ/AWQ Linears");
  } catch (const std::exception& e) {
    return Internal(source + ": repacking the GPTQ/AWQ Linears failed: " + e.what());
  }
}

}  // namespace tessera

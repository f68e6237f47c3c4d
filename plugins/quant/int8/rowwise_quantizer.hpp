// rowwise_quantizer.hpp: `tessera quantize --method int8`: each weight row
// (rotated first, with QuantizeSpec::rotate_inputs) rounded to int8 against
// its own symmetric scale max|row| / 127 (the weights of INT8 W8A8; the
// activations are quantized at run time).
#pragma once

#include <cstdint>
#include <memory>

#include "tessera/quantizer.hpp"

namespace tessera::int8 {

// The storage format: int8 values [out, in] with f32 scales [out] stored
// beside them under the weight's name + kScaleSuffix; or, for rows stored
// rotated (W·R, hadamard_rotation.hpp), under + kHadamardScaleSuffix instead,
// so that a library that knows only kScaleSuffix refuses such a weight.
inline constexpr std::string_view kFormat = "i8";
inline constexpr std::string_view kScaleSuffix = "_scale";
inline constexpr std::string_view kHadamardScaleSuffix = "_hadamard_scale";

// Refuses (invalid_argument / unsupported, saying why) a spec this method cannot write.
Result<std::unique_ptr<WeightQuantizer>> make_rowwise_quantizer(const QuantizeSpec& spec, int64_t out_features,
                                                                int64_t in_features);

// Row o of w [out, in] rounded: q[o][k] = round(w[o][k] / scale[o]), scale[o] = max_k |w[o][k]| / 127.
void quantize_rows(const float* w, int64_t out, int64_t in, int8_t* q, float* scales);

}  // namespace tessera::int8

// model/hf_quantized.hpp: Hugging Face GPTQ and AWQ checkpoints as GGUF block tensors.
//
// A folder whose config.json has a `quantization_config` with quant_method
// "gptq" or "awq" stores each quantized Linear as packed integer tensors
// (`X.qweight`, `X.qzeros`, `X.scales`, GPTQ's `X.g_idx`) instead of
// `X.weight`. Both hold, per output row and group of input columns, a scale s
// and an integer zero z, and the weight is w = s·(q − z) for its b-bit value q.
// That is exactly a ggml block of 32 columns sharing one scale and offset,
// the smallest that holds the whole layer:
//   Q4_0, d = s, x = q − z + 8 (d·(x − 8)), 18 bytes a block, when every z
//     of the layer is in [2^b − 8, 8] (2 and 3 bits always; 4 bits with
//     z = 8, symmetric files);
//   else, 4 bits: Q4_1, d = s, m = −s·z (d·q + m), 20 bytes, when every −s·z
//     of the layer is an f16; otherwise Q5_0, d = s, x = q − z + 16
//     (d·(x − 16)), whose five bits hold any q − z in [−16, 15], 22 bytes;
//   8 bits with z = 128 (symmetric): Q8_0, d = s, q − 128.
// So the loader repacks these tensors into those blocks, stored as `X.weight`,
// and the quant plugins run them with their own kernels: the weight stays in
// the quantized domain, no matrix is dequantized, and every weight is the
// checkpoint's s·(q − z) exactly (scales stored as bf16 or f32 must be f16
// values, the blocks' scale type; others are refused rather than rounded).
//
// GPTQ's act-order (desc_act) lets column c belong to any group g_idx[c]. The
// columns are then stored sorted by group (stable), so each 32-column block
// has one group, and `input_order` says which input channel each stored
// column holds; the model builder gathers the Linear's input in that order.
//
// Layouts (the reference packers'; each 32-bit word holds 32/b values, the
// first in the lowest bits):
//   GPTQ (AutoGPTQ, GPTQModel): qweight [in·b/32, out] (values along the input
//     dimension), qzeros [groups, out·b/32] (along the output), scales [groups,
//     out], g_idx [in] int32 (optional: column c's group, c / group_size when
//     absent). checkpoint_format "gptq" (v1, the default) stores z − 1,
//     "gptq_v2" stores z. A v1 zero stored as 2^b − 1 reads as z = 2^b, as
//     the exllama kernels read it (AutoGPTQ's torch path masks it to 0; only
//     asymmetric v1 files whose packer saw z = 0 differ, and those packers
//     could not store it either).
//   AWQ GEMM (AutoAWQ, version "gemm"): qweight [in, out/8], qzeros [groups,
//     out/8], both along the output with the nibbles of a word holding output
//     columns 0, 2, 4, 6, 1, 3, 5, 7 of its eight; scales [groups, out]; z as stored.
//   GPTQ at 2 and 3 bits: 2-bit values 16 a word; 3-bit values run on across
//     word boundaries (32 values in 3 words, value 10 in bits 30-31 of the
//     first and bit 0 of the second), so 3-bit in and out (for the zeros)
//     are whole 32s (2-bit: 16s).
//     Repacked as Q4_0 (every z of 2 or 3 bits is in [0, 8]).
//
// A GGUF file holds the same tensors (under its own names: blk.N.attn_q.qweight
// for blk.N.attn_q.weight) when its metadata has kGgufQuantizationConfigKey,
// a JSON string of what quantization_config would say (`tessera quantize
// --format gptq` writes such files: groups GGUF's block types cannot hold).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

inline constexpr std::string_view kGgufQuantizationConfigKey = "tessera.quantization_config";

struct RepackedLinearWeight {
  std::string name;                  // the Linear's weight name, X.weight
  DType dtype = DType::q4_1;         // q4_0, q4_1, q5_0 or q8_0
  int64_t out_features = 0;
  int64_t in_features = 0;
  std::vector<std::byte> blocks;     // [out_features, in_features] in dtype's blocks, columns in input_order
  std::vector<int32_t> input_order;  // [in_features]: stored column j holds input channel input_order[j]; empty: j
};

struct RepackedCheckpoint {
  std::string method;                     // "gptq", "awq"; empty when the config asks for neither
  int32_t bits = 0;
  int32_t group_size = 0;                 // -1: one group per row
  std::vector<RepackedLinearWeight> weights;
  std::vector<std::string> consumed;      // the packed tensors the weights replace
};

// `config`: the folder's config.json (for a GGUF file: {"quantization_config":
// its key's JSON}); `tensors`: every tensor of the model; `find`: by name;
// `config_source`: where the config was read, for messages. A config without
// quant_method "gptq"/"awq" gives an empty result. Settings the repacking
// cannot represent (asymmetric 8-bit, groups that are not whole 32-column
// blocks, AWQ other than GEMM or 4-bit) are unsupported; tensors whose shapes
// or types disagree with the config or each other are corrupt_data; every
// message names the source and the tensor.
Result<RepackedCheckpoint> repack_hf_quantized(const nlohmann::json& config, std::span<const TensorRef> tensors,
                                               const std::function<const TensorRef*(std::string_view)>& find,
                                               const std::string& source,
                                               const std::string& config_source) noexcept;

}  // namespace tessera

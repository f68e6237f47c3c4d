// Fuzzes the GPTQ/AWQ repacking (model/hf_quantized.hpp): the first byte
// picks a quantization_config, the rest is a safetensors file of packed
// tensors. No crash, no read outside the tensors (ASan), and every repacked
// weight has the bytes its shape needs and an input order that is a
// permutation of its columns.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/hf_quantized.hpp"
#include "model/safetensors.hpp"

namespace {

nlohmann::json config_for(uint8_t choice) {
  using nlohmann::json;
  static const json configs[] = {
      {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 32}, {"desc_act", true}, {"checkpoint_format", "gptq"}},
      {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", -1}, {"checkpoint_format", "gptq_v2"}},
      {{"quant_method", "gptq"}, {"bits", 8}, {"group_size", 64}},
      {{"quant_method", "gptq"}, {"bits", 3}, {"group_size", 128}, {"checkpoint_format", "gptq_v2"}},
      {{"quant_method", "gptq"}, {"bits", 2}, {"group_size", 32}},
      {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}, {"version", "gemm"}},
      {{"quant_method", "awq"}, {"w_bit", 4}, {"q_group_size", 128}, {"zero_point", true}},
  };
  return {{"quantization_config", configs[choice % std::size(configs)]}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  if (size < 1) return 0;
  auto parsed = SafetensorsFile::open_memory(std::as_bytes(std::span(data + 1, size - 1)), "fuzz.safetensors");
  if (!parsed.ok()) return 0;
  std::vector<TensorRef> tensors;
  for (const auto& t : parsed.value()->tensors()) {
    TensorRef r;
    r.name = t.name;
    r.dtype = t.dtype;
    r.ndim = static_cast<int32_t>(t.shape.size());
    for (int i = 0; i < r.ndim; ++i) r.shape[i] = t.shape[i];
    r.data = t.data;
    r.nbytes = t.nbytes;
    tensors.push_back(r);
  }
  auto find = [&](std::string_view name) -> const TensorRef* {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  };
  auto repacked = repack_hf_quantized(config_for(data[0]), tensors, find, "fuzz", "fuzz/config.json");
  if (!repacked.ok()) return 0;
  for (const auto& w : repacked->weights) {
    const auto info = dtype_info(w.dtype);
    if (w.blocks.size() != static_cast<size_t>(w.out_features * w.in_features / info.block_elems * info.block_bytes)) {
      std::fprintf(stderr, "fuzz_hf_quantized: '%s' has %zu bytes of blocks\n", w.name.c_str(), w.blocks.size());
      std::abort();
    }
    if (!w.input_order.empty()) {
      std::vector<bool> seen(static_cast<size_t>(w.in_features), false);
      for (int32_t c : w.input_order) {
        if (c < 0 || c >= w.in_features || seen[c]) std::abort();
        seen[c] = true;
      }
    }
  }
  return 0;
}

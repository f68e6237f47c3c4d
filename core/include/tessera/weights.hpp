// tessera/weights.hpp: a model's stored tensors and metadata, whatever the file format.
//
// The core opens GGUF files and Hugging Face safetensors folders and presents
// both as a WeightStore: the tensors under the names the file gives them, and
// the raw metadata (tessera/metadata.hpp). It knows no architecture: which
// hyper-parameters and tensor names a model has is its architecture plugin's
// knowledge (GGUF's "blk.0.attn_q.weight", Hugging Face's
// "model.layers.0.self_attn.q_proj.weight").
//
// Thread-safety: read-only after construction; safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tessera/abi.hpp"
#include "tessera/metadata.hpp"
#include "tessera/tensor.hpp"

namespace tessera {

// One stored tensor. `data` points into the memory-mapped file (or, for a
// tensor the core made at load, such as a GPTQ/AWQ Linear repacked into ggml
// blocks, into memory the store owns) and lives as long as the WeightStore.
// `shape` is row-major (shape[0] outermost): a GGUF tensor with ne = {in, out}
// appears as shape {out, in}.
struct TensorRef {
  std::string name;     // as stored in the file
  DType dtype = DType::f32;
  std::string format;   // storage format a quant plugin declares: "f32", "f16", "bf16", "ggml.q4_1", ...
  int32_t ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  const void* data = nullptr;
  uint64_t nbytes = 0;

  int64_t rows() const noexcept { return ndim <= 1 ? 1 : numel() / shape[ndim - 1]; }
  int64_t cols() const noexcept { return ndim == 0 ? 0 : shape[ndim - 1]; }
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return ndim == 0 ? 0 : n;
  }
};

enum class ModelFormat : uint32_t { gguf = 0, safetensors = 1 };

class WeightStore : public AbiObject {
 public:
  virtual ModelFormat format() const noexcept = 0;
  // What the file says it holds: GGUF's general.architecture ("llama"), or a
  // Hugging Face config.json's architectures[0] ("LlamaForCausalLM"; its
  // model_type where that list is absent). Architecture plugins are chosen by it.
  virtual std::string_view architecture() const noexcept = 0;
  virtual const Metadata& metadata() const noexcept = 0;
  // By stored name; nullptr when absent.
  virtual const TensorRef* find(std::string_view name) const noexcept = 0;
  // Every tensor, in file order.
  virtual std::span<const TensorRef> tensors() const noexcept = 0;
  // The file or folder the weights came from, for messages.
  virtual const std::string& source() const noexcept = 0;
};

}  // namespace tessera

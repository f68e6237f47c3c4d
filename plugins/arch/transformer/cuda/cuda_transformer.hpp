// cuda_transformer.hpp: a Llama-family model run entirely on one CUDA device.
//
// The weights go to the device in their file's encoding (ggml blocks, f16,
// bf16, f32) and are decoded in registers by each product; K and V live in a
// contiguous device cache of `max_context` positions per layer. One sequence
// at a time: start() runs a prompt (in chunks of up to `max_batch_rows` rows,
// each weight read once per chunk), step() one token, the greedy choice made
// on the device. A decode step is captured once as a CUDA graph and replayed:
// one launch and one host synchronisation per token.
//
// First slice of issue 22: not yet a Model behind the pipeline's [run]
// device, no paged cache, no batch of sequences (docs/cuda.md says what is left).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::transformer::cuda {

struct CudaTransformerOptions {
  int device = 0;
  int64_t max_context = 4096;     // capped at the model's own
  int64_t max_batch_rows = 512;   // prompt rows per forward
  bool graphs = true;             // replay decode steps as a CUDA graph
};

class CudaTransformer {
 public:
  // Checks the model (Llama-family hyper-parameters, formats the kernels
  // decode) and copies it to the device. Never throws.
  static Result<std::unique_ptr<CudaTransformer>> create(const WeightStore& weights,
                                                         const CudaTransformerOptions& options) noexcept;
  ~CudaTransformer();
  CudaTransformer(const CudaTransformer&) = delete;
  CudaTransformer& operator=(const CudaTransformer&) = delete;

  // A new sequence: runs `ids` from position 0 and returns the greedy next id.
  Result<int32_t> start(std::span<const int32_t> ids) noexcept;
  // Feeds the id the last start() or step() chose; returns the next one.
  Result<int32_t> step() noexcept;
  // The logits behind the last choice: [vocab].
  Status last_logits(std::vector<float>& out) noexcept;
  // The logits of every row of `ids` run from position 0: [ids.size(), vocab].
  Status all_logits(std::span<const int32_t> ids, std::vector<float>& out) noexcept;

  int64_t vocab() const noexcept;
  int64_t max_context() const noexcept;
  int64_t position() const noexcept;   // tokens in the cache
  uint64_t weight_bytes() const noexcept;  // bytes one decode step reads from the weights
  const std::string& device_name() const noexcept;

 private:
  struct State;
  explicit CudaTransformer(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace tessera::transformer::cuda

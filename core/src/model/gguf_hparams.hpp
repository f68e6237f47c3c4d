// model/gguf_hparams.hpp: GGUF metadata (`<arch>.*` keys) -> ModelHParams.
#pragma once

#include "model/gguf.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

// Reads general.architecture and the `<arch>.` keys: context_length,
// embedding_length, block_count, feed_forward_length, attention.head_count,
// attention.head_count_kv (default head_count), attention.key_length (default
// embedding_length / head_count), attention.layer_norm_rms_epsilon,
// rope.freq_base, rope.scaling.{type,factor,original_context_length}, vocab size
// (tokenizer.ggml.tokens length, else `<arch>.vocab_size`), and mamba's ssm.*
// keys. tied_embeddings is set when output.weight is absent. rope_style is neox
// for architectures whose converter keeps Q/K unpermuted (qwen2, ...), adjacent
// for llama-style ones.
Result<ModelHParams> hparams_from_gguf(const GgufFile& file);

}  // namespace tessera

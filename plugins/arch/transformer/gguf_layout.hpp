// gguf_layout.hpp: a Hugging Face Llama-family checkpoint as llama.cpp's
// converter would write it in GGUF: the architecture name, its "<arch>.*"
// keys, the tensors under their GGUF names, and the Q/K rows of llama-style
// models interleaved for GGUF's adjacent-pair RoPE (docs/model-files.md).
#pragma once

#include "tessera/architecture.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera::transformer {

// The GGUF general.architecture of a Hugging Face architecture this plugin
// serves: "llama" for Llama, Mistral and SmolLM, "qwen2" for Qwen2.
// Errors: a GGUF store (it is GGUF already), RoPE scaling that GGUF holds
// as a computed tensor (llama3), tensors with no GGUF name.
Result<GgufLayout> gguf_layout_of(const WeightStore& weights);

}  // namespace tessera::transformer

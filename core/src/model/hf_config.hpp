// model/hf_config.hpp: Hugging Face checkpoints: config.json -> ModelHParams, and
// tensor names -> the normalized (GGUF-style) names of weights.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

// Reads a config.json of LlamaForCausalLM, Qwen2ForCausalLM or MistralForCausalLM.
// `source` names the file in messages. rope_style is neox (HF stores Q/K unpermuted);
// tied_embeddings comes from tie_word_embeddings (open_model also sets it when
// lm_head.weight is absent).
Result<ModelHParams> hparams_from_hf_config(const nlohmann::json& config, const std::string& source);

// model.embed_tokens.weight -> token_embd.weight, model.layers.N.self_attn.q_proj.weight
// -> blk.N.attn_q.weight, ... nullopt for names outside the mapping.
std::optional<std::string> normalize_hf_tensor_name(std::string_view hf_name);

}  // namespace tessera

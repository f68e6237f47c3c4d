// prompt.hpp: from a model file and a user's text to the ids the model is fed.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

class ModelFile;

// The tokenizer inside a GGUF file, or the tokenizer.json beside safetensors.
Result<tok::Tokenizer> load_model_tokenizer(const ModelFile& file);

// The prompt's ids: the text must be valid UTF-8; with `chat`, it is wrapped by
// the model's chat template (an unknown template is an error that suggests
// chat = false); BOS follows the model's metadata. An empty result is an error.
Result<std::vector<int32_t>> build_prompt_ids(const tok::Tokenizer& tokenizer, std::string_view prompt, bool chat,
                                              std::string_view system);

// A whole conversation through the model's chat template, ending with the
// header of the assistant's reply. Every message must be valid UTF-8.
Result<std::vector<int32_t>> build_chat_ids(const tok::Tokenizer& tokenizer, std::span<const tok::ChatMessage> messages);

}  // namespace tessera

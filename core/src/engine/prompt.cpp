#include "engine/prompt.hpp"

#include <fmt/format.h>

#include "model/model_file.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/gguf_loader.hpp"
#include "tokenizer/utf8.hpp"

namespace tessera {

Result<tok::Tokenizer> load_model_tokenizer(const ModelFile& file) {
  if (file.gguf()) return tok::tokenizer_from_gguf(*file.gguf());
  if (!file.tokenizer_json_path().empty()) return tok::load_tokenizer_json(file.tokenizer_json_path());
  return NotFound(fmt::format("{}: no tokenizer found (a GGUF file carries one; a safetensors folder needs "
                              "tokenizer.json)",
                              file.source()));
}

Result<std::vector<int32_t>> build_prompt_ids(const tok::Tokenizer& tokenizer, std::string_view prompt, bool chat,
                                              std::string_view system) {
  if (const size_t bad = tok::utf8_scan(prompt).valid_bytes; bad != prompt.size())
    return InvalidArgument(fmt::format("the prompt is not valid UTF-8 (bad byte 0x{:02x} at offset {})",
                                       static_cast<unsigned char>(prompt[bad]), bad));
  if (const size_t bad = tok::utf8_scan(system).valid_bytes; bad != system.size())
    return InvalidArgument(fmt::format("the system message is not valid UTF-8 (offset {})", bad));

  if (chat) {
    std::vector<tok::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", std::string(system)});
    messages.push_back({"user", std::string(prompt)});
    return build_chat_ids(tokenizer, messages);
  }
  auto ids = tokenizer.encode(prompt, std::nullopt, /*parse_special=*/false);
  if (ids.empty())
    return InvalidArgument("the prompt is empty and the model adds no BOS token: there is nothing to continue");
  return ids;
}


Result<std::vector<int32_t>> build_chat_ids(const tok::Tokenizer& tokenizer, std::span<const tok::ChatMessage> messages) {
  if (messages.empty()) return InvalidArgument("the conversation has no message");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& content = messages[i].content;
    if (const size_t bad = tok::utf8_scan(content).valid_bytes; bad != content.size())
      return InvalidArgument(fmt::format("message {} is not valid UTF-8 (bad byte at offset {})", i, bad));
  }
  auto tmpl = tok::ChatTemplate::for_tokenizer(tokenizer);
  if (!tmpl.ok())
    return InvalidArgument(fmt::format("{} (set [run] chat = false to send the prompt as it is)",
                                       tmpl.status().message()));
  auto text = tmpl->apply(messages, /*add_generation_prompt=*/true);
  if (!text.ok()) return text.status();
  // A template that writes BOS itself must not get a second one.
  auto ids = tokenizer.encode(*text, tmpl->renders_bos() ? std::optional<bool>(false) : std::nullopt,
                              /*parse_special=*/true);
  if (ids.empty()) return InvalidArgument("the chat template rendered nothing to continue");
  return ids;
}

}  // namespace tessera

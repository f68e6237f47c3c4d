// tokenizer/chat_template.hpp: render a conversation the way the model's template does.
//
// Models ship their prompt format as a Jinja template (tokenizer.chat_template).
// Rather than interpreting Jinja, ChatTemplate recognizes the known template
// families by their markers and renders them natively, reproducing exactly
// what the Jinja source renders:
//   "chatml"  <|im_start|>role\n...<|im_end|>\n (SmolLM2, Qwen2); a default
//             system message written in the template (SmolLM2: "You are a
//             helpful AI assistant named SmolLM, trained by Hugging Face";
//             Qwen2: "You are a helpful assistant") is read from the template
//             and inserted when the conversation does not start with one.
//   "llama2"  <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s>
//   "llama3"  <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> (Llama 3.0)
//   "phi3"    <s><|user|>\n...<|end|>\n<|assistant|>\n
// Anything else is an unsupported error that quotes the template's start.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::tok {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  // Recognizes `source` (the Jinja text). `bos_text`/`eos_text` are what the
  // template's bos_token / eos_token variables hold (e.g. "<s>", "</s>").
  static Result<ChatTemplate> create(std::string_view source, std::string bos_text, std::string eos_text);
  // The same from the tokenizer's chat_template and its BOS/EOS token texts;
  // an error when the model has no template.
  static Result<ChatTemplate> for_tokenizer(const Tokenizer& tokenizer);

  const std::string& name() const { return name_; }

  // The prompt text for `messages`; with `add_generation_prompt` it ends with
  // the header that starts the assistant's reply. Errors (invalid_argument)
  // for conversations the template itself rejects (Llama 2: roles must
  // alternate user/assistant) and for unknown roles where the template would fail.
  Result<std::string> apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  // True when the rendered text already contains the BOS token text; encode it
  // with add_bos = false then, or BOS appears twice.
  bool renders_bos() const { return renders_bos_; }

  // ChatML: the default system message found in the template ("" if none).
  const std::string& default_system() const { return default_system_; }

 private:
  enum class Family { chatml, llama2, llama3, phi3 };
  ChatTemplate() = default;
  Result<std::string> render_llama2(std::span<const ChatMessage> messages) const;

  Family family_ = Family::chatml;
  std::string name_;
  std::string bos_, eos_;
  std::string default_system_;
  bool renders_bos_ = false;
};

}  // namespace tessera::tok

#include "tokenizer/chat_template.hpp"

namespace tessera::tok {
namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// Python's str.strip() / Jinja's trim for the whitespace that occurs in prompts.
std::string strip(std::string_view s) {
  constexpr std::string_view ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

// A short, single-line excerpt of the template for error messages.
std::string excerpt(std::string_view source) {
  std::string first(source.substr(0, std::min<size_t>(source.find('\n'), 80)));
  if (first.size() < source.size()) first += "...";
  return first;
}

// Reads the default system message a ChatML template writes as a literal:
// '<|im_start|>system\n<text><|im_end|>' with plain text (no Jinja, no quotes)
// in between. The newline may be a real one or the escape "\n".
std::string find_default_system(std::string_view source) {
  constexpr std::string_view head = "<|im_start|>system";
  for (size_t at = source.find(head); at != std::string_view::npos; at = source.find(head, at + 1)) {
    std::string_view rest = source.substr(at + head.size());
    if (rest.starts_with("\n")) {
      rest.remove_prefix(1);
    } else if (rest.starts_with("\\n")) {
      rest.remove_prefix(2);
    } else {
      continue;
    }
    const size_t end = rest.find("<|im_end|>");
    if (end == std::string_view::npos || end == 0) continue;
    const std::string_view text = rest.substr(0, end);
    if (text.find_first_of("'\"{}\n\\") != std::string_view::npos) continue;  // Jinja code, not a literal
    return std::string(text);
  }
  return {};
}

}  // namespace

Result<ChatTemplate> ChatTemplate::create(std::string_view source, std::string bos_text, std::string eos_text) {
  ChatTemplate t;
  t.bos_ = std::move(bos_text);
  t.eos_ = std::move(eos_text);
  const std::string hint =
      " Set chat = false to send the prompt as plain text, without a template.";
  if (source.empty()) return Unsupported("the model has no chat template (tokenizer.chat_template)." + hint);

  if (contains(source, "<|im_start|>") && contains(source, "<|im_end|>")) {
    t.family_ = Family::chatml;
    t.name_ = "chatml";
    t.default_system_ = find_default_system(source);
    t.renders_bos_ = contains(source, "bos_token");
  } else if (contains(source, "<|start_header_id|>") && contains(source, "<|eot_id|>")) {
    if (contains(source, "Cutting Knowledge Date") || contains(source, "tools")) {
      return Unsupported("chat template '" + excerpt(source) +
                         "' is the Llama 3.1+ template (tools, dated system header), which is not supported." + hint);
    }
    t.family_ = Family::llama3;
    t.name_ = "llama3";
    t.renders_bos_ = true;
  } else if (contains(source, "[INST]") && contains(source, "<<SYS>>")) {
    t.family_ = Family::llama2;
    t.name_ = "llama2";
    t.renders_bos_ = true;
  } else if (contains(source, "<|user|>") && contains(source, "<|end|>") && contains(source, "<|assistant|>") &&
             !contains(source, "<|system|>")) {
    t.family_ = Family::phi3;
    t.name_ = "phi3";
    t.renders_bos_ = contains(source, "bos_token");
  } else {
    return Unsupported("unknown chat template '" + excerpt(source) +
                       "' (known: chatml, llama2, llama3, phi3)." + hint);
  }
  if (t.renders_bos_ && t.bos_.empty()) {
    return InvalidArgument("chat template '" + t.name_ + "' writes bos_token, but the model has no BOS token");
  }
  return t;
}

Result<ChatTemplate> ChatTemplate::for_tokenizer(const Tokenizer& tok) {
  auto t = create(tok.chat_template(), tok.bos_id() >= 0 ? tok.token_text(tok.bos_id()) : "",
                  tok.eos_id() >= 0 ? tok.token_text(tok.eos_id()) : "");
  if (!t.ok()) return Status(t.status().code(), tok.source() + ": " + t.status().message());
  return t;
}

Result<std::string> ChatTemplate::render_llama2(std::span<const ChatMessage> messages) const {
  // {% if messages[0]['role'] == 'system' %} loop_messages = messages[1:], system_message = content
  std::span<const ChatMessage> loop = messages;
  const ChatMessage* system = nullptr;
  if (!messages.empty() && messages[0].role == "system") {
    system = &messages[0];
    loop = messages.subspan(1);
  }
  std::string out;
  for (size_t i = 0; i < loop.size(); ++i) {
    const ChatMessage& m = loop[i];
    if ((m.role == "user") != (i % 2 == 0)) {
      return InvalidArgument("llama2 chat template: conversation roles must alternate "
                             "user/assistant/user/assistant/... (message " + std::to_string(i) + " is '" +
                             m.role + "')");
    }
    std::string content = m.content;
    if (i == 0 && system != nullptr) content = "<<SYS>>\n" + system->content + "\n<</SYS>>\n\n" + m.content;
    if (m.role == "user") {
      out.append(bos_).append("[INST] ").append(strip(content)).append(" [/INST]");
    } else if (m.role == "assistant") {
      out.append(" ").append(strip(content)).append(" ").append(eos_);
    }
  }
  return out;
}

Result<std::string> ChatTemplate::apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  std::string out;
  switch (family_) {
    case Family::chatml:
      if (renders_bos_) out += bos_;
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0 && messages[0].role != "system" && !default_system_.empty()) {
          out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
        }
        out += "<|im_start|>" + messages[i].role + "\n" + messages[i].content + "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      return out;
    case Family::llama3:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0) out += bos_;
        out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + strip(messages[i].content) +
               "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case Family::llama2:
      // The Llama 2 template has no generation prompt: "[/INST]" already invites the reply.
      return render_llama2(messages);
    case Family::phi3:
      // Phi-3's template opens the assistant turn after every user message
      // itself, whatever add_generation_prompt says; other roles render nothing.
      if (renders_bos_) out += bos_;
      for (const auto& m : messages) {
        if (m.role == "user") {
          out += "<|user|>\n" + m.content + "<|end|>\n<|assistant|>\n";
        } else if (m.role == "assistant") {
          out += m.content + "<|end|>\n";
        }
      }
      return out;
  }
  return Internal("unhandled chat template family");
}

}  // namespace tessera::tok

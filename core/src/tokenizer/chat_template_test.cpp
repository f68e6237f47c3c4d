// Chat templates: each known family rendered from the model's real Jinja
// source and compared with hand-written expected prompts.
#include <gtest/gtest.h>

#include "tokenizer/chat_template.hpp"

namespace tessera::tok {
namespace {

// The templates as the models ship them (tokenizer.chat_template).
const std::string kSmolLM2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const std::string kQwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful assistant<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";
const std::string kPlainChatML =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const std::string kLlama2 =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
const std::string kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
const std::string kPhi3 =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + "
    "message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}"
    "{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}";

const std::vector<ChatMessage> kUserOnly = {{"user", "Hi there"}};
const std::vector<ChatMessage> kFull = {{"system", "Be brief."}, {"user", " Hi "}, {"assistant", "Hello!"},
                                        {"user", "Bye"}};

std::string render(const std::string& source, const std::vector<ChatMessage>& m, bool gen,
                   const std::string& bos = "<s>", const std::string& eos = "</s>") {
  auto t = ChatTemplate::create(source, bos, eos);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return "<error>";
  auto out = t->apply(m, gen);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : "<error>";
}

TEST(ChatTemplate, SmolLM2InsertsItsDefaultSystemMessage) {
  auto t = ChatTemplate::create(kSmolLM2, "<|im_start|>", "<|im_end|>");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name(), "chatml");
  EXPECT_FALSE(t->renders_bos());
  EXPECT_EQ(render(kSmolLM2, kUserOnly, true),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(kSmolLM2, kFull, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n");
}

TEST(ChatTemplate, Qwen2DefaultSystemMessage) {
  EXPECT_EQ(render(kQwen2, kUserOnly, true),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, PlainChatMLHasNoDefaultSystem) {
  EXPECT_EQ(render(kPlainChatML, kUserOnly, true), "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(kPlainChatML, {}, false), "");
}

TEST(ChatTemplate, Llama2) {
  auto t = ChatTemplate::create(kLlama2, "<s>", "</s>");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name(), "llama2");
  EXPECT_TRUE(t->renders_bos());
  EXPECT_EQ(render(kLlama2, kUserOnly, true), "<s>[INST] Hi there [/INST]");
  EXPECT_EQ(render(kLlama2, kFull, true),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  const std::vector<ChatMessage> twice = {{"user", "a"}, {"user", "b"}};
  auto bad = t->apply(twice, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("alternate"), std::string::npos);
}

TEST(ChatTemplate, Llama3) {
  auto t = ChatTemplate::create(kLlama3, "<|begin_of_text|>", "<|end_of_text|>");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name(), "llama3");
  EXPECT_EQ(render(kLlama3, kFull, true, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Phi3) {
  EXPECT_EQ(render(kPhi3, kFull, true),
            "<s><|user|>\n Hi <|end|>\n<|assistant|>\nHello!<|end|>\n<|user|>\nBye<|end|>\n<|assistant|>\n");
}

TEST(ChatTemplate, UnknownTemplateIsAClearError) {
  auto t = ChatTemplate::create("{% for m in messages %}<<{{ m.content }}>>{% endfor %}\nmore", "", "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::unsupported);
  EXPECT_NE(t.status().message().find("{% for m in messages %}<<{{ m.content }}>>{% endfor %}"), std::string::npos);
  EXPECT_NE(t.status().message().find("chat = false"), std::string::npos);
  auto none = ChatTemplate::create("", "", "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no chat template"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tok

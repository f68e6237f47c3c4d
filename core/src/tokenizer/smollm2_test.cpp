// The real SmolLM2-135M-Instruct vocabulary (models/, git-ignored): round
// trips of varied Unicode text, its special tokens and its chat template.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/gguf.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/gguf_loader.hpp"
#include "tokenizer/stream_decoder.hpp"

namespace tessera::tok {
namespace {

const std::string kModel = std::string(TESSERA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";

class SmolLM2 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) GTEST_SKIP() << kModel << " is absent (place the model there to run this)";
    auto file = GgufFile::open(kModel);
    ASSERT_TRUE(file.ok()) << file.status().message();
    auto tok = tokenizer_from_gguf(**file);
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    tok_.emplace(std::move(tok).value());
  }
  std::optional<Tokenizer> tok_;
};

TEST_F(SmolLM2, Metadata) {
  EXPECT_EQ(tok_->vocab_size(), 49152);
  EXPECT_FALSE(tok_->add_bos());
  EXPECT_EQ(tok_->token_text(tok_->bos_id()), "<|im_start|>");
  EXPECT_EQ(tok_->token_text(tok_->eos_id()), "<|im_end|>");
  EXPECT_EQ(tok_->token_text(tok_->eot_id()), "<|im_end|>");
  EXPECT_TRUE(tok_->is_end_of_generation(tok_->eos_id()));
  EXPECT_TRUE(tok_->is_end_of_generation(*tok_->find_token("<|endoftext|>")));
  EXPECT_FALSE(tok_->is_end_of_generation(*tok_->find_token("<|im_start|>")));
}

TEST_F(SmolLM2, RoundTripsUnicode) {
  const std::vector<std::string> texts = {
      "Hello, world! It's 2024-11-29 and 3.14159 is pi.",
      "  leading and trailing spaces  ",
      "tabs\tand\nnewlines\r\n\n\nend",
      "Gr\xC3\xBC\xC3\x9F" "e aus K\xC3\xB6ln, na\xC3\xAFve caf\xC3\xA9",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",  // Привет мир
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C",                 // 你好，世界
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85",  // Arabic
      "emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x87\xA9\xF0\x9F\x87\xAA",
      "code: for (int i = 0; i < n; ++i) { x[i] *= 2; }  // \xE2\x86\x92 done",
      "<|im_start|> written as text",
  };
  for (const auto& t : texts) {
    const auto ids = tok_->encode(t, false, false);
    EXPECT_EQ(tok_->decode(ids), t);
    StreamDecoder d(*tok_);
    std::string streamed;
    for (auto id : ids) streamed += d.push(id);
    EXPECT_EQ(streamed + d.flush(), t);
  }
}

TEST_F(SmolLM2, ChatPromptUsesSpecialTokens) {
  auto t = ChatTemplate::for_tokenizer(*tok_);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->name(), "chatml");
  EXPECT_EQ(t->default_system(), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  const std::vector<ChatMessage> m = {{"user", "Hi"}};
  auto prompt = t->apply(m, true);
  ASSERT_TRUE(prompt.ok());
  const auto ids = tok_->encode(*prompt);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), tok_->bos_id());  // <|im_start|> from the template, not an added BOS
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok_->eos_id()), 2);
  EXPECT_EQ(tok_->decode(ids, true), *prompt);
}

}  // namespace
}  // namespace tessera::tok

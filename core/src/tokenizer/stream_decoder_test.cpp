// StreamDecoder: multi-byte characters split across tokens come out whole,
// invalid bytes become U+FFFD, and the stream equals a whole decode.
#include <gtest/gtest.h>

#include "tokenizer/stream_decoder.hpp"
#include "tokenizer/utf8.hpp"
#include "tokenizer/tiny_vocab_testing.hpp"

namespace tessera::tok {
namespace {

using Ids = std::vector<int32_t>;
constexpr int32_t kTinySpmByte0 = 3;  // tiny_spm: id of <0x00>

Tokenizer spm() {
  auto t = Tokenizer::create(testing::tiny_spm({{"\xE2\x96\x81", -1}, {"a", -1}}));
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(StreamDecoder, HoldsBytesUntilTheCharacterIsComplete) {
  const Tokenizer tok = spm();
  StreamDecoder d(tok);
  // 😀 = F0 9F 98 80 as four byte tokens.
  EXPECT_EQ(d.push(kTinySpmByte0 + 0xF0), "");
  EXPECT_EQ(d.push(kTinySpmByte0 + 0x9F), "");
  EXPECT_EQ(d.push(kTinySpmByte0 + 0x98), "");
  EXPECT_EQ(d.push(kTinySpmByte0 + 0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, RemovesOnlyTheFirstPrefixSpace) {
  const Tokenizer tok = spm();
  StreamDecoder d(tok);
  const auto ids = tok.encode("a a", true);  // <s> ▁ a ▁ a
  std::string text;
  for (auto id : ids) text += d.push(id);
  text += d.flush();
  EXPECT_EQ(text, "a a");
}

TEST(StreamDecoder, FirstPieceThatIsOnlyTheSpaceIsConsumed) {
  // " a" encodes as ▁ ▁ a: the first ▁ loses its space and leaves nothing, and
  // the second one must keep its space (found by fuzzing).
  const Tokenizer tok = spm();
  const auto ids = tok.encode(" a", false);
  ASSERT_EQ(ids.size(), 3u);
  StreamDecoder d(tok);
  std::string text;
  for (auto id : ids) text += d.push(id);
  EXPECT_EQ(text + d.flush(), " a");
  EXPECT_EQ(tok.decode(ids), " a");
}

TEST(StreamDecoder, UnfinishedCharacterBecomesReplacementAtFlush) {
  const Tokenizer tok = spm();
  StreamDecoder d(tok);
  EXPECT_EQ(d.push(kTinySpmByte0 + 'a'), "a");
  EXPECT_EQ(d.push(kTinySpmByte0 + 0xE2), "");
  EXPECT_EQ(d.push(kTinySpmByte0 + 0x82), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(StreamDecoder, CertainlyInvalidBytesDoNotBlockTheStream) {
  const Tokenizer tok = spm();
  StreamDecoder d(tok);
  EXPECT_EQ(d.push(kTinySpmByte0 + 0xC3), "");          // could start é
  EXPECT_EQ(d.push(kTinySpmByte0 + 'a'), "\xEF\xBF\xBD" "a");  // ... but 'a' follows: C3 is invalid
  EXPECT_EQ(d.push(kTinySpmByte0 + 0xFF), "\xEF\xBF\xBD");
}

TEST(StreamDecoder, ByteLevelBpeMatchesWholeDecode) {
  // Byte-level BPE: one token per byte of a mixed string.
  auto tok = Tokenizer::create(testing::tiny_bpe({}, {}));
  ASSERT_TRUE(tok.ok());
  const std::string text = "h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80!";
  const auto ids = tok->encode(text, false);
  ASSERT_EQ(ids.size(), text.size());
  StreamDecoder d(*tok);
  std::string streamed;
  for (auto id : ids) {
    const std::string part = d.push(id);
    EXPECT_EQ(utf8_scan(part).valid_bytes, part.size()) << "a push returned a partial character";
    streamed += part;
  }
  streamed += d.flush();
  EXPECT_EQ(streamed, utf8_sanitize(tok->decode(ids)));
  EXPECT_EQ(streamed, text);
}

}  // namespace
}  // namespace tessera::tok

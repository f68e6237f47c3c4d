#include "engine/stop_strings.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

// Feeds `pieces` one by one; returns everything released and whether it stopped.
std::pair<std::string, bool> feed(StopStrings& s, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    auto pushed = s.push(p);
    out += pushed.released;
    if (pushed.stopped) return {out, true};
  }
  return {out + s.flush(), false};
}

TEST(StopStrings, NoStopsReleasesEverythingAtOnce) {
  StopStrings s;
  EXPECT_EQ(s.push("abc").released, "abc");
  EXPECT_FALSE(s.push("\n\n").stopped);
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, StopInsideOnePieceReleasesTheTextBefore) {
  StopStrings s({"END"});
  auto pushed = s.push("hello END world");
  EXPECT_TRUE(pushed.stopped);
  EXPECT_EQ(pushed.released, "hello ");
  EXPECT_TRUE(s.push("more").stopped);
  EXPECT_EQ(s.push("more").released, "");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, StopSpanningPiecesIsHeldBackThenDropped) {
  StopStrings s({"\n\n"});
  auto a = s.push("one\n");
  EXPECT_EQ(a.released, "one");  // "\n" may begin the stop string
  EXPECT_FALSE(a.stopped);
  auto b = s.push("\ntwo");
  EXPECT_TRUE(b.stopped);
  EXPECT_EQ(b.released, "");
}

TEST(StopStrings, AHeldTailThatDoesNotMatchIsReleasedLater) {
  StopStrings s({"<|end|>"});
  EXPECT_EQ(s.push("a <|e").released, "a ");
  EXPECT_EQ(s.push("nd").released, "");  // "<|end" still a prefix
  EXPECT_EQ(s.push("s>").released, "<|ends>");
  auto [text, stopped] = feed(s, {"x"});
  EXPECT_EQ(text, "x");
  EXPECT_FALSE(stopped);
}

TEST(StopStrings, FlushReleasesAHeldTailWhenGenerationEndsOtherwise) {
  StopStrings s({"###"});
  EXPECT_EQ(s.push("title #").released, "title ");
  EXPECT_EQ(s.flush(), "#");
}

TEST(StopStrings, EarliestOfSeveralStopsWins) {
  StopStrings s({"world", "lo w"});
  auto pushed = s.push("hello world");
  EXPECT_TRUE(pushed.stopped);
  EXPECT_EQ(pushed.released, "hel");
}

TEST(StopStrings, EmptyStopStringsAreIgnored) {
  StopStrings s({"", ""});
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.push("text").released, "text");
}

TEST(StopStrings, ReleasedTextNeverSplitsAUtf8Character) {
  // The stop string begins with the first byte of "é" (0xc3 0xa9): text
  // ending in that byte alone could begin it and is held back whole.
  StopStrings s({"\xc3\xa8!"});
  auto a = s.push("caf\xc3\xa9");
  EXPECT_EQ(a.released, "caf\xc3\xa9");
  auto b = s.push(" \xc3\xa8");
  EXPECT_EQ(b.released, " ");
  auto c = s.push("!");
  EXPECT_TRUE(c.stopped);
}

TEST(StopStrings, EveryPieceSplitOfATextGivesTheSameResult) {
  const std::string text = "The answer is 42.\nQ: next question";
  const std::vector<std::string> stops = {"\nQ:", "zzz"};
  for (size_t cut1 = 0; cut1 <= text.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= text.size(); cut2 += 3) {
      StopStrings s(stops);
      auto [out, stopped] = feed(s, {text.substr(0, cut1), text.substr(cut1, cut2 - cut1), text.substr(cut2)});
      ASSERT_TRUE(stopped) << cut1 << "," << cut2;
      ASSERT_EQ(out, "The answer is 42.") << cut1 << "," << cut2;
    }
  }
}

}  // namespace
}  // namespace tessera

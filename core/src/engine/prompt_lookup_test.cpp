#include "engine/prompt_lookup.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

std::vector<int32_t> lookup(const std::vector<int32_t>& tokens, int32_t max_tokens, int32_t min_ngram = 2,
                            int32_t max_ngram = 4) {
  std::vector<int32_t> out;
  lookup_continuation(tokens, {min_ngram, max_ngram}, max_tokens, out);
  return out;
}

TEST(PromptLookup, ProposesWhatFollowedTheLastOccurrenceOfTheSuffix) {
  // "1 2 3 4 5 ... 1 2": after "1 2" came "3 4 5".
  EXPECT_EQ(lookup({1, 2, 3, 4, 5, 9, 1, 2}, 3), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(lookup({1, 2, 3, 4, 5, 9, 1, 2}, 10), (std::vector<int32_t>{3, 4, 5, 9, 1, 2}))
      << "up to the end of the text";
}

TEST(PromptLookup, TheLongestSuffixWinsOverAMoreRecentShorterOne) {
  // "7 1 2" occurred at the start (followed by 3); "1 2" alone more
  // recently (followed by 8).
  EXPECT_EQ(lookup({7, 1, 2, 3, 0, 1, 2, 8, 7, 1, 2}, 1), (std::vector<int32_t>{3}));
}

TEST(PromptLookup, TheMostRecentOccurrenceOfOneLengthWins) {
  EXPECT_EQ(lookup({1, 2, 3, 1, 2, 4, 1, 2}, 1), (std::vector<int32_t>{4}));
}

TEST(PromptLookup, NothingWhenNoSuffixRecursOrTheTextIsShort) {
  EXPECT_TRUE(lookup({1, 2, 3, 4, 5}, 4).empty());
  EXPECT_TRUE(lookup({5}, 4).empty());
  EXPECT_TRUE(lookup({}, 4).empty());
  EXPECT_TRUE(lookup({1, 2, 1, 2}, 0).empty()) << "no room";
  EXPECT_TRUE(lookup({3, 1, 4, 1}, 4).empty()) << "a one-token suffix is below min_ngram 2";
  EXPECT_EQ(lookup({3, 1, 4, 1}, 4, 1), (std::vector<int32_t>{4, 1})) << "and matches at min_ngram 1";
}

TEST(PromptLookup, ARepeatingPatternProposesItsNextPeriod) {
  EXPECT_EQ(lookup({5, 6, 5, 6, 5, 6}, 4), (std::vector<int32_t>{5, 6})) << "what exists after the match";
}

}  // namespace
}  // namespace tessera

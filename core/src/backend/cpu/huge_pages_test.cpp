#include "backend/cpu/huge_pages.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace tessera {
namespace {

TEST(HugePages, ParsesTheAnonHugePagesLine) {
  const char* smaps =
      "00400000-7fffffffffff ---p 00000000 00:00 0 [rollup]\n"
      "Rss:              151312 kB\n"
      "ShmemPmdMapped:        0 kB\n"
      "AnonHugePages:     96256 kB\n"
      "FilePmdMapped:         0 kB\n";
  EXPECT_EQ(parse_anon_huge_pages(smaps), 96256ull << 10);
  EXPECT_EQ(parse_anon_huge_pages("AnonHugePages:        0 kB\n"), 0u);
  EXPECT_EQ(parse_anon_huge_pages("XAnonHugePages: 5 kB\n"), 0u);  // not at a line's start
  EXPECT_EQ(parse_anon_huge_pages("AnonHugePages: lots\n"), 0u);
  EXPECT_EQ(parse_anon_huge_pages(""), 0u);
}

TEST(HugePages, ParsesTheThpMode) {
  EXPECT_EQ(parse_thp_mode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(parse_thp_mode("[always] madvise never\n"), "always");
  EXPECT_EQ(parse_thp_mode("always madvise [never]\n"), "never");
  EXPECT_EQ(parse_thp_mode("always madvise never\n"), "");
  EXPECT_EQ(parse_thp_mode("[unterminated"), "");
}

TEST(HugePages, ReadsThisMachine) {
  const std::string mode = transparent_huge_pages_mode();
  std::printf("[huge pages] THP mode '%s', this process holds %llu bytes on huge pages\n", mode.c_str(),
              static_cast<unsigned long long>(anon_huge_page_bytes()));
  EXPECT_TRUE(mode.empty() || mode == "always" || mode == "madvise" || mode == "never") << mode;
}

}  // namespace
}  // namespace tessera

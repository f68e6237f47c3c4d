#include "backend/cpu/read_bandwidth.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace tessera {
namespace {

// The figure itself depends on the machine and its load; what is fixed is
// that it is measured (positive and finite), over the buffer asked for
// (rounded to whole words), with the thread and pass counts asked for.
TEST(ReadBandwidth, MeasuresTheBufferAskedFor) {
  const ReadBandwidth r = measure_read_bandwidth(2, (8ull << 20) + 5, 2);
  EXPECT_EQ(r.buffer_bytes, 8ull << 20);
  EXPECT_EQ(r.threads, 2);
  EXPECT_EQ(r.passes, 2);
  EXPECT_GT(r.bytes_per_s, 1e8);  // 100 MB/s: far below any machine that runs this
  EXPECT_LT(r.bytes_per_s, 1e13);
  // Both kinds of pass ran, and the figure is the better of the two.
  EXPECT_GT(r.plain_bytes_per_s, 1e8);
  EXPECT_GT(r.ahead_bytes_per_s, 1e8);
  EXPECT_EQ(r.bytes_per_s, std::max(r.plain_bytes_per_s, r.ahead_bytes_per_s));
}

TEST(ReadBandwidth, DegenerateArgumentsAreClamped) {
  const ReadBandwidth r = measure_read_bandwidth(0, 7, 0);
  EXPECT_EQ(r.buffer_bytes, 0u);  // less than one word: nothing to read, no figure
  EXPECT_EQ(r.bytes_per_s, 0.0);
  EXPECT_EQ(r.plain_bytes_per_s, 0.0);
  EXPECT_EQ(r.ahead_bytes_per_s, 0.0);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.passes, 1);
}

}  // namespace
}  // namespace tessera

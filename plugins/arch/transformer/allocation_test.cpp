// Steady decoding must not touch the heap: the model's scratch buffers, batch
// plan and RoPE table are sized once and reused. Checked by counting calls to
// the global operator new (replaced for this test binary) around forward().
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "transformer_harness_testing.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's temporary buffer): the library's
// would allocate with its own new and be freed by the delete below.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
// GCC cannot see that these deletes pair with the malloc-based new above.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace tessera::transformer::testing {
namespace {

TEST(TransformerDecode, SteadyDecodeStepsDoNotAllocate) {
  Harness h(TinySpec{});
  ASSERT_TRUE(h.ok());
  const SeqId a = h.new_sequence(), b = h.new_sequence();
  h.step({{a, {1, 2, 3, 4}, false}, {b, {5, 6}, false}});  // prefill sizes every buffer

  std::vector<int32_t> tokens = {7, 8};
  std::vector<BatchSeq> seqs(2);
  std::vector<float> logits(2 * 50);
  for (int step = 0; step < 5; ++step) {
    seqs[0] = {a, 0, 1, h.cache().length(a), false};
    seqs[1] = {b, 1, 1, h.cache().length(b), false};
    ASSERT_TRUE(h.cache().append_slots(a, 1).ok());
    ASSERT_TRUE(h.cache().append_slots(b, 1).ok());
    g_allocations = 0;
    g_counting = true;
    const Status st = h.model().forward(Batch{tokens, seqs}, h.cache(), logits.data());
    g_counting = false;
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(g_allocations.load(), 0) << "decode step " << step << " allocated";
  }
}

}  // namespace
}  // namespace tessera::transformer::testing

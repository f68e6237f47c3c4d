// What the in-tree memory plugins make of a state spec: pools for attention
// layers only, one K/V shape, recurrent layers noticed, bad specs refused.
#include <gtest/gtest.h>

#include <vector>

#include "memory_layout.hpp"

namespace tessera::plugins::memory {
namespace {

LayerMemorySpec recurrent(uint64_t conv, uint64_t ssm) {
  LayerMemorySpec l;
  l.kind = LayerMemoryKind::recurrent;
  l.n_state_parts = 2;
  l.state_elements = {conv, ssm, 0, 0};
  return l;
}

TEST(MemoryLayout, PoolsForAttentionLayersOnly) {
  const std::vector<LayerMemorySpec> layers = {LayerMemorySpec::attention(2, 8), recurrent(12, 64), {},
                                               LayerMemorySpec::attention(2, 8)};
  auto m = MemoryLayout::of({100, layers}, "test");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->pool_of_layer, (std::vector<int32_t>{0, -1, -1, 1}));
  EXPECT_EQ(m->n_attention_layers, 2);
  EXPECT_TRUE(m->recurrent);
  EXPECT_EQ(m->kv_bytes_per_token(2), 2u * 2 * 2 * 8 * 2);
}

TEST(MemoryLayout, RefusesWhatItCannotKeep) {
  const std::vector<LayerMemorySpec> mixed = {LayerMemorySpec::attention(2, 8), LayerMemorySpec::attention(4, 8)};
  auto m = MemoryLayout::of({100, mixed}, "test");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::unsupported);
  EXPECT_NE(m.status().message().find("layer 1"), std::string::npos) << m.status().message();

  EXPECT_FALSE(MemoryLayout::of({100, {}}, "test").ok()) << "no layers";
  const std::vector<LayerMemorySpec> one = {LayerMemorySpec::attention(2, 8)};
  EXPECT_FALSE(MemoryLayout::of({0, one}, "test").ok()) << "no context";
  std::vector<LayerMemorySpec> bad = {recurrent(0, 0)};
  EXPECT_FALSE(MemoryLayout::of({10, bad}, "test").ok()) << "an empty state";
  bad[0].n_state_parts = kMaxStateParts + 1;
  EXPECT_FALSE(MemoryLayout::of({10, bad}, "test").ok()) << "too many parts";
  bad[0] = {};
  bad[0].kind = static_cast<LayerMemoryKind>(7);
  EXPECT_FALSE(MemoryLayout::of({10, bad}, "test").ok()) << "an unknown kind";
}

}  // namespace
}  // namespace tessera::plugins::memory

#include "engine/sequential_stages.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

using Stages = std::vector<std::vector<size_t>>;

TEST(SequentialStages, TransformerLayerInForwardOrderWhateverTheNameOrder) {
  // Name order, as the quantizer holds them.
  const std::vector<std::string> names = {"blk.7.attn_k.weight", "blk.7.attn_output.weight", "blk.7.attn_q.weight",
                                          "blk.7.attn_v.weight", "blk.7.ffn_down.weight",    "blk.7.ffn_gate.weight",
                                          "blk.7.ffn_up.weight"};
  EXPECT_EQ(sequential_stages(names), (Stages{{0, 2, 3}, {1}, {5, 6}, {4}}));
}

TEST(SequentialStages, AKindTheFormatKeptLeavesItsStageOut) {
  const std::vector<std::string> names = {"blk.0.ffn_down.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight"};
  EXPECT_EQ(sequential_stages(names), (Stages{{1}, {2}, {0}}));
}

TEST(SequentialStages, MambaLayer) {
  const std::vector<std::string> names = {"blk.2.ssm_dt.weight", "blk.2.ssm_in.weight", "blk.2.ssm_out.weight",
                                          "blk.2.ssm_x.weight"};
  EXPECT_EQ(sequential_stages(names), (Stages{{1}, {3}, {0}, {2}}));
}

TEST(SequentialStages, AnUnknownKindMakesTheLayerOneStage) {
  const std::vector<std::string> names = {"blk.1.attn_q.weight", "blk.1.attn_qkv.weight", "blk.1.ffn_down.weight"};
  EXPECT_EQ(sequential_stages(names), (Stages{{0, 1, 2}}));
  const std::vector<std::string> odd = {"blk.1.attn_q.weight", "output.weight"};
  EXPECT_EQ(sequential_stages(odd), (Stages{{0, 1}}));
  const std::vector<std::string> no_suffix = {"blk.1.attn_q", "blk.1.attn_k.weight"};
  EXPECT_EQ(sequential_stages(no_suffix), (Stages{{0, 1}}));
}

TEST(SequentialStages, NoWeightsNoStages) { EXPECT_TRUE(sequential_stages({}).empty()); }

using Indices = std::vector<size_t>;

TEST(OutputOnlyWeights, TheLayersLastStage) {
  const std::vector<std::string> transformer = {"blk.7.attn_k.weight", "blk.7.ffn_down.weight", "blk.7.ffn_up.weight"};
  EXPECT_EQ(output_only_weights(transformer), (Indices{1}));
  // The down projection kept by the format: gate/up are the last observed.
  const std::vector<std::string> without_down = {"blk.0.ffn_gate.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight"};
  EXPECT_EQ(output_only_weights(without_down), (Indices{0, 2}));
  const std::vector<std::string> mamba = {"blk.2.ssm_out.weight", "blk.2.ssm_in.weight"};
  EXPECT_EQ(output_only_weights(mamba), (Indices{0}));
}

TEST(OutputOnlyWeights, NoneWhereTheOrderIsNotKnown) {
  EXPECT_TRUE(output_only_weights(std::vector<std::string>{"blk.0.ffn_down.weight", "blk.0.mystery.weight"}).empty());
  // A hybrid layer: whether its FFN reads the SSM's output is its architecture's.
  EXPECT_TRUE(output_only_weights(std::vector<std::string>{"blk.0.ffn_down.weight", "blk.0.ssm_out.weight"}).empty());
  EXPECT_TRUE(output_only_weights({}).empty());
}

}  // namespace
}  // namespace tessera

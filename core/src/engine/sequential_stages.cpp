#include "engine/sequential_stages.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace tessera {
namespace {

// Each known kind and its stage, in forward order.
constexpr std::array<std::pair<std::string_view, int>, 11> kStageOfKind = {{
    {"attn_q", 0},
    {"attn_k", 0},
    {"attn_v", 0},
    {"attn_output", 1},
    {"ffn_gate", 2},
    {"ffn_up", 2},
    {"ffn_down", 3},
    {"ssm_in", 4},
    {"ssm_x", 5},
    {"ssm_dt", 6},
    {"ssm_out", 7},
}};
constexpr int kStages = 8;
constexpr int kFirstMambaStage = 4;  // stages 0-3 are a Transformer layer's, 4-7 a Mamba layer's

// "blk.3.attn_q.weight" -> "attn_q"; nullopt for any other form.
std::optional<std::string_view> kind_of(std::string_view name) {
  if (!name.starts_with("blk.") || !name.ends_with(".weight")) return std::nullopt;
  const auto dot = name.find('.', 4);
  if (dot == std::string_view::npos || dot + 1 > name.size() - 7) return std::nullopt;
  return name.substr(dot + 1, name.size() - 7 - dot - 1);
}

std::optional<int> stage_of(std::string_view name) {
  const auto kind = kind_of(name);
  if (!kind) return std::nullopt;
  for (const auto& [known, stage] : kStageOfKind)
    if (known == *kind) return stage;
  return std::nullopt;
}

}  // namespace

std::vector<std::vector<size_t>> sequential_stages(std::span<const std::string> names) {
  std::vector<std::vector<size_t>> by_stage(kStages);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto stage = stage_of(names[i]);
    if (!stage) {  // unknown: one stage, in the order given
      std::vector<size_t> all(names.size());
      for (size_t j = 0; j < all.size(); ++j) all[j] = j;
      return {std::move(all)};
    }
    by_stage[static_cast<size_t>(*stage)].push_back(i);
  }
  std::vector<std::vector<size_t>> stages;
  for (auto& stage : by_stage)
    if (!stage.empty()) stages.push_back(std::move(stage));
  return stages;
}

std::vector<size_t> output_only_weights(std::span<const std::string> names) {
  int last = -1;
  bool transformer = false, mamba = false;
  for (const std::string& name : names) {
    const auto stage = stage_of(name);
    if (!stage) return {};
    (*stage < kFirstMambaStage ? transformer : mamba) = true;
    last = std::max(last, *stage);
  }
  if (transformer && mamba) return {};
  std::vector<size_t> members;
  for (size_t i = 0; i < names.size(); ++i)
    if (stage_of(names[i]) == last) members.push_back(i);
  return members;
}

}  // namespace tessera

#include "engine/awq_scales.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tessera {
namespace {

// The shape of `name`, or nothing.
const std::vector<int64_t>* shape_of(const std::map<std::string, std::vector<int64_t>>& shapes,
                                     const std::string& name) {
  const auto it = shapes.find(name);
  return it == shapes.end() ? nullptr : &it->second;
}

bool is_matrix(const std::vector<int64_t>* s) { return s != nullptr && s->size() == 2; }

}  // namespace

std::vector<ScaleGroup> awq_scale_groups(int layer, const std::map<std::string, std::vector<int64_t>>& shapes) {
  const auto name = [&](std::string_view suffix) { return fmt::format("blk.{}.{}.weight", layer, suffix); };
  std::vector<ScaleGroup> groups;

  // A norm of n channels before Linears that each read n inputs.
  const auto after_norm = [&](std::string_view norm, std::initializer_list<std::string_view> linears) {
    const auto* norm_shape = shape_of(shapes, name(norm));
    if (norm_shape == nullptr || norm_shape->size() != 1) return;
    ScaleGroup g{ScaleGroup::Fold::norm, name(norm), {}};
    for (const auto linear : linears) {
      const auto* s = shape_of(shapes, name(linear));
      if (!is_matrix(s) || (*s)[1] != (*norm_shape)[0]) return;
      g.members.push_back(name(linear));
    }
    groups.push_back(std::move(g));
  };
  // A Linear whose outputs are the next one's inputs, channel for channel.
  const auto after_linear = [&](std::string_view before, std::string_view linear) {
    const auto* a = shape_of(shapes, name(before));
    const auto* b = shape_of(shapes, name(linear));
    if (!is_matrix(a) || !is_matrix(b) || (*a)[0] != (*b)[1]) return;
    groups.push_back({ScaleGroup::Fold::rows, name(before), {name(linear)}});
  };

  after_norm("attn_norm", {"attn_q", "attn_k", "attn_v"});
  after_linear("attn_v", "attn_output");
  after_norm("ffn_norm", {"ffn_gate", "ffn_up"});
  after_linear("ffn_up", "ffn_down");
  return groups;
}

Result<ScaleSearch> search_input_scales(std::span<const ScaleMember> members, std::span<const float> mean_abs_input,
                                        int grid) {
  if (members.empty() || mean_abs_input.empty() || grid < 1)
    return InvalidArgument("AWQ scale search: no members, inputs or grid");
  const size_t n = mean_abs_input.size();
  ScaleSearch best;
  std::vector<float> s(n);
  for (int step = 0; step < grid; ++step) {
    const double exponent = static_cast<double>(step) / grid;
    for (size_t j = 0; j < n; ++j)
      s[j] = std::max(static_cast<float>(std::pow(static_cast<double>(mean_abs_input[j]), exponent)), 1e-4f);
    const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
    const float norm = std::sqrt(*lo * *hi);
    for (float& v : s) v /= norm;

    double loss = 0;
    for (const ScaleMember& m : members) {
      auto error = m.quantizer->rounding_output_error(m.weight, s.data());
      if (!error.ok()) return error.status();
      loss += *error;
    }
    if (step == 0) best.unscaled_loss = loss;
    if (step == 0 || loss < best.loss) {
      best.loss = loss;
      best.exponent = exponent;
      best.scales = s;
    }
  }
  return best;
}

Result<std::vector<float>> smoothquant_scales(std::span<const ScaleMember> members,
                                              std::span<const float> max_abs_input, double alpha) {
  if (!(alpha > 0 && alpha < 1)) return InvalidArgument(fmt::format("SmoothQuant's alpha {} is outside (0, 1)", alpha));
  if (members.empty()) return InvalidArgument("SmoothQuant needs at least one weight");
  const auto cols = static_cast<int64_t>(max_abs_input.size());
  std::vector<float> max_weight(static_cast<size_t>(cols), 0.0f);
  for (const ScaleMember& m : members) {
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t j = 0; j < cols; ++j)
        max_weight[static_cast<size_t>(j)] = std::max(max_weight[static_cast<size_t>(j)], std::fabs(m.weight[r * cols + j]));
  }
  std::vector<float> s(static_cast<size_t>(cols), 1.0f);
  for (int64_t j = 0; j < cols; ++j) {
    const double x = max_abs_input[static_cast<size_t>(j)], w = max_weight[static_cast<size_t>(j)];
    if (!(x > 0) || !(w > 0) || !std::isfinite(x)) continue;
    const double v = std::pow(x, alpha) / std::pow(w, 1 - alpha);
    s[static_cast<size_t>(j)] = static_cast<float>(std::clamp(v, 1e-5, 1e5));
  }
  return s;
}

Result<SmoothingSearch> search_smoothing(std::span<const ScaleMember> members, std::span<const float> max_abs_input,
                                         int grid, const ScaledOutputError& output_error) {
  if (members.empty() || max_abs_input.empty() || grid < 1)
    return InvalidArgument("SmoothQuant's alpha search: no members, inputs or grid");
  SmoothingSearch best;
  for (int step = 0; step < grid; ++step) {
    const double alpha = static_cast<double>(step) / grid;
    std::vector<float> s(max_abs_input.size(), 1.0f);
    if (step > 0) {
      auto made = smoothquant_scales(members, max_abs_input, alpha);
      if (!made.ok()) return made.status();
      s = std::move(made).value();
    }
    auto error = output_error(s);
    if (!error.ok()) return error.status();
    if (step == 0) best.unsmoothed_error = *error;
    if (step == 0 || *error < best.error) {
      best.error = *error;
      best.alpha = alpha;
      best.scales = std::move(s);
    }
  }
  return best;
}

}  // namespace tessera

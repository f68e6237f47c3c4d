#include "reference_forward_testing.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace tessera::transformer::testing {

namespace {

// out[o] = sum_i w[o, i] * x[i] (+ b[o])
std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x, int64_t out,
                          const std::vector<float>* b = nullptr) {
  const int64_t in = static_cast<int64_t>(x.size());
  std::vector<float> y(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    float acc = b ? (*b)[o] : 0.0f;
    for (int64_t i = 0; i < in; ++i) acc += w[o * in + i] * x[i];
    y[o] = acc;
  }
  return y;
}

std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& weight, double eps) {
  float ss = 0.0f;
  for (float v : x) ss += v * v;
  ss = 1.0f / std::sqrt(ss / static_cast<float>(x.size()) + static_cast<float>(eps));
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = weight[i] * (ss * x[i]);
  return y;
}

}  // namespace

ReferenceTransformer::ReferenceTransformer(const FakeWeightStore& weights) : w_(weights), spec_(weights.spec()) {
  head_dim_ = spec_.head_dim != 0 ? spec_.head_dim : spec_.n_embd / spec_.n_head;
  key_cache_.resize(static_cast<size_t>(spec_.n_layer));
  value_cache_.resize(static_cast<size_t>(spec_.n_layer));
}

void ReferenceTransformer::rope(std::vector<float>& vec, int64_t n_heads) const {
  const int64_t half = head_dim_ / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = vec.data() + h * head_dim_;
    for (int64_t j = 0; j < half; ++j) {
      double freq = 1.0 / std::pow(spec_.rope_freq_base, static_cast<double>(2 * j) / head_dim_);
      double position = static_cast<double>(pos_);
      if (spec_.rope_scaling == RopeScaling::linear) position /= spec_.rope_factor;
      if (spec_.rope_scaling == RopeScaling::llama3) {
        // Written as a clamped blend: smooth = 1 keeps the frequency, 0 divides it by the factor.
        const double wavelength = 2.0 * std::numbers::pi / freq;
        const double ratio = static_cast<double>(spec_.rope_original_context) / wavelength;
        const double smooth = std::clamp((ratio - spec_.rope_low_freq_factor) /
                                             (spec_.rope_high_freq_factor - spec_.rope_low_freq_factor),
                                         0.0, 1.0);
        freq = smooth * freq + (1.0 - smooth) * freq / spec_.rope_factor;
      }
      const double angle = position * freq;
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      // adjacent: (2j, 2j+1); neox: (j, j + head_dim/2)
      const int64_t a = spec_.rope_style() == RopeStyle::adjacent ? 2 * j : j;
      const int64_t b = spec_.rope_style() == RopeStyle::adjacent ? 2 * j + 1 : j + half;
      const float v0 = v[a], v1 = v[b];
      v[a] = v0 * c - v1 * s;
      v[b] = v0 * s + v1 * c;
    }
  }
}

std::vector<float> ReferenceTransformer::step(int32_t token) {
  const int64_t dim = spec_.n_embd;
  const int64_t n_head = spec_.n_head, n_kv = spec_.n_kv_head;
  const int64_t kv_dim = n_kv * head_dim_, q_dim = n_head * head_dim_;
  const int64_t kv_mul = n_head / n_kv;

  const auto& embd = w_.values("token_embd.weight");
  std::vector<float> x(embd.begin() + token * dim, embd.begin() + (token + 1) * dim);  // [dim]

  for (int64_t l = 0; l < spec_.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const auto bias = [&](const char* n) { return w_.has(p + n) ? &w_.values(p + n) : nullptr; };
    std::vector<float> xb = rmsnorm(x, w_.values(p + "attn_norm.weight"), 1e-5);
    std::vector<float> q = matvec(w_.values(p + "attn_q.weight"), xb, q_dim, bias("attn_q.bias"));
    std::vector<float> k = matvec(w_.values(p + "attn_k.weight"), xb, kv_dim, bias("attn_k.bias"));
    std::vector<float> v = matvec(w_.values(p + "attn_v.weight"), xb, kv_dim, bias("attn_v.bias"));
    rope(q, n_head);
    rope(k, n_kv);
    auto& kc = key_cache_[l];
    auto& vc = value_cache_[l];
    kc.insert(kc.end(), k.begin(), k.end());
    vc.insert(vc.end(), v.begin(), v.end());

    std::vector<float> att_out(static_cast<size_t>(q_dim), 0.0f);
    for (int64_t h = 0; h < n_head; ++h) {
      const float* qh = q.data() + h * head_dim_;
      std::vector<float> att(static_cast<size_t>(pos_ + 1));
      for (int64_t t = 0; t <= pos_; ++t) {
        const float* kt = kc.data() + t * kv_dim + (h / kv_mul) * head_dim_;
        float score = 0.0f;
        for (int64_t i = 0; i < head_dim_; ++i) score += qh[i] * kt[i];
        att[t] = score / std::sqrt(static_cast<float>(head_dim_));
      }
      const float max_val = *std::max_element(att.begin(), att.end());
      float sum = 0.0f;
      for (float& a : att) sum += (a = std::exp(a - max_val));
      for (float& a : att) a /= sum;
      for (int64_t t = 0; t <= pos_; ++t) {
        const float* vt = vc.data() + t * kv_dim + (h / kv_mul) * head_dim_;
        for (int64_t i = 0; i < head_dim_; ++i) att_out[h * head_dim_ + i] += att[t] * vt[i];
      }
    }
    std::vector<float> o = matvec(w_.values(p + "attn_output.weight"), att_out, dim,
                                  bias("attn_output.bias"));
    for (int64_t i = 0; i < dim; ++i) x[i] += o[i];

    xb = rmsnorm(x, w_.values(p + "ffn_norm.weight"), 1e-5);
    std::vector<float> hb = matvec(w_.values(p + "ffn_gate.weight"), xb, spec_.n_ff);
    std::vector<float> hb2 = matvec(w_.values(p + "ffn_up.weight"), xb, spec_.n_ff);
    for (size_t i = 0; i < hb.size(); ++i) hb[i] = hb[i] * (1.0f / (1.0f + std::exp(-hb[i]))) * hb2[i];
    std::vector<float> down = matvec(w_.values(p + "ffn_down.weight"), hb, dim);
    for (int64_t i = 0; i < dim; ++i) x[i] += down[i];
  }
  ++pos_;
  x = rmsnorm(x, w_.values("output_norm.weight"), 1e-5);
  const auto& out_w = w_.has("output.weight") ? w_.values("output.weight") : embd;
  return matvec(out_w, x, spec_.vocab);
}

std::vector<std::vector<float>> ReferenceTransformer::run(const std::vector<int32_t>& tokens) {
  std::vector<std::vector<float>> out;
  for (int32_t t : tokens) out.push_back(step(t));
  return out;
}

}  // namespace tessera::transformer::testing

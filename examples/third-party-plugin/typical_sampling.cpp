// Locally typical sampling (Meister et al., "Locally Typical Sampling", 2022),
// as a Tessera decoding plugin built outside the Tessera tree.
//
// Keeps the tokens whose surprisal -log p is closest to the distribution's
// entropy, adding them in that order until their probability reaches
// `typical_p`, then samples among them. Temperature and the seed come from the
// request's shared sampling settings.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <tessera/decoding.hpp>
#include <tessera/plugin.hpp>

namespace {

constexpr tessera::ParamSpec kParams[] = {
    tessera::param_real("typical_p", "0.95", 0.0, 1.0, "probability mass of the most typical tokens kept"),
};

class TypicalSampling final : public tessera::DecodingStrategy {
 public:
  explicit TypicalSampling(const tessera::ParamValues& params) : typical_p_(params.get_real("typical_p")) {}

  tessera::Status step(tessera::DecodingContext& ctx, std::vector<int32_t>& out) noexcept override {
    return tessera::guard([&] {
      std::span<float> logits = ctx.logits();
      if (logits.empty()) return tessera::InvalidArgument("typical: no logits");
      const double temperature = ctx.sampling().temperature;
      if (temperature <= 0.0) {  // greedy, lowest id on ties
        out.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
        return tessera::Status::Ok();
      }
      // Softmax in double: p[i] [vocab].
      const float max_logit = *std::max_element(logits.begin(), logits.end());
      std::vector<double> p(logits.size());
      double sum = 0;
      for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp((logits[i] - max_logit) / temperature);
      double entropy = 0;
      for (double& v : p) {
        v /= sum;
        if (v > 0) entropy -= v * std::log(v);
      }
      // Order by |surprisal - entropy|, most typical first.
      std::vector<int32_t> order(p.size());
      std::iota(order.begin(), order.end(), 0);
      auto distance = [&](int32_t i) { return p[i] > 0 ? std::abs(-std::log(p[i]) - entropy) : INFINITY; };
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const double da = distance(a), db = distance(b);
        return da != db ? da < db : a < b;
      });
      double kept = 0;
      size_t n = 0;
      while (n < order.size() && (n == 0 || kept < typical_p_)) kept += p[order[n++]];
      // Sample among the kept tokens in proportion to p.
      std::uniform_real_distribution<double> uniform(0.0, kept);
      double r = uniform(ctx.rng());
      for (size_t i = 0; i < n; ++i) {
        r -= p[order[i]];
        if (r <= 0 || i + 1 == n) {
          out.push_back(order[i]);
          break;
        }
      }
      return tessera::Status::Ok();
    });
  }

 private:
  double typical_p_;
};

const tessera::PluginInfo kPlugins[] = {{tessera::PluginFamily::decoding, "typical", "1.0.0",
                                         "locally typical sampling (third-party example)", kParams,
                                         std::size(kParams), &tessera::make_plugin<TypicalSampling>}};

const tessera::PluginLibrary* typical_entry() {
  static const tessera::PluginLibrary library = tessera::plugin_library(kPlugins);
  return &library;
}

}  // namespace

TESSERA_PLUGIN_ENTRY(typical_entry)

#include "tessera/blocks/weight_loading.hpp"

namespace tessera::blocks {

namespace {

Status check_and_keep(ModelBuilder& b, Result<std::unique_ptr<Linear>> made, const std::string& weight,
                      int64_t out_features, int64_t in_features, std::unique_ptr<Linear>& out, uint64_t& weight_bytes) {
  if (!made.ok()) return made.status();
  if (made.value() == nullptr) return Internal("the model builder returned no Linear for " + weight);
  std::unique_ptr<Linear> lin = std::move(made).value();
  if (lin->out_features() != out_features || lin->in_features() != in_features)
    return Internal(b.weights().source() + ": the Linear made for " + weight + " is [" +
                    std::to_string(lin->out_features()) + ", " + std::to_string(lin->in_features()) +
                    "], expected [" + std::to_string(out_features) + ", " + std::to_string(in_features) + "]");
  weight_bytes += lin->weight_bytes();
  out = std::move(lin);
  return Status::Ok();
}

}  // namespace

Status make_linear(ModelBuilder& b, const std::string& weight, const std::string& bias, int64_t out_features,
                   int64_t in_features, std::unique_ptr<Linear>& out, uint64_t& weight_bytes) {
  return check_and_keep(b, b.linear(weight, bias), weight, out_features, in_features, out, weight_bytes);
}

Status make_output_linear(ModelBuilder& b, const std::string& weight, int64_t vocab, int64_t in_features,
                          std::unique_ptr<Linear>& out, uint64_t& weight_bytes) {
  auto made = provides(b, 9) ? b.output_linear(weight) : b.linear(weight);
  return check_and_keep(b, std::move(made), weight, vocab, in_features, out, weight_bytes);
}

Status load_vector(ModelBuilder& b, const std::string& name, int64_t n, std::vector<float>& out) {
  const TensorRef* t = b.weights().find(name);
  if (t == nullptr) return NotFound(b.weights().source() + ": tensor " + name + " is missing");
  if (t->numel() != n)
    return InvalidArgument(b.weights().source() + ": tensor " + name + " has " + std::to_string(t->numel()) +
                           " elements, expected " + std::to_string(n));
  out.assign(static_cast<size_t>(n), 0.0f);
  return b.dequantize(*t, out.data());
}

}  // namespace tessera::blocks

#include "tessera/blocks/tensor_checks.hpp"

namespace tessera::blocks {

namespace {

std::string dims_string(std::initializer_list<int64_t> shape) {
  std::string s = "[";
  bool first = true;
  for (int64_t d : shape) {
    if (!first) s += ", ";
    s += std::to_string(d);
    first = false;
  }
  return s + "]";
}

Status check_shape(const WeightStore& weights, const TensorRef& t, std::initializer_list<int64_t> shape) {
  bool same = t.ndim == static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t d : shape) {
    if (!same) break;
    same = t.shape[i++] == d;
  }
  if (same) return Status::Ok();
  return InvalidArgument(weights.source() + ": tensor " + t.name + " has shape " + shape_string(t) +
                         " but the hyper-parameters imply " + dims_string(shape));
}

}  // namespace

std::string shape_string(const TensorRef& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

Status expect_tensor(const WeightStore& weights, const std::string& name, std::initializer_list<int64_t> shape) {
  const TensorRef* t = weights.find(name);
  if (t == nullptr)
    return NotFound(weights.source() + ": tensor " + name + " is missing (expected shape " + dims_string(shape) + ")");
  return check_shape(weights, *t, shape);
}

Status expect_optional_tensor(const WeightStore& weights, const std::string& name,
                              std::initializer_list<int64_t> shape) {
  const TensorRef* t = weights.find(name);
  return t == nullptr ? Status::Ok() : check_shape(weights, *t, shape);
}

Status expect_tensor_elements(const WeightStore& weights, const std::string& name, int64_t n) {
  const TensorRef* t = weights.find(name);
  if (t == nullptr)
    return NotFound(weights.source() + ": tensor " + name + " is missing (expected " + std::to_string(n) + " values)");
  if (t->numel() != n)
    return InvalidArgument(weights.source() + ": tensor " + name + " has shape " + shape_string(*t) + " (" +
                           std::to_string(t->numel()) + " values) but the hyper-parameters imply " +
                           std::to_string(n) + " values");
  return Status::Ok();
}

}  // namespace tessera::blocks

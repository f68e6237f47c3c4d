#include "engine/vocabulary_subset_linear.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace tessera {
namespace {

// y = W x over an f32 TensorRef's rows: what any quant plugin's Linear computes.
class F32Linear final : public Linear {
 public:
  explicit F32Linear(const TensorRef& w) : w_(w) {}
  int64_t in_features() const noexcept override { return w_.cols(); }
  int64_t out_features() const noexcept override { return w_.rows(); }
  uint64_t weight_bytes() const noexcept override { return w_.nbytes; }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override {
    const auto* w = static_cast<const float*>(w_.data);
    for (int64_t r = 0; r < n_rows; ++r)
      for (int64_t o = 0; o < w_.rows(); ++o) {
        float sum = 0;
        for (int64_t i = 0; i < w_.cols(); ++i) sum += w[o * w_.cols() + i] * x[r * w_.cols() + i];
        y[r * w_.rows() + o] = sum;
      }
    return Status::Ok();
  }

 private:
  TensorRef w_;
};

TensorRef f32_matrix(const std::vector<float>& values, int64_t rows, int64_t cols) {
  TensorRef t;
  t.name = "output.weight";
  t.format = "f32";
  t.ndim = 2;
  t.shape = {rows, cols};
  t.data = values.data();
  t.nbytes = values.size() * sizeof(float);
  return t;
}

// [5 vocabulary rows, 3]: row v holds v, v + 0.5, -v.
std::vector<float> head_values() {
  std::vector<float> w;
  for (int v = 0; v < 5; ++v) w.insert(w.end(), {float(v), v + 0.5f, -float(v)});
  return w;
}

TEST(GatherRows, CopiesTheChosenRowsInOrderIntoAlignedStorage) {
  const std::vector<float> w = head_values();
  AlignedBytes storage;
  auto kept = gather_rows(f32_matrix(w, 5, 3), {1, 3}, storage);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->rows(), 2);
  EXPECT_EQ(kept->cols(), 3);
  EXPECT_EQ(kept->nbytes, 2 * 3 * sizeof(float));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kept->data) % 64, 0u);
  const auto* rows = static_cast<const float*>(kept->data);
  EXPECT_EQ(std::vector<float>(rows, rows + 6), (std::vector<float>{1, 1.5f, -1, 3, 3.5f, -3}));
}

TEST(GatherRows, RefusesAnIdPastTheRowsAndBytesThatAreNotWholeRows) {
  const std::vector<float> w = head_values();
  AlignedBytes storage;
  auto past = gather_rows(f32_matrix(w, 5, 3), {1, 5}, storage);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("row 5"), std::string::npos) << past.status().message();
  TensorRef ragged = f32_matrix(w, 5, 3);
  ragged.nbytes -= 4;
  EXPECT_FALSE(gather_rows(ragged, {0}, storage).ok());
}

TEST(VocabularySubsetLinear, WritesTheKeptIdsLogitsAtTheirIdsAndMinusInfinityElsewhere) {
  const std::vector<float> w = head_values();
  const TensorRef full = f32_matrix(w, 5, 3);
  AlignedBytes storage;
  const std::vector<int32_t> ids = {0, 2, 3};
  auto kept = gather_rows(full, ids, storage);
  ASSERT_TRUE(kept.ok());
  VocabularySubsetLinear head(std::make_unique<F32Linear>(*kept), ids, 5, std::move(storage));
  EXPECT_EQ(head.out_features(), 5);
  EXPECT_EQ(head.in_features(), 3);
  EXPECT_EQ(head.weight_bytes(), 3 * 3 * sizeof(float));

  const std::vector<float> x = {1, 2, 3, -1, 0, 1};  // [2 rows, 3]
  std::vector<float> y(10, 7.0f), expected(10);
  ASSERT_TRUE(F32Linear(full).forward(x.data(), expected.data(), 2).ok());
  ASSERT_TRUE(head.forward(x.data(), y.data(), 2).ok());
  for (int r = 0; r < 2; ++r)
    for (int v = 0; v < 5; ++v) {
      const float got = y[r * 5 + v];
      if (v == 1 || v == 4)
        EXPECT_EQ(got, -std::numeric_limits<float>::infinity()) << "row " << r << " id " << v;
      else
        EXPECT_EQ(got, expected[r * 5 + v]) << "row " << r << " id " << v;
    }
}

// Rows of an f32 [rows, cols] matrix, as a quant plugin's decoder gives them.
class F32RowDecoder final : public RowDecoder {
 public:
  F32RowDecoder(const std::vector<float>& w, int64_t cols, int* calls) : w_(w), cols_(cols), calls_(calls) {}
  Status decode(int64_t first_row, int64_t n_rows, float* out) const noexcept override {
    ++*calls_;
    if (first_row < 0 || (first_row + n_rows) * cols_ > static_cast<int64_t>(w_.size()))
      return InvalidArgument("row out of range");
    std::copy_n(w_.begin() + first_row * cols_, n_rows * cols_, out);
    return Status::Ok();
  }

 private:
  const std::vector<float>& w_;
  int64_t cols_;
  int* calls_;
};

TEST(VocabularySubsetLinear, ComputesTheRequestsOwnIdsBesidesTheKeptOnes) {
  const std::vector<float> w = head_values();
  const TensorRef full = f32_matrix(w, 5, 3);
  AlignedBytes storage;
  const std::vector<int32_t> ids = {0, 3};
  auto kept = gather_rows(full, ids, storage);
  ASSERT_TRUE(kept.ok());
  int decodes = 0;
  auto request = std::make_shared<RequestVocabulary>(std::make_unique<F32RowDecoder>(w, 3, &decodes), 3,
                                                     std::vector<bool>{true, false, false, true, false});
  VocabularySubsetLinear head(std::make_unique<F32Linear>(*kept), ids, 5, std::move(storage), request);

  const std::vector<float> x = {1, 2, 3, -2, 0.5f, 4};  // [2 rows, 3]
  std::vector<float> y(10), expected(10);
  ASSERT_TRUE(F32Linear(full).forward(x.data(), expected.data(), 2).ok());
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const auto row = [&](const std::vector<float>& v, int r) { return std::vector<float>(v.begin() + r * 5, v.begin() + r * 5 + 5); };

  ASSERT_TRUE(request->use(std::vector<int32_t>{4, 3, 4, 0}).ok());  // 4 is the request's own
  ASSERT_TRUE(head.forward(x.data(), y.data(), 2).ok());
  for (int r = 0; r < 2; ++r) {
    const auto e = row(expected, r);
    EXPECT_EQ(row(y, r), (std::vector<float>{e[0], minus_inf, minus_inf, e[3], e[4]})) << "row " << r;
  }
  EXPECT_EQ(decodes, 1) << "one row decoded, once";

  ASSERT_TRUE(request->use(std::vector<int32_t>{2, 4}).ok());  // the next request's
  ASSERT_TRUE(head.forward(x.data(), y.data(), 1).ok());
  EXPECT_EQ(row(y, 0), (std::vector<float>{expected[0], minus_inf, expected[2], expected[3], expected[4]}));
  EXPECT_EQ(decodes, 2) << "row 4 was kept decoded";

  ASSERT_TRUE(request->use(std::vector<int32_t>{7, -1}).ok());
  ASSERT_TRUE(head.forward(x.data(), y.data(), 1).ok());
  EXPECT_EQ(row(y, 0), (std::vector<float>{expected[0], minus_inf, minus_inf, expected[3], minus_inf}));
}

// A head of 5,000 rows of one column (row v holds v), none kept.
struct WideRequestVocabulary {
  static constexpr int kRows = 5000;
  std::vector<float> w;
  int decodes = 0;
  std::unique_ptr<RequestVocabulary> request;
  WideRequestVocabulary() {
    for (int v = 0; v < kRows; ++v) w.push_back(static_cast<float>(v));
    request = std::make_unique<RequestVocabulary>(std::make_unique<F32RowDecoder>(w, 1, &decodes), 1,
                                                  std::vector<bool>(kRows, false));
  }
  static std::vector<int32_t> ids(int32_t first, int32_t count) {
    std::vector<int32_t> v(static_cast<size_t>(count));
    std::iota(v.begin(), v.end(), first);
    return v;
  }
};

TEST(RequestVocabulary, ComputesTheMostRecentIdsUpToItsLimit) {
  WideRequestVocabulary wide;
  constexpr auto kLimit = static_cast<int32_t>(RequestVocabulary::kMaxRequestIds);
  ASSERT_TRUE(wide.request->use(WideRequestVocabulary::ids(0, kLimit + 88)).ok());
  std::vector<float> y(WideRequestVocabulary::kRows, -1.0f);
  const float x = 1.0f;
  wide.request->write_logits(&x, y.data());
  for (int32_t v = 0; v < kLimit + 88; ++v) EXPECT_EQ(y[static_cast<size_t>(v)], v < 88 ? -1.0f : v) << v;
  EXPECT_EQ(wide.decodes, kLimit);
}

TEST(RequestVocabulary, KeepsDecodedRowsAcrossRequestsUntilItsCacheIsFull) {
  WideRequestVocabulary wide;
  constexpr auto kLimit = static_cast<int32_t>(RequestVocabulary::kMaxRequestIds);
  constexpr auto kBatches = static_cast<int32_t>(RequestVocabulary::kMaxCachedRows / RequestVocabulary::kMaxRequestIds);
  for (int32_t b = 0; b < kBatches; ++b) {
    ASSERT_TRUE(wide.request->use(WideRequestVocabulary::ids(b * kLimit, kLimit)).ok());
    ASSERT_TRUE(wide.request->use(WideRequestVocabulary::ids(b * kLimit, kLimit)).ok());  // the same request again
  }
  EXPECT_EQ(wide.decodes, kBatches * kLimit) << "each row decoded once while the cache has room";
  ASSERT_TRUE(wide.request->use(WideRequestVocabulary::ids(0, kLimit)).ok());
  EXPECT_EQ(wide.decodes, kBatches * kLimit) << "an earlier request's rows are still there";
  ASSERT_TRUE(wide.request->use(WideRequestVocabulary::ids(kBatches * kLimit, 10)).ok());
  EXPECT_EQ(wide.decodes, kBatches * kLimit + 10) << "a full cache starts again";
  ASSERT_TRUE(wide.request->use(WideRequestVocabulary::ids(kBatches * kLimit, 10)).ok());
  EXPECT_EQ(wide.decodes, kBatches * kLimit + 10);
}

}  // namespace
}  // namespace tessera

// The built plugin library, loaded the way the core loads it: one entry,
// ABI version, formats, make_linear and dequantize_rows with their errors.
#include <gtest/gtest.h>

#include <boost/dll/shared_library.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "reference.hpp"
#include "tessera/plugin.hpp"
#include "tessera/quantizer.hpp"
#include "ggml_testing.hpp"

namespace tessera::ggml {
namespace {

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path path = std::filesystem::path(TESSERA_PLUGIN_BUILD_DIR) / "libtessera_quant_ggml.so";
    ASSERT_TRUE(std::filesystem::exists(path)) << "plugin not built at " << path;
    lib_ = std::make_unique<boost::dll::shared_library>(path.string());
    ASSERT_TRUE(lib_->has("tessera_plugin_entry"));
    auto entry = lib_->get_alias<PluginEntryFn>("tessera_plugin_entry");
    const PluginLibrary* library = entry();
    ASSERT_EQ(library->abi_major, kAbiMajor);
    ASSERT_EQ(library->plugin_count, 1u);
    info_ = &library->plugins[0];
    std::string error;
    PluginObject* obj = info_->create(ParamValues{}, &error);
    ASSERT_NE(obj, nullptr) << error;
    quantizer_.reset(static_cast<Quantizer*>(obj));
  }
  void TearDown() override { quantizer_.reset(); }  // objects die before the library is released

  // The plugin made with activations = "f32" (every format through
  // FloatLinear, the exact product); null, with the plugin's error reported, if it refuses.
  std::unique_ptr<Quantizer> make_exact_quantizer() {
    ParamValues params;
    params.set("activations", std::string("f32"));
    std::string error;
    std::unique_ptr<Quantizer> exact(static_cast<Quantizer*>(info_->create(params, &error)));
    EXPECT_NE(exact, nullptr) << error;
    return exact;
  }

  std::unique_ptr<boost::dll::shared_library> lib_;
  const PluginInfo* info_ = nullptr;
  std::unique_ptr<Quantizer> quantizer_;
};

TensorRef make_ref(const char* name, DType type, const char* format, int64_t rows, int64_t cols, const void* data) {
  TensorRef t;
  t.name = name;
  t.dtype = type;
  t.format = format;
  t.ndim = 2;
  t.shape = {rows, cols, 0, 0};
  t.data = data;
  t.nbytes = static_cast<uint64_t>(rows) * dtype_row_bytes(type, cols);
  return t;
}

TEST_F(PluginTest, Describes) {
  EXPECT_EQ(info_->family, PluginFamily::quant);
  EXPECT_STREQ(info_->name, "ggml");
  const std::vector<std::string_view> want = {"f32",       "f16",       "bf16",      "ggml.q4_0",
                                              "ggml.q4_1", "ggml.q5_0", "ggml.q5_1", "ggml.q8_0",
                                              "ggml.q4_k", "ggml.q5_k", "ggml.q6_k", "ggml.q2_k",
                                              "ggml.q3_k"};
  const auto formats = quantizer_->formats();
  EXPECT_EQ(std::vector<std::string_view>(formats.begin(), formats.end()), want);
}

TEST_F(PluginTest, LinearAndDequantizeRows) {
  constexpr int64_t kOut = 10, kIn = 64;
  const auto f = testing::random_floats(kOut * kIn, 3);
  std::vector<BlockQ8_0> w(kOut * kIn / 32);
  quantize_row_q8_0(f.data(), w.data(), kOut * kIn);
  const TensorRef weight = make_ref("blk.0.attn_q.weight", DType::q8_0, "ggml.q8_0", kOut, kIn, w.data());
  std::vector<float> bias_values(kOut, 0.25f);
  TensorRef bias = make_ref("blk.0.attn_q.bias", DType::f32, "f32", 1, kOut, bias_values.data());
  bias.ndim = 1;
  bias.shape = {kOut, 0, 0, 0};

  auto linear = quantizer_->make_linear(weight, &bias);
  ASSERT_TRUE(linear.ok()) << linear.status().message();
  std::vector<float> x(kIn, 0.0f), y(kOut);
  // One nonzero, 127 * 2^-7: its Q8_1 scale 2^-7 is exact in f16, so x is
  // represented exactly and y = 0.9921875 * (column 0 of W) + bias.
  constexpr float kX = 127.0f / 128.0f;
  x[0] = kX;
  ASSERT_TRUE((*linear)->forward(x.data(), y.data(), 1).ok());
  std::vector<float> rows(3 * kIn);
  ASSERT_TRUE(quantizer_->dequantize_rows(weight, 2, 3, rows.data()).ok());
  std::vector<float> all(kOut * kIn);
  dequantize_row_q8_0(w.data(), all.data(), kOut * kIn);
  for (int64_t i = 0; i < 3 * kIn; ++i) EXPECT_EQ(rows[i], all[2 * kIn + i]);
  for (int64_t r = 0; r < kOut; ++r) EXPECT_NEAR(y[r], kX * all[r * kIn] + 0.25f, 1e-6f);
}

std::unique_ptr<Quantizer> quantizer_with(const PluginInfo& info, const char* activations) {
  ParamValues params;
  params.set("activations", std::string(activations));
  std::string error;
  std::unique_ptr<Quantizer> q(static_cast<Quantizer*>(info.create(params, &error)));
  EXPECT_NE(q, nullptr) << error;
  return q;
}

TEST_F(PluginTest, ActivationsParameterChoosesTheArithmetic) {
  ASSERT_EQ(info_->param_count, 2u);
  EXPECT_STREQ(info_->params[0].name, "activations");
  EXPECT_STREQ(info_->params[0].default_value, "\"q8x2\"");
  const std::unique_ptr<Quantizer> one_term = quantizer_with(*info_, "q8");
  const std::unique_ptr<Quantizer> exact = quantizer_with(*info_, "f32");
  ASSERT_TRUE(one_term != nullptr && exact != nullptr);

  constexpr int64_t kOut = 24, kIn = 576;
  const auto f = testing::random_floats(kOut * kIn, 5, 0.5f);
  std::vector<BlockQ4_1> w(kOut * kIn / 32);
  quantize_row_q4_1(f.data(), w.data(), kOut * kIn);
  std::vector<float> wf(kOut * kIn);
  dequantize_row_q4_1(w.data(), wf.data(), kOut * kIn);
  const TensorRef weight = make_ref("blk.0.ffn_up.weight", DType::q4_1, "ggml.q4_1", kOut, kIn, w.data());
  const auto x = testing::random_floats(kIn, 6, 1.5f);

  auto by_default = quantizer_->make_linear(weight, nullptr);
  auto fast = one_term->make_linear(weight, nullptr);
  auto precise = exact->make_linear(weight, nullptr);
  ASSERT_TRUE(by_default.ok() && fast.ok() && precise.ok());
  std::vector<float> y_default(kOut), y_fast(kOut), y_precise(kOut);
  ASSERT_TRUE((*by_default)->forward(x.data(), y_default.data(), 1).ok());
  ASSERT_TRUE((*fast)->forward(x.data(), y_fast.data(), 1).ok());
  ASSERT_TRUE((*precise)->forward(x.data(), y_precise.data(), 1).ok());
  double worst_default = 0, worst_fast = 0;
  for (int64_t r = 0; r < kOut; ++r) {
    double ref = 0, abs_sum = 0;
    for (int64_t k = 0; k < kIn; ++k) {
      ref += static_cast<double>(wf[r * kIn + k]) * x[k];
      abs_sum += std::fabs(static_cast<double>(wf[r * kIn + k]) * x[k]);
    }
    EXPECT_NEAR(y_precise[r], ref, 1e-5 * abs_sum) << "row " << r;
    worst_default = std::max(worst_default, std::fabs(y_default[r] - ref) / abs_sum);
    worst_fast = std::max(worst_fast, std::fabs(y_fast[r] - ref) / abs_sum);
  }
  // q8 quantizes x to 8 bits per block: off by far more than f32 rounding.
  EXPECT_GT(worst_fast, 1e-4);
  // The default's second term takes that error down by two orders of magnitude.
  EXPECT_LT(worst_default, worst_fast / 50) << worst_default << " against " << worst_fast;
}

// prefetch = "on" / "off" / "auto" (the process's choice, prefetch_choice.hpp):
// the plugin takes each, and the Linears it makes give the same bits in all.
TEST_F(PluginTest, PrefetchParameterChangesNoResult) {
  ASSERT_EQ(info_->param_count, 2u);
  EXPECT_STREQ(info_->params[1].name, "prefetch");
  EXPECT_STREQ(info_->params[1].default_value, "\"auto\"");
  EXPECT_STREQ(info_->params[1].choices, "auto|on|off");
  constexpr int64_t kOut = 64, kIn = 2048;
  const auto f = testing::random_floats(kOut * kIn, 12, 0.5f);
  std::vector<BlockQ4_0> w(kOut * kIn / 32);
  quantize_row_q4_0(f.data(), w.data(), kOut * kIn);
  const TensorRef weight = make_ref("blk.0.ffn_down.weight", DType::q4_0, "ggml.q4_0", kOut, kIn, w.data());
  const auto x = testing::random_floats(kIn, 13, 1.0f);
  std::vector<std::vector<float>> outputs;
  for (const char* mode : {"off", "on", "auto"}) {
    ParamValues params;
    params.set("prefetch", std::string(mode));
    std::string error;
    std::unique_ptr<Quantizer> q(static_cast<Quantizer*>(info_->create(params, &error)));
    ASSERT_NE(q, nullptr) << mode << ": " << error;
    auto linear = q->make_linear(weight, nullptr);
    ASSERT_TRUE(linear.ok()) << mode;
    std::vector<float> y(kOut);
    ASSERT_TRUE((*linear)->forward(x.data(), y.data(), 1).ok()) << mode;
    outputs.push_back(y);
  }
  EXPECT_EQ(outputs[1], outputs[0]);
  EXPECT_EQ(outputs[2], outputs[0]);
}

// Q5_0/Q5_1 and the K-quants through the plugin: by default in the quantized
// domain (QuantLinear, KQuantLinear: they offer the prepare/compute split),
// with activations = "f32" in f32 (FloatLinear: no split, the exact product).
TEST_F(PluginTest, Q5AndKQuantFormatsRunInBothArithmetics) {
  const std::unique_ptr<Quantizer> exact = make_exact_quantizer();
  ASSERT_NE(exact, nullptr);
  constexpr int64_t kOut = 12, kIn = 512;
  for (DType type : {DType::q5_0, DType::q5_1, DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k}) {
    const size_t row_bytes = dtype_row_bytes(type, kIn);
    std::vector<uint8_t> w(kOut * row_bytes);
    const auto f = testing::random_floats(kOut * kIn, 8, 0.5f);
    if (type == DType::q5_0) quantize_row_q5_0(f.data(), reinterpret_cast<BlockQ5_0*>(w.data()), kOut * kIn);
    if (type == DType::q5_1) quantize_row_q5_1(f.data(), reinterpret_cast<BlockQ5_1*>(w.data()), kOut * kIn);
    if (is_block_format(type) && dtype_info(type).block_elems == 256) {  // random quants, small scales
      w = testing::random_bytes(w.size(), 9);
      testing::set_every_kquant_scale(type, w.data(), w.size(), 0.002f, 0.001f);
    }
    std::vector<float> wf(kOut * kIn);
    ASSERT_TRUE(dequantize_row(type, w.data(), wf.data(), kOut * kIn));
    const std::string format = "ggml." + std::string(dtype_name(type));
    const TensorRef weight = make_ref("blk.0.ffn_up.weight", type, format.c_str(), kOut, kIn, w.data());
    auto fast = quantizer_->make_linear(weight, nullptr);
    auto precise = exact->make_linear(weight, nullptr);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    ASSERT_TRUE(precise.ok()) << precise.status().message();
    EXPECT_TRUE((*fast)->splits()) << format << ": the quantized-domain driver";
    EXPECT_FALSE((*precise)->splits()) << format << ": FloatLinear";
    const auto x = testing::random_floats(kIn, 10, 1.5f);
    float amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    std::vector<float> y_fast(kOut), y_precise(kOut);
    ASSERT_TRUE((*fast)->forward(x.data(), y_fast.data(), 1).ok());
    ASSERT_TRUE((*precise)->forward(x.data(), y_precise.data(), 1).ok());
    for (int64_t r = 0; r < kOut; ++r) {
      double ref = 0, abs_sum = 0, abs_w = 0;
      for (int64_t k = 0; k < kIn; ++k) {
        ref += static_cast<double>(wf[r * kIn + k]) * x[k];
        abs_sum += std::fabs(static_cast<double>(wf[r * kIn + k]) * x[k]);
        abs_w += std::fabs(wf[r * kIn + k]);
      }
      EXPECT_NEAR(y_precise[r], ref, 1e-5 * abs_sum) << format << " row " << r;
      // 8-bit activations: half a step of at most max|x| / 127 per element, and
      // Q5_1's m * s carries the f16 rounding of s (2^-10 of sum |x| per block, at most).
      EXPECT_NEAR(y_fast[r], ref, abs_w * 0.51 * amax / 127 + 1e-3 * abs_sum) << format << " row " << r;
    }
  }
}

TEST_F(PluginTest, ErrorsNameTheTensor) {
  std::vector<uint8_t> bytes(1000);
  TensorRef bad = make_ref("blk.3.ffn_up.weight", DType::q4_1, "ggml.q4_1", 4, 64, bytes.data());
  bad.nbytes -= 1;
  auto r = quantizer_->make_linear(bad, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(r.status().message().find("blk.3.ffn_up.weight"), std::string::npos) << r.status().message();

  TensorRef ragged = make_ref("ragged", DType::q4_1, "ggml.q4_1", 4, 48, bytes.data());
  EXPECT_EQ(quantizer_->make_linear(ragged, nullptr).status().code(), StatusCode::corrupt_data);

  TensorRef unknown = make_ref("odd", DType::q4_1, "gptq", 4, 64, bytes.data());
  EXPECT_EQ(quantizer_->make_linear(unknown, nullptr).status().code(), StatusCode::unsupported);

  TensorRef mismatch = make_ref("mism", DType::q8_0, "ggml.q4_1", 4, 64, bytes.data());
  EXPECT_EQ(quantizer_->make_linear(mismatch, nullptr).status().code(), StatusCode::corrupt_data);

  TensorRef ok = make_ref("ok", DType::q4_1, "ggml.q4_1", 4, 64, bytes.data());
  std::vector<float> out(64 * 4);
  EXPECT_EQ(quantizer_->dequantize_rows(ok, 3, 2, out.data()).code(), StatusCode::invalid_argument);
  EXPECT_EQ(quantizer_->dequantize_rows(ok, -1, 1, out.data()).code(), StatusCode::invalid_argument);
  TensorRef huge = ok;
  huge.shape = {int64_t{1} << 40, int64_t{1} << 40, 0, 0};
  EXPECT_EQ(quantizer_->dequantize_rows(huge, 0, 1, out.data()).code(), StatusCode::corrupt_data);
}

}  // namespace
}  // namespace tessera::ggml

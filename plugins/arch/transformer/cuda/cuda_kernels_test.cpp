// Every GPU kernel of the Transformer's CUDA forward against the CPU's scalar
// reference on the same inputs: the ggml plugin's reference dequantization
// for the weight formats, the arch blocks for RMSNorm, RoPE and SwiGLU, and
// double-precision sums for the products and attention. Tolerances are stated
// beside each check. Without a usable GPU every test skips, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda_testing.hpp"
#include "device_buffer.hpp"
#include "ggml_testing.hpp"
#include "kernels.hpp"
#include "reference.hpp"
#include "tessera/blocks/elementwise.hpp"
#include "tessera/blocks/rope.hpp"
#include "tessera/half.hpp"

namespace tessera::transformer::cuda {
namespace {

using ggml::testing::random_bytes;
using ggml::testing::random_floats;


template <typename T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  check_cuda(cudaDeviceSynchronize(), "kernel");
  check_cuda(cudaMemcpy(v.data(), b.as<T>(), n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return v;
}

// A [rows, cols] matrix of `type` with values in the range real files hold.
std::vector<uint8_t> random_matrix(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const DTypeInfo info = dtype_info(type);
  const size_t bytes = static_cast<size_t>(rows * cols / info.block_elems * info.block_bytes);
  const std::vector<float> values = random_floats(static_cast<size_t>(rows * cols), seed, 0.05f);
  std::vector<uint8_t> out(bytes);
  switch (type) {
    case DType::f32: std::memcpy(out.data(), values.data(), bytes); break;
    case DType::f16:
    case DType::bf16:
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = type == DType::f16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    case DType::q4_0: ggml::quantize_row_q4_0(values.data(), reinterpret_cast<ggml::BlockQ4_0*>(out.data()), rows * cols); break;
    case DType::q4_1: ggml::quantize_row_q4_1(values.data(), reinterpret_cast<ggml::BlockQ4_1*>(out.data()), rows * cols); break;
    case DType::q5_0: ggml::quantize_row_q5_0(values.data(), reinterpret_cast<ggml::BlockQ5_0*>(out.data()), rows * cols); break;
    case DType::q5_1: ggml::quantize_row_q5_1(values.data(), reinterpret_cast<ggml::BlockQ5_1*>(out.data()), rows * cols); break;
    case DType::q8_0: ggml::quantize_row_q8_0(values.data(), reinterpret_cast<ggml::BlockQ8_0*>(out.data()), rows * cols); break;
    default:  // K-quants: every bit pattern of values and sub-block scales, sane super-block scales
      out = random_bytes(bytes, seed);
      ggml::testing::set_every_kquant_scale(type, out.data(), out.size(), 0.002f, 0.001f);
  }
  return out;
}

std::vector<float> reference_rows(DType type, const std::vector<uint8_t>& data, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  EXPECT_TRUE(ggml::dequantize_row(type, data.data(), out.data(), rows * cols));
  return out;
}

class WeightFormats : public ::testing::TestWithParam<DType> {};

std::string format_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(dtype_info(info.param).name);
}

INSTANTIATE_TEST_SUITE_P(Cuda, WeightFormats,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16, DType::q4_0, DType::q4_1, DType::q5_0,
                                           DType::q5_1, DType::q8_0, DType::q4_k, DType::q5_k, DType::q6_k),
                         format_name);

DeviceMatrix view(const DeviceBuffer& b, DType type, int64_t rows, int64_t cols) {
  return {b.as<uint8_t>(), static_cast<WeightFormat>(type), rows, cols, static_cast<int64_t>(b.bytes()) / rows};
}

// Every value the gather decodes equals the reference's to within one f32
// rounding (the GPU may fuse q * d + m into one FMA): 2^-22 relative.
TEST_P(WeightFormats, GatherDecodesTheReferenceValues) {
  TESSERA_SKIP_WITHOUT_GPU();
  const DType type = GetParam();
  const int64_t rows = 9, cols = 512;
  const std::vector<uint8_t> w = random_matrix(type, rows, cols, 11);
  const std::vector<float> ref = reference_rows(type, w, rows, cols);
  const DeviceBuffer dw = to_device(w);
  const std::vector<int32_t> ids = {8, 0, 3, 3, 7};
  const DeviceBuffer did = to_device(ids);
  DeviceBuffer out(ids.size() * cols * sizeof(float));
  gather_rows(view(dw, type, rows, cols), did.as<int32_t>(), static_cast<int64_t>(ids.size()), out.as<float>(), nullptr);
  const std::vector<float> got = to_host<float>(out, ids.size() * cols);
  for (size_t r = 0; r < ids.size(); ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float want = ref[static_cast<size_t>(ids[r] * cols + c)];
      ASSERT_NEAR(got[r * cols + c], want, std::abs(want) * 0x1p-22f) << "row " << ids[r] << " column " << c;
    }
}

// The product of 1, 3 and 11 activation rows (one pass, a partial pass, and
// two passes of eight) against double sums of the reference's values:
// within 1e-5 of the sum of |w x| (f32 accumulation over 512..2048 terms).
TEST_P(WeightFormats, MatvecMatchesDoubleSumsOfTheReference) {
  TESSERA_SKIP_WITHOUT_GPU();
  const DType type = GetParam();
  for (const int64_t cols : {512, 2048}) {
    const int64_t out_rows = 37;
    const std::vector<uint8_t> w = random_matrix(type, out_rows, cols, 5);
    const std::vector<float> ref = reference_rows(type, w, out_rows, cols);
    const DeviceBuffer dw = to_device(w);
    const std::vector<float> bias = random_floats(static_cast<size_t>(out_rows), 9);
    const DeviceBuffer dbias = to_device(bias);
    for (const int64_t n : {1, 3, 11}) {
      const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), 7);
      const DeviceBuffer dx = to_device(x);
      DeviceBuffer dy(static_cast<size_t>(n * out_rows) * sizeof(float));
      matvec(view(dw, type, out_rows, cols), dx.as<float>(), dy.as<float>(), n, n == 3 ? dbias.as<float>() : nullptr,
             nullptr);
      const std::vector<float> y = to_host<float>(dy, static_cast<size_t>(n * out_rows));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < out_rows; ++o) {
          double sum = n == 3 ? bias[static_cast<size_t>(o)] : 0.0, magnitude = 0.0;
          for (int64_t i = 0; i < cols; ++i) {
            const double t = double(ref[static_cast<size_t>(o * cols + i)]) * x[static_cast<size_t>(r * cols + i)];
            sum += t;
            magnitude += std::abs(t);
          }
          ASSERT_NEAR(y[static_cast<size_t>(r * out_rows + o)], sum, 1e-5 * magnitude + 1e-6)
              << "cols " << cols << " rows " << n << " row " << r << " output " << o;
        }
    }
  }
}

// The fused launches the forward uses against the plain chain they replace,
// on the GPU, bit for bit: three products in one launch (and, where the
// formats differ, the fallback), a product added into its output (the
// residual), and gate and up with SwiGLU in one launch; for 1 and 11 rows.
TEST_P(WeightFormats, FusedProductsAreThePlainChainBitForBit) {
  TESSERA_SKIP_WITHOUT_GPU();
  const DType type = GetParam();
  const int64_t cols = 512, rows_a = 37, rows_b = 13;
  const std::vector<uint8_t> wa = random_matrix(type, rows_a, cols, 21), wb = random_matrix(type, rows_b, cols, 22),
                             wc = random_matrix(type, rows_b, cols, 23);
  const DType other = type == DType::q8_0 ? DType::q4_0 : DType::q8_0;
  const std::vector<uint8_t> wd = random_matrix(other, rows_b, cols, 24);
  const DeviceBuffer da = to_device(wa), db = to_device(wb), dc = to_device(wc), dd = to_device(wd);
  const DeviceMatrix a = view(da, type, rows_a, cols), b = view(db, type, rows_b, cols), c = view(dc, type, rows_b, cols),
                     d = view(dd, other, rows_b, cols);
  const std::vector<float> bias = random_floats(static_cast<size_t>(rows_b), 25);
  const DeviceBuffer dbias = to_device(bias);
  auto buffer = [](int64_t n) { return DeviceBuffer(static_cast<size_t>(n) * sizeof(float)); };
  for (const int64_t n : {1, 11}) {
    SCOPED_TRACE("rows " + std::to_string(n));
    const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), 26);
    const DeviceBuffer dx = to_device(x);

    for (const DeviceMatrix& third : {c, d}) {  // one launch, then the mixed-format fallback
      DeviceBuffer y1 = buffer(n * rows_a), y2 = buffer(n * rows_b), y3 = buffer(n * rows_b);
      DeviceBuffer z1 = buffer(n * rows_a), z2 = buffer(n * rows_b), z3 = buffer(n * rows_b);
      const MatvecTarget targets[] = {{a, nullptr, y1.as<float>()}, {b, dbias.as<float>(), y2.as<float>()},
                                      {third, nullptr, y3.as<float>()}};
      matvec_group(targets, 3, dx.as<float>(), n, nullptr);
      matvec(a, dx.as<float>(), z1.as<float>(), n, nullptr, nullptr);
      matvec(b, dx.as<float>(), z2.as<float>(), n, dbias.as<float>(), nullptr);
      matvec(third, dx.as<float>(), z3.as<float>(), n, nullptr, nullptr);
      EXPECT_EQ(to_host<float>(y1, static_cast<size_t>(n * rows_a)), to_host<float>(z1, static_cast<size_t>(n * rows_a)));
      EXPECT_EQ(to_host<float>(y2, static_cast<size_t>(n * rows_b)), to_host<float>(z2, static_cast<size_t>(n * rows_b)));
      EXPECT_EQ(to_host<float>(y3, static_cast<size_t>(n * rows_b)), to_host<float>(z3, static_cast<size_t>(n * rows_b)));
    }

    const std::vector<float> resid = random_floats(static_cast<size_t>(n * rows_b), 27, 3.0f);
    DeviceBuffer fused = to_device(resid), plain = to_device(resid), product = buffer(n * rows_b);
    matvec(b, dx.as<float>(), fused.as<float>(), n, dbias.as<float>(), nullptr, Store::add);
    matvec(b, dx.as<float>(), product.as<float>(), n, dbias.as<float>(), nullptr);
    add(plain.as<float>(), product.as<float>(), n * rows_b, nullptr);
    EXPECT_EQ(to_host<float>(fused, static_cast<size_t>(n * rows_b)), to_host<float>(plain, static_cast<size_t>(n * rows_b)));

    for (const DeviceMatrix& up : {c, d}) {  // one launch, then the fallback
      DeviceBuffer out = buffer(n * rows_b), scratch = buffer(n * rows_b), g = buffer(n * rows_b), u = buffer(n * rows_b);
      matvec_swiglu(b, up, dx.as<float>(), out.as<float>(), n, nullptr, scratch.as<float>());
      matvec(b, dx.as<float>(), g.as<float>(), n, nullptr, nullptr);
      matvec(up, dx.as<float>(), u.as<float>(), n, nullptr, nullptr);
      swiglu(g.as<float>(), u.as<float>(), n * rows_b, nullptr);
      EXPECT_EQ(to_host<float>(out, static_cast<size_t>(n * rows_b)), to_host<float>(g, static_cast<size_t>(n * rows_b)));
    }
  }
}

// Shapes the fused products cannot serve are refused before any launch
// (so this runs without a GPU too): gate and up of different shapes, and
// grouped matrices of different widths (they share one x).
TEST(CudaKernels, FusedProductsRefuseMismatchedShapes) {
  const DeviceMatrix gate{nullptr, WeightFormat::q4_0, 64, 256, 144}, taller{nullptr, WeightFormat::q4_0, 65, 256, 144},
                     wider{nullptr, WeightFormat::q4_0, 64, 512, 288};
  EXPECT_THROW(matvec_swiglu(gate, taller, nullptr, nullptr, 1, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(matvec_swiglu(gate, wider, nullptr, nullptr, 1, nullptr, nullptr), std::invalid_argument);
  const MatvecTarget targets[] = {{gate, nullptr, nullptr}, {wider, nullptr, nullptr}};
  EXPECT_THROW(matvec_group(targets, 2, nullptr, 1, nullptr), std::invalid_argument);
}

// rope_and_store against rope, rope, store_rows, store_rows: the queries and
// both caches bit for bit, grouped heads, both pairings, 1 and 5 rows at
// position 3; cache rows outside [3, 3 + rows) untouched.
TEST(CudaKernels, RopeAndStoreIsThePlainChainBitForBit) {
  TESSERA_SKIP_WITHOUT_GPU();
  const int32_t n_head = 6, n_kv = 2, head_dim = 64, first = 3;
  const int64_t max_pos = 16, kv_width = int64_t(n_kv) * head_dim;
  const std::vector<float> cos_sin = random_floats(static_cast<size_t>(max_pos * head_dim), 31);
  const DeviceBuffer dcs = to_device(cos_sin), dpos = to_device(std::vector<int32_t>{first});
  const std::vector<float> empty_cache = random_floats(static_cast<size_t>(max_pos * kv_width), 35);
  for (const bool neox : {false, true})
    for (const int64_t n : {1, 5}) {
      SCOPED_TRACE(std::string(neox ? "neox" : "adjacent") + " rows " + std::to_string(n));
      const std::vector<float> q = random_floats(static_cast<size_t>(n * n_head * head_dim), 32);
      const std::vector<float> k = random_floats(static_cast<size_t>(n * kv_width), 33);
      const std::vector<float> v = random_floats(static_cast<size_t>(n * kv_width), 34);
      DeviceBuffer fq = to_device(q), fk = to_device(k), fv = to_device(v), fkc = to_device(empty_cache),
                   fvc = to_device(empty_cache);
      DeviceBuffer pq = to_device(q), pk = to_device(k), pv = to_device(v), pkc = to_device(empty_cache),
                   pvc = to_device(empty_cache);
      rope_and_store(fq.as<float>(), fk.as<float>(), fv.as<float>(), fkc.as<float>(), fvc.as<float>(), dcs.as<float>(),
                     dpos.as<int32_t>(), n, n_head, n_kv, head_dim, neox, nullptr);
      rope(pq.as<float>(), dcs.as<float>(), dpos.as<int32_t>(), n, n_head, head_dim, neox, nullptr);
      rope(pk.as<float>(), dcs.as<float>(), dpos.as<int32_t>(), n, n_kv, head_dim, neox, nullptr);
      store_rows(pk.as<float>(), pkc.as<float>(), dpos.as<int32_t>(), n, kv_width, nullptr);
      store_rows(pv.as<float>(), pvc.as<float>(), dpos.as<int32_t>(), n, kv_width, nullptr);
      EXPECT_EQ(to_host<float>(fq, q.size()), to_host<float>(pq, q.size()));
      EXPECT_EQ(to_host<float>(fkc, empty_cache.size()), to_host<float>(pkc, empty_cache.size()));
      EXPECT_EQ(to_host<float>(fvc, empty_cache.size()), to_host<float>(pvc, empty_cache.size()));
      EXPECT_EQ(to_host<float>(fk, k.size()), k) << "the keys themselves stay unrotated";
    }
}

// Within 2 f32 roundings of the CPU block (both sum squares in double).
TEST(CudaKernels, RmsNormMatchesTheCpuBlock) {
  TESSERA_SKIP_WITHOUT_GPU();
  const int64_t rows = 5, dim = 576;
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * dim), 1, 3.0f);
  const std::vector<float> w = random_floats(static_cast<size_t>(dim), 2);
  std::vector<float> want(x.size());
  blocks::rms_norm_rows(x.data(), w.data(), want.data(), rows, dim, 1e-5f);
  const DeviceBuffer dx = to_device(x), dw = to_device(w);
  DeviceBuffer dy(x.size() * sizeof(float));
  rms_norm(dx.as<float>(), dw.as<float>(), dy.as<float>(), rows, dim, 1e-5f, nullptr);
  const std::vector<float> got = to_host<float>(dy, x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], want[i], std::abs(want[i]) * 0x1p-22f) << i;
}

// Both pairings against the CPU RopeTable at positions 5.. (read from device
// memory): the same cos/sin, so within one FMA's rounding.
TEST(CudaKernels, RopeMatchesTheCpuTable) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (const bool neox : {false, true}) {
    blocks::RopeConfig config;
    config.head_dim = 64;
    config.freq_base = 100000.0;
    config.style = neox ? blocks::RopeStyle::neox : blocks::RopeStyle::adjacent;
    const int64_t max_pos = 64, rows = 3;
    const int32_t heads = 3, first = 5;
    blocks::RopeTable table(config, max_pos);
    table.ensure(max_pos);
    const std::vector<double> freqs = blocks::rope_frequencies(config);
    std::vector<float> cos_sin(static_cast<size_t>(max_pos * 64));
    for (int64_t p = 0; p < max_pos; ++p)
      for (int i = 0; i < 32; ++i) {
        cos_sin[static_cast<size_t>(p * 64 + i)] = static_cast<float>(std::cos(double(p) * freqs[static_cast<size_t>(i)]));
        cos_sin[static_cast<size_t>(p * 64 + 32 + i)] = static_cast<float>(std::sin(double(p) * freqs[static_cast<size_t>(i)]));
      }
    std::vector<float> x = random_floats(static_cast<size_t>(rows * heads * 64), 3);
    const DeviceBuffer dx = to_device(x), dcs = to_device(cos_sin), dpos = to_device(std::vector<int32_t>{first});
    rope(dx.as<float>(), dcs.as<float>(), dpos.as<int32_t>(), rows, heads, 64, neox, nullptr);
    const std::vector<float> got = to_host<float>(dx, x.size());
    for (int64_t r = 0; r < rows; ++r) table.apply(x.data() + r * heads * 64, heads, first + r);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], x[i], 1e-6f) << (neox ? "neox " : "adjacent ") << i;
  }
}

// Causal attention with grouped heads against a double-precision softmax:
// rows at positions 0..3 (where some warps see no key) and 6..9 over keys
// [0, position], 1e-5 absolute (values ~1).
TEST(CudaKernels, AttentionMatchesADoubleSoftmax) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (const int32_t first : {0, 6})
  for (const int32_t head_dim : {64, 128}) {
    const int32_t n_head = 6, n_kv = 2;
    const int64_t rows = 4, max_pos = 16;
    const float scale = 1.0f / std::sqrt(float(head_dim));
    const std::vector<float> q = random_floats(static_cast<size_t>(rows * n_head * head_dim), 1);
    const std::vector<float> k = random_floats(static_cast<size_t>(max_pos * n_kv * head_dim), 2);
    const std::vector<float> v = random_floats(static_cast<size_t>(max_pos * n_kv * head_dim), 3);
    const DeviceBuffer dq = to_device(q), dk = to_device(k), dv = to_device(v);
    const DeviceBuffer dpos = to_device(std::vector<int32_t>{first});
    DeviceBuffer dout(q.size() * sizeof(float));
    attention(dq.as<float>(), dk.as<float>(), dv.as<float>(), dout.as<float>(), dpos.as<int32_t>(), rows, n_head, n_kv,
              head_dim, scale, nullptr);
    const std::vector<float> got = to_host<float>(dout, q.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int32_t h = 0; h < n_head; ++h) {
        const int32_t g = h / (n_head / n_kv);
        const int64_t last = first + r;
        std::vector<double> p(static_cast<size_t>(last + 1));
        double m = -INFINITY, total = 0.0;
        for (int64_t t = 0; t <= last; ++t) {
          double s = 0.0;
          for (int32_t i = 0; i < head_dim; ++i)
            s += double(q[static_cast<size_t>((r * n_head + h) * head_dim + i)]) *
                 k[static_cast<size_t>((t * n_kv + g) * head_dim + i)];
          p[static_cast<size_t>(t)] = s * scale;
          m = std::max(m, p[static_cast<size_t>(t)]);
        }
        for (double& e : p) total += (e = std::exp(e - m));
        for (int32_t i = 0; i < head_dim; ++i) {
          double want = 0.0;
          for (int64_t t = 0; t <= last; ++t)
            want += p[static_cast<size_t>(t)] * v[static_cast<size_t>((t * n_kv + g) * head_dim + i)];
          want /= total;
          ASSERT_NEAR(got[static_cast<size_t>((r * n_head + h) * head_dim + i)], want, 1e-5)
              << "first " << first << " head_dim " << head_dim << " row " << r << " head " << h << " value " << i;
        }
      }
  }
}

// SwiGLU against the CPU block (whose exp is its own fast one): 1e-6 relative.
// Residual add and cache rows: exact.
TEST(CudaKernels, SwigluAddAndCacheRowsMatchTheCpu) {
  TESSERA_SKIP_WITHOUT_GPU();
  const int64_t n = 3000;
  std::vector<float> gate = random_floats(static_cast<size_t>(n), 1, 4.0f);
  const std::vector<float> up = random_floats(static_cast<size_t>(n), 2);
  const DeviceBuffer dg = to_device(gate), du = to_device(up);
  swiglu(dg.as<float>(), du.as<float>(), n, nullptr);
  const std::vector<float> got = to_host<float>(dg, static_cast<size_t>(n));
  std::vector<float> want = gate;
  blocks::swiglu_inplace(want.data(), up.data(), n);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], std::abs(want[i]) * 1e-6f + 1e-30f) << i;

  add(dg.as<float>(), du.as<float>(), n, nullptr);
  const std::vector<float> sum = to_host<float>(dg, static_cast<size_t>(n));
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(sum[i], got[i] + up[i]) << i;

  const int64_t width = 40;
  DeviceBuffer cache(static_cast<size_t>(10 * width) * sizeof(float));
  check_cuda(cudaMemset(cache.as<float>(), 0, cache.bytes()), "memset");
  const DeviceBuffer dpos = to_device(std::vector<int32_t>{4});
  store_rows(du.as<float>(), cache.as<float>(), dpos.as<int32_t>(), 2, width, nullptr);
  const std::vector<float> rows = to_host<float>(cache, static_cast<size_t>(10 * width));
  for (int64_t i = 0; i < 10 * width; ++i) {
    const bool written = i >= 4 * width && i < 6 * width;
    ASSERT_EQ(rows[static_cast<size_t>(i)], written ? up[static_cast<size_t>(i - 4 * width)] : 0.0f) << i;
  }
}

// Ties go to the lowest index (as tessera::argmax_token), NaN gives -1, and
// the position advances either way.
TEST(CudaKernels, ArgmaxTakesTheFirstOfEqualMaximaAndRefusesNan) {
  TESSERA_SKIP_WITHOUT_GPU();
  std::vector<float> logits = random_floats(49152, 4);
  logits[30001] = 50.0f;
  logits[40000] = 50.0f;
  logits[2] = 49.0f;
  DeviceBuffer dl = to_device(logits), dtok = to_device(std::vector<int32_t>{0}),
               dpos = to_device(std::vector<int32_t>{7});
  argmax_and_advance(dl.as<float>(), static_cast<int64_t>(logits.size()), dtok.as<int32_t>(), dpos.as<int32_t>(), 3,
                     nullptr);
  EXPECT_EQ(to_host<int32_t>(dtok, 1)[0], 30001);
  EXPECT_EQ(to_host<int32_t>(dpos, 1)[0], 10);
  logits[123] = NAN;
  dl.upload(logits.data(), logits.size() * sizeof(float));
  argmax_and_advance(dl.as<float>(), static_cast<int64_t>(logits.size()), dtok.as<int32_t>(), dpos.as<int32_t>(), 1,
                     nullptr);
  EXPECT_EQ(to_host<int32_t>(dtok, 1)[0], -1);
  EXPECT_EQ(to_host<int32_t>(dpos, 1)[0], 11);
}

}  // namespace
}  // namespace tessera::transformer::cuda

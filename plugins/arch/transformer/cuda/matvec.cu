// matvec.cu: products of f32 activation rows with stored weight matrices, and
// row gathers (the embedding lookup), decoding the weights in registers.
//
// One warp per weight row: lane l decodes units l, l + 32, ... of the row
// (32 values each), multiplies them with up to kRowsPerPass activation rows
// and the warp sums its lanes. The weights are read once per pass of
// activation rows, in the file's own encoding; nothing is dequantized ahead.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "block_decode.cuh"
#include "kernels.hpp"

namespace tessera::transformer::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kRowsPerPass = 8;  // activation rows sharing one decode of the weights

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// grid: (ceil(W.rows / kWarpsPerBlock), ceil(n_rows / ROWS)); block: 32 * kWarpsPerBlock.
template <WeightFormat F, int ROWS>
__global__ void matvec_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t out_rows, int64_t cols,
                              const float* __restrict__ x, float* __restrict__ y, int64_t n_rows,
                              const float* __restrict__ bias) {
  const int lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (o >= out_rows) return;
  const int64_t first = int64_t(blockIdx.y) * ROWS;
  const int64_t left = n_rows - first;
  const int count = left < ROWS ? static_cast<int>(left) : ROWS;
  const uint8_t* row = w + o * row_bytes;
  const int64_t units = cols / 32;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
  float v[32];
  for (int64_t u = lane; u < units; u += 32) {
    decode_unit<F>(row, u, v);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (r >= count) break;
      const float4* xr = reinterpret_cast<const float4*>(x + (first + r) * cols + 32 * u);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float4 a = xr[j];
        sum = fmaf(v[4 * j], a.x, sum);
        sum = fmaf(v[4 * j + 1], a.y, sum);
        sum = fmaf(v[4 * j + 2], a.z, sum);
        sum = fmaf(v[4 * j + 3], a.w, sum);
      }
      acc[r] += sum;
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (r >= count) break;
    const float total = warp_sum(acc[r]);
    if (lane == 0) y[(first + r) * out_rows + o] = total + (bias != nullptr ? bias[o] : 0.0f);
  }
}

// grid: (ceil(n * units / 128)); one thread per (row, unit).
template <WeightFormat F>
__global__ void gather_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t cols,
                              const int32_t* __restrict__ ids, int64_t n, float* __restrict__ out) {
  const int64_t units = cols / 32;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * units) return;
  const int64_t r = i / units, u = i % units;
  float v[32];
  decode_unit<F>(w + int64_t(ids[r]) * row_bytes, u, v);
  float* dst = out + r * cols + 32 * u;
#pragma unroll
  for (int j = 0; j < 32; ++j) dst[j] = v[j];
}

template <WeightFormat F>
void launch_matvec(const DeviceMatrix& w, const float* x, float* y, int64_t n_rows, const float* bias,
                   cudaStream_t stream) {
  const dim3 block(32 * kWarpsPerBlock);
  const auto blocks_x = static_cast<unsigned>((w.rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (n_rows == 1) {
    matvec_kernel<F, 1><<<dim3(blocks_x, 1), block, 0, stream>>>(w.data, w.row_bytes, w.rows, w.cols, x, y, 1, bias);
  } else {
    const auto blocks_y = static_cast<unsigned>((n_rows + kRowsPerPass - 1) / kRowsPerPass);
    matvec_kernel<F, kRowsPerPass>
        <<<dim3(blocks_x, blocks_y), block, 0, stream>>>(w.data, w.row_bytes, w.rows, w.cols, x, y, n_rows, bias);
  }
}

template <WeightFormat F>
void launch_gather(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t stream) {
  const int64_t threads = n * (w.cols / 32);
  gather_kernel<F><<<static_cast<unsigned>((threads + 127) / 128), 128, 0, stream>>>(w.data, w.row_bytes, w.cols,
                                                                                     ids, n, out);
}

// Calls fn.template operator()<F>() for the format's F.
template <typename Fn>
void with_format(WeightFormat format, Fn&& fn) {
  switch (format) {
    case WeightFormat::f32: return fn.template operator()<WeightFormat::f32>();
    case WeightFormat::f16: return fn.template operator()<WeightFormat::f16>();
    case WeightFormat::bf16: return fn.template operator()<WeightFormat::bf16>();
    case WeightFormat::q4_0: return fn.template operator()<WeightFormat::q4_0>();
    case WeightFormat::q4_1: return fn.template operator()<WeightFormat::q4_1>();
    case WeightFormat::q5_0: return fn.template operator()<WeightFormat::q5_0>();
    case WeightFormat::q5_1: return fn.template operator()<WeightFormat::q5_1>();
    case WeightFormat::q8_0: return fn.template operator()<WeightFormat::q8_0>();
    case WeightFormat::q4_k: return fn.template operator()<WeightFormat::q4_k>();
    case WeightFormat::q5_k: return fn.template operator()<WeightFormat::q5_k>();
    case WeightFormat::q6_k: return fn.template operator()<WeightFormat::q6_k>();
  }
  throw std::invalid_argument("cuda: weight format " + std::to_string(static_cast<uint32_t>(format)) +
                              " has no GPU kernel");
}

struct MatvecCall {
  const DeviceMatrix& w;
  const float* x;
  float* y;
  int64_t n_rows;
  const float* bias;
  cudaStream_t stream;
  template <WeightFormat F>
  void operator()() const { launch_matvec<F>(w, x, y, n_rows, bias, stream); }
};

struct GatherCall {
  const DeviceMatrix& w;
  const int32_t* ids;
  int64_t n;
  float* out;
  cudaStream_t stream;
  template <WeightFormat F>
  void operator()() const { launch_gather<F>(w, ids, n, out, stream); }
};

}  // namespace

void matvec(const DeviceMatrix& w, const float* x, float* y, int64_t n_rows, const float* bias, cudaStream_t stream) {
  if (n_rows <= 0) return;
  with_format(w.format, MatvecCall{w, x, y, n_rows, bias, stream});
}

void gather_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  with_format(w.format, GatherCall{w, ids, n, out, stream});
}

}  // namespace tessera::transformer::cuda

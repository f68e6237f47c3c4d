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
#include "device_math.cuh"
#include "kernels.hpp"

namespace tessera::transformer::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kRowsPerPass = 8;  // activation rows sharing one decode of the weights

// Lane `lane`'s share of one weight row's products with activation rows
// [first, first + count): acc[r] sums units lane, lane + 32, ... of the row.
// Every product kernel below goes through this one loop, so a fused launch
// sums in the same order, bit for bit, as a plain matvec.
template <WeightFormat F, int ROWS>
__device__ __forceinline__ void lane_dots(const uint8_t* __restrict__ row, int64_t cols, const float* __restrict__ x,
                                          int64_t first, int count, int lane, float (&acc)[ROWS]) {
  const int64_t units = cols / 32;
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
}

// The activation rows a block's y index covers: [first, first + count).
template <int ROWS>
__device__ __forceinline__ int rows_of_pass(int64_t n_rows, int64_t& first) {
  first = int64_t(blockIdx.y) * ROWS;
  const int64_t left = n_rows - first;
  return left < ROWS ? static_cast<int>(left) : ROWS;
}

// Warp `o` of the launch: its weight row's dot products with the pass's
// activation rows, stored (or added, for a fused residual) as
// y[r, o] = total + bias[o].
template <WeightFormat F, int ROWS>
__device__ __forceinline__ void product_row(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t out_rows,
                                            int64_t cols, const float* __restrict__ x, float* __restrict__ y,
                                            int64_t n_rows, const float* __restrict__ bias, bool accumulate,
                                            int64_t o) {
  const int lane = threadIdx.x % 32;
  int64_t first = 0;
  const int count = rows_of_pass<ROWS>(n_rows, first);
  float acc[ROWS];
  lane_dots<F, ROWS>(w + o * row_bytes, cols, x, first, count, lane, acc);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (r >= count) break;
    const float total = warp_sum(acc[r]) + (bias != nullptr ? bias[o] : 0.0f);
    if (lane == 0) {
      float* out = y + (first + r) * out_rows + o;
      *out = accumulate ? *out + total : total;
    }
  }
}

// grid: (ceil(W.rows / kWarpsPerBlock), ceil(n_rows / ROWS)); block: 32 * kWarpsPerBlock.
template <WeightFormat F, int ROWS>
__global__ void matvec_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t out_rows, int64_t cols,
                              const float* __restrict__ x, float* __restrict__ y, int64_t n_rows,
                              const float* __restrict__ bias, bool accumulate) {
  const int64_t o = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (o < out_rows) product_row<F, ROWS>(w, row_bytes, out_rows, cols, x, y, n_rows, bias, accumulate, o);
}

// Up to kMaxGroup products of the same activation rows in one launch: target
// t owns blocks [block_start[t], block_start[t + 1]) of the grid's x.
constexpr int kMaxGroup = 3;
struct GroupArgs {
  MatvecTarget targets[kMaxGroup];
  unsigned block_start[kMaxGroup + 1];
  int count;
};

template <WeightFormat F, int ROWS>
__global__ void matvec_group_kernel(GroupArgs args, const float* __restrict__ x, int64_t n_rows) {
  int t = 0;
  while (t + 1 < args.count && blockIdx.x >= args.block_start[t + 1]) ++t;
  const MatvecTarget& target = args.targets[t];
  const int64_t o = int64_t(blockIdx.x - args.block_start[t]) * kWarpsPerBlock + threadIdx.x / 32;
  if (o < target.w.rows)
    product_row<F, ROWS>(target.w.data, target.w.row_bytes, target.w.rows, target.w.cols, x, target.y, n_rows,
                         target.bias, false, o);
}

// out[r, o] = silu(g) * u, g and u the gate's and up's row-o products, each
// summed as matvec sums it (bias-free, + 0.0f as matvec adds for no bias), and
// the product formed as swiglu() forms it.
template <WeightFormat F, int ROWS>
__global__ void matvec_swiglu_kernel(DeviceMatrix gate, DeviceMatrix up, const float* __restrict__ x,
                                     float* __restrict__ out, int64_t n_rows) {
  const int lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (o >= gate.rows) return;
  int64_t first = 0;
  const int count = rows_of_pass<ROWS>(n_rows, first);
  float acc_gate[ROWS], acc_up[ROWS];
  lane_dots<F, ROWS>(gate.data + o * gate.row_bytes, gate.cols, x, first, count, lane, acc_gate);
  lane_dots<F, ROWS>(up.data + o * up.row_bytes, up.cols, x, first, count, lane, acc_up);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (r >= count) break;
    const float g = warp_sum(acc_gate[r]) + 0.0f;
    const float u = warp_sum(acc_up[r]) + 0.0f;
    if (lane == 0) out[(first + r) * gate.rows + o] = swiglu_value(g, u);
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

unsigned blocks_for_rows(int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }
unsigned passes_for(int64_t n_rows) { return static_cast<unsigned>((n_rows + kRowsPerPass - 1) / kRowsPerPass); }

// Launches KERNEL<F, 1> for one activation row (decode) and KERNEL<F,
// kRowsPerPass> otherwise, over `blocks_x` blocks of warps.
#define TESSERA_LAUNCH_PRODUCT(KERNEL, F, n_rows, blocks_x, stream, ...)                                  \
  do {                                                                                                     \
    const dim3 block_(32 * kWarpsPerBlock);                                                                \
    if ((n_rows) == 1)                                                                                     \
      KERNEL<F, 1><<<dim3(blocks_x, 1), block_, 0, stream>>>(__VA_ARGS__);                                 \
    else                                                                                                   \
      KERNEL<F, kRowsPerPass><<<dim3(blocks_x, passes_for(n_rows)), block_, 0, stream>>>(__VA_ARGS__);     \
  } while (0)

template <WeightFormat F>
void launch_matvec(const DeviceMatrix& w, const float* x, float* y, int64_t n_rows, const float* bias, Store store,
                   cudaStream_t stream) {
  TESSERA_LAUNCH_PRODUCT(matvec_kernel, F, n_rows, blocks_for_rows(w.rows), stream, w.data, w.row_bytes, w.rows,
                         w.cols, x, y, n_rows, bias, store == Store::add);
}

template <WeightFormat F>
void launch_matvec_group(const GroupArgs& args, const float* x, int64_t n_rows, cudaStream_t stream) {
  TESSERA_LAUNCH_PRODUCT(matvec_group_kernel, F, n_rows, args.block_start[args.count], stream, args, x, n_rows);
}

template <WeightFormat F>
void launch_matvec_swiglu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x, float* out,
                          int64_t n_rows, cudaStream_t stream) {
  TESSERA_LAUNCH_PRODUCT(matvec_swiglu_kernel, F, n_rows, blocks_for_rows(gate.rows), stream, gate, up, x, out,
                         n_rows);
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
  Store store;
  cudaStream_t stream;
  template <WeightFormat F>
  void operator()() const { launch_matvec<F>(w, x, y, n_rows, bias, store, stream); }
};

struct MatvecGroupCall {
  const GroupArgs& args;
  const float* x;
  int64_t n_rows;
  cudaStream_t stream;
  template <WeightFormat F>
  void operator()() const { launch_matvec_group<F>(args, x, n_rows, stream); }
};

struct MatvecSwigluCall {
  const DeviceMatrix& gate;
  const DeviceMatrix& up;
  const float* x;
  float* out;
  int64_t n_rows;
  cudaStream_t stream;
  template <WeightFormat F>
  void operator()() const { launch_matvec_swiglu<F>(gate, up, x, out, n_rows, stream); }
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

void matvec(const DeviceMatrix& w, const float* x, float* y, int64_t n_rows, const float* bias, cudaStream_t stream,
            Store store) {
  if (n_rows <= 0) return;
  with_format(w.format, MatvecCall{w, x, y, n_rows, bias, store, stream});
}

void matvec_group(const MatvecTarget* targets, int count, const float* x, int64_t n_rows, cudaStream_t stream) {
  for (int t = 1; t < count; ++t)
    if (targets[t].w.cols != targets[0].w.cols)
      throw std::invalid_argument("cuda: matvec_group needs matrices of one width (they share x)");
  if (n_rows <= 0 || count <= 0) return;
  bool one_launch = count <= kMaxGroup;
  for (int t = 1; t < count && one_launch; ++t) one_launch = targets[t].w.format == targets[0].w.format;
  if (!one_launch) {
    for (int t = 0; t < count; ++t) matvec(targets[t].w, x, targets[t].y, n_rows, targets[t].bias, stream);
    return;
  }
  GroupArgs args{};
  args.count = count;
  for (int t = 0; t < count; ++t) {
    args.targets[t] = targets[t];
    args.block_start[t + 1] = args.block_start[t] + blocks_for_rows(targets[t].w.rows);
  }
  with_format(targets[0].w.format, MatvecGroupCall{args, x, n_rows, stream});
}

void matvec_swiglu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x, float* out, int64_t n_rows,
                   cudaStream_t stream, float* up_scratch) {
  if (gate.rows != up.rows || gate.cols != up.cols)
    throw std::invalid_argument("cuda: matvec_swiglu needs gate and up of one shape");
  if (n_rows <= 0) return;
  if (gate.format == up.format) {
    with_format(gate.format, MatvecSwigluCall{gate, up, x, out, n_rows, stream});
    return;
  }
  matvec(gate, x, out, n_rows, nullptr, stream);
  matvec(up, x, up_scratch, n_rows, nullptr, stream);
  swiglu(out, up_scratch, n_rows * gate.rows, stream);
}

void gather_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  with_format(w.format, GatherCall{w, ids, n, out, stream});
}

}  // namespace tessera::transformer::cuda

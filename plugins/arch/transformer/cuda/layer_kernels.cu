// layer_kernels.cu: the element-wise and reduction steps of a Transformer
// layer on the GPU (RMSNorm, RoPE, cache writes, SwiGLU, residual adds, the
// greedy argmax). Each follows the CPU block of the same name
// (plugins/arch/blocks): RMSNorm sums squares in double, RoPE reads the
// RopeTable's own cos/sin, so the two paths differ only in summation order.
#include <cuda_runtime.h>

#include "kernels.hpp"

namespace tessera::transformer::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// One block per row.
__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                float* __restrict__ out, int64_t dim, float eps) {
  const float* xr = x + int64_t(blockIdx.x) * dim;
  float* yr = out + int64_t(blockIdx.x) * dim;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += double(xr[i]) * xr[i];
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (int(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv_rms = static_cast<float>(1.0 / sqrt(partial[0] / double(dim) + double(eps)));
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] * inv_rms * weight[i];
}

// One thread per (row, head, pair).
__global__ void rope_kernel(float* __restrict__ x, const float* __restrict__ cos_sin, const int32_t* position,
                            int64_t n_rows, int32_t n_heads, int32_t head_dim, bool neox) {
  const int32_t half = head_dim / 2;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * n_heads * half) return;
  const int32_t pair = static_cast<int32_t>(i % half);
  const int64_t head = i / half;  // row * n_heads + h
  const int64_t pos = *position + head / n_heads;
  const float c = cos_sin[pos * head_dim + pair], s = cos_sin[pos * head_dim + half + pair];
  float* v = x + head * head_dim;
  const int32_t ia = neox ? pair : 2 * pair, ib = neox ? pair + half : 2 * pair + 1;
  const float a = v[ia], b = v[ib];
  v[ia] = a * c - b * s;
  v[ib] = a * s + b * c;
}

__global__ void store_rows_kernel(const float* __restrict__ rows, float* __restrict__ cache, const int32_t* position,
                                  int64_t total, int64_t width) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) cache[int64_t(*position) * width + i] = rows[i];
}

__global__ void swiglu_kernel(float* __restrict__ gate, const float* __restrict__ up, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  gate[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void add_kernel(float* __restrict__ x, const float* __restrict__ y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// One block of 1024 threads. A NaN anywhere makes the answer -1.
constexpr int kArgmaxThreads = 1024;
__global__ void argmax_kernel(const float* __restrict__ logits, int64_t n, int32_t* token, int32_t* position,
                              int32_t advance) {
  float best = -INFINITY;
  int64_t best_index = -1;
  bool nan = false;
  for (int64_t i = threadIdx.x; i < n; i += kArgmaxThreads) {
    const float v = logits[i];
    if (v != v) nan = true;
    if (best_index < 0 || v > best) {  // strictly greater: the first index wins ties
      best = v;
      best_index = i;
    }
  }
  __shared__ float values[kArgmaxThreads];
  __shared__ int64_t indices[kArgmaxThreads];
  __shared__ int any_nan;
  if (threadIdx.x == 0) any_nan = 0;
  __syncthreads();
  if (nan) any_nan = 1;
  values[threadIdx.x] = best;
  indices[threadIdx.x] = best_index;
  __syncthreads();
  for (int stride = kArgmaxThreads / 2; stride > 0; stride >>= 1) {
    if (int(threadIdx.x) < stride) {
      const float v = values[threadIdx.x + stride];
      const int64_t j = indices[threadIdx.x + stride];
      const int64_t k = indices[threadIdx.x];
      if (j >= 0 && (k < 0 || v > values[threadIdx.x] || (v == values[threadIdx.x] && j < k))) {
        values[threadIdx.x] = v;
        indices[threadIdx.x] = j;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *token = any_nan ? -1 : static_cast<int32_t>(indices[0]);
    *position += advance;
  }
}

}  // namespace

void rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim, float eps,
              cudaStream_t stream) {
  if (n_rows > 0) rms_norm_kernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, weight, out, dim, eps);
}

void rope(float* x, const float* cos_sin, const int32_t* position, int64_t n_rows, int32_t n_heads,
          int32_t head_dim, bool neox, cudaStream_t stream) {
  const int64_t n = n_rows * n_heads * (head_dim / 2);
  if (n > 0) rope_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, cos_sin, position, n_rows, n_heads, head_dim, neox);
}

void store_rows(const float* rows, float* cache, const int32_t* position, int64_t n_rows, int64_t width,
                cudaStream_t stream) {
  const int64_t n = n_rows * width;
  if (n > 0) store_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(rows, cache, position, n, width);
}

void swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream) {
  if (n > 0) swiglu_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, n);
}

void add(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n > 0) add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
}

void argmax_and_advance(const float* logits, int64_t n, int32_t* token, int32_t* position, int32_t advance,
                        cudaStream_t stream) {
  argmax_kernel<<<1, kArgmaxThreads, 0, stream>>>(logits, n, token, position, advance);
}

}  // namespace tessera::transformer::cuda

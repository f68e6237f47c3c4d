// layer_kernels.cu: the element-wise and reduction steps of a Transformer
// layer on the GPU (RMSNorm, RoPE, cache writes, SwiGLU, residual adds, the
// greedy argmax). Each follows the CPU block of the same name
// (plugins/arch/blocks): RMSNorm sums squares in double, RoPE reads the
// RopeTable's own cos/sin, so the two paths differ only in summation order.
#include <cuda_runtime.h>

#include "device_math.cuh"
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

// Rotates pair `pair` of one head vector at sequence position `pos`, read
// from src and written to dst (the same vector, or its cache row).
__device__ __forceinline__ void rope_pair(const float* src, float* dst, const float* __restrict__ cos_sin, int64_t pos,
                                          int32_t pair, int32_t head_dim, bool neox) {
  const int32_t half = head_dim / 2;
  const float c = cos_sin[pos * head_dim + pair], s = cos_sin[pos * head_dim + half + pair];
  const int32_t ia = neox ? pair : 2 * pair, ib = neox ? pair + half : 2 * pair + 1;
  float a = src[ia], b = src[ib];
  rotate_pair(a, b, c, s);
  dst[ia] = a;
  dst[ib] = b;
}

// One thread per (row, head, pair).
__global__ void rope_kernel(float* __restrict__ x, const float* __restrict__ cos_sin, const int32_t* position,
                            int64_t n_rows, int32_t n_heads, int32_t head_dim, bool neox) {
  const int32_t half = head_dim / 2;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * n_heads * half) return;
  const int64_t head = i / half;  // row * n_heads + h
  float* v = x + head * head_dim;
  rope_pair(v, v, cos_sin, *position + head / n_heads, static_cast<int32_t>(i % half), head_dim, neox);
}

// One thread per item: the query pairs (n_rows * n_head * half, rotated in
// place), then the key pairs (n_rows * n_kv * half, rotated into the key
// cache), then the values (n_rows * n_kv * head_dim, copied into the value
// cache). Row r's cache row is *position + r.
__global__ void rope_and_store_kernel(float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                                      float* __restrict__ k_cache, float* __restrict__ v_cache,
                                      const float* __restrict__ cos_sin, const int32_t* position, int64_t n_rows,
                                      int32_t n_head, int32_t n_kv, int32_t head_dim, bool neox) {
  const int32_t half = head_dim / 2;
  const int64_t q_items = n_rows * n_head * half, k_items = n_rows * n_kv * half;
  const int64_t kv_width = int64_t(n_kv) * head_dim;
  const int64_t first = *position;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < q_items) {
    const int64_t head = i / half;  // row * n_head + h
    float* vec = q + head * head_dim;
    rope_pair(vec, vec, cos_sin, first + head / n_head, static_cast<int32_t>(i % half), head_dim, neox);
    return;
  }
  i -= q_items;
  if (i < k_items) {
    const int64_t head = i / half;  // row * n_kv + h
    rope_pair(k + head * head_dim, k_cache + first * kv_width + head * head_dim, cos_sin, first + head / n_kv,
              static_cast<int32_t>(i % half), head_dim, neox);
    return;
  }
  i -= k_items;
  if (i < n_rows * kv_width) v_cache[first * kv_width + i] = v[i];
}

__global__ void store_rows_kernel(const float* __restrict__ rows, float* __restrict__ cache, const int32_t* position,
                                  int64_t total, int64_t width) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) cache[int64_t(*position) * width + i] = rows[i];
}

__global__ void swiglu_kernel(float* __restrict__ gate, const float* __restrict__ up, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  gate[i] = swiglu_value(gate[i], up[i]);
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

void rope_and_store(float* q, const float* k, const float* v, float* k_cache, float* v_cache, const float* cos_sin,
                    const int32_t* position, int64_t n_rows, int32_t n_head, int32_t n_kv_head, int32_t head_dim,
                    bool neox, cudaStream_t stream) {
  const int64_t n = n_rows * (int64_t(n_head + n_kv_head) * (head_dim / 2) + int64_t(n_kv_head) * head_dim);
  if (n > 0)
    rope_and_store_kernel<<<blocks_for(n), kThreads, 0, stream>>>(q, k, v, k_cache, v_cache, cos_sin, position,
                                                                  n_rows, n_head, n_kv_head, head_dim, neox);
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

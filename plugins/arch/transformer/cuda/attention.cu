// attention.cu: causal attention of query rows over a contiguous K/V cache.
//
// One block per (head, query row), kWarps warps: warp w takes keys w,
// w + kWarps, ... and keeps an online softmax (running maximum, running sum,
// and the weighted sum of values, head_dim / 32 values per lane); the warps'
// partial results are then merged. Memory is O(head_dim) per warp whatever
// the context length, as in FlashAttention's decode form.
#include <cuda_runtime.h>

#include "device_math.cuh"
#include "kernels.hpp"

namespace tessera::transformer::cuda {
namespace {

constexpr int kWarps = 4;

// grid: (n_head, n_rows); block: 32 * kWarps.
template <int PER_LANE>
__global__ void attention_kernel(const float* __restrict__ q, const float* __restrict__ k_cache,
                                 const float* __restrict__ v_cache, float* __restrict__ out, const int32_t* position,
                                 int32_t n_head, int32_t n_kv_head, float scale) {
  constexpr int head_dim = 32 * PER_LANE;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int h = blockIdx.x;
  const int64_t row = blockIdx.y;
  const int64_t last = int64_t(*position) + row;  // keys [0, last]
  const int kv_head = h / (n_head / n_kv_head);
  const int64_t kv_stride = int64_t(n_kv_head) * head_dim;

  const float* qr = q + (row * n_head + h) * head_dim;
  float qv[PER_LANE], acc[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) {
    qv[i] = qr[lane + 32 * i] * scale;
    acc[i] = 0.0f;
  }
  float running_max = -INFINITY, running_sum = 0.0f;
  for (int64_t t = warp; t <= last; t += kWarps) {
    const float* kr = k_cache + t * kv_stride + int64_t(kv_head) * head_dim;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) dot = fmaf(qv[i], kr[lane + 32 * i], dot);
    const float score = warp_sum(dot);
    const float new_max = fmaxf(running_max, score);
    const float correction = __expf(running_max - new_max);
    const float p = __expf(score - new_max);
    running_sum = running_sum * correction + p;
    const float* vr = v_cache + t * kv_stride + int64_t(kv_head) * head_dim;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) acc[i] = acc[i] * correction + p * vr[lane + 32 * i];
    running_max = new_max;
  }

  __shared__ float maxes[kWarps], sums[kWarps];
  __shared__ float values[kWarps][head_dim];
  if (lane == 0) {
    maxes[warp] = running_max;
    sums[warp] = running_sum;
  }
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) values[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  if (warp != 0) return;
  float m = -INFINITY;
  for (int w = 0; w < kWarps; ++w) m = fmaxf(m, maxes[w]);
  float total = 0.0f;
  float weights[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    // A warp that saw no key (short prefixes) holds max -inf and sum 0.
    weights[w] = sums[w] > 0.0f ? __expf(maxes[w] - m) : 0.0f;
    total += sums[w] * weights[w];
  }
  float* orow = out + (row * n_head + h) * head_dim;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) {
    float v = 0.0f;
    for (int w = 0; w < kWarps; ++w) v += values[w][lane + 32 * i] * weights[w];
    orow[lane + 32 * i] = v / total;
  }
}

template <int PER_LANE>
void launch(const float* q, const float* k_cache, const float* v_cache, float* out, const int32_t* position,
            int64_t n_rows, int32_t n_head, int32_t n_kv_head, float scale, cudaStream_t stream) {
  attention_kernel<PER_LANE><<<dim3(n_head, static_cast<unsigned>(n_rows)), 32 * kWarps, 0, stream>>>(
      q, k_cache, v_cache, out, position, n_head, n_kv_head, scale);
}

}  // namespace

void attention(const float* q, const float* k_cache, const float* v_cache, float* out, const int32_t* position,
               int64_t n_rows, int32_t n_head, int32_t n_kv_head, int32_t head_dim, float scale,
               cudaStream_t stream) {
  if (n_rows <= 0) return;
  switch (head_dim / 32) {
    case 1: return launch<1>(q, k_cache, v_cache, out, position, n_rows, n_head, n_kv_head, scale, stream);
    case 2: return launch<2>(q, k_cache, v_cache, out, position, n_rows, n_head, n_kv_head, scale, stream);
    case 3: return launch<3>(q, k_cache, v_cache, out, position, n_rows, n_head, n_kv_head, scale, stream);
    case 4: return launch<4>(q, k_cache, v_cache, out, position, n_rows, n_head, n_kv_head, scale, stream);
    case 8: return launch<8>(q, k_cache, v_cache, out, position, n_rows, n_head, n_kv_head, scale, stream);
    default: break;  // the model checks head_dim before any launch (CudaTransformer::create)
  }
}

}  // namespace tessera::transformer::cuda

// kernels.hpp: the CUDA kernels of the Transformer's GPU forward, as launch
// functions a C++ host file can call (no CUDA syntax here, C++17).
//
// Conventions: every pointer is device memory; activations are f32 rows,
// row-major; a weight matrix is its file's bytes, [out rows, in columns] in
// one of the WeightFormat encodings (ggml's block layouts, unchanged). Decode
// steps read the sequence position from device memory (`position`) so that a
// step can be captured once as a CUDA graph and replayed.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace tessera::transformer::cuda {

// The stored encodings the kernels decode. Values are tessera::DType's.
enum class WeightFormat : uint32_t {
  f32 = 0, f16 = 1, bf16 = 2, q4_0 = 6, q4_1 = 7, q8_0 = 8, q4_k = 9, q5_k = 10, q6_k = 11, q5_0 = 16, q5_1 = 17,
};

// A weight matrix in device memory: `rows` rows of `cols` values, each row
// `row_bytes` bytes in `format`. cols is a multiple of 32 (256 for K-quants).
struct DeviceMatrix {
  const uint8_t* data = nullptr;
  WeightFormat format = WeightFormat::f32;
  int64_t rows = 0, cols = 0, row_bytes = 0;
};

// What a product does with its output: overwrite it, or add to it (the
// residual add fused into the output and down projections).
enum class Store { overwrite, add };

// y[r, o] = sum_i x[r, i] * W[o, i] (+ bias[o]) for r < n_rows; with
// Store::add, y[r, o] += that (rounded as y + (sum + bias)).
// x: [n_rows, W.cols], y: [n_rows, W.rows], bias: [W.rows] or nullptr.
void matvec(const DeviceMatrix& w, const float* x, float* y, int64_t n_rows, const float* bias, cudaStream_t stream,
            Store store = Store::overwrite);

// One product of the shared activation rows: y = x·Wᵀ + bias.
struct MatvecTarget {
  DeviceMatrix w;
  const float* bias = nullptr;  // [w.rows] or nullptr
  float* y = nullptr;           // [n_rows, w.rows]
};

// targets[0..count) as matvec computes each, bit for bit, in one launch (the
// Q, K and V projections) when they share their format and count <= 3;
// otherwise one matvec each. Every matrix must have x's width
// (std::invalid_argument otherwise).
void matvec_group(const MatvecTarget* targets, int count, const float* x, int64_t n_rows, cudaStream_t stream);

// out = swiglu(x·Gᵀ, x·Uᵀ): the gate and up projections and SwiGLU in one
// launch, bit for bit matvec, matvec, swiglu. gate and up must have one
// shape (std::invalid_argument otherwise); where their formats differ it runs
// those three, using up_scratch ([n_rows, up.rows]).
// x: [n_rows, cols], out: [n_rows, gate.rows].
void matvec_swiglu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x, float* out, int64_t n_rows,
                   cudaStream_t stream, float* up_scratch);

// out[r, :] = W[ids[r], :] dequantized. ids: [n] (device), out: [n, W.cols].
void gather_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, cudaStream_t stream);

// out[r] = x[r] / rms(x[r]) * weight, rms over `dim` values with eps. x, out: [n_rows, dim].
void rms_norm(const float* x, const float* weight, float* out, int64_t n_rows, int64_t dim, float eps,
              cudaStream_t stream);

// Rotates n_heads head vectors of every row at position *position + r.
// x: [n_rows, n_heads, head_dim]; cos_sin: [max positions, 2, head_dim / 2]
// (cos then sin per position); neox pairs (i, i + d/2), else (2i, 2i + 1).
void rope(float* x, const float* cos_sin, const int32_t* position, int64_t n_rows, int32_t n_heads,
          int32_t head_dim, bool neox, cudaStream_t stream);

// cache[*position + r, :] = rows[r, :] for r < n_rows. rows: [n_rows, width]; cache: [max positions, width].
void store_rows(const float* rows, float* cache, const int32_t* position, int64_t n_rows, int64_t width,
                cudaStream_t stream);

// rope(q), rope(k), store_rows(k, k_cache), store_rows(v, v_cache) in one
// launch, with the same arithmetic; k itself is left unrotated (the rotated
// keys go only to the cache). q: [n_rows, n_head, head_dim]; k, v: [n_rows,
// n_kv_head, head_dim]; caches: [max positions, n_kv_head, head_dim].
void rope_and_store(float* q, const float* k, const float* v, float* k_cache, float* v_cache, const float* cos_sin,
                    const int32_t* position, int64_t n_rows, int32_t n_head, int32_t n_kv_head, int32_t head_dim,
                    bool neox, cudaStream_t stream);

// Causal attention of query rows at positions *position + r over the cached
// keys and values of positions [0, *position + r]. q, out: [n_rows, n_head,
// head_dim]; k_cache, v_cache: [max positions, n_kv_head, head_dim].
// head_dim <= 256, a multiple of 32; n_head a multiple of n_kv_head.
void attention(const float* q, const float* k_cache, const float* v_cache, float* out, const int32_t* position,
               int64_t n_rows, int32_t n_head, int32_t n_kv_head, int32_t head_dim, float scale,
               cudaStream_t stream);

// gate[i] = silu(gate[i]) * up[i] for i < n.
void swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream);

// x[i] += y[i] for i < n.
void add(float* x, const float* y, int64_t n, cudaStream_t stream);

// *token = the index of the largest of logits[0, n) (the lowest on ties; -1
// when any is NaN), then *position += advance.
void argmax_and_advance(const float* logits, int64_t n, int32_t* token, int32_t* position, int32_t advance,
                        cudaStream_t stream);

}  // namespace tessera::transformer::cuda

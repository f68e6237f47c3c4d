// flash_tile_ops.cpp: each inner loop of the flash kernel at the best
// instruction-set level this CPU runs (flash_tile_kernels.cpp's variants).
#include "flash_tile_ops.hpp"

#include "tessera/isa.hpp"

namespace tessera::plugins::flash {

TESSERA_ISA_DECLARE(void gather_tile(const KvLayerView& kv, std::span<const int32_t> table, int32_t kv_head,
                                     int64_t first, int32_t n, int32_t tile, float* kt, float* v))
TESSERA_ISA_DECLARE(void tile_scores(const float* q, const float* kt, int32_t head_dim, int32_t tile, int32_t n,
                                     float* s))
TESSERA_ISA_DECLARE(void online_softmax_update(float* s, int32_t n, const float* v, int32_t head_dim, float* m,
                                               float* l, float* acc))

void gather_tile(const KvLayerView& kv, std::span<const int32_t> table, int32_t kv_head, int64_t first, int32_t n,
                 int32_t tile, float* kt, float* v) {
  using Fn = void (*)(const KvLayerView&, std::span<const int32_t>, int32_t, int64_t, int32_t, int32_t, float*, float*);
  static const Fn fn = isa_select<Fn>(TESSERA_ISA_TABLE(gather_tile));
  fn(kv, table, kv_head, first, n, tile, kt, v);
}

void tile_scores(const float* q, const float* kt, int32_t head_dim, int32_t tile, int32_t n, float* s) {
  using Fn = void (*)(const float*, const float*, int32_t, int32_t, int32_t, float*);
  static const Fn fn = isa_select<Fn>(TESSERA_ISA_TABLE(tile_scores));
  fn(q, kt, head_dim, tile, n, s);
}

void online_softmax_update(float* s, int32_t n, const float* v, int32_t head_dim, float* m, float* l, float* acc) {
  using Fn = void (*)(float*, int32_t, const float*, int32_t, float*, float*, float*);
  static const Fn fn = isa_select<Fn>(TESSERA_ISA_TABLE(online_softmax_update));
  fn(s, n, v, head_dim, m, l, acc);
}

}  // namespace tessera::plugins::flash

// tessera/sequence_memory.hpp: kv_store / kv_load move rows between f32 and either
// pool dtype at an element offset, and the typed accessors refuse the other dtype.
#include <gtest/gtest.h>

#include <vector>

#include "tessera/sequence_memory.hpp"

namespace tessera {
namespace {

TEST(KvRows, StoreAndLoadRoundTripThroughBothDtypes) {
  const std::vector<float> row{1.0f, -2.5f, 0.1f, 65504.0f, 3.14159f, -0.0f, 1e-3f, 7.0f, 9.5f};
  for (DType dtype : {DType::f32, DType::f16}) {
    std::vector<float> f32_pool(32, -1.0f);
    std::vector<uint16_t> f16_pool(32, 0xffff);
    KvLayerView view;
    view.dtype = dtype;
    void* pool = dtype == DType::f16 ? static_cast<void*>(f16_pool.data()) : static_cast<void*>(f32_pool.data());
    view.k = pool;
    kv_store(view, view.k, 5, row.data(), static_cast<int64_t>(row.size()));
    std::vector<float> back(row.size());
    kv_load(view, view.k, 5, back.data(), static_cast<int64_t>(row.size()));
    for (size_t i = 0; i < row.size(); ++i) {
      const float want = dtype == DType::f16 ? f16_to_f32(f32_to_f16(row[i])) : row[i];
      EXPECT_EQ(back[i], want) << dtype_name(dtype) << " element " << i;
    }
    // Nothing outside [5, 5 + n) was touched.
    if (dtype == DType::f16) {
      EXPECT_EQ(f16_pool[4], 0xffff);
      EXPECT_EQ(f16_pool[5 + row.size()], 0xffff);
    } else {
      EXPECT_EQ(f32_pool[4], -1.0f);
      EXPECT_EQ(f32_pool[5 + row.size()], -1.0f);
    }
    EXPECT_EQ(view.k_f32() != nullptr, dtype == DType::f32);
    EXPECT_EQ(view.k_f16() != nullptr, dtype == DType::f16);
  }
}

TEST(KvRows, DtypeNamesAndElementSizes) {
  DType d = DType::bf16;
  EXPECT_TRUE(parse_kv_dtype("f16", &d));
  EXPECT_EQ(d, DType::f16);
  EXPECT_TRUE(parse_kv_dtype("f32", &d));
  EXPECT_EQ(d, DType::f32);
  EXPECT_FALSE(parse_kv_dtype("bf16", &d));
  EXPECT_EQ(d, DType::f32) << "a refused name leaves the output alone";
  EXPECT_EQ(kv_element_bytes(DType::f16), 2u);
  EXPECT_EQ(kv_element_bytes(DType::f32), 4u);
}

TEST(StateSpec, CountsEachKindOfLayer) {
  LayerMemorySpec recurrent;
  recurrent.kind = LayerMemoryKind::recurrent;
  recurrent.n_state_parts = 2;
  recurrent.state_elements = {3 * 96, 96 * 16, 0, 0};
  const std::vector<LayerMemorySpec> layers = {LayerMemorySpec::attention(2, 8), recurrent, {},
                                               LayerMemorySpec::attention(2, 8), LayerMemorySpec::attention(2, 8)};
  const SequenceStateSpec spec{4096, layers};
  EXPECT_EQ(spec.n_layer(), 5);
  EXPECT_EQ(spec.kv_bytes_per_token(), 2u * 3u * 2u * 8u * 4u) << "K and V of the three attention layers";
  EXPECT_EQ(spec.kv_bytes_per_token(kv_element_bytes(DType::f16)), 2u * 3u * 2u * 8u * 2u);
  EXPECT_EQ(spec.state_bytes_per_sequence(), (3u * 96 + 96 * 16) * 4);
  EXPECT_TRUE(spec.has(LayerMemoryKind::recurrent));
  EXPECT_TRUE(spec.has(LayerMemoryKind::attention));
  const std::vector<LayerMemorySpec> plain = {LayerMemorySpec::attention(1, 4)};
  EXPECT_FALSE((SequenceStateSpec{16, plain}.has(LayerMemoryKind::recurrent)));
}

}  // namespace
}  // namespace tessera

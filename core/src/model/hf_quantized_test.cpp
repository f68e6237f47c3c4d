// Repacking GPTQ/AWQ checkpoints into ggml blocks: every weight the blocks
// give equals s·(q − z) of the packed values, for each packing, with and
// without act-order; settings it cannot represent are refused by name.
#include "model/hf_quantized.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "tessera/half.hpp"

namespace tessera {
namespace {

using nlohmann::json;

// A layer's unpacked contents: q [out][in], zeros z [groups][out], scales s [groups][out], group of each input.
struct Layer {
  int64_t out = 0, in = 0;
  int bits = 4;
  std::vector<std::vector<int32_t>> q, z;
  std::vector<std::vector<float>> s;  // values representable in f16
  std::vector<int32_t> group;
  float weight(int64_t o, int64_t c) const { return s[group[c]][o] * static_cast<float>(q[o][c] - z[group[c]][o]); }
};

// Asymmetric zeros are drawn from [z_low, z_low + 2^bits − 1]: GPTQ v1 stores
// z − 1 in b bits (so 1..16 for 4 bits), v2 and AWQ store z (0..15).
Layer random_layer(int64_t out, int64_t in, int bits, int group_size, bool act_order, bool symmetric, uint32_t seed,
                   int z_low = 1) {
  std::mt19937 rng(seed);
  Layer l;
  l.out = out, l.in = in, l.bits = bits;
  const int64_t groups = group_size == -1 ? 1 : in / group_size;
  const int32_t max_q = (1 << bits) - 1;
  l.q.assign(out, std::vector<int32_t>(in));
  for (auto& row : l.q)
    for (auto& v : row) v = static_cast<int32_t>(rng() % (max_q + 1));
  l.z.assign(groups, std::vector<int32_t>(out));
  l.s.assign(groups, std::vector<float>(out));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < out; ++o) {
      l.z[g][o] = symmetric ? (1 << (bits - 1)) : static_cast<int32_t>(z_low + rng() % (max_q + 1));
      l.s[g][o] = f16_to_f32(f32_to_f16(0.001f + 0.01f * static_cast<float>(rng() % 1000) / 1000.0f));
    }
  l.group.resize(in);
  for (int64_t c = 0; c < in; ++c) l.group[c] = static_cast<int32_t>(group_size == -1 ? 0 : c / group_size);
  if (act_order) std::shuffle(l.group.begin(), l.group.end(), rng);
  return l;
}

// Packed tensors as the reference packers lay them out, kept alive for the TensorRefs.
struct Checkpoint {
  std::map<std::string, std::vector<std::byte>> data;
  std::vector<TensorRef> tensors;
  json config;

  void add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<std::byte> bytes) {
    TensorRef r;
    r.name = name;
    r.dtype = dtype;
    r.ndim = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) r.shape[i] = shape[i];
    r.nbytes = bytes.size();
    data[name] = std::move(bytes);
    r.data = data[name].data();
    tensors.push_back(r);
  }
  const TensorRef* find(std::string_view name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  Result<RepackedCheckpoint> repack() const {
    return repack_hf_quantized(config, tensors, [this](std::string_view n) { return find(n); }, "ckpt",
                               "ckpt/config.json");
  }
};

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<std::byte> f16_scales(const Layer& l) {
  std::vector<uint16_t> h;
  for (const auto& row : l.s)
    for (float v : row) h.push_back(f32_to_f16(v));
  return bytes_of(h);
}

// Values packed into 32-bit words as AutoGPTQ's pack() does: 32/b a word for
// 2, 4 and 8 bits; for 3 bits, 32 values in 3 words, spelled out as its
// loop writes them (values 10 and 21 split across words).
std::vector<uint32_t> gptq_words(const std::vector<int32_t>& v, int bits) {
  std::vector<uint32_t> words;
  if (bits != 3) {
    const size_t per = 32 / bits;
    words.assign(v.size() / per, 0);
    for (size_t i = 0; i < v.size(); ++i) words[i / per] |= uint32_t(v[i]) << (bits * (i % per));
    return words;
  }
  for (size_t i = 0; i < v.size(); i += 32) {
    const auto x = [&](size_t k) { return uint32_t(v[i + k]); };
    uint32_t w0 = 0, w1 = 0, w2 = 0;
    for (size_t k = 0; k < 10; ++k) w0 |= x(k) << (3 * k);
    w0 |= x(10) << 30;
    w1 |= (x(10) >> 2) & 1;
    for (size_t k = 0; k < 10; ++k) w1 |= x(11 + k) << (3 * k + 1);
    w1 |= x(21) << 31;
    w2 |= (x(21) >> 1) & 3;
    for (size_t k = 0; k < 10; ++k) w2 |= x(22 + k) << (3 * k + 2);
    words.insert(words.end(), {w0, w1, w2});
  }
  return words;
}

// GPTQ: qweight [in·b/32, out] along the input, qzeros [groups, out·b/32] along the output.
void add_gptq(Checkpoint& ck, const std::string& base, const Layer& l, int zero_offset, bool with_g_idx) {
  const int64_t words_in = l.in * l.bits / 32, words_out = l.out * l.bits / 32;
  std::vector<uint32_t> qw(static_cast<size_t>(words_in * l.out), 0);
  for (int64_t o = 0; o < l.out; ++o) {
    const std::vector<uint32_t> row = gptq_words(l.q[o], l.bits);
    for (int64_t k = 0; k < words_in; ++k) qw[k * l.out + o] = row[k];
  }
  const int64_t groups = static_cast<int64_t>(l.z.size());
  std::vector<uint32_t> qz;
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<int32_t> stored = l.z[g];
    for (auto& z : stored) z -= zero_offset;
    const std::vector<uint32_t> row = gptq_words(stored, l.bits);
    qz.insert(qz.end(), row.begin(), row.end());
  }
  ck.add(base + ".qweight", DType::i32, {words_in, l.out}, bytes_of(qw));
  ck.add(base + ".qzeros", DType::i32, {groups, words_out}, bytes_of(qz));
  ck.add(base + ".scales", DType::f16, {groups, l.out}, f16_scales(l));
  if (with_g_idx) ck.add(base + ".g_idx", DType::i32, {l.in}, bytes_of(l.group));
}

// AWQ GEMM: qweight [in, out/8], qzeros [groups, out/8], nibble i of a word = column order[i] of its eight.
void add_awq(Checkpoint& ck, const std::string& base, const Layer& l) {
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  std::vector<uint32_t> qw(static_cast<size_t>(l.in * l.out / 8), 0);
  for (int64_t c = 0; c < l.in; ++c)
    for (int64_t w = 0; w < l.out / 8; ++w)
      for (int i = 0; i < 8; ++i) qw[c * (l.out / 8) + w] |= uint32_t(l.q[w * 8 + order[i]][c]) << (4 * i);
  const int64_t groups = static_cast<int64_t>(l.z.size());
  std::vector<uint32_t> qz(static_cast<size_t>(groups * l.out / 8), 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t w = 0; w < l.out / 8; ++w)
      for (int i = 0; i < 8; ++i) qz[g * (l.out / 8) + w] |= uint32_t(l.z[g][w * 8 + order[i]]) << (4 * i);
  ck.add(base + ".qweight", DType::i32, {l.in, l.out / 8}, bytes_of(qw));
  ck.add(base + ".qzeros", DType::i32, {groups, l.out / 8}, bytes_of(qz));
  ck.add(base + ".scales", DType::f16, {groups, l.out}, f16_scales(l));
}

// The weight at (row o, stored column j) of ggml blocks, by GGUF's definitions.
float block_weight(const RepackedLinearWeight& w, int64_t o, int64_t j) {
  const int64_t per_row = w.in_features / 32;
  uint16_t d = 0, m = 0;
  if (w.dtype == DType::q4_0) {
    const std::byte* b = w.blocks.data() + (o * per_row + j / 32) * 18;
    std::memcpy(&d, b, 2);
    const auto byte = static_cast<uint8_t>(b[2 + (j % 32) % 16]);
    const int x = (j % 32) < 16 ? (byte & 0xF) : (byte >> 4);
    return f16_to_f32(d) * static_cast<float>(x - 8);
  }
  if (w.dtype == DType::q4_1) {
    const std::byte* b = w.blocks.data() + (o * per_row + j / 32) * 20;
    std::memcpy(&d, b, 2);
    std::memcpy(&m, b + 2, 2);
    const auto byte = static_cast<uint8_t>(b[4 + (j % 32) % 16]);
    const int q = (j % 32) < 16 ? (byte & 0xF) : (byte >> 4);
    return f16_to_f32(d) * static_cast<float>(q) + f16_to_f32(m);
  }
  if (w.dtype == DType::q5_0) {
    const std::byte* b = w.blocks.data() + (o * per_row + j / 32) * 22;
    uint32_t qh = 0;
    std::memcpy(&d, b, 2);
    std::memcpy(&qh, b + 2, 4);
    const int k = static_cast<int>(j % 32);
    const auto byte = static_cast<uint8_t>(b[6 + k % 16]);
    const int x = (k < 16 ? (byte & 0xF) : (byte >> 4)) | static_cast<int>(((qh >> k) & 1) << 4);
    return f16_to_f32(d) * static_cast<float>(x - 16);
  }
  const std::byte* b = w.blocks.data() + (o * per_row + j / 32) * 34;
  std::memcpy(&d, b, 2);
  return f16_to_f32(d) * static_cast<float>(static_cast<int8_t>(b[2 + j % 32]));
}

// Every weight equals s·(q − z) exactly, whichever block type holds it.
void expect_weights(const RepackedLinearWeight& w, const Layer& l) {
  ASSERT_EQ(w.out_features, l.out);
  ASSERT_EQ(w.in_features, l.in);
  for (int64_t o = 0; o < l.out; ++o)
    for (int64_t j = 0; j < l.in; ++j) {
      const int64_t c = w.input_order.empty() ? j : w.input_order[j];
      ASSERT_EQ(block_weight(w, o, j), l.weight(o, c)) << "row " << o << ", input " << c;
    }
}

json gptq_config(int bits, int group, bool desc_act, const char* format = "gptq") {
  return {{"quantization_config",
           {{"quant_method", "gptq"}, {"bits", bits}, {"group_size", group}, {"desc_act", desc_act},
            {"sym", true}, {"checkpoint_format", format}}}};
}

// Asymmetric zeros: −s·z is rarely an f16, so the blocks are Q5_0.
TEST(HfQuantized, GptqV1FourBitGroupsGiveTheirWeightsExactly) {
  Checkpoint ck;
  ck.config = gptq_config(4, 64, false);
  const Layer l = random_layer(24, 128, 4, 64, false, false, 1);
  add_gptq(ck, "model.layers.0.mlp.up_proj", l, 1, true);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->method, "gptq");
  ASSERT_EQ(r->weights.size(), 1u);
  EXPECT_EQ(r->weights[0].name, "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(r->weights[0].dtype, DType::q5_0);
  EXPECT_TRUE(r->weights[0].input_order.empty()) << "g_idx in column order needs no gather";
  expect_weights(r->weights[0], l);
  EXPECT_EQ(r->consumed.size(), 4u);
}

// The grid's ends: a v1 zero stored as 15 is z = 16 (stored + 1, unmasked, as
// the exllama kernels read it), a v2 zero of 0 is 0; q − z spans [−16, 15].
TEST(HfQuantized, ZerosAtTheEndsOfTheGridKeepTheirWeights) {
  for (const int offset : {1, 0}) {
    Checkpoint ck;
    ck.config = gptq_config(4, 32, false, offset == 1 ? "gptq" : "gptq_v2");
    Layer l = random_layer(8, 64, 4, 32, false, false, 11, offset);
    for (auto& row : l.z) std::fill(row.begin(), row.end(), offset == 1 ? 16 : 0);
    l.q[0][0] = 0;
    l.q[1][1] = 15;
    add_gptq(ck, "w", l, offset, false);
    auto r = ck.repack();
    ASSERT_TRUE(r.ok()) << r.status().message();
    expect_weights(r->weights[0], l);
  }
}

// z = 8: every q − z + 8 is a nibble, so the smallest, Q4_0, holds them.
TEST(HfQuantized, SymmetricFourBitIsQ40) {
  Checkpoint ck;
  ck.config = gptq_config(4, -1, false);
  const Layer l = random_layer(16, 96, 4, -1, false, true, 2);
  add_gptq(ck, "w", l, 1, false);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->weights[0].dtype, DType::q4_0);
  expect_weights(r->weights[0], l);
}

TEST(HfQuantized, ActOrderStoresColumnsByGroupAndSaysWhere) {
  Checkpoint ck;
  ck.config = gptq_config(4, 32, true);
  const Layer l = random_layer(16, 128, 4, 32, true, false, 3);
  add_gptq(ck, "w", l, 1, true);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& order = r->weights[0].input_order;
  ASSERT_EQ(order.size(), 128u);
  std::vector<int32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int32_t i = 0; i < 128; ++i) ASSERT_EQ(sorted[i], i) << "the order is a permutation";
  for (size_t j = 1; j < order.size(); ++j)
    ASSERT_LE(l.group[order[j - 1]], l.group[order[j]]) << "stored columns run group by group";
  expect_weights(r->weights[0], l);
}

TEST(HfQuantized, GptqV2StoresZerosWithoutTheOffset) {
  Checkpoint ck;
  ck.config = gptq_config(4, 32, false, "gptq_v2");
  const Layer l = random_layer(8, 64, 4, 32, false, false, 4, /*z_low=*/0);
  add_gptq(ck, "w", l, 0, false);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok()) << r.status().message();
  expect_weights(r->weights[0], l);
}

TEST(HfQuantized, SymmetricEightBitGptqIsExactQ80) {
  Checkpoint ck;
  ck.config = gptq_config(8, 32, false);
  const Layer l = random_layer(8, 64, 8, 32, false, true, 5);
  add_gptq(ck, "w", l, 1, false);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->weights[0].dtype, DType::q8_0);
  expect_weights(r->weights[0], l);
}

// 3 bits (values across word boundaries) and 2 bits, v1 and v2, with and
// without act-order: every weight exact, in Q4_0 (every z of 2 or 3 bits is
// in [0, 8], so every q − z + 8 is a nibble).
TEST(HfQuantized, TwoAndThreeBitGroupsGiveTheirWeightsExactly) {
  for (const int bits : {2, 3})
    for (const bool symmetric : {true, false})
      for (const bool act_order : {false, true})
        for (const int offset : {1, 0}) {
          const std::string what = std::to_string(bits) + " bits" + (symmetric ? ", symmetric" : ", asymmetric") +
                                   (act_order ? ", act-order" : "") + (offset == 1 ? ", v1" : ", v2");
          Checkpoint ck;
          ck.config = gptq_config(bits, 32, act_order, offset == 1 ? "gptq" : "gptq_v2");
          const Layer l = random_layer(32, 128, bits, 32, act_order, symmetric, 20 + bits, offset);
          add_gptq(ck, "w", l, offset, act_order);
          auto r = ck.repack();
          ASSERT_TRUE(r.ok()) << what << ": " << r.status().message();
          EXPECT_EQ(r->weights[0].dtype, DType::q4_0) << what;
          expect_weights(r->weights[0], l);
        }
}

// Zeros of 3-bit groups fill words only for whole 32s of output rows.
TEST(HfQuantized, ThreeBitZerosOfPartialWordsAreCorrupt) {
  Checkpoint ck;
  ck.config = gptq_config(3, 32, false);
  const Layer l = random_layer(32, 64, 3, 32, false, false, 12);
  add_gptq(ck, "w", l, 1, false);
  ck.tensors[0].shape[1] = 16;  // qweight says 16 outputs: their zeros are 1.5 words
  ck.tensors[2].shape[1] = 16;
  auto r = ck.repack();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::corrupt_data);
  EXPECT_NE(r.status().message().find("whole 32-bit words"), std::string::npos) << r.status().message();
}

TEST(HfQuantized, AsymmetricEightBitIsRefused) {
  Checkpoint ck;
  ck.config = gptq_config(8, 32, false);
  add_gptq(ck, "w", random_layer(8, 64, 8, 32, false, false, 6), 1, false);
  auto r = ck.repack();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::unsupported);
  EXPECT_NE(r.status().message().find("symmetric"), std::string::npos) << r.status().message();
}

TEST(HfQuantized, AwqGemmNibbleOrderGivesItsWeights) {
  Checkpoint ck;
  ck.config = {{"quantization_config",
                {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 64}, {"zero_point", true}, {"version", "GEMM"}}}};
  const Layer l = random_layer(32, 128, 4, 64, false, false, 7, /*z_low=*/0);
  add_awq(ck, "model.layers.3.self_attn.o_proj", l);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->method, "awq");
  EXPECT_TRUE(r->weights[0].input_order.empty());
  expect_weights(r->weights[0], l);
}

TEST(HfQuantized, ConfigsOfOtherMethodsChangeNothing) {
  Checkpoint ck;
  ck.config = {{"quantization_config", {{"quant_method", "compressed-tensors"}}}};
  add_gptq(ck, "w", random_layer(8, 64, 4, 32, false, false, 8), 1, false);
  auto r = ck.repack();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->method.empty());
  ck.config = json::object();
  EXPECT_TRUE(ck.repack()->method.empty());
}

// Each case breaks one thing; the message names the folder and what is wrong.
TEST(HfQuantized, RefusesWhatItCannotRepresentOrWhatDisagrees) {
  struct Case {
    const char* what;
    json config;
    std::function<void(Checkpoint&)> edit;
    StatusCode code;
    const char* says;
  };
  const Layer l = random_layer(8, 64, 4, 32, false, false, 9);
  const std::vector<Case> cases = {
      {"5 bits", gptq_config(5, 32, false), nullptr, StatusCode::unsupported, "5-bit"},
      {"groups of 16", gptq_config(4, 16, false), nullptr, StatusCode::unsupported, "group_size 16"},
      {"unknown format", gptq_config(4, 32, false, "marlin"), nullptr, StatusCode::unsupported, "marlin"},
      {"AWQ GEMV",
       {{"quantization_config", {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}, {"version", "gemv"}}}},
       nullptr, StatusCode::unsupported, "gemv"},
      {"no bits", {{"quantization_config", {{"quant_method", "gptq"}, {"group_size", 32}}}}, nullptr,
       StatusCode::corrupt_data, "bits"},
      {"scales of another shape", gptq_config(4, 32, false),
       [](Checkpoint& ck) { ck.tensors[2].shape[0] = 3; }, StatusCode::corrupt_data, "scales"},
      {"zeros as floats", gptq_config(4, 32, false), [](Checkpoint& ck) { ck.tensors[1].dtype = DType::f32; },
       StatusCode::corrupt_data, "w.qzeros"},
      {"g_idx out of range", gptq_config(4, 32, false),
       [](Checkpoint& ck) {
         std::vector<int32_t> g(64, 0);
         g[5] = 7;
         ck.add("w.g_idx", DType::i32, {64}, bytes_of(g));
       },
       StatusCode::corrupt_data, "g_idx[5] = 7"},
      {"a group split across blocks", gptq_config(4, 32, true),
       [](Checkpoint& ck) {
         std::vector<int32_t> g(64, 0);
         for (int c = 0; c < 64; ++c) g[c] = c < 40 ? 0 : 1;
         ck.add("w.g_idx", DType::i32, {64}, bytes_of(g));
       },
       StatusCode::unsupported, "whole number"},
      {"packed and plain", gptq_config(4, 32, false),
       [](Checkpoint& ck) { ck.add("w.weight", DType::f16, {8, 64}, std::vector<std::byte>(8 * 64 * 2)); },
       StatusCode::corrupt_data, "both"},
      {"bits that wrap in 32 bits", gptq_config(4, 32, false),
       [](Checkpoint& ck) { ck.config["quantization_config"]["bits"] = 4294967300LL; }, StatusCode::unsupported,
       "4294967300"},
      {"an f32 scale f16 cannot hold", gptq_config(4, 32, false),
       [](Checkpoint& ck) {
         std::vector<float> s(2 * 8, 0.01f);
         s[3] = 1e-9f;
         ck.tensors[2].dtype = DType::f32;
         ck.data["w.scales"] = bytes_of(s);
         ck.tensors[2].data = ck.data["w.scales"].data();
         ck.tensors[2].nbytes = ck.data["w.scales"].size();
       },
       StatusCode::unsupported, "an f16 holds exactly"},
      {"a qweight dimension that overflows", gptq_config(4, 32, false),
       [](Checkpoint& ck) {
         ck.tensors[0].shape[0] = int64_t{1} << 61;
         ck.tensors[0].shape[1] = 0;
       },
       StatusCode::corrupt_data, "no sensible shape"},
      {"missing zeros", gptq_config(4, 32, false), [](Checkpoint& ck) { ck.tensors[1].name = "w.qzerosX"; },
       StatusCode::corrupt_data, "'w.qzeros' is missing"},
  };
  for (const auto& c : cases) {
    Checkpoint ck;
    ck.config = c.config;
    add_gptq(ck, "w", l, 1, false);
    if (c.edit) c.edit(ck);
    auto r = ck.repack();
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), c.code) << c.what << ": " << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << c.what << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("ckpt"), std::string::npos) << c.what << ": " << r.status().message();
  }
}

TEST(HfQuantized, AQuantizedConfigWithNoPackedTensorIsCorrupt) {
  Checkpoint ck;
  ck.config = gptq_config(4, 32, false);
  auto r = ck.repack();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no tensor ends in '.qweight'"), std::string::npos);
}

}  // namespace
}  // namespace tessera

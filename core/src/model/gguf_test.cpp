// GGUF reader and writer: round trips of every metadata and tensor type, and a
// clear error (never a crash) for each kind of damaged file.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/gguf_bytes_testing.hpp"

namespace tessera {
namespace {

using test::RawGguf;

std::span<const std::byte> as_bytes(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

Result<std::shared_ptr<GgufFile>> parse(const std::vector<std::byte>& bytes) {
  return GgufFile::open_memory(as_bytes(bytes), "bad.gguf");
}

// Expects a failure whose message names the file and contains `fragment`.
void expect_error(const std::vector<std::byte>& bytes, const std::string& fragment) {
  auto r = parse(bytes);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(r.status().message().find("bad.gguf"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return v;
}

TEST(GgufRoundTrip, EveryMetadataType) {
  GgufWriter w;
  w.set("k.u8", uint8_t{200});
  w.set("k.i8", int8_t{-100});
  w.set("k.u16", uint16_t{60000});
  w.set("k.i16", int16_t{-30000});
  w.set("k.u32", uint32_t{4000000000u});
  w.set("k.i32", int32_t{-2000000000});
  w.set("k.f32", 1.5f);
  w.set("k.bool", true);
  w.set("k.string", std::string("héllo"));
  w.set("k.u64", uint64_t{18000000000000000000ull});
  w.set("k.i64", int64_t{-9000000000000000000ll});
  w.set("k.f64", 2.25);
  w.set_string_array("k.strings", {"a", "", "ccc"});
  w.set_f32_array("k.floats", {0.5f, -1.0f});
  w.set_i32_array("k.ints", {1, -2, 3});
  GgufArray nested{GgufType::array, {}};
  nested.items.emplace_back(GgufArray{GgufType::u8, {uint8_t{1}, uint8_t{2}}});
  nested.items.emplace_back(GgufArray{GgufType::u8, {}});
  w.set("k.nested", nested);
  w.set("k.u32", uint32_t{7});  // replacing keeps one entry
  w.set("k.eps", 1e-5f);

  auto r = parse(w.to_bytes());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufFile& f = *r.value();
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 17u);
  EXPECT_EQ(f.get_float("k.eps"), 1e-5) << "an f32 reads back as its shortest decimal";
  EXPECT_EQ(f.find("k.u8")->type(), GgufType::u8);
  EXPECT_EQ(f.get_int("k.u8"), 200);
  EXPECT_EQ(f.get_int("k.i8"), -100);
  EXPECT_EQ(f.get_int("k.u16"), 60000);
  EXPECT_EQ(f.get_int("k.i16"), -30000);
  EXPECT_EQ(f.get_int("k.u32"), 7);
  EXPECT_EQ(f.get_int("k.i32"), -2000000000);
  EXPECT_EQ(f.get_float("k.f32"), 1.5);
  EXPECT_EQ(f.get_bool("k.bool"), true);
  EXPECT_EQ(f.get_string("k.string"), "héllo");
  EXPECT_EQ(f.get_int("k.u64"), std::nullopt) << "does not fit in int64";
  EXPECT_EQ(std::get<uint64_t>(f.find("k.u64")->value), 18000000000000000000ull);
  EXPECT_EQ(f.get_int("k.i64"), -9000000000000000000ll);
  EXPECT_EQ(f.get_float("k.f64"), 2.25);
  EXPECT_EQ(f.get_string_array("k.strings"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.get_float_array("k.floats"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(f.get_int_array("k.ints"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.array_length("k.ints"), 3u);
  const GgufArray* n = f.find("k.nested")->as_array();
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->items.size(), 2u);
  EXPECT_EQ(n->items[0].as_array()->items[1].as_int(), 2);
  EXPECT_TRUE(n->items[1].as_array()->items.empty());
  // Type mismatches give nullopt rather than a wrong value.
  EXPECT_EQ(f.get_string("k.u8"), std::nullopt);
  EXPECT_EQ(f.get_bool("k.u8"), std::nullopt);
  EXPECT_EQ(f.get_string_array("k.ints"), std::nullopt);
  EXPECT_EQ(f.get_int("absent"), std::nullopt);
  EXPECT_EQ(f.metadata()[0].first, "k.u8") << "file order kept";
}

TEST(GgufRoundTrip, EveryTensorTypeWithAlignment) {
  for (uint32_t alignment : {32u, 64u, 8u}) {
    GgufWriter w(alignment);
    std::vector<std::pair<std::string, DType>> cases;
    std::vector<std::vector<std::byte>> payloads;
    uint8_t seed = 1;
    for (uint32_t id = 0; id < 40; ++id) {
      const auto dt = dtype_from_ggml(id);
      if (!dt) continue;
      const auto info = dtype_info(*dt);
      const std::vector<uint64_t> dims = {info.block_elems * 2, 3};  // 3 rows of 2 blocks
      payloads.push_back(pattern(2 * info.block_bytes * 3, seed++));
      const std::string name = "t." + std::string(dtype_name(*dt));
      ASSERT_TRUE(w.add_tensor(name, *dt, dims, payloads.back()).ok()) << name;
      cases.emplace_back(name, *dt);
    }
    ASSERT_EQ(cases.size(), 18u);
    auto r = parse(w.to_bytes());
    ASSERT_TRUE(r.ok()) << r.status().message();
    const GgufFile& f = *r.value();
    EXPECT_EQ(f.alignment(), alignment);
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    ASSERT_EQ(f.tensors().size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      const GgufTensorInfo* t = f.find_tensor(cases[i].first);
      ASSERT_NE(t, nullptr) << cases[i].first;
      EXPECT_EQ(t->dtype, cases[i].second);
      EXPECT_EQ(t->dims[1], 3u);
      EXPECT_EQ(t->nbytes, payloads[i].size());
      EXPECT_EQ(t->offset % alignment, 0u);
      EXPECT_EQ(std::memcmp(t->data, payloads[i].data(), payloads[i].size()), 0) << cases[i].first;
    }
  }
}

TEST(GgufRoundTrip, WriteToDiskAndMap) {
  const std::string dir = test::scratch_dir("gguf_disk");
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(w.add_tensor("x", DType::f32, {3, 2}, std::as_bytes(std::span(values))).ok());
  ASSERT_TRUE(w.write(dir + "/m.gguf").ok());
  auto r = GgufFile::open(dir + "/m.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value()->architecture(), "llama");
  const auto* t = r.value()->find_tensor("x");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(reinterpret_cast<const float*>(t->data)[5], 6.0f);
  EXPECT_EQ(r.value()->path(), dir + "/m.gguf");
}

TEST(GgufWriterChecks, RefusesBadTensors) {
  GgufWriter w;
  std::vector<std::byte> data(16);
  EXPECT_FALSE(w.add_tensor("a", DType::f32, {3}, data).ok()) << "size mismatch";
  EXPECT_FALSE(w.add_tensor("a", DType::q4_0, {16}, data).ok()) << "not a multiple of the block";
  EXPECT_FALSE(w.add_tensor("a", DType::q8_1, {32}, data).ok()) << "no ggml type";
  EXPECT_FALSE(w.add_tensor("a", DType::f32, {}, data).ok()) << "no dims";
  ASSERT_TRUE(w.add_tensor("a", DType::f32, {4}, data).ok());
  EXPECT_FALSE(w.add_tensor("a", DType::f32, {4}, data).ok()) << "duplicate";
}

TEST(GgufErrors, MissingFileIsUnavailable) {
  auto r = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::unavailable);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(GgufErrors, WrongMagicAndVersions) {
  RawGguf bad_magic;
  bad_magic.raw("GGML", 4).u32(3).u64(0).u64(0);
  expect_error(bad_magic.bytes, "not a GGUF file");
  RawGguf v1;
  v1.header(0, 0, 1);
  expect_error(v1.bytes, "version 1 is not supported");
  RawGguf v9;
  v9.header(0, 0, 9);
  expect_error(v9.bytes, "unsupported GGUF version 9");
  RawGguf be;
  be.header(0, 0, 0x03000000u);
  expect_error(be.bytes, "big-endian");
  RawGguf v2;
  v2.header(0, 0, 2);
  EXPECT_TRUE(parse(v2.bytes).ok()) << "version 2 has the same layout";
  expect_error({}, "truncated");
}

TEST(GgufErrors, TruncatedAtEveryCutPoint) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "bb"});
  w.set("nested", GgufArray{GgufType::array, {GgufArray{GgufType::i16, {int16_t{1}}}}});
  std::vector<float> v(8, 1.0f);
  ASSERT_TRUE(w.add_tensor("x", DType::f32, {8}, std::as_bytes(std::span(v))).ok());
  ASSERT_TRUE(w.add_tensor("y", DType::f32, {4}, std::as_bytes(std::span(v).first(4))).ok());
  const auto full = w.to_bytes();
  ASSERT_TRUE(parse(full).ok());
  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::vector<std::byte> part(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    auto r = parse(part);
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_NE(r.status().message().find("bad.gguf"), std::string::npos);
  }
}

TEST(GgufErrors, AbsurdCounts) {
  RawGguf many_tensors;
  many_tensors.header(uint64_t{1} << 60, 0);
  expect_error(many_tensors.bytes, "tensor count 1152921504606846976 cannot fit");
  RawGguf many_kv;
  many_kv.header(0, ~uint64_t{0});
  expect_error(many_kv.bytes, "metadata count");
  RawGguf long_array;
  long_array.header(0, 1).str("arr").u32(9).u32(8).u64(uint64_t{1} << 62);
  expect_error(long_array.bytes, "array of 4611686018427387904 string items cannot fit");
  RawGguf deep;
  deep.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < 100; ++i) deep.u32(9).u64(1);
  expect_error(deep.bytes, "nested deeper");
}

TEST(GgufErrors, StringLengthPastEof) {
  RawGguf key;
  key.header(0, 1).u64(1000).raw("abc", 3).zeros(16);
  expect_error(key.bytes, "string length 1000");
  RawGguf value;
  value.header(0, 1).str("k").u32(8).u64(~uint64_t{0});
  expect_error(value.bytes, "string length 18446744073709551615");
  RawGguf name;
  name.header(1, 0).u64(uint64_t{1} << 40);
  name.zeros(64);
  expect_error(name.bytes, "string length 1099511627776");
}

TEST(GgufErrors, BadMetadataValues) {
  RawGguf bad_type;
  bad_type.header(0, 1).str("k").u32(13).u32(0);
  expect_error(bad_type.bytes, "metadata 'k' has unknown value type 13");
  RawGguf bad_bool;
  bad_bool.header(0, 1).str("k").u32(7).u8(5);
  expect_error(bad_bool.bytes, "bool byte is 5");
  RawGguf dup;
  dup.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
  expect_error(dup.bytes, "duplicate metadata key 'k'");
  RawGguf align;
  align.header(0, 1).kv_u32("general.alignment", 24);
  expect_error(align.bytes, "general.alignment must be a power of two");
}

// A file with one metadata entry and the given tensor infos, then `data_bytes` of data.
std::vector<std::byte> with_tensors(const std::vector<std::tuple<std::string, std::vector<uint64_t>, uint32_t, uint64_t>>& ts,
                                    size_t data_bytes) {
  RawGguf g;
  g.header(ts.size(), 0);
  for (const auto& [name, dims, type, offset] : ts) g.tensor(name, dims, type, offset);
  g.pad_to(32).zeros(data_bytes);
  return g.bytes;
}

TEST(GgufErrors, TensorChecks) {
  EXPECT_TRUE(parse(with_tensors({{"a", {8}, 0, 0}, {"b", {8}, 0, 32}}, 64)).ok());
  expect_error(with_tensors({{"blk.0.attn_q.weight", {8, 2}, 0, 0}}, 32),
               "tensor 'blk.0.attn_q.weight' data [");
  expect_error(with_tensors({{"blk.0.attn_q.weight", {8, 2}, 0, 0}}, 32), "extends past end of file (size");
  expect_error(with_tensors({{"a", {8}, 0, ~uint64_t{0} - 31}}, 32), "extends past end of file");
  expect_error(with_tensors({{"a", {16}, 0, 0}, {"b", {8}, 0, 32}}, 96), "tensors 'a' [0, 64) and 'b' [32, 64) overlap");
  expect_error(with_tensors({{"a", {8}, 0, 4}}, 64), "data offset 4 is not a multiple of the alignment 32");
  expect_error(with_tensors({{"a", {8}, 23, 0}}, 64), "tensor 'a' has unsupported ggml type 23");
  expect_error(with_tensors({{"a", {8}, 0, 0}, {"a", {8}, 0, 32}}, 64), "duplicate tensor name 'a'");
  expect_error(with_tensors({{"a", {16}, 2, 0}}, 64), "not a multiple of the q4_0 block size 32");
  expect_error(with_tensors({{"a", {8, 0}, 0, 0}}, 64), "invalid dimension 0");
  expect_error(with_tensors({{"a", {1, 1, 1, 1, 1}, 0, 0}}, 64), "has 5 dimensions");
  expect_error(with_tensors({{"a", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0}}, 64), "element count overflows");
}

TEST(GgufErrors, UnsupportedTypeIsUnsupportedCode) {
  auto r = parse(with_tensors({{"a", {8}, 16, 0}}, 64));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::unsupported);
}

TEST(GgmlTypes, MappingMatchesTheSpec) {
  EXPECT_EQ(dtype_from_ggml(0), DType::f32);
  EXPECT_EQ(dtype_from_ggml(1), DType::f16);
  EXPECT_EQ(dtype_from_ggml(2), DType::q4_0);
  EXPECT_EQ(dtype_from_ggml(3), DType::q4_1);
  EXPECT_EQ(dtype_from_ggml(6), DType::q5_0);
  EXPECT_EQ(dtype_from_ggml(7), DType::q5_1);
  EXPECT_EQ(dtype_from_ggml(8), DType::q8_0);
  EXPECT_EQ(dtype_from_ggml(10), DType::q2_k);
  EXPECT_EQ(dtype_from_ggml(11), DType::q3_k);
  EXPECT_EQ(dtype_from_ggml(12), DType::q4_k);
  EXPECT_EQ(dtype_from_ggml(13), DType::q5_k);
  EXPECT_EQ(dtype_from_ggml(14), DType::q6_k);
  EXPECT_EQ(dtype_from_ggml(24), DType::i8);
  EXPECT_EQ(dtype_from_ggml(25), DType::i16);
  EXPECT_EQ(dtype_from_ggml(26), DType::i32);
  EXPECT_EQ(dtype_from_ggml(27), DType::i64);
  EXPECT_EQ(dtype_from_ggml(28), DType::f64);
  EXPECT_EQ(dtype_from_ggml(30), DType::bf16);
  EXPECT_EQ(dtype_from_ggml(9), std::nullopt) << "Q8_1 is an activation type, not stored";
  EXPECT_EQ(ggml_from_dtype(DType::q4_1), 3u);
  EXPECT_EQ(ggml_from_dtype(DType::q5_1), 7u);
  EXPECT_EQ(ggml_from_dtype(DType::u8), std::nullopt);
}

}  // namespace
}  // namespace tessera

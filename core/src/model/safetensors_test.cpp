// safetensors reader: good files, sharded checkpoints and each kind of bad header.
#include <gtest/gtest.h>

#include <cstring>

#include "model/gguf_bytes_testing.hpp"
#include "model/safetensors.hpp"
#include "model/safetensors_bytes_testing.hpp"

namespace tessera {
namespace {

using test::SafetensorsBuilder;

Result<std::shared_ptr<SafetensorsFile>> parse_safetensors(const std::vector<std::byte>& b) {
  return SafetensorsFile::open_memory({b.data(), b.size()}, "bad.safetensors");
}

void expect_safetensors_error(const std::vector<std::byte>& bytes, const std::string& fragment) {
  auto r = parse_safetensors(bytes);
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(r.status().message().find("bad.safetensors"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(Safetensors, ReadsEverySupportedDtype) {
  SafetensorsBuilder b;
  b.add("a", "F32", {2, 3}, 24).add("b", "F16", {4}, 8).add("c", "BF16", {1, 2}, 4);
  b.add("d", "I32", {2}, 8).add("e", "I8", {3}, 3).add("f", "U8", {5}, 5);
  b.header()["__metadata__"] = {{"format", "pt"}};
  const auto bytes = b.bytes();
  auto r = parse_safetensors(bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& f = *r.value();
  EXPECT_EQ(f.tensors().size(), 6u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const auto* a = f.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::f32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(std::memcmp(a->data, b.data().data(), 24), 0);
  EXPECT_EQ(f.find("b")->dtype, DType::f16);
  EXPECT_EQ(f.find("c")->dtype, DType::bf16);
  EXPECT_EQ(f.find("d")->dtype, DType::i32);
  EXPECT_EQ(f.find("e")->dtype, DType::i8);
  const auto* u = f.find("f");
  EXPECT_EQ(u->dtype, DType::u8);
  EXPECT_EQ(std::memcmp(u->data, b.data().data() + 24 + 8 + 4 + 8 + 3, 5), 0);
  EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(Safetensors, BadHeaders) {
  expect_safetensors_error({}, "too short");
  SafetensorsBuilder ok;
  ok.add("a", "F32", {2}, 8);
  expect_safetensors_error(ok.with_header_text("{\"a\": "), "not valid JSON");
  expect_safetensors_error(ok.with_header_text("{\"a\": 1e999}"), "not valid JSON");  // nlohmann's out_of_range
  expect_safetensors_error(ok.with_header_text("[1, 2]"), "not a JSON object");
  auto huge = ok.bytes();
  const uint64_t n = ~uint64_t{0};
  std::memcpy(huge.data(), &n, 8);
  expect_safetensors_error(huge, "header length 18446744073709551615 exceeds");
  expect_safetensors_error(ok.with_header_text(R"({"a": {"dtype": "F32", "shape": [2]}})"), "'data_offsets' must be");
  expect_safetensors_error(ok.with_header_text(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})"),
                           "missing string 'dtype'");
  expect_safetensors_error(ok.with_header_text(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})"),
               "non-negative integers");
  expect_safetensors_error(ok.with_header_text(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})"),
               "begin <= end");
  expect_safetensors_error(ok.with_header_text(R"({"a": 5})"), "entry is not an object");
}

TEST(Safetensors, OffsetsOutOfRange) {
  SafetensorsBuilder b;
  b.add("w", "F32", {2}, 8);
  b.header()["w"]["data_offsets"] = {0, 4096};
  b.header()["w"]["shape"] = {1024};
  expect_safetensors_error(b.bytes(), "tensor 'w' data [0, 4096) extends past the 8 bytes of data");
}

TEST(Safetensors, UnknownDtype) {
  SafetensorsBuilder b;
  b.add("w", "F8_E4M3", {8}, 8);
  auto r = parse_safetensors(b.bytes());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::unsupported);
  EXPECT_NE(r.status().message().find("unsupported dtype 'F8_E4M3'"), std::string::npos) << r.status().message();
}

TEST(Safetensors, ShapeSizeMismatchAndOverlap) {
  SafetensorsBuilder b;
  b.add("w", "F32", {3}, 8);
  expect_safetensors_error(b.bytes(), "shape and dtype F32 need 12 bytes but data_offsets give 8");
  SafetensorsBuilder o;
  o.add("a", "F32", {2}, 8).add("b", "F32", {2}, 8);
  o.header()["b"]["data_offsets"] = {4, 12};
  expect_safetensors_error(o.bytes(), "overlap");
  SafetensorsBuilder big;
  big.add("a", "F32", {1, 1, 1, 1, 1}, 4);
  EXPECT_FALSE(parse_safetensors(big.bytes()).ok()) << "5-D tensors are refused";
}

TEST(Safetensors, ShardedCheckpoint) {
  const std::string dir = test::scratch_dir("sharded");
  SafetensorsBuilder s1, s2;
  s1.add("model.embed_tokens.weight", "F32", {4, 2}, 32);
  s2.add("model.norm.weight", "F32", {2}, 8);
  test::write_file(dir + "/model-00001-of-00002.safetensors", s1.bytes());
  test::write_file(dir + "/model-00002-of-00002.safetensors", s2.bytes());
  test::write_text(dir + "/model.safetensors.index.json", R"({"metadata": {}, "weight_map": {
      "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
      "model.norm.weight": "model-00002-of-00002.safetensors"}})");
  auto r = open_safetensors_checkpoint(dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_NE(r.value()[1]->find("model.norm.weight"), nullptr);

  // A tensor listed in the wrong shard.
  test::write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {
      "model.embed_tokens.weight": "model-00002-of-00002.safetensors"}})");
  auto wrong = open_safetensors_checkpoint(dir);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("listed in shard 'model-00002-of-00002.safetensors' but not found"),
            std::string::npos)
      << wrong.status().message();

  // A shard path escaping the folder, a missing shard, a bad index.
  test::write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {"x": "../evil.safetensors"}})");
  auto escape = open_safetensors_checkpoint(dir);
  ASSERT_FALSE(escape.ok());
  EXPECT_NE(escape.status().message().find("not a plain file name"), std::string::npos);
  test::write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {"x": "absent.safetensors"}})");
  auto missing = open_safetensors_checkpoint(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent.safetensors"), std::string::npos);
  test::write_text(dir + "/model.safetensors.index.json", R"({"weight_map": 3})");
  EXPECT_FALSE(open_safetensors_checkpoint(dir).ok());
  test::write_text(dir + "/model.safetensors.index.json", "{");
  auto bad_json = open_safetensors_checkpoint(dir);
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace tessera

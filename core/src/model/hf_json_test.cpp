// Hugging Face JSON as Python writes it: bare Infinity/-Infinity/NaN tokens
// and transformers 5's {"__float__": ...} become numbers; strings, malformed
// text and nesting no config has are handled.
#include "model/hf_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

namespace tessera {
namespace {

using nlohmann::json;

json parsed(std::string_view text) {
  auto j = parse_hf_json(text, "test.json");
  EXPECT_TRUE(j.ok()) << j.status().message();
  return j.ok() ? *j : json();
}

TEST(HfJson, PythonsNonFiniteTokensBecomeNumbers) {
  const json j = parsed(R"({"limit": [0.0, Infinity], "low": -Infinity, "nan": NaN, "n": 3})");
  ASSERT_TRUE(j["limit"][1].is_number_float());
  EXPECT_TRUE(std::isinf(j["limit"][1].get<double>()) && j["limit"][1].get<double>() > 0);
  EXPECT_EQ(j["limit"][0].get<double>(), 0.0);
  EXPECT_TRUE(std::isinf(j["low"].get<double>()) && j["low"].get<double>() < 0);
  EXPECT_TRUE(std::isnan(j["nan"].get<double>()));
  EXPECT_EQ(j["n"].get<int>(), 3);
}

TEST(HfJson, Transformers5FloatObjectsBecomeNumbers) {
  const json j = parsed(R"({"limit": [0.0, {"__float__": "Infinity"}], "x": {"__float__": "-Infinity"}})");
  EXPECT_TRUE(std::isinf(j["limit"][1].get<double>()));
  EXPECT_LT(j["x"].get<double>(), 0);
  // Objects that only look alike stay objects.
  const json other = parsed(R"({"a": {"__float__": "1.5"}, "b": {"__float__": "Infinity", "c": 1}})");
  EXPECT_TRUE(other["a"].is_object());
  EXPECT_TRUE(other["b"].is_object());
}

TEST(HfJson, TokensInsideStringsAreLeftAlone) {
  const json j = parsed(R"({"Infinity": "NaN and Infinity", "q": "say \"Infinity\" \\", "k": -Infinity})");
  EXPECT_EQ(j["Infinity"], "NaN and Infinity");
  EXPECT_EQ(j["q"], "say \"Infinity\" \\");
  EXPECT_TRUE(std::isinf(j["k"].get<double>()));
}

TEST(HfJson, MalformedTextIsCorruptDataNamingTheSource) {
  // 1e999 is a parse error of another kind (nlohmann's out_of_range).
  for (std::string_view text : {"{\"a\": Inf}", "{\"a\": Infinityx}", "{\"a\": NaN", "[Infinity,", "\"open", "[1e999]"}) {
    auto j = parse_hf_json(text, "bad.json");
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.status().code(), StatusCode::corrupt_data) << text;
    EXPECT_NE(j.status().message().find("bad.json"), std::string::npos) << j.status().message();
  }
}

TEST(HfJson, NestingDeeperThanAnyConfigIsRefused) {
  EXPECT_TRUE(parse_hf_json(std::string(60, '[') + std::string(60, ']'), "ok.json").ok());
  for (size_t depth : {100u, 100000u}) {
    auto j = parse_hf_json(std::string(depth, '[') + std::string(depth, ']'), "deep.json");
    ASSERT_FALSE(j.ok()) << depth;
    EXPECT_NE(j.status().message().find("nested deeper"), std::string::npos) << j.status().message();
  }
}

TEST(HfJson, AMissingFileOrADirectoryIsNamed) {
  auto missing = read_hf_json(std::filesystem::path("/nonexistent/tessera/config.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::not_found);
  auto directory = read_hf_json(std::filesystem::temp_directory_path());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("is a directory"), std::string::npos) << directory.status().message();
}

}  // namespace
}  // namespace tessera

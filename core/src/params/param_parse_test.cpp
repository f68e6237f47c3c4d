#include "params/param_parse.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(ByteSize, UnitsBinaryAndDecimal) {
  EXPECT_EQ(*parse_byte_size("512MiB"), 512ll << 20);
  EXPECT_EQ(*parse_byte_size("2GB"), 2000000000ll);
  EXPECT_EQ(*parse_byte_size("64 KiB"), 65536);
  EXPECT_EQ(*parse_byte_size("1048576"), 1048576);
  EXPECT_EQ(*parse_byte_size("1.5GiB"), 3ll << 29);
}

TEST(ByteSize, RejectsNonsense) {
  EXPECT_FALSE(parse_byte_size("lots").ok());
  EXPECT_FALSE(parse_byte_size("12 parsecs").ok());
  EXPECT_FALSE(parse_byte_size("-5MiB").ok());
  EXPECT_FALSE(parse_byte_size("").ok());
  EXPECT_FALSE(parse_byte_size("1e30GB").ok());
}

TEST(ParamLiteral, EachTypeParsesAndChecks) {
  const ParamSpec i = param_int("n", "1", 0, 10, "");
  EXPECT_EQ(std::get<int64_t>(*parse_param_literal(i, "7")), 7);
  EXPECT_FALSE(parse_param_literal(i, "11").ok());
  EXPECT_FALSE(parse_param_literal(i, "1.5").ok());
  EXPECT_FALSE(parse_param_literal(i, "seven").ok());

  const ParamSpec r = param_real("x", "0.5", 0, 1, "");
  EXPECT_DOUBLE_EQ(std::get<double>(*parse_param_literal(r, "1")), 1.0);
  EXPECT_FALSE(parse_param_literal(r, "1.5").ok());

  const ParamSpec s = param_string("mode", "\"a\"", "a|b", "");
  EXPECT_EQ(std::get<std::string>(*parse_param_literal(s, "b")), "b");
  EXPECT_EQ(std::get<std::string>(*parse_param_literal(s, "\"a\"")), "a");
  auto bad = parse_param_literal(s, "c");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("a,b"), std::string::npos) << bad.status().message();

  const ParamSpec b = param_bool("on", "false", "");
  EXPECT_TRUE(std::get<bool>(*parse_param_literal(b, "true")));
  EXPECT_FALSE(parse_param_literal(b, "yes").ok());

  const ParamSpec m = param_bytes("memory", "\"1MiB\"", 1024, 1e12, "");
  EXPECT_EQ(std::get<int64_t>(*parse_param_literal(m, "512MiB")), 512ll << 20);
  EXPECT_FALSE(parse_param_literal(m, "10B").ok());  // below the range
}

}  // namespace
}  // namespace tessera

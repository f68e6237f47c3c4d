// read_file: contents byte for byte, and one clear error per way a path can be wrong.
#include "io/read_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "support/scratch_dir.hpp"

namespace tessera {
namespace {

std::filesystem::path scratch(const char* name) { return test::scratch_dir("tessera_read_file_test") / name; }

TEST(ReadFile, ReturnsEveryByteIncludingNulsAndNoNewlineTranslation) {
  const auto path = scratch("bytes.bin");
  const std::string bytes("a\0b\r\nc\xff", 7);
  std::ofstream(path, std::ios::binary) << bytes;
  auto text = read_file(path, "text file");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, bytes);
}

TEST(ReadFile, AnEmptyFileIsEmptyNotAnError) {
  const auto path = scratch("empty.txt");
  std::ofstream(path, std::ios::binary).flush();
  auto text = read_file(path, "text file");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_TRUE(text->empty());
}

TEST(ReadFile, AMissingFileIsNotFoundAndNamed) {
  auto text = read_file(scratch("missing.toml"), "pipeline file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::not_found);
  EXPECT_NE(text.status().message().find("pipeline file '"), std::string::npos) << text.status().message();
  EXPECT_NE(text.status().message().find("missing.toml' does not exist"), std::string::npos);
}

TEST(ReadFile, ADirectoryIsRefusedRatherThanReadAsEmpty) {
  const auto dir = scratch("a_directory");
  std::filesystem::create_directories(dir);
  auto text = read_file(dir, "text file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(text.status().message().find("is a directory"), std::string::npos) << text.status().message();
}

// A file that opens but fails on read (here with EIO: nothing is mapped at
// address 0 of this process) is an error, not an empty text.
TEST(ReadFile, AReadErrorIsNotAnEmptyFile) {
  if (!std::filesystem::exists("/proc/self/mem")) GTEST_SKIP() << "no /proc/self/mem on this system";
  auto text = read_file("/proc/self/mem", "text file");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("cannot be read: "), std::string::npos) << text.status().message();
}

TEST(ReadFile, AnUnreadableFileSaysWhy) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: file permissions do not stop reads";
  const auto path = scratch("secret.txt");
  std::ofstream(path) << "x";
  ::chmod(path.c_str(), 0);
  auto text = read_file(path, "text file");
  ::chmod(path.c_str(), 0644);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("cannot be read: Permission denied"), std::string::npos)
      << text.status().message();
}

}  // namespace
}  // namespace tessera

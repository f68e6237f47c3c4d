// check_output_path: an existing file only with force, never a folder, never in a missing folder.
#include "io/output_path.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/scratch_dir.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

TEST(OutputPath, ExistingFilesNeedForceFoldersAndMissingFoldersNever) {
  const fs::path dir = test::scratch_dir("tessera_output_path_test");
  EXPECT_TRUE(check_output_path((dir / "new.gguf").string(), false).ok());
  const fs::path existing = dir / "old.gguf";
  std::ofstream(existing) << "keep";
  const Status refused = check_output_path(existing.string(), false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::invalid_argument);
  EXPECT_NE(refused.message().find("exists; pass --force to replace it"), std::string::npos) << refused.message();
  EXPECT_TRUE(check_output_path(existing.string(), true).ok());
  const Status folder = check_output_path(dir.string(), true);
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.message().find("is a directory"), std::string::npos) << folder.message();
  const Status missing = check_output_path((dir / "no_such_folder" / "x.gguf").string(), false);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos) << missing.message();
  EXPECT_FALSE(fs::exists(dir / "new.gguf"));
}

}  // namespace
}  // namespace tessera

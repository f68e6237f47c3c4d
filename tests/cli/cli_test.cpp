// Bad input at the command line: one clear message and the documented exit
// code (2 for usage and configuration mistakes), never a crash.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "run_command.hpp"
#include "tessera/plugin.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
const std::string kCli = TESSERA_CLI;
const std::string kFixtures = TESSERA_FIXTURE_DIR;

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("tessera_cli_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

fs::path write_file(const std::string& name, const std::string& text) {
  const fs::path p = scratch_dir() / name;
  std::ofstream(p) << text;
  return p;
}

// A pipeline whose plugins all come from the fixture folder.
std::string fixture_pipeline(const std::string& extra = "") {
  return "[plugins]\npaths = [\"" + kFixtures + "/first\"]\n[model]\npath = \"model.gguf\"\n"
         "[kvcache]\nplugin = \"fixture_kv\"\n[attention]\nplugin = \"fixture_attn\"\n"
         "[decoding]\nplugin = \"fixture_fixed\"\n" + extra;
}

void expect_one_clear_error(const CommandResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Aborted"), std::string::npos) << r.err;
}

TEST(Cli, NoArgumentsPrintsUsageAndExits2) {
  auto r = run_command(kCli);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("usage: tessera"), std::string::npos);
}

TEST(Cli, UnknownCommandExits2) {
  auto r = run_command(kCli + " frobnicate");
  expect_one_clear_error(r, 2, "unknown command 'frobnicate'");
}

TEST(Cli, VersionAndHelp) {
  EXPECT_EQ(run_command(kCli + " --version").exit_code, 0);
  auto h = run_command(kCli + " run --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--metrics-json"), std::string::npos);
}

TEST(Cli, RunWithoutPipelineExits2) {
  expect_one_clear_error(run_command(kCli + " run"), 2, "needs a pipeline file");
}

TEST(Cli, UnknownFlagExits2) {
  expect_one_clear_error(run_command(kCli + " run x.toml --no-such-flag"), 2, "no-such-flag");
}

TEST(Cli, MissingPipelineFileExits2) {
  expect_one_clear_error(run_command(kCli + " run /nonexistent/p.toml"), 2, "does not exist");
}

TEST(Cli, DirectoryInsteadOfAFileExits2) {
  expect_one_clear_error(run_command(kCli + " run " + scratch_dir().string()), 2, "is a directory");
}

TEST(Cli, TomlSyntaxErrorNamesFileLineColumn) {
  const auto p = write_file("syntax.toml", "[model]\npath = \"m.gguf\n");
  expect_one_clear_error(run_command(kCli + " run " + p.string()), 2, p.string() + ":2:");
}

TEST(Cli, WrongParameterTypeExits2WithLocation) {
  const auto p = write_file("type.toml", fixture_pipeline("block_size = \"big\"\n"));
  // block_size is appended to the [decoding] section, whose plugin does not declare it.
  auto r = run_command(kCli + " run " + p.string());
  expect_one_clear_error(r, 2, p.string() + ":11:1");
  const auto q = write_file("type2.toml", fixture_pipeline("token = \"seven\"\n"));
  expect_one_clear_error(run_command(kCli + " run " + q.string()), 2, "'token' must be a integer, not a string");
}

TEST(Cli, SetOverrideIsValidatedToo) {
  const auto p = write_file("set.toml", fixture_pipeline());
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " --set decoding.token=9999"), 2,
                         "out of range [0, 1000]");
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " --set nodot=1"), 2, "section.key=value");
}

TEST(Cli, PluginFromAnotherAbiIsNotUsedAndSaysWhyInVerboseListing) {
  auto r = run_command(kCli + " plugins -v --path " + kFixtures + "/future");
  EXPECT_EQ(r.exit_code, 0);
  // The fixture keeps this SDK's minor and claims major 99.
  const std::string expected = "built for Tessera plugin ABI 99." + std::to_string(kAbiMinor) +
                               ", but this Tessera speaks ABI " + std::to_string(kAbiMajor) + ".";
  EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
}

TEST(Cli, AFileThatIsNotALibraryIsRejectedWithAReason) {
  const fs::path dir = scratch_dir() / "bogus_plugins";
  fs::create_directories(dir);
  std::ofstream(dir / "libnotreally.so") << "plain text\n";
  auto r = run_command(kCli + " plugins -v --path " + dir.string());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("libnotreally.so: cannot be loaded as a shared library"), std::string::npos) << r.out;
}

TEST(Cli, DescribeAPluginPrintsItsParameters) {
  auto r = run_command(kCli + " plugins --path " + kFixtures + "/first --describe fixture_fixed");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("token"), std::string::npos);
  EXPECT_NE(r.out.find("the token to emit"), std::string::npos);
  EXPECT_NE(r.out.find("one of {fast,exact}"), std::string::npos) << r.out;
  auto core = run_command(kCli + " plugins --describe sampling");
  EXPECT_EQ(core.exit_code, 0);
  EXPECT_NE(core.out.find("temperature"), std::string::npos);
  expect_one_clear_error(run_command(kCli + " plugins --describe nosuch"), 2, "no plugin named 'nosuch'");
}

TEST(Cli, MissingModelFileIsAClearError) {
  const auto p = write_file("nomodel.toml", fixture_pipeline());
  auto r = run_command(kCli + " run " + p.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
}

// --set takes its argument whole: a TOML array or text with commas is one value.
TEST(Cli, SetValuesMayHoldCommas) {
  const auto p = write_file("commas.toml", fixture_pipeline());
  // --output applies only with several prompts: accepted, the array was read as one.
  auto r = run_command(kCli + " run " + p.string() + " --set 'run.prompts=[\"a\", \"b\"]' --output " +
                       (scratch_dir() / "commas.jsonl").string());
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;  // went on to open the (absent) model
  r = run_command(kCli + " run " + p.string() + " --set 'run.prompt=Hello, world'");
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessera::test

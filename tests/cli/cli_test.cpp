// Bad input at the command line: one clear message and the documented exit
// code (2 for usage and configuration mistakes), never a crash.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/scratch_dir.hpp"
#include "model_required.hpp"
#include "run_command.hpp"
#include "tessera/plugin.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;
const std::string kCli = TESSERA_CLI;
const std::string kFixtures = TESSERA_FIXTURE_DIR;
const fs::path kModel = fs::path(TESSERA_SOURCE_DIR) / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kQuickstart = (fs::path(TESSERA_SOURCE_DIR) / "pipelines" / "quickstart.toml").string();

// Tests that run the default model say so when it is absent (they are skipped
// with the reason printed, as the integration tests are).
#define SKIP_WITHOUT_MODEL() \
  if (!fs::exists(kModel)) TESSERA_MODEL_ABSENT(kModel.string() + " is absent: run scripts/fetch-model.sh")

fs::path scratch_dir() { return tessera::test::scratch_dir("tessera_cli_test"); }

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

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Files in `dir` whose name starts with `prefix` (the temporary files an
// output file is written through are ".NAME.tmp.XXXXXX").
std::vector<std::string> files_starting_with(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename().string());
  return out;
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

// Whether CUDA can run here is one line, a device list or "not usable: why"
// (never the driver's raw message over several lines), in both places.
TEST(Cli, VersionAndPluginsSayWhetherCudaIsUsableInOneLine) {
  for (const std::string command : {" --version", " plugins"}) {
    const auto r = run_command(kCli + command);
    ASSERT_EQ(r.exit_code, 0) << command;
    const size_t at = r.out.find("\ncuda: ");
    ASSERT_NE(at, std::string::npos) << command << ": " << r.out;
    EXPECT_EQ(r.out.find("\ncuda: ", at + 1), std::string::npos) << command << ": two cuda lines";
    const std::string line = r.out.substr(at + 7, r.out.find('\n', at + 1) - at - 7);
    EXPECT_TRUE(line.rfind("device ", 0) == 0 || line.rfind("not usable: ", 0) == 0) << command << ": " << line;
  }
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

// Without -v: a folder the user named that does not exist is a warning, and
// the listing says which files were found but not loaded, and why.
TEST(Cli, PluginProblemsShowWithoutVerbose) {
  const std::string missing = (scratch_dir() / "no-such-plugin-folder").string();
  auto r = run_command(kCli + " plugins --path " + missing + " --path " + kFixtures + "/future");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("plugin folder " + missing + " does not exist"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("found but not loaded"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("built for Tessera plugin ABI 99."), std::string::npos) << r.out;
}

// A pipeline asking for a plugin that was found but refused says why, not
// only that no such plugin exists.
TEST(Cli, APipelineAskingForARefusedPluginSaysWhy) {
  std::string pipeline = fixture_pipeline();
  pipeline.replace(pipeline.find("/first"), 6, "/future");
  const auto p = write_file("refused.toml", pipeline);
  auto r = run_command(kCli + " run " + p.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("found but not loaded"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("built for Tessera plugin ABI 99."), std::string::npos) << r.err;
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

// Issue 16, item 1: arguments beyond a command's one positional are errors.
TEST(Cli, ExtraPositionalArgumentsAreErrors) {
  const auto p = write_file("extra.toml", fixture_pipeline());
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " b.toml"), 2,
                         "unexpected argument 'b.toml': tessera run takes one PIPELINE");
  expect_one_clear_error(run_command(kCli + " run a.toml b.toml"), 2, "unexpected argument 'b.toml'");
  // A prompt written without --prompt.
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " 'Why is the sky blue?'"), 2,
                         "a prompt goes after --prompt");
  expect_one_clear_error(run_command(kCli + " inspect m.gguf extra"), 2,
                         "unexpected argument 'extra': tessera inspect takes one MODEL");
  expect_one_clear_error(run_command(kCli + " bench a.toml b.toml c.toml"), 2,
                         "unexpected arguments 'b.toml', 'c.toml'");
  expect_one_clear_error(run_command(kCli + " perplexity a.toml b.toml --text t.txt"), 2,
                         "unexpected argument 'b.toml'");
  expect_one_clear_error(run_command(kCli + " plugins attention/paged"), 2,
                         "unexpected argument 'attention/paged': tessera plugins takes no arguments");
  // After "--" too.
  expect_one_clear_error(run_command(kCli + " run -- a.toml b.toml"), 2, "unexpected argument 'b.toml'");
}

// Item 2: an option that takes a value, followed by another option instead.
TEST(Cli, AnOptionIsNotTakenAsTheValueOfTheOneBefore) {
  const auto p = write_file("value.toml", fixture_pipeline());
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " --prompt --max-tokens 5"), 2,
                         "--prompt needs a value; '--max-tokens' is an option. To pass text starting with '--', "
                         "write --prompt=--text");
  // Every option that takes a value, in every command; --name=value forms and short options count too.
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " --seed --set=run.chat=true"), 2,
                         "--seed needs a value; '--set=run.chat=true' is an option");
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " --metrics-json -q"), 2,
                         "--metrics-json needs a value; '-q' is an option");
  expect_one_clear_error(run_command(kCli + " run " + p.string() + " --set --threads 2"), 2,
                         "--set needs a value; '--threads' is an option");
  expect_one_clear_error(run_command(kCli + " bench " + p.string() + " --max-batch-tokens --json"), 2,
                         "--max-batch-tokens needs a value; '--json' is an option");
  expect_one_clear_error(run_command(kCli + " perplexity " + p.string() + " --text --ctx 64"), 2,
                         "--text needs a value; '--ctx' is an option");
  expect_one_clear_error(run_command(kCli + " plugins --describe --verbose"), 2,
                         "--describe needs a value; '--verbose' is an option");
  // Text that only looks like an option is a value, and so is anything after "=".
  auto r = run_command(kCli + " run " + p.string() + " --prompt --not-an-option -q");
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;  // went on to open the (absent) model
  r = run_command(kCli + " run " + p.string() + " --prompt=--max-tokens -q");
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
}

TEST(Cli, PromptStartingWithDashesIsPassedWithEquals) {
  SKIP_WITHOUT_MODEL();
  const fs::path dir = scratch_dir();
  const std::string common = kCli + " run " + kQuickstart + " -q --threads 1 --max-tokens 1 --set run.chat=false";
  auto a = run_command(common + " --prompt=--max-tokens --metrics-json " + (dir / "dash_a.json").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b =
      run_command(common + " --set 'run.prompt=\"--max-tokens\"' --metrics-json " + (dir / "dash_b.json").string());
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto ja = nlohmann::json::parse(slurp(dir / "dash_a.json"));
  const auto jb = nlohmann::json::parse(slurp(dir / "dash_b.json"));
  EXPECT_EQ(ja["prompt_tokens"], jb["prompt_tokens"]);
  EXPECT_EQ(ja["token_ids"], jb["token_ids"]);
}

// Item 3: --output with a single prompt is refused, after the pipeline is read
// (it decides whether there are several) and before the model loads.
TEST(Cli, OutputWithASinglePromptIsAnError) {
  const fs::path dir = scratch_dir();
  const auto single = write_file("single.toml", fixture_pipeline());
  const fs::path out = dir / "single_out.jsonl";
  expect_one_clear_error(run_command(kCli + " run " + single.string() + " --output " + out.string()), 2,
                         "--output writes one JSON line per request and only applies with --prompts-file or [run] "
                         "prompts");
  EXPECT_FALSE(fs::exists(out));
  // With [run] prompts it applies: the run goes on to the model (absent here).
  const auto several = write_file("several.toml", fixture_pipeline("[run]\nprompts = [\"a\", \"b\"]\n"));
  auto r = run_command(kCli + " run " + several.string() + " --output " + out.string());
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--output"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// Item 4: the flags several commands share have one name, type and help.
TEST(Cli, SharedFlagsAreTheSameInEveryCommand) {
  // Each command's help for a flag, with the padding and line breaks (which
  // depend on the command's longest option) squeezed out.
  auto help_line = [](const std::string& command, const std::string& flag) {
    auto r = run_command(kCli + " " + command + " --help");
    EXPECT_EQ(r.exit_code, 0) << command;
    std::istringstream lines(r.out);
    std::string squeezed;
    for (std::string line; std::getline(lines, line);) {
      std::istringstream in(line);
      std::vector<std::string> words;
      for (std::string w; in >> w;) words.push_back(w);
      const bool option_line = !words.empty() && words[0][0] == '-';
      if (!squeezed.empty() && (words.empty() || option_line)) break;  // the next option: done
      // "-v, --verbose  debug logging", "--set arg  override ...", then continuation lines
      const bool found = option_line && (words[0] == flag || (words.size() > 1 && words[0].size() == 3 &&
                                                              words[0].back() == ',' && words[1] == flag));
      if (!found && squeezed.empty()) continue;
      for (const auto& w : words) squeezed += (squeezed.empty() ? "" : " ") + w;
    }
    if (squeezed.empty()) ADD_FAILURE() << command << " --help has no " << flag << ":\n" << r.out;
    return squeezed;
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> shared = {
      {"--set", {"run", "bench", "perplexity"}},
      {"--threads", {"run", "bench", "perplexity"}},
      {"--max-batch-tokens", {"run", "bench"}},
      {"--json", {"bench", "perplexity", "inspect"}},
      {"--verbose", {"run", "bench", "perplexity", "inspect", "plugins"}},
      {"--quiet", {"run", "bench", "perplexity", "inspect", "plugins"}},
  };
  for (const auto& [flag, commands] : shared) {
    const std::string first = help_line(commands.front(), flag);
    for (const auto& command : commands) EXPECT_EQ(help_line(command, flag), first) << flag << " in " << command;
  }
  // --threads is [run] threads, validated as such, in run as in bench and perplexity.
  const auto p = write_file("threads.toml", fixture_pipeline());
  const auto text = write_file("threads.txt", "some text\n");
  for (const std::string& command : std::vector<std::string>{"run", "bench", "perplexity --text " + text.string()}) {
    auto r = run_command(kCli + " " + command + " " + p.string() + " --threads -1");
    expect_one_clear_error(r, 2, "'threads' = -1 is out of range");
    EXPECT_EQ(r.err.find("model.gguf"), std::string::npos) << r.err;
  }
}

TEST(Cli, RunTakesThreads) {
  SKIP_WITHOUT_MODEL();
  const fs::path m = scratch_dir() / "threads_metrics.json";
  auto r = run_command(kCli + " run " + kQuickstart + " -q --threads 1 --max-tokens 1 --metrics-json " + m.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(m))["threads"], 1);
}

// --reference: a model scored against itself diverges nowhere, in both the
// text and the JSON report; a reference that cannot be read is one clear error.
TEST(Cli, PerplexityAgainstAReference) {
  SKIP_WITHOUT_MODEL();
  std::string passage;
  for (int i = 0; i < 20; ++i)
    passage += "In the beginning God created the heaven and the earth. And the earth was without form, and void. ";
  const auto text = write_file("reference.txt", passage);
  const std::string common =
      kCli + " perplexity " + kQuickstart + " -q --threads 1 --ctx 64 --chunks 2 --text " + text.string();
  auto r = run_command(common + " --reference " + kQuickstart + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_TRUE(report.contains("against_reference")) << r.out;
  const auto& c = report["against_reference"];
  EXPECT_EQ(c["mean_kl_divergence"].get<double>(), 0.0);
  EXPECT_EQ(c["max_kl_divergence"].get<double>(), 0.0);
  EXPECT_EQ(c["ppl_ratio"].get<double>(), 1.0);
  EXPECT_EQ(c["same_top_token"].get<double>(), 1.0);
  EXPECT_EQ(c["reference_ppl"].get<double>(), report["ppl"].get<double>());
  EXPECT_EQ(report["scored_tokens"], 2 * (64 / 2 - 1));

  // Against the same weights with exact f32 activations (pipelines/exact.toml):
  // close, but not the same distributions, and scored by the other pipeline.
  const std::string exact = (fs::path(TESSERA_SOURCE_DIR) / "pipelines" / "exact.toml").string();
  r = run_command(common + " --reference " + exact + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto against_exact = nlohmann::json::parse(r.out)["against_reference"];
  EXPECT_GT(against_exact["mean_kl_divergence"].get<double>(), 0.0);
  EXPECT_LT(against_exact["mean_kl_divergence"].get<double>(), 0.01);
  EXPECT_NE(against_exact["reference_ppl"].get<double>(), report["ppl"].get<double>());
  EXPECT_GT(against_exact["mean_entropy"].get<double>(), 0.0);
  EXPECT_NEAR(against_exact["mean_entropy"].get<double>(), against_exact["reference_mean_entropy"].get<double>(), 0.01);

  r = run_command(common + " --reference " + kQuickstart);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ppl / reference ppl = 1.00000 +/- 0.00000 (paired)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KL divergence from the reference = 0.000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("same top token 100.00%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(difference +0.00000 +/- 0.00000, paired)"), std::string::npos) << r.out;

  // --set edits the pipeline under test, not the reference (`--set
  // model.path=Q.gguf` must not score Q against itself): a reference whose
  // context is shorter than the windows stays so.
  const auto short_reference =
      write_file("short_reference.toml", "[model]\npath = \"" + kModel.string() +
                                             "\"\n[kvcache]\nplugin = \"contiguous\"\n[attention]\nplugin = "
                                             "\"paged\"\n[decoding]\nplugin = \"greedy\"\n[run]\ncontext = 32\n");
  expect_one_clear_error(run_command(common + " --set run.context=64 --reference " + short_reference.string()), 2,
                         "--ctx 64 exceeds the reference model's context of 32");

  const auto missing = (scratch_dir() / "no-such-reference.toml").string();
  expect_one_clear_error(run_command(common + " --reference " + missing), 2, "--reference " + missing + ": ");
}

// Item 5: a step that may take no token never finishes a batch.
TEST(Cli, MaxBatchTokensBelowOneIsAnError) {
  const auto p = write_file("batch.toml", fixture_pipeline("[run]\nprompts = [\"a\", \"b\"]\n"));
  // `timeout`: before the fix a batch run spun forever.
  for (const std::string value : {"0", "-3"}) {
    for (const std::string command : {"run", "bench"}) {
      expect_one_clear_error(
          run_command("timeout 60 " + kCli + " " + command + " " + p.string() + " --max-batch-tokens " + value), 2,
          "--max-batch-tokens must be at least 1 (the tokens one forward step may take), not " + value);
    }
  }
  expect_one_clear_error(run_command("timeout 60 " + kCli + " run " + p.string() + " --max-batch-tokens=0"), 2,
                         "--max-batch-tokens must be at least 1");
}

// Item 6: --output and --metrics-json are checked before the model loads, with
// the system's reason, and nothing is left behind when the run fails.
TEST(Cli, OutputPathsAreCheckedBeforeTheRun) {
  const fs::path dir = scratch_dir();
  const auto single = write_file("paths.toml", fixture_pipeline());
  const auto several = write_file("paths2.toml", fixture_pipeline("[run]\nprompts = [\"a\", \"b\"]\n"));
  // The model is absent: an error that names the path, not the model, came first.
  expect_one_clear_error(run_command(kCli + " run " + single.string() + " --metrics-json /nonexistent/m.json"), 2,
                         "cannot write metrics to '/nonexistent/m.json': No such file or directory");
  expect_one_clear_error(run_command(kCli + " run " + single.string() + " --metrics-json " + dir.string()), 2,
                         "cannot write metrics to '" + dir.string() + "': Is a directory");
  expect_one_clear_error(
      run_command(kCli + " run " + single.string() + " --metrics-json " + single.string() + "/m.json"), 2,
      "Not a directory");
  expect_one_clear_error(run_command(kCli + " run " + several.string() + " --output /nonexistent/o.jsonl"), 2,
                         "cannot write the results to '/nonexistent/o.jsonl': No such file or directory");
  // A run that fails after the check leaves neither the file nor a temporary one.
  auto r = run_command(kCli + " run " + several.string() + " --output " + (dir / "failed.jsonl").string() +
                       " --metrics-json " + (dir / "failed.json").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "failed.jsonl"));
  EXPECT_FALSE(fs::exists(dir / "failed.json"));
  EXPECT_TRUE(files_starting_with(dir, ".failed").empty());
}

TEST(Cli, OutputFilesAreReplacedWhole) {
  SKIP_WITHOUT_MODEL();
  const fs::path dir = scratch_dir() / "replaced";
  fs::create_directories(dir);
  // Longer than what replaces them: a file written over in place would keep a tail.
  const std::string junk(100000, 'x');
  std::ofstream(dir / "m.json") << junk;
  std::ofstream(dir / "o.jsonl") << junk;
  auto r =
      run_command(kCli + " run " + kQuickstart + " -q --threads 1 --max-tokens 2 --set 'run.prompts=[\"a\", \"b\"]'" +
                  " --output " + (dir / "o.jsonl").string() + " --metrics-json " + (dir / "m.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir / "m.json"))["requests"], 2);
  std::istringstream lines(slurp(dir / "o.jsonl"));
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_EQ(count, 2);
  EXPECT_TRUE(files_starting_with(dir, ".").empty());
  // A single prompt's metrics to /dev/stdout follow the text on stdout.
  r = run_command(kCli + " run " + kQuickstart + " -q --threads 1 --max-tokens 1 --metrics-json /dev/stdout");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto brace = r.out.find('{');
  ASSERT_NE(brace, std::string::npos) << r.out;
  EXPECT_GT(brace, 0u) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out.substr(brace))["generated_tokens"], 1) << r.out;
}

// tessera convert: usage errors exit 2, folders it cannot write exit 1, and
// neither leaves a file. (Conversions themselves: tests/integration/hf_convert_test.cpp.)
TEST(Cli, ConvertRefusesWhatItCannotWrite) {
  const fs::path out = scratch_dir() / "converted.gguf";
  const fs::path data = fs::path(TESSERA_SOURCE_DIR) / "tests" / "data";
  expect_one_clear_error(run_command(kCli + " convert"), 2, "tessera convert needs FOLDER and OUT paths");
  expect_one_clear_error(run_command(kCli + " convert " + kQuickstart + " " + out.string()), 2, "not a folder");
  expect_one_clear_error(run_command(kCli + " convert " + (data / "mamba" / "mamba1-hf").string() + " " + out.string()),
                         1, "mamba1-hf: this architecture plugin does not describe its models as GGUF");
  expect_one_clear_error(
      run_command(kCli + " convert " + (data / "hf-quantized" / "gptq-act-order").string() + " " + out.string()), 1,
      "writing those out is not supported");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(files_starting_with(scratch_dir(), "converted.gguf").empty());
}

TEST(Cli, QuantizeRefusesBadArgumentsWithExit2) {
  expect_one_clear_error(run_command(kCli + " quantize in.gguf"), 2, "tessera quantize needs IN and OUT paths");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf c.gguf"), 2,
                         "unexpected argument 'c.gguf': tessera quantize takes one INPUT and one OUTPUT");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --sym --asym"), 2, "contradict");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method int8 --format q4_0"), 2,
                         "--method int8 writes int8 weights with a scale per row (format i8)");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method int8 --bits 4"), 2,
                         "--method int8 writes 8-bit weights");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method awq --smooth 0.5"), 2,
                         "--smooth (SmoothQuant's migration) goes with --method int8");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method int8 --smooth strong"), 2,
                         "--smooth takes an alpha in (0, 1) or 'auto', not 'strong'");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method rtn --smooth auto"), 2,
                         "--smooth (SmoothQuant's migration) goes with --method int8");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method gptq --awq-no-clip"), 2,
                         "--awq-no-clip is an AWQ setting");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method awq --true-sequential"), 2,
                         "--true-sequential is a GPTQ setting");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --method gptq --calibration-activations q4"), 2,
                         "--calibration-activations: give q8, q8x2 or f32");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --bits 2"), 2,
                         "no GGUF block format holds 2-bit symmetric groups");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --output-tensor-type q2_k"), 2,
                         "--output-tensor-type takes q4_0, q4_1, q5_0, q5_1, q8_0, q3_k, q4_k, q5_k, q6_k or keep, not 'q2_k'");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --token-embedding-type f16"), 2,
                         "--token-embedding-type takes q4_0");
}

// The head as llama-quantize rounds it: by default Q6_K, whose super-blocks
// the default model's 576-wide rows are not, so Q8_0, the type its tied
// embedding already has (copied, nothing said); asked for Q4_0, it is
// rounded, the summary says so, and the file still answers.
TEST(Cli, QuantizeRoundsTheHeadAsAsked) {
  SKIP_WITHOUT_MODEL();
  const fs::path out = write_file("head.gguf", "");
  const std::string command = kCli + " quantize " + kModel.string() + " " + out.string() + " --format q4_0 --force --threads 2";
  const auto by_default = run_command(command);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_EQ(by_default.out.find("rounded to nearest"), std::string::npos) << by_default.out;
  const auto asked = run_command(command + " --output-tensor-type q4_0");
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_NE(asked.out.find("rounded to nearest: token_embd.weight q8_0 -> q4_0"), std::string::npos) << asked.out;
  const auto run = run_command(kCli + " run " + kQuickstart + " --set model.path=" + out.string() + " --threads 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Paris"), std::string::npos) << run.out;
}

TEST(Cli, QuantizeKeepsAnExistingOutputAndWritesWithForce) {
  SKIP_WITHOUT_MODEL();
  const fs::path out = write_file("quantized.gguf", "keep me");
  const std::string command = kCli + " quantize " + kModel.string() + " " + out.string() + " --format q8_0";
  expect_one_clear_error(run_command(command), 2, "exists; pass --force to replace it");
  EXPECT_EQ(slurp(out), "keep me");
  const auto r = run_command(command + " --force --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("210 weights quantized with rtn into ggml.q8_0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bits per weight: 8.500"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dequantized to f32 first"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(out).substr(0, 4), "GGUF");
  EXPECT_TRUE(files_starting_with(out.parent_path(), "quantized.gguf.tmp").empty());
}

// --format q4_k: the summary counts the weights that took the fallback, and
// the file runs.
TEST(Cli, QuantizeQ4_KSaysWhichWeightsFellBack) {
  SKIP_WITHOUT_MODEL();
  const fs::path out = write_file("q4_k.gguf", "");
  const auto r = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                             " --format q4_k --force --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("210 weights quantized with rtn into ggml.q4_k"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("written: 30 in q4_k, 180 in q5_0"), std::string::npos) << r.out;
  const auto run = run_command(kCli + " run " + kQuickstart + " --set model.path=" + out.string() + " --threads 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Paris"), std::string::npos) << run.out;
}

// --bits 3 and --bits 6 pick Q3_K and Q6_K with their groups of 16 (no
// --group-size needed), and say which weights took the fallback.
TEST(Cli, QuantizeBitsThreeAndSixPickTheSixteenWideKFormats) {
  SKIP_WITHOUT_MODEL();
  const fs::path out = write_file("q3_k.gguf", "");
  for (const auto& [bits, written] : {std::pair{"3", "written: 30 in q3_k, 180 in q4_0"},
                                      std::pair{"6", "written: 30 in q6_k, 180 in q8_0"}}) {
    const auto r = run_command(kCli + " quantize " + kModel.string() + " " + out.string() + " --bits " + bits +
                               " --force --threads 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(written), std::string::npos) << r.out;
  }
}

TEST(Cli, QuantizeInt8WritesAFileTheEngineRuns) {
  SKIP_WITHOUT_MODEL();
  const fs::path out = write_file("int8.gguf", "");
  const auto r = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                             " --method int8 --force --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("210 weights quantized with int8 into i8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("relative weight error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rows stored rotated"), std::string::npos) << "the rotation is the default: " << r.out;
  const auto run = run_command(kCli + " run " + kQuickstart + " --set model.path=" +
                               out.string() + " --threads 2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Paris"), std::string::npos) << run.out;

  const auto plain = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                                 " --method int8 --rotation none --force --threads 2");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("rows stored rotated"), std::string::npos) << plain.out;
  const auto bad = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                               " --method int8 --rotation random --force");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--rotation takes 'hadamard' or 'none'"), std::string::npos) << bad.err;
  const auto not_int8 = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                                    " --method rtn --format q4_0 --rotation hadamard --force");
  EXPECT_EQ(not_int8.exit_code, 2);
  EXPECT_NE(not_int8.err.find("--rotation is an INT8 W8A8 setting"), std::string::npos) << not_int8.err;
}

// --smooth auto: SmoothQuant's alpha searched per group, said in the summary.
// One short sample: this checks the option's path through the CLI (it runs
// under ASan too, where 2 x 32 tokens took 317 s); the search itself is
// tested on more tokens in tests/integration/quantize_test.cpp.
TEST(Cli, QuantizeInt8SearchesTheSmoothingAlpha) {
  SKIP_WITHOUT_MODEL();
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The quick brown fox jumps over the lazy dog, and the dog sleeps on. ";
  const fs::path calibration = write_file("smooth_calibration.txt", text);
  const fs::path out = write_file("int8_auto.gguf", "");
  const auto r = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                             " --method int8 --smooth auto --calibration " + calibration.string() +
                             " --samples 1 --sample-tokens 16 --force --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SmoothQuant: 90 groups, alpha searched per group"), std::string::npos) << r.out;
}

// --held-out: the summary sets a method's gain on a second text beside its
// gain on the calibration text, per kind of weight. AWQ without scales or
// clipping (--awq-grid 1 --awq-no-clip) writes rounding's bytes, so its
// held-out error is rounding's exactly; GPTQ's and AWQ's figures are tested
// in tests/integration/quantize_test.cpp. Not under ASan: there this one
// run took 549 s of a CI's sanitizer stage (Eigen's products with H,
// instrumented), where it passed (CI of 7974087).
TEST(Cli, QuantizeReportsTheHeldOutError) {
  SKIP_WITHOUT_MODEL();
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a calibrated quantize run with --held-out takes about 9 minutes under ASan; the release suite runs it";
#endif
  std::string text, other;
  for (int i = 0; i < 40; ++i) text += "The quick brown fox jumps over the lazy dog, and the dog sleeps on. ";
  for (int i = 0; i < 40; ++i) other += "int main(void) { return printf(\"%d\\n\", 42); } prints a number. ";
  const fs::path calibration = write_file("held_out_calibration.txt", text);
  const fs::path held_out = write_file("held_out_text.txt", other);
  const fs::path out = write_file("awq_held_out.gguf", "");
  const auto r = run_command(kCli + " quantize " + kModel.string() + " " + out.string() +
                             " --method awq --awq-grid 1 --awq-no-clip --format q4_0 --calibration " +
                             calibration.string() + " --samples 1 --sample-tokens 16 --force --threads 2" +
                             " --held-out-samples 1 --held-out " + held_out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on the held-out text (16 tokens): 1.000x rounding's output error, 1.000 token by token"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ffn_down.weight      1.000 / 1.000 / 1.000"), std::string::npos) << r.out;
}

// --held-out's usage errors come before any model is read.
TEST(Cli, QuantizeRefusesABadHeldOutText) {
  const fs::path empty = write_file("held_out_empty.txt", "");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --held-out " + empty.string()), 2,
                         "--held-out: the file is empty");
  expect_one_clear_error(run_command(kCli + " quantize a.gguf b.gguf --held-out-samples 4"), 2,
                         "--held-out-samples needs --held-out TEXT");
}

}  // namespace
}  // namespace tessera::test

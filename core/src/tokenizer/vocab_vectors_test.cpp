// llama.cpp's tokenizer test vectors: for each ggml-vocab-<name>.gguf, the
// .gguf.inp file holds texts separated by "\n__ggml_vocab_test__\n" and the
// .gguf.out file one line of space-separated ids per text. llama.cpp's
// test-tokenizer-0 encodes with add_special = false and parse_special = false,
// so the ids carry no BOS. Run scripts/fetch-test-vocabs.sh to get the files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/gguf.hpp"
#include "tokenizer/gguf_loader.hpp"

namespace tessera::tok {
namespace {

namespace fs = std::filesystem;

fs::path vocab_dir() { return fs::path(TESSERA_SOURCE_DIR) / ".cache" / "vocab"; }

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> read_cases(const fs::path& gguf) {
  const std::string inp = read_all(gguf.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(gguf.string() + ".out");
  std::vector<Case> cases;
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    Case c;
    c.text = i < texts.size() ? texts[i] : "";
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << gguf << ": .inp and .out disagree on the number of tests";
  return cases;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, MatchLlamaCpp) {
  const fs::path gguf = vocab_dir() / ("ggml-vocab-" + GetParam() + ".gguf");
  if (!fs::exists(gguf) || !fs::exists(gguf.string() + ".out")) {
    GTEST_SKIP() << gguf << " is absent: run scripts/fetch-test-vocabs.sh to fetch llama.cpp's test vocabularies";
  }
  auto file = GgufFile::open(gguf.string());
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto tok = tokenizer_from_gguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const auto cases = read_cases(gguf);
  ASSERT_FALSE(cases.empty());
  int failures = 0;
  for (const auto& c : cases) {
    const auto ids = tok->encode(c.text, false, false);
    if (ids != c.ids) {
      ++failures;
      std::string got, want;
      for (auto i : ids) got += std::to_string(i) + " ";
      for (auto i : c.ids) want += std::to_string(i) + " ";
      ADD_FAILURE() << GetParam() << ": text '" << c.text << "'\n  got:  " << got << "\n  want: " << want;
    }
  }
  std::cout << GetParam() << ": " << cases.size() - failures << "/" << cases.size() << " vectors match\n";
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, VocabVectors,
                         ::testing::Values("llama-spm", "llama-bpe", "gpt-2", "qwen2", "qwen35", "phi-3",
                                           "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "refact",
                                           "command-r", "mpt"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n) if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace tessera::tok

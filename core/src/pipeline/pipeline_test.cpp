// Pipeline files: every kind of mistake is reported with file:line:column and
// the key; overrides; relative paths; plugin choice and parameter validation.
#include "pipeline/pipeline.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/scratch_dir.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// The fixture folder holds a decoding plugin "fixture_fixed" and the
// declaration-only "fixture_kv", "fixture_attn" and "fixture_quant".
class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override { registry_.scan({fs::path(TESSERA_FIXTURE_DIR) / "first"}); }

  static std::string text(const std::string& extra) {
    return "[model]\npath = \"models/m.gguf\"\n"
           "[kvcache]\nplugin = \"fixture_kv\"\n"
           "[attention]\nplugin = \"fixture_attn\"\n"
           "[decoding]\nplugin = \"fixture_fixed\"\n" +
           extra;
  }
  Result<Pipeline> parse(const std::string& toml, std::vector<PipelineOverride> overrides = {}) {
    return parse_pipeline(toml, "test.toml", "/base/dir", overrides, registry_);
  }
  PluginRegistry registry_;
};

std::string message(const Result<Pipeline>& r) { return r.ok() ? std::string("(ok)") : r.status().message(); }

TEST_F(PipelineTest, AValidPipelineIsWiredWithDefaultsFilledIn) {
  auto r = parse(text("[run]\nprompt = \"hi\"\n"));
  ASSERT_TRUE(r.ok()) << message(r);
  EXPECT_EQ(r->model.get_string("path"), "/base/dir/models/m.gguf");  // relative to the file
  EXPECT_EQ(r->run.get_string("prompt"), "hi");
  EXPECT_EQ(r->run.get_int("max_tokens"), 128);
  EXPECT_EQ(r->kvcache.plugin->info->name, std::string("fixture_kv"));
  EXPECT_EQ(r->kvcache.params.get_int("block_size"), 16);
  EXPECT_EQ(r->kvcache.params.get_int("memory"), 64ll << 20);
  EXPECT_EQ(r->decoding.params.get_int("token"), 7);
  EXPECT_FALSE(r->arch.has_value());
  EXPECT_FALSE(r->quant.has_value());  // no [quant]: every quant plugin with its defaults
}

TEST_F(PipelineTest, PluginParametersAreValidatedAndPathsResolved) {
  auto r = parse(text("") + "") ;
  ASSERT_TRUE(r.ok());
  auto p = parse("[model]\npath = \"/abs/m.gguf\"\n[kvcache]\nplugin = \"fixture_kv\"\nblock_size = 32\n"
                 "memory = \"1GiB\"\nswap_file = \"swap/kv.bin\"\n[attention]\nplugin = \"fixture_attn\"\n"
                 "[decoding]\nplugin = \"fixture_fixed\"\nmode = \"exact\"\nnames = [\"a\", \"b\"]\n");
  ASSERT_TRUE(p.ok()) << message(p);
  EXPECT_EQ(p->model.get_string("path"), "/abs/m.gguf");
  EXPECT_EQ(p->kvcache.params.get_int("block_size"), 32);
  EXPECT_EQ(p->kvcache.params.get_int("memory"), 1ll << 30);
  EXPECT_EQ(p->kvcache.params.get_string("swap_file"), "/base/dir/swap/kv.bin");
  EXPECT_EQ(p->decoding.params.get_string("mode"), "exact");
  EXPECT_EQ(p->decoding.params.get_list("names"), (std::vector<std::string>{"a", "b"}));
}

TEST_F(PipelineTest, SyntaxErrorNamesLineAndColumn) {
  auto r = parse("[model]\npath = \"m.gguf\"\nbroken = = 3\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(message(r).find("test.toml:3:"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("TOML syntax error"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, UnknownSectionListsTheValidOnes) {
  auto r = parse(text("\n[kv_cache]\nblock_size = 16\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:10:2"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("unknown section 'kv_cache'"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("kvcache"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, UnknownKeyInACoreSectionNamesTheKeyAndTheValidKeys) {
  auto r = parse(text("[run]\nmax_tokenz = 5\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:10:1"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("unknown key 'max_tokenz'"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("max_tokens"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, UnknownKeyInAPluginSectionNamesThePluginAndItsKeys) {
  auto r = parse("[model]\npath = \"m.gguf\"\n[kvcache]\nplugin = \"fixture_kv\"\nblok_size = 16\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:5:1"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("kvcache plugin 'fixture_kv'"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("block_size, memory, swap_file"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, WrongTypeNamesTheExpectedType) {
  auto r = parse(text("[run]\nmax_tokens = \"many\"\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:10:14"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("'max_tokens' must be a integer, not a string"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, OutOfRangeNamesTheRange) {
  auto r = parse(text("[sampling]\ntop_p = 1.5\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:10:9"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("out of range [0, 1]"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, InvalidChoiceListsTheChoices) {
  auto r = parse(text("mode = \"slow\"\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:9:8"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("not one of: fast,exact"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, SectionThatIsNotATable) {
  auto r = parse("run = 3\n[model]\npath = \"m\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("'run' must be a table"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, MissingRequiredKey) {
  auto r = parse("[model]\narch = \"auto\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("test.toml:1:1"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("missing required key 'path'"), std::string::npos) << message(r);
}

TEST_F(PipelineTest, UnknownPluginListsTheAvailableOnes) {
  auto r = parse(text("") + "", {{"decoding", "plugin", "beam", false}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::not_found);
  EXPECT_NE(message(r).find("unknown decoding plugin 'beam'"), std::string::npos) << message(r);
  EXPECT_NE(message(r).find("available: fixture_fails, fixture_fixed"), std::string::npos) << message(r);

  auto located = parse("[model]\npath = \"m\"\n[kvcache]\nplugin = \"pagd\"\n");
  ASSERT_FALSE(located.ok());
  EXPECT_NE(message(located).find("test.toml:4:10"), std::string::npos) << message(located);
  EXPECT_NE(message(located).find("available: fixture_kv"), std::string::npos) << message(located);
}

TEST_F(PipelineTest, SetOverridesAnyKeyAndWinsOverTheFile) {
  auto r = parse(text("[run]\nmax_tokens = 5\n"), {{"run", "max_tokens", "9"},
                                                   {"kvcache", "block_size", "64"},
                                                   {"sampling", "temperature", "0"},
                                                   {"run", "prompt", "say \"hi\"", true}});
  ASSERT_TRUE(r.ok()) << message(r);
  EXPECT_EQ(r->run.get_int("max_tokens"), 9);
  EXPECT_EQ(r->kvcache.params.get_int("block_size"), 64);
  EXPECT_DOUBLE_EQ(r->sampling.get_real("temperature"), 0.0);
  EXPECT_EQ(r->run.get_string("prompt"), "say \"hi\"");
}

TEST_F(PipelineTest, OverrideSyntax) {
  auto o = parse_override("kvcache.block_size=32");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->section, "kvcache");
  EXPECT_EQ(o->key, "block_size");
  EXPECT_EQ(o->value, "32");
  EXPECT_FALSE(parse_override("block_size=32").ok());
  EXPECT_FALSE(parse_override("kvcache.block_size").ok());
  EXPECT_FALSE(parse_override(".x=1").ok());
}

TEST_F(PipelineTest, OverrideOfAnUnknownSectionOrKeyOrBadValueIsAnError) {
  auto r = parse(text(""), {{"nosuch", "x", "1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("--set nosuch.x"), std::string::npos) << message(r);
  auto k = parse(text(""), {{"run", "nosuch", "1"}});
  ASSERT_FALSE(k.ok());
  EXPECT_NE(message(k).find("unknown key 'nosuch'"), std::string::npos) << message(k);
  auto t = parse(text(""), {{"run", "max_tokens", "lots"}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(message(t).find("--set run.max_tokens=lots"), std::string::npos) << message(t);
}

TEST_F(PipelineTest, ArchSectionOnlyWithANamedArchitecture) {
  auto r = parse(text("[arch]\nx = 1\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(message(r).find("[arch] is only valid"), std::string::npos) << message(r);
  auto named = parse(text(""), {{"model", "arch", "\"mamba\""}});
  ASSERT_FALSE(named.ok());
  EXPECT_NE(message(named).find("unknown arch plugin 'mamba'"), std::string::npos) << message(named);
}

TEST_F(PipelineTest, QuantSectionNamesAPluginAndValidatesItsKeys) {
  auto r = parse(text("[quant]\nplugin = \"fixture_quant\"\nactivations = \"f32\"\n"));
  ASSERT_TRUE(r.ok()) << message(r);
  ASSERT_TRUE(r->quant.has_value());
  EXPECT_EQ(r->quant->plugin->info->name, std::string("fixture_quant"));
  EXPECT_EQ(r->quant->params.get_string("activations"), "f32");

  auto by_override = parse(text(""), {{"quant", "plugin", "fixture_quant"}, {"quant", "activations", "f32"}});
  ASSERT_TRUE(by_override.ok()) << message(by_override);
  ASSERT_TRUE(by_override->quant.has_value());
  EXPECT_EQ(by_override->quant->params.get_string("activations"), "f32");
  // A plugin name in --set is a TOML string literal like any string key's
  // value, or plain text.
  auto quoted = parse(text(""), {{"quant", "plugin", "\"fixture_quant\""}});
  ASSERT_TRUE(quoted.ok()) << message(quoted);
  ASSERT_TRUE(quoted->quant.has_value());
  EXPECT_EQ(quoted->quant->plugin->info->name, std::string("fixture_quant"));

  auto bad_choice = parse(text("[quant]\nplugin = \"fixture_quant\"\nactivations = \"int4\"\n"));
  ASSERT_FALSE(bad_choice.ok());
  EXPECT_NE(message(bad_choice).find("test.toml:"), std::string::npos) << message(bad_choice);
  EXPECT_NE(message(bad_choice).find("activations"), std::string::npos) << message(bad_choice);

  auto unknown_key = parse(text("[quant]\nplugin = \"fixture_quant\"\nbits = 4\n"));
  ASSERT_FALSE(unknown_key.ok());
  EXPECT_NE(message(unknown_key).find("unknown key 'bits'"), std::string::npos) << message(unknown_key);

  // Without a plugin key [quant] means "ggml", which the fixture folder lacks.
  auto missing = parse(text("[quant]\nactivations = \"f32\"\n"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(message(missing).find("unknown quant plugin 'ggml'"), std::string::npos) << message(missing);
}

TEST(PipelineFile, MissingFileAndDirectoryAreClearErrors) {
  PluginRegistry registry;
  auto missing = load_pipeline("/nonexistent/pipeline.toml", {}, registry);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos);
  auto dir = load_pipeline(fs::temp_directory_path(), {}, registry);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos);
}

TEST(PipelineFile, PluginPathsFromTheFileAreSearchedFirst) {
  const fs::path dir = test::scratch_dir("tessera_pipeline_test") / "paths";
  fs::create_directories(dir);
  const fs::path file = dir / "p.toml";
  std::ofstream(file) << "[plugins]\npaths = [\"" << TESSERA_FIXTURE_DIR << "/second\", \"" << TESSERA_FIXTURE_DIR
                      << "/first\"]\n[model]\npath = \"m.gguf\"\n[kvcache]\nplugin = \"fixture_kv\"\n"
                         "[attention]\nplugin = \"fixture_attn\"\n[decoding]\nplugin = \"fixture_fixed\"\n";
  PluginRegistry registry;
  auto p = load_pipeline(file, {}, registry);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_STREQ(p->decoding.plugin->info->version, "2.0");  // from "second", listed first
  EXPECT_EQ(p->model.get_string("path"), (dir / "m.gguf").string());
  EXPECT_EQ(p->file, file);
}

TEST_F(PipelineTest, SpeculativeIsOffByDefault) {
  auto r = parse(text(""));
  ASSERT_TRUE(r.ok()) << message(r);
  EXPECT_EQ(r->speculative.get_string("method"), "off");
  EXPECT_FALSE(drafts_with_model(*r));
  EXPECT_FALSE(drafts_with_lookup(*r));
  EXPECT_EQ(r->draft, nullptr);
}

TEST_F(PipelineTest, ADraftModelIsThisPipelineWithTheDraftsFile) {
  auto r = parse(text("[speculative]\nmethod = \"both\"\ndraft_model = \"models/small.gguf\"\nmax_draft_tokens = 5\n"));
  ASSERT_TRUE(r.ok()) << message(r);
  EXPECT_TRUE(drafts_with_model(*r));
  EXPECT_TRUE(drafts_with_lookup(*r));
  ASSERT_NE(r->draft, nullptr);
  EXPECT_EQ(r->draft->model.get_string("path"), "/base/dir/models/small.gguf");
  EXPECT_EQ(r->draft->kvcache.plugin, r->kvcache.plugin) << "the target's plugins";
  EXPECT_EQ(r->draft->speculative.get_string("method"), "off") << "a draft runs alone";
  EXPECT_EQ(r->speculative.get_int("max_draft_tokens"), 5);
}

TEST_F(PipelineTest, ADraftVocabularyGoesToTheDraftOnlyAndAPipeIsRefused) {
  auto r =
      parse(text("[speculative]\nmethod = \"draft-model\"\ndraft_model = \"small.gguf\"\n"
                 "draft_vocabulary = \"code.txt\"\ndraft_vocabulary_size = 1000\n"));
  ASSERT_TRUE(r.ok()) << message(r);
  ASSERT_NE(r->draft, nullptr);
  EXPECT_EQ(r->draft->output_vocabulary_text, "/base/dir/code.txt") << "relative to the pipeline file";
  EXPECT_EQ(r->draft->output_vocabulary_size, 1000);
  EXPECT_TRUE(r->output_vocabulary_text.empty()) << "the target keeps its whole vocabulary";
  auto whole = parse(text("[speculative]\nmethod = \"draft-model\"\ndraft_model = \"small.gguf\"\n"));
  ASSERT_TRUE(whole.ok()) << message(whole);
  EXPECT_TRUE(whole->draft->output_vocabulary_text.empty());
  auto pipe =
      parse(text("[speculative]\nmethod = \"draft-model\"\ndraft_model = \"small.gguf\"\n"
                 "draft_vocabulary = \"/dev/zero\"\n"));
  EXPECT_NE(message(pipe).find("draft_vocabulary /dev/zero is not a regular file"), std::string::npos) << message(pipe);
  EXPECT_FALSE(parse(text("[speculative]\ndraft_vocabulary_size = 0\n")).ok());
}

TEST_F(PipelineTest, SpeculativeMistakesNameTheFileAndWhatToSet) {
  auto none = parse(text("[speculative]\nmethod = \"draft-model\"\n"));
  EXPECT_NE(message(none).find("test.toml:"), std::string::npos) << message(none);
  EXPECT_NE(message(none).find("set draft_model"), std::string::npos) << message(none);
  auto both = parse(text("[speculative]\nmethod = \"draft-model\"\ndraft_model = \"a.gguf\"\n"
                         "draft_pipeline = \"b.toml\"\n"));
  EXPECT_NE(message(both).find("one of them"), std::string::npos) << message(both);
  auto unused = parse(text("[speculative]\nmethod = \"prompt-lookup\"\ndraft_model = \"a.gguf\"\n"));
  ASSERT_TRUE(unused.ok()) << "a draft left in a pipeline whose method no longer uses it: " << message(unused);
  EXPECT_EQ(unused->draft, nullptr);
  auto ngrams = parse(text("[speculative]\nlookup_min_ngram = 5\nlookup_max_ngram = 3\n"));
  EXPECT_NE(message(ngrams).find("lookup_min_ngram (5) is more than lookup_max_ngram (3)"), std::string::npos)
      << message(ngrams);
  auto method = parse(text("[speculative]\nmethod = \"eagle\"\n"));
  EXPECT_NE(message(method).find("not one of: off,draft-model,prompt-lookup,both"), std::string::npos) << message(method);
  auto range = parse(text("[speculative]\nmax_draft_tokens = 17\n"));
  EXPECT_FALSE(range.ok());
}

TEST(PipelineFile, ADraftPipelineIsReadWithItsOwnErrorsAndMayNotDraftItself) {
  const fs::path dir = test::scratch_dir("tessera_pipeline_test") / "draft";
  fs::create_directories(dir);
  const std::string plugins = std::string("[plugins]\npaths = [\"") + TESSERA_FIXTURE_DIR +
                              "/first\"]\n[kvcache]\nplugin = \"fixture_kv\"\n[attention]\nplugin = \"fixture_attn\"\n"
                              "[decoding]\nplugin = \"fixture_fixed\"\n";
  std::ofstream(dir / "draft.toml") << plugins << "[model]\npath = \"small.gguf\"\n";
  std::ofstream(dir / "bad.toml") << plugins << "[model]\npath = \"small.gguf\"\nbogus = 1\n";
  std::ofstream(dir / "self.toml") << plugins
                                   << "[model]\npath = \"big.gguf\"\n[speculative]\nmethod = \"draft-model\"\n"
                                      "draft_pipeline = \"self.toml\"\n";
  std::ofstream(dir / "target.toml") << plugins
                                     << "[model]\npath = \"big.gguf\"\n[speculative]\nmethod = \"draft-model\"\n"
                                        "draft_pipeline = \"draft.toml\"\n";
  PluginRegistry registry;
  auto p = load_pipeline(dir / "target.toml", {}, registry);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_NE(p->draft, nullptr);
  EXPECT_EQ(p->draft->model.get_string("path"), (dir / "small.gguf").string());
  auto kept = load_pipeline(dir / "target.toml", {{"speculative", "draft_vocabulary", "\"code.txt\""}}, registry);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->draft->output_vocabulary_text, dir / "code.txt") << "a draft pipeline's head keeps part too";

  auto bad = load_pipeline(dir / "target.toml", {{"speculative", "draft_pipeline", (dir / "bad.toml").string(), true}},
                           registry);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.toml:11:1"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("bogus"), std::string::npos) << bad.status().message();

  auto device = load_pipeline(dir / "target.toml", {{"speculative", "draft_pipeline", "/dev/zero", true}}, registry);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("not a regular file"), std::string::npos) << device.status().message();

  auto self = load_pipeline(dir / "self.toml", {}, registry);
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.status().message().find("cannot itself draft"), std::string::npos) << self.status().message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera

// bigram.cpp: the "bigram" architecture, a plugin built out of tree.
//
// A model of general.architecture "tessera-bigram" predicts the next token
// from the current one alone:
//   logits = W_out · rmsnorm(embed(token))
// with W_out the embedding table itself when the file has no output.weight.
// It keeps nothing between tokens (one layer of memory kind `none`), so it
// asks for no attention kernel. Its hyper-parameters are its own keys:
//   tessera-bigram.context_length, tessera-bigram.embedding_length,
//   tessera-bigram.norm_epsilon (optional, 1e-5).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tessera/architecture.hpp"
#include "tessera/blocks/elementwise.hpp"
#include "tessera/blocks/embedding_table.hpp"
#include "tessera/blocks/metadata_reader.hpp"
#include "tessera/blocks/tensor_checks.hpp"
#include "tessera/plugin.hpp"

namespace {

using namespace tessera;

constexpr const char* kArch = "tessera-bigram";

struct BigramConfig {
  int64_t context = 0;
  int64_t width = 0;
  int64_t vocab = 0;
  double eps = 1e-5;
};

Result<BigramConfig> read_config(const WeightStore& w) {
  const blocks::MetadataReader k(w, std::string(kArch) + ".");
  BigramConfig c;
  TESSERA_RETURN_IF_ERROR(k.integer("context_length", c.context, 1));
  TESSERA_RETURN_IF_ERROR(k.integer("embedding_length", c.width, 1));
  TESSERA_RETURN_IF_ERROR(k.real("norm_epsilon", c.eps));
  const TensorRef* embd = w.find("token_embd.weight");
  if (embd == nullptr || embd->ndim != 2) return NotFound(w.source() + ": tensor token_embd.weight is missing");
  c.vocab = embd->shape[0];
  TESSERA_RETURN_IF_ERROR(blocks::expect_tensor(w, "token_embd.weight", {c.vocab, c.width}));
  TESSERA_RETURN_IF_ERROR(blocks::expect_tensor(w, "output_norm.weight", {c.width}));
  TESSERA_RETURN_IF_ERROR(blocks::expect_optional_tensor(w, "output.weight", {c.vocab, c.width}));
  return c;
}

class BigramModel final : public Model {
 public:
  BigramModel(BigramConfig config, blocks::EmbeddingTable embd, std::vector<float> norm, std::unique_ptr<Linear> out)
      : c_(config), embd_(std::move(embd)), norm_(std::move(norm)), out_(std::move(out)) {}

  int64_t vocab_size() const noexcept override { return c_.vocab; }
  SequenceStateSpec state_spec() const noexcept override { return {c_.context, memory_}; }
  uint64_t weight_bytes() const noexcept override { return out_->weight_bytes(); }

  Status forward(const Batch& batch, SequenceMemory& memory, float* logits) noexcept override {
    return guard([&]() -> Status {
      // Only the rows whose logits are asked matter: nothing is remembered.
      std::vector<float> x;
      for (const BatchSeq& s : batch.seqs) {
        if (memory.length(s.seq) < s.n_past + s.n_tokens)
          return InvalidArgument("bigram: the memory holds fewer tokens than the batch needs");
        for (int32_t i = s.n_tokens - s.n_logits; i < s.n_tokens; ++i) {
          const TokenId token = batch.tokens[static_cast<size_t>(s.token_offset + i)];
          if (token < 0 || token >= c_.vocab) return InvalidArgument("bigram: token id outside the vocabulary");
          x.resize(x.size() + static_cast<size_t>(c_.width));
          TESSERA_RETURN_IF_ERROR(embd_.lookup(token, x.data() + x.size() - static_cast<size_t>(c_.width)));
        }
      }
      const int64_t rows = static_cast<int64_t>(x.size()) / c_.width;
      if (rows == 0) return Status::Ok();
      blocks::rms_norm_rows(x.data(), norm_.data(), x.data(), rows, c_.width, static_cast<float>(c_.eps));
      return out_->forward(x.data(), logits, rows);
    });
  }

 private:
  BigramConfig c_;
  blocks::EmbeddingTable embd_;
  std::vector<float> norm_;
  std::unique_ptr<Linear> out_;
  std::vector<LayerMemorySpec> memory_{LayerMemorySpec{}};  // one layer, remembering nothing
};

class BigramArchitecture final : public Architecture {
 public:
  explicit BigramArchitecture(const ParamValues&) {}

  std::span<const std::string_view> supported() const noexcept override {
    static constexpr std::string_view kSupported[] = {kArch};
    return kSupported;
  }

  Status describe(const WeightStore& weights, std::vector<HyperParameter>& out) const noexcept override {
    return guard([&]() -> Status {
      auto c = read_config(weights);
      if (!c.ok()) return c.status();
      out = {{"context_length", c->context}, {"embedding_length", c->width}, {"vocab_size", c->vocab},
             {"norm_epsilon", c->eps}, {"tied_output", weights.find("output.weight") == nullptr}};
      return Status::Ok();
    });
  }

  Result<std::unique_ptr<Model>> build(ModelBuilder& builder) noexcept override {
    return guard([&]() -> Result<std::unique_ptr<Model>> {
      const WeightStore& w = builder.weights();
      auto c = read_config(w);
      if (!c.ok()) return c.status();
      auto embd = blocks::EmbeddingTable::create(builder, *w.find("token_embd.weight"));
      if (!embd.ok()) return embd.status();
      std::vector<float> norm(static_cast<size_t>(c->width));
      TESSERA_RETURN_IF_ERROR(builder.dequantize(*w.find("output_norm.weight"), norm.data()));
      auto out = builder.linear(w.find("output.weight") ? "output.weight" : "token_embd.weight");
      if (!out.ok()) return out.status();
      return std::unique_ptr<Model>(std::make_unique<BigramModel>(*c, std::move(embd).value(), std::move(norm),
                                                                  std::move(out).value()));
    });
  }
};

const PluginInfo kPlugins[] = {{PluginFamily::architecture, "bigram", "1.0",
                                "tessera-bigram: the next token from the current one (built out of tree)", nullptr, 0,
                                &make_plugin<BigramArchitecture>}};

const PluginLibrary* entry() {
  static const PluginLibrary library = plugin_library(kPlugins);
  return &library;
}

}  // namespace

TESSERA_PLUGIN_ENTRY(entry)

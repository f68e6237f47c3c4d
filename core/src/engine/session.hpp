// session.hpp: a pipeline made runnable: model, tokenizer, plugins, generation.
//
// Session::open assembles what a Pipeline names (docs/architecture.md): the
// model file is opened, the tokenizer read from it, the architecture plugin
// that serves the file's architecture builds the Model (weights dispatched to
// quant plugins by format, the attention kernel made if the model asks), the
// memory plugin is sized from the model's state spec, and the decoding
// strategy is made. generate() then runs one request through the scheduler:
// prefill in chunks, decode, stream text, measure.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/thread_governor.hpp"
#include "engine/metrics.hpp"
#include "engine/model_builder.hpp"
#include "engine/request.hpp"
#include "engine/speculation_stats.hpp"
#include "pipeline/pipeline.hpp"
#include "tessera/architecture.hpp"
#include "tessera/decoding.hpp"
#include "tessera/quantizer.hpp"
#include "tokenizer/stream_decoder.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

class ModelFile;
class DraftProposer;
class Speculator;

using TextSink = std::function<void(std::string_view)>;

class Session {
 public:
  ~Session();
  // `wrap_linear` (optional) sees every Linear the model is built with (`tessera quantize`).
  static Result<std::unique_ptr<Session>> open(const Pipeline& pipeline, const PluginRegistry& registry,
                                               const CoreModelBuilder::LinearWrapper& wrap_linear = {});

  // The request [run] and [sampling] describe (a seed of -1 becomes a fresh one).
  GenerationRequest request_from_pipeline() const;

  // Runs one request; `on_text` receives the text as it is produced, never half
  // a UTF-8 character. Errors: invalid_argument for a prompt the model cannot
  // take (empty, not UTF-8, longer than the context), others for failures.
  Result<GenerationResult> generate(const GenerationRequest& request, const TextSink& on_text = {});

  // What speculative decoding did in the last generate() ([speculative]).
  const SpeculationStats& last_speculation() const { return last_speculation_; }

  // The ids generate() would feed the model for `request`.
  Result<std::vector<int32_t>> prompt_ids(const GenerationRequest& request) const;

  // Runs `tokens` as one fresh sequence and returns the logits of every
  // position: [tokens.size(), vocab_size] row-major (perplexity, tests).
  Result<std::vector<float>> score(std::span<const int32_t> tokens);

  // Appends `tokens` to `seq` (at positions n_past...) in chunks that bound
  // the model's scratch memory. logits: with all_logits every row
  // [tokens.size(), vocab], else the last token's row [vocab].
  Status extend(SeqId seq, std::span<const int32_t> tokens, int32_t n_past, bool all_logits, float* logits);

  // Runs `tokens` as one fresh sequence for what the forward does on the way
  // (calibration). Logits are asked for every row, so that every layer works
  // on every row (a model may narrow its last layer to the rows whose logits
  // are wanted); they are discarded.
  Status run_through(std::span<const int32_t> tokens);

  // The forward cut between layers (Model ABI 3.6), for calibration: how
  // many layers the model runs one at a time, 0 when it does not.
  int32_t separable_layers() const;
  // hidden[tokens.size(), model().hidden_size()] = the stream entering layer 0.
  Status embed(std::span<const int32_t> tokens, float* hidden);
  // Runs layers [first_layer, last_layer) over hidden[tokens.size(),
  // model().hidden_size()] in place, `tokens` as one fresh sequence, in the
  // chunks extend() uses (so each layer computes the bits a whole forward
  // gives it).
  Status run_layers(std::span<const int32_t> tokens, int32_t first_layer, int32_t last_layer, float* hidden);

  const tok::Tokenizer& tokenizer() const { return *tokenizer_; }
  // What drafts tokens for the scheduler to verify ([speculative]); null when off.
  DraftProposer* draft_proposer();
  Model& model() { return *model_; }
  // Where the model's head keeps part of the vocabulary (a draft's, [speculative]
  // draft_vocabulary): the request ids it computes besides; else nullptr.
  RequestVocabulary* request_vocabulary() { return request_vocabulary_.get(); }
  DecodingStrategy& strategy() { return *strategy_; }
  // The scheduler reports the memory's figures at their peak for plugin_stats().
  void note_memory_stats(const MemoryStats& stats) { last_memory_stats_ = stats; }
  SequenceMemory& memory() { return *memory_; }
  // Whether the memory can drop tokens (truncate): all its layers are attention.
  bool memory_truncates() const { return memory_truncates_; }
  const ModelFile& file() const { return *file_; }
  // Every quant plugin, in the order the model builder searches them.
  const std::vector<std::shared_ptr<Quantizer>>& quantizers() const { return quantizers_; }
  int64_t vocab_size() const { return model_->vocab_size(); }
  int64_t context_length() const { return context_; }
  // The error for logits that came out NaN or infinite: the model file may be
  // corrupt, naming the first tensor holding a non-finite value (searched
  // now, not at start-up: it reads every weight).
  Status explain_nonfinite_logits() const;
  int threads() const { return threads_; }
  // Each step's thread count ([run] adapt_threads), or nullptr: always threads().
  ThreadGovernor* thread_governor() { return governor_.get(); }
  // Plugin-specific figures for the metrics JSON ("plugins" object); with a
  // draft model, its own under "draft".
  nlohmann::json plugin_stats() const;
  // One-line description of what was assembled, for logs.
  std::string describe() const;

 public:
  // Longest run of prompt tokens one forward takes (prompts, run_through and
  // run_layers go in chunks of it): bounds the model's scratch memory for
  // long prompts and exercises the same path chunked prefill uses. A pass
  // that a Linear ends early (tessera quantize's calibration) ends the
  // chunks after it too.
  static constexpr int32_t kPrefillChunk = 512;

 private:
  Session() = default;
  // Appends `tokens` to `seq` (at positions n_past...) in chunks of at most
  // kPrefillChunk, reserving each chunk's slots and calling step(batch, done)
  // (`done`: the tokens before the chunk; the batch asks for no logits) between
  // the thread governor's before and after.
  Status run_chunks(SeqId seq, std::span<const int32_t> tokens, int32_t n_past,
                    const std::function<Status(const Batch&, size_t done)>& step);
  // The Speculator [speculative] asks for (its draft model opened with the
  // plugins of `registry`), or none.
  Status open_speculation(const PluginRegistry& registry);

  Pipeline pipeline_;
  std::shared_ptr<ModelFile> file_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  std::vector<std::shared_ptr<Quantizer>> quantizers_;  // in search order
  std::shared_ptr<AttentionKernel> attention_;          // when the model asked for one
  std::shared_ptr<RequestVocabulary> request_vocabulary_;  // when the head keeps part of the vocabulary
  std::shared_ptr<Architecture> arch_;
  std::unique_ptr<Model> model_;
  std::shared_ptr<SequenceMemory> memory_;
  std::shared_ptr<DecodingStrategy> strategy_;
  std::unique_ptr<Speculator> speculator_;  // when [speculative] is on
  std::string arch_name_;
  int64_t context_ = 0;
  int32_t n_layer_ = 0;
  bool memory_truncates_ = true;
  int threads_ = 1;
  std::unique_ptr<ThreadGovernor> governor_;
  MemoryStats last_memory_stats_;
  SpeculationStats last_speculation_;
};

}  // namespace tessera

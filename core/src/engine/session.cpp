#include "engine/session.hpp"

#include <omp.h>

#include <algorithm>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/architecture_choice.hpp"
#include "engine/draft_vocabulary.hpp"
#include "engine/model_builder.hpp"
#include "engine/output_processor.hpp"
#include "engine/prompt.hpp"
#include "engine/prompt_split.hpp"
#include "engine/scheduler.hpp"
#include "engine/speculator.hpp"
#include "model/model_file.hpp"

namespace tessera {

namespace {

static_assert(Session::kPrefillChunk % kPromptSplitAlignment == 0);

Result<std::shared_ptr<Architecture>> choose_architecture(const Pipeline& pipeline, const PluginRegistry& registry,
                                                          std::string_view model_arch, std::string* chosen) {
  if (pipeline.arch) {
    auto arch = registry.create<Architecture>(*pipeline.arch->plugin, pipeline.arch->params);
    if (!arch.ok()) return arch.status();
    *chosen = pipeline.arch->plugin->info->name;
    return arch;
  }
  auto found = find_architecture(registry, model_arch);
  if (!found.ok()) return found.status();
  *chosen = found->plugin->info->name;
  return found->architecture;
}

}  // namespace

Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::open(const Pipeline& pipeline, const PluginRegistry& registry,
                                               const CoreModelBuilder::LinearWrapper& wrap_linear) {
  std::unique_ptr<Session> s(new Session());
  s->pipeline_ = pipeline;

  const int64_t threads = pipeline.run.get_int("threads");
  s->threads_ = threads > 0 ? static_cast<int>(threads) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  omp_set_num_threads(s->threads_);
  if (s->threads_ > 1 && pipeline.run.get_bool("adapt_threads")) s->governor_ = std::make_unique<ThreadGovernor>(s->threads_);

  auto file = open_model(pipeline.model.get_string("path"));
  if (!file.ok()) return file.status();
  s->file_ = std::move(file).value();

  auto tokenizer = load_model_tokenizer(*s->file_);
  if (!tokenizer.ok()) return tokenizer.status();
  s->tokenizer_ = std::make_unique<tok::Tokenizer>(std::move(tokenizer).value());

  // Every quant plugin found, in search order: the first to declare a format
  // runs it. The one [quant] names comes first, with the pipeline's parameters.
  auto add_quantizer = [&](const LoadedPlugin& plugin, const ParamValues& params) -> Status {
    auto q = registry.create<Quantizer>(plugin, params);
    if (!q.ok()) return q.status();
    s->quantizers_.push_back(*q);
    return Status::Ok();
  };
  if (pipeline.quant) TESSERA_RETURN_IF_ERROR(add_quantizer(*pipeline.quant->plugin, pipeline.quant->params));
  for (const LoadedPlugin* p : registry.plugins(PluginFamily::quant)) {
    if (pipeline.quant && p == pipeline.quant->plugin) continue;
    auto params = default_params(*p->info);
    if (!params.ok()) return params.status();
    TESSERA_RETURN_IF_ERROR(add_quantizer(*p, *params));
  }

  auto arch = choose_architecture(pipeline, registry, s->file_->architecture(), &s->arch_name_);
  if (!arch.ok()) return arch.status();
  s->arch_ = *arch;

  // The attention kernel is made only if the model asks for one: a model
  // without attention layers runs with whatever [attention] says.
  CoreModelBuilder builder(
      *s->file_, s->quantizers_,
      [&]() { return registry.create<AttentionKernel>(*pipeline.attention.plugin, pipeline.attention.params); },
      wrap_linear);
  size_t kept_ids = 0;
  if (!pipeline.output_vocabulary_text.empty()) {
    auto ids =
        most_used_tokens_in_file(*s->tokenizer_, pipeline.output_vocabulary_text, pipeline.output_vocabulary_size);
    if (!ids.ok())
      return Status(ids.status().code(), ids.status().message() +
                                             " ([speculative] draft_vocabulary = \"\" keeps the draft's whole head)");
    kept_ids = ids->size();
    if (static_cast<int64_t>(kept_ids) < s->tokenizer_->vocab_size()) builder.set_output_ids(std::move(ids).value());
  }
  auto model = s->arch_->build(builder);
  if (!model.ok()) return model.status();
  s->model_ = std::move(model).value();
  s->attention_ = builder.made_attention();
  s->request_vocabulary_ = builder.request_vocabulary();
  if (s->request_vocabulary_)
    spdlog::info("{}: the output head computes {} of {} tokens (the most used in {}) and each request's own",
                 s->file_->source(), kept_ids, s->tokenizer_->vocab_size(),
                 pipeline.output_vocabulary_text.string());

  const int64_t vocab = s->model_->vocab_size();
  if (vocab <= 0)
    return Internal(fmt::format("architecture plugin '{}' built a model with {} vocabulary rows", s->arch_name_, vocab));
  if (s->tokenizer_->vocab_size() > vocab)
    return CorruptData(fmt::format("{}: the tokenizer has {} tokens but the model's vocabulary has {} rows",
                                   s->file_->source(), s->tokenizer_->vocab_size(), vocab));

  SequenceStateSpec spec = s->model_->state_spec();
  const int64_t cap = pipeline.run.get_int("context");
  if (cap > 0 && cap < spec.max_context) spec.max_context = cap;
  if (spec.max_context <= 0)
    return Internal(fmt::format("architecture plugin '{}' reports a context of {}", s->arch_name_, spec.max_context));
  s->context_ = spec.max_context;
  s->n_layer_ = spec.n_layer();
  s->memory_truncates_ = !spec.has(LayerMemoryKind::recurrent);

  auto memory = registry.create<SequenceMemory>(*pipeline.kvcache.plugin, pipeline.kvcache.params);
  if (!memory.ok()) return memory.status();
  s->memory_ = *memory;
  TESSERA_RETURN_IF_ERROR(s->memory_->configure(spec));
  if (s->attention_) {
    for (int32_t l = 0; l < spec.n_layer(); ++l) {
      if (spec.layers[static_cast<size_t>(l)].kind != LayerMemoryKind::attention) continue;
      std::string why;
      const int32_t block_size = s->memory_->layer(l).block_size;
      if (!s->attention_->supports_block_size(block_size, &why))
        return InvalidArgument(fmt::format("attention plugin '{}' cannot read the '{}' kvcache (block size {}): {}",
                                           pipeline.attention.plugin->info->name,
                                           pipeline.kvcache.plugin->info->name, block_size, why));
      break;  // one pool layout for every attention layer
    }
  }

  auto strategy = registry.create<DecodingStrategy>(*pipeline.decoding.plugin, pipeline.decoding.params);
  if (!strategy.ok()) return strategy.status();
  s->strategy_ = *strategy;
  TESSERA_RETURN_IF_ERROR(s->open_speculation(registry));
  spdlog::debug("{}", s->describe());
  return s;
}

Status Session::open_speculation(const PluginRegistry& registry) {
  const bool lookup = drafts_with_lookup(pipeline_);
  if (!lookup && !pipeline_.draft) return Status::Ok();
  const ParamValues& p = pipeline_.speculative;
  std::unique_ptr<DraftModel> draft;
  if (pipeline_.draft) {
    auto session = Session::open(*pipeline_.draft, registry);
    if (!session.ok())
      return Status(session.status().code(), fmt::format("the draft model: {}", session.status().message()));
    TESSERA_RETURN_IF_ERROR(DraftModel::check_vocabularies(*tokenizer_, (*session)->tokenizer()));
    draft = std::make_unique<DraftModel>(std::move(session).value(), p.get_real("draft_min_probability"));
  }
  SpeculatorSettings settings;
  settings.lookup = lookup;
  settings.lookup_settings.min_ngram = static_cast<int32_t>(p.get_int("lookup_min_ngram"));
  settings.lookup_settings.max_ngram = static_cast<int32_t>(p.get_int("lookup_max_ngram"));
  settings.max_draft_tokens = static_cast<int32_t>(p.get_int("max_draft_tokens"));
  settings.adaptive = p.get_bool("adaptive");
  speculator_ = std::make_unique<Speculator>(settings, std::move(draft), strategy_.get(),
                                             static_cast<size_t>(model_->vocab_size()));
  return Status::Ok();
}

DraftProposer* Session::draft_proposer() { return speculator_.get(); }

std::string Session::describe() const {
  std::string speculation;
  if (speculator_) {
    DraftModel* draft = speculator_->draft_model();
    speculation = fmt::format(", speculative {}{}", pipeline_.speculative.get_string("method"),
                              draft ? fmt::format(" (draft: {})", draft->session().describe()) : "");
  }
  return fmt::format("model {} ({}, {} layers), arch plugin '{}', kvcache '{}', attention '{}', decoding '{}', "
                     "{} threads, context {}{}",
                     file_->source(), file_->architecture(), n_layer_, arch_name_,
                     pipeline_.kvcache.plugin->info->name,
                     attention_ ? pipeline_.attention.plugin->info->name : "none", pipeline_.decoding.plugin->info->name,
                     threads_, context_, speculation);
}

GenerationRequest Session::request_from_pipeline() const {
  GenerationRequest r;
  r.prompt = pipeline_.run.get_string("prompt");
  r.max_tokens = pipeline_.run.get_int("max_tokens");
  r.chat = pipeline_.run.get_bool("chat");
  r.system = pipeline_.run.get_string("system");
  const ParamValues& s = pipeline_.sampling;
  r.sampling.temperature = s.get_real("temperature");
  r.sampling.top_k = s.get_int("top_k");
  r.sampling.top_p = s.get_real("top_p");
  r.sampling.min_p = s.get_real("min_p");
  r.sampling.repetition_penalty = s.get_real("repetition_penalty");
  r.sampling.repeat_last_n = s.get_int("repeat_last_n");
  const int64_t seed = s.get_int("seed");
  r.sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  return r;
}

Result<std::vector<int32_t>> Session::prompt_ids(const GenerationRequest& request) const {
  if (!request.token_ids.empty()) {
    for (int32_t id : request.token_ids) {
      if (id < 0 || id >= tokenizer_->vocab_size())
        return InvalidArgument(fmt::format("prompt token {} is outside the vocabulary of {}", id,
                                           tokenizer_->vocab_size()));
    }
    return request.token_ids;
  }
  if (!request.messages.empty()) return build_chat_ids(*tokenizer_, request.messages);
  return build_prompt_ids(*tokenizer_, request.prompt, request.chat, request.system);
}

Result<GenerationResult> Session::generate(const GenerationRequest& request, const TextSink& on_text) {
  // One request is a batch of one: the same path as many, so that running a
  // request alone and in a batch cannot differ.
  Scheduler scheduler(*this);
  scheduler.submit(request);
  auto outcomes = scheduler.run([&](size_t, std::string_view text) {
    if (on_text) on_text(text);
  });
  last_speculation_ = scheduler.stats().speculation;
  if (!outcomes.ok()) return outcomes.status();
  RequestOutcome& outcome = outcomes->front();
  if (!outcome.status.ok()) return outcome.status;
  return std::move(outcome.result);
}

Status Session::run_chunks(SeqId seq, std::span<const int32_t> tokens, int32_t n_past,
                           const std::function<Status(const Batch&, size_t done)>& step) {
  for (size_t done = 0; done < tokens.size();) {
    // kPrefillChunk is a multiple of kPromptSplitAlignment: a piece always reaches one.
    const auto left = static_cast<int32_t>(tokens.size() - done);
    const int32_t n = aligned_prompt_piece(n_past + static_cast<int64_t>(done), std::min(kPrefillChunk, left), left);
    TESSERA_RETURN_IF_ERROR(memory_->append_slots(seq, n));
    const BatchSeq bs{seq, 0, n, n_past + static_cast<int32_t>(done), /*n_logits=*/0};
    const Batch batch{tokens.subspan(done, static_cast<size_t>(n)), std::span<const BatchSeq>(&bs, 1)};
    if (governor_) governor_->before_step();
    const Status status = step(batch, done);
    if (governor_) governor_->after_step();
    TESSERA_RETURN_IF_ERROR(status);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status Session::extend(SeqId seq, std::span<const int32_t> tokens, int32_t n_past, bool all_logits,
                       float* logits) {
  const auto vocab = static_cast<size_t>(vocab_size());
  return run_chunks(seq, tokens, n_past, [&](const Batch& batch, size_t done) {
    BatchSeq bs = batch.seqs[0];
    const bool last = done + static_cast<size_t>(bs.n_tokens) == tokens.size();
    bs.n_logits = all_logits ? bs.n_tokens : (last ? 1 : 0);
    return model_->forward(Batch{batch.tokens, std::span<const BatchSeq>(&bs, 1)}, *memory_,
                           all_logits ? logits + done * vocab : logits);
  });
}

Result<std::vector<float>> Session::score(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgument("nothing to score: no tokens");
  if (static_cast<int64_t>(tokens.size()) > context_)
    return InvalidArgument(fmt::format("{} tokens do not fit the context of {}", tokens.size(), context_));
  const auto vocab = static_cast<size_t>(vocab_size());
  std::vector<float> logits(tokens.size() * vocab);
  auto seq = memory_->create_sequence();
  if (!seq.ok()) return seq.status();
  const Status status = extend(*seq, tokens, 0, /*all_logits=*/true, logits.data());
  last_memory_stats_ = memory_->stats();
  memory_->release(*seq);
  if (!status.ok()) return status;
  return logits;
}

Status Session::run_through(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgument("nothing to run: no tokens");
  if (static_cast<int64_t>(tokens.size()) > context_)
    return InvalidArgument(fmt::format("{} tokens do not fit the context of {}", tokens.size(), context_));
  std::vector<float> logits(tokens.size() * static_cast<size_t>(vocab_size()));
  auto seq = memory_->create_sequence();
  if (!seq.ok()) return seq.status();
  const Status status = extend(*seq, tokens, 0, /*all_logits=*/true, logits.data());
  memory_->release(*seq);
  return status;
}

int32_t Session::separable_layers() const {
  if (!provides(*model_, 6) || model_->hidden_size() <= 0) return 0;
  return std::max<int32_t>(model_->layer_count(), 0);
}

Status Session::embed(std::span<const int32_t> tokens, float* hidden) {
  if (separable_layers() == 0) return Unsupported("the model does not run its layers one at a time");
  return model_->embed(tokens, hidden);
}

Status Session::run_layers(std::span<const int32_t> tokens, int32_t first_layer, int32_t last_layer, float* hidden) {
  if (separable_layers() == 0) return Unsupported("the model does not run its layers one at a time");
  if (tokens.empty()) return InvalidArgument("nothing to run: no tokens");
  if (static_cast<int64_t>(tokens.size()) > context_)
    return InvalidArgument(fmt::format("{} tokens do not fit the context of {}", tokens.size(), context_));
  auto seq = memory_->create_sequence();
  if (!seq.ok()) return seq.status();
  const int64_t width = model_->hidden_size();
  const Status status = run_chunks(*seq, tokens, 0, [&](const Batch& batch, size_t done) {
    // Every row's output is wanted, as every row's logits are in run_through
    // (whose whole forwards layer-by-layer calibration must reproduce): a
    // model may compute rows whose results are asked otherwise than the
    // rest of a prompt (Mamba-2's chunked scan).
    BatchSeq bs = batch.seqs[0];
    bs.n_logits = bs.n_tokens;
    const Batch all_rows{batch.tokens, std::span<const BatchSeq>(&bs, 1)};
    return model_->forward_layers(all_rows, *memory_, first_layer, last_layer,
                                  hidden + static_cast<int64_t>(done) * width);
  });
  memory_->release(*seq);
  return status;
}

nlohmann::json Session::plugin_stats() const {
  const MemoryStats& k = last_memory_stats_;
  const double waste = k.bytes_allocated > 0
                           ? 100.0 * static_cast<double>(k.bytes_allocated - std::min(k.bytes_live, k.bytes_allocated)) /
                                 static_cast<double>(k.bytes_allocated)
                           : 0.0;
  nlohmann::json j = {{"kvcache",
           {{"plugin", pipeline_.kvcache.plugin->info->name},
            {"blocks_total", k.blocks_total},
            {"blocks_used", k.blocks_used},
            {"bytes_reserved", k.bytes_reserved},
            {"bytes_allocated", k.bytes_allocated},
            {"bytes_live", k.bytes_live},
            {"waste_percent", waste},
            {"prefix_hit_tokens", k.prefix_hit_tokens},
            {"states_total", k.states_total},
            {"states_used", k.states_used}}},
          {"attention", {{"plugin", attention_ ? pipeline_.attention.plugin->info->name : "none"}}},
          {"decoding", {{"plugin", pipeline_.decoding.plugin->info->name}}},
          {"arch", {{"plugin", arch_name_}, {"weight_bytes", model_->weight_bytes()}}}};
  if (speculator_ && speculator_->draft_model()) j["draft"] = speculator_->draft_model()->session().plugin_stats();
  return j;
}

Status Session::explain_nonfinite_logits() const {
  // Search every weight, in file order, through the quant plugin that
  // executes its format, a bounded number of rows at a time.
  constexpr int64_t kRowsPerRead = 64;
  std::vector<float> rows;
  for (const TensorRef& t : file_->tensors()) {
    const auto q = std::find_if(quantizers_.begin(), quantizers_.end(), [&](const auto& quantizer) {
      const auto formats = quantizer->formats();
      return std::find(formats.begin(), formats.end(), t.format) != formats.end();
    });
    if (q == quantizers_.end() || t.ndim < 1 || t.ndim > 2) continue;
    const int64_t n_rows = t.ndim == 2 ? t.rows() : 1;
    rows.resize(static_cast<size_t>(std::min(kRowsPerRead, n_rows) * (t.ndim == 2 ? t.cols() : t.numel())));
    for (int64_t first = 0; first < n_rows; first += kRowsPerRead) {
      const int64_t n = std::min(kRowsPerRead, n_rows - first);
      if (!(*q)->dequantize_rows(t, first, n, rows.data()).ok()) break;
      const size_t count = static_cast<size_t>(n * (t.ndim == 2 ? t.cols() : t.numel()));
      if (!all_finite(std::span<const float>(rows.data(), count)))
        return CorruptData(fmt::format(
            "the model produced non-finite logits (NaN or infinity): {} may be corrupt; its tensor '{}' holds a "
            "non-finite value in rows {}..{}",
            file_->source(), t.name, first, first + n - 1));
    }
  }
  return CorruptData(fmt::format(
      "the model produced non-finite logits (NaN or infinity), though every weight of {} is finite: the activations "
      "overflowed (try pipelines/exact.toml's f32 arithmetic) or the model file is not what its metadata says",
      file_->source()));
}

}  // namespace tessera

#include "engine/session.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/model_builder.hpp"
#include "engine/prompt.hpp"
#include "engine/scheduler.hpp"
#include "model/model_file.hpp"

namespace tessera {

namespace {

// Longest run of prompt tokens one forward takes: bounds the model's scratch
// memory for long prompts and exercises the same path chunked prefill uses.
constexpr int32_t kPrefillChunk = 512;

Result<std::shared_ptr<Architecture>> choose_architecture(const Pipeline& pipeline, const PluginRegistry& registry,
                                                          const std::string& model_arch, std::string* chosen) {
  if (pipeline.arch) {
    auto arch = registry.create<Architecture>(*pipeline.arch->plugin, pipeline.arch->params);
    if (!arch.ok()) return arch.status();
    *chosen = pipeline.arch->plugin->info->name;
    return arch;
  }
  std::vector<std::string> tried;
  for (const LoadedPlugin* p : registry.plugins(PluginFamily::architecture)) {
    auto params = default_params(*p->info);
    if (!params.ok()) continue;
    auto arch = registry.create<Architecture>(*p, *params);
    if (!arch.ok()) {
      spdlog::warn("{}", arch.status().message());
      continue;
    }
    const auto supported = (*arch)->supported();
    if (std::find(supported.begin(), supported.end(), model_arch) != supported.end()) {
      *chosen = p->info->name;
      return arch;
    }
    tried.push_back(fmt::format("{} ({})", p->info->name, fmt::join(supported, ", ")));
  }
  return Unsupported(fmt::format("no architecture plugin can load this model (architecture '{}'); available: {}",
                                 model_arch, tried.empty() ? std::string("none found") : fmt::format("{}", fmt::join(tried, "; "))));
}

}  // namespace

Session::~Session() = default;

const ModelHParams& Session::hparams() const { return file_->hparams(); }

Result<std::unique_ptr<Session>> Session::open(const Pipeline& pipeline, const PluginRegistry& registry) {
  std::unique_ptr<Session> s(new Session());
  s->pipeline_ = pipeline;

  const int64_t threads = pipeline.run.get_int("threads");
  s->threads_ = threads > 0 ? static_cast<int>(threads) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  omp_set_num_threads(s->threads_);

  auto file = open_model(pipeline.model.get_string("path"));
  if (!file.ok()) return file.status();
  s->file_ = std::move(file).value();

  auto tokenizer = load_model_tokenizer(*s->file_);
  if (!tokenizer.ok()) return tokenizer.status();
  s->tokenizer_ = std::make_unique<tok::Tokenizer>(std::move(tokenizer).value());

  // Every quant plugin found, in search order: the first to declare a format
  // runs it. The one [quant] names comes first, with the pipeline's parameters.
  std::vector<std::shared_ptr<Quantizer>> quantizers;
  auto add_quantizer = [&](const LoadedPlugin& plugin, const ParamValues& params) -> Status {
    auto q = registry.create<Quantizer>(plugin, params);
    if (!q.ok()) return q.status();
    quantizers.push_back(*q);
    s->keep_alive_.push_back(*q);
    return Status::Ok();
  };
  if (pipeline.quant) TESSERA_RETURN_IF_ERROR(add_quantizer(*pipeline.quant->plugin, pipeline.quant->params));
  for (const LoadedPlugin* p : registry.plugins(PluginFamily::quant)) {
    if (pipeline.quant && p == pipeline.quant->plugin) continue;
    auto params = default_params(*p->info);
    if (!params.ok()) return params.status();
    TESSERA_RETURN_IF_ERROR(add_quantizer(*p, *params));
  }
  auto attention = registry.create<AttentionKernel>(*pipeline.attention.plugin, pipeline.attention.params);
  if (!attention.ok()) return attention.status();

  auto arch = choose_architecture(pipeline, registry, s->file_->hparams().arch, &s->arch_name_);
  if (!arch.ok()) return arch.status();
  s->arch_ = *arch;

  CoreModelBuilder builder(*s->file_, quantizers, *attention);
  auto model = s->arch_->build(builder);
  if (!model.ok()) return model.status();
  s->model_ = std::move(model).value();

  if (s->tokenizer_->vocab_size() > s->file_->hparams().vocab_size && s->file_->hparams().vocab_size > 0)
    return CorruptData(fmt::format("{}: the tokenizer has {} tokens but the model's vocabulary has {} rows",
                                   s->file_->source(), s->tokenizer_->vocab_size(), s->file_->hparams().vocab_size));

  SequenceStateSpec spec = s->model_->state_spec();
  const int64_t cap = pipeline.run.get_int("context");
  if (cap > 0 && cap < spec.max_context) spec.max_context = cap;
  s->context_ = spec.max_context;

  auto cache = registry.create<KvCache>(*pipeline.kvcache.plugin, pipeline.kvcache.params);
  if (!cache.ok()) return cache.status();
  s->cache_ = *cache;
  TESSERA_RETURN_IF_ERROR(s->cache_->configure(spec));
  std::string why;
  const int32_t block_size = s->cache_->layer(0).block_size;
  if (!(*attention)->supports_block_size(block_size, &why))
    return InvalidArgument(fmt::format("attention plugin '{}' cannot read the '{}' cache (block size {}): {}",
                                       pipeline.attention.plugin->info->name, pipeline.kvcache.plugin->info->name,
                                       block_size, why));

  auto strategy = registry.create<DecodingStrategy>(*pipeline.decoding.plugin, pipeline.decoding.params);
  if (!strategy.ok()) return strategy.status();
  s->strategy_ = *strategy;
  s->keep_alive_.push_back(*attention);
  s->logits_.resize(static_cast<size_t>(s->file_->hparams().vocab_size));
  spdlog::debug("{}", s->describe());
  return s;
}

std::string Session::describe() const {
  return fmt::format("model {} ({}, {} layers), arch plugin '{}', kvcache '{}', attention '{}', decoding '{}', "
                     "{} threads, context {}",
                     file_->source(), hparams().arch, hparams().block_count, arch_name_,
                     pipeline_.kvcache.plugin->info->name, pipeline_.attention.plugin->info->name,
                     pipeline_.decoding.plugin->info->name, threads_, context_);
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
  if (!outcomes.ok()) return outcomes.status();
  RequestOutcome& outcome = outcomes->front();
  if (!outcome.status.ok()) return outcome.status;
  return std::move(outcome.result);
}

Status Session::extend(SeqId seq, std::span<const int32_t> tokens, int32_t n_past, bool all_logits,
                       float* logits) {
  const auto vocab = static_cast<size_t>(hparams().vocab_size);
  for (size_t done = 0; done < tokens.size();) {
    const auto n = static_cast<int32_t>(std::min<size_t>(kPrefillChunk, tokens.size() - done));
    TESSERA_RETURN_IF_ERROR(cache_->append_slots(seq, n));
    const BatchSeq bs{seq, 0, n, n_past + static_cast<int32_t>(done), all_logits};
    const Batch batch{tokens.subspan(done, static_cast<size_t>(n)), std::span<const BatchSeq>(&bs, 1)};
    TESSERA_RETURN_IF_ERROR(model_->forward(batch, *cache_, all_logits ? logits + done * vocab : logits));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<std::vector<float>> Session::score(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgument("nothing to score: no tokens");
  if (static_cast<int64_t>(tokens.size()) > context_)
    return InvalidArgument(fmt::format("{} tokens do not fit the context of {}", tokens.size(), context_));
  const auto vocab = static_cast<size_t>(hparams().vocab_size);
  std::vector<float> logits(tokens.size() * vocab);
  auto seq = cache_->create_sequence();
  if (!seq.ok()) return seq.status();
  const Status status = extend(*seq, tokens, 0, /*all_logits=*/true, logits.data());
  last_kv_stats_ = cache_->stats();
  cache_->release(*seq);
  if (!status.ok()) return status;
  return logits;
}

nlohmann::json Session::plugin_stats() const {
  const KvStats& k = last_kv_stats_;
  const double waste = k.bytes_allocated > 0
                           ? 100.0 * static_cast<double>(k.bytes_allocated - std::min(k.bytes_live, k.bytes_allocated)) /
                                 static_cast<double>(k.bytes_allocated)
                           : 0.0;
  return {{"kvcache",
           {{"plugin", pipeline_.kvcache.plugin->info->name},
            {"blocks_total", k.blocks_total},
            {"blocks_used", k.blocks_used},
            {"bytes_reserved", k.bytes_reserved},
            {"bytes_allocated", k.bytes_allocated},
            {"bytes_live", k.bytes_live},
            {"waste_percent", waste},
            {"prefix_hit_tokens", k.prefix_hit_tokens}}},
          {"attention", {{"plugin", pipeline_.attention.plugin->info->name}}},
          {"decoding", {{"plugin", pipeline_.decoding.plugin->info->name}}},
          {"arch", {{"plugin", arch_name_}, {"weight_bytes", model_->weight_bytes()}}}};
}

}  // namespace tessera

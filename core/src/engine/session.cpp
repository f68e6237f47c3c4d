#include "engine/session.hpp"

#include <omp.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "engine/decoding_context.hpp"
#include "engine/model_builder.hpp"
#include "engine/prompt.hpp"
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

  // Every quant plugin found, in search order: the first to declare a format runs it.
  std::vector<std::shared_ptr<Quantizer>> quantizers;
  for (const LoadedPlugin* p : registry.plugins(PluginFamily::quant)) {
    auto params = default_params(*p->info);
    if (!params.ok()) return params.status();
    auto q = registry.create<Quantizer>(*p, *params);
    if (!q.ok()) return q.status();
    quantizers.push_back(*q);
    s->keep_alive_.push_back(*q);
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
  return build_prompt_ids(*tokenizer_, request.prompt, request.chat, request.system);
}

Status Session::forward_chunked(SeqId seq, std::span<const int32_t> tokens, int32_t n_past, float* last_logits) {
  for (size_t done = 0; done < tokens.size();) {
    const auto n = static_cast<int32_t>(std::min<size_t>(kPrefillChunk, tokens.size() - done));
    TESSERA_RETURN_IF_ERROR(cache_->append_slots(seq, n));
    const BatchSeq bs{seq, 0, n, n_past + static_cast<int32_t>(done), false};
    const Batch batch{tokens.subspan(done, static_cast<size_t>(n)), std::span<const BatchSeq>(&bs, 1)};
    TESSERA_RETURN_IF_ERROR(model_->forward(batch, *cache_, last_logits));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<GenerationResult> Session::generate(const GenerationRequest& request, const TextSink& on_text) {
  const auto start = Clock::now();
  auto ids = prompt_ids(request);
  if (!ids.ok()) return ids.status();
  GenerationResult result;
  result.prompt_ids = std::move(ids).value();
  RequestMetrics& m = result.metrics;
  m.prompt_tokens = static_cast<int64_t>(result.prompt_ids.size());
  m.seed = request.sampling.seed;
  if (m.prompt_tokens >= context_)
    return InvalidArgument(fmt::format("the prompt has {} tokens but the context holds {} (at least one more is "
                                       "needed to generate); shorten the prompt or raise [run] context",
                                       m.prompt_tokens, context_));
  if (request.max_tokens == 0) {
    m.stop_reason = "max_tokens";
    return result;
  }

  auto seq = cache_->create_sequence();
  if (!seq.ok()) return seq.status();
  struct Release {
    KvCache& cache;
    SeqId seq;
    KvStats* stats;
    ~Release() {
      *stats = cache.stats();
      cache.release(seq);
    }
  } release{*cache_, *seq, &last_kv_stats_};

  TESSERA_RETURN_IF_ERROR(forward_chunked(*seq, result.prompt_ids, 0, logits_.data()));
  const auto prefill_end = Clock::now();
  m.prefill_ms = ms_between(start, prefill_end);

  RequestDecodingContext ctx(logits_, result.prompt_ids, request.sampling);
  tok::StreamDecoder stream(*tokenizer_);
  std::vector<int32_t> chosen;
  Clock::time_point first_token_at{};
  m.stop_reason = "max_tokens";
  while (m.generated_tokens < request.max_tokens) {
    chosen.clear();
    TESSERA_RETURN_IF_ERROR(strategy_->step(ctx, chosen));
    if (chosen.empty()) return Internal(fmt::format("decoding plugin '{}' chose no token",
                                                    pipeline_.decoding.plugin->info->name));
    if (m.generated_tokens == 0) {
      first_token_at = Clock::now();
      m.ttft_ms = ms_between(start, first_token_at);
    }
    bool stop = false;
    for (int32_t token : chosen) {
      if (token < 0 || token >= static_cast<int32_t>(logits_.size()))
        return Internal(fmt::format("decoding plugin '{}' chose token {} outside the vocabulary",
                                    pipeline_.decoding.plugin->info->name, token));
      if (tokenizer_->is_end_of_generation(token)) {
        m.stop_reason = "eos";
        stop = true;
        break;
      }
      m.token_ids.push_back(token);
      ++m.generated_tokens;
      ctx.push(token);
      const std::string piece = stream.push(token);
      result.text += piece;
      if (on_text && !piece.empty()) on_text(piece);
      if (m.generated_tokens >= request.max_tokens) {
        stop = true;
        break;
      }
    }
    if (stop) break;
    const int32_t n_past = static_cast<int32_t>(result.prompt_ids.size() + m.token_ids.size()) - 1;
    if (n_past + 1 >= context_) {
      m.stop_reason = "context_full";
      break;
    }
    TESSERA_RETURN_IF_ERROR(forward_chunked(*seq, std::span<const int32_t>(&m.token_ids.back(), 1), n_past,
                                            logits_.data()));
  }
  const std::string tail = stream.flush();
  result.text += tail;
  if (on_text && !tail.empty()) on_text(tail);
  if (m.generated_tokens > 0) m.decode_ms = ms_between(first_token_at, Clock::now());
  return result;
}

Result<std::vector<float>> Session::score(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgument("nothing to score: no tokens");
  if (static_cast<int64_t>(tokens.size()) > context_)
    return InvalidArgument(fmt::format("{} tokens do not fit the context of {}", tokens.size(), context_));
  const auto vocab = static_cast<size_t>(hparams().vocab_size);
  std::vector<float> logits(tokens.size() * vocab);
  auto seq = cache_->create_sequence();
  if (!seq.ok()) return seq.status();
  Status status;
  for (size_t done = 0; done < tokens.size() && status.ok();) {
    const auto n = static_cast<int32_t>(std::min<size_t>(kPrefillChunk, tokens.size() - done));
    status = cache_->append_slots(*seq, n);
    if (!status.ok()) break;
    const BatchSeq bs{*seq, 0, n, static_cast<int32_t>(done), true};
    const Batch batch{tokens.subspan(done, static_cast<size_t>(n)), std::span<const BatchSeq>(&bs, 1)};
    status = model_->forward(batch, *cache_, logits.data() + done * vocab);
    done += static_cast<size_t>(n);
  }
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

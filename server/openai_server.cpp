#include "openai_server.hpp"

#include <csignal>
#include <ctime>
#include <random>
#include <variant>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "api_error.hpp"
#include "chat_page.hpp"
#include "engine_loop.hpp"
#include "openai_request.hpp"
#include "openai_response.hpp"

namespace tessera::server {

using json = nlohmann::json;

namespace {

enum State : int { kLoading = 0, kReady = 1, kDraining = 2 };

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.http_status;
  res.set_content(e.to_json().dump(), "application/json");
}

std::string new_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return fmt::format("{}{:016x}{:08x}", prefix, salt, ++counter);
}

// Whether the request carries "Authorization: Bearer <key>". Compared in time
// that does not depend on where the strings differ.
bool authorized(const httplib::Request& req, const std::string& key) {
  const std::string given = req.get_header_value("Authorization");
  const std::string expected = "Bearer " + key;
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return diff == 0;
}

// The engine requests (one per choice) for an API request, each checked
// against the context and the memory so that the client gets a 400 with the
// numbers rather than a request the engine refuses later.
struct Planned {
  std::vector<GenerationRequest> requests;
  int64_t prompt_tokens = 0;
};

std::variant<Planned, ApiError> plan_requests(const CompletionRequest& api, const Session& session,
                                              int64_t max_sequence_tokens) {
  GenerationRequest base = session.request_from_pipeline();
  base.prompt.clear();
  base.system.clear();
  if (api.endpoint == Endpoint::chat_completions) {
    base.messages = api.messages;
    base.chat = true;
  } else {
    base.prompt = api.prompt;
    base.token_ids = api.prompt_ids;
    base.chat = false;  // a completion continues the text as it is
  }
  if (api.temperature) base.sampling.temperature = *api.temperature;
  if (api.top_p) base.sampling.top_p = *api.top_p;
  if (api.top_k) base.sampling.top_k = *api.top_k;
  if (api.min_p) base.sampling.min_p = *api.min_p;
  if (api.repetition_penalty) base.sampling.repetition_penalty = *api.repetition_penalty;
  base.stop = api.stop;

  auto ids = session.prompt_ids(base);
  if (!ids.ok()) {
    ApiError e = bad_request(ids.status().message(), api.endpoint == Endpoint::chat_completions ? "messages" : "prompt");
    return e;
  }
  const auto n_prompt = static_cast<int64_t>(ids->size());
  const int64_t context = std::min(session.context_length(), max_sequence_tokens);
  if (n_prompt >= context) {
    ApiError e = bad_request(fmt::format("this model's context holds {} tokens, and the prompt has {} (at least "
                                         "one more is needed to generate); shorten the prompt",
                                         context, n_prompt),
                             api.endpoint == Endpoint::chat_completions ? "messages" : "prompt");
    e.code = "context_length_exceeded";
    return e;
  }
  if (api.max_tokens && n_prompt + *api.max_tokens > context) {
    ApiError e = bad_request(fmt::format("this model's context holds {} tokens: the prompt's {} and max_tokens' "
                                         "{} make {}; lower max_tokens or shorten the prompt",
                                         context, n_prompt, *api.max_tokens, n_prompt + *api.max_tokens),
                             "max_tokens");
    e.code = "context_length_exceeded";
    return e;
  }
  // OpenAI's defaults: 16 tokens for a completion, the rest of the context for a chat.
  base.max_tokens = api.max_tokens.value_or(api.endpoint == Endpoint::completions
                                                ? std::min<int64_t>(16, context - n_prompt)
                                                : context - n_prompt);
  base.token_ids = std::move(*ids);  // tokenized once, here
  base.messages.clear();

  Planned planned;
  planned.prompt_tokens = n_prompt;
  const uint64_t seed = api.seed.value_or(std::random_device{}());
  for (int64_t i = 0; i < api.n; ++i) {
    GenerationRequest r = base;
    r.sampling.seed = seed + static_cast<uint64_t>(i);  // choices differ, and repeat with the same seed
    planned.requests.push_back(std::move(r));
  }
  return planned;
}

// One API request in flight: its engine requests (one per choice) and what
// has been sent of them. Shared by the content provider's calls.
struct InFlight {
  Endpoint endpoint;
  ResponseHead head;
  bool include_usage = false;
  int64_t prompt_tokens = 0;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  std::vector<bool> finished;
  std::vector<bool> started;   // chat streams: the role chunk sent
  std::vector<std::string> text;  // whole responses: each choice's text
  Clock::time_point last_write = Clock::now();
  bool complete = false;

  bool all_finished() const { return std::all_of(finished.begin(), finished.end(), [](bool f) { return f; }); }
  int64_t completion_tokens() const {
    int64_t n = 0;
    for (const auto& h : handles) n += h->outcome().result.metrics.generated_tokens;
    return n;
  }
  // The first failure among the choices (the engine failed), or null.
  const Status* failure() const {
    for (const auto& h : handles)
      if (!h->outcome().status.ok()) return &h->outcome().status;
    return nullptr;
  }
};

// Waits a little for any choice's text or end: on the first choice not yet
// finished, then the others without waiting. Calls on_text(choice, text) and
// on_finish(choice) for what arrived.
template <typename OnText, typename OnFinish>
void collect(InFlight& f, OnText on_text, OnFinish on_finish) {
  bool waited = false;
  for (size_t i = 0; i < f.handles.size(); ++i) {
    if (f.finished[i]) continue;
    auto update = f.handles[i]->wait(waited ? std::chrono::milliseconds(0) : std::chrono::milliseconds(100));
    waited = true;
    if (!update.text.empty()) on_text(i, update.text);
    if (update.finished) {
      f.finished[i] = true;
      on_finish(i);
    }
  }
}

}  // namespace

OpenAiServer::OpenAiServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()), created_(std::time(nullptr)) {
  install_routes();
}

OpenAiServer::~OpenAiServer() { stop(); }

Result<int> OpenAiServer::bind() {
  if (options_.port == 0) {
    const int port = http_->bind_to_any_port(options_.host);
    if (port <= 0) return Unavailable(fmt::format("cannot listen on {}: no port could be bound", options_.host));
    options_.port = port;
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    return Unavailable(fmt::format("cannot listen on {}:{} (is the port taken, or the address not this machine's?)",
                                   options_.host, options_.port));
  return options_.port;
}

void OpenAiServer::start() {
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

void OpenAiServer::serve(Session& session, SchedulerConfig config) {
  // A server cannot know how long answers will be: admit on the prompt and
  // preempt (recompute) if memory runs out, as vLLM does.
  config.reserve_max_tokens = false;
  session_ = &session;
  max_sequence_tokens_ = session.memory().max_sequence_tokens();
  engine_ = std::make_unique<EngineLoop>(session, config, options_.max_queue);
  state_ = kReady;
}

size_t OpenAiServer::drain(std::chrono::milliseconds bound) {
  state_ = kDraining;
  size_t cancelled = 0;
  if (engine_) {
    engine_->stop_accepting();
    const auto deadline = Clock::now() + bound;
    while (engine_->in_flight() > 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancelled = engine_->in_flight();
    if (cancelled > 0) {
      engine_->cancel_all();
      while (engine_->in_flight() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The engine is done; let the handlers write their last chunks (a client
    // that stopped reading holds one up to the write timeout, no longer).
    const auto written_by = Clock::now() + std::chrono::seconds(5);
    while (open_responses_ > 0 && Clock::now() < written_by)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop();
  return cancelled;
}

void OpenAiServer::stop() {
  if (engine_) {
    engine_->stop_accepting();
    engine_->cancel_all();
  }
  // Handlers still writing see their requests end and return; the pool joins them.
  http_->stop();
  if (thread_.joinable()) thread_.join();
  engine_.reset();
}

void OpenAiServer::install_routes() {
  httplib::Server& http = *http_;
  // Each connection holds a pool thread while its request generates: enough
  // threads for a full queue, plus a few for /health and /metrics.
  const size_t threads = options_.max_queue + 8;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which would let a
  // second server bind the same port and share its connections silently.
  http.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_payload_max_length(options_.max_body_bytes);
  http.set_keep_alive_timeout(2);
  http.set_read_timeout(30);
  http.set_write_timeout(30);

  // Every error httplib makes itself (unknown route 404, body too large 413,
  // bad request line 400) in OpenAI's error shape.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e{res.status, fmt::format("HTTP {} for {} {}", res.status, req.method, req.path), "invalid_request_error",
               "", ""};
    if (res.status == 404) e.message = fmt::format("no route {} {}", req.method, req.path);
    if (res.status == 413) e.message = "the request body is larger than this server accepts (--max-body-bytes)";
    if (res.status >= 500) e.type = "server_error";
    res.set_content(e.to_json().dump(), "application/json");
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("a request handler failed: {}", what);
    send_error(res, {500, "internal error: " + what, "server_error", "", "internal_error"});
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    spdlog::debug("{} {} -> {}", req.method, req.path, res.status);
    if (EngineLoop* engine = this->engine()) engine->metrics().record_response(res.status);
  });

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const int state = state_;
    res.status = state == kReady ? 200 : 503;
    const char* word = state == kReady ? "ok" : state == kLoading ? "loading" : "draining";
    res.set_content(json{{"status", word}}.dump(), "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    EngineLoop* engine = this->engine();
    if (engine == nullptr) {
      res.status = 503;
      res.set_content("# the pipeline is loading\n", "text/plain; version=0.0.4");
      return;
    }
    res.set_content(engine->metrics().render(engine->snapshot()), "text/plain; version=0.0.4");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
  });

  // /v1/*: the API key (when set) and readiness first.
  auto gate = [this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.api_key.empty() && !authorized(req, options_.api_key)) {
      send_error(res, {401, "a valid API key is needed: send 'Authorization: Bearer <key>'", "invalid_request_error",
                       "", "invalid_api_key"});
      return false;
    }
    const int state = state_;
    if (state != kReady) {
      send_error(res, {503, state == kLoading ? "the model is loading; retry shortly" : "the server is shutting down",
                       "server_error", "", "unavailable"});
      return false;
    }
    return true;
  };

  http.Get("/v1/models", [this, gate](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    res.set_content(models_json(options_.model_name, created_).dump(), "application/json");
  });
  http.Get(R"(/v1/models/(.+))", [this, gate](const httplib::Request& req, httplib::Response& res) {
    if (!gate(req, res)) return;
    if (req.matches[1] != options_.model_name) {
      return send_error(res, {404, fmt::format("the model '{}' does not exist: this server serves '{}'",
                                               req.matches[1].str(), options_.model_name),
                              "invalid_request_error", "model", "model_not_found"});
    }
    res.set_content(models_json(options_.model_name, created_)["data"][0].dump(), "application/json");
  });

  auto generate = [this, gate](Endpoint endpoint) {
    return [this, gate, endpoint](const httplib::Request& req, httplib::Response& res) {
      if (!gate(req, res)) return;
      auto parsed = parse_completion_request(req.body, endpoint);
      if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
      const CompletionRequest& api = std::get<CompletionRequest>(parsed);
      if (!api.model.empty() && api.model != options_.model_name) {
        return send_error(res, {404, fmt::format("the model '{}' does not exist: this server serves '{}'", api.model,
                                                 options_.model_name),
                                "invalid_request_error", "model", "model_not_found"});
      }
      auto planned = plan_requests(api, *session_, max_sequence_tokens_);
      if (auto* e = std::get_if<ApiError>(&planned)) return send_error(res, *e);

      auto f = std::make_shared<InFlight>();
      f->endpoint = endpoint;
      f->head = {new_id(endpoint == Endpoint::chat_completions ? "chatcmpl-" : "cmpl-"),
                 static_cast<int64_t>(std::time(nullptr)), options_.model_name};
      f->include_usage = api.include_usage;
      f->prompt_tokens = std::get<Planned>(planned).prompt_tokens;
      for (auto& r : std::get<Planned>(planned).requests) {
        auto handle = engine_->submit(std::move(r));
        if (!handle.ok()) {
          for (auto& h : f->handles) engine_->cancel(h);
          return send_error(res, from_status(handle.status()));
        }
        f->handles.push_back(*handle);
      }
      f->finished.assign(f->handles.size(), false);
      f->started.assign(f->handles.size(), false);
      f->text.assign(f->handles.size(), std::string());

      EngineLoop* engine = engine_.get();
      const auto keep_alive = options_.keep_alive_interval;
      // Runs when the response is gone (written or not). The connection closed
      // before the response ended: the choices still running are cancelled,
      // their memory freed.
      ++open_responses_;
      auto release = [this, f, engine](bool) {
        if (!f->complete) {
          for (size_t i = 0; i < f->handles.size(); ++i)
            if (!f->finished[i]) engine->cancel(f->handles[i]);
        }
        --open_responses_;
      };

      if (api.stream) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
        res.set_chunked_content_provider(
            "text/event-stream",
            [f, keep_alive](size_t, httplib::DataSink& sink) {
              std::string out;
              collect(
                  *f,
                  [&](size_t i, const std::string& text) {
                    const bool role = f->endpoint == Endpoint::chat_completions && !f->started[i];
                    f->started[i] = true;
                    out += sse_event(chunk_json(f->endpoint, f->head, static_cast<int64_t>(i), text, "", role));
                  },
                  [&](size_t i) {
                    const RequestOutcome& o = f->handles[i]->outcome();
                    if (!o.status.ok()) {
                      out += sse_event(from_status(o.status).to_json());
                      return;
                    }
                    // The stream's last chunk carries the usage, unless the
                    // client asked for OpenAI's separate usage chunk.
                    const bool last = f->all_finished() && !f->include_usage;
                    const json usage = last ? usage_json(f->prompt_tokens, f->completion_tokens()) : json(nullptr);
                    const bool role = f->endpoint == Endpoint::chat_completions && !f->started[i];
                    f->started[i] = true;
                    out += sse_event(chunk_json(f->endpoint, f->head, static_cast<int64_t>(i), "",
                                                finish_reason_for(o.result.metrics.stop_reason), role, usage));
                  });
              if (f->all_finished()) {
                if (f->include_usage)
                  out += sse_event(
                      usage_chunk_json(f->endpoint, f->head, usage_json(f->prompt_tokens, f->completion_tokens())));
                out += kSseDone;
              } else if (out.empty() && Clock::now() - f->last_write > keep_alive) {
                out = ": keep-alive\n\n";  // an SSE comment: clients skip it; a closed connection fails the write
              }
              if (!out.empty()) {
                if (!sink.write(out.data(), out.size())) return false;
                f->last_write = Clock::now();
              }
              if (f->all_finished()) {
                f->complete = true;
                sink.done();
              }
              return true;
            },
            release);
        return;
      }

      res.set_chunked_content_provider(
          "application/json",
          [f, keep_alive](size_t, httplib::DataSink& sink) {
            collect(
                *f, [&](size_t i, const std::string& text) { f->text[i] += text; }, [](size_t) {});
            if (!f->all_finished()) {
              if (Clock::now() - f->last_write > keep_alive) {
                // JSON may begin with whitespace: a space tells a closed connection from a slow answer.
                if (!sink.write(" ", 1)) return false;
                f->last_write = Clock::now();
              }
              return true;
            }
            json body;
            if (const Status* failure = f->failure()) {
              body = from_status(*failure).to_json();
            } else {
              std::vector<Choice> choices;
              for (size_t i = 0; i < f->handles.size(); ++i)
                choices.push_back({f->text[i], finish_reason_for(f->handles[i]->outcome().result.metrics.stop_reason)});
              body = completion_json(f->endpoint, f->head, choices, usage_json(f->prompt_tokens, f->completion_tokens()));
            }
            const std::string out = body.dump(-1, ' ', false, json::error_handler_t::replace);
            if (!sink.write(out.data(), out.size())) return false;
            f->complete = true;
            sink.done();
            return true;
          },
          release);
    };
  };
  http.Post("/v1/completions", generate(Endpoint::completions));
  http.Post("/v1/chat/completions", generate(Endpoint::chat_completions));
}

}  // namespace tessera::server

// openai_server.hpp: `tessera serve`: the OpenAI HTTP API over one Session.
//
// Routes: POST /v1/completions and /v1/chat/completions (streamed as
// server-sent events with "stream": true), GET /v1/models, GET /health (503
// while the pipeline loads or the server drains, 200 when ready), GET
// /metrics (Prometheus text), GET / (a chat page). HTTP is cpp-httplib's
// (docs/architecture.md says why): a thread per connection from a pool, so a
// handler may block while its request generates; the engine runs on its own
// thread (EngineLoop) and every request goes through its scheduler.
//
// A client that goes away cancels its request: a write to its connection
// fails (streams write every token, and a keep-alive every second while a
// request waits; a non-streamed response writes a space before its JSON
// body, which JSON allows, for the same purpose), and the engine frees the
// request's memory before its next step.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "engine/scheduler.hpp"
#include "engine/session.hpp"
#include "tessera/status.hpp"

namespace httplib {
class Server;
}

namespace tessera::server {

class EngineLoop;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port (tests)
  std::string api_key;                      // "": no key asked
  size_t max_queue = 64;                    // requests in flight at once (running and waiting); beyond: 429
  size_t max_body_bytes = 8u << 20;         // request bodies beyond: 413
  std::string model_name;                   // the id clients name in "model"
  std::chrono::milliseconds keep_alive_interval{1000};  // idle streams write a keep-alive this often
};

class OpenAiServer {
 public:
  explicit OpenAiServer(ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds the address; returns the port (the one chosen when options.port is
  // 0). unavailable when the address cannot be bound (the port is taken).
  Result<int> bind();
  // Serves on a thread of its own; /health answers 503 "loading" until serve().
  void start();
  // The pipeline is ready: requests are served through `session` from now on.
  void serve(Session& session, SchedulerConfig config);
  // SIGTERM: new requests get 503 at once; those in flight finish, or are
  // cancelled (finish_reason "abort") once `bound` has passed; then the
  // listener closes and the serving thread ends. Returns the requests cancelled.
  size_t drain(std::chrono::milliseconds bound);
  // Stops at once (requests in flight are cancelled); joins the serving thread.
  void stop();

 private:
  void install_routes();
  // The engine once serve() has run (null before: state_ says so without a race).
  EngineLoop* engine() const { return state_ != 0 ? engine_.get() : nullptr; }

  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<EngineLoop> engine_;
  Session* session_ = nullptr;
  int64_t max_sequence_tokens_ = 0;  // the memory's bound for one sequence
  std::atomic<int> state_{0};        // 0 loading, 1 ready, 2 draining; set after what it guards
  std::atomic<int> open_responses_{0};  // generation responses not yet fully written
  std::thread thread_;
  int64_t created_ = 0;
};

}  // namespace tessera::server

// libFuzzer target: request bodies of `tessera serve` (server/openai_request.hpp).
// The first byte picks the endpoint; the rest is the body. Whatever the
// bytes, parsing returns a request or an error, never crashes, and what it
// accepts keeps the limits it promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "openai_request.hpp"

using tessera::server::ApiError;
using tessera::server::CompletionRequest;
using tessera::server::Endpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Endpoint endpoint = (data[0] & 1) ? Endpoint::chat_completions : Endpoint::completions;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto parsed = tessera::server::parse_completion_request(body, endpoint);
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    if (error->http_status != 400 || error->message.empty()) std::abort();
    (void)error->to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return 0;
  }
  const CompletionRequest& r = std::get<CompletionRequest>(parsed);
  if (r.n < 1 || r.n > tessera::server::kMaxChoices) std::abort();
  if (r.stop.size() > tessera::server::kMaxStopStrings) std::abort();
  if (r.max_tokens && *r.max_tokens < 1) std::abort();
  if (r.temperature && !(*r.temperature >= 0 && *r.temperature <= 2)) std::abort();
  if (r.top_p && !(*r.top_p > 0 && *r.top_p <= 1)) std::abort();
  if (endpoint == Endpoint::chat_completions && r.messages.empty()) std::abort();
  for (const auto& m : r.messages)
    if (m.role != "system" && m.role != "user" && m.role != "assistant") std::abort();
  for (int32_t id : r.prompt_ids)
    if (id < 0) std::abort();
  return 0;
}

// openai_response.hpp: the JSON Tessera answers with, in OpenAI's shapes:
// whole responses, streamed chunks (server-sent events), usage, the model list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "openai_request.hpp"

namespace tessera::server {

// What identifies one response: its id, the second it was made, the model.
struct ResponseHead {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};

struct Choice {
  std::string text;
  std::string finish_reason;  // "stop", "length", "abort"
};

// OpenAI's finish_reason for an engine stop reason: "stop" for the end of
// generation token or a stop string, "length" for max_tokens or a full
// context, "abort" for a request the server cancelled (draining).
std::string finish_reason_for(std::string_view stop_reason);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// A whole (non-streamed) response.
nlohmann::json completion_json(Endpoint endpoint, const ResponseHead& head, const std::vector<Choice>& choices,
                               const nlohmann::json& usage);

// One streamed chunk for choice `index`: `text` (chat: the delta's content;
// `role` adds the delta's role, sent first) and, in the choice's last chunk,
// its finish_reason ("" for none). `usage` (null for none) rides along.
nlohmann::json chunk_json(Endpoint endpoint, const ResponseHead& head, int64_t index, std::string_view text,
                          std::string_view finish_reason, bool role = false,
                          const nlohmann::json& usage = nullptr);

// The chunk stream_options.include_usage asks for: no choices, the usage.
nlohmann::json usage_chunk_json(Endpoint endpoint, const ResponseHead& head, const nlohmann::json& usage);

// "data: <json>\n\n": one server-sent event.
std::string sse_event(const nlohmann::json& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

nlohmann::json models_json(const std::string& model, int64_t created);

}  // namespace tessera::server

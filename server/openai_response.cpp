#include "openai_response.hpp"

namespace tessera::server {

using json = nlohmann::json;

namespace {

const char* object_name(Endpoint endpoint, bool chunk) {
  if (endpoint == Endpoint::chat_completions) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";  // completions use one name for both
}

json head_json(Endpoint endpoint, const ResponseHead& head, bool chunk) {
  return {{"id", head.id}, {"object", object_name(endpoint, chunk)}, {"created", head.created}, {"model", head.model}};
}

json reason_or_null(std::string_view finish_reason) {
  return finish_reason.empty() ? json(nullptr) : json(std::string(finish_reason));
}

}  // namespace

std::string finish_reason_for(std::string_view stop_reason) {
  if (stop_reason == "eos" || stop_reason == "stop") return "stop";
  if (stop_reason == "max_tokens" || stop_reason == "context_full") return "length";
  return "abort";
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json completion_json(Endpoint endpoint, const ResponseHead& head, const std::vector<Choice>& choices,
                     const json& usage) {
  json j = head_json(endpoint, head, false);
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    json c = {{"index", i}, {"finish_reason", choices[i].finish_reason}, {"logprobs", nullptr}};
    if (endpoint == Endpoint::chat_completions)
      c["message"] = {{"role", "assistant"}, {"content", choices[i].text}};
    else
      c["text"] = choices[i].text;
    list.push_back(std::move(c));
  }
  j["choices"] = std::move(list);
  j["usage"] = usage;
  return j;
}

json chunk_json(Endpoint endpoint, const ResponseHead& head, int64_t index, std::string_view text,
                std::string_view finish_reason, bool role, const json& usage) {
  json j = head_json(endpoint, head, true);
  json c = {{"index", index}, {"finish_reason", reason_or_null(finish_reason)}, {"logprobs", nullptr}};
  if (endpoint == Endpoint::chat_completions) {
    json delta = json::object();
    if (role) delta["role"] = "assistant";
    if (!text.empty() || role) delta["content"] = std::string(text);
    c["delta"] = std::move(delta);
  } else {
    c["text"] = std::string(text);
  }
  j["choices"] = json::array({std::move(c)});
  if (!usage.is_null()) j["usage"] = usage;
  return j;
}

json usage_chunk_json(Endpoint endpoint, const ResponseHead& head, const json& usage) {
  json j = head_json(endpoint, head, true);
  j["choices"] = json::array();
  j["usage"] = usage;
  return j;
}

std::string sse_event(const json& data) {
  // Invalid UTF-8 cannot reach here (the engine streams whole characters),
  // but a throwing dump would end the stream: replace rather than throw.
  return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json models_json(const std::string& model, int64_t created) {
  return {{"object", "list"},
          {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "tessera"}}})}};
}

}  // namespace tessera::server

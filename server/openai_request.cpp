#include "openai_request.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tessera::server {
namespace {

using json = nlohmann::json;

// Reads the optional fields of one request object; the first mistake wins.
class FieldReader {
 public:
  explicit FieldReader(const json& body) : body_(body) {}

  const std::optional<ApiError>& error() const { return error_; }
  bool has(const char* name) const { return body_.contains(name) && !body_[name].is_null(); }

  std::optional<double> number(const char* name, double lo, double hi) {
    if (!has(name) || error_) return std::nullopt;
    const json& v = body_[name];
    if (!v.is_number()) return fail(fmt::format("'{}' must be a number", name), name), std::nullopt;
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi))
      return fail(fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x), name), std::nullopt;
    return x;
  }

  std::optional<int64_t> integer(const char* name, int64_t lo, int64_t hi) {
    if (!has(name) || error_) return std::nullopt;
    const json& v = body_[name];
    if (!v.is_number_integer()) return fail(fmt::format("'{}' must be an integer", name), name), std::nullopt;
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail(fmt::format("'{}' must be at most {}", name, hi), name), std::nullopt;
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      return fail(fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x), name), std::nullopt;
    return x;
  }

  std::optional<bool> boolean(const char* name) {
    if (!has(name) || error_) return std::nullopt;
    if (!body_[name].is_boolean()) return fail(fmt::format("'{}' must be true or false", name), name), std::nullopt;
    return body_[name].get<bool>();
  }

  std::optional<std::string> string(const char* name) {
    if (!has(name) || error_) return std::nullopt;
    if (!body_[name].is_string()) return fail(fmt::format("'{}' must be a string", name), name), std::nullopt;
    return body_[name].get<std::string>();
  }

  void fail(std::string message, std::string param) {
    if (!error_) error_ = bad_request(std::move(message), std::move(param));
  }

 private:
  const json& body_;
  std::optional<ApiError> error_;
};

// "stop": a string or an array of at most four strings.
void read_stop(const json& body, FieldReader& fields, std::vector<std::string>& out) {
  if (!fields.has("stop")) return;
  const json& v = body["stop"];
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
    return;
  }
  if (!v.is_array() || v.size() > kMaxStopStrings)
    return fields.fail(fmt::format("'stop' must be a string or an array of at most {} strings", kMaxStopStrings),
                       "stop");
  for (const json& s : v) {
    if (!s.is_string()) return fields.fail("'stop' must hold strings only", "stop");
    out.push_back(s.get<std::string>());
  }
}

// "prompt": a string, or one prompt as token ids; a list of several prompts
// is refused (one request, one prompt; send several requests).
void read_prompt(const json& body, FieldReader& fields, CompletionRequest& r) {
  if (!fields.has("prompt")) return fields.fail("'prompt' is required", "prompt");
  const json* v = &body["prompt"];
  if (v->is_array() && v->size() == 1 && ((*v)[0].is_string() || (*v)[0].is_array())) v = &(*v)[0];
  if (v->is_string()) {
    r.prompt = v->get<std::string>();
    return;
  }
  if (v->is_array() && !v->empty() && (*v)[0].is_number()) {
    for (const json& id : *v) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
        return fields.fail("'prompt' as token ids must hold non-negative integers", "prompt");
      r.prompt_ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    return;
  }
  if (v->is_array() && v->size() > 1)
    return fields.fail("one prompt per request: send several requests to run several prompts", "prompt");
  fields.fail("'prompt' must be a string or an array of token ids", "prompt");
}

// "messages": [{"role", "content"}], content a string or text parts.
void read_messages(const json& body, FieldReader& fields, CompletionRequest& r) {
  if (!fields.has("messages")) return fields.fail("'messages' is required", "messages");
  const json& v = body["messages"];
  if (!v.is_array() || v.empty()) return fields.fail("'messages' must be a non-empty array", "messages");
  for (size_t i = 0; i < v.size(); ++i) {
    const json& m = v[i];
    const std::string param = fmt::format("messages[{}]", i);
    if (!m.is_object()) return fields.fail(param + " must be an object", param);
    if (!m.contains("role") || !m["role"].is_string())
      return fields.fail(param + ".role must be a string", param + ".role");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role != "system" && role != "user" && role != "assistant")
      return fields.fail(fmt::format("{}.role must be system, user or assistant, got '{}'", param, role),
                         param + ".role");
    std::string content;
    const json* c = m.contains("content") ? &m["content"] : nullptr;
    if (c == nullptr || c->is_null()) {
      return fields.fail(param + ".content is required", param + ".content");
    } else if (c->is_string()) {
      content = c->get<std::string>();
    } else if (c->is_array()) {
      for (const json& part : *c) {
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
            !part["text"].is_string())
          return fields.fail(param + ".content parts must be {\"type\": \"text\", \"text\": ...} (text only)",
                             param + ".content");
        content += part["text"].get<std::string>();
      }
    } else {
      return fields.fail(param + ".content must be a string or an array of text parts", param + ".content");
    }
    r.messages.push_back({std::move(role), std::move(content)});
  }
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_completion_request(std::string_view body, Endpoint endpoint) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    return bad_request(fmt::format("the body is not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) return bad_request("the body must be a JSON object");

  CompletionRequest r;
  r.endpoint = endpoint;
  FieldReader fields(j);
  if (auto model = fields.string("model")) r.model = *model;
  if (endpoint == Endpoint::completions)
    read_prompt(j, fields, r);
  else
    read_messages(j, fields, r);
  r.max_tokens = fields.integer("max_tokens", 1, std::numeric_limits<int32_t>::max());
  if (auto m = fields.integer("max_completion_tokens", 1, std::numeric_limits<int32_t>::max())) r.max_tokens = m;
  r.temperature = fields.number("temperature", 0.0, 2.0);
  r.top_p = fields.number("top_p", 0.0, 1.0);
  if (r.top_p && *r.top_p == 0.0) fields.fail("'top_p' must be above 0", "top_p");
  r.top_k = fields.integer("top_k", -1, std::numeric_limits<int32_t>::max());
  if (r.top_k && *r.top_k < 0) r.top_k = 0;  // vLLM's -1: off
  r.min_p = fields.number("min_p", 0.0, 1.0);
  r.repetition_penalty = fields.number("repetition_penalty", 0.01, 10.0);
  if (auto seed = fields.integer("seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    r.seed = static_cast<uint64_t>(*seed);
  if (auto n = fields.integer("n", 1, kMaxChoices)) r.n = *n;
  if (auto stream = fields.boolean("stream")) r.stream = *stream;
  if (fields.has("stream_options")) {
    const json& o = j["stream_options"];
    if (!o.is_object()) {
      fields.fail("'stream_options' must be an object", "stream_options");
    } else if (o.contains("include_usage") && !o["include_usage"].is_null()) {
      if (!o["include_usage"].is_boolean())
        fields.fail("'stream_options.include_usage' must be true or false", "stream_options");
      else
        r.include_usage = o["include_usage"].get<bool>();
    }
  }
  read_stop(j, fields, r.stop);

  // What Tessera cannot honour is refused, not ignored.
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    if (auto v = fields.number(name, -2.0, 2.0); v && *v != 0.0)
      fields.fail(fmt::format("'{}' is not supported (use 'repetition_penalty')", name), name);
  }
  for (const char* name : {"logprobs", "top_logprobs"}) {
    if (!fields.has(name)) continue;
    const json& v = j[name];
    if ((v.is_boolean() && v.get<bool>()) || (v.is_number() && v.get<double>() != 0.0))
      fields.fail(fmt::format("'{}' is not supported by this server", name), name);
  }
  if (fields.boolean("echo").value_or(false)) fields.fail("'echo' is not supported by this server", "echo");
  // Tool calls, structured output and logit biases change what may be
  // generated: answering as if they were not asked would be silently wrong.
  for (const char* name : {"tools", "functions", "logit_bias"}) {
    if (!fields.has(name)) continue;
    const json& v = j[name];
    if (!((v.is_array() || v.is_object()) && v.empty()))
      fields.fail(fmt::format("'{}' is not supported by this server", name), name);
  }
  for (const char* name : {"tool_choice", "function_call"}) {
    if (fields.has(name) && j[name] != "none" && j[name] != "auto")
      fields.fail(fmt::format("'{}' is not supported by this server", name), name);
  }
  if (fields.has("response_format")) {
    const json& v = j["response_format"];
    if (!v.is_object() || !v.contains("type") || v["type"] != "text")
      fields.fail("'response_format' other than {\"type\": \"text\"} is not supported by this server",
                  "response_format");
  }
  fields.integer("best_of", 1, 1);  // several candidates per choice: not supported
  if (fields.has("suffix")) fields.fail("'suffix' is not supported by this server", "suffix");

  if (fields.error()) return *fields.error();
  return r;
}

}  // namespace tessera::server

// api_error.hpp: an error as the OpenAI API reports it: an HTTP status and
// {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tessera/status.hpp"

namespace tessera::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault, "" if none
  std::string code;   // a machine-readable code, "" if none

  nlohmann::json to_json() const;
};

ApiError bad_request(std::string message, std::string param = {});

// The status an engine error maps to: invalid_argument 400, out_of_memory 429
// (a budget is exhausted, retry later), unavailable 503, others 500.
ApiError from_status(const Status& status);

}  // namespace tessera::server

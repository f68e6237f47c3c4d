#include "api_error.hpp"

namespace tessera::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json error = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) error["param"] = param;
  if (!code.empty()) error["code"] = code;
  return {{"error", error}};
}

ApiError bad_request(std::string message, std::string param) {
  return {400, std::move(message), "invalid_request_error", std::move(param), ""};
}

ApiError from_status(const Status& status) {
  switch (status.code()) {
    case StatusCode::invalid_argument:
      return bad_request(status.message());
    case StatusCode::out_of_memory:
      return {429, status.message(), "rate_limit_error", "", "server_busy"};
    case StatusCode::unavailable:
      return {503, status.message(), "server_error", "", "unavailable"};
    default:
      return {500, status.message(), "server_error", "", "internal_error"};
  }
}

}  // namespace tessera::server

#include "dattn/serve/api_error.h"

namespace dattn::serve {
namespace {

nlohmann::json nullable(const std::optional<std::string>& s) { return s ? nlohmann::json(*s) : nlohmann::json(nullptr); }

// OpenAI's error type for a status: client mistakes are invalid_request_error.
std::string type_for(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    default: return status < 500 ? "invalid_request_error" : "server_error";
  }
}

}  // namespace

nlohmann::json ApiError::body() const {
  return {{"error", {{"message", what()}, {"type", type_}, {"param", nullable(param_)}, {"code", nullable(code_)}}}};
}

ApiError bad_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param, "invalid_value");
}

ApiError not_found(const std::string& what) { return ApiError(404, what, type_for(404), std::nullopt, "not_found"); }

ApiError queue_full(std::size_t max_queue) {
  return ApiError(429, "the queue is full (" + std::to_string(max_queue) + " jobs waiting); retry later",
                  type_for(429), std::nullopt, "queue_full");
}

ApiError not_ready(const std::string& why) { return ApiError(503, why, type_for(503), std::nullopt, "not_ready"); }

nlohmann::json error_body(int status, const std::string& message) {
  return ApiError(status, message, type_for(status)).body();
}

}  // namespace dattn::serve

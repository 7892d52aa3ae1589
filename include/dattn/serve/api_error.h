#pragma once
// Errors as OpenAI's API returns them: an HTTP status and {"error": {"message", "type", "param", "code"}}.
// Handlers throw ApiError; the routes turn it (and anything else thrown) into the JSON answer, so no bad
// request can take the server down. A message's control characters are escaped (printable): it often
// quotes what the client sent.
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/serve/printable.h"

namespace dattn::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt)
      : std::runtime_error(printable(message)), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  nlohmann::json body() const;

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_, code_;
};

// The answers every route shares.
ApiError bad_field(const std::string& param, const std::string& message);  // 400 invalid_request_error
ApiError not_found(const std::string& what);                              // 404
ApiError queue_full(std::size_t max_queue);                               // 429
ApiError not_ready(const std::string& why);                               // 503

// The JSON body of an error without a thrown exception (httplib's own 404 / 413 / 400 answers).
nlohmann::json error_body(int status, const std::string& message);

}  // namespace dattn::serve

#pragma once
// Errors. A UserError is the user's to fix (bad configuration, argument or input): the CLI prints its
// one-line message and exits with status 2. A NumericError is a computation that went non-finite (NaN
// or Inf in the latents or the decoded video): status 3, and nothing non-finite is written. Anything
// else is a failure of dattn itself (status 1).
#include <stdexcept>
#include <string>

namespace dattn {

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Configuration errors are user errors raised while reading or resolving the attention configuration.
class ConfigError : public UserError {
 public:
  using UserError::UserError;
};

// A computation produced NaN or Inf. Its message names where (stage, step) and the likely causes.
class NumericError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dattn

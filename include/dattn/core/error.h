#pragma once
// Errors. A UserError is the user's to fix (bad configuration, argument or input): the CLI prints its
// one-line message and exits with status 2. Anything else is a failure of dattn or the machine (status 1).
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

}  // namespace dattn

#pragma once
// The message of the ConfigError (or UserError) a callable throws; a test failure when it throws nothing or
// another type.
#include <exception>
#include <string>

#include <gtest/gtest.h>

#include "dattn/core/error.h"

namespace dattn {

template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ConfigError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected ConfigError, nothing was thrown";
  return {};
}

template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected UserError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected UserError, nothing was thrown";
  return {};
}

}  // namespace dattn

#pragma once
// Integer options, every one read through decimal_integer_text (integer_text.h) before CLI11 converts
// it: "010" is 10 and "0x10", "+5", " 5" are refused (CLI11's own conversion reads octal and hex).
// require_decimal_integers makes a plain add_option on an integer an internal error at start-up, so no
// command can miss the check.
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "dattn/integer_text.h"

namespace dattn::tool {

inline constexpr const char* kDecimalCheck = "DECIMAL";

template <typename T> struct IntegerOf { using type = T; };
template <typename T> struct IntegerOf<std::optional<T>> { using type = T; };

// The check, as a CLI11 transform named kDecimalCheck: the text becomes canonical decimal digits or the
// parse ends with decimal_integer_text's UserError (one line from main).
inline CLI::Validator decimal_integer_check(const std::string& name, std::int64_t min, std::uint64_t max) {
  return CLI::Validator(
      [name, min, max](std::string& text) {
        text = decimal_integer_text(name, text, min, max);
        return std::string();
      },
      "", kDecimalCheck);
}

// Registers `name` on `app` stored in `value` (an integer or an optional one), values from `min`
// (default 0: no dattn flag takes a negative number) to the type's largest.
template <typename T>
CLI::Option* add_integer_option(CLI::App& app, const std::string& name, T& value, const std::string& help = "",
                                std::int64_t min = 0) {
  using I = typename IntegerOf<T>::type;
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "add_integer_option takes integers");
  const auto max = static_cast<std::uint64_t>(std::numeric_limits<I>::max());
  return app.add_option(name, value, help)->transform(decimal_integer_check(name, min, max));
}

// Throws std::logic_error naming an option of `app` or its subcommands that CLI11 converts as an integer
// (type INT or UINT) without add_integer_option's check.
inline void require_decimal_integers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("INT", 0) != 0 && type.rfind("UINT", 0) != 0) continue;
    try {
      option->get_validator(kDecimalCheck);
    } catch (const CLI::OptionNotFound&) {
      throw std::logic_error("dattn " + app.get_name() + " " + option->get_name() +
                             ": an integer option without add_integer_option (it would read 010 as octal)");
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_decimal_integers(*sub);
}

}  // namespace dattn::tool

// The attention flags of a command line (spec section 3): the shorthand, the JSON blob and the dotted
// flags. The blob is read first, dotted flags land on top of it, and only then is the result
// normalised, so a dotted flag may complete a role the blob started (and vice versa).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "attention/config/config_raw.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

using config_detail::RawConfig;
using config_detail::RawSpec;
using nlohmann::json;

constexpr std::string_view kBackendFlag = "--diffusion-attention-backend";
constexpr std::string_view kConfigFlag = "--diffusion-attention-config";
constexpr std::string_view kConfigShort = "-dac";

std::string dotted_flag(std::string_view path) { return std::string(kConfigFlag) + "." + std::string(path); }

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): role
// names and values end up in JSON, which holds only text.
bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (n < 0 || s.size() - i <= static_cast<std::size_t>(n)) return false;  // a bad lead byte, or cut short
    std::uint32_t cp = n == 0 ? c : (c & (0x3F >> n));
    for (int k = 1; k <= n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    constexpr std::uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

// The value of the flag at args[i]: after '=' or the next argument. A next argument that starts with
// "--" is another flag, so the value counts as missing rather than swallowing it.
std::string take_value(std::vector<std::string>& args, std::size_t i, std::string_view flag,
                       std::string_view expected) {
  const std::string& arg = args[i];
  if (auto eq = arg.find('='); eq != std::string::npos) {
    std::string value = arg.substr(eq + 1);
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    return value;
  }
  if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)
    throw ConfigError("Missing value for " + std::string(flag) + ": expected " + std::string(expected) + ".");
  std::string value = args[i + 1];
  args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
  return value;
}

// Where a dotted flag writes: the default or a role; the backend (no key) or one extra key.
struct DottedTarget {
  std::optional<std::string> role;
  std::optional<std::string> extra_key;
};

[[noreturn]] void bad_path(std::string_view path) {
  const std::string f(kConfigFlag);
  throw ConfigError("Invalid flag " + dotted_flag(path) + ": expected " + f + ".default.backend, " + f +
                    ".default.extra.KEY, " + f + ".per_role.ROLE.backend or " + f + ".per_role.ROLE.extra.KEY.");
}

// The path is read from its end, since a ROLE may itself contain dots (per_role.ltx2.audio_to_video.backend).
DottedTarget parse_path(std::string_view path) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    auto dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (parts.back().empty()) bad_path(path);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  const std::size_t n = parts.size();
  auto join = [&](std::size_t from, std::size_t to) {
    std::string role = parts[from];
    for (std::size_t i = from + 1; i < to; ++i) role += "." + parts[i];
    return role;
  };
  if (parts[0] == "default") {
    if (n == 2 && parts[1] == "backend") return {};
    if (n == 3 && parts[1] == "extra") return {std::nullopt, parts[2]};
  } else if (parts[0] == "per_role") {
    if (n >= 3 && parts[n - 1] == "backend") return {join(1, n - 1), std::nullopt};
    if (n >= 4 && parts[n - 2] == "extra") return {join(1, n - 2), parts[n - 1]};
  }
  bad_path(path);
}

// VALUE is JSON when it parses as JSON (128, true, "x"), else the text itself.
json decode_value(const std::string& value) {
  return config_detail::parse_json_or_text(value, "a --diffusion-attention-config.* value");
}

// A backend name: a JSON string ("\"SAGE_ATTN\"") is unquoted; anything else is kept as typed, so a
// non-name such as 128 is reported as an unknown backend '128'.
std::string decode_backend(const std::string& value) {
  json parsed = decode_value(value);
  return parsed.is_string() ? parsed.get<std::string>() : value;
}

}  // namespace

AttentionFlags extract_attention_flags(std::vector<std::string>& args) {
  AttentionFlags flags;
  for (std::size_t i = 0; i < args.size();) {
    const std::string flag = args[i].substr(0, args[i].find('='));
    if (flag == kBackendFlag) {
      if (flags.backend_shorthand) throw ConfigError(std::string(kBackendFlag) + " given more than once.");
      flags.backend_shorthand = take_value(args, i, flag, "a backend name");
    } else if (flag == kConfigFlag || flag == kConfigShort) {
      if (flags.config_json)
        throw ConfigError(std::string(kConfigFlag) + " (-dac) given more than once.");
      flags.config_json = take_value(args, i, flag, "a JSON object");
    } else if (flag.size() > kConfigFlag.size() && flag.rfind(kConfigFlag, 0) == 0 &&
               flag[kConfigFlag.size()] == '.') {
      std::string path = flag.substr(kConfigFlag.size() + 1);
      std::string value = take_value(args, i, flag, "a value");
      if (!valid_utf8(path) || !valid_utf8(value))
        throw ConfigError("Invalid flag " + std::string(kConfigFlag) + ".PATH VALUE: the path or the value is not " +
                          "valid UTF-8 text.");
      flags.dotted.emplace_back(std::move(path), std::move(value));
    } else {
      ++i;  // not ours: left for the command's own parser
    }
  }
  return flags;
}

AttentionConfig config_from_flags(const AttentionFlags& flags) {
  RawConfig raw;
  if (flags.config_json)
    raw = config_detail::parse_raw(config_detail::parse_json_text(*flags.config_json, kConfigFlag));

  std::set<std::string> seen;
  for (const auto& [path, value] : flags.dotted) {
    if (!seen.insert(path).second) throw ConfigError(dotted_flag(path) + " given more than once.");
    const DottedTarget target = parse_path(path);
    RawSpec& spec = target.role ? raw.per_role[*target.role]
                                : (raw.default_spec ? *raw.default_spec : raw.default_spec.emplace());
    if (target.extra_key) {
      if (!spec.extra) spec.extra = json::object();
      (*spec.extra)[*target.extra_key] = decode_value(value);
    } else {
      spec.backend = decode_backend(value);  // replaces the blob's backend, keeps its extra
    }
  }

  if (flags.backend_shorthand) {
    // Textual check: any default backend given elsewhere, even "auto", conflicts with the shorthand.
    if (raw.default_spec && raw.default_spec->backend)
      throw ConfigError(
          "--diffusion-attention-backend is mutually exclusive with --diffusion-attention-config.default.backend.");
    if (!raw.default_spec) raw.default_spec.emplace();
    raw.default_spec->backend = *flags.backend_shorthand;  // default.extra, if given, stays
  }
  return config_detail::finalize(raw);
}

}  // namespace dattn

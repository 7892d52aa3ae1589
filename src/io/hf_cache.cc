#include "dattn/io/hf_cache.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "dattn/core/error.h"

namespace fs = std::filesystem;

namespace dattn {
namespace {

const char* get(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v && *v ? v : nullptr;
}

// huggingface_hub applies os.path.expanduser to these variables: "~" and "~/..." become $HOME's.
std::string expand_home(const std::string& path, const EnvLookup& env) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  const char* home = get(env, "HOME");
  return home ? std::string(home) + path.substr(1) : path;
}

bool id_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_id_part(std::string_view s) {
  if (s.empty() || s.size() > 96 || !word_char(s.front()) || !word_char(s.back())) return false;
  for (char c : s)
    if (!id_char(c)) return false;
  return s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos;
}

// A branch or tag name is a relative path under refs/: no empty, "." or ".." segment, nothing that
// could leave the repo folder.
void check_revision(const std::string& revision) {
  bool ok = !revision.empty() && revision.front() != '/' && revision.back() != '/';
  std::string_view rest = revision;
  while (ok && !rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view seg = rest.substr(0, slash);
    ok = !seg.empty() && seg != "." && seg != "..";
    for (char c : seg) ok = ok && std::isprint(static_cast<unsigned char>(c)) && c != '\\';
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  if (!ok)
    throw UserError("--revision '" + revision + "': expected a branch or tag name (e.g. main) or a commit hash");
}

std::string trim(std::string s) {
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && blank(s.back())) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && blank(s[i])) ++i;
  return s.substr(i);
}

}  // namespace

HfCacheDir hf_hub_cache_dir(const EnvLookup& env) {
  if (const char* v = get(env, "HF_HUB_CACHE")) return {expand_home(v, env), "$HF_HUB_CACHE"};
  if (const char* v = get(env, "HF_HOME"))
    return {(fs::path(expand_home(v, env)) / "hub").string(), "$HF_HOME/hub, as HF_HUB_CACHE is unset"};
  if (const char* v = get(env, "XDG_CACHE_HOME"))
    return {(fs::path(expand_home(v, env)) / "huggingface" / "hub").string(),
            "$XDG_CACHE_HOME/huggingface/hub, as HF_HUB_CACHE and HF_HOME are unset"};
  return {expand_home("~/.cache/huggingface/hub", env),
          "~/.cache/huggingface/hub, as HF_HUB_CACHE, HF_HOME and XDG_CACHE_HOME are unset"};
}

bool is_hf_repo_id(std::string_view text) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  return is_id_part(text.substr(0, slash)) && is_id_part(text.substr(slash + 1));
}

bool is_commit_hash(std::string_view text) {
  if (text.size() != 40) return false;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

ModelLocation resolve_model_location(const std::string& model, const std::string& revision, const EnvLookup& env) {
  std::error_code ec;
  if (fs::exists(model, ec)) {
    if (!revision.empty())
      throw UserError("--revision '" + revision + "' is for Hugging Face ids (ORG/NAME), but --model '" + model +
                      "' is a path; drop --revision, or give the id");
    return {model, ""};
  }
  if (!is_hf_repo_id(model)) {
    if (!revision.empty())
      throw UserError("--revision '" + revision + "' is for Hugging Face ids (ORG/NAME), and --model '" + model +
                      "' is neither an id nor an existing path");
    return {model, ""};
  }
  const std::string rev = revision.empty() ? "main" : revision;
  check_revision(rev);

  const HfCacheDir cache = hf_hub_cache_dir(env);
  const std::string org = model.substr(0, model.find('/')), name = model.substr(model.find('/') + 1);
  const fs::path repo = fs::path(cache.path) / ("models--" + org + "--" + name);
  const std::string download = "huggingface-cli download " + model + (revision.empty() ? "" : " --revision " + rev);
  const std::string how_to = ". Download it with '" + download +
                             "' (in huggingface_hub 0.34 and later also 'hf download ...'), or into a folder of "
                             "your choice with '" + download + " --local-dir DIR' and pass --model DIR";
  const std::string head = "--model '" + model + "'" + (revision.empty() ? "" : " --revision '" + rev + "'") + ": ";

  if (!fs::is_directory(repo, ec))
    throw UserError(head + "no such folder, and not in the Hugging Face cache: no folder '" + repo.string() +
                    "' (cache: " + cache.how + ")" + how_to);
  std::string commit;
  std::string via;
  const fs::path ref = repo / "refs" / rev;
  if (fs::is_regular_file(ref, ec)) {
    std::ifstream in(ref);
    std::string line;
    std::getline(in, line);
    commit = trim(line);
    if (!is_commit_hash(commit))
      throw UserError(head + "'" + ref.string() + "' holds '" + commit + "', not a commit hash" + how_to);
    via = "refs/" + rev;
  } else if (is_commit_hash(rev)) {
    commit = rev;
    via = "commit " + rev;
  } else {
    throw UserError(head + "not in the Hugging Face cache: no ref '" + ref.string() + "', and '" + rev +
                    "' is not a commit hash" + how_to);
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec))
    throw UserError(head + "not in the Hugging Face cache: no snapshot '" + snapshot.string() + "'" +
                    (via.rfind("refs/", 0) == 0 ? " (which " + via + " names; an interrupted download?)" : "") +
                    how_to);
  return {snapshot.string(), "Hugging Face cache: " + snapshot.string() + " (" + via + ")"};
}

ModelLocation resolve_model_location(const std::string& model, const std::string& revision) {
  return resolve_model_location(model, revision, [](const char* name) { return std::getenv(name); });
}

}  // namespace dattn

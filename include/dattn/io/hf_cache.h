#pragma once
// Hugging Face model ids found in the local Hugging Face cache; dattn never downloads. `--model ORG/NAME`
// names the snapshot huggingface_hub wrote at CACHE/models--ORG--NAME/snapshots/<commit>, where the
// commit is read from refs/<revision> (default main) or is the revision itself when that is a commit
// hash. Snapshot files are symlinks into the repo's blobs/, which every reader follows.
#include <functional>
#include <string>
#include <string_view>

namespace dattn {

// Reads an environment variable (nullptr when unset); tests pass their own environment.
using EnvLookup = std::function<const char*(const char*)>;

struct HfCacheDir {
  std::string path;  // the hub cache folder
  std::string how;   // why this folder: "$HF_HUB_CACHE", "$HF_HOME/hub, as HF_HUB_CACHE is unset", ...
};

// huggingface_hub's precedence (its environment-variable reference): $HF_HUB_CACHE, else $HF_HOME/hub,
// else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. A leading ~ is expanded with
// $HOME as huggingface_hub does; a variable set to the empty string counts as unset.
HfCacheDir hf_hub_cache_dir(const EnvLookup& env);

// ORG/NAME as the Hub spells repo ids: two parts of 1-96 letters, digits, '_', '-' or '.', each
// beginning and ending with a letter, digit or '_', without "--" or "..".
bool is_hf_repo_id(std::string_view text);

// True for a 40-digit lowercase hexadecimal commit hash.
bool is_commit_hash(std::string_view text);

struct ModelLocation {
  std::string dir;   // the folder to load
  std::string note;  // empty for a path; for an id, where it was found ("Hugging Face cache: DIR (refs/main)")
};

// What `--model TEXT [--revision REV]` names: an existing path as given; else, for an ORG/NAME id, its
// snapshot in the cache; else TEXT unchanged (the loader then says the folder does not exist). An
// empty revision means main. Throws UserError for an id that is not in the cache, saying where it
// looked and how to download it; for a revision given with a path; for a malformed revision.
ModelLocation resolve_model_location(const std::string& model, const std::string& revision, const EnvLookup& env);
// The same with the process environment.
ModelLocation resolve_model_location(const std::string& model, const std::string& revision = "");

}  // namespace dattn

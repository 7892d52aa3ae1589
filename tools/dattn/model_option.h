#pragma once
// --model DIR or a Hugging Face id ORG/NAME (with --revision), resolved to the folder to load
// (io/hf_cache.h). An id found in the cache is reported on stderr, so the user sees which snapshot ran.
#include <cstdio>
#include <string>

#include "dattn/io/hf_cache.h"

namespace dattn::tool {

inline std::string model_dir_from_option(const std::string& model, const std::string& revision) {
  const ModelLocation location = resolve_model_location(model, revision);
  if (!location.note.empty()) std::fprintf(stderr, "[dattn] --model %s: %s\n", model.c_str(), location.note.c_str());
  return location.dir;
}

}  // namespace dattn::tool

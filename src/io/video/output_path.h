#pragma once
// Names of the files a .png output becomes.
#include <cstdint>
#include <string>

namespace dattn::video_detail {

// "dir/out.png", 3 -> "dir/out_0003.png" (at least four digits).
std::string png_sequence_path(const std::string& path, std::int64_t index);

}  // namespace dattn::video_detail

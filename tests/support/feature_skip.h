#pragma once
// Skips a test of a feature this build left out, saying which and why, instead of failing it. Decided
// by the build's compile definitions (cmake/Layers.cmake: dattn_features), not at run time.
#include <gtest/gtest.h>

#ifdef DATTN_WITH_FFMPEG
#define DATTN_SKIP_WITHOUT_FFMPEG() static_cast<void>(0)
#else
#define DATTN_SKIP_WITHOUT_FFMPEG() GTEST_SKIP() << "built without FFmpeg (DATTN_VIDEO=off): no mp4/png files"
#endif

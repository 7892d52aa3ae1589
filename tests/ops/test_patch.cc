// patch_embed_3d against a direct Conv3d (kernel = stride = patch) in float64, unpatchify_3d against
// diffusers' reshape + permute written as index arithmetic, and the geometry errors.
#include <gtest/gtest.h>

#include "dattn/ops/patch.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

TEST(OpsPatch, PatchEmbedIsAStridedConv3d) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t B = 2, C = 3, F = 4, H = 6, W = 8, O = 5;
  for (ops::Patch3 p : {ops::Patch3{1, 2, 2}, ops::Patch3{2, 3, 4}})
    for (DType dt : kFloatDTypes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " patch " + std::to_string(p[0]) + std::to_string(p[1]) +
                   std::to_string(p[2]) + " seed " + std::to_string(seed));
      auto x = random_tensor({B, C, F, H, W}, dt, rng);
      auto w = random_tensor({O, C, p[0], p[1], p[2]}, dt, rng, 0.0f, 0.3f);
      auto b = random_tensor({O}, dt, rng);
      const std::int64_t gf = F / p[0], gh = H / p[1], gw = W / p[2], S = gf * gh * gw;
      std::vector<double> ref(B * S * O);
      for (std::int64_t bi = 0; bi < B; ++bi)
        for (std::int64_t o = 0; o < O; ++o)
          for (std::int64_t f = 0; f < gf; ++f)
            for (std::int64_t h = 0; h < gh; ++h)
              for (std::int64_t ww = 0; ww < gw; ++ww) {
                double s = b.v[o];
                for (std::int64_t c = 0; c < C; ++c)
                  for (std::int64_t a = 0; a < p[0]; ++a)
                    for (std::int64_t r = 0; r < p[1]; ++r)
                      for (std::int64_t q = 0; q < p[2]; ++q)
                        s += w.v[(((o * C + c) * p[0] + a) * p[1] + r) * p[2] + q] *
                             x.v[(((bi * C + c) * F + f * p[0] + a) * H + h * p[1] + r) * W + ww * p[2] + q];
                // conv output [B, O, gf, gh, gw] -> flatten(2).transpose(1, 2) -> [B, S, O]
                ref[(bi * S + (f * gh + h) * gw + ww) * O + o] = s;
              }
      Tensor y = ops::patch_embed_3d(x.t, w.t, b.t, p);
      EXPECT_EQ(y.shape(), (Shape{B, S, O}));
      EXPECT_EQ(check_against(y, ref, rounding_limit(dt)), "");
    }
}

TEST(OpsPatch, UnpatchifyIsDiffusersPermute) {
  std::mt19937_64 rng(test::fresh_seed());
  const std::int64_t B = 2, C = 3;
  const ops::Patch3 grid{2, 3, 4}, p{1, 2, 3};
  const std::int64_t S = grid[0] * grid[1] * grid[2], feat = p[0] * p[1] * p[2] * C;
  auto x = random_tensor({B, S, feat}, DType::BF16, rng);
  // x.reshape(B, gf, gh, gw, pt, ph, pw, C).permute(0, 7, 1, 4, 2, 5, 3, 6) flattened pairwise.
  const std::int64_t F = grid[0] * p[0], H = grid[1] * p[1], W = grid[2] * p[2];
  std::vector<double> ref(B * C * F * H * W);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t f = 0; f < grid[0]; ++f)
      for (std::int64_t h = 0; h < grid[1]; ++h)
        for (std::int64_t w = 0; w < grid[2]; ++w)
          for (std::int64_t a = 0; a < p[0]; ++a)
            for (std::int64_t r = 0; r < p[1]; ++r)
              for (std::int64_t q = 0; q < p[2]; ++q)
                for (std::int64_t c = 0; c < C; ++c) {
                  const std::int64_t src =
                      ((((((b * grid[0] + f) * grid[1] + h) * grid[2] + w) * p[0] + a) * p[1] + r) * p[2] + q) * C + c;
                  const std::int64_t dst = (((b * C + c) * F + f * p[0] + a) * H + h * p[1] + r) * W + w * p[2] + q;
                  ref[dst] = x.v[src];
                }
  Tensor y = ops::unpatchify_3d(x.t, grid, p, C);
  EXPECT_EQ(y.shape(), (Shape{B, C, F, H, W}));
  EXPECT_EQ(y.dtype(), DType::BF16);
  EXPECT_EQ(check_against(y, ref, 0.0), "");  // a permutation: exact
}

TEST(OpsPatch, GeometryErrors) {
  Tensor x = Tensor::zeros({1, 3, 3, 8, 12}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::patch_embed_3d(x, Tensor::zeros({4, 3, 2, 2, 2}, DType::F32), Tensor(), {2, 2, 2}); }),
            "patch_embed_3d: x [1,3,3,8,12] fp32 cpu: frames, height and width must be multiples of the patch (2, 2, 2)");
  EXPECT_EQ(user_error([&] { ops::patch_embed_3d(x, Tensor::zeros({4, 2, 1, 2, 2}, DType::F32), Tensor(), {1, 2, 2}); }),
            "patch_embed_3d: weight [4,2,1,2,2] fp32 cpu: expected shape [4,3,1,2,2]");
  EXPECT_EQ(user_error([&] { ops::unpatchify_3d(Tensor::zeros({1, 10, 12}, DType::F32), {1, 2, 4}, {1, 2, 2}, 3); }),
            "unpatchify_3d: x [1,10,12] fp32 cpu: expected shape [1,8,12]");
}

}  // namespace
}  // namespace dattn::testing

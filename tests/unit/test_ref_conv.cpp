// Reference conv2d: hand-computed cross-correlation and groups, then stride, dilation,
// asymmetric padding, groups and odd sizes against an explicit im2col + GEMM written here.
#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

struct ConvCase {
  int64_t n, h, w, c, k, r, s;
  Conv2dAttrs at;
};

// im2col: for each group g, a matrix with one row per output pixel (n, p, q) and one column per
// filter tap (r, s, c) of that group, holding the input value the tap reads (0 in the padding);
// then out[(n, p, q), g * K/G + kk] = row . weights[g * K/G + kk] (a GEMM with the [K, R*S*C/G]
// weight matrix, which is the KRSC tensor itself). Returns the unrounded [N, P, Q, K] values.
std::vector<double> im2col_conv(const ConvCase& cc, const std::vector<double>& x,
                                const std::vector<double>& w, int64_t& p_out, int64_t& q_out) {
  const auto& at = cc.at;
  p_out = (cc.h + at.pad_begin[0] + at.pad_end[0] - (at.dilation[0] * (cc.r - 1) + 1)) /
              at.stride[0] + 1;
  q_out = (cc.w + at.pad_begin[1] + at.pad_end[1] - (at.dilation[1] * (cc.s - 1) + 1)) /
              at.stride[1] + 1;
  const int64_t cg = cc.c / at.groups, kg = cc.k / at.groups;
  const int64_t rows = cc.n * p_out * q_out, cols = cc.r * cc.s * cg;
  std::vector<double> out(rows * cc.k, 0.0);
  for (int64_t g = 0; g < at.groups; ++g) {
    std::vector<double> col(rows * cols, 0.0);
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t n = row / (p_out * q_out), p = row / q_out % p_out, q = row % q_out;
      for (int64_t r = 0; r < cc.r; ++r) {
        for (int64_t s = 0; s < cc.s; ++s) {
          const int64_t ih = p * at.stride[0] + r * at.dilation[0] - at.pad_begin[0];
          const int64_t iw = q * at.stride[1] + s * at.dilation[1] - at.pad_begin[1];
          if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
          for (int64_t c = 0; c < cg; ++c) {
            col[row * cols + (r * cc.s + s) * cg + c] =
                x[((n * cc.h + ih) * cc.w + iw) * cc.c + g * cg + c];
          }
        }
      }
    }
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t kk = 0; kk < kg; ++kk) {
        const int64_t k = g * kg + kk;
        double acc = 0;
        for (int64_t j = 0; j < cols; ++j) acc += col[row * cols + j] * w[k * cols + j];
        out[row * cc.k + k] = acc;
      }
    }
  }
  return out;
}

void check_against_im2col(const ConvCase& cc, DType dt, uint64_t seed) {
  SCOPED_TRACE("N=" + std::to_string(cc.n) + " H=" + std::to_string(cc.h) + " W=" +
               std::to_string(cc.w) + " C=" + std::to_string(cc.c) + " K=" + std::to_string(cc.k) +
               " R=" + std::to_string(cc.r) + " S=" + std::to_string(cc.s) +
               " groups=" + std::to_string(cc.at.groups));
  Graph g;
  auto x = g.input("x", dt, {cc.n, cc.h, cc.w, cc.c});
  auto w = g.input("w", dt, {cc.k, cc.r, cc.s, cc.c / cc.at.groups});
  Conv2dAttrs at = cc.at;
  at.out_dtype = DType::f32;
  g.output(g.conv2d(x, w, at), "y");
  const TensorMap in = random_inputs(g, seed);
  int64_t p = 0, q = 0;
  const auto want = im2col_conv(cc, in.at("x").values(), in.at("w").values(), p, q);
  EXPECT_EQ(g.tensor(*g.find_tensor("y")).dims, (Dims{cc.n, p, q, cc.k}));
  expect_values(run_values(g, in, "y"), rounded(want, DType::f32), 1e-6, 1e-12);
}

Conv2dAttrs attrs(std::array<int64_t, 2> stride, std::array<int64_t, 2> pad_begin,
                  std::array<int64_t, 2> pad_end, std::array<int64_t, 2> dilation,
                  int64_t groups) {
  Conv2dAttrs at;
  at.stride = stride;
  at.pad_begin = pad_begin;
  at.pad_end = pad_end;
  at.dilation = dilation;
  at.groups = groups;
  return at;
}

}  // namespace

TEST(RefConv, HandComputedCrossCorrelation) {
  // x is the 3x3 image 1..9, w the 2x2 filter [[1, 2], [3, 4]]; no flip:
  // y[0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37, y[0,1] = 2 + 6 + 15 + 24 = 47,
  // y[1,0] = 4 + 10 + 21 + 32 = 67,      y[1,1] = 5 + 12 + 24 + 36 = 77.
  Graph g;
  auto x = g.input("x", DType::f32, {1, 3, 3, 1});
  auto w = g.input("w", DType::f32, {1, 2, 2, 1});
  g.output(g.conv2d(x, w), "y");
  TensorMap in;
  in["x"] = tensor(DType::f32, {1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  in["w"] = tensor(DType::f32, {1, 2, 2, 1}, {1, 2, 3, 4});
  expect_values(run_values(g, in, "y"), {37, 47, 67, 77});
}

TEST(RefConv, HandComputedStridePaddingDilation) {
  // x: 1x4x4x1 image 1..16. w: 2x2 filter [[1, 0], [0, -1]] with dilation 2 spans 3x3.
  // Padding top 1, left 0, bottom 0, right 1; stride 2. Padded height 5, width 5 -> P = Q = 2.
  // y[p,q] = x[2p-1, 2q] - x[2p+1, 2q+2] with x outside the image = 0:
  //   y[0,0] = 0 - x[1,2] = -7     y[0,1] = 0 - x[1,4] (pad) = 0
  //   y[1,0] = x[1,0] - x[3,2] = 5 - 15 = -10   y[1,1] = x[1,2] - x[3,4] (pad) = 7
  Graph g;
  auto x = g.input("x", DType::f32, {1, 4, 4, 1});
  auto w = g.input("w", DType::f32, {1, 2, 2, 1});
  g.output(g.conv2d(x, w, attrs({2, 2}, {1, 0}, {0, 1}, {2, 2}, 1)), "y");
  std::vector<double> xv(16);
  for (int i = 0; i < 16; ++i) xv[i] = i + 1;
  TensorMap in;
  in["x"] = tensor(DType::f32, {1, 4, 4, 1}, xv);
  in["w"] = tensor(DType::f32, {1, 2, 2, 1}, {1, 0, 0, -1});
  expect_values(run_values(g, in, "y"), {-7, 0, -10, 7});
}

TEST(RefConv, HandComputedGroups) {
  // C=2, K=4, groups=2: each group has one input channel and two output channels, so output
  // channels 0 and 1 read input channel 0 (value 1) and channels 2 and 3 read channel 1 (10).
  Graph g;
  auto x = g.input("x", DType::f32, {1, 1, 1, 2});
  auto w = g.input("w", DType::f32, {4, 1, 1, 1});
  g.output(g.conv2d(x, w, attrs({1, 1}, {0, 0}, {0, 0}, {1, 1}, 2)), "y");
  TensorMap in;
  in["x"] = tensor(DType::f32, {1, 1, 1, 2}, {1, 10});
  in["w"] = tensor(DType::f32, {4, 1, 1, 1}, {2, 3, 5, 7});
  expect_values(run_values(g, in, "y"), {2, 3, 50, 70});
}

TEST(RefConv, MatchesIm2colGemm) {
  const ConvCase cases[] = {
      {1, 7, 7, 3, 5, 3, 3, attrs({1, 1}, {1, 1}, {1, 1}, {1, 1}, 1)},
      {2, 7, 9, 4, 6, 3, 2, attrs({2, 1}, {1, 0}, {0, 2}, {1, 2}, 2)},
      {1, 33, 7, 6, 6, 3, 3, attrs({2, 2}, {1, 1}, {2, 0}, {2, 2}, 6)},  // depthwise
      {3, 1, 1, 7, 33, 1, 1, attrs({1, 1}, {0, 0}, {0, 0}, {1, 1}, 1)},  // 1x1, one pixel
      {1, 5, 5, 2, 3, 5, 5, attrs({1, 1}, {0, 0}, {0, 0}, {1, 1}, 1)},   // filter = image
      {2, 8, 7, 9, 12, 3, 3, attrs({3, 2}, {2, 1}, {1, 2}, {1, 1}, 3)},
      {1, 7, 7, 1, 1, 7, 1, attrs({1, 3}, {3, 0}, {3, 1}, {1, 1}, 1)},
  };
  uint64_t seed = 300;
  for (const ConvCase& cc : cases) check_against_im2col(cc, DType::f32, seed++);
  for (const ConvCase& cc : cases) check_against_im2col(cc, DType::bf16, seed++);
}

TEST(RefConv, OutputRoundedToInputDtypeByDefault) {
  Graph g;
  auto x = g.input("x", DType::f16, {1, 1, 1, 3});
  auto w = g.input("w", DType::f16, {1, 1, 1, 3});
  g.output(g.conv2d(x, w), "y");
  TensorMap in;
  // 2048 + 1 + 0.5 = 2049.5; f16 holds integers up to 2048 and then steps by 2 -> 2050
  in["x"] = tensor(DType::f16, {1, 1, 1, 3}, {2048, 1, 0.5});
  in["w"] = tensor(DType::f16, {1, 1, 1, 3}, {1, 1, 1});
  expect_values(run_values(g, in, "y"), {2050});
}

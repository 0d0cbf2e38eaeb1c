// argmax / argmin on the GPU against the CPU reference: the LM head's logits ([1, 128256] and
// [4, 128256] bf16, split over many CTAs), f32 rows, a non-last axis, odd sizes, a strided view,
// ties and NaNs. Fresh random inputs, outputs poisoned; the i64 indices must match exactly.
#include <cmath>
#include <limits>

#include "gpu/gpu_test.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

Graph arg_graph(const std::string& name, OpKind op, DType dtype, const Dims& dims, int64_t axis,
                const Dims& strides = {}) {
  Graph g(name);
  g.output(g.arg_reduce(op, g.input("x", dtype, dims, strides), axis), "i");
  return g;
}

// Rounds x to a quarter-step grid of a few values: many equal maxima, ties in every slice.
void quantize(TensorMap& inputs) {
  HostTensor& x = inputs.at("x");
  std::vector<double> v = x.values();
  for (double& e : v) e = std::round(std::fmod(e * 2.0, 2.0) * 2.0) / 4.0;
  x = HostTensor::from_values(x.dtype(), x.dims(), v);
}

// A NaN at every 97th element: in most long slices the first NaN is the answer.
void sprinkle_nans(TensorMap& inputs) {
  HostTensor& x = inputs.at("x");
  std::vector<double> v = x.values();
  for (size_t i = 13; i < v.size(); i += 97) v[i] = std::numeric_limits<double>::quiet_NaN();
  x = HostTensor::from_values(x.dtype(), x.dims(), v);
}

TEST_F(GpuRegions, ArgmaxOfLmHeadLogits) {
  check(arg_graph("argmax_1x128256", OpKind::argmax, DType::bf16, {1, 128256}, -1));
  check(arg_graph("argmax_4x128256", OpKind::argmax, DType::bf16, {4, 128256}, 1));
  check(arg_graph("argmin_4x128256", OpKind::argmin, DType::bf16, {4, 128256}, 1));
}

TEST_F(GpuRegions, ArgmaxShapesAndAxes) {
  check(arg_graph("argmax_16x1000_f32", OpKind::argmax, DType::f32, {16, 1000}, -1));
  check(arg_graph("argmax_axis0", OpKind::argmax, DType::f32, {1000, 16}, 0));
  check(arg_graph("argmin_middle", OpKind::argmin, DType::f16, {3, 257, 5}, 1));
  check(arg_graph("argmax_odd", OpKind::argmax, DType::bf16, {7, 33, 3}, 2));
  check(arg_graph("argmax_many_columns", OpKind::argmax, DType::bf16, {300, 70000}, 0));
  check(arg_graph("argmax_short_rows", OpKind::argmax, DType::f32, {4099, 7}, 1));
  check(arg_graph("argmax_transposed", OpKind::argmax, DType::f32, {64, 96}, 1, {1, 64}));
  check(arg_graph("argmax_one", OpKind::argmax, DType::f32, {5, 1}, 1));
}

TEST_F(GpuRegions, ArgmaxTiesGiveTheLowestIndex) {
  for (OpKind op : {OpKind::argmax, OpKind::argmin}) {
    check(arg_graph("ties_lm_head", op, DType::bf16, {2, 128256}, 1), 1.0, {}, quantize);
    check(arg_graph("ties_rows", op, DType::f32, {16, 1000}, 1), 1.0, {}, quantize);
    check(arg_graph("ties_axis0", op, DType::f32, {1000, 16}, 0), 1.0, {}, quantize);
  }
}

TEST_F(GpuRegions, ArgmaxNaNIsTheMaximum) {
  for (OpKind op : {OpKind::argmax, OpKind::argmin}) {
    check(arg_graph("nan_lm_head", op, DType::bf16, {4, 128256}, 1), 1.0, {}, sprinkle_nans);
    check(arg_graph("nan_short", op, DType::f32, {64, 50}, 1), 1.0, {}, sprinkle_nans);
  }
}

// Split reductions leave their workspace keys and counters zeroed for the next launch.
TEST_F(GpuRegions, ArgmaxReruns) {
  const Graph g = arg_graph("argmax_rerun", OpKind::argmax, DType::bf16, {1, 128256}, -1);
  TestPlan ex(g, {});
  check_reruns(ex, g, 1.0, 3);
}

}  // namespace
}  // namespace sinter::testing

#include "engines/cudnn/matmul_lowering.hpp"

#include <algorithm>

namespace sinter::cudnn {
namespace {

int index_of(const std::vector<TensorId>& list, TensorId t) {
  auto it = std::find(list.begin(), list.end(), t);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

// [rows, cols] or [batch, rows, cols] as cuDNN's 3-d [batch, rows, cols].
void as_3d(const TensorInfo& t, std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  const size_t n = t.dims.size();
  const int64_t rows = t.dims[n - 2], cols = t.dims[n - 1];
  const int64_t batch = n == 3 ? t.dims[0] : 1;
  const int64_t bstride = n == 3 ? t.strides[0] : rows * cols;
  dims = {batch, rows, cols};
  strides = {bstride, t.strides[n - 2], t.strides[n - 1]};
}

}  // namespace

MatmulLoweringMatch match_matmul_lowering(const Graph& g, const fuse::Region& r) {
  auto no = [](std::string why) { return MatmulLoweringMatch{std::nullopt, std::move(why)}; };
  if (r.kind != fuse::RegionKind::matmul) return no("not a matmul region");
  if (!r.prologue.empty() || !r.reductions.empty()) {
    return no("a fused prologue or exit reduction around matmul is not lowered");
  }
  const Node& n = g.node(r.anchor);
  const TensorInfo& a = g.tensor(n.inputs[0]);
  const TensorInfo& b = g.tensor(n.inputs[1]);
  const TensorInfo& y = g.tensor(n.outputs[0]);
  if ((a.dtype != DType::bf16 && a.dtype != DType::f16) || b.dtype != a.dtype || y.dtype != a.dtype) {
    return no("matmul takes f16 or bf16 a, b and output of one dtype here; found a " +
              std::string(to_string(a.dtype)) + ", b " + std::string(to_string(b.dtype)) + ", out " +
              std::string(to_string(y.dtype)));
  }
  if (a.dims.size() > 3 || b.dims.size() > 3) return no("operands of rank > 3 are not lowered");
  MatmulLoweringPattern p;
  p.dtype = a.dtype;
  as_3d(a, p.a_dims, p.a_strides);
  as_3d(b, p.b_dims, p.b_strides);
  const int64_t batch = std::max(p.a_dims[0], p.b_dims[0]);
  if ((p.a_dims[0] != batch && p.a_dims[0] != 1) || (p.b_dims[0] != batch && p.b_dims[0] != 1)) {
    return no("batch dims " + std::to_string(p.a_dims[0]) + " and " + std::to_string(p.b_dims[0]) +
              " are neither equal nor 1");
  }
  for (const auto* op : {&p.a_strides, &p.b_strides}) {
    const int64_t lo = std::min((*op)[1], (*op)[2]), hi = std::max((*op)[1], (*op)[2]);
    if (lo != 1) return no("an operand has no unit-stride axis among its last two");
    if (hi % 8 != 0) {
      return no("an operand's leading dimension " + std::to_string(hi) +
                " is not a multiple of 8 elements (16 bytes)");
    }
  }
  p.a_input = index_of(r.inputs, n.inputs[0]);
  p.b_input = index_of(r.inputs, n.inputs[1]);
  p.y_dims = {batch, p.a_dims[1], p.b_dims[2]};
  p.y_strides = {p.a_dims[1] * p.b_dims[2], p.b_dims[2], 1};
  if (num_elements(y.dims) != num_elements(p.y_dims)) return no("the output's batch is not the operands'");
  const EpilogueChain chain = match_epilogue_chain(g, r, n.outputs[0], p.dtype);
  if (chain.output < 0) return no(chain.reason);
  p.epilogue = chain.steps;
  p.y_output = chain.output;
  p.summary = std::string(to_string(p.dtype)) + " " + dims_to_string(a.dims) + "x" + dims_to_string(b.dims) +
              chain.summary;
  return {p, {}};
}

std::unique_ptr<OperationGraph> build_matmul_operations(const MatmulLoweringPattern& p) {
  auto out = std::make_unique<OperationGraph>();
  const cudnnDataType_t io = data_type(p.dtype);
  auto keep = [&](DescriptorPtr d) -> const Descriptor& {
    out->keep.push_back(std::move(d));
    return *out->keep.back();
  };
  const Descriptor& a = keep(make_tensor(kMatmulUidA, io, p.a_dims, p.a_strides));
  const Descriptor& b = keep(make_tensor(kMatmulUidB, io, p.b_dims, p.b_strides));
  const Descriptor& y = keep(make_tensor(kMatmulUidY, io, p.y_dims, p.y_strides));
  const Descriptor& acc = p.epilogue.empty()
                              ? y
                              : keep(make_tensor(1000, CUDNN_DATA_FLOAT, p.y_dims, p.y_strides, true));
  auto mm = make_matmul(a, b, acc);
  out->ops.push_back(mm->get());
  out->keep.push_back(std::move(mm));
  const int64_t n = p.y_dims[2];
  append_epilogue(*out, p.epilogue, acc, y, p.dtype, p.y_dims, p.y_strides, {1, 1, n}, {n, n, 1},
                  kMatmulUidEpilogue);
  return out;
}

}  // namespace sinter::cudnn

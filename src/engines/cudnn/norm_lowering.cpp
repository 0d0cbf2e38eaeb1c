#include "engines/cudnn/norm_lowering.hpp"

#include <algorithm>

namespace sinter::cudnn {
namespace {

int index_of(const std::vector<TensorId>& list, TensorId t) {
  auto it = std::find(list.begin(), list.end(), t);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

}  // namespace

NormMatch match_norm(const Graph& g, const fuse::Region& r) {
  auto no = [](std::string why) { return NormMatch{std::nullopt, std::move(why)}; };
  if (r.kind != fuse::RegionKind::rowwise) return no("not a row-wise region");
  const Node& n = g.node(r.anchor);
  if (n.op != OpKind::layernorm && n.op != OpKind::rmsnorm) {
    return no(std::string(to_string(n.op)) + " is not lowered (only layernorm and rmsnorm)");
  }
  if (!r.prologue.empty() || !r.epilogue.empty() || !r.reductions.empty()) {
    return no("a fused prologue, epilogue or reduction around the norm is not lowered");
  }
  const auto& at = std::get<NormAttrs>(n.attrs);
  const TensorInfo& x = g.tensor(n.inputs[0]);
  if (x.dtype != DType::bf16 && x.dtype != DType::f16 && x.dtype != DType::f32) {
    return no("x must be f32, f16 or bf16; found " + std::string(to_string(x.dtype)));
  }
  if (x.strides != contiguous_strides(x.dims)) return no("x must be row-major contiguous");
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const TensorInfo& t = g.tensor(n.inputs[i]);
    if (t.dtype != x.dtype) return no("'" + t.name + "' must have x's dtype");
    if (t.dims.size() != 1 || (t.strides.size() == 1 && t.strides[0] != 1)) {
      return no("'" + t.name + "' must be a contiguous vector");
    }
  }
  if (n.op == OpKind::rmsnorm && at.has_bias) return no("rmsnorm with a bias is not lowered");
  NormPattern p;
  p.rms = n.op == OpKind::rmsnorm;
  p.dtype = x.dtype;
  p.cols = x.dims.empty() ? 1 : x.dims.back();
  p.rows = p.cols == 0 ? 0 : num_elements(x.dims) / p.cols;
  p.epsilon = static_cast<float>(at.epsilon);
  p.x_input = index_of(r.inputs, n.inputs[0]);
  p.weight_input = index_of(r.inputs, n.inputs[1]);
  if (at.has_bias) p.bias_input = index_of(r.inputs, n.inputs[2]);
  p.y_output = index_of(r.outputs, n.outputs[0]);
  if (p.y_output < 0 || r.outputs.size() != 1) return no("only the norm's output may be stored");
  p.summary = std::string(p.rms ? "rmsnorm " : "layernorm ") + std::string(to_string(p.dtype)) +
              " C" + std::to_string(p.cols);
  return {p, {}};
}

std::unique_ptr<OperationGraph> build_norm_operations(const NormPattern& p) {
  auto out = std::make_unique<OperationGraph>();
  out->scalars.reserve(1);
  auto keep = [&](DescriptorPtr d) -> const Descriptor& {
    out->keep.push_back(std::move(d));
    return *out->keep.back();
  };
  const cudnnDataType_t io = data_type(p.dtype);
  const int64_t c = p.cols;
  const Descriptor& x = keep(make_tensor(kNormUidX, io, {p.rows, c, 1, 1}, {c, 1, c, c}));
  const Descriptor& y = keep(make_tensor(kNormUidY, io, {p.rows, c, 1, 1}, {c, 1, c, c}));
  const Descriptor& scale = keep(make_tensor(kNormUidScale, io, {1, c, 1, 1}, {c, 1, c, c}));
  OperationGraph::Scalar eps{100, {}};
  eps.value.f = p.epsilon;
  out->scalars.push_back(eps);
  const Descriptor& epsilon =
      keep(make_tensor(eps.uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true));
  auto op = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  const cudnnBackendNormMode_t mode = p.rms ? CUDNN_RMS_NORM : CUDNN_LAYER_NORM;
  const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_INFERENCE;
  op->set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, mode)
      .set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, phase)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, scale)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, epsilon)
      .set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, y);
  if (p.bias_input >= 0) {
    const Descriptor& bias = keep(make_tensor(kNormUidBias, io, {1, c, 1, 1}, {c, 1, c, c}));
    op->set_desc(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, bias);
  }
  op->finalize();
  out->ops.push_back(op->get());
  out->keep.push_back(std::move(op));
  return out;
}

}  // namespace sinter::cudnn

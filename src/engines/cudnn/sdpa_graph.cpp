#include "engines/cudnn/sdpa_graph.hpp"

#include <limits>

namespace sinter::cudnn {
namespace {

std::vector<int64_t> contiguous(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

class Builder {
 public:
  explicit Builder(OperationGraph& g) : g_(g) {}

  const Descriptor& tensor(int64_t uid, cudnnDataType_t t, const std::vector<int64_t>& dims,
                           const std::vector<int64_t>& strides) {
    return keep(make_tensor(uid, t, dims, strides));
  }
  const Descriptor& virt(cudnnDataType_t t, const std::vector<int64_t>& dims) {
    return keep(make_tensor(next_virtual_++, t, dims, contiguous(dims), /*is_virtual=*/true));
  }
  const Descriptor& scalar_f(float v) {
    OperationGraph::Scalar s{next_scalar_++, {}};
    s.value.f = v;
    g_.scalars.push_back(s);
    return keep(make_tensor(s.uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true));
  }
  const Descriptor& scalar_i(int32_t v) {
    OperationGraph::Scalar s{next_scalar_++, {}};
    s.value.i = v;
    g_.scalars.push_back(s);
    return keep(make_tensor(s.uid, CUDNN_DATA_INT32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true));
  }
  void op(DescriptorPtr d) {
    ops_.push_back(d->get());
    g_.keep.push_back(std::move(d));
  }
  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

 private:
  const Descriptor& keep(DescriptorPtr d) {
    g_.keep.push_back(std::move(d));
    return *g_.keep.back();
  }
  OperationGraph& g_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = 1000;
  int64_t next_scalar_ = 100;
};

}  // namespace

std::unique_ptr<OperationGraph> build_sdpa_operations(const SdpaPattern& p) {
  auto out = std::make_unique<OperationGraph>();
  out->scalars.reserve(8);  // the variant pack points into this vector: it must not move
  Builder b(*out);
  const cudnnDataType_t io = data_type(p.dtype);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const std::vector<int64_t> score_dims{p.b, p.h, p.s_q, p.s_kv};
  const std::vector<int64_t> row_dims{p.b, p.h, p.s_q, 1};

  const Descriptor& q = b.tensor(kUidQ, io, p.q.dims, p.q.strides);
  // K^T: [B, Hkv, D, Skv] over K's memory, the last two axes swapped.
  const Descriptor& kt = b.tensor(kUidK, io, {p.b, p.h_kv, p.d, p.s_kv},
                                  {p.k.strides[0], p.k.strides[1], p.k.strides[3], p.k.strides[2]});
  const Descriptor& v = b.tensor(kUidV, io, p.v.dims, p.v.strides);
  const std::vector<int64_t> o_dims{p.b, p.h, p.s_q, p.d_v};
  const Descriptor& o = b.tensor(kUidO, io, o_dims, contiguous(o_dims));

  const Descriptor* s = &b.virt(f32, score_dims);
  b.op(make_matmul(q, kt, *s));

  const Descriptor& scale = b.scalar_f(p.scale);
  const Descriptor* scaled = &b.virt(f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_MUL, f32, *s, &scale, nullptr, *scaled));
  s = scaled;

  if (p.bias) {
    const Descriptor& bias = b.tensor(kUidBias, io, p.bias->dims, p.bias->strides);
    const Descriptor* biased = &b.virt(f32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_ADD, f32, *s, &bias, nullptr, *biased));
    s = biased;
  }

  if (p.causal != CausalMask::none) {
    const Descriptor* row = &b.virt(CUDNN_DATA_INT32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, *s, nullptr, nullptr, *row, 2));
    const Descriptor& col = b.virt(CUDNN_DATA_INT32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, *s, nullptr, nullptr, col, 3));
    if (p.causal == CausalMask::bottom_right) {
      // row + Skv - Sq >= col: the last query sees every key
      const Descriptor& skv = b.scalar_i(static_cast<int32_t>(p.s_kv));
      const Descriptor* plus = &b.virt(CUDNN_DATA_INT32, score_dims);
      b.op(make_pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, *row, &skv, nullptr, *plus));
      const Descriptor& sq = b.scalar_i(static_cast<int32_t>(p.s_q));
      const Descriptor* minus = &b.virt(CUDNN_DATA_INT32, score_dims);
      b.op(make_pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, *plus, &sq, nullptr, *minus));
      row = minus;
    }
    const Descriptor& keep = b.virt(CUDNN_DATA_BOOLEAN, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, *row, &col, nullptr, keep));
    // cuDNN before 9.10 wants the lowest finite float as the masked value, later ones -inf.
    const float masked = library().version < 91000 ? std::numeric_limits<float>::lowest()
                                                   : -std::numeric_limits<float>::infinity();
    const Descriptor& neg = b.scalar_f(masked);
    const Descriptor* selected = &b.virt(f32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, *s, &neg, &keep, *selected));
    s = selected;
  }

  // softmax with its log-sum-exp
  const Descriptor& mx = b.virt(f32, row_dims);
  b.op(make_reduction(CUDNN_REDUCE_TENSOR_MAX, *s, mx));
  const Descriptor& centered = b.virt(f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_SUB, f32, *s, &mx, nullptr, centered));
  const Descriptor& e = b.virt(f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_EXP, f32, centered, nullptr, nullptr, e));
  const Descriptor& z = b.virt(f32, row_dims);
  b.op(make_reduction(CUDNN_REDUCE_TENSOR_ADD, e, z));
  const Descriptor& logz = b.virt(f32, row_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, logz));
  const Descriptor& stats = p.stats_output >= 0
                                ? b.tensor(kUidStats, f32, row_dims, contiguous(row_dims))
                                : b.virt(f32, row_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_ADD, f32, mx, &logz, nullptr, stats));
  const Descriptor& prob = b.virt(f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_DIV, f32, e, &z, nullptr, prob));

  b.op(make_matmul(prob, v, o));
  out->ops = b.ops();
  return out;
}

void finalize_graph(OperationGraph& g, cudnnHandle_t handle) {
  g.graph = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  // The handle attribute is deprecated in 9.19 but required by the 9.x libraries before it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  g.graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, handle);
#pragma GCC diagnostic pop
  g.graph->set_array(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g.ops);
  g.graph->finalize();
}

}  // namespace sinter::cudnn

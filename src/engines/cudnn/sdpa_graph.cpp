#include "engines/cudnn/sdpa_graph.hpp"

#include <limits>
#include <string>
#include <utility>

namespace sinter::cudnn {
namespace {

std::vector<int64_t> contiguous(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

const char* type_name(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT: return "f32";
    case CUDNN_DATA_HALF: return "f16";
    case CUDNN_DATA_BFLOAT16: return "bf16";
    case CUDNN_DATA_INT32: return "i32";
    case CUDNN_DATA_BOOLEAN: return "bool";
    default: return "other";
  }
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

// Creates the tensors and operations, and writes down each operation with the types and dims of
// its tensors (the recipe): when cuDNN's heuristics refuse the graph, this is what a person
// compares with cudnn-frontend's decomposition.
class Builder {
 public:
  explicit Builder(OperationGraph& g) : g_(g) {}

  const Descriptor& tensor(const char* name, int64_t uid, cudnnDataType_t t, const std::vector<int64_t>& dims,
                           const std::vector<int64_t>& strides) {
    return keep(make_tensor(uid, t, dims, strides), name, t, dims, "");
  }
  const Descriptor& virt(const char* name, cudnnDataType_t t, const std::vector<int64_t>& dims) {
    return keep(make_tensor(next_virtual_++, t, dims, contiguous(dims), /*is_virtual=*/true), name, t, dims,
                " virtual");
  }
  const Descriptor& scalar_f(const char* name, float v) {
    OperationGraph::Scalar s{next_scalar_++, {}};
    s.value.f = v;
    g_.scalars.push_back(s);
    return keep(make_tensor(s.uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true), name,
                CUDNN_DATA_FLOAT, {1, 1, 1, 1}, " by-value " + std::to_string(v));
  }
  const Descriptor& scalar_i(const char* name, int32_t v) {
    OperationGraph::Scalar s{next_scalar_++, {}};
    s.value.i = v;
    g_.scalars.push_back(s);
    return keep(make_tensor(s.uid, CUDNN_DATA_INT32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true), name,
                CUDNN_DATA_INT32, {1, 1, 1, 1}, " by-value " + std::to_string(v));
  }
  // `what`: "MATMUL", "MUL(f32)", ...; the operands in the order cuDNN takes them.
  void op(DescriptorPtr d, const std::string& what, std::initializer_list<const Descriptor*> in,
          const Descriptor& out) {
    std::string line = what + " ";
    for (const Descriptor* x : in) line += label(*x) + (x == *(in.end() - 1) ? "" : ", ");
    g_.recipe.push_back(line + " -> " + label(out));
    ops_.push_back(d->get());
    g_.keep.push_back(std::move(d));
  }
  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

 private:
  const Descriptor& keep(DescriptorPtr d, const char* name, cudnnDataType_t t, const std::vector<int64_t>& dims,
                         const std::string& extra) {
    labels_.emplace_back(d.get(), std::string(name) + "[" + type_name(t) + " " + dims_text(dims) + extra + "]");
    g_.keep.push_back(std::move(d));
    return *g_.keep.back();
  }
  std::string label(const Descriptor& d) const {
    for (const auto& [ptr, text] : labels_) {
      if (ptr == &d) return text;
    }
    return "?";
  }
  OperationGraph& g_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::vector<std::pair<const Descriptor*, std::string>> labels_;
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
  const cudnnDataType_t i32 = CUDNN_DATA_INT32;
  const std::vector<int64_t> score_dims{p.b, p.h, p.s_q, p.s_kv};
  const std::vector<int64_t> row_dims{p.b, p.h, p.s_q, 1};

  const Descriptor& q = b.tensor("Q", kUidQ, io, p.q.dims, p.q.strides);
  // K^T: [B, Hkv, D, Skv] over K's memory, the last two axes swapped.
  const Descriptor& kt = b.tensor("K^T", kUidK, io, {p.b, p.h_kv, p.d, p.s_kv},
                                  {p.k.strides[0], p.k.strides[1], p.k.strides[3], p.k.strides[2]});
  const Descriptor& v = b.tensor("V", kUidV, io, p.v.dims, p.v.strides);
  const std::vector<int64_t> o_dims{p.b, p.h, p.s_q, p.d_v};
  const Descriptor& o = b.tensor("O", kUidO, io, o_dims, contiguous(o_dims));

  const Descriptor* s = &b.virt("S", f32, score_dims);
  b.op(make_matmul(q, kt, *s), "MATMUL(f32)", {&q, &kt}, *s);

  const Descriptor& scale = b.scalar_f("scale", p.scale);
  const Descriptor* scaled = &b.virt("S*scale", f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_MUL, f32, *s, &scale, nullptr, *scaled), "MUL(f32)", {s, &scale}, *scaled);
  s = scaled;

  if (p.bias) {
    const Descriptor& bias = b.tensor("bias", kUidBias, io, p.bias->dims, p.bias->strides);
    const Descriptor* biased = &b.virt("S+bias", f32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_ADD, f32, *s, &bias, nullptr, *biased), "ADD(f32)", {s, &bias}, *biased);
    s = biased;
  }

  if (p.causal != CausalMask::none) {
    // The index generators compute in float and write int32, as cudnn-frontend's mask does.
    const Descriptor* row = &b.virt("row", i32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, *s, nullptr, nullptr, *row, 2), "GEN_INDEX(f32, axis 2)",
         {s}, *row);
    const Descriptor& col = b.virt("col", i32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, *s, nullptr, nullptr, col, 3), "GEN_INDEX(f32, axis 3)",
         {s}, col);
    if (p.causal == CausalMask::bottom_right) {
      // row + Skv - Sq >= col: the last query sees every key
      const Descriptor& skv = b.scalar_i("Skv", static_cast<int32_t>(p.s_kv));
      const Descriptor* plus = &b.virt("row+Skv", i32, score_dims);
      b.op(make_pointwise(CUDNN_POINTWISE_ADD, i32, *row, &skv, nullptr, *plus), "ADD(i32)", {row, &skv}, *plus);
      const Descriptor& sq = b.scalar_i("Sq", static_cast<int32_t>(p.s_q));
      const Descriptor* minus = &b.virt("row+Skv-Sq", i32, score_dims);
      b.op(make_pointwise(CUDNN_POINTWISE_SUB, i32, *plus, &sq, nullptr, *minus), "SUB(i32)", {plus, &sq}, *minus);
      row = minus;
    }
    const Descriptor& keep = b.virt("keep", CUDNN_DATA_BOOLEAN, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, *row, &col, nullptr, keep), "CMP_GE(bool)",
         {row, &col}, keep);
    // cuDNN before 9.10 wants the lowest finite float as the masked value, later ones -inf.
    const float masked = library().version < 91000 ? std::numeric_limits<float>::lowest()
                                                   : -std::numeric_limits<float>::infinity();
    const Descriptor& neg = b.scalar_f("masked", masked);
    const Descriptor* selected = &b.virt("S masked", f32, score_dims);
    b.op(make_pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, *s, &neg, &keep, *selected), "BINARY_SELECT(f32)",
         {s, &neg, &keep}, *selected);
    s = selected;
  }

  // softmax with its log-sum-exp
  const Descriptor& mx = b.virt("M", f32, row_dims);
  b.op(make_reduction(CUDNN_REDUCE_TENSOR_MAX, *s, mx), "REDUCTION MAX(f32)", {s}, mx);
  const Descriptor& centered = b.virt("S-M", f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_SUB, f32, *s, &mx, nullptr, centered), "SUB(f32)", {s, &mx}, centered);
  const Descriptor& e = b.virt("E", f32, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_EXP, f32, centered, nullptr, nullptr, e), "EXP(f32)", {&centered}, e);
  const Descriptor& z = b.virt("Z", f32, row_dims);
  b.op(make_reduction(CUDNN_REDUCE_TENSOR_ADD, e, z), "REDUCTION ADD(f32)", {&e}, z);
  const Descriptor& logz = b.virt("logZ", f32, row_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, logz), "LOG(f32)", {&z}, logz);
  // Like cudnn-frontend, the statistics are computed even when not stored (then virtual).
  const Descriptor& stats = p.stats_output >= 0
                                ? b.tensor("stats", kUidStats, f32, row_dims, contiguous(row_dims))
                                : b.virt("stats", f32, row_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_ADD, f32, mx, &logz, nullptr, stats), "ADD(f32)", {&mx, &logz}, stats);
  // P is computed in float but stored in the io type: cuDNN's fused attention takes the second
  // matmul's A operand only in q's dtype (cudnn-frontend sets it so, "requirement by cudnn
  // backend"). A float P makes the graph a pattern no fused engine claims, and the heuristics
  // return no engine config at all.
  const Descriptor& prob = b.virt("P", io, score_dims);
  b.op(make_pointwise(CUDNN_POINTWISE_DIV, f32, e, &z, nullptr, prob), "DIV(f32)", {&e, &z}, prob);

  b.op(make_matmul(prob, v, o), "MATMUL(f32)", {&prob, &v}, o);
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

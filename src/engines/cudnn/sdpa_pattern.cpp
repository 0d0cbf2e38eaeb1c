#include "engines/cudnn/sdpa_pattern.hpp"

#include <algorithm>
#include <cmath>

namespace sinter::cudnn {
namespace {

int index_of(const std::vector<TensorId>& list, TensorId t) {
  auto it = std::find(list.begin(), list.end(), t);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

SdpaOperand operand(const Graph& g, const fuse::Region& r, TensorId t) {
  const TensorInfo& info = g.tensor(t);
  return {index_of(r.inputs, t), info.dims, info.strides};
}

bool half_type(DType t) { return t == DType::f16 || t == DType::bf16; }

}  // namespace

SdpaMatch match_sdpa(const Graph& g, const fuse::Region& r, size_t cudnn_version) {
  auto no = [](std::string why) { return SdpaMatch{std::nullopt, std::move(why)}; };
  if (r.kind != fuse::RegionKind::sdpa) return no("not an sdpa region (sdpa is the only pattern lowered so far)");
  if (!r.prologue.empty() || !r.epilogue.empty() || !r.reductions.empty()) {
    return no("a fused prologue, epilogue or reduction around sdpa is not lowered");
  }
  const Node& n = g.node(r.anchor);
  const auto& at = std::get<SdpaAttrs>(n.attrs);
  const TensorInfo& q = g.tensor(n.inputs[0]);
  const TensorInfo& k = g.tensor(n.inputs[1]);
  const TensorInfo& v = g.tensor(n.inputs[2]);
  if (!half_type(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) {
    return no("fused flash attention takes f16 or bf16 q, k, v of one dtype; found q " +
              std::string(to_string(q.dtype)) + ", k " + std::string(to_string(k.dtype)) + ", v " +
              std::string(to_string(v.dtype)));
  }
  const int o_out = index_of(r.outputs, n.outputs[0]);
  if (o_out < 0) return no("the attention output is not stored");
  if (g.tensor(n.outputs[0]).dtype != q.dtype) return no("o must have q's dtype");

  SdpaPattern p;
  p.dtype = q.dtype;
  p.o_output = o_out;
  p.b = q.dims[0];
  p.h = q.dims[1];
  p.s_q = q.dims[2];
  p.d = q.dims[3];
  p.h_kv = k.dims[1];
  p.s_kv = k.dims[2];
  p.d_v = v.dims[3];
  for (int64_t d : {p.d, p.d_v}) {
    if (d % 8 != 0 || d > 256) {
      return no("head dims must be multiples of 8 and at most 256; found d " + std::to_string(p.d) +
                ", dv " + std::to_string(p.d_v));
    }
  }
  for (const TensorInfo* t : {&q, &k, &v}) {
    if (t->strides[3] != 1) {
      return no("'" + t->name + "' must have a unit stride along the head dim (found stride " +
                std::to_string(t->strides[3]) + ")");
    }
    // cuDNN reads rows with 16-byte vector loads: every other stride must keep that alignment.
    for (int i = 0; i < 3; ++i) {
      if (t->dims[i] > 1 && t->strides[i] % 8 != 0) {
        return no("'" + t->name + "' stride " + std::to_string(t->strides[i]) + " of axis " +
                  std::to_string(i) + " is not a multiple of 8 elements (16 bytes)");
      }
    }
  }
  p.q = operand(g, r, n.inputs[0]);
  p.k = operand(g, r, n.inputs[1]);
  p.v = operand(g, r, n.inputs[2]);
  p.causal = at.causal;
  p.scale = static_cast<float>(at.scale.value_or(1.0 / std::sqrt(static_cast<double>(p.d))));

  if (at.has_bias) {
    const TensorInfo& bias = g.tensor(n.inputs[3]);
    if (bias.dtype == DType::boolean) {
      return no("a bool keep-mask is not lowered (cuDNN's fused attention takes an additive bias; "
                "pass the mask as a float bias of 0 / -inf)");
    }
    if (bias.dtype != q.dtype) {
      return no("the bias must have q's dtype (" + std::string(to_string(q.dtype)) + "); found " +
                std::string(to_string(bias.dtype)));
    }
    if (bias.dims.size() != 4) return no("the bias must be 4-d (broadcastable to [B,H,Sq,Skv])");
    if (bias.dims[3] > 1 && bias.strides[3] != 1) return no("the bias needs a unit stride along Skv");
    for (int i = 0; i < 3; ++i) {
      if (bias.dims[i] > 1 && bias.strides[i] % 8 != 0) {
        return no("the bias stride " + std::to_string(bias.strides[i]) + " of axis " + std::to_string(i) +
                  " is not a multiple of 8 elements (16 bytes; a contiguous bias needs Skv % 8 == 0)");
      }
    }
    if (at.causal == CausalMask::bottom_right) {
      return no("cuDNN's fused attention has no bottom-right causal mask together with a bias");
    }
    p.bias = operand(g, r, n.inputs[3]);
  }
  if (at.causal == CausalMask::bottom_right) {
    if (p.s_q > p.s_kv) {
      return no("bottom-right causal with Sq > Skv (" + std::to_string(p.s_q) + " > " +
                std::to_string(p.s_kv) + ") leaves rows with no key; cuDNN does not support it");
    }
    if (cudnn_version < 90600 && (p.s_q % 64 != 0 || p.s_kv % 64 != 0)) {
      return no("bottom-right causal needs Sq and Skv multiples of 64 before cuDNN 9.6");
    }
  }
  if (at.emit_stats && n.outputs.size() > 1) p.stats_output = index_of(r.outputs, n.outputs[1]);

  p.summary = std::string(to_string(p.dtype)) + " d" + std::to_string(p.d);
  if (p.d_v != p.d) p.summary += "/dv" + std::to_string(p.d_v);
  if (p.causal != CausalMask::none) p.summary += " causal(" + std::string(to_string(p.causal)) + ")";
  if (p.h != p.h_kv) p.summary += " gqa " + std::to_string(p.h) + "/" + std::to_string(p.h_kv);
  if (p.bias) p.summary += " bias";
  if (p.stats_output >= 0) p.summary += " stats";
  return {p, {}};
}

}  // namespace sinter::cudnn

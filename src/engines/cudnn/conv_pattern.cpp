#include "engines/cudnn/conv_pattern.hpp"

#include <algorithm>

namespace sinter::cudnn {
namespace {

int index_of(const std::vector<TensorId>& list, TensorId t) {
  auto it = std::find(list.begin(), list.end(), t);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

// NHWC [a0,a1,a2,a3] as cuDNN's [a0,a3,a1,a2]
std::vector<int64_t> nhwc_to_nchw_order(const Dims& v) { return {v[0], v[3], v[1], v[2]}; }

}  // namespace

ConvMatch match_conv(const Graph& g, const fuse::Region& r) {
  auto no = [](std::string why) { return ConvMatch{std::nullopt, std::move(why)}; };
  if (r.kind != fuse::RegionKind::conv) return no("not a conv region");
  if (!r.prologue.empty()) return no("a fused prologue before conv is not lowered");
  const Node& n = g.node(r.anchor);
  const auto& at = std::get<Conv2dAttrs>(n.attrs);
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& w = g.tensor(n.inputs[1]);
  if ((x.dtype != DType::bf16 && x.dtype != DType::f16) || w.dtype != x.dtype) {
    return no("conv takes f16 or bf16 x and w of one dtype here; found x " + std::string(to_string(x.dtype)) +
              ", w " + std::string(to_string(w.dtype)));
  }
  if (at.groups != 1) return no("grouped conv (groups " + std::to_string(at.groups) + ") is not lowered");
  if (x.strides[3] != 1 || w.strides[3] != 1) return no("x and w need a unit channel stride (NHWC, KRSC)");
  if (x.dims[3] % 8 != 0) {
    return no("the channel count " + std::to_string(x.dims[3]) +
              " is not a multiple of 8 (cuDNN's tensor-core convs want 16-byte channel vectors)");
  }
  ConvPattern p;
  p.dtype = x.dtype;
  p.x_input = index_of(r.inputs, n.inputs[0]);
  p.w_input = index_of(r.inputs, n.inputs[1]);
  p.stride = at.stride;
  p.pad_begin = at.pad_begin;
  p.pad_end = at.pad_end;
  p.dilation = at.dilation;
  const TensorInfo& y = g.tensor(n.outputs[0]);
  if (y.dtype != x.dtype) return no("the conv's out_dtype differs from its inputs'");

  p.summary = std::string(to_string(p.dtype)) + " " + std::to_string(w.dims[1]) + "x" +
              std::to_string(w.dims[2]) + " s" + std::to_string(at.stride[0]);
  const EpilogueChain chain = match_epilogue_chain(g, r, n.outputs[0], p.dtype, r.reductions.size());
  if (chain.output < 0) return no(chain.reason);
  const TensorId stored = r.outputs[static_cast<size_t>(chain.output)];
  for (const fuse::ExitReduce& x : r.reductions) {
    const Node& red = g.node(x.node);
    const std::string who = "exit reduction '" + red.name + "'";
    if (red.op != OpKind::reduce_sum && red.op != OpKind::reduce_amax) {
      return no(who + " (" + std::string(to_string(red.op)) + ") is not lowered: sum and amax are");
    }
    if (red.inputs[0] != stored) return no(who + " does not reduce the stored output");
    if (x.pattern == fuse::ExitReduction::rows) return no(who + " is per pixel (rows); per channel or global are lowered");
    if (g.tensor(red.outputs[0]).dtype != DType::f32) {
      return no(who + " is " + std::string(to_string(g.tensor(red.outputs[0]).dtype)) + "; cuDNN's reduction writes f32");
    }
    ConvReduction cr;
    cr.amax = red.op == OpKind::reduce_amax;
    cr.per_channel = x.pattern == fuse::ExitReduction::columns;
    cr.output = index_of(r.outputs, red.outputs[0]);
    if (cr.output < 0) return no(who + " is not among the region's outputs");
    p.reductions.push_back(cr);
    p.summary += cr.amax ? (cr.per_channel ? "+amax/ch" : "+amax") : (cr.per_channel ? "+sum/ch" : "+sum");
  }
  p.epilogue = chain.steps;
  p.y_output = chain.output;
  p.summary += chain.summary;
  p.x_dims = nhwc_to_nchw_order(x.dims);
  p.x_strides = nhwc_to_nchw_order(x.strides);
  p.w_dims = nhwc_to_nchw_order(w.dims);
  p.w_strides = nhwc_to_nchw_order(w.strides);
  p.y_dims = nhwc_to_nchw_order(y.dims);
  p.y_strides = nhwc_to_nchw_order(contiguous_strides(y.dims));
  return {p, {}};
}

}  // namespace sinter::cudnn

#include "engines/cudnn/epilogue_chain.hpp"

#include <algorithm>

namespace sinter::cudnn {
namespace {

int index_of(const std::vector<TensorId>& list, TensorId t) {
  auto it = std::find(list.begin(), list.end(), t);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

}  // namespace

EpilogueChain match_epilogue_chain(const Graph& g, const fuse::Region& r, TensorId start, DType dtype,
                                   size_t other_outputs) {
  EpilogueChain c;
  auto no = [&](std::string why) {
    c.reason = std::move(why);
    c.output = -1;
    return c;
  };
  const TensorInfo& y = g.tensor(start);
  const int64_t k = y.dims.empty() ? 1 : y.dims.back();
  TensorId value = start;
  for (NodeId id : r.epilogue) {
    const Node& e = g.node(id);
    if (index_of(r.outputs, value) >= 0) return no("an intermediate epilogue value is stored");
    const TensorInfo& out = g.tensor(e.outputs[0]);
    if (out.dtype != dtype) return no("epilogue op '" + e.name + "' changes the dtype");
    if (out.dims != y.dims) return no("epilogue op '" + e.name + "' broadcasts the output");
    if (e.op == OpKind::relu && e.inputs[0] == value) {
      c.steps.push_back({EpilogueStep::relu, -1});
      c.summary += "+relu";
    } else if (e.op == OpKind::add && e.inputs.size() == 2 &&
               (e.inputs[0] == value || e.inputs[1] == value) && e.inputs[0] != e.inputs[1]) {
      const TensorId other = e.inputs[0] == value ? e.inputs[1] : e.inputs[0];
      const TensorInfo& o = g.tensor(other);
      const int in = index_of(r.inputs, other);
      if (in < 0) return no("epilogue add '" + e.name + "' reads a value computed in the region");
      if (o.dtype != dtype) return no("epilogue operand '" + o.name + "' has another dtype");
      if (num_elements(o.dims) == k && !o.dims.empty() && o.dims.back() == k &&
          (o.strides.back() == 1 || k == 1)) {
        c.steps.push_back({EpilogueStep::bias, in});
        c.summary += "+bias";
      } else if (o.dims == y.dims && o.strides == contiguous_strides(y.dims)) {
        c.steps.push_back({EpilogueStep::residual, in});
        c.summary += "+residual";
      } else {
        return no("epilogue operand '" + o.name + "' " + dims_to_string(o.dims) +
                  " is neither a per-channel bias nor a contiguous residual of the output's shape");
      }
    } else {
      return no("epilogue op '" + e.name + "' (" + std::string(to_string(e.op)) +
                ") is not lowered: only add bias, relu, add residual in a chain");
    }
    value = e.outputs[0];
  }
  c.output = index_of(r.outputs, value);
  if (c.output < 0 || r.outputs.size() != 1 + other_outputs) {
    return no("only the epilogue chain's last value may be stored");
  }
  return c;
}

void append_epilogue(OperationGraph& g, const std::vector<EpilogueStep>& steps, const Descriptor& value_in,
                     const Descriptor& y, DType dtype, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& strides, const std::vector<int64_t>& bias_dims,
                     const std::vector<int64_t>& bias_strides, int64_t uid_base) {
  const cudnnDataType_t io = data_type(dtype);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  auto keep = [&](DescriptorPtr d) -> const Descriptor& {
    g.keep.push_back(std::move(d));
    return *g.keep.back();
  };
  auto op = [&](DescriptorPtr d) {
    g.ops.push_back(d->get());
    g.keep.push_back(std::move(d));
  };
  const Descriptor* value = &value_in;
  int64_t next_virtual = 2000;
  for (size_t i = 0; i < steps.size(); ++i) {
    const EpilogueStep& e = steps[i];
    const Descriptor& next = i + 1 == steps.size()
                                 ? y
                                 : keep(make_tensor(next_virtual++, f32, dims, strides, /*is_virtual=*/true));
    const int64_t uid = uid_base + static_cast<int64_t>(i);
    switch (e.kind) {
      case EpilogueStep::relu:
        op(make_pointwise(CUDNN_POINTWISE_RELU_FWD, f32, *value, nullptr, nullptr, next));
        break;
      case EpilogueStep::bias: {
        const Descriptor& b = keep(make_tensor(uid, io, bias_dims, bias_strides));
        op(make_pointwise(CUDNN_POINTWISE_ADD, f32, *value, &b, nullptr, next));
        break;
      }
      case EpilogueStep::residual: {
        const Descriptor& res = keep(make_tensor(uid, io, dims, strides));
        op(make_pointwise(CUDNN_POINTWISE_ADD, f32, *value, &res, nullptr, next));
        break;
      }
    }
    value = &next;
  }
}

}  // namespace sinter::cudnn

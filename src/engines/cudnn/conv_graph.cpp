#include "engines/cudnn/conv_graph.hpp"

namespace sinter::cudnn {

std::unique_ptr<OperationGraph> build_conv_operations(const ConvPattern& p) {
  auto out = std::make_unique<OperationGraph>();
  const cudnnDataType_t io = data_type(p.dtype);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  auto keep = [&](DescriptorPtr d) -> const Descriptor& {
    out->keep.push_back(std::move(d));
    return *out->keep.back();
  };
  auto op = [&](DescriptorPtr d) {
    out->ops.push_back(d->get());
    out->keep.push_back(std::move(d));
  };
  int64_t next_virtual = 1000;
  auto virt = [&]() -> const Descriptor& {
    return keep(make_tensor(next_virtual++, f32, p.y_dims, p.y_strides, /*is_virtual=*/true));
  };

  const Descriptor& x = keep(make_tensor(kConvUidX, io, p.x_dims, p.x_strides));
  const Descriptor& w = keep(make_tensor(kConvUidW, io, p.w_dims, p.w_strides));
  const Descriptor& y = keep(make_tensor(kConvUidY, io, p.y_dims, p.y_strides));
  const Descriptor* value = p.epilogue.empty() ? &y : &virt();

  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t spatial = 2;
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, f32)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, spatial)
      .set_array(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, std::vector<int64_t>(p.dilation.begin(), p.dilation.end()))
      .set_array(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, std::vector<int64_t>(p.stride.begin(), p.stride.end()))
      .set_array(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, std::vector<int64_t>(p.pad_begin.begin(), p.pad_begin.end()))
      .set_array(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, std::vector<int64_t>(p.pad_end.begin(), p.pad_end.end()));
  conv.finalize();
  auto fwd = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  fwd->set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
      .set_desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *value)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, alpha)
      .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, beta);
  fwd->finalize();
  op(std::move(fwd));

  const int64_t k = p.y_dims[1];
  append_epilogue(*out, p.epilogue, *value, y, p.dtype, p.y_dims, p.y_strides, {1, k, 1, 1}, {k, 1, k, k},
                  kConvUidEpilogue);
  // Exit reductions read the stored y (as cuDNN's conv + statistics fusions do) into f32 outputs.
  for (size_t i = 0; i < p.reductions.size(); ++i) {
    const ConvReduction& cr = p.reductions[i];
    const std::vector<int64_t> dims = cr.per_channel ? std::vector<int64_t>{1, k, 1, 1} : std::vector<int64_t>{1, 1, 1, 1};
    const std::vector<int64_t> strides = cr.per_channel ? std::vector<int64_t>{k, 1, k, k} : std::vector<int64_t>{1, 1, 1, 1};
    const Descriptor& r = keep(make_tensor(kConvUidReduction + static_cast<int64_t>(i), f32, dims, strides));
    op(make_reduction(cr.amax ? CUDNN_REDUCE_TENSOR_AMAX : CUDNN_REDUCE_TENSOR_ADD, y, r));
  }
  return out;
}

}  // namespace sinter::cudnn

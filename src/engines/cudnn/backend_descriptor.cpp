#include "engines/cudnn/backend_descriptor.hpp"

#include "sinter/error.hpp"

namespace sinter::cudnn {

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) {
  SINTER_CUDNN_CHECK(require_library().BackendCreateDescriptor(type, &d_));
}

Descriptor::~Descriptor() {
  if (d_) library().BackendDestroyDescriptor(d_);
}

void Descriptor::set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t count, const void* values) {
  const cudnnStatus_t s = library().BackendSetAttribute(d_, name, type, count, values);
  if (s != CUDNN_STATUS_SUCCESS) {
    throw Error(ErrorCode::cuda, "cudnnBackendSetAttribute(attribute " + std::to_string(name) +
                                     ") failed: " + status_message(s));
  }
}

void Descriptor::finalize() { SINTER_CUDNN_CHECK(library().BackendFinalize(d_)); }

cudnnStatus_t Descriptor::try_finalize() { return library().BackendFinalize(d_); }

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::fp8_e4m3: return CUDNN_DATA_FP8_E4M3;
    case DType::fp8_e5m2: return CUDNN_DATA_FP8_E5M2;
    case DType::i32: return CUDNN_DATA_INT32;
    case DType::i64: return CUDNN_DATA_INT64;
    case DType::boolean: return CUDNN_DATA_BOOLEAN;
  }
  throw Error(ErrorCode::unsupported, "cuDNN: no data type for " + std::string(to_string(t)));
}

DescriptorPtr make_tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& strides, bool is_virtual, bool by_value) {
  auto t = std::make_unique<Descriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t alignment = 16;
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type)
      .set_array(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims)
      .set_array(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, alignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, is_virtual);
  if (by_value) t->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, by_value);
  t->finalize();
  return t;
}

DescriptorPtr make_pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute, const Descriptor& x,
                             const Descriptor* b, const Descriptor* t, const Descriptor& y,
                             int64_t axis) {
  Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, compute);
  if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, axis);
  pw.finalize();
  auto op = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
      .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  if (t) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  op->finalize();
  return op;
}

DescriptorPtr make_reduction(cudnnReduceTensorOp_t op_kind, const Descriptor& x, const Descriptor& y) {
  Descriptor red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  red.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, op_kind)
      .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  // Said explicitly, as cudnn-frontend does from 9.11 (libraries before it lack the attribute):
  // a deterministic reduction would narrow the engines that may take the graph.
  if (library().version >= 91100) {
    red.set(CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, false);
  }
  red.finalize();
  auto op = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
      .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
  op->finalize();
  return op;
}

DescriptorPtr make_matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c) {
  Descriptor mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  mm.finalize();
  auto op = std::make_unique<Descriptor>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
      .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  op->finalize();
  return op;
}

}  // namespace sinter::cudnn

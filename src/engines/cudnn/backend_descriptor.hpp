// RAII over cuDNN backend descriptors, and the few builders an operation graph needs: tensors
// (by uid, virtual or passed by value), pointwise, reduction and matmul operations. Every call
// goes through the run-time loaded library (cudnn_library.hpp) and is checked.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engines/cudnn/cudnn_library.hpp"
#include "sinter/dtype.hpp"

namespace sinter::cudnn {

class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  ~Descriptor();
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }

  template <typename T>
  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T& value) {
    set_raw(name, type, 1, &value);
    return *this;
  }
  template <typename T>
  Descriptor& set_array(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                        const std::vector<T>& values) {
    set_raw(name, type, static_cast<int64_t>(values.size()), values.data());
    return *this;
  }
  Descriptor& set_desc(cudnnBackendAttributeName_t name, const Descriptor& d) {
    cudnnBackendDescriptor_t raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw);
  }
  void finalize();
  // Finalize, returning the status instead of throwing (heuristic configs may be unsupported).
  cudnnStatus_t try_finalize();

 private:
  void set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
               const void* values);
  cudnnBackendDescriptor_t d_ = nullptr;
};

using DescriptorPtr = std::unique_ptr<Descriptor>;

cudnnDataType_t data_type(DType t);  // throws unsupported for types cuDNN has no name for

// A finalized tensor descriptor.
DescriptorPtr make_tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& strides, bool is_virtual = false,
                          bool by_value = false);

// Operations: y = op(x[, b[, t]]) computed in `compute`. `axis` only for GEN_INDEX.
DescriptorPtr make_pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute, const Descriptor& x,
                             const Descriptor* b, const Descriptor* t, const Descriptor& y,
                             int64_t axis = -1);
DescriptorPtr make_reduction(cudnnReduceTensorOp_t op, const Descriptor& x, const Descriptor& y);
DescriptorPtr make_matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c);

}  // namespace sinter::cudnn

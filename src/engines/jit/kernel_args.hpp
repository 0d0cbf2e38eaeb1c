// Host side of kernels/common/abi.h: packing a generated kernel's argument struct byte for byte,
// collapsing an iteration shape, and fast-division constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/abi.h"
#include "sinter/graph.hpp"

namespace sinter::jit {

// Appends fields with C layout rules (each at a multiple of its alignment), in the order the
// generated struct declares them. Pointer fields are remembered so a launch can rebind them.
class ArgPacker {
 public:
  template <typename T>
  size_t add(const T& value) {
    const size_t offset = align(alignof(T));
    max_align_ = alignof(T) > max_align_ ? alignof(T) : max_align_;
    bytes_.resize(offset + sizeof(T));
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
    return offset;
  }
  size_t add_pointer(const void* p) { return add(p); }
  void set_pointer(size_t offset, const void* p) { std::memcpy(bytes_.data() + offset, &p, sizeof p); }
  // Pads the struct to its alignment: 8 (every struct here holds 8-byte fields) or more when a
  // field needs it (a 64-byte aligned TMA tensor map).
  void finish() { bytes_.resize(align(max_align_)); }
  // Overwrites `size` bytes at `offset` (a tensor map encoded at launch).
  void set_bytes(size_t offset, const void* p, size_t size) { std::memcpy(bytes_.data() + offset, p, size); }
  const void* data() const { return bytes_.data(); }
  void* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  size_t align(size_t a) const { return (bytes_.size() + a - 1) / a * a; }
  std::vector<std::byte> bytes_;
  size_t max_align_ = 8;
};

SinterFastDivmod make_fast_divmod(uint32_t d);

// An iteration shape and the element strides of each operand over it, collapsed: size-1 dims
// dropped, adjacent dims merged where every operand allows, innermost dimension first.
struct CollapsedShape {
  Dims sizes;                  // innermost first, never empty (a scalar is [1])
  std::vector<Dims> strides;   // per operand, innermost first
  int64_t numel = 1;
};

// `shape` is row-major; each operand's strides are row-major over `shape` (0 where broadcast).
CollapsedShape collapse(const Dims& shape, const std::vector<Dims>& operand_strides);

// Strides of a tensor with `dims` (and row-major `strides`) broadcast to `shape`: right-aligned,
// 0 on dims where the tensor has size 1 or no dim.
Dims broadcast_strides(const Dims& dims, const Dims& strides, const Dims& shape);

SinterIterShape make_iter_shape(const CollapsedShape& c);
SinterStridedView make_view(const Dims& strides_innermost_first);

}  // namespace sinter::jit

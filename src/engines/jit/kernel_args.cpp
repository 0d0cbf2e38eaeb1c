#include "engines/jit/kernel_args.hpp"

#include "sinter/error.hpp"

namespace sinter::jit {

SinterFastDivmod make_fast_divmod(uint32_t d) {
  if (d == 0 || d >= (1u << 31)) {
    throw Error(ErrorCode::internal, "fast divmod divisor out of range: " + std::to_string(d));
  }
  uint32_t shift = 0;
  while ((uint64_t{1} << shift) < d) ++shift;
  // mul = floor(2^32 * (2^shift - d) / d) + 1; exact for numerators below 2^31
  const uint64_t mul = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
  return SinterFastDivmod{d, static_cast<uint32_t>(mul), shift};
}

Dims broadcast_strides(const Dims& dims, const Dims& strides, const Dims& shape) {
  Dims out(shape.size(), 0);
  const size_t lead = shape.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    out[lead + i] = dims[i] == 1 ? 0 : strides[i];
  }
  return out;
}

CollapsedShape collapse(const Dims& shape, const std::vector<Dims>& operand_strides) {
  // Work innermost first.
  std::vector<int64_t> sizes;
  std::vector<Dims> strides(operand_strides.size());
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    bool merge = !sizes.empty();
    for (size_t k = 0; merge && k < operand_strides.size(); ++k) {
      merge = operand_strides[k][i] == strides[k].back() * sizes.back();
    }
    if (merge) {
      sizes.back() *= shape[i];
    } else {
      sizes.push_back(shape[i]);
      for (size_t k = 0; k < operand_strides.size(); ++k) strides[k].push_back(operand_strides[k][i]);
    }
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    for (auto& s : strides) s.push_back(0);
  }
  if (sizes.size() > SINTER_MAX_RANK) {
    throw Error(ErrorCode::unsupported, "an iteration shape collapses to rank " +
                                            std::to_string(sizes.size()) + "; at most " +
                                            std::to_string(SINTER_MAX_RANK) + " is supported");
  }
  CollapsedShape c;
  c.sizes = sizes;
  c.strides = strides;
  c.numel = num_elements(sizes);
  return c;
}

SinterIterShape make_iter_shape(const CollapsedShape& c) {
  SinterIterShape s{};
  s.rank = static_cast<int>(c.sizes.size());
  s.numel = c.numel;
  for (size_t i = 0; i < c.sizes.size(); ++i) {
    s.size[i] = c.sizes[i];
    // the 32-bit path is used only when numel < 2^31; larger dims keep a harmless divisor
    s.dim[i] = make_fast_divmod(c.sizes[i] < (int64_t{1} << 31) ? static_cast<uint32_t>(c.sizes[i]) : 1u);
  }
  for (int i = s.rank; i < SINTER_MAX_RANK; ++i) {
    s.size[i] = 1;
    s.dim[i] = make_fast_divmod(1);
  }
  return s;
}

SinterStridedView make_view(const Dims& strides) {
  SinterStridedView v{};
  for (size_t i = 0; i < strides.size() && i < SINTER_MAX_RANK; ++i) v.stride[i] = strides[i];
  return v;
}

}  // namespace sinter::jit

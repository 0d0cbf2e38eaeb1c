// Which generator runs a region, its candidate configs, and the dispatch from a config to the
// generator that builds its kernels.
#include <algorithm>

#include "engines/jit/codegen.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

template <class C>
std::vector<KernelConfig> as_kernel_configs(const std::vector<C>& configs) {
  return std::vector<KernelConfig>(configs.begin(), configs.end());
}

}  // namespace

std::string_view region_generator(const fuse::Region& r) {
  const bool row_exits = std::any_of(r.reductions.begin(), r.reductions.end(), [](const fuse::ExitReduce& e) {
    return e.pattern == fuse::ExitReduction::rows;
  });
  switch (r.kind) {
    case fuse::RegionKind::pointwise: return row_exits ? "rowwise" : "pointwise";
    case fuse::RegionKind::rowwise: return "rowwise";
    case fuse::RegionKind::reduction: return "reduction";
    case fuse::RegionKind::layout:
    case fuse::RegionKind::alias:
    case fuse::RegionKind::gather: return "layout";
    case fuse::RegionKind::matmul: return "matmul";
    case fuse::RegionKind::conv: return "conv";
    case fuse::RegionKind::sdpa: return "sdpa";
    case fuse::RegionKind::collective:
      throw Error(ErrorCode::unsupported, "region " + std::to_string(r.id) + ": " + std::string(fuse::kCollectiveOnNccl));
  }
  throw Error(ErrorCode::internal, "region_generator: unknown region kind");
}

std::vector<KernelConfig> region_configs(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                                         bool for_megakernels) {
  const std::string_view gen = region_generator(r);
  if (gen == "pointwise") return as_kernel_configs(pointwise_configs(g, r, dev));
  if (gen == "rowwise") return as_kernel_configs(rowwise_configs(g, r, dev));
  if (gen == "matmul") return as_kernel_configs(matmul_configs(g, r, dev, for_megakernels));
  if (gen == "sdpa") return as_kernel_configs(sdpa_configs(g, r, dev));
  if (gen == "reduction") return {ReductionConfig{}};
  if (gen == "layout") return {LayoutConfig{}};
  return {ConvConfig{}};
}

RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev,
                           const KernelConfig& config) {
  if (config_kind(config) != region_generator(r)) {
    throw Error(ErrorCode::invalid_argument, "jit engine, region " + std::to_string(r.id) + " runs on the " +
                                                 std::string(region_generator(r)) + " kernels; config '" +
                                                 config_text(config) + "' is for the " +
                                                 std::string(config_kind(config)) + " kernels");
  }
  return std::visit(
      [&](const auto& c) -> RegionKernels {
        using C = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<C, PointwiseConfig>) return build_pointwise(g, r, dev, c);
        if constexpr (std::is_same_v<C, RowwiseConfig>) return build_rowwise(g, r, dev, c);
        if constexpr (std::is_same_v<C, ReductionConfig>) return build_reduction(g, r, dev);
        if constexpr (std::is_same_v<C, LayoutConfig>) return build_layout(g, r, dev);
        if constexpr (std::is_same_v<C, MatmulConfig>) return build_matmul(g, r, dev, c);
        if constexpr (std::is_same_v<C, ConvConfig>) return build_conv(g, r, dev);
        if constexpr (std::is_same_v<C, SdpaConfig>) return build_sdpa(g, r, dev, c);
      },
      config);
}

RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  return build_region(g, r, dev, region_configs(g, r, dev).at(0));
}

std::vector<std::pair<KernelConfig, RegionKernels>> distinct_configs(const Graph& g, const fuse::Region& r,
                                                                     const cuda::DeviceProperties& dev,
                                                                     bool for_megakernels) {
  std::vector<std::pair<KernelConfig, RegionKernels>> out;
  std::vector<std::string> seen;
  for (const KernelConfig& c : region_configs(g, r, dev, for_megakernels)) {
    RegionKernels rk = build_region(g, r, dev, c);
    std::string key;
    for (const KernelSpec& k : rk.kernels) key += k.source + "\n" + k.description;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(std::move(key));
    out.emplace_back(c, std::move(rk));
  }
  return out;
}

}  // namespace sinter::jit

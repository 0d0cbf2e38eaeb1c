#include "engines/jit/jit_engine.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/driver.hpp"
#include "cuda/gpc_placement.hpp"
#include "cuda/sha256.hpp"
#include "common/trace_abi.h"
#include "engines/jit/codegen.hpp"
#include "engines/jit/gpc_order.hpp"
#include "engines/jit/jit_step.hpp"
#include "engines/jit/saved_kernels.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

const char* slot_base(const Binding& b, PointerSlot::Source source, int index, size_t workspace_offset) {
  switch (source) {
    case PointerSlot::Source::input: return static_cast<const char*>(b.inputs.at(index));
    case PointerSlot::Source::output: return static_cast<const char*>(b.outputs.at(index));
    case PointerSlot::Source::workspace: return static_cast<const char*>(b.workspace) + workspace_offset;
  }
  return nullptr;
}

// Encodes a TMA tensor map for the bound buffer into the argument struct; only when the address
// changed since the last launch (encoding is a driver call).
void bind_tensor_map(KernelSpec& spec, TensorMapSlot& t, const Binding& b) {
  const char* ptr = slot_base(b, t.source, t.index, 0) + t.byte_offset;
  if (ptr == t.encoded_for) return;
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0 && t.source == PointerSlot::Source::output) {
    // An output written by TMA stores: the kernel tests the alignment itself and stores such an
    // output without TMA (the Hopper GEMM's full-tile condition), so the map is never used. It is
    // zeroed rather than left describing the previous buffer.
    const unsigned char zeros[sizeof(CUtensorMap)] = {};
    spec.args.set_bytes(t.arg_offset, zeros, sizeof zeros);
    t.encoded_for = ptr;
    return;
  }
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) {
    throw Error(ErrorCode::invalid_argument, "kernel '" + spec.description +
                                                 "' reads an operand through TMA, which needs a 16-byte aligned "
                                                 "address; the bound pointer is not");
  }
  CUtensorMap map;
  const cuuint64_t dims[3] = {t.dims[0], t.dims[1], t.dims[2]};
  const cuuint64_t strides[2] = {t.strides[0], t.strides[1]};
  const cuuint32_t box[3] = {t.box[0], t.box[1], t.box[2]};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  SINTER_CU_CHECK(cuda::driver().tensor_map_encode_tiled(
      &map, static_cast<CUtensorMapDataType>(t.data_type), 3, const_cast<char*>(ptr), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  spec.args.set_bytes(t.arg_offset, &map, sizeof map);
  t.encoded_for = ptr;
}

}  // namespace

// SINTER_TRACE_FILE (diagnostic): kernels that can carry common/trace.cuh's stamps are built with
// them (the Hopper GEMM's `trace` config field), and such a kernel is waited for after its launch number SINTER_TRACE_LAUNCH of the step
// (from 0; default 3), and its CTAs' rows are appended to the file, one line a CTA:
// "<kernel description> | <block> <sm> <ns_0> <cycles_0> ...". The wait breaks a CUDA graph
// capture: never set it for captured runs. Read once; a step keeps a pointer to it only when set,
// so launches without it test one pointer.
struct TraceTap {
  std::string file;
  int launch = 3;
  static const TraceTap* from_env() {
    static const TraceTap tap = [] {
      TraceTap t;
      if (const char* f = std::getenv("SINTER_TRACE_FILE")) t.file = f;
      if (const char* n = std::getenv("SINTER_TRACE_LAUNCH")) t.launch = std::atoi(n);
      return t;
    }();
    return tap.file.empty() ? nullptr : &tap;
  }
};

static void write_trace(const std::string& file, const std::string& description, const cuda::Library& library,
                 unsigned ctas, cudaStream_t stream) {
  const auto [ptr, bytes] = library.global(SINTER_TRACE_GLOBAL);
  constexpr size_t kRowBytes = SINTER_TRACE_WORDS * sizeof(uint64_t);
  if (ptr == nullptr || bytes != SINTER_TRACE_MAX_CTAS * kRowBytes) return;
  SINTER_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<uint64_t> rows(bytes / sizeof(uint64_t));
  SINTER_CUDA_CHECK(cudaMemcpy(rows.data(), ptr, bytes, cudaMemcpyDeviceToHost));
  std::FILE* f = std::fopen(file.c_str(), "a");
  if (f == nullptr) throw Error(ErrorCode::io, "SINTER_TRACE_FILE: cannot open '" + file + "'");
  for (size_t b = 0; b < std::min<size_t>(ctas, SINTER_TRACE_MAX_CTAS); ++b) {
    std::fprintf(f, "%s | %zu", description.c_str(), b);
    for (size_t i = 0; i < SINTER_TRACE_WORDS; ++i) {
      std::fprintf(f, " %llu", static_cast<unsigned long long>(rows[b * SINTER_TRACE_WORDS + i]));
    }
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}


void bind_kernel_args(KernelSpec& spec, const Binding& b) {
  for (TensorMapSlot& t : spec.tensor_maps) bind_tensor_map(spec, t, b);
  for (const PointerSlot& p : spec.pointers) {
    const char* ptr = slot_base(b, p.source, p.index, p.workspace_offset) + p.byte_offset;
    if (reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(p.alignment) != 0) {
      throw Error(ErrorCode::invalid_argument,
                  "kernel '" + spec.description + "' needs " + std::to_string(p.alignment) +
                      "-byte aligned buffers; a bound pointer is not");
    }
    spec.args.set_pointer(p.arg_offset, ptr);
  }
}

JitStep::JitStep(std::vector<Loaded> kernels, size_t workspace)
    : kernels_(std::move(kernels)), workspace_(workspace), trace_(TraceTap::from_env()) {}

void JitStep::launch(const Binding& b, cudaStream_t stream) {
  for (Loaded& k : kernels_) {
    bind_kernel_args(k.spec, b);
    cuda::LaunchConfig cfg = k.spec.launch;
    cfg.stream = stream;
    void* params[] = {k.spec.args.data()};
    k.kernel.launch(cfg, params);
    if (trace_ != nullptr && k.launches++ == trace_->launch) {
      write_trace(trace_->file, k.spec.description, *k.library, cfg.grid.x, stream);
    }
  }
}

std::string JitStep::describe() const {
  std::string s;
  for (const Loaded& k : kernels_) s += (s.empty() ? "" : "; ") + k.spec.description;
  return s;
}

// The grid of a persistent kernel: at most `resident` CTAs, each taking the same number of work
// items (up to one), so no last round runs on a few CTAs while the rest of the GPU idles:
// 16384 rows on 528 resident CTAs are 32 rounds for 512 CTAs, not 31 rounds plus 16 rows.
namespace {
int64_t balanced_grid(int64_t work, int64_t resident) {
  if (work <= 0) return 1;
  const int64_t rounds = (work + resident - 1) / resident;
  return std::clamp<int64_t>((work + rounds - 1) / rounds, 1, resident);
}
}  // namespace

Support JitEngine::supports(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const {
  if (r.kind == fuse::RegionKind::collective) return Support::no(std::string(fuse::kCollectiveOnNccl));
  if (r.folded_norm() >= 0) {
    // a folded norm (fuse/partition.cpp) runs on the mma decode tile alone
    if (std::string why = decode_gemv_unsupported(g, r, ctx.device); !why.empty()) {
      return Support::no("a matmul with a folded norm runs on the decode GEMV tile, which declines: " + why);
    }
  }
  for (const fuse::ExitReduce& e : r.reductions) {
    const TensorInfo& out = g.tensor(g.node(e.node).outputs[0]);
    if (!is_float(out.dtype)) {
      return Support::no("exit reduction '" + g.node(e.node).name + "' has integer output " +
                         std::string(to_string(out.dtype)) + "; exit reductions accumulate in f32");
    }
  }
  return Support::yes();
}

std::vector<Candidate> JitEngine::candidates(const Graph& g, const fuse::Region& r,
                                             const EngineContext& ctx) const {
  if (!supports(g, r, ctx).ok) return {};
  std::vector<Candidate> out;
  for (const auto& [config, rk] : distinct_configs(g, r, ctx.device, ctx.for_megakernels)) {
    std::string desc;
    for (const KernelSpec& k : rk.kernels) desc += (desc.empty() ? "" : "; ") + k.description;
    out.push_back(Candidate{std::string(name()), static_cast<int>(out.size()), config_text(config), desc});
  }
  return out;
}

std::optional<Candidate> JitEngine::candidate_for_config(const Graph& g, const fuse::Region& r, const EngineContext& ctx,
                                                        const std::string& config, std::string* why) const {
  auto no = [&](const std::string& reason) -> std::optional<Candidate> {
    if (why) *why = "jit: " + reason;
    return std::nullopt;
  };
  if (const Support s = supports(g, r, ctx); !s.ok) return no(s.reason);
  try {
    const KernelConfig c = parse_kernel_config(config);
    if (config_kind(c) != region_generator(r)) {
      return no("region " + std::to_string(r.id) + " runs on the " + std::string(region_generator(r)) + " kernels");
    }
    std::string desc;
    for (const KernelSpec& k : build_region(g, r, ctx.device, c).kernels) desc += (desc.empty() ? "" : "; ") + k.description;
    // ranked after the offered candidates: a forced config is no guess of ours
    return Candidate{std::string(name()), static_cast<int>(distinct_configs(g, r, ctx.device).size()), config_text(c), desc};
  } catch (const Error& e) {
    return no(e.message());
  }
}

std::unique_ptr<PreparedStep> JitEngine::prepare(const Graph& g, const fuse::Region& r,
                                                 const Candidate& c, EngineContext& ctx) const {
  const Support s = supports(g, r, ctx);
  if (!s.ok) throw Error(ErrorCode::unsupported, "jit engine, region " + std::to_string(r.id) + ": " + s.reason);
  KernelConfig config = parse_kernel_config(c.config);
  if (auto* m = std::get_if<MatmulConfig>(&config); m && m->tile == MatmulTile::sm90_direct && TraceTap::from_env()) {
    m->direct.trace = true;  // tracing asked for: the instrumented build of the same variant
  }
  RegionKernels rk = build_region(g, r, ctx.device, config);
  std::vector<JitStep::Loaded> loaded;
  int i = 0;
  for (KernelSpec& spec : rk.kernels) {
    cuda::KernelRequest req;
    req.name = g.name() + "_region" + std::to_string(r.id) + "_" + std::to_string(i++) + ".cu";
    req.source = spec.source;
    req.options.arch = ctx.device.arch;
    auto lib = ctx.cache.get_library(req, ctx.device.ordinal);
    auto binary = ctx.cache.get_binary(req);  // a memory hit now; a plan stores these bytes
    cuda::Kernel kernel = lib->get_kernel(spec.entry);
    // every generated kernel begins with sinter_kernel_begin() (kernels/common/pdl.cuh)
    spec.launch.programmatic = ctx.device.cc_major >= 9;
    // Set for every size: static shared memory counts against the same 48 KB default, so a
    // kernel with 48 KB dynamic plus a static reduction buffer fails to launch without it
    // (seen on the H200: cudaErrorInvalidValue for the softmax bulk ring).
    if (spec.launch.dynamic_shared_memory > 0) {
      lib->allow_dynamic_shared_memory(kernel, static_cast<int>(spec.launch.dynamic_shared_memory),
                                       ctx.device.ordinal);
    }
    if (spec.persistent_work > 0) {
      const int per_sm = kernel.max_active_blocks_per_sm(static_cast<int>(spec.launch.block.x),
                                                         spec.launch.dynamic_shared_memory);
      const int64_t resident = int64_t{std::max(per_sm, 1)} * ctx.device.sm_count;
      // with clusters, work items are per cluster and the grid a multiple of the cluster; the
      // resident clusters can be fewer than resident CTAs / cluster size (GPCs with odd SMs)
      const int64_t cx = spec.launch.cluster ? int64_t{spec.launch.cluster->x} : 1;
      int64_t units = std::max<int64_t>(resident / cx, 1);
      if (spec.launch.cluster) {
        const int clusters = kernel.max_active_clusters(*spec.launch.cluster, static_cast<int>(spec.launch.block.x),
                                                        spec.launch.dynamic_shared_memory);
        if (clusters > 0) units = std::min<int64_t>(units, clusters);
      }
      if (spec.persistent_fill) {
        // every resident unit, up to the generator's grid (which a test may cap), capped by the work
        units = std::min<int64_t>({units, std::max<int64_t>(spec.launch.grid.x / cx, 1), spec.persistent_work});
        spec.launch.grid = dim3(static_cast<unsigned>(cx * std::max<int64_t>(units, 1)));
      } else {
        spec.launch.grid = dim3(static_cast<unsigned>(cx * balanced_grid(spec.persistent_work, units)));
      }
      spec.description += " grid" + std::to_string(spec.launch.grid.x);
      if (!task_boxes_hold(spec, spec.launch.grid.x)) spec.task_boxes.clear();
      if (spec.unit_order) {
        // the units one GPC holds on items of one raster row, as this GPU places them
        // (gpc_order.hpp); a correct permutation under any other placement, only slower
        const int64_t grid_units = spec.launch.grid.x / cx;
        const std::vector<int>* placement = nullptr;
        try {
          placement = &cuda::cluster_gpcs(ctx.device.ordinal, static_cast<int>(cx));
        } catch (const Error& e) {
          // only speed depends on it: the kernel runs in index order, and says why
          spec.description += " index-order (GPC placement not measured: " + std::string(e.what()) + ")";
        }
        const SinterUnitOrder order = placement ? gpc_unit_order(*placement, static_cast<int>(grid_units),
                                                                 spec.unit_order->group_m)
                                                : SinterUnitOrder{};
        spec.args.set_bytes(spec.unit_order->arg_offset, &order, sizeof order);
        if (order.units > 0) {
          spec.description += " gpc-order";
        } else if (placement && grid_units > 1) {
          spec.description += " index-order (" + std::to_string(grid_units) + " units; the placement has " +
                              std::to_string(placement->size()) + ", the table holds " +
                              std::to_string(SINTER_MAX_ORDERED_UNITS) + ")";
        }
      }
    }
    loaded.push_back({std::move(spec), std::move(lib), kernel, std::move(binary)});
  }
  return std::make_unique<JitStep>(std::move(loaded), rk.workspace_bytes);
}

std::vector<Engine::GeneratedSource> JitEngine::generated_sources(const Graph& g, const fuse::Region& r,
                                                                 const EngineContext& ctx) const {
  std::vector<GeneratedSource> out;
  if (!supports(g, r, ctx).ok) return out;
  int candidate = 0;
  for (const auto& [config, rk] : distinct_configs(g, r, ctx.device)) {
    for (const KernelSpec& k : rk.kernels) out.push_back({candidate, config_text(config), k.description, k.source});
    ++candidate;
  }
  return out;
}

SavedStep JitEngine::save_step(const PreparedStep& step, BlobStore& blobs) const {
  const auto* s = dynamic_cast<const JitStep*>(&step);
  if (!s) throw Error(ErrorCode::internal, "jit engine: save_step of another engine's step");
  SavedStep saved;
  for (const JitStep::Loaded& k : s->kernels()) {
    if (!k.binary) throw Error(ErrorCode::internal, "jit step '" + k.spec.description + "' has no cubin to save");
    const std::string key = blobs.put(BlobKind::cubin, k.binary->cubin);
    saved.kernels.push_back(to_kernel_record(k.spec, key, cuda::to_hex(k.binary->key)));
  }
  return saved;
}

std::string JitEngine::check_saved_step(const Graph&, const fuse::Region&, const SavedStep& saved,
                                        const BlobStore&) const {
  if (saved.kernels.empty()) return "a jit step needs at least one kernel";
  if (!saved.config_blob.empty()) return "a jit step has kernels, not a vendor config";
  return "";
}

std::unique_ptr<PreparedStep> JitEngine::load_step(const Graph&, const fuse::Region&, const SavedStep& saved,
                                                   const BlobStore& blobs, size_t workspace_bytes,
                                                   LoadContext& ctx) const {
  std::vector<JitStep::Loaded> loaded;
  for (const KernelRecord& record : saved.kernels) {
    KernelSpec spec = to_kernel_spec(record);
    // straight from the plan's bytes: no KernelCache, so no way to compile
    std::shared_ptr<const cuda::Library> lib = ctx.libraries.get(record.cubin, blobs.get(record.cubin, BlobKind::cubin));
    cuda::Kernel kernel = lib->get_kernel(spec.entry);
    if (spec.launch.dynamic_shared_memory > 0) {  // see prepare: static smem counts too
      lib->allow_dynamic_shared_memory(kernel, static_cast<int>(spec.launch.dynamic_shared_memory), ctx.device);
    }
    loaded.push_back({std::move(spec), std::move(lib), kernel, nullptr});
  }
  return std::make_unique<JitStep>(std::move(loaded), workspace_bytes);
}

}  // namespace sinter::jit

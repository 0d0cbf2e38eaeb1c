#include "engines/cudnn/cudnn_engine.hpp"

#include <cstdio>
#include <mutex>
#include <cstdlib>
#include <functional>
#include <optional>

#include "engines/cudnn/conv_graph.hpp"
#include "engines/cudnn/conv_pattern.hpp"
#include "engines/cudnn/engine_configs.hpp"
#include "engines/cudnn/matmul_lowering.hpp"
#include "engines/cudnn/norm_lowering.hpp"
#include "engines/cudnn/sdpa_graph.hpp"
#include "engines/cudnn/sdpa_pattern.hpp"
#include "cuda/sha256.hpp"
#include "engines/jit/codegen.hpp"  // sdpa_decode_unsupported: where auto leaves decode to flash-decode
#include "sinter/error.hpp"

namespace sinter::cudnn {
namespace {

// A region lowered for cuDNN: what to build, and which region buffer each device uid binds.
struct Lowering {
  std::string what;  // "sdpa [bf16 d128 causal(top_left)]"
  struct Operand {
    int64_t uid;
    bool output;
    int index;  // among the region's inputs or outputs
  };
  std::vector<Operand> operands;
  // Outputs zeroed before each launch, with their bytes: reduction outputs, which cuDNN's fused
  // reductions may accumulate into (0 is the identity of the sums and amaxes lowered).
  std::vector<std::pair<int, size_t>> zeroed_outputs;
  std::function<std::unique_ptr<OperationGraph>()> build;
  // the lowering version, the region's structural hash (attributes included), what, and each
  // operand's uid, dtype, dims and strides: what the operation graph is built from. A saved
  // execution plan records its digest, so a plan is never run on another graph.
  std::string signature;
};

struct Match {
  std::optional<Lowering> lowering;
  std::string reason;
};

Match match_region(const Graph& g, const fuse::Region& r, bool lower_secondary) {
  const Library& lib = library();
  if (!lib.loaded) return {std::nullopt, "cuDNN not found (" + lib.reason + ")"};
  if (r.kind == fuse::RegionKind::sdpa) {
    SdpaMatch m = match_sdpa(g, r, lib.version);
    if (!m.pattern) return {std::nullopt, m.reason};
    const SdpaPattern p = *m.pattern;
    Lowering l;
    l.what = "sdpa [" + p.summary + "]";
    l.operands = {{kUidQ, false, p.q.input}, {kUidK, false, p.k.input}, {kUidV, false, p.v.input},
                  {kUidO, true, p.o_output}};
    if (p.stats_output >= 0) l.operands.push_back({kUidStats, true, p.stats_output});
    if (p.bias) l.operands.push_back({kUidBias, false, p.bias->input});
    l.build = [p] { return build_sdpa_operations(p); };
    return {std::move(l), {}};
  }
  if (r.kind == fuse::RegionKind::conv) {
    ConvMatch m = match_conv(g, r);
    if (!m.pattern) return {std::nullopt, m.reason};
    const ConvPattern p = *m.pattern;
    Lowering l;
    l.what = "conv [" + p.summary + "]";
    l.operands = {{kConvUidX, false, p.x_input}, {kConvUidW, false, p.w_input}, {kConvUidY, true, p.y_output}};
    for (size_t i = 0; i < p.epilogue.size(); ++i) {
      if (p.epilogue[i].input >= 0) {
        l.operands.push_back({kConvUidEpilogue + static_cast<int64_t>(i), false, p.epilogue[i].input});
      }
    }
    for (size_t i = 0; i < p.reductions.size(); ++i) {
      const ConvReduction& cr = p.reductions[i];
      l.operands.push_back({kConvUidReduction + static_cast<int64_t>(i), true, cr.output});
      l.zeroed_outputs.push_back({cr.output, sizeof(float) * static_cast<size_t>(cr.per_channel ? p.y_dims[1] : 1)});
    }
    l.build = [p] { return build_conv_operations(p); };
    return {std::move(l), {}};
  }
  if (r.kind == fuse::RegionKind::matmul) {
    MatmulLoweringMatch m = match_matmul_lowering(g, r);
    if (!m.pattern) return {std::nullopt, m.reason};
    if (!lower_secondary) {
      return {std::nullopt, "matmuls go to cuDNN only when it is named (CompileOptions::engines, --engine cudnn); auto "
                            "leaves them to cuBLASLt and jit"};
    }
    const MatmulLoweringPattern p = *m.pattern;
    Lowering l;
    l.what = "matmul [" + p.summary + "]";
    l.operands = {{kMatmulUidA, false, p.a_input}, {kMatmulUidB, false, p.b_input}, {kMatmulUidY, true, p.y_output}};
    for (size_t i = 0; i < p.epilogue.size(); ++i) {
      if (p.epilogue[i].input >= 0) {
        l.operands.push_back({kMatmulUidEpilogue + static_cast<int64_t>(i), false, p.epilogue[i].input});
      }
    }
    l.build = [p] { return build_matmul_operations(p); };
    return {std::move(l), {}};
  }
  if (r.kind == fuse::RegionKind::rowwise) {
    NormMatch m = match_norm(g, r);
    if (!m.pattern) return {std::nullopt, m.reason};
    if (!lower_secondary) {
      return {std::nullopt, "norms go to cuDNN only when it is named (CompileOptions::engines, --engine cudnn); auto keeps "
                            "them on our row-wise kernels"};
    }
    const NormPattern p = *m.pattern;
    Lowering l;
    l.what = p.summary;
    l.operands = {{kNormUidX, false, p.x_input}, {kNormUidScale, false, p.weight_input}, {kNormUidY, true, p.y_output}};
    if (p.bias_input >= 0) l.operands.push_back({kNormUidBias, false, p.bias_input});
    l.build = [p] { return build_norm_operations(p); };
    return {std::move(l), {}};
  }
  return {std::nullopt, "cuDNN lowers sdpa, conv and matmul (+bias, relu, residual), layernorm "
                        "and rmsnorm regions so far, not " + std::string(to_string(r.kind))};
}

Match match(const Graph& g, const fuse::Region& r, bool lower_secondary) {
  Match m = match_region(g, r, lower_secondary);
  if (!m.lowering) return m;
  std::string& sig = m.lowering->signature;
  // The region's structure with every node's attributes (a conv's padding, strides and
  // dilation, an sdpa's scale and mask) and the version of these lowerings: bump
  // kLoweringVersion when a lowering builds another operation graph from the same region.
  constexpr int kLoweringVersion = 1;
  sig = "lowering " + std::to_string(kLoweringVersion) + "\nregion " + fuse::region_structure_hash(g, r) + "\n" +
        m.lowering->what;
  for (const Lowering::Operand& o : m.lowering->operands) {
    const TensorInfo& t = g.tensor(o.output ? r.outputs.at(o.index) : r.inputs.at(o.index));
    sig += "\n" + std::to_string(o.uid) + (o.output ? " out " : " in ") + std::to_string(o.index) + " " +
           std::string(to_string(t.dtype)) + " " + dims_to_string(t.dims) + " " + dims_to_string(t.strides);
  }
  for (const auto& [index, bytes] : m.lowering->zeroed_outputs) sig += "\nzeroed " + std::to_string(index) + " " + std::to_string(bytes);
  return m;
}

std::string candidate_text(const Lowering& l, const std::string& config) {
  return "cudnn " + version_string() + " " + l.what + " " + config;
}

std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}

class CudnnStep : public PreparedStep {
 public:
  CudnnStep(Lowering l, std::unique_ptr<OperationGraph> graph, PlannedConfig config)
      : l_(std::move(l)), graph_(std::move(graph)), config_(std::move(config)) {}
  const PlannedConfig& config() const { return config_; }
  const Lowering& lowering() const { return l_; }

  void launch(const Binding& bind, cudaStream_t stream) override {
    const Library& lib = library();
    std::vector<int64_t> uids;
    std::vector<void*> ptrs;
    for (const Lowering::Operand& o : l_.operands) {
      uids.push_back(o.uid);
      ptrs.push_back(o.output ? bind.outputs.at(o.index) : const_cast<void*>(bind.inputs.at(o.index)));
    }
    // By-value scalars: cuDNN reads them from host memory through these pointers.
    for (OperationGraph::Scalar& s : graph_->scalars) {
      uids.push_back(s.uid);
      ptrs.push_back(&s.value);
    }
    ptrs.push_back(bind.workspace);
    // The variant pack is rebuilt only when a pointer changed: building one costs microseconds,
    // as much as a decode-sized attention kernel.
    if (!pack_ || ptrs != pack_ptrs_) {
      pack_ = std::make_unique<Descriptor>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      pack_->set_array(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids)
          .set_array(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                     std::vector<void*>(ptrs.begin(), ptrs.end() - 1))
          .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, bind.workspace);
      pack_->finalize();
      pack_ptrs_ = ptrs;
    }
    for (const auto& [index, bytes] : l_.zeroed_outputs) {
      const cudaError_t z = cudaMemsetAsync(bind.outputs.at(index), 0, bytes, stream);
      if (z != cudaSuccess) {
        throw Error(ErrorCode::cuda, std::string("cudaMemsetAsync of a cuDNN reduction output failed: ") +
                                         cudaGetErrorString(z));
      }
    }
    {
      // One handle serves the process, and its stream is state: runners of one plan may launch
      // from several threads, so setting the stream and enqueueing happen under one lock.
      std::lock_guard lock(launch_mutex());
      SINTER_CUDNN_CHECK(lib.SetStream(handle(), stream));
      SINTER_CUDNN_CHECK(lib.BackendExecute(handle(), config_.plan->get(), pack_->get()));
    }
    // cuDNN does not promise to leave its workspace zeroed; the executor's contract wants zero
    // after each launch (our exit reductions share the workspace and rely on it).
    if (config_.workspace > 0) {
      const cudaError_t e = cudaMemsetAsync(bind.workspace, 0, static_cast<size_t>(config_.workspace), stream);
      if (e != cudaSuccess) {
        throw Error(ErrorCode::cuda, std::string("cudaMemsetAsync of the cuDNN workspace failed: ") +
                                         cudaGetErrorString(e));
      }
    }
  }
  size_t workspace_bytes() const override { return static_cast<size_t>(config_.workspace); }
  std::string describe() const override { return candidate_text(l_, config_.description); }

 private:
  Lowering l_;
  std::unique_ptr<OperationGraph> graph_;
  PlannedConfig config_;
  DescriptorPtr pack_;
  std::vector<void*> pack_ptrs_;  // the operand pointers, then the workspace, of pack_
};

std::unique_ptr<OperationGraph> build_graph(const Lowering& l) {
  auto g = l.build();
  finalize_graph(*g, handle());
  return g;
}

}  // namespace

std::string cudnn_version() { return version_string(); }

// Matmuls and norms, where cuDNN is not expected to beat the other engines, are lowered only when
// the user named cuDNN.
bool lower_secondary(const EngineContext& ctx) { return ctx.named("cudnn"); }

// Why auto leaves a decode sdpa to the jit engine's flash-decode ("" when it does not): one query
// row (Sq = 1) with fewer (batch x kv heads) units than the GPU has SMs, which the jit kernel
// takes. cuDNN's kernel does not split the keys over CTAs there; flash-decode does, in one launch
// (H100, batch 1, GQA 32/8, 1025 keys: 0.0130 ms against cuDNN's 0.0212 at head dim 64, 0.0154
// against 0.0205 at 128; docs/benchmarks.md). Named, cuDNN takes it.
std::string leaves_decode_to_flash_decode(const Graph& g, const fuse::Region& r, const EngineContext& ctx) {
  if (r.kind != fuse::RegionKind::sdpa || lower_secondary(ctx)) return "";
  const Node& sd = g.node(r.anchor);
  const Dims& q = g.tensor(sd.inputs[0]).dims;
  const Dims& k = g.tensor(sd.inputs[1]).dims;
  if (q.size() != 4 || k.size() != 4 || q[2] != 1) return "";
  const int64_t units = q[0] * k[1], sms = ctx.device.sm_count > 0 ? ctx.device.sm_count : 132;
  if (units >= sms || !jit::sdpa_decode_unsupported(g, r, ctx.device).empty()) return "";
  return "a decode sdpa of " + std::to_string(units) + " (batch x kv heads) units, fewer than the " +
         std::to_string(sms) + " SMs, goes to cuDNN only when it is named (CompileOptions::engines, --engine cudnn); "
         "auto leaves it to the jit engine's flash-decode, which splits the keys over CTAs";
}

Support CudnnEngine::supports(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const {
  const Match m = match(g, r, lower_secondary(ctx));
  if (!m.lowering) return Support::no(m.reason);
  if (std::string why = leaves_decode_to_flash_decode(g, r, ctx); !why.empty()) return Support::no(why);
  return Support::yes();
}

std::vector<Candidate> CudnnEngine::candidates(const Graph& g, const fuse::Region& r,
                                               const EngineContext& ctx) const {
  const Match m = match(g, r, lower_secondary(ctx));
  if (!m.lowering || !leaves_decode_to_flash_decode(g, r, ctx).empty()) return {};
  std::unique_ptr<OperationGraph> graph;
  ConfigList list;
  try {
    graph = build_graph(*m.lowering);
    list = plan_configs(*graph->graph, handle(), ctx.max_vendor_candidates);
  } catch (const Error& e) {
    // The pattern matcher cannot foresee every limit of the loaded cuDNN; a refusal here leaves
    // the region to the next engine, and is said aloud rather than hidden.
    ctx.say(LogSeverity::warning, "cudnn offers no candidate for region " + std::to_string(r.id) + ": " + e.message());
    return {};
  }
  if (list.configs.empty()) {
    ctx.say(LogSeverity::warning, "cudnn offers no candidate for region " + std::to_string(r.id) + ": " +
                                      no_config_reason(m.lowering->what, graph->recipe, list));
  }
  std::vector<Candidate> out;
  int i = 0;
  for (const PlannedConfig& c : list.configs) {
    out.push_back({std::string(name()), i++, c.description, candidate_text(*m.lowering, c.description)});
  }
  return out;
}

std::unique_ptr<PreparedStep> CudnnEngine::prepare(const Graph& g, const fuse::Region& r,
                                                   const Candidate& c, EngineContext& ctx) const {
  const Match m = match(g, r, lower_secondary(ctx));
  if (!m.lowering) throw Error(ErrorCode::unsupported, "cudnn: " + m.reason);
  auto graph = build_graph(*m.lowering);
  // Configs come in a deterministic order, so the first index + 1 planned are those listed;
  // building no more than that spares plan finalizations (which may compile kernels).
  ConfigList list = plan_configs(*graph->graph, handle(), c.index + 1);
  if (c.index < 0 || static_cast<size_t>(c.index) >= list.configs.size() ||
      list.configs[static_cast<size_t>(c.index)].description != c.config) {
    throw Error(ErrorCode::unsupported,
                "cudnn: candidate " + std::to_string(c.index) + " '" + c.config + "' does not exist (" +
                    std::to_string(list.configs.size()) + " engine configs built" +
                    (list.dropped.empty() ? "" : "; " + list.dropped) + "; heuristic modes tried: " +
                    list.tried + "; " + kCudnnLogHint + ")");
  }
  return std::make_unique<CudnnStep>(*m.lowering, std::move(graph),
                                     std::move(list.configs[static_cast<size_t>(c.index)]));
}

SavedStep CudnnEngine::save_step(const PreparedStep& step, BlobStore& blobs) const {
  const auto* s = dynamic_cast<const CudnnStep*>(&step);
  if (!s) throw Error(ErrorCode::internal, "cudnn engine: save_step of another engine's step");
  SavedConfig config = saved_config_of(*s->config().config);  // read only when a plan is saved
  config.plan_json = plan_json_of(*s->config().plan);
  if (!config.plan_json.empty()) config.graph_digest = cuda::to_hex(cuda::sha256(s->lowering().signature));
  const std::string text = to_text(config);
  SavedStep saved;
  saved.config_blob = blobs.put(BlobKind::vendor_config, text);
  saved.config_description = s->describe();
  return saved;
}

std::string CudnnEngine::check_saved_step(const Graph&, const fuse::Region& r, const SavedStep& saved,
                                          const BlobStore& blobs) const {
  if (!saved.kernels.empty()) return "a cudnn step has a config, not kernels";
  if (saved.config_blob.empty()) return "a cudnn step needs its engine config (\"config_blob\")";
  if (r.kind != fuse::RegionKind::sdpa && r.kind != fuse::RegionKind::conv && r.kind != fuse::RegionKind::matmul &&
      r.kind != fuse::RegionKind::rowwise) {
    return "cuDNN does not lower " + std::string(to_string(r.kind)) + " regions";
  }
  const std::span<const char> config = blobs.get(saved.config_blob, BlobKind::vendor_config);
  std::string why;
  if (!parse_saved_config(std::string_view(config.data(), config.size()), &why)) {
    return "blob " + saved.config_blob + ": " + why;
  }
  return "";
}

std::unique_ptr<PreparedStep> CudnnEngine::load_step(const Graph& g, const fuse::Region& r, const SavedStep& saved_step,
                                                     const BlobStore& blobs, size_t workspace, LoadContext&) const {
  const std::span<const char> config = blobs.get(saved_step.config_blob, BlobKind::vendor_config);
  const std::string who = "cudnn, region " + std::to_string(r.id);
  std::string why;
  const std::optional<SavedConfig> saved = parse_saved_config(std::string_view(config.data(), config.size()), &why);
  if (!saved) throw Error(ErrorCode::corrupt_bundle, who + ": " + why);
  const Match m = match(g, r, /*lower_secondary=*/true);
  if (!m.lowering) throw Error(ErrorCode::unsupported, who + ": " + m.reason);
  auto graph = build_graph(*m.lowering);
  PlannedConfig planned = plan_saved_config(*graph->graph, handle(), *saved,
                                            cuda::to_hex(cuda::sha256(m.lowering->signature)));
  if (static_cast<size_t>(planned.workspace) > workspace) {
    throw Error(ErrorCode::unsupported, who + ": the rebuilt engine config (" + planned.description + ") needs " +
                                            std::to_string(planned.workspace) + " bytes of workspace; the plan reserved " +
                                            std::to_string(workspace) + "; build the plan again");
  }
  return std::make_unique<CudnnStep>(*m.lowering, std::move(graph), std::move(planned));
}

}  // namespace sinter::cudnn

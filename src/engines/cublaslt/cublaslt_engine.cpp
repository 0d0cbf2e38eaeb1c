#include "engines/cublaslt/cublaslt_engine.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "engines/cublaslt/matmul_pattern.hpp"
#include "sinter/error.hpp"

namespace sinter::cublaslt {
namespace {

void check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorCode::cuda, std::string(call) + " failed: " + cublasLtGetStatusName(s) + " (" +
                                   cublasLtGetStatusString(s) + ") at " + file + ":" +
                                   std::to_string(line));
}
#define SINTER_CUBLASLT_CHECK(expr) check((expr), #expr, __FILE__, __LINE__)

cudaDataType_t data_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::fp8_e4m3: return CUDA_R_8F_E4M3;
    case DType::fp8_e5m2: return CUDA_R_8F_E5M2;
    default: break;
  }
  throw Error(ErrorCode::unsupported, "cuBLASLt: no data type for " + std::string(to_string(t)));
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

cublasLtHandle_t handle() {
  static std::once_flag once;
  static cublasLtHandle_t h = nullptr;
  std::call_once(once, [] { SINTER_CUBLASLT_CHECK(cublasLtCreate(&h)); });
  return h;
}

// The descriptors of one problem; RAII.
struct Problem {
  MatmulPattern p;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  float alpha = 1.0f, beta = 0.0f;

  explicit Problem(const MatmulPattern& pattern) : p(pattern) {
    const cublasComputeType_t compute = p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    SINTER_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F));
    const cublasOperation_t ta = p.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = p.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (p.bias_input >= 0) {
      epi = p.activation == Activation::relu        ? CUBLASLT_EPILOGUE_RELU_BIAS
            : p.activation == Activation::gelu_tanh ? (p.aux_output >= 0 ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                                                                         : CUBLASLT_EPILOGUE_GELU_BIAS)
                                                    : CUBLASLT_EPILOGUE_BIAS;
      const cudaDataType_t bt = data_type(p.out_dtype);
      SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    } else if (p.activation == Activation::relu) {
      epi = CUBLASLT_EPILOGUE_RELU;
    } else if (p.activation == Activation::gelu_tanh) {
      epi = CUBLASLT_EPILOGUE_GELU;
    }
    SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (p.aux_output >= 0) {
      const int64_t ld = p.n;
      SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
      const int64_t stride = p.m * p.n;
      SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(
          op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &stride, sizeof stride));
    }
    a = layout(p.a.dtype, p.a.rows, p.a.cols, p.a.ld, p.a.batch_stride);
    b = layout(p.b.dtype, p.b.rows, p.b.cols, p.b.ld, p.b.batch_stride);
    // D^T is column-major [n, m]; C (the residual) has D's layout
    d = layout(p.out_dtype, p.n, p.m, p.n, p.m * p.n);
    // an fp8 D takes a 16-bit C (unused without a residual, but its type must be legal)
    c = layout(is_fp8(p.out_dtype) ? DType::bf16 : p.out_dtype, p.n, p.m, p.n, p.m * p.n);
    alpha = p.alpha;
    beta = p.beta;
    if (p.amax_output >= 0) {
      // The heuristic must know the amax is wanted (not every fp8 kernel computes it); the real
      // pointer is bound at launch, this placeholder is never dereferenced.
      void* placeholder = reinterpret_cast<void*>(uintptr_t{256});
      SINTER_CUBLASLT_CHECK(
          cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &placeholder, sizeof placeholder));
    }
  }
  cublasLtMatrixLayout_t layout(DType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch_stride) {
    cublasLtMatrixLayout_t l = nullptr;
    SINTER_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&l, data_type(t), static_cast<uint64_t>(rows),
                                                     static_cast<uint64_t>(cols), ld));
    const int32_t count = static_cast<int32_t>(p.batch);
    SINTER_CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    SINTER_CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof batch_stride));
    return l;
  }
  ~Problem() {
    for (cublasLtMatrixLayout_t l : {a, b, c, d}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
    if (op) cublasLtMatmulDescDestroy(op);
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  std::vector<cublasLtMatmulHeuristicResult_t> heuristics(int count) const {
    cublasLtMatmulPreference_t pref = nullptr;
    SINTER_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kWorkspaceBytes;
    SINTER_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
    int returned = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle(), op, a, b, c, d, pref, count,
                                                            results.data(), &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    // NOT_SUPPORTED and INVALID_VALUE both mean "no algorithm for this combination" here (an fp8
    // combination cuBLASLt does not take answers the latter); the caller reports it, and the
    // region goes to the next engine instead of failing the build.
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) returned = 0;
    else SINTER_CUBLASLT_CHECK(s);
    results.resize(static_cast<size_t>(returned));
    return results;
  }
};

std::string describe_algo(const cublasLtMatmulAlgo_t& algo, size_t workspace) {
  auto attr = [&](cublasLtMatmulAlgoConfigAttributes_t which) {
    int32_t v = 0;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, which, &v, sizeof v, &written);
    return v;
  };
  return "algo " + std::to_string(attr(CUBLASLT_ALGO_CONFIG_ID)) + " tile " +
         std::to_string(attr(CUBLASLT_ALGO_CONFIG_TILE_ID)) + " stages " +
         std::to_string(attr(CUBLASLT_ALGO_CONFIG_STAGES_ID)) + " splitK " +
         std::to_string(attr(CUBLASLT_ALGO_CONFIG_SPLITK_NUM)) + " ws " +
         std::to_string(workspace >> 10) + " KiB";
}

class CublasLtStep : public PreparedStep {
 public:
  CublasLtStep(const MatmulPattern& p, cublasLtMatmulAlgo_t algo, size_t workspace, std::string desc)
      : problem_(p), algo_(algo), workspace_(workspace), desc_(std::move(desc)) {}

  void launch(const Binding& bind, cudaStream_t stream) override {
    const MatmulPattern& p = problem_.p;
    if (p.bias_input >= 0) {
      const void* bias = bind.inputs.at(p.bias_input);
      SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(problem_.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    if (p.aux_output >= 0) {
      void* aux = bind.outputs.at(p.aux_output);
      SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(problem_.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
    }
    if (p.amax_output >= 0) {
      void* amax = bind.outputs.at(p.amax_output);
      // Zeroed first: whether cuBLASLt overwrites the amax or folds into what is there is not
      // documented, and an arena slot holds an earlier tensor's bytes (an amax is >= 0).
      const cudaError_t z = cudaMemsetAsync(amax, 0, sizeof(float), stream);
      if (z != cudaSuccess) throw Error(ErrorCode::cuda, std::string("cudaMemsetAsync of the amax of D: ") + cudaGetErrorString(z));
      SINTER_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(problem_.op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax, sizeof amax));
    }
    void* d = bind.outputs.at(p.output);
    // Without a residual, C is D (unread at beta 0), except for an fp8 D: C's type is then bf16,
    // and cuBLASLt refuses C == D with layouts of different types (INVALID_VALUE, seen on the
    // H200), so C is left null there (allowed at beta 0).
    const void* c = p.residual_input >= 0 ? bind.inputs.at(p.residual_input) : is_fp8(p.out_dtype) ? nullptr : d;
    SINTER_CUBLASLT_CHECK(cublasLtMatmul(handle(), problem_.op, &problem_.alpha, bind.inputs.at(p.a.input),
                                         problem_.a, bind.inputs.at(p.b.input), problem_.b, &problem_.beta,
                                         c, problem_.c, d, problem_.d, &algo_, bind.workspace,
                                         workspace_, stream));
  }
  size_t workspace_bytes() const override { return workspace_; }
  std::string describe() const override { return desc_; }
  const cublasLtMatmulAlgo_t& algo() const { return algo_; }

 private:
  Problem problem_;
  cublasLtMatmulAlgo_t algo_;
  size_t workspace_;
  std::string desc_;
};

}  // namespace

std::string cublaslt_version() {
  const size_t v = cublasLtGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

Support CublasLtEngine::supports(const Graph& g, const fuse::Region& r, const EngineContext&) const {
  const MatchResult m = match_matmul(g, r);
  return m.pattern ? Support::yes() : Support::no(m.reason);
}

std::vector<Candidate> CublasLtEngine::candidates(const Graph& g, const fuse::Region& r,
                                                  const EngineContext& ctx) const {
  const MatchResult m = match_matmul(g, r);
  if (!m.pattern) return {};
  const Problem problem(*m.pattern);
  std::vector<Candidate> out;
  int i = 0;
  const auto results = problem.heuristics(ctx.max_vendor_candidates);
  if (results.empty()) {
    ctx.say(LogSeverity::warning, "cublaslt offers no candidate for region " + std::to_string(r.id) +
                                      ": its heuristic returned no algorithm for [" + m.pattern->epilogue_name +
                                      "] (cuBLASLt " + cublaslt_version() + ")");
  }
  for (const auto& h : results) {
    out.push_back({std::string(name()), i++, describe_algo(h.algo, h.workspaceSize),
                   "cublaslt [" + m.pattern->epilogue_name + "] " + describe_algo(h.algo, h.workspaceSize)});
  }
  return out;
}

std::unique_ptr<PreparedStep> CublasLtEngine::prepare(const Graph& g, const fuse::Region& r,
                                                      const Candidate& c, EngineContext& ctx) const {
  const MatchResult m = match_matmul(g, r);
  if (!m.pattern) throw Error(ErrorCode::unsupported, "cublaslt: " + m.reason);
  const Problem probe(*m.pattern);
  // The candidate is its config (the algo's fields): the heuristic's list is searched for it, so
  // a config remembered by a timing cache names the same algo even if the ranking moved.
  const auto results = probe.heuristics(std::max(ctx.max_vendor_candidates, c.index + 1));
  const auto found = std::find_if(results.begin(), results.end(), [&](const cublasLtMatmulHeuristicResult_t& h) {
    return describe_algo(h.algo, h.workspaceSize) == c.config;
  });
  if (found == results.end()) {
    throw Error(ErrorCode::unsupported, "cublaslt: no algo '" + c.config + "' among the heuristic's " +
                                            std::to_string(results.size()) + " for this problem");
  }
  const auto& h = *found;
  return std::make_unique<CublasLtStep>(*m.pattern, h.algo, h.workspaceSize,
                                        "cublaslt [" + m.pattern->epilogue_name + "] " +
                                            describe_algo(h.algo, h.workspaceSize));
}

SavedStep CublasLtEngine::save_step(const PreparedStep& step, BlobStore& blobs) const {
  const auto* s = dynamic_cast<const CublasLtStep*>(&step);
  if (!s) throw Error(ErrorCode::internal, "cublaslt engine: save_step of another engine's step");
  const char* bytes = reinterpret_cast<const char*>(&s->algo());
  SavedStep saved;
  saved.config_blob = blobs.put(BlobKind::vendor_config, std::span<const char>(bytes, sizeof(cublasLtMatmulAlgo_t)));
  saved.config_description = s->describe();
  return saved;
}

std::string CublasLtEngine::check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                             const BlobStore& blobs) const {
  if (!saved.kernels.empty()) return "a cublaslt step has a config, not kernels";
  if (saved.config_blob.empty()) return "a cublaslt step needs its algorithm config (\"config_blob\")";
  const MatchResult m = match_matmul(g, r);
  if (!m.pattern) return "cuBLASLt cannot run region " + std::to_string(r.id) + ": " + m.reason;
  const std::span<const char> config = blobs.get(saved.config_blob, BlobKind::vendor_config);
  if (config.size() != sizeof(cublasLtMatmulAlgo_t)) {
    return "a cuBLASLt config (cublasLtMatmulAlgo_t) has " + std::to_string(sizeof(cublasLtMatmulAlgo_t)) +
           " bytes, blob " + saved.config_blob + " has " + std::to_string(config.size());
  }
  return "";
}

std::unique_ptr<PreparedStep> CublasLtEngine::load_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                                        const BlobStore& blobs, size_t workspace,
                                                        LoadContext& ctx) const {
  const std::span<const char> config = blobs.get(saved.config_blob, BlobKind::vendor_config);
  ctx.note = "cuBLASLt algo rebuilt from the plan's config (" + saved.config_description +
             "), checked with cublasLtMatmulAlgoCheck";
  const MatchResult m = match_matmul(g, r);
  if (!m.pattern) throw Error(ErrorCode::unsupported, "cublaslt, region " + std::to_string(r.id) + ": " + m.reason);
  if (config.size() != sizeof(cublasLtMatmulAlgo_t)) {
    throw Error(ErrorCode::corrupt_bundle, "cublaslt, region " + std::to_string(r.id) + ": a saved algo config has " +
                                               std::to_string(sizeof(cublasLtMatmulAlgo_t)) + " bytes, found " +
                                               std::to_string(config.size()));
  }
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, config.data(), sizeof algo);
  // The config came from another process (maybe another cuBLASLt): ask this library whether it
  // still runs this problem, and with no more workspace than the plan reserved.
  const Problem check(*m.pattern);
  cublasLtMatmulHeuristicResult_t result{};
  const cublasStatus_t status = cublasLtMatmulAlgoCheck(handle(), check.op, check.a, check.b, check.c, check.d,
                                                        &algo, &result);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error(ErrorCode::unsupported, "cublaslt, region " + std::to_string(r.id) + ": the saved algo config (" +
                                            describe_algo(algo, workspace) + ") is rejected by cuBLASLt " +
                                            cublaslt_version() + " (status " + std::to_string(int(status)) +
                                            "); build the plan again");
  }
  if (result.workspaceSize > workspace) {
    throw Error(ErrorCode::unsupported, "cublaslt, region " + std::to_string(r.id) + ": the saved algo needs " +
                                            std::to_string(result.workspaceSize) + " workspace bytes, the plan has " +
                                            std::to_string(workspace) + "; build the plan again");
  }
  return std::make_unique<CublasLtStep>(*m.pattern, algo, workspace,
                                        "cublaslt [" + m.pattern->epilogue_name + "] " + describe_algo(algo, workspace) +
                                            " (rebuilt from the plan's algo config)");
}

}  // namespace sinter::cublaslt

// cuBLASLt as an engine: matmul regions whose epilogue cuBLASLt has (matmul_pattern.hpp), with the
// algorithms its heuristic returns as candidates.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "engines/engine.hpp"

namespace sinter::cublaslt {

class CublasLtEngine : public Engine {
 public:
  explicit CublasLtEngine(int max_candidates = 8) : max_candidates_(max_candidates) {}
  std::string_view name() const override { return "cublaslt"; }
  Support supports(const Graph& g, const fuse::Region& r) const override;
  std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r,
                                    const EngineContext& ctx) const override;
  std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r, const Candidate& c,
                                        EngineContext& ctx) const override;

 private:
  int max_candidates_;
};

// For plans: a prepared cuBLASLt step's algorithm as bytes (a cublasLtMatmulAlgo_t), nullopt when
// `step` is not a cuBLASLt step; and the step rebuilt from those bytes with no heuristic query.
// The rebuild asks cuBLASLt (cublasLtMatmulAlgoCheck) whether the algo still fits this library and
// GPU, and throws Error(unsupported) saying so when it does not.
std::optional<std::vector<char>> algo_config(const PreparedStep& step);
std::unique_ptr<PreparedStep> load_cublaslt_step(const Graph& g, const fuse::Region& r,
                                                 std::span<const char> config, size_t workspace);

// cuBLASLt's version as "13.0.0" (from the loaded library).
std::string cublaslt_version();

}  // namespace sinter::cublaslt

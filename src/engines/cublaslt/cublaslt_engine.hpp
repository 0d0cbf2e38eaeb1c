// cuBLASLt as an engine: matmul regions whose epilogue cuBLASLt has (matmul_pattern.hpp), with the
// algorithms its heuristic returns as candidates.
#pragma once

#include "engines/engine.hpp"

namespace sinter::cublaslt {

class CublasLtEngine : public Engine {
 public:
  std::string_view name() const override { return "cublaslt"; }
  Support supports(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const override;
  std::vector<Candidate> candidates(const Graph& g, const fuse::Region& r, const EngineContext& ctx) const override;
  std::unique_ptr<PreparedStep> prepare(const Graph& g, const fuse::Region& r, const Candidate& c,
                                        EngineContext& ctx) const override;
  // A saved step is its algorithm's bytes (a cublasLtMatmulAlgo_t). Loading rebuilds the step
  // with no heuristic query, asking cuBLASLt (cublasLtMatmulAlgoCheck) whether the algo still
  // fits this library and GPU: Error(unsupported) saying so when it does not.
  SavedStep save_step(const PreparedStep& step, BlobStore& blobs) const override;
  std::string check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                               const BlobStore& blobs) const override;
  std::unique_ptr<PreparedStep> load_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                          const BlobStore& blobs, size_t workspace_bytes,
                                          LoadContext& ctx) const override;
};

// cuBLASLt's version as "13.0.0" (from the loaded library).
std::string cublaslt_version();

}  // namespace sinter::cublaslt

// What Sinter would do with a graph, without running it: the fused regions and why each boundary
// exists (`sinter explain`), each engine's support and candidates per region (`sinter engines`),
// and the CUDA source our code generators write (`sinter explain --kernels DIR`).
#pragma once

#include <string>
#include <vector>

#include "sinter/compile.hpp"
#include "sinter/graph.hpp"

namespace sinter {

struct RegionDescription {
  int index = 0;
  std::string kind;                    // "matmul", "rowwise", "pointwise", ...
  std::string anchor, anchor_op;       // the anchor node and its op, "" for none
  Dims iteration_shape;
  std::vector<std::string> prologue;   // "node:op"
  std::vector<std::string> epilogue;   // "node:op"
  std::vector<std::string> reductions; // "node:op (pattern)"
  std::vector<std::string> constants;  // "node:op"
  std::vector<std::string> inputs, outputs;  // tensors read and stored
  // A collective region's exchange: "all_reduce sum over group 'tp' (world 4): 4096 B in, 6144 B
  // sent per rank (ring)"; "" for other regions.
  std::string collective;
  // A collective region's engine and how it runs it ("nccl: all_reduce: one NCCL call on the
  // runner's communicator"), or, where no engine can, why not, engine by engine; "" for other
  // regions, which the jit engine always runs (`sinter engines` lists every engine's answer).
  std::string engine;
  std::string no_engine;
};

struct BoundaryDescription {
  std::string tensor;
  int producer = 0, consumer = 0;  // region indices
  std::string reason;
};

struct PartitionDescription {
  std::string graph;
  size_t nodes = 0;
  std::vector<RegionDescription> regions;
  std::vector<BoundaryDescription> boundaries;
};

// Validates and partitions; needs no GPU.
PartitionDescription explain(const Graph& graph, const FusionOptions& fusion = {});
std::string to_text(const PartitionDescription& d);
std::string to_json(const PartitionDescription& d);

struct CandidateDescription {
  int rank = 0;
  std::string config;
  std::string description;
};

struct EngineSupport {
  std::string engine;
  bool supported = false;
  std::string reason;            // why not, or why no candidates are listed
  bool candidates_listed = false;  // false where listing needs a GPU this machine lacks
  std::vector<CandidateDescription> candidates;
};

struct RegionEngines {
  int region = 0;
  std::string kind, anchor;
  std::vector<EngineSupport> engines;
};

struct EngineReport {
  std::string device;     // the GPU asked, or the one assumed without a GPU
  bool assumed = false;   // no GPU: our candidates for an assumed H200, vendor candidates not listed
  std::vector<RegionEngines> regions;
};

struct EngineListOptions {
  int device = 0;
  int max_vendor_candidates = 8;
  FusionOptions fusion;
};

// Every registered engine's answer for every region, as if each were named (cuDNN then offers
// matmuls and norms too).
EngineReport list_engines(const Graph& graph, const EngineListOptions& options = {});
std::string to_text(const EngineReport& r);
std::string to_json(const EngineReport& r);

struct GeneratedKernel {
  int region = 0;
  int candidate = 0;  // rank among the engine's distinct candidates
  int kernel = 0;     // within the candidate's kernels
  std::string engine, config, description;
  std::string source;  // CUDA C++, as given to NVRTC
};

// The source every candidate of every region would compile, for the GPU of `device` or, without
// one, an assumed H200 (sm_90a, 132 SMs): our code generators need only the architecture and the
// SM count.
std::vector<GeneratedKernel> generated_kernels(const Graph& graph, const FusionOptions& fusion = {}, int device = 0);

}  // namespace sinter

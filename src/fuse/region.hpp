// Regions: the unit of fusion. A region runs as one kernel (or one vendor call). It has at most
// one anchor (matmul, conv, sdpa, a row-wise op, a standalone reduction, a layout copy, or a
// collective, which is always alone in its region), the pointwise prologue computed while loading
// the anchor's main input, the pointwise epilogue DAG applied to the anchor's output, and exit
// reductions over epilogue values. Only tensors that are
// graph outputs or read by another region are stored; everything else stays in registers.
#pragma once

#include "sinter/compile.hpp"

#include <string>
#include <vector>

#include "sinter/graph.hpp"

namespace sinter::fuse {

enum class RegionKind {
  pointwise,  // no anchor: a pointwise DAG over one iteration shape
  rowwise,    // softmax, layernorm, rmsnorm or rope over the last axis
  reduction,  // a standalone reduction over any axes
  matmul,
  conv,
  sdpa,
  layout,     // permute, slice or concat: a strided copy
  alias,      // reshape: no kernel, the output shares the input's memory
  gather,     // gather: slices of a tensor picked by indices read at run time
  collective, // all_reduce, all_gather or reduce_scatter: data exchanged among the ranks of a group
};
std::string_view to_string(RegionKind k);

// Why our code generators do not take a collective region.
inline constexpr std::string_view kCollectiveOnNccl =
    "collectives run on the nccl engine (NCCL), not in generated kernels";

// Exit reductions that can be folded into a region, described relative to its iteration shape
// (the shape of its anchor output, or of its pointwise DAG). Only these patterns fuse; any other
// reduction is a standalone region.
enum class ExitReduction {
  global,   // over every axis: one value, reduced per warp and block, one atomic per CTA
  rows,     // over the last axis: one value per row
  columns,  // over every axis but the last: one value per column
};
std::string_view to_string(ExitReduction r);

struct ExitReduce {
  NodeId node;
  ExitReduction pattern;
};

struct Region {
  int id = 0;
  RegionKind kind = RegionKind::pointwise;
  NodeId anchor = -1;             // -1 for pointwise regions
  Dims iteration_shape;           // the shape the epilogue runs over
  std::vector<NodeId> prologue;   // pointwise nodes feeding the anchor's main input (row-wise), or
                                  // the layout ops before a layout anchor, in chain order
  std::vector<NodeId> epilogue;   // pointwise nodes after the anchor (or the whole DAG)
  std::vector<ExitReduce> reductions;
  std::vector<NodeId> constants;  // scalar constants inlined into this region's code
  std::vector<TensorId> inputs;   // read from memory, in first-use order
  std::vector<TensorId> outputs;  // written to memory, in production order

  // Every node the region computes (constants included), in topological order.
  std::vector<NodeId> nodes() const;
  // The rmsnorm folded into a matmul's A (its prologue; docs/fusion.md rule 10), or -1.
  NodeId folded_norm() const { return kind == RegionKind::matmul && !prologue.empty() ? prologue.front() : -1; }
};

// Why two regions were not merged across a tensor.
struct Boundary {
  TensorId tensor;
  int producer_region;  // -1 for graph inputs
  int consumer_region;
  std::string reason;
};

struct Partition {
  std::vector<Region> regions;       // in an order where producers come first
  std::vector<int> region_of_node;   // by NodeId; -1 for constants (inlined wherever read)
  std::vector<Boundary> boundaries;  // one per (tensor, consumer region) edge between regions
};

using FusionOptions = sinter::FusionOptions;  // sinter/compile.hpp

// Groups the nodes of a validated graph into regions. Deterministic.
Partition partition_graph(const Graph& g, const FusionOptions& options = {});

// Checks the invariants of a partition (every node placed once, regions in dependency order,
// inputs and outputs complete, each region within the legality rules of docs/fusion.md).
// Throws sinter::Error(internal) naming the broken rule.
void verify_partition(const Graph& g, const Partition& p);

// The subgraph that one region computes, as a standalone graph: its inputs become graph inputs
// and its outputs graph outputs, all with the original names. Used to run a region on the CPU
// reference (the partition tests) and by engines that want a graph view of a region.
Graph region_subgraph(const Graph& g, const Region& r);

// 16 hex digits of the structural hash (with shapes) of region_subgraph: ops, every attribute,
// dtypes, dims and input strides, not names. What the timing cache and cuDNN's saved plans key on.
std::string region_structure_hash(const Graph& g, const Region& r);

}  // namespace sinter::fuse

// Tensor parallelism: one graph split into the programs of `world` ranks, Megatron style.
//
//   std::vector<Graph> ranks = sinter::shard_tensor_parallel(g, 4);
//   std::vector<TensorMap> inputs = sinter::shard_inputs(g, ranks, weights_and_inputs);
//   TensorMap y = sinter::gather_outputs(g, ranks, sinter::run_reference_ranks(ranks, inputs));
//
// Column-parallel matmuls (the attention's Q, K, V projections; an MLP's gate and up projections)
// split their weight along N, so each rank computes its share of the heads or of the hidden
// features; a matmul that then reads such a split value along K (the attention output and down
// projections) splits its weight along K: row-parallel, each rank holding a partial sum, which an
// all_reduce(sum) of the group completes. Everything else follows from that: attention heads and
// KV caches split by head; norms, residuals, rope and the inputs they read are replicated.
#pragma once

#include <string>
#include <vector>

#include "sinter/graph.hpp"
#include "sinter/host_tensor.hpp"

namespace sinter {

struct ShardOptions {
  // The group name of the inserted all_reduces.
  std::string group = "tp";
  // Weights (graph inputs read as a matmul's second operand) of the matmuls to make
  // column-parallel, by name, on top of those found by structure.
  std::vector<std::string> column_parallel;
  // Find the column-parallel matmuls by graph structure: the matmuls whose outputs reach an sdpa's
  // q, k or v through head reshapes, permutes, rope, casts and a concat with a KV cache; and the
  // matmuls that feed another matmul through pointwise ops only (an MLP's up and gate projections,
  // the other being its down projection). The sdpa's query and key/value heads must then divide by
  // the world. Off: only column_parallel counts.
  bool detect = true;
};

// The graph of every rank (rank r at index r), each reading the same input names as `g` with the
// shard's dims (a split input's axis divided by world) and writing the same output names (a split
// output holds the rank's part). With world 1, `g` itself. Throws sinter::Error naming the node
// and tensor where the split cannot go on (a norm over a split axis, a reshape that would mix
// heads, heads that do not divide by world, a weight that is named but no matmul's operand).
std::vector<Graph> shard_tensor_parallel(const Graph& g, int world, const ShardOptions& options = {});

// Each rank's inputs from the unsharded values of `full`'s inputs: a split input (whose dims in
// the rank graphs differ from `full`'s along one axis) gives rank r its r-th contiguous part
// along that axis; a replicated one is copied. Needs a value for every input of the rank graphs.
std::vector<TensorMap> shard_inputs(const Graph& full, const std::vector<Graph>& rank_graphs, const TensorMap& values);

// `full`'s outputs rebuilt from each rank's outputs: split outputs joined along their axis in rank
// order, replicated ones taken from rank 0.
TensorMap gather_outputs(const Graph& full, const std::vector<Graph>& rank_graphs,
                         const std::vector<TensorMap>& rank_outputs);

}  // namespace sinter

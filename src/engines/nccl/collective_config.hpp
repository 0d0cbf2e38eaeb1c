// What a collective step exchanges, worked out from its region (a collective is always alone in
// its region): the NCCL call, its datatype and count, and every reason the nccl engine cannot run
// it. Plain data and pure functions, so the CPU tests check them without NCCL or a GPU.
#pragma once

#include <nccl.h>

#include <optional>
#include <string>

#include "comm/nccl_library.hpp"
#include "engines/saved_step.hpp"
#include "fuse/region.hpp"
#include "sinter/communicator.hpp"

namespace sinter::nccl {

struct CollectiveConfig {
  OpKind op = OpKind::all_reduce;
  CollectiveAttrs attrs;
  DType dtype = DType::f32;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t reduce = ncclSum;  // all_reduce, reduce_scatter
  uint64_t count = 0;            // NCCL's count: per rank sent (reduce_scatter: received)
  uint64_t input_bytes = 0, output_bytes = 0;
};

struct CollectiveMatch {
  std::optional<CollectiveConfig> config;
  std::string reason;  // why not, when there is no config
};

// The region's collective, or why NCCL cannot run it: not a collective region, a dtype NCCL has
// no type for, a strided input or output (NCCL sends contiguous buffers), or an all_gather /
// reduce_scatter along an axis with elements before it (NCCL concatenates and splits whole rank
// buffers, which is along the outermost axis only: axes before the gathered one must be 1).
CollectiveMatch match_collective(const Graph& g, const fuse::Region& r);

// Why this NCCL cannot run `c`, or "": a world above 1 needs the library loaded, fp8 needs 2.24.
std::string library_problem(const CollectiveConfig& c, const Library& lib);

// Why `comm` (null: none bound) cannot run `c` on a runner of GPU `device`, or "". A collective
// of world 1 needs none; a bound one must match the graph's world and the runner's GPU.
std::string communicator_problem(const CollectiveConfig& c, const Communicator* comm, int device);

// The candidate's config text: "all_reduce sum bf16 count=4096 group=tp world=2".
std::string config_text(const CollectiveConfig& c);
CollectiveRecord record_of(const CollectiveConfig& c);
// Why `saved` is not the record of `c` ("" when it is), naming the first field that differs.
std::string record_mismatch(const CollectiveConfig& c, const CollectiveRecord& saved);

}  // namespace sinter::nccl

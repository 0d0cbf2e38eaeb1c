// Pieces every region code generator shares: the element body (a region's pointwise nodes as
// straight-line C++ over named values), exit-reduction slots, and source assembly.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "engines/jit/expr.hpp"
#include "engines/jit/kernel_spec.hpp"
#include "fuse/region.hpp"

namespace sinter::jit {

// Emits the statements that compute `nodes` (pointwise, in order) for one element. A value's
// name comes from `name_of`: region inputs and anchor outputs are named by the caller; node
// outputs become v<tensor id>. Constants of the region are emitted first.
class BodyEmitter {
 public:
  BodyEmitter(const Graph& g, const fuse::Region& r, ExprOptions options = {});
  // The caller's name for a tensor that is not computed by `nodes` (a region input, the anchor's
  // output, a value computed in an earlier stage).
  void bind(TensorId t, std::string name) { names_[t] = std::move(name); }
  std::string name_of(TensorId t) const;
  std::string constants() const;  // declarations of the region's inlined constants
  std::string emit(const std::vector<NodeId>& nodes);  // binds each output to value_name(output)

 private:
  // v<k>, k counted from the region's first computed tensor: regions of the same structure
  // (the layers of a model) get the same source, and so one compiled kernel and one megakernel
  // task function.
  std::string value_name(TensorId t) const { return "v" + std::to_string(t - first_value_); }

  const Graph& g_;
  const fuse::Region& r_;
  ExprOptions options_;
  TensorId first_value_ = 0;
  std::map<TensorId, std::string> names_;
};

// The reduction kind constant of kernels/common/reduce.cuh for a reduce op.
std::string reduce_kind(OpKind op);

// An exit reduction's argument slot and workspace: `acc` floats (one per output element) and a
// counter, at offsets in the region's workspace.
struct ExitSlot {
  fuse::ExitReduce exit;
  TensorId input;   // the reduced value
  TensorId output;  // the reduction's output tensor
  int output_index; // in the region's outputs
  int64_t n_out;
  float scale;      // 1/count for mean
  size_t acc_offset, count_offset;
};
std::vector<ExitSlot> plan_exit_slots(const Graph& g, const fuse::Region& r, size_t& workspace);
// Adds the SinterReduceSlot of each exit to `spec` (fields and pointer slots).
void pack_exit_slots(KernelSpec& spec, const std::vector<ExitSlot>& slots);

// The grid of a persistent (grid-stride) kernel over `work` items with at most `max_grid` CTAs
// resident: the fewest CTAs that take no more rounds than max_grid would, so every CTA does the
// same number of items. 16384 rows over 528 CTAs is 31 rounds plus a 32nd in which 16 CTAs work
// and 512 idle; 512 CTAs do 32 rounds each and finish together.
int64_t balanced_grid(int64_t work, int64_t max_grid);

// The grid of a kernel whose CTAs (spec.launch.block threads) take `work` items (tiles, rows).
// Flat where `want_flat` and the grid can hold every item: one item per CTA, a grid covering the
// work (H200: streams ~8% faster than a persistent loop; PointwiseConfig::flat). Otherwise
// persistent: balanced over the CTAs that fit at full thread occupancy, and spec.persistent_work
// set so the engine refines it by the compiled kernel's occupancy. Returns whether it went flat
// (callers tag the description " flat").
bool set_work_grid(KernelSpec& spec, int64_t work, bool want_flat, const cuda::DeviceProperties& dev);

// The task boxes (engines/task_box.hpp) of a flat kernel whose CTA b handles the elements of one
// block of a [rows, cols] iteration space: rows [b * box_rows, ...) and all columns when
// box_cols == cols (row blocks), else columns [b * box_cols, ...) of a one-row space. Given to every
// region input and output stored contiguously in that iteration order (same shape, leading 1s
// aside); other tensors (broadcast, strided, reductions) get none: read or written whole.
std::vector<TaskBox> flat_task_boxes(const Graph& g, const fuse::Region& r, const Dims& shape, int64_t rows, int64_t cols,
                                     int64_t box_rows, int64_t box_cols, int64_t tasks);

// The boxes of a GEMM kernel whose task covers all M rows and a tile of box_cols columns of the
// [M, N] result, placed by `digits`: every region output stored as the result ([M, N] row-major,
// leading 1s aside) is written over the tile, and every region input of that shape read over it (an
// epilogue operand: a residual, the other half of a SwiGLU), except the tensors in `operands` (the
// GEMM's own operands, read whole or by boxes of their own). Other tensors get none.
std::vector<TaskBox> result_tile_boxes(const Graph& g, const fuse::Region& r, int64_t m, int64_t n,
                                       const std::vector<BoxDigit>& digits, int64_t box_cols,
                                       const std::vector<TensorId>& operands);

int region_output_index(const fuse::Region& r, TensorId t);
int region_input_index(const fuse::Region& r, TensorId t);

// "#include ..." lines every kernel starts with.
std::string kernel_includes(const std::vector<std::string>& extra = {});

}  // namespace sinter::jit

// What the code generators produce for one region: generated CUDA source, the launch shape, and
// the packed argument struct with the places where device pointers go at launch time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cuda/library.hpp"
#include "engines/jit/kernel_args.hpp"
#include "engines/task_box.hpp"

namespace sinter::jit {

struct PointerSlot {
  enum class Source { input, output, workspace };
  Source source;
  int index = 0;                // input or output index within the region
  size_t workspace_offset = 0;  // for Source::workspace
  size_t arg_offset = 0;        // where the pointer sits in the argument struct
  int alignment = 1;            // bytes the kernel's vector accesses need
  int64_t byte_offset = 0;      // added to the bound pointer (a slice, a concat part)
};

// A TMA tensor map (CUtensorMap, 128 bytes) in the argument struct, encoded at launch once the
// buffer is known: a tiled 3D view {dims[0] innermost, dims[1], dims[2]} of 16-bit or fp8 elements
// (data_type: tensor_map_data_type) with byte strides for dims 1 and 2, a box, and 128-byte swizzle.
struct TensorMapSlot {
  PointerSlot::Source source;
  int index = 0;
  int64_t byte_offset = 0;
  size_t arg_offset = 0;
  int data_type = 0;                // CUtensorMapDataType
  uint64_t dims[3] = {1, 1, 1};
  uint64_t strides[2] = {0, 0};     // bytes, dims 1 and 2
  uint32_t box[3] = {1, 1, 1};
  const void* encoded_for = nullptr;  // the address the packed map holds (re-encoded on change)
};

struct KernelSpec {
  std::string entry = "sinter_region";  // the extern "C" kernel
  std::string source;
  std::string description;  // the variant, for explain/inspect
  cuda::LaunchConfig launch;
  // For persistent kernels (a grid-stride loop over this many work items): the engine sizes the
  // grid to the CTAs that fit on the device at once, capped by the work; launch.grid is then
  // only the generator's guess.
  int64_t persistent_work = 0;
  // A persistent kernel that divides its work over whatever grid it gets (stream-K: it cuts the
  // last wave's items along K): the engine launches every resident unit, up to launch.grid, where
  // it would otherwise balance the grid so that each CTA takes the same number of whole items.
  bool persistent_fill = false;
  // Where a persistent GEMM's SinterUnitOrder sits in `args`, for the engine to fill once it
  // has sized the grid (gpc_order.hpp), and the raster's item rows a group. Absent: the units
  // walk in index order.
  struct UnitOrderSlot {
    size_t arg_offset = 0;
    int group_m = 1;
  };
  std::optional<UnitOrderSlot> unit_order;
  ArgPacker args;
  std::vector<PointerSlot> pointers;
  std::vector<TensorMapSlot> tensor_maps;
  // What each CTA reads and writes of the region's tensors, where the generator knows its tiling
  // (the megakernel's tile-level dependencies; not saved in plans: a loaded step regenerates
  // them). They hold for one work item a CTA: see task_boxes_hold.
  std::vector<TaskBox> task_boxes;
  // The region input a task prologue reads (the source defines sinter_task_prologue(const Args&,
  // bool drain)): inside a megakernel, thread 0 runs it before the task's waits where no earlier
  // step of the segment writes that input. -1: the kernel has none. Not saved (regenerated).
  int prologue_slot = -1;
};

// Whether `spec`'s task boxes hold on a grid of `grid_x` CTAs: a persistent kernel sized below its
// work runs several items a CTA, which its boxes do not describe.
inline bool task_boxes_hold(const KernelSpec& spec, unsigned grid_x) {
  return spec.persistent_work == 0 || grid_x >= spec.persistent_work;
}

// A region's kernels, launched in order, and the workspace they share.
struct RegionKernels {
  std::vector<KernelSpec> kernels;
  size_t workspace_bytes = 0;
};

}  // namespace sinter::jit

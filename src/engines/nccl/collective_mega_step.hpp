// A collective step as tasks of a megakernel (Engine::mega_step of the nccl engine): a push kernel
// and a combine kernel (kernels/mega/collective.cuh) over symmetric memory of the step's group
// (comm/symmetric_memory.hpp), a task per slice of one rank's slot, so each slice moves as soon as
// the producer tasks that write it are done, and its consumers start as soon as it is combined.
#pragma once

#include <memory>

#include "cuda/device.hpp"
#include "engines/engine.hpp"
#include "engines/nccl/collective_config.hpp"

namespace sinter::nccl {

// Elements a task moves: at least 16 KiB (a task's fixed cost stays small against its copy), and
// the slot spread over every SM where it is larger; a whole number of 16-byte pieces.
uint64_t collective_slice_elems(const CollectiveConfig& c, int sm_count);

// The push and combine kernels of `c`, their grids, task boxes and sources. `comm`: the step's
// communicator (null: world 1, or a step prepared at compile time, which never binds).
std::unique_ptr<MegaStep> collective_mega_step(const CollectiveConfig& c, std::shared_ptr<Communicator::State> comm,
                                               const cuda::DeviceProperties& device);

}  // namespace sinter::nccl

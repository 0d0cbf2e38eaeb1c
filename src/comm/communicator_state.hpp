// What a public sinter::Communicator holds: one NCCL communicator, or a virtual group's handle,
// and where it sits in its group. The nccl engine's steps keep a reference and enqueue their
// collectives on `comm`; the megakernel's collectives allocate symmetric memory through it
// (comm/symmetric_memory.hpp).
#pragma once

#include <nccl.h>

#include <memory>

#include "sinter/communicator.hpp"

namespace sinter {

namespace comm {
struct VirtualGroup;  // comm/symmetric_memory.cpp
}

struct Communicator::State {
  ncclComm_t comm = nullptr;                          // an NCCL communicator, or
  std::shared_ptr<comm::VirtualGroup> virtual_group;  // the virtual ranks' group (no NCCL)
  int rank = 0;
  int world = 1;
  int device = 0;
  size_t symmetric_allocations = 0;  // made so far by this rank (their order pairs them up across ranks)
  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State();  // ncclCommDestroy when comm is set
};

// Makes the public handle around a state: communicator.cpp for the communicators NCCL made, and
// the CPU tests for states with no NCCL communicator behind them (rank, world and device only).
struct CommunicatorAccess {
  static Communicator wrap(std::shared_ptr<Communicator::State> s) { return Communicator(std::move(s)); }
};

}  // namespace sinter

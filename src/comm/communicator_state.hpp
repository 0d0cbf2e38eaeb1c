// What a public sinter::Communicator holds: one NCCL communicator and where it sits in its group.
// The nccl engine's steps keep a reference and enqueue their collectives on `comm`.
#pragma once

#include <nccl.h>

#include "sinter/communicator.hpp"

namespace sinter {

struct Communicator::State {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int world = 1;
  int device = 0;
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

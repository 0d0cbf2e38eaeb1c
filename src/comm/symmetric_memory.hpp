// Symmetric memory: a buffer every rank of a group allocates alike (the same size, as its k-th
// allocation), each rank's part readable and writable by every rank at an address this rank
// holds. The megakernel's collectives (kernels/mega/collective.cuh) push into their peers'
// receive buffers and arrival counters through it.
//
//   NCCL groups:   ncclMemAlloc + ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC); the peers'
//                  addresses from the window's load/store-accessible (LSA) mapping, which needs
//                  every rank of the group in one LSA team (one NVLink domain). Registering is
//                  collective: every rank must allocate, in the same order.
//   virtual ranks: the ranks' parts are plain allocations on their one GPU, made when the first
//                  rank asks for allocation k (Communicator::create_virtual).
//   no group:      a world of one: plain device memory.
//
// Every part is zeroed before any rank can reach it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sinter/communicator.hpp"

namespace sinter::comm {

class SymmetricBuffer {
 public:
  virtual ~SymmetricBuffer() = default;
  // This rank's part, as this rank addresses it.
  void* local() const { return ranks_.at(rank_); }
  // Every rank's part by rank, as this rank addresses them.
  const std::vector<void*>& ranks() const { return ranks_; }
  size_t bytes() const { return bytes_; }
  // This rank's part as allocated (an NCCL window's own pointer; else local()).
  virtual const void* allocation() const { return local(); }
  int rank() const { return rank_; }

 protected:
  std::vector<void*> ranks_;
  size_t bytes_ = 0;
  int rank_ = 0;
};

// `bytes` of symmetric memory of `comm`'s group (null: a world of one on GPU `device`), zeroed.
// `what` names the use in errors ("arrival counters of megakernel 0"). Error(unsupported) where
// the group cannot have it (NCCL without windows, ranks outside one LSA team), naming why;
// Error(invalid_argument) when a virtual rank's k-th allocation differs in size or use from another
// rank's (the ranks' plans are not the same program; NCCL ranks cannot compare theirs).
std::shared_ptr<SymmetricBuffer> allocate_symmetric(const std::shared_ptr<Communicator::State>& comm, size_t bytes,
                                                    int device, const std::string& what);

// Why `comm`'s group cannot have symmetric memory, or "" (null: a world of one, always can).
std::string symmetric_memory_problem(const Communicator::State* comm);

}  // namespace sinter::comm

// Communicators: the NCCL communicators that run a plan's collectives (all_reduce, all_gather,
// reduce_scatter) among the ranks of a group.
//
// A graph names each collective's group and world (CollectiveAttrs); compiling it needs no
// communicator, and a plan with collectives saves and loads like any other. A Runner is given one
// Communicator per group of the plan (RunnerOptions::communicators, group name -> communicator)
// when it is made, and its collective steps run on them:
//
//   // one process per GPU: rank 0 makes the id and ships its 128 bytes to the other ranks
//   sinter::NcclUniqueId id = rank == 0 ? sinter::Communicator::unique_id() : receive_id();
//   sinter::Communicator tp = sinter::Communicator::create(rank, world, id, /*device=*/local_gpu);
//   sinter::RunnerOptions options;
//   options.device = local_gpu;
//   options.communicators["tp"] = tp;
//   sinter::Runner runner(plan, options);
//
//   // one process driving all local GPUs: one communicator (and one Runner) per device
//   std::vector<sinter::Communicator> tp = sinter::Communicator::create_local({0, 1, 2, 3});
//
// The Runner refuses, naming the step and the group: a group of world > 1 with no communicator
// bound, a communicator whose world differs from the graph's world for that group or that is on
// another GPU than the runner, and a communicator bound to a group no collective of the plan uses.
// A collective of world 1 needs no communicator (it is a copy); one bound to it must have world 1.
//
// NCCL is loaded at run time (dlopen of libnccl.so.2, or the file SINTER_NCCL_LIBRARY names):
// binaries start where NCCL is absent, and the nccl engine, `sinter engines` and the calls here
// say why it cannot be used. NVLink multicast (NVLS) is never used: before the first communicator
// is made, NCCL_NVLS_ENABLE is set to 0 in this process's environment unless it is already set.
//
// A Communicator is a shared handle: copies refer to one NCCL communicator, destroyed with the
// last copy (runners keep theirs alive). Enqueue collectives of one communicator from one thread
// at a time, in the same order on every rank: the ranks' plans must be the same program.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sinter {

// ncclUniqueId: opaque bytes made on one rank and given, unchanged, to every rank of the group.
struct NcclUniqueId {
  std::array<uint8_t, 128> bytes{};
  bool operator==(const NcclUniqueId&) const = default;
};

// Whether NCCL can be loaded here, and which.
struct NcclStatus {
  bool available = false;
  std::string version;  // "2.28.9", or "" when not available
  std::string path;     // the file opened
  std::string reason;   // why not available: the dlopen or dlsym message
};
// Probed once per process; never throws.
NcclStatus nccl_status();

class Communicator {
 public:
  // A fresh id for a new group (ncclGetUniqueId), made on one rank. Error(unsupported) without
  // NCCL; Error(cuda) when NCCL fails (its message included).
  static NcclUniqueId unique_id();
  // This process's rank of `world` on GPU `device` (ncclCommInitRank); every rank calls it with
  // the same id and world, and it returns once all have joined. Error(invalid_argument) for a
  // rank outside [0, world), world < 1 or a device that does not exist; Error(unsupported)
  // without NCCL; Error(cuda) when NCCL fails.
  static Communicator create(int rank, int world, const NcclUniqueId& id, int device);
  // One communicator per device, all in one group (ncclCommInitAll): element i is rank i on
  // devices[i]. Error(invalid_argument) for an empty list, a device named twice or one that does
  // not exist.
  static std::vector<Communicator> create_local(const std::vector<int>& devices);
  // `world` virtual ranks of one group on GPU `device`, with no NCCL: element i is rank i. They
  // exchange through that GPU's memory exactly as ranks on several GPUs exchange through NCCL's
  // symmetric memory, so one GPU runs and tests the megakernel's collectives: give each rank's
  // Runner ExecMode::mega and its share of the SMs (MegaOptions::sm_count = the GPU's SMs /
  // world), and enqueue the ranks together, each on its own stream. A virtual group runs
  // collectives only inside megakernels: stream and graph mode refuse its collective steps.
  // Error(invalid_argument) for world < 1 or a device that does not exist.
  static std::vector<Communicator> create_virtual(int world, int device);

  Communicator() = default;  // none: bound nowhere
  bool valid() const { return state_ != nullptr; }
  int rank() const;
  int world() const;
  int device() const;
  bool is_virtual() const;  // made by create_virtual
  // "rank 1 of 4 on GPU 1", "virtual rank 1 of 4 on GPU 0"
  std::string describe() const;

  struct State;
  const std::shared_ptr<State>& state() const { return state_; }

 private:
  friend struct CommunicatorAccess;
  explicit Communicator(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

// Group name (CollectiveAttrs::group) -> its communicator.
using CommunicatorBindings = std::map<std::string, Communicator>;

}  // namespace sinter

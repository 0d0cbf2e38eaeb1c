#include "engines/nccl/collective_mega_step.hpp"

#include <algorithm>

#include "comm/communicator_state.hpp"
#include "comm/symmetric_memory.hpp"
#include "cuda/buffer.hpp"
#include "engines/jit/expr.hpp"
#include "mega/mega_abi.h"
#include "sinter/error.hpp"

namespace sinter::nccl {
namespace {

constexpr unsigned kThreads = 256;

unsigned op_code(OpKind op) {
  switch (op) {
    case OpKind::all_gather: return SINTER_COLLECTIVE_ALL_GATHER;
    case OpKind::reduce_scatter: return SINTER_COLLECTIVE_REDUCE_SCATTER;
    default: return SINTER_COLLECTIVE_ALL_REDUCE;
  }
}

std::string task_source(const CollectiveConfig& c, const std::string& entry, const std::string& body) {
  return "// " + config_text(c) + "\n#include \"mega/collective.cuh\"\n\nextern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(kThreads) + ") " + entry + "(const __grid_constant__ SinterCollectiveArgs a) {\n  " + body +
         "\n}\n";
}

// One rank's slot as a [rows, slot_elems] matrix of a tensor (rows = world where the tensor holds
// every rank's part), the box of slice `block`.
TaskBox slice_box(bool write, int64_t rows, int64_t slot_elems, int64_t slice, unsigned tasks, int elem_bytes) {
  TaskBox b;
  b.write = write;
  b.slot = 0;
  b.elem_bytes = elem_bytes;
  b.rows = rows;
  b.cols = slot_elems;
  b.pitch = slot_elems;
  b.digits = {BoxDigit{static_cast<int64_t>(tasks), 0, slice}};
  b.box_rows = rows;
  b.box_cols = slice;
  return b;
}

class CollectiveMegaStep : public MegaStep {
 public:
  CollectiveMegaStep(CollectiveConfig c, std::shared_ptr<Communicator::State> comm, const cuda::DeviceProperties& device)
      : c_(std::move(c)), comm_(std::move(comm)), device_(comm_ ? comm_->device : device.ordinal) {
    elem_bytes_ = static_cast<unsigned>(dtype_size(c_.dtype));
    slice_ = collective_slice_elems(c_, device.sm_count);
    const uint64_t tasks = (c_.count + slice_ - 1) / slice_;
    if (tasks == 0 || tasks > 0x7fffffffu) {
      throw Error(ErrorCode::unsupported, "megakernel " + config_text(c_) + ": " + std::to_string(tasks) + " slices");
    }
    const unsigned grid = static_cast<unsigned>(tasks);
    const int64_t world = c_.attrs.world;
    const auto slot = static_cast<int64_t>(c_.count), slice = static_cast<int64_t>(slice_);
    const int e = static_cast<int>(elem_bytes_);

    MegaTaskKernel push;
    push.entry = "sinter_collective_push_task";
    push.source = task_source(c_, push.entry, "sinter_collective_push(a);");
    push.description = "push " + config_text(c_);
    push.grid[0] = grid;
    push.threads = kThreads;
    push.arg_bytes = sizeof(SinterCollectiveArgs);
    push.boxes = {slice_box(false, c_.op == OpKind::reduce_scatter ? world : 1, slot, slice, grid, e)};
    push.arrivals.world = c_.attrs.world;
    push.arrivals.group = c_.attrs.group;
    push.arrivals.comm = comm_;

    MegaTaskKernel combine;
    const bool gather = c_.op == OpKind::all_gather;
    combine.entry = gather ? "sinter_collective_gather_task" : std::string("sinter_collective_reduce_task");
    combine.source = task_source(c_, combine.entry,
                                 gather ? std::string("sinter_collective_gather(a);")
                                        : "sinter_collective_reduce<" + jit::storage_type(c_.dtype) + ">(a);");
    combine.description = (gather ? "gather " : "combine ") + config_text(c_);
    combine.grid[0] = grid;
    combine.threads = kThreads;
    combine.arg_bytes = sizeof(SinterCollectiveArgs);
    combine.boxes = {slice_box(true, gather ? world : 1, slot, slice, grid, e)};
    kernels_ = {std::move(push), std::move(combine)};
  }

  const std::vector<MegaTaskKernel>& kernels() const override { return kernels_; }

  void allocate() override {
    if (recv_) return;
    if (c_.attrs.world > 1 && !comm_) {
      throw Error(ErrorCode::invalid_state, "megakernel " + config_text(c_) + ": no communicator for group '" +
                                                c_.attrs.group + "' (a Runner binds it: RunnerOptions::communicators)");
    }
    // two halves (launch parity) of one slot per rank, on every rank; and the table of them
    const uint64_t bytes = 2ull * c_.attrs.world * c_.count * elem_bytes_;
    recv_ = comm::allocate_symmetric(comm_, bytes, device_, "receive buffer of " + config_text(c_));
    cuda::DeviceGuard guard(device_);
    table_ = cuda::DeviceBuffer(recv_->ranks().size() * sizeof(void*));
    table_.copy_from_host(recv_->ranks().data(), table_.size());
  }

  std::vector<char> arguments(size_t k, const Binding& binding) override {
    if (k >= kernels_.size()) throw Error(ErrorCode::internal, "collective mega step: kernel " + std::to_string(k));
    if (!recv_) throw Error(ErrorCode::internal, "megakernel " + config_text(c_) + ": arguments before allocate()");
    SinterCollectiveArgs a{};
    a.in = static_cast<const char*>(binding.inputs.at(0));
    a.out = static_cast<char*>(binding.outputs.at(0));
    a.recv = static_cast<char* const*>(table_.data());
    a.slot_elems = c_.count;
    a.elem_bytes = elem_bytes_;
    a.world = static_cast<unsigned>(c_.attrs.world);
    a.rank = static_cast<unsigned>(recv_->rank());
    a.slice_elems = static_cast<unsigned>(slice_);
    a.op = op_code(c_.op);
    a.reduce = c_.attrs.reduce == CollectiveReduce::max ? SINTER_COLLECTIVE_MAX : SINTER_COLLECTIVE_SUM;
    const char* p = reinterpret_cast<const char*>(&a);
    return std::vector<char>(p, p + sizeof a);
  }

 private:
  CollectiveConfig c_;
  std::shared_ptr<Communicator::State> comm_;
  int device_ = 0;
  unsigned elem_bytes_ = 1;
  uint64_t slice_ = 1;
  std::vector<MegaTaskKernel> kernels_;
  std::shared_ptr<comm::SymmetricBuffer> recv_;  // made by allocate()
  cuda::DeviceBuffer table_;
};

}  // namespace

uint64_t collective_slice_elems(const CollectiveConfig& c, int sm_count) {
  const uint64_t e = static_cast<uint64_t>(dtype_size(c.dtype));
  const uint64_t spread = (c.count * e + std::max(sm_count, 1) - 1) / std::max(sm_count, 1);
  const uint64_t bytes = (std::max<uint64_t>(16384, spread) + 15) / 16 * 16;
  return std::max<uint64_t>(1, bytes / e);
}

std::unique_ptr<MegaStep> collective_mega_step(const CollectiveConfig& c, std::shared_ptr<Communicator::State> comm,
                                               const cuda::DeviceProperties& device) {
  return std::make_unique<CollectiveMegaStep>(c, std::move(comm), device);
}

}  // namespace sinter::nccl

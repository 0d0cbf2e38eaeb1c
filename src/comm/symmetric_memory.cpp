#include "comm/symmetric_memory.hpp"

#include <nccl_device.h>

#include <cstring>

#include "comm/communicator_state.hpp"
#include "comm/nccl_library.hpp"
#include "comm/virtual_group.hpp"
#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "sinter/error.hpp"

namespace sinter::comm {

namespace {

class PlainBuffer : public SymmetricBuffer {
 public:
  PlainBuffer(size_t bytes, int device) {
    cuda::DeviceGuard guard(device);
    buffer_ = cuda::DeviceBuffer(bytes);
    buffer_.memset(0);
    ranks_ = {buffer_.data()};
    bytes_ = bytes;
  }

 private:
  cuda::DeviceBuffer buffer_;
};

class VirtualBuffer : public SymmetricBuffer {
 public:
  VirtualBuffer(std::shared_ptr<VirtualGroup::Parts> parts, int rank) : parts_(std::move(parts)) {
    for (const cuda::DeviceBuffer& b : parts_->parts) ranks_.push_back(b.data());
    bytes_ = parts_->bytes;
    rank_ = rank;
  }

 private:
  std::shared_ptr<VirtualGroup::Parts> parts_;
};

class WindowBuffer : public SymmetricBuffer {
 public:
  WindowBuffer(std::shared_ptr<Communicator::State> state, size_t bytes, const std::string& what)
      : state_(std::move(state)), comm_(state_->comm), device_(state_->device) {
    const Communicator::State& s = *state_;
    const nccl::Library& lib = nccl::library();
    cuda::DeviceGuard guard(device_);
    // whole pages: windows register at NCCL_WIN_REQUIRED_ALIGNMENT granularity
    bytes_ = (bytes + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT * NCCL_WIN_REQUIRED_ALIGNMENT;
    rank_ = s.rank;
    SINTER_NCCL_CHECK_COMM(lib.MemAlloc(&memory_, bytes_), comm_);
    try {
      // zeroed before registering: registration is collective, so no peer reaches it before
      SINTER_CUDA_CHECK(cudaMemset(memory_, 0, bytes_));
      SINTER_CUDA_CHECK(cudaDeviceSynchronize());
      SINTER_NCCL_CHECK_COMM(lib.CommWindowRegister(comm_, memory_, bytes_, &window_, NCCL_WIN_COLL_SYMMETRIC), comm_);
      // The window record lives in device memory where NCCL made a symmetric window; where it
      // could not (no peer access between every pair, CUMEM off), the handle is something else.
      cudaPointerAttributes at{};
      if (cudaPointerGetAttributes(&at, window_) != cudaSuccess || at.type != cudaMemoryTypeDevice) {
        cudaGetLastError();
        throw Error(ErrorCode::unsupported, "NCCL registered no symmetric window (its record is not in device memory: "
                                            "the ranks lack peer access to each other, or NCCL_CUMEM_ENABLE or "
                                            "NCCL_WIN_ENABLE is off)");
      }
      ncclWindow_vidmem w{};
      SINTER_CUDA_CHECK(cudaMemcpy(&w, window_, sizeof w, cudaMemcpyDeviceToHost));
      const ncclTeam lsa = lib.TeamLsa(comm_);
      if (w.lsaFlatBase == nullptr || w.stride4G == 0 || w.worldRank != s.rank || w.lsaRank != lsa.rank) {
        throw Error(ErrorCode::unsupported,
                    "NCCL's window record is not the layout Sinter reads (base " +
                        std::to_string(reinterpret_cast<uintptr_t>(w.lsaFlatBase)) + ", stride " +
                        std::to_string(w.stride4G) + " x 4 GiB, world rank " + std::to_string(w.worldRank) + " for rank " +
                        std::to_string(s.rank) + ", LSA rank " + std::to_string(w.lsaRank) + " for " +
                        std::to_string(lsa.rank) + ")");
      }
      for (int q = 0; q < s.world; ++q) {
        const uint64_t lsa = static_cast<uint64_t>(w.lsaRank + (q - w.worldRank));
        ranks_.push_back(w.lsaFlatBase + ((lsa * w.stride4G) << 32));
      }
    } catch (const Error& e) {
      release();
      throw Error(e.code(), what + ": " + e.message());
    }
  }
  ~WindowBuffer() override { release(); }
  const void* allocation() const override { return memory_; }

 private:
  void release() {
    const nccl::Library& lib = nccl::library();
    if (window_) lib.CommWindowDeregister(comm_, window_);
    if (memory_) lib.MemFree(memory_);
    window_ = nullptr;
    memory_ = nullptr;
  }
  std::shared_ptr<Communicator::State> state_;  // its communicator outlives the window
  ncclComm_t comm_ = nullptr;
  int device_ = 0;
  void* memory_ = nullptr;
  ncclWindow_t window_ = nullptr;
};

std::shared_ptr<SymmetricBuffer> allocate_virtual(Communicator::State& s, size_t bytes, const std::string& what) {
  VirtualGroup& g = *s.virtual_group;
  const size_t k = s.symmetric_allocations++;
  std::lock_guard lock(g.mutex);
  if (g.pending.size() <= k) {
    g.pending.resize(k + 1);
    g.taken.resize(k + 1, 0);
  }
  if (g.taken[k] == 0) {
    auto parts = std::make_shared<VirtualGroup::Parts>();
    parts->bytes = bytes;
    parts->what = what;
    parts->asked_by = s.rank;
    cuda::DeviceGuard guard(g.device);
    for (int r = 0; r < g.world; ++r) {
      parts->parts.emplace_back(bytes);
      parts->parts.back().memset(0);
    }
    g.pending[k] = std::move(parts);
  }
  const std::shared_ptr<VirtualGroup::Parts> parts = g.pending[k];
  if (!parts) {
    throw Error(ErrorCode::internal, "virtual group: allocation " + std::to_string(k) + " was already taken by every rank");
  }
  if (parts->bytes != bytes || parts->what != what) {
    throw Error(ErrorCode::invalid_argument,
                "virtual group: rank " + std::to_string(s.rank) + "'s symmetric allocation " + std::to_string(k) + " (" +
                    what + ") is " + std::to_string(bytes) + " bytes, but rank " + std::to_string(parts->asked_by) +
                    "'s (" + parts->what + ") is " + std::to_string(parts->bytes) +
                    ": the ranks' plans must be the same program, built in the same order");
  }
  if (++g.taken[k] == g.world) g.pending[k].reset();
  return std::make_shared<VirtualBuffer>(parts, s.rank);
}

}  // namespace

std::string symmetric_memory_problem(const Communicator::State* comm) {
  if (!comm || comm->virtual_group || comm->world == 1) return "";
  const nccl::Library& lib = nccl::library();
  if (!lib.loaded) return "NCCL not found (" + lib.reason + ")";
  if (!lib.windows_reason.empty()) return lib.windows_reason;
  const ncclTeam lsa = lib.TeamLsa(comm->comm);
  if (lsa.nRanks != comm->world) {
    return "the group's " + std::to_string(comm->world) + " ranks are not all load/store accessible to each other " +
           "(NCCL's LSA team of rank " + std::to_string(comm->rank) + " has " + std::to_string(lsa.nRanks) +
           "): in-kernel collectives need one NVLink domain";
  }
  return "";
}

std::shared_ptr<SymmetricBuffer> allocate_symmetric(const std::shared_ptr<Communicator::State>& comm, size_t bytes,
                                                    int device, const std::string& what) {
  if (!comm) return std::make_shared<PlainBuffer>(bytes, device);
  if (comm->virtual_group) return allocate_virtual(*comm, bytes, what);
  if (comm->world == 1 && !comm->comm) return std::make_shared<PlainBuffer>(bytes, comm->device);
  if (std::string why = symmetric_memory_problem(comm.get()); !why.empty()) {
    throw Error(ErrorCode::unsupported, what + ": " + why);
  }
  ++comm->symmetric_allocations;
  return std::make_shared<WindowBuffer>(comm, bytes, what);
}

}  // namespace sinter::comm

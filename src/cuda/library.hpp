// A cubin loaded with the runtime's library API (cudaLibraryLoadData, CUDA 12+): context
// independent, so one load serves every device, and no driver-API linking. Kernel is a handle into
// a Library and must not outlive it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace sinter::cuda {

struct LaunchConfig {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  std::size_t dynamic_shared_memory = 0;
  cudaStream_t stream = nullptr;
  // Thread block cluster shape (sm_90+); the grid must be a multiple of it.
  std::optional<dim3> cluster;
  // Every block resident at once (the megakernel's persistent grid); check occupancy first.
  bool cooperative = false;
  // Programmatic dependent launch (sm_90+): the kernel may be scheduled before its predecessor on
  // the stream ends; it must wait for it itself (kernels/common/pdl.cuh).
  bool programmatic = false;
};

class Kernel {
 public:
  Kernel() = default;
  Kernel(cudaKernel_t handle, std::string name) : handle_(handle), name_(std::move(name)) {}

  cudaKernel_t get() const { return handle_; }
  const std::string& name() const { return name_; }

  // Needed before launching with more than 48 KiB of dynamic shared memory; per device.
  void set_max_dynamic_shared_memory(int bytes, int device) const;
  // How many blocks of this kernel fit on one SM at once (0: the configuration cannot run).
  int max_active_blocks_per_sm(int block_threads, std::size_t dynamic_shared_memory) const;
  // How many clusters of `cluster` blocks can be resident on the device at once (0: none fit).
  // Below blocks-per-SM x SMs / cluster size where the SMs of a GPC do not divide into clusters.
  int max_active_clusters(dim3 cluster, int block_threads, std::size_t dynamic_shared_memory) const;
  cudaFuncAttributes attributes() const;
  // Loads the kernel into the current device's context now. Under lazy loading (CUDA's default)
  // the first launch loads it, and a load may wait for everything running on the device: a hang
  // where a kernel already running waits for this one (another virtual rank's megakernel).
  void load_here() const;

  // `args` points at one pointer per kernel parameter, each to that argument's value, as
  // cudaLaunchKernel expects. A failure names the kernel and the launch shape.
  void launch(const LaunchConfig& config, void** args) const;

 private:
  cudaKernel_t handle_ = nullptr;
  std::string name_;
};

class Library {
 public:
  // Loads a cubin (or fatbin, or NUL-terminated PTX). The bytes are not needed afterwards.
  static Library load(std::span<const char> image);

  Library() = default;
  ~Library();
  Library(Library&& other) noexcept;
  Library& operator=(Library&& other) noexcept;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  cudaLibrary_t get() const { return library_; }
  // Throws ErrorCode::cuda naming the kernel when the library has no such (extern "C") kernel.
  Kernel get_kernel(const std::string& name) const;
  // The device address and size of the library's __device__ variable `name`; {nullptr, 0} when
  // it has none.
  std::pair<void*, std::size_t> global(const std::string& name) const;
  // Lets `kernel` (one of this library's) launch with `bytes` of dynamic shared memory on
  // `device`. The attribute belongs to the loaded kernel, not to a launch, and several plan steps
  // can share one loaded cubin with different sizes: it is only ever raised, to the largest size
  // asked for, so one step's setting cannot make another's launch fail. Thread-safe.
  void allow_dynamic_shared_memory(const Kernel& kernel, int bytes, int device) const;

 private:
  explicit Library(cudaLibrary_t library) : library_(library) {}
  struct Limits {
    std::mutex mutex;
    std::map<std::pair<std::string, int>, int> dynamic_shared_memory;  // (kernel, device) -> bytes
  };
  cudaLibrary_t library_ = nullptr;
  std::unique_ptr<Limits> limits_ = std::make_unique<Limits>();
};

}  // namespace sinter::cuda

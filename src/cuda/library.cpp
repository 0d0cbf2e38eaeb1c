#include "cuda/library.hpp"

#include <cstdlib>
#include <string>
#include <utility>

#include "cuda/check.hpp"
#include "cuda/driver.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

std::string dims_text(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

}  // namespace

void Kernel::set_max_dynamic_shared_memory(int bytes, int device) const {
  check_runtime(cudaKernelSetAttributeForDevice(
                    handle_, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes, device),
                "cudaKernelSetAttributeForDevice(" + name_ +
                    ", cudaFuncAttributeMaxDynamicSharedMemorySize, " + std::to_string(bytes) +
                    ", device " + std::to_string(device) + ")",
                __FILE__, __LINE__);
}

int Kernel::max_active_blocks_per_sm(int block_threads, std::size_t dynamic_shared_memory) const {
  int blocks = 0;
  check_runtime(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &blocks, reinterpret_cast<const void*>(handle_), block_threads,
                    dynamic_shared_memory),
                "cudaOccupancyMaxActiveBlocksPerMultiprocessor(" + name_ + ", " +
                    std::to_string(block_threads) + " threads, " +
                    std::to_string(dynamic_shared_memory) + " bytes)",
                __FILE__, __LINE__);
  return blocks;
}

int Kernel::max_active_clusters(dim3 cluster, int block_threads, std::size_t dynamic_shared_memory) const {
  cudaLaunchConfig_t config{};
  config.gridDim = cluster;  // any grid that is a multiple of the cluster
  config.blockDim = dim3(static_cast<unsigned>(block_threads));
  config.dynamicSmemBytes = dynamic_shared_memory;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster.x;
  attribute.val.clusterDim.y = cluster.y;
  attribute.val.clusterDim.z = cluster.z;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  check_runtime(cudaOccupancyMaxActiveClusters(&clusters, reinterpret_cast<const void*>(handle_), &config),
                "cudaOccupancyMaxActiveClusters(" + name_ + ", cluster " + std::to_string(cluster.x) + "x" +
                    std::to_string(cluster.y) + "x" + std::to_string(cluster.z) + ", " +
                    std::to_string(block_threads) + " threads, " + std::to_string(dynamic_shared_memory) +
                    " bytes)",
                __FILE__, __LINE__);
  return clusters;
}

cudaFuncAttributes Kernel::attributes() const {
  cudaFuncAttributes result{};
  check_runtime(cudaFuncGetAttributes(&result, reinterpret_cast<const void*>(handle_)),
                "cudaFuncGetAttributes(" + name_ + ")", __FILE__, __LINE__);
  return result;
}

void Kernel::load_here() const {
  const DriverApi& d = driver();
  CUfunction function = nullptr;
  check_driver(d.kernel_get_function(&function, reinterpret_cast<CUkernel>(handle_)),
               "cuKernelGetFunction(" + name_ + ")", __FILE__, __LINE__);
  if (d.func_load) check_driver(d.func_load(function), "cuFuncLoad(" + name_ + ")", __FILE__, __LINE__);
}

void Kernel::launch(const LaunchConfig& config, void** args) const {
  cudaLaunchAttribute attributes[3];
  unsigned int count = 0;
  if (config.cluster) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = config.cluster->x;
    attributes[count].val.clusterDim.y = config.cluster->y;
    attributes[count].val.clusterDim.z = config.cluster->z;
    ++count;
  }
  if (config.cooperative) {
    attributes[count].id = cudaLaunchAttributeCooperative;
    attributes[count].val.cooperative = 1;
    ++count;
  }
  if (config.programmatic && !config.cooperative) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  cudaLaunchConfig_t launch{};
  launch.gridDim = config.grid;
  launch.blockDim = config.block;
  launch.dynamicSmemBytes = config.dynamic_shared_memory;
  launch.stream = config.stream;
  launch.attrs = count ? attributes : nullptr;
  launch.numAttrs = count;
  // The runtime accepts a cudaKernel_t wherever it takes a kernel as const void*.
  cudaError_t status = cudaLaunchKernelExC(&launch, reinterpret_cast<const void*>(handle_), args);
  if (status != cudaSuccess) {
    std::string call = "cudaLaunchKernelExC(" + name_ + ", grid " + dims_text(config.grid) +
                       ", block " + dims_text(config.block) + ", " +
                       std::to_string(config.dynamic_shared_memory) + " bytes dynamic smem";
    if (config.cluster) call += ", cluster " + dims_text(*config.cluster);
    if (config.cooperative) call += ", cooperative";
    throw_runtime_error(status, call + ")", __FILE__, __LINE__);
  }
}

Library Library::load(std::span<const char> image) {
  if (image.empty()) throw Error(ErrorCode::invalid_argument, "cannot load an empty CUDA binary");
  cudaLibrary_t library = nullptr;
  SINTER_CUDA_CHECK(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr,
                                        nullptr, 0));
  return Library(library);
}

Library::~Library() {
  if (library_) cudaLibraryUnload(library_);
}

Library::Library(Library&& other) noexcept
    : library_(std::exchange(other.library_, nullptr)), limits_(std::move(other.limits_)) {}

Library& Library::operator=(Library&& other) noexcept {
  if (this != &other) {
    if (library_) cudaLibraryUnload(library_);
    library_ = std::exchange(other.library_, nullptr);
    limits_ = std::move(other.limits_);  // a moved-from Library holds nothing to launch
  }
  return *this;
}

void Library::allow_dynamic_shared_memory(const Kernel& kernel, int bytes, int device) const {
  if (!limits_) throw Error(ErrorCode::internal, "allow_dynamic_shared_memory on a moved-from Library");
  std::lock_guard<std::mutex> lock(limits_->mutex);
  int& allowed = limits_->dynamic_shared_memory[{kernel.name(), device}];
  if (bytes <= allowed) return;
  kernel.set_max_dynamic_shared_memory(bytes, device);
  allowed = bytes;
}

std::pair<void*, std::size_t> Library::global(const std::string& name) const {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  if (cudaLibraryGetGlobal(&ptr, &bytes, library_, name.c_str()) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    return {nullptr, 0};
  }
  return {ptr, bytes};
}

Kernel Library::get_kernel(const std::string& name) const {
  cudaKernel_t handle = nullptr;
  check_runtime(cudaLibraryGetKernel(&handle, library_, name.c_str()),
                "cudaLibraryGetKernel(\"" + name + "\")", __FILE__, __LINE__);
  return Kernel(handle, name);
}

}  // namespace sinter::cuda

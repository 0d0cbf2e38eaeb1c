// Communicator (sinter/communicator.hpp): NCCL communicators made with ncclCommInitRank (one
// process per GPU) or ncclCommInitAll (one process, every local GPU), NCCL loaded at run time.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "comm/communicator_state.hpp"
#include "comm/nccl_library.hpp"
#include "comm/virtual_group.hpp"
#include "cuda/device.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorCode::invalid_argument, "communicator: " + what); }

// NVLink multicast (NVLS) is not allowed on our machines: NCCL reads NCCL_NVLS_ENABLE when a
// communicator is made, so it is set first, unless the user set it.
void disable_nvls() {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
}

void check_device(int device, const char* what) {
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (!gpu.available) throw Error(ErrorCode::cuda, std::string("communicator: ") + what + " needs a GPU: " + gpu.reason);
  if (device < 0 || device >= gpu.device_count) {
    bad(std::string(what) + ": GPU " + std::to_string(device) + " does not exist; this machine has " +
        std::to_string(gpu.device_count) + " (0.." + std::to_string(gpu.device_count - 1) + ")");
  }
}

}  // namespace

Communicator::State::~State() {
  if (comm && nccl::library().loaded) nccl::library().CommDestroy(comm);
}

NcclStatus nccl_status() {
  const nccl::Library& lib = nccl::library();
  NcclStatus s;
  s.available = lib.loaded;
  s.path = lib.path;
  s.reason = lib.reason;
  if (lib.loaded) s.version = nccl::version_string(lib.version);
  return s;
}

NcclUniqueId Communicator::unique_id() {
  const nccl::Library& lib = nccl::require_library();
  ncclUniqueId id{};
  SINTER_NCCL_CHECK(lib.GetUniqueId(&id));
  NcclUniqueId out;
  static_assert(sizeof(id.internal) == sizeof(out.bytes));
  std::memcpy(out.bytes.data(), id.internal, sizeof id.internal);
  return out;
}

Communicator Communicator::create(int rank, int world, const NcclUniqueId& id, int device) {
  if (world < 1) bad("world " + std::to_string(world) + " must be at least 1");
  if (rank < 0 || rank >= world) {
    bad("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world) + ") for world " + std::to_string(world));
  }
  const nccl::Library& lib = nccl::require_library();
  check_device(device, "create");
  disable_nvls();
  ncclUniqueId nid{};
  std::memcpy(nid.internal, id.bytes.data(), sizeof nid.internal);
  auto s = std::make_shared<State>();
  s->rank = rank;
  s->world = world;
  s->device = device;
  cuda::DeviceGuard guard(device);
  SINTER_NCCL_CHECK(lib.CommInitRank(&s->comm, world, nid, rank));
  return Communicator(std::move(s));
}

std::vector<Communicator> Communicator::create_local(const std::vector<int>& devices) {
  if (devices.empty()) bad("create_local needs at least one device");
  std::set<int> seen;
  for (int d : devices) {
    if (!seen.insert(d).second) bad("create_local: GPU " + std::to_string(d) + " is named twice");
  }
  const nccl::Library& lib = nccl::require_library();
  for (int d : devices) check_device(d, "create_local");
  disable_nvls();
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  SINTER_NCCL_CHECK(lib.CommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  std::vector<Communicator> out;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto s = std::make_shared<State>();
    s->comm = comms[i];
    s->rank = static_cast<int>(i);
    s->world = static_cast<int>(devices.size());
    s->device = devices[i];
    out.push_back(Communicator(std::move(s)));
  }
  return out;
}

std::vector<Communicator> Communicator::create_virtual(int world, int device) {
  if (world < 1) bad("create_virtual: world " + std::to_string(world) + " must be at least 1");
  check_device(device, "create_virtual");
  auto group = std::make_shared<comm::VirtualGroup>();
  group->world = world;
  group->device = device;
  std::vector<Communicator> out;
  for (int r = 0; r < world; ++r) {
    auto s = std::make_shared<State>();
    s->virtual_group = group;
    s->rank = r;
    s->world = world;
    s->device = device;
    out.push_back(Communicator(std::move(s)));
  }
  return out;
}

namespace {
const Communicator::State& state_of(const std::shared_ptr<Communicator::State>& s) {
  if (!s) throw Error(ErrorCode::invalid_state, "communicator: an empty Communicator (default-constructed) has no group");
  return *s;
}
}  // namespace

int Communicator::rank() const { return state_of(state_).rank; }
int Communicator::world() const { return state_of(state_).world; }
int Communicator::device() const { return state_of(state_).device; }
bool Communicator::is_virtual() const { return state_of(state_).virtual_group != nullptr; }

std::string Communicator::describe() const {
  if (!state_) return "no communicator";
  return std::string(state_->virtual_group ? "virtual rank " : "rank ") + std::to_string(state_->rank) + " of " + std::to_string(state_->world) + " on GPU " +
         std::to_string(state_->device);
}

}  // namespace sinter

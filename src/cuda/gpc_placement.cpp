#include "cuda/gpc_placement.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/library.hpp"
#include "cuda/stream.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

// Thread 0 of CTA i writes its SM to out[i], then every CTA waits `spin_ns` so that all of them
// hold their SMs at once (none leaves an SM for a later CTA of the same launch); the wait also
// ends after a million polls of the clock, so it cannot hang. Hand-written PTX: it needs neither
// NVRTC nor the kernel cache, and the driver compiles it once at load.
constexpr char kRecordSmPtx[] = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry sinter_record_sm(.param .u64 out, .param .u64 spin_ns)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<8>;
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p0, %r0, 0;
  @%p0 bra DONE;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %smid;
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd1, %rd0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
DONE:
  ld.param.u64 %rd4, [spin_ns];
  mov.u64 %rd5, %globaltimer;
  mov.u32 %r1, 0;
WAIT:
  add.u32 %r1, %r1, 1;
  setp.gt.u32 %p0, %r1, 1000000;
  @%p0 bra END;
  mov.u64 %rd6, %globaltimer;
  sub.s64 %rd7, %rd6, %rd5;
  setp.lt.s64 %p1, %rd7, %rd4;
  @%p1 bra WAIT;
END:
  ret;
}
)";

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(static_cast<size_t>(n)) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  }
  void join(int a, int b) { parent[static_cast<size_t>(find(a))] = find(b); }
};

class Recorder {
 public:
  explicit Recorder(int device)
      : device_(device),
        library_(Library::load(std::span<const char>(kRecordSmPtx, sizeof kRecordSmPtx))),
        kernel_(library_.get_kernel("sinter_record_sm")) {
    const DeviceProperties p = device_properties(device);
    sm_count_ = p.sm_count;
    // one CTA an SM, as a persistent GEMM's
    smem_ = static_cast<int>(p.max_shared_memory_per_block_optin);
    library_.allow_dynamic_shared_memory(kernel_, smem_, device);
    out_ = DeviceBuffer(static_cast<size_t>(sm_count_) * sizeof(int));
  }
  // (its own non-blocking stream, and no device-wide synchronization: another thread may be
  // capturing a CUDA graph on this GPU: a Runner in graph mode)
  int sm_count() const { return sm_count_; }
  int max_clusters(int size) const {
    return size == 1 ? kernel_.max_active_blocks_per_sm(kThreads, static_cast<size_t>(smem_)) * sm_count_
                     : kernel_.max_active_clusters(dim3(static_cast<unsigned>(size)), kThreads, static_cast<size_t>(smem_));
  }
  // The SM of each CTA of `clusters` clusters of `size` CTAs.
  std::vector<int> record(int size, int clusters) {
    const int ctas = size * clusters;
    if (ctas > sm_count_) {  // one CTA an SM: a larger grid would not be resident at once
      throw Error(ErrorCode::internal, "GPC placement probe: " + std::to_string(ctas) + " CTAs for " +
                                           std::to_string(sm_count_) + " SMs");
    }
    out_.memset_async(0xff, stream_);
    LaunchConfig config;
    config.grid = dim3(static_cast<unsigned>(ctas));
    config.block = dim3(kThreads);
    config.dynamic_shared_memory = static_cast<size_t>(smem_);
    config.stream = stream_;
    if (size > 1) config.cluster = dim3(static_cast<unsigned>(size));
    void* out = out_.data();
    unsigned long long spin_ns = 20000;
    void* args[] = {&out, &spin_ns};
    kernel_.launch(config, args);
    std::vector<int> sms(static_cast<size_t>(ctas));
    out_.copy_to_host_async(sms.data(), sms.size() * sizeof(int), stream_);
    stream_.synchronize();
    for (int s : sms) {
      if (s < 0 || s >= sm_count_) {
        throw Error(ErrorCode::cuda, "GPC placement probe: a CTA recorded SM " + std::to_string(s) + " of " +
                                         std::to_string(sm_count_) + " on device " + std::to_string(device_));
      }
    }
    return sms;
  }

 private:
  static constexpr int kThreads = 32;
  int device_;
  Library library_;
  Kernel kernel_;
  int sm_count_ = 0, smem_ = 0;
  DeviceBuffer out_;
  Stream stream_;
};

std::vector<int> measure(int device, int cluster_size) {
  DeviceGuard guard(device);
  Recorder rec(device);
  UnionFind gpc(rec.sm_count());
  for (int size = 8; size >= 2; --size) {
    const int n = rec.max_clusters(size);
    for (int round = 0; round < 2 && n > 0; ++round) {
      const std::vector<int> sms = rec.record(size, n);
      for (int c = 0; c < n; ++c) {
        for (int i = 1; i < size; ++i) gpc.join(sms[static_cast<size_t>(c * size)], sms[static_cast<size_t>(c * size + i)]);
      }
    }
  }
  const std::vector<int> sms = rec.record(cluster_size, rec.max_clusters(cluster_size));
  std::vector<int> result;
  std::map<int, int> number;  // union-find root -> GPC index in order of first appearance
  for (size_t c = 0; c < sms.size(); c += static_cast<size_t>(cluster_size)) {
    const int root = gpc.find(sms[c]);
    const auto it = number.try_emplace(root, static_cast<int>(number.size())).first;
    result.push_back(it->second);
  }
  return result;
}

}  // namespace

const std::vector<int>& cluster_gpcs(int device, int cluster_size) {
  if (cluster_size != 1 && cluster_size != 2) {
    throw Error(ErrorCode::invalid_argument, "cluster_gpcs: clusters of 1 or 2 CTAs, not " + std::to_string(cluster_size));
  }
  // a failure is kept too, so a GPU where the probe cannot run pays for it once
  struct Result {
    std::vector<int> gpcs;
    std::string error;
  };
  static std::mutex mutex;
  static std::map<std::pair<int, int>, Result> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, cluster_size);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Result r;
    try {
      r.gpcs = measure(device, cluster_size);
    } catch (const Error& e) {
      r.error = e.what();
    }
    it = cache.emplace(key, std::move(r)).first;
  }
  if (!it->second.error.empty()) throw Error(ErrorCode::cuda, it->second.error);
  return it->second.gpcs;
}

}  // namespace sinter::cuda

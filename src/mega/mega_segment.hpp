// One megakernel segment at run time: the task graph and schedule of a run of plan steps, the
// compiled megakernel, and its device tables, arguments, counters and watchdog record. The
// runner (src/exec/runner.cpp) makes one per segment of a plan in mega mode, binds the steps'
// pointers into it, and launches it where the steps would have been launched one by one.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda/buffer.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "cuda/library.hpp"
#include "mega/queue_image.hpp"
#include "mega/schedule.hpp"
#include "mega/task_graph.hpp"
#include "sinter/runner.hpp"

#include "mega/mega_abi.h"

namespace sinter::comm {
class SymmetricBuffer;
}

namespace sinter::mega {

struct SegmentOptions {
  double watchdog_ms = 5000;  // the longest a task waits for a producer before the launch aborts
  bool trace = false;         // record every task's start, end and SM
  MegaFault inject = MegaFault::none;  // a fault planted in the tables (the watchdog's tests)
  int sm_count = 0;           // SMs the megakernel spreads over (0: the device's)
};

// A finished task as the trace recorded it.
struct TaskEvent {
  unsigned kernel = 0, block = 0;  // task kernel and block
  unsigned cta = 0, sm = 0;
  unsigned long long start_ns = 0, end_ns = 0, waited_ns = 0;
};

class Segment {
 public:
  // The megakernel of `graph` (generated `source`) on `device`: `library` when the plan holds its
  // cubin, else compiled through `cache`; its tables uploaded. Error(unsupported) when one CTA
  // does not fit on an SM.
  Segment(TaskGraph graph, std::string source, std::vector<MegaStep*> steps,
          std::shared_ptr<const cuda::Library> library, cuda::KernelCache* cache, const cuda::DeviceProperties& device,
          const SegmentOptions& options);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // The arguments of every task kernel for these bindings (one per segment step), uploaded on
  // `stream` after the launches already queued there have finished with the previous ones.
  void bind(const std::vector<const Binding*>& bindings, cudaStream_t stream);
  void launch(cudaStream_t stream);
  // Error(timeout) with the watchdog's record when a launch aborted (then the counters are reset
  // on `stream`, so the next launch starts clean; a segment with collectives among several ranks
  // cannot be reset alone and refuses to launch again). Reads host memory only: call it after
  // the launches it should cover have finished.
  void check(cudaStream_t stream);
  // The trace of the last launch (SegmentOptions::trace), after it finished.
  std::vector<TaskEvent> trace() const;

  const TaskGraph& graph() const { return graph_; }
  const Schedule& schedule() const { return schedule_; }
  const std::string& source() const { return source_; }
  int threads() const { return static_cast<int>(graph_.max_threads); }
  size_t shared_memory_bytes() const { return shared_bytes_; }
  size_t chunk_bytes() const { return chunk_bytes_; }      // each of the dispatcher's two queue buffers
  size_t queue_chunks() const { return image_.chunks; }     // over all CTAs
  double compile_ms() const { return compile_ms_; }
  bool from_plan() const { return from_plan_; }  // loaded from the plan's cubin, not compiled
  size_t counter_waits() const { return counter_waits_; }
  size_t waitless_tasks() const { return waitless_tasks_; }
  int world() const { return world_; }  // ranks of its collectives' group (1: none, or world 1)

 private:
  void reset(cudaStream_t stream);

  TaskGraph graph_;
  Schedule schedule_;
  std::vector<MegaStep*> steps_;
  SegmentOptions options_;
  std::string source_;
  std::shared_ptr<const cuda::Library> library_;
  cuda::Kernel kernel_;
  int device_ = 0;
  size_t shared_bytes_ = 0;
  size_t dynamic_bytes_ = 0;  // the tasks' dynamic shared memory, then the two chunk buffers at chunk_at_
  size_t chunk_at_ = 0, chunk_bytes_ = 0;
  double compile_ms_ = 0;
  bool from_plan_ = false;
  size_t counter_waits_ = 0, waitless_tasks_ = 0;
  std::string name_;  // "megakernel of steps A..B"
  QueueImage image_;                 // the CTAs' queues; bind writes the arguments into it
  std::vector<unsigned> queued_;     // the schedule's index of each queued task, in queue order (trace slots)
  cuda::DeviceBuffer queues_, image_device_, trace_;
  // The counters: symmetric memory of the collectives' group (other ranks add arrivals to them),
  // plain memory without one; and every rank's counters by rank on the device.
  std::shared_ptr<comm::SymmetricBuffer> rank_counters_;
  cuda::DeviceBuffer rank_counter_table_;
  unsigned long long* counters_at_ = nullptr;  // this rank's counters and control words
  size_t counters_bytes_ = 0;
  int world_ = 1, rank_ = 0;
  bool cooperative_ = true;
  std::string group_;           // the collectives' group ("" none)
  std::string broken_;          // why it cannot launch again (a timed-out launch among ranks)
  SinterMegaFault* fault_ = nullptr;  // host-mapped
  void* fault_device_ = nullptr;
};

}  // namespace sinter::mega

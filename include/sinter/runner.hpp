// A Runner runs a Plan on the caller's device memory and CUDA stream (the execution context of
// TensorRT, the "execute" stage of cudnn-frontend). Bind every graph input and output by name,
// then enqueue as often as needed; rebinding between enqueues is cheap.
//
//   sinter::Runner runner(plan);                       // loads the plan's kernels, allocates its memory
//   runner.set_tensor_address("x", x_dev);             // every input and output of the graph
//   runner.set_tensor_address("y", y_dev);
//   runner.enqueue(stream);                            // asynchronous, like a kernel launch
//
// In graph mode the first enqueue captures the plan's launches into a CUDA graph and later ones
// replay it with one cudaGraphLaunch; a changed address is applied by updating the instantiated
// graph in place (cudaGraphExecUpdate), not by capturing again.
//
// A Runner is used by one thread at a time. Several runners may share one Plan, each with its own
// memory, on different threads.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sinter/communicator.hpp"
#include "sinter/log.hpp"
#include "sinter/plan.hpp"

namespace sinter {

// stream: each step launched on the stream. graph: the steps captured once into a CUDA graph and
// replayed (rebinding updates the graph). mega: every run of steps our kernels can run as tasks
// becomes one persistent megakernel (a segment); the other steps (vendor libraries) run between
// segments on the stream.
enum class ExecMode { stream, graph, mega };

// Diagnostics for the watchdog's tests: a fault planted in every megakernel's tables.
enum class MegaFault {
  none,
  missing_producer,  // the tasks of one producer kernel are in no CTA's queue: its consumers wait forever
  wrong_count,       // one wait's target is one task more than its producer has
};

// Which segments a mega-mode runner launches as megakernels.
enum class MegaSegments {
  // Each as its megakernel, except where the plan measured the segment's steps, launched one by
  // one, faster (a plan compiled with CompileOptions::megakernels and a timing tune mode): those
  // steps run on their own (MegaDescription::outside says so, with the two times).
  as_planned,
  all_megakernels,  // every segment as its megakernel
};

// Mega mode's settings.
struct MegaOptions {
  // The longest a task waits for its producers before the launch stops every CTA and the runner
  // raises Error(timeout) with what it waited for.
  double watchdog_ms = 5000;
  // Record every task's start, end and SM (Runner::mega_trace).
  bool trace = false;
  // Where the megakernels are compiled and cached; "" the default kernel cache
  // (default_kernel_cache_dir()).
  std::string kernel_cache_dir;
  MegaSegments segments = MegaSegments::as_planned;
  MegaFault inject = MegaFault::none;  // tests only
  // SMs the megakernels spread over (0: all of the GPU's). Virtual ranks share one GPU
  // (Communicator::create_virtual): give each rank's runner its share, at most the GPU's SMs /
  // world (a mega-mode runner bound to a virtual group refuses more, or 0).
  int sm_count = 0;
};

// A task the megakernel ran, as the trace recorded it (MegaOptions::trace).
struct MegaTaskEvent {
  int segment = 0;
  int step = 0;          // plan step
  int kernel = 0;        // kernel of the step
  int block = 0;         // the task's block (one CTA of the step's standalone kernel)
  int cta = 0, sm = 0;   // who ran it
  uint64_t start_ns = 0, end_ns = 0;  // %globaltimer
  uint64_t waited_ns = 0;             // for its producers, before it started
};

// The segments of a mega-mode runner.
struct MegaSegmentDescription {
  std::vector<int> steps;         // plan steps run as tasks (alias steps included: they launch nothing)
  struct TaskKernel {
    int step = 0, kernel = 0;
    std::string description;
    int tasks = 0, threads = 0;
    int function = 0;             // the generated task function it runs
    std::vector<int> waits;       // task kernels (indices in this segment) some of its tasks wait for
    int dependents = 0;           // task kernels that wait for it
    int range_counters = 0;       // counters over ranges of its blocks (consumers that need part of it)
  };
  std::vector<TaskKernel> kernels;
  int functions = 0, tasks = 0, ctas = 0, threads = 0;
  int counters = 0;               // whole-grid and range counters
  int counter_waits = 0;          // counter waits in the CTAs' queues (a wait an earlier task of the CTA made is not repeated)
  int waitless_tasks = 0;         // tasks that wait on no counter (none needed, or their producers ran before them on their CTA)
  size_t shared_memory_bytes = 0;
  int queue_chunks = 0;           // the CTAs' task queues cut into chunks (each copied into shared memory whole)
  size_t chunk_bytes = 0;         // the most a chunk holds (each of a CTA's two chunk buffers)
  double critical_path_us = 0;    // the cost model's longest dependency chain
  double estimated_us = 0;        // the cost model's time of the schedule
  int max_queue = 0, min_queue = 0;  // tasks on the busiest and idlest CTA
  double compile_ms = 0;          // compiling or loading it from the kernel cache
};
struct MegaDescription {
  std::vector<MegaSegmentDescription> segments;
  struct Outside {
    int step = 0;
    std::string why;              // why it runs as a kernel of its own
  };
  std::vector<Outside> outside;
};

// One megakernel segment timed both ways (Runner::time_mega_segments).
struct MegaSegmentTiming {
  std::vector<int> steps;       // its plan steps
  std::string source_sha256;    // its megakernel's source (the key of the plan's record)
  double megakernel_ms = 0;     // its megakernel launched alone, median
  double steps_ms = 0;          // its steps launched one by one, median
  bool launched_as_steps = false;  // what this runner launches
};

struct RunnerOptions {
  ExecMode mode = ExecMode::stream;
  // The plan's intermediates and step workspaces (PlanDescription::memory.device_bytes) in the
  // caller's memory: 256-byte aligned, on `device`, at least that large, and used by nothing else
  // while the runner lives. Null: the runner allocates its own.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int device = 0;
  LogCallback on_log;  // what loading did (rebuilt vendor configs, another SM count); graph mode's fallbacks
  MegaOptions mega;    // ExecMode::mega
  // ExecMode::graph: the most streams the graph's steps are captured on. Steps with no data
  // dependency between them (neither writes memory the other reads or writes) sit on separate
  // branches of the graph and may run at the same time; 1 captures one chain in step order. Where
  // the driver refuses a capture on several streams, the runner captures one chain and says so
  // through on_log (RunnerStats::capture_streams is then 1).
  int graph_streams = 4;
  // The communicator of each group the plan's collectives name (sinter/communicator.hpp): group
  // -> communicator, each on `device` with the world the graph gives that group. Groups whose
  // collectives all have world 1 need none. Not part of the plan: bound here, per runner.
  CommunicatorBindings communicators;
};

struct RunnerStats {
  int enqueues = 0;
  int captures = 0;          // graph mode: launches recorded into a graph
  int instantiations = 0;    // graph mode: cudaGraphInstantiate calls
  int updates = 0;           // graph mode: address changes applied by cudaGraphExecUpdate
  int refused_updates = 0;   // updates the driver refused (the graph was instantiated again)
  int capture_streams = 0;   // graph mode: the streams the last capture used (its branches)
  int capture_launches = 0;  // graph mode: the steps the last capture launched (aliases launch nothing)
  int capture_chain = 0;     // graph mode: of those, the most on one path of their dependencies
  double load_ms = 0;        // wall time of the constructor
};

class Runner {
 public:
  // Loads every step (no compilation) and, without RunnerOptions::workspace, allocates the
  // plan's memory. Error(corrupt_bundle) when the plan was built for another GPU architecture,
  // Error(unsupported) naming the step when this GPU or library cannot run it (NCCL missing for a
  // collective), Error(invalid_argument) naming the step and group for a collective whose
  // communicator is missing, of another world or on another GPU, and naming the group for a
  // communicator bound to a group no collective uses; Error(cuda) when memory runs out.
  explicit Runner(const Plan& plan, const RunnerOptions& options = {});
  ~Runner();
  Runner(Runner&&) noexcept;
  Runner& operator=(Runner&&) noexcept;
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const Plan& plan() const;

  // Binds graph input or output `name` to device memory laid out as the graph declares it (its
  // dims and strides). Error(invalid_argument) naming the tensor for an unknown name, an
  // intermediate, an output that is a reshape sharing another tensor's memory, a pointer that is
  // not 256-byte aligned or not device memory of this runner's GPU.
  void set_tensor_address(const std::string& name, const void* address);
  // The bound address, or null.
  const void* tensor_address(const std::string& name) const;

  // Enqueues the plan on `stream` (on this runner's device). Error(invalid_state) naming every
  // input and output still unbound. In mega mode, the first enqueue after binding uploads the
  // tasks' arguments and waits for the stream (enqueue once before capturing the runner into a
  // CUDA graph); it raises a megakernel watchdog error of an earlier launch (see check). A
  // mega-mode runner bound to a virtual group (Communicator::create_virtual) whose plan has a step
  // outside the megakernel refuses every enqueue with Error(unsupported) naming those steps
  // (docs/multi-gpu.md); made, described and traced it works as any other.
  void enqueue(cudaStream_t stream);
  // Mega mode: Error(timeout) when a megakernel launch that has finished was stopped by its
  // watchdog, with the record of what waited for what (the runner is then reset and usable).
  // Reads host memory only: synchronize the stream first. Does nothing in other modes.
  void check();
  // Mega mode: the segments, their task kernels and the steps outside them.
  MegaDescription mega_description() const;
  // Mega mode with MegaOptions::trace: the tasks of the last enqueue, after it finished.
  std::vector<MegaTaskEvent> mega_trace() const;
  // Mega mode: every megakernel segment (also those this runner launches as steps) timed on
  // `stream` as its megakernel launched alone and as its steps launched one by one, the median
  // of `iters` each, after one enqueue of the whole plan. Error(invalid_state) in other modes,
  // Error(timeout) when a megakernel's watchdog stopped it. A plan with collectives over several
  // ranks: every rank's runner must call it at once (each segment waits for the other ranks).
  std::vector<MegaSegmentTiming> time_mega_segments(cudaStream_t stream, int iters);

  RunnerStats stats() const;
  // What loading did besides loading kernels, one line each.
  const std::vector<std::string>& load_notes() const;

  // Diagnostics. Fills every intermediate tensor's memory with 0xFF bytes (NaN for floats), so a
  // value a kernel fails to write cannot pass for a correct one.
  void poison_intermediates(cudaStream_t stream);
  // Median milliseconds of each step launched alone on `stream`, `iters` times after a warm-up,
  // CUDA events around each launch.
  std::vector<float> time_steps(cudaStream_t stream, int iters);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sinter

// The one runtime: a Plan run on bound device memory, step by step on a stream or replayed as a
// CUDA graph (sinter/runner.hpp). Loading rebuilds each step from its record through its engine
// (no compilation); enqueueing launches the steps with pointers resolved once per binding.
#include "sinter/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <set>

#include "cuda/buffer.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/event.hpp"
#include "cuda/stream.hpp"
#include "cuda/timing.hpp"
#include "engines/registry.hpp"
#include "exec/graph_branches.hpp"
#include "exec/mega_runtime.hpp"
#include "plan/memory_plan.hpp"
#include "plan/plan_state.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Owns a cudaGraph_t for one scope.
struct GraphHolder {
  cudaGraph_t g = nullptr;
  ~GraphHolder() {
    if (g) cudaGraphDestroy(g);
  }
};

// Why `address` cannot hold a tensor on `device`, or "".
std::string device_memory_problem(const void* address, int device) {
  if (reinterpret_cast<uintptr_t>(address) % plan::kArenaAlignment != 0) {
    return "is not " + std::to_string(plan::kArenaAlignment) + "-byte aligned, as the plan's kernels assume";
  }
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, address) != cudaSuccess) {
    (void)cudaGetLastError();
    return "is not memory CUDA knows";
  }
  if (a.type == cudaMemoryTypeHost) return "is pinned host memory, not device memory";
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) {
    return "is not device memory (host memory CUDA does not know)";
  }
  if (a.type == cudaMemoryTypeDevice && a.device != device) {
    return "is memory of GPU " + std::to_string(a.device) + "; this runner runs on GPU " + std::to_string(device);
  }
  return "";
}

// Every bound communicator must serve a group the graph's collectives name: a binding to any
// other group is a misspelt name or the wrong plan, which would otherwise surface as "no
// communicator is bound" for the right one, or not at all.
// A virtual group (ranks sharing one GPU) exchanges only inside megakernels.
void check_communicator_groups(const Graph& g, const CommunicatorBindings& bound, ExecMode mode) {
  std::set<std::string> groups;
  for (const Node& n : g.nodes()) {
    if (const auto* at = std::get_if<CollectiveAttrs>(&n.attrs)) groups.insert(at->group);
  }
  for (const auto& [group, comm] : bound) {
    if (!comm.valid()) {
      throw Error(ErrorCode::invalid_argument, "runner: the communicator bound to group '" + group +
                                                   "' is empty (default-constructed); make it with "
                                                   "Communicator::create or create_local");
    }
    if (comm.is_virtual() && comm.world() > 1 && mode != ExecMode::mega && groups.count(group)) {
      throw Error(ErrorCode::invalid_argument,
                  "runner: group '" + group + "' is bound to a virtual group (" + comm.describe() +
                      "), whose collectives run only as megakernel tasks: use ExecMode::mega");
    }
    if (groups.count(group)) continue;
    std::string known;
    for (const std::string& k : groups) known += (known.empty() ? "'" : ", '") + k + "'";
    throw Error(ErrorCode::invalid_argument,
                "runner: a communicator (" + comm.describe() + ") is bound to group '" + group + "', which no collective of graph '" +
                    g.name() + "' uses (" + (known.empty() ? "it has no collectives" : "its groups: " + known) + ")");
  }
}

// Virtual ranks share one GPU: each rank's megakernels must leave the others room, or the ranks
// could not all be resident and would end in the watchdog instead of this message.
void check_virtual_share(const CommunicatorBindings& bound, ExecMode mode, const MegaOptions& mega,
                         const cuda::DeviceProperties& dev) {
  if (mode != ExecMode::mega) return;
  for (const auto& [group, comm] : bound) {
    if (!comm.valid() || !comm.is_virtual() || comm.world() <= 1) continue;
    const int share = dev.sm_count / comm.world();
    if (mega.sm_count <= 0 || mega.sm_count > share) {
      throw Error(ErrorCode::invalid_argument,
                  "runner: group '" + group + "' is bound to " + comm.describe() + ", whose " +
                      std::to_string(comm.world()) + " ranks share this GPU's " + std::to_string(dev.sm_count) +
                      " SMs: set MegaOptions::sm_count to at most " + std::to_string(share) + " (it is " +
                      (mega.sm_count <= 0 ? std::string("0: every SM") : std::to_string(mega.sm_count)) + ")");
    }
  }
}

// Virtual ranks share one GPU, so a rank's program must be its megakernel's tasks alone: a step
// launched on its own could need SMs that another rank's resident megakernel holds while that
// megakernel waits for this rank, and both would end in the watchdog. (Separate GPUs have no
// such limit.) "" when the runner may launch; else why not. Checked at enqueue, not when the
// runner is made: describing such a plan is fine, and every rank's runner still takes its part of
// the group's symmetric memory, so the ranks' allocations stay paired.
std::string virtual_ranks_refusal(const CommunicatorBindings& bound, const MegaRuntime& runtime,
                                  const plan::Plan& data) {
  for (const auto& [group, comm] : bound) {
    if (!comm.valid() || !comm.is_virtual() || comm.world() <= 1) continue;
    const MegaDescription mega = runtime.describe();
    if (mega.outside.empty()) return "";
    std::string steps;
    for (const MegaDescription::Outside& o : mega.outside) {
      steps += (steps.empty() ? "" : "; ") + std::string("step ") + std::to_string(o.step) + " (" +
               data.steps.at(static_cast<size_t>(o.step)).engine + ": " +
               data.steps.at(static_cast<size_t>(o.step)).description + ") because " + o.why;
    }
    return "runner: group '" + group + "' is bound to " + comm.describe() + ", whose ranks share one GPU, so "
           "every step of a rank's program must run inside its megakernel; a step launched on its own could wait "
           "for SMs held by another rank's megakernel, which waits for this rank. Outside the megakernel: " +
           steps + ". Compile the ranks' plan with our kernels only (CompileOptions::engines = {\"jit\"}) and "
           "candidates the megakernel takes";
  }
  return "";
}

}  // namespace

struct Runner::State {
  Plan handle;  // keeps the plan's state alive
  const plan::Plan& data;
  fuse::Partition partition;
  int device;
  ExecMode mode;
  CommunicatorBindings communicators;  // by group, for the collective steps
  std::vector<std::unique_ptr<PreparedStep>> steps;
  std::vector<std::string> notes;
  cuda::DeviceBuffer owned;  // the plan's memory when the caller gave none
  char* memory = nullptr;
  std::map<std::string, TensorId> bindable;  // graph inputs and outputs by name
  std::vector<TensorId> alias_of;            // by tensor id, -1: none
  std::vector<const void*> bound;            // by tensor id
  std::vector<Binding> bindings;             // by step, resolved from `bound`
  bool stale = true;                         // `bound` changed since `bindings` were resolved
  bool workspace_zeroed = false;

  // The megakernels' watchdog record of the launches before (Error(timeout) when one aborted). An
  // aborted launch may leave a step's workspace mid-count (split-K and stream-K combine
  // counters): it is zeroed again before the next launch.
  void check_mega(cudaStream_t stream) {
    try {
      mega->check(stream);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::timeout) workspace_zeroed = false;
      throw;
    }
  }
  // Where the intermediates live: the plan's arena layout, or in mega mode every stored tensor in
  // a slot of its own (tasks of different steps run at once, so no two tensors may share bytes);
  // the step workspaces follow at workspace_base.
  std::vector<plan::BufferAssignment> buffers;
  uint64_t workspace_base = 0;
  std::unique_ptr<MegaRuntime> mega;  // mega mode
  std::string refusal;                // why enqueue refuses ("" it launches): virtual_ranks_refusal
  bool mega_bound = false;            // the megakernels hold the current bindings' arguments
  cuda::Stream capture_stream{cudaStreamNonBlocking};
  // graph mode: the steps' branches (from the bindings, so recomputed with them), the extra
  // capture streams and an event per step that another branch waits for
  int graph_streams = 1;
  LogCallback on_log;  // RunnerOptions::on_log: a capture on branches that fell back to one chain
  exec::GraphBranches branches;
  // the bindings' overlaps the branches were placed for: the pairs of bound tensors whose bytes
  // meet, -1 standing for the runner's own memory (nothing else about an address moves them)
  std::vector<std::pair<TensorId, TensorId>> branches_key;
  bool branches_placed = false;
  uint64_t memory_bytes = 0;  // the runner's memory at `memory`: arena, then step workspaces
  std::vector<cuda::Stream> side_streams;
  std::vector<cuda::Event> step_events;
  cudaGraphExec_t exec = nullptr;
  bool graph_stale = true;
  RunnerStats stats;

  State(const Plan& p, const RunnerOptions& o);
  ~State() {
    if (exec) cudaGraphExecDestroy(exec);
  }
  void load_steps();
  void resolve();
  void place_branches();
  cudaGraph_t capture();
  void launch_graph(cudaStream_t stream);
  const char* workspace() const { return memory + workspace_base; }
};

Runner::State::State(const Plan& p, const RunnerOptions& o)
    : handle(p), data(p.state().data), device(o.device), mode(o.mode), communicators(o.communicators) {
  const auto start = std::chrono::steady_clock::now();
  graph_streams = o.graph_streams;
  on_log = o.on_log;
  check_communicator_groups(data.graph, communicators, mode);
  cuda::DeviceGuard guard(device);
  const cuda::DeviceProperties dev = cuda::device_properties(device);
  if (std::string note = plan::check_plan_target(data, dev); !note.empty()) notes.push_back(note);
  check_virtual_share(communicators, mode, o.mega, dev);
  partition = plan::plan_partition(data);
  load_steps();
  buffers = data.memory.buffers;
  workspace_base = data.workspace.offset;
  uint64_t need = plan::device_bytes(data);
  if (mode == ExecMode::mega) {
    uint64_t end = 0;
    for (plan::BufferAssignment& b : buffers) {
      b.offset = end;
      end += (b.bytes + plan::kArenaAlignment - 1) / plan::kArenaAlignment * plan::kArenaAlignment;
    }
    workspace_base = end;
    need = std::max<uint64_t>(end + data.workspace.bytes, 256);
  }
  if (o.workspace) {
    if (o.workspace_bytes < need) {
      throw Error(ErrorCode::invalid_argument, "runner: the workspace given has " + std::to_string(o.workspace_bytes) +
                                                   " bytes; the plan needs " + std::to_string(need));
    }
    if (const std::string why = device_memory_problem(o.workspace, device); !why.empty()) {
      throw Error(ErrorCode::invalid_argument, "runner: the workspace given " + why);
    }
    memory = static_cast<char*>(o.workspace);
  } else {
    owned = cuda::DeviceBuffer(need);
    memory = static_cast<char*>(owned.data());
  }
  memory_bytes = need;
  const Graph& g = data.graph;
  for (TensorId t : g.inputs()) bindable.emplace(g.tensor(t).name, t);
  for (TensorId t : g.outputs()) bindable.emplace(g.tensor(t).name, t);
  bound.assign(g.tensors().size(), nullptr);
  alias_of.assign(g.tensors().size(), -1);
  for (size_t i = 0; i < data.steps.size(); ++i) {
    if (find_engine(data.steps[i].engine)->output_shares_input()) {
      const Node& n = g.node(partition.regions.at(data.steps[i].region).anchor);
      alias_of[n.outputs[0]] = n.inputs[0];
    }
  }
  if (mode == ExecMode::mega) {
    mega = std::make_unique<MegaRuntime>(data, partition, steps, alias_of, dev, o.mega, handle.state().libraries, notes);
    refusal = virtual_ranks_refusal(communicators, *mega, data);
  }
  stats.load_ms = ms_since(start);
  for (const std::string& n : notes) {
    if (o.on_log) o.on_log(LogSeverity::info, n);
  }
}

void Runner::State::load_steps() {
  const Graph& g = data.graph;
  const plan::PlanBlobs blobs(data);
  auto who = [&](size_t i) {
    const plan::Step& s = data.steps[i];
    return "plan step " + std::to_string(i) + " (" + s.engine + ", " + s.description + ")";
  };
  auto load = [&](size_t i, std::string& note) {
    const plan::Step& s = data.steps[i];
    try {
      LoadContext ctx{device, handle.state().libraries, "", &communicators};
      auto step = find_engine(s.engine)->load_step(g, partition.regions.at(s.region), s.saved, blobs,
                                                   s.workspace_bytes, ctx);
      note = ctx.note.empty() ? "" : "step " + std::to_string(i) + ": " + ctx.note;
      return step;
    } catch (const Error& e) {
      throw Error(e.code(), who(i) + ": " + e.message());
    }
  };
  // Engines whose steps load slowly (cuDNN deserializes plans) load on one worker thread, one step
  // at a time, while this thread loads the others.
  std::vector<size_t> slow;
  for (size_t i = 0; i < data.steps.size(); ++i) {
    if (find_engine(data.steps[i].engine)->loads_slowly()) slow.push_back(i);
  }
  steps.resize(data.steps.size());
  std::vector<std::string> step_notes(data.steps.size());
  std::future<void> worker;
  if (!slow.empty()) {
    worker = std::async(std::launch::async, [&, slow] {
      // A plain set, not a guard: the thread is new, and restoring device 0 on exit would create
      // a context there when this plan runs on another GPU.
      cuda::set_device(device);
      for (size_t i : slow) steps[i] = load(i, step_notes[i]);
    });
  }
  try {
    for (size_t i = 0; i < data.steps.size(); ++i) {
      if (std::find(slow.begin(), slow.end(), i) == slow.end()) steps[i] = load(i, step_notes[i]);
    }
  } catch (...) {
    if (worker.valid()) worker.wait();  // the worker reads this state
    throw;
  }
  if (worker.valid()) worker.get();  // rethrows the worker's error
  for (std::string& n : step_notes) {
    if (!n.empty()) notes.push_back(std::move(n));
  }
}

void Runner::State::resolve() {
  const Graph& g = data.graph;
  std::string missing;
  for (const auto& [name, t] : bindable) {
    if (!bound[t]) missing += (missing.empty() ? "'" : ", '") + name + "'";
  }
  if (!missing.empty()) {
    throw Error(ErrorCode::invalid_state, "runner: enqueue before every graph input and output is bound; unbound: " + missing +
                                              " (Runner::set_tensor_address)");
  }
  std::vector<const void*> pointer_of(g.tensors().size(), nullptr);
  for (const plan::BufferAssignment& b : buffers) pointer_of[b.tensor] = memory + b.offset;
  for (size_t t = 0; t < bound.size(); ++t) {
    if (bound[t]) pointer_of[t] = bound[t];
  }
  // Aliases resolve to their root's memory (a chain of reshapes included).
  for (size_t t = 0; t < pointer_of.size(); ++t) {
    TensorId root = static_cast<TensorId>(t);
    while (alias_of[root] >= 0) root = alias_of[root];
    if (root != static_cast<TensorId>(t)) pointer_of[t] = pointer_of[root];
  }
  bindings.assign(data.steps.size(), Binding{});
  for (size_t i = 0; i < data.steps.size(); ++i) {
    const fuse::Region& r = partition.regions[data.steps[i].region];
    Binding& b = bindings[i];
    for (TensorId t : r.inputs) b.inputs.push_back(pointer_of[t]);
    for (TensorId t : r.outputs) b.outputs.push_back(const_cast<void*>(pointer_of[t]));
    b.workspace = memory + workspace_base + data.steps[i].workspace_offset;
  }
  if (mode == ExecMode::graph) place_branches();
  stale = false;
  mega_bound = false;
  graph_stale = true;
}

// The bytes each step reads and writes at the current bindings, then the branches; kept as they
// are when a rebinding leaves the same bound tensors overlapping (the usual case: none), since
// only overlaps decide the dependencies.
void Runner::State::place_branches() {
  std::vector<exec::ByteRange> ranges{{reinterpret_cast<uintptr_t>(memory), reinterpret_cast<uintptr_t>(memory) + memory_bytes}};
  std::vector<TensorId> owner{-1};
  for (const auto& [name, t] : bindable) {
    const auto begin = reinterpret_cast<uintptr_t>(bound[t]);
    ranges.push_back({begin, begin + plan::storage_bytes(data.graph.tensor(t))});
    owner.push_back(t);
  }
  std::vector<std::pair<TensorId, TensorId>> key = exec::overlapping_pairs(ranges, owner);
  // a bound tensor inside the runner's memory meets intermediates at its own offset: place again
  const bool in_memory = !key.empty() && key.front().first == -1;
  if (branches_placed && !in_memory && key == branches_key) return;
  branches_key = std::move(key);
  branches_placed = true;
  std::vector<exec::StepAccess> access;
  for (size_t i = 0; i < data.steps.size(); ++i) {
    access.push_back(exec::step_access(data.graph, partition.regions[data.steps[i].region], bindings[i],
                                       data.steps[i].workspace_bytes,
                                       find_engine(data.steps[i].engine)->output_shares_input(), alias_of));
  }
  branches = exec::place_branches(access, graph_streams);
  while (static_cast<int>(side_streams.size()) + 1 < branches.streams) side_streams.emplace_back(cudaStreamNonBlocking);
  if (step_events.size() < steps.size() + side_streams.size() + 1) {
    step_events.clear();
    for (size_t i = 0; i < steps.size() + side_streams.size() + 1; ++i) step_events.emplace_back(cudaEventDisableTiming);
  }
}

cudaGraph_t Runner::State::capture() {
  // Thread-local mode: other threads' CUDA calls are not forbidden while this one captures.
  SINTER_CUDA_CHECK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal));
  try {
    // Branches: every side stream joins the capture from its start (an event of the capture
    // stream), each step waits for the events of its dependencies on other streams, and the
    // capture stream waits for every side stream's end. step_events: one per step, then one for
    // the start and one per side stream's end.
    // With one stream no step waits or records.
    const int n = static_cast<int>(steps.size());
    auto stream_of = [&](int s) -> cudaStream_t { return s == 0 ? capture_stream.get() : side_streams[s - 1].get(); };
    const int used = branches.streams;
    if (used > 1) step_events[n].record(capture_stream);
    for (int s = 1; s < used; ++s) step_events[n].wait_on(stream_of(s));
    for (int i = 0; i < n; ++i) {
      const cudaStream_t st = stream_of(branches.stream_of[i]);
      for (int p : branches.waits[i]) step_events[p].wait_on(st);
      steps[i]->launch(bindings[i], st);
      if (branches.record[i]) step_events[i].record(st);
    }
    for (int s = 1; s < used; ++s) {
      step_events[n + s].record(stream_of(s));
      step_events[n + s].wait_on(capture_stream);
    }
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(capture_stream, &broken);  // leaves the streams usable
    if (broken) cudaGraphDestroy(broken);
    (void)cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  SINTER_CUDA_CHECK(cudaStreamEndCapture(capture_stream, &g));
  ++stats.captures;
  stats.capture_streams = branches.streams;
  stats.capture_launches = branches.launches;
  stats.capture_chain = branches.chain;
  return g;
}

void Runner::State::launch_graph(cudaStream_t stream) {
  if (!exec || graph_stale) {
    GraphHolder g;
    try {
      g.g = capture();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::cuda || branches.streams <= 1) throw;
      // A driver that refuses the capture on several streams (a programmatic launch whose
      // dependencies come from other streams, say) still runs the plan: as one chain, said once.
      if (on_log) {
        on_log(LogSeverity::warning, "runner: capturing the CUDA graph on " + std::to_string(branches.streams) +
                                         " streams failed (" + e.message() + "); the steps are captured as one chain");
      }
      graph_streams = 1;
      branches_placed = false;
      place_branches();
      g.g = capture();
    }
    bool updated = false;
    if (exec) {
      cudaGraphExecUpdateResultInfo info{};
      updated = cudaGraphExecUpdate(exec, g.g, &info) == cudaSuccess;
      if (updated) {
        ++stats.updates;
      } else {
        // The driver cannot update some node in place: instantiate again, and count it.
        (void)cudaGetLastError();
        ++stats.refused_updates;
        SINTER_CUDA_CHECK(cudaGraphExecDestroy(exec));
        exec = nullptr;
      }
    }
    if (!updated) {
      SINTER_CUDA_CHECK(cudaGraphInstantiate(&exec, g.g, 0));
      ++stats.instantiations;
    }
    graph_stale = false;
  }
  SINTER_CUDA_CHECK(cudaGraphLaunch(exec, stream));
}

namespace {
// The options checked before the runner touches the GPU, so a wrong value is named even where
// there is none.
const RunnerOptions& checked(const RunnerOptions& o) {
  if (o.graph_streams < 1 || o.graph_streams > 64) {
    throw Error(ErrorCode::invalid_argument, "runner: RunnerOptions::graph_streams is " + std::to_string(o.graph_streams) +
                                                 "; it must be 1 (one chain) to 64");
  }
  return o;
}
}  // namespace

Runner::Runner(const Plan& plan, const RunnerOptions& options)
    : state_(std::make_unique<State>(plan, checked(options))) {}
Runner::~Runner() = default;
Runner::Runner(Runner&&) noexcept = default;
Runner& Runner::operator=(Runner&&) noexcept = default;

const Plan& Runner::plan() const { return state_->handle; }

void Runner::set_tensor_address(const std::string& name, const void* address) {
  State& s = *state_;
  const Graph& g = s.data.graph;
  auto it = s.bindable.find(name);
  if (it == s.bindable.end()) {
    for (size_t t = 0; t < g.tensors().size(); ++t) {
      if (g.tensor(static_cast<TensorId>(t)).name == name) {
        throw Error(ErrorCode::invalid_argument, "runner: '" + name +
                                                     "' is an intermediate tensor of the graph; only graph inputs and "
                                                     "outputs are bound");
      }
    }
    throw Error(ErrorCode::invalid_argument, "runner: the graph '" + g.name() + "' has no tensor '" + name + "'");
  }
  if (!address) throw Error(ErrorCode::invalid_argument, "runner: a null address for '" + name + "'");
  if (s.bound[it->second] == address) return;
  {
    cuda::DeviceGuard guard(s.device);
    if (const std::string why = device_memory_problem(address, s.device); !why.empty()) {
      throw Error(ErrorCode::invalid_argument, "runner: the address for '" + name + "' " + why);
    }
  }
  s.bound[it->second] = address;
  s.stale = true;
}

const void* Runner::tensor_address(const std::string& name) const {
  auto it = state_->bindable.find(name);
  return it == state_->bindable.end() ? nullptr : state_->bound[it->second];
}

void Runner::enqueue(cudaStream_t stream) {
  State& s = *state_;
  if (!s.refusal.empty()) throw Error(ErrorCode::unsupported, s.refusal);
  cuda::DeviceGuard guard(s.device);
  if (s.mega) s.check_mega(stream);  // an earlier launch's watchdog
  if (s.stale) s.resolve();
  if (!s.workspace_zeroed) {
    // Step workspaces start zeroed; the steps keep them so.
    if (s.data.workspace.bytes > 0) {
      SINTER_CUDA_CHECK(cudaMemsetAsync(s.memory + s.workspace_base, 0, s.data.workspace.bytes, stream));
    }
    s.workspace_zeroed = true;
  }
  if (s.mode == ExecMode::graph) {
    s.launch_graph(stream);
  } else if (s.mode == ExecMode::mega) {
    if (!s.mega_bound) {
      s.mega->bind(s.bindings, stream);
      s.mega_bound = true;
    }
    s.mega->enqueue(s.steps, s.bindings, stream);
  } else {
    for (size_t i = 0; i < s.steps.size(); ++i) s.steps[i]->launch(s.bindings[i], stream);
  }
  ++s.stats.enqueues;
}

RunnerStats Runner::stats() const { return state_->stats; }

void Runner::check() {
  State& s = *state_;
  if (!s.mega) return;
  cuda::DeviceGuard guard(s.device);
  s.check_mega(nullptr);
}

MegaDescription Runner::mega_description() const {
  if (!state_->mega) throw Error(ErrorCode::invalid_state, "runner: mega_description of a runner not in mega mode");
  return state_->mega->describe();
}

std::vector<MegaTaskEvent> Runner::mega_trace() const {
  if (!state_->mega) throw Error(ErrorCode::invalid_state, "runner: mega_trace of a runner not in mega mode");
  cuda::DeviceGuard guard(state_->device);
  return state_->mega->trace();
}

std::vector<MegaSegmentTiming> Runner::time_mega_segments(cudaStream_t stream, int iters) {
  State& s = *state_;
  if (!s.mega) throw Error(ErrorCode::invalid_state, "runner: time_mega_segments of a runner not in mega mode");
  cuda::DeviceGuard guard(s.device);
  enqueue(stream);  // binds the megakernels, zeroes the workspaces once, warms every step up
  std::vector<MegaSegmentTiming> out;
  try {
    out = s.mega->time_segments(s.steps, s.bindings, stream, iters);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::timeout) s.workspace_zeroed = false;
    throw;
  }
  return out;
}

const std::vector<std::string>& Runner::load_notes() const { return state_->notes; }

void Runner::poison_intermediates(cudaStream_t stream) {
  State& s = *state_;
  cuda::DeviceGuard guard(s.device);
  for (const plan::BufferAssignment& b : s.buffers) {
    SINTER_CUDA_CHECK(cudaMemsetAsync(s.memory + b.offset, 0xFF, b.bytes, stream));
  }
}

std::vector<float> Runner::time_steps(cudaStream_t stream, int iters) {
  State& s = *state_;
  cuda::DeviceGuard guard(s.device);
  if (s.stale) s.resolve();
  enqueue(stream);  // zeroes the workspaces once, warms every step up
  std::vector<float> out;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    std::vector<float> t = cuda::time_calls(stream, std::max(iters, 1), [&] { s.steps[i]->launch(s.bindings[i], stream); });
    std::sort(t.begin(), t.end());
    out.push_back(t[t.size() / 2]);
  }
  return out;
}

}  // namespace sinter

#include "mega/mega_segment.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "comm/communicator_state.hpp"
#include "comm/symmetric_memory.hpp"
#include "cuda/check.hpp"
#include "mega/mega_abi.h"
#include "mega/mega_source.hpp"
#include "mega/queue_image.hpp"
#include "sinter/error.hpp"

namespace sinter::mega {
namespace {

constexpr size_t kCounterBytes = SINTER_MEGA_COUNTER_STRIDE * sizeof(unsigned long long);

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The queue-chunk size the segment asks for (less where it would cost CTAs an SM).
constexpr size_t kChunkBytes = 8192;

// The smallest chunk every task fits in: one task with the largest argument struct and the most waits.
size_t least_chunk_bytes(const TaskGraph& g) {
  size_t most_waits = 0;
  for (const TaskKernel& k : g.kernels) {
    for (const auto& w : k.task_waits) most_waits = std::max(most_waits, w.size());
  }
  return chunk_bytes_for_one_task(g.max_arg_bytes, most_waits);
}

}  // namespace

namespace {

// The group of a segment's collectives (their push kernels' arrivals), or null. Collectives of
// world 1 need no group; those of a larger world must share one communicator.
const MegaRankArrivals* segment_group(const TaskGraph& g) {
  const MegaRankArrivals* group = nullptr;
  for (const SegmentStep& s : g.steps) {
    for (const MegaTaskKernel& k : s.kernels) {
      if (k.arrivals.world <= 0) continue;
      if (group && group->world > 1 && k.arrivals.world > 1 && group->comm != k.arrivals.comm) {
        throw Error(ErrorCode::unsupported,
                    "megakernel of steps " + std::to_string(g.steps.front().step) + ".." +
                        std::to_string(g.steps.back().step) + ": collectives of groups '" + group->group + "' and '" +
                        k.arrivals.group + "' in one segment (a megakernel publishes arrivals to one group's ranks)");
      }
      if (!group || k.arrivals.world > group->world) group = &k.arrivals;
    }
  }
  return group;
}

}  // namespace

Segment::Segment(TaskGraph graph, std::string source, std::vector<MegaStep*> steps,
                 std::shared_ptr<const cuda::Library> library, cuda::KernelCache* cache,
                 const cuda::DeviceProperties& device, const SegmentOptions& options)
    : graph_(std::move(graph)),
      steps_(std::move(steps)),
      options_(options),
      source_(std::move(source)),
      library_(std::move(library)),
      device_(device.ordinal) {
  if (steps_.size() != graph_.steps.size()) throw Error(ErrorCode::internal, "megakernel: steps and task graph disagree");
  if (device.cc_major < 9) {
    throw Error(ErrorCode::unsupported, "megakernel: " + device.name + " has compute capability " +
                                            std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor) +
                                            "; the megakernel needs 9.0 or newer (its dispatcher copies task queues "
                                            "with cp.async.bulk and mbarriers)");
  }
  name_ = "megakernel of steps " + std::to_string(graph_.steps.front().step) + ".." + std::to_string(graph_.steps.back().step);
  const auto t0 = std::chrono::steady_clock::now();
  from_plan_ = library_ != nullptr;
  if (!library_) {
    if (!cache) throw Error(ErrorCode::internal, "megakernel: no cubin and no kernel cache to compile one");
    cuda::KernelRequest req;
    req.name = "megakernel_" + std::to_string(graph_.steps.front().step) + ".cu";
    req.source = source_;
    req.options.arch = device.arch;
    library_ = cache->get_library(req, device_);
  }
  compile_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  kernel_ = library_->get_kernel(kMegakernelEntry);
  {
    // loaded now, not at the first launch: that load could wait for another rank's megakernel
    // on this GPU, which waits for this one (virtual ranks)
    cuda::DeviceGuard guard(device_);
    kernel_.load_here();
  }
  // Dynamic shared memory: the tasks' own (they all start at its base), then the dispatcher's two
  // queue-chunk buffers (chunk_bytes each, chosen below).
  const cudaFuncAttributes attr = kernel_.attributes();
  const size_t task_dynamic = align_up(graph_.max_dynamic_shared_memory, 128);
  const size_t least_chunk = least_chunk_bytes(graph_);
  auto dynamic_for = [&](size_t chunk) { return task_dynamic + 2 * chunk; };
  auto does_not_fit = [&](size_t bytes) {
    return Error(ErrorCode::unsupported, name_ + ": one CTA of " + std::to_string(graph_.max_threads) + " threads, " +
                                             std::to_string(attr.numRegs) + " registers a thread and " +
                                             std::to_string(bytes) + " bytes of shared memory (" +
                                             std::to_string(2 * least_chunk) + " of them its task queue) does not fit on an SM");
  };
  const size_t optin = device.max_shared_memory_per_block_optin;
  if (attr.sharedSizeBytes + dynamic_for(least_chunk) > optin) throw does_not_fit(attr.sharedSizeBytes + dynamic_for(least_chunk));
  library_->allow_dynamic_shared_memory(kernel_, static_cast<int>(optin - attr.sharedSizeBytes), device_);
  const int threads = static_cast<int>(graph_.max_threads);
  const int per_sm = kernel_.max_active_blocks_per_sm(threads, dynamic_for(least_chunk));
  if (per_sm < 1) throw does_not_fit(attr.sharedSizeBytes + dynamic_for(least_chunk));
  // as many CTAs as fit at once, up to the launch bounds' minimum an SM: all co-resident; then the
  // largest chunk that keeps them
  const int ctas_per_sm = std::min(per_sm, megakernel_min_blocks(graph_));
  chunk_bytes_ = least_chunk;
  for (size_t c = kChunkBytes; c > least_chunk; c /= 2) {
    if (attr.sharedSizeBytes + dynamic_for(c) <= optin && kernel_.max_active_blocks_per_sm(threads, dynamic_for(c)) >= ctas_per_sm) {
      chunk_bytes_ = c;
      break;
    }
  }
  chunk_at_ = task_dynamic;
  dynamic_bytes_ = dynamic_for(chunk_bytes_);
  shared_bytes_ = attr.sharedSizeBytes + dynamic_bytes_;
  const int sms = options_.sm_count > 0 ? std::min(options_.sm_count, device.sm_count) : device.sm_count;
  schedule_ = schedule_tasks(graph_, sms * ctas_per_sm);
  check_schedule(graph_, schedule_);

  // the queues: every CTA's tasks with their waits, laid out in chunks (queue_image.hpp)
  std::vector<size_t> arg_bytes;
  for (const TaskKernel& tk : graph_.kernels) arg_bytes.push_back(tk.arg_bytes);
  // a planted fault: the producer of the first counter some task waits for loses its tasks
  // (missing_producer), or that wait asks for one task more than the counter counts (wrong_count)
  unsigned victim = ~0u;
  if (options_.inject != MegaFault::none) {
    for (size_t i = 0; i < schedule_.tasks.size() && victim == ~0u; ++i) {
      const ScheduledTask& st = schedule_.tasks[i];
      const auto& w = graph_.kernels[st.kernel].task_waits[st.block];
      if (!w.empty()) victim = graph_.counters[w.front()].kernel;
    }
  }
  std::vector<std::vector<QueuedTask>> queues(schedule_.ctas);
  std::vector<char> waited_for(graph_.counters.size(), 0);
  bool fault_planted = false;
  for (int c = 0; c < schedule_.ctas; ++c) {
    std::set<unsigned> met;  // counters an earlier task of this CTA waited for: they still hold
    for (unsigned i = schedule_.queue_start[c]; i < schedule_.queue_start[c + 1]; ++i) {
      const ScheduledTask& st = schedule_.tasks[i];
      if (options_.inject == MegaFault::missing_producer && st.kernel == victim) continue;
      const TaskKernel& tk = graph_.kernels[st.kernel];
      QueuedTask q{};
      SinterMegaTask& t = q.record;
      t.function = tk.function;
      t.threads = tk.threads;
      t.grid_x = tk.grid[0];
      t.grid_y = tk.grid[1];
      t.grid_z = tk.grid[2];
      const unsigned gx = tk.grid[0], gy = tk.grid[1], gz = tk.grid[2];
      if (gy > 0xffff || gz > 0xffff) {
        throw Error(ErrorCode::internal, "megakernel: task kernel " + std::to_string(st.kernel) + " has a grid " +
                                             std::to_string(gy) + " high and " + std::to_string(gz) +
                                             " deep; a task records at most 65535 of each");
      }
      t.block_x = st.block % gx;
      t.block_yz = (st.block / gx % gy) | (st.block / (gx * gy)) << 16;
      t.kernel = st.kernel;
      // no counter to wait on when the producers ran earlier on this CTA (a planted fault must
      // meet a counter wait: none is skipped that way then)
      const bool local = st.waits_met_locally && options_.inject == MegaFault::none;
      if (!local) {
        for (unsigned w : tk.task_waits[st.block]) {
          if (!met.insert(w).second) continue;
          const Counter& ct = graph_.counters[w];
          q.waits.push_back({w, ct.target() | (ct.ranks > 0 ? SINTER_MEGA_WAIT_RANKS : 0u)});
          if (options_.inject == MegaFault::wrong_count && !fault_planted) {
            q.waits.back().tasks += 1;
            fault_planted = true;
          }
          waited_for[w] = 1;
        }
      }
      // the prologue's loads overlap the waits; a task that does not wait starts its body at once
      t.prologue = tk.prologue && !q.waits.empty() ? 1u : 0u;
      counter_waits_ += q.waits.size();
      waitless_tasks_ += q.waits.empty();
      queues[c].push_back(std::move(q));
      queued_.push_back(i);
    }
  }
  // a task adds to the counters that count it only where some task waits for them
  size_t queued = 0;
  for (std::vector<QueuedTask>& queue : queues) {
    for (QueuedTask& q : queue) {
      SinterMegaTask& t = q.record;
      t.publish = waited_for[t.kernel] ? t.kernel : SINTER_MEGA_NO_COUNTER;
      t.publish_range = SINTER_MEGA_NO_COUNTER;
      t.publish_ranks = 0;
      const TaskKernel& tk = graph_.kernels[t.kernel];
      const long range = tk.group_counter(schedule_.tasks[queued_[queued++]].block);
      if (range >= 0 && (waited_for[range] || tk.rank_arrivals > 0)) t.publish_range = static_cast<unsigned>(range);
      // a collective's arrival: every rank's combine task waits for it (a collective of world 1
      // in a segment of a larger group's: this rank's only)
      if (tk.rank_arrivals > 1) t.publish_ranks = SINTER_MEGA_PUBLISH_RANKS;
    }
  }
  image_ = lay_out_queues(queues, arg_bytes, chunk_bytes_);
  queues_ = cuda::DeviceBuffer(image_.queues.size() * sizeof(SinterMegaQueue));
  queues_.copy_from_host(image_.queues.data(), queues_.size());
  image_device_ = cuda::DeviceBuffer(std::max<size_t>(image_.bytes.size(), 16));
  image_device_.copy_from_host(image_.bytes.data(), image_.bytes.size());
  // The counters and control words, in the symmetric memory of the segment's group where it has
  // collectives (other ranks add arrivals to them), else in plain memory (a group of one); zeroed.
  counters_bytes_ = (graph_.counters.size() + SINTER_MEGA_CONTROL_WORDS) * kCounterBytes;
  std::shared_ptr<Communicator::State> comm;
  if (const MegaRankArrivals* group = segment_group(graph_)) {
    group_ = group->group;
    world_ = std::max(group->world, 1);
    if (world_ > 1 && !group->comm) {
      throw Error(ErrorCode::invalid_state, name_ + ": no communicator for group '" + group_ +
                                                "' (a Runner binds it: RunnerOptions::communicators)");
    }
    if (world_ > 1) comm = group->comm;
    cooperative_ = !(world_ > 1 && group->comm->virtual_group);  // virtual ranks: see launch()
  }
  rank_counters_ = comm::allocate_symmetric(comm, counters_bytes_, device_, "counters of the " + name_);
  rank_ = rank_counters_->rank();
  counters_at_ = static_cast<unsigned long long*>(rank_counters_->local());
  rank_counter_table_ = cuda::DeviceBuffer(rank_counters_->ranks().size() * sizeof(void*));
  rank_counter_table_.copy_from_host(rank_counters_->ranks().data(), rank_counter_table_.size());
  if (options_.trace) trace_ = cuda::DeviceBuffer(std::max<size_t>(queued_.size(), 1) * SINTER_MEGA_TRACE_WORDS * 8);
  SINTER_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&fault_), sizeof(SinterMegaFault), cudaHostAllocMapped));
  std::memset(fault_, 0, sizeof(SinterMegaFault));
  SINTER_CUDA_CHECK(cudaHostGetDevicePointer(&fault_device_, fault_, 0));
}

Segment::~Segment() {
  if (fault_) cudaFreeHost(fault_);
}

void Segment::bind(const std::vector<const Binding*>& bindings, cudaStream_t stream) {
  if (bindings.size() != steps_.size()) throw Error(ErrorCode::internal, "megakernel: one binding per step expected");
  // launches queued earlier on this stream may still read the device image
  SINTER_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (size_t k = 0; k < graph_.kernels.size(); ++k) {
    const TaskKernel& tk = graph_.kernels[k];
    const std::vector<char> a = steps_[tk.segment_step]->arguments(tk.kernel, *bindings[tk.segment_step]);
    write_arguments(image_, k, a.data(), a.size());
  }
  // from pageable memory: the call returns once the bytes are staged, so the next bind may
  // rewrite the host image
  SINTER_CUDA_CHECK(
      cudaMemcpyAsync(image_device_.data(), image_.bytes.data(), image_.bytes.size(), cudaMemcpyHostToDevice, stream));
}

void Segment::launch(cudaStream_t stream) {
  if (!broken_.empty()) throw Error(ErrorCode::invalid_state, broken_);
  SinterMegaParams p{};
  p.queues = static_cast<const SinterMegaQueue*>(queues_.data());
  p.image = static_cast<const char*>(image_device_.data());
  p.chunk_at = static_cast<unsigned>(chunk_at_);
  p.chunk_bytes = static_cast<unsigned>(chunk_bytes_);
  p.counters = counters_at_;
  p.control = counters_at_ + graph_.counters.size() * SINTER_MEGA_COUNTER_STRIDE;
  p.rank_counters = static_cast<unsigned long long* const*>(rank_counter_table_.data());
  p.world = static_cast<unsigned>(rank_counters_->ranks().size());
  p.rank = static_cast<unsigned>(rank_);
  p.fault = static_cast<SinterMegaFault*>(fault_device_);
  p.trace = options_.trace ? static_cast<unsigned long long*>(trace_.data()) : nullptr;
  p.watchdog_ns = static_cast<unsigned long long>(options_.watchdog_ms * 1e6);
  cuda::LaunchConfig cfg;
  cfg.grid = dim3(static_cast<unsigned>(schedule_.ctas));
  cfg.block = dim3(graph_.max_threads);
  cfg.dynamic_shared_memory = dynamic_bytes_;
  cfg.stream = stream;
  // Every CTA resident, or the launch fails instead of hanging. Virtual ranks share one GPU: each
  // rank's launch holds its share of the SMs (SegmentOptions::sm_count) and they must run side by
  // side, which a cooperative launch does not promise; they launch plainly, resident because the
  // shares add up to at most the GPU, and a rank that cannot start ends in the others' watchdog.
  cfg.cooperative = cooperative_;
  void* params[] = {&p};
  kernel_.launch(cfg, params);
}

void Segment::check(cudaStream_t stream) {
  const volatile SinterMegaFault* f = fault_;
  if (f->hit == 0) return;
  const SinterMegaFault copy = *const_cast<const SinterMegaFault*>(fault_);
  auto kernel_name = [&](unsigned k) {
    if (k >= graph_.kernels.size()) return "task kernel " + std::to_string(k) + " (not in this segment)";
    const TaskKernel& tk = graph_.kernels[k];
    const SegmentStep& s = graph_.steps[tk.segment_step];
    return "task kernel " + std::to_string(k) + " (plan step " + std::to_string(s.step) + ", kernel " +
           std::to_string(tk.kernel) + ": " + s.kernels[tk.kernel].description + ")";
  };
  // what the counter counts: a producer kernel's tasks, or a collective's arrivals from its ranks
  std::string counted = kernel_name(copy.counter);
  if (copy.counter < graph_.counters.size()) {
    const Counter& ct = graph_.counters[copy.counter];
    counted = kernel_name(ct.kernel);
    if (ct.ranks > 0) {
      counted = "the arrivals of slice " + std::to_string(ct.lo) + " from all " + std::to_string(ct.ranks) +
                " ranks of group '" + group_ + "' (" + kernel_name(ct.kernel) +
                "; a rank that failed, was not launched, or runs another program never arrives)";
    } else if (ct.lo != 0 || ct.hi != graph_.kernels[ct.kernel].tasks()) {
      counted = "blocks " + std::to_string(ct.lo) + ".." + std::to_string(ct.hi - 1) + " of " + counted;
    }
  }
  std::string message =
      "megakernel watchdog: CTA " + std::to_string(copy.cta) + " on SM " + std::to_string(copy.sm) + ", task " +
      std::to_string(copy.task) + " of its queue (" + kernel_name(copy.kernel) + "), waited " +
      std::to_string(copy.waited_ns / 1000000.0) + " ms for counter " + std::to_string(copy.counter) + " of " +
      counted + " to reach " + std::to_string(copy.target) + "; it saw " + std::to_string(copy.seen) +
      " (launch epoch " + std::to_string(copy.epoch) + ", limit " + std::to_string(options_.watchdog_ms) +
      " ms). Every CTA stopped; the launch's outputs are incomplete.";
  if (world_ > 1) {
    // the other ranks' counters went on: this rank's cannot be reset alone
    SINTER_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memset(fault_, 0, sizeof(SinterMegaFault));
    broken_ = "the " + name_ + " (rank " + std::to_string(rank_) + " of group '" + group_ +
              "') timed out earlier; its counters no longer agree with the other ranks': make every rank's Runner anew";
    message += " Rank " + std::to_string(rank_) + " of group '" + group_ +
               "': this runner cannot launch again; make every rank's Runner anew.";
    throw Error(ErrorCode::timeout, message);
  }
  reset(stream);
  throw Error(ErrorCode::timeout, message);
}

void Segment::reset(cudaStream_t stream) {
  SINTER_CUDA_CHECK(cudaStreamSynchronize(stream));
  SINTER_CUDA_CHECK(cudaMemset(counters_at_, 0, counters_bytes_));
  SINTER_CUDA_CHECK(cudaDeviceSynchronize());
  std::memset(fault_, 0, sizeof(SinterMegaFault));
}

std::vector<TaskEvent> Segment::trace() const {
  std::vector<TaskEvent> out;
  if (!options_.trace) return out;
  std::vector<unsigned long long> w(queued_.size() * SINTER_MEGA_TRACE_WORDS);
  trace_.copy_to_host(w.data(), w.size() * sizeof(w[0]));
  for (size_t i = 0; i < queued_.size(); ++i) {
    const unsigned long long* r = w.data() + i * SINTER_MEGA_TRACE_WORDS;
    TaskEvent e;
    e.kernel = schedule_.tasks[queued_[i]].kernel;
    e.block = schedule_.tasks[queued_[i]].block;
    e.start_ns = r[0];
    e.end_ns = r[1];
    e.sm = static_cast<unsigned>(r[2] >> 32);
    e.cta = static_cast<unsigned>(r[2] & 0xffffffffu);
    e.waited_ns = r[3];
    out.push_back(e);
  }
  return out;
}

}  // namespace sinter::mega

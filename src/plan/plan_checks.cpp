// The checks of a loaded plan that need more than one field: the steps against the partition the
// loader recomputes from the graph (a bundle made for another graph is rejected here), each
// engine's needs, every kernel's launch shape and pointer slots, blob references, the workspace
// layout and the memory plan. What passes can be launched without reading outside a buffer.
#include <algorithm>
#include <set>

#include <cuda.h>

#include "engines/registry.hpp"

#include "plan/bundle_format.hpp"

namespace sinter::plan::bundle_detail {

StepMembership membership_of(const Graph& g, const fuse::Region& r) {
  StepMembership m;
  for (NodeId n : r.nodes()) m.nodes.push_back(g.node(n).name);
  for (TensorId t : r.inputs) m.inputs.push_back(g.tensor(t).name);
  for (TensorId t : r.outputs) m.outputs.push_back(g.tensor(t).name);
  return m;
}

namespace {

std::string names(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", " : "") + v[i];
  return s + (v.size() > 8 ? ", ... (" + std::to_string(v.size()) + ")]" : "]");
}

class Checker {
 public:
  Checker(const Plan& plan, std::string_view source) : plan_(plan), g_(plan.graph), source_(source) {}

  void run(const std::vector<StepMembership>& recorded) {
    try {
      partition_ = plan_partition(plan_);
    } catch (const Error& e) {
      fail("the graph cannot be partitioned: " + e.message());
    }
    const auto& regions = partition_.regions;
    if (plan_.steps.size() != regions.size()) {
      fail("the plan has " + std::to_string(plan_.steps.size()) + " steps, but its graph '" +
           g_.name() + "' partitions into " + std::to_string(regions.size()) +
           " regions with these fusion options: the steps were made for another graph");
    }
    alias_of_.assign(g_.tensors().size(), -1);
    for (size_t i = 0; i < regions.size(); ++i) check_step(i, recorded.at(i));
    check_workspace_layout();
    check_memory();
    check_megakernels();
    for (const auto& [key, blob] : plan_.blobs) {
      if (!used_.count(key)) fail("blob " + key + " (" + std::string(to_string(blob.kind)) + ") is not used by any step or megakernel");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { bundle_detail::fail(source_, what); }

  void check_step(size_t i, const StepMembership& recorded) {
    const Step& s = plan_.steps[i];
    const fuse::Region& r = partition_.regions[i];
    const std::string who = "step " + std::to_string(i) + " (" + std::string(to_string(s.kind)) + ", " + s.engine + ")";
    if (s.region != static_cast<int>(i)) {
      fail(who + " is for region " + std::to_string(s.region) + "; steps run in region order, so it must be region " +
           std::to_string(i));
    }
    if (s.kind != r.kind) {
      fail(who + ": the step is for a " + std::string(to_string(s.kind)) + " region, but region " +
           std::to_string(i) + " of the graph is a " + std::string(to_string(r.kind)) +
           " region: the steps were made for another graph, or by a Sinter whose fusion rules differ "
           "(e.g. before unit-axis permutes became aliases); build the plan again");
    }
    const StepMembership actual = membership_of(g_, r);
    auto compare = [&](const std::vector<std::string>& want, const std::vector<std::string>& have, const char* what) {
      if (want != have) {
        fail(who + ": the bundle says region " + std::to_string(i) + " has " + what + " " + names(want) +
             ", the graph's region has " + names(have) + ": the steps were made for another graph");
      }
    };
    compare(recorded.nodes, actual.nodes, "nodes");
    compare(recorded.inputs, actual.inputs, "inputs");
    compare(recorded.outputs, actual.outputs, "outputs");

    const Engine* engine = find_engine(s.engine);
    if (!engine) fail(who + ": unknown engine \"" + s.engine + "\"; known engines: " + registered_engine_names());
    for (size_t k = 0; k < s.saved.kernels.size(); ++k) {
      check_kernel(who + ", kernel " + std::to_string(k), s, r, s.saved.kernels[k]);
    }
    if (!s.saved.kernels.empty()) check_outputs_written(who, s, r);
    const UsedBlobs blobs(*this);
    std::string why;
    try {
      why = engine->check_saved_step(g_, r, s.saved, blobs);
    } catch (const Error& e) {
      why = e.message();
    }
    if (!why.empty()) fail(who + ": " + why);
    if (engine->output_shares_input()) {
      if (s.workspace_bytes != 0) fail(who + ": a step that shares its input's memory launches nothing and has no workspace");
      const Node& n = g_.node(r.anchor);
      alias_of_[n.outputs[0]] = n.inputs[0];
    }

    if (s.workspace_bytes == 0) {
      if (s.workspace_offset != 0) fail(who + ": no workspace, but a workspace offset of " + std::to_string(s.workspace_offset));
      return;
    }
    if (s.workspace_offset % kArenaAlignment != 0 || s.workspace_offset < workspace_end_) {
      fail(who + ": its workspace at " + std::to_string(s.workspace_offset) + " must start at a multiple of " +
           std::to_string(kArenaAlignment) + " at or after the previous step's workspace, which ends at " +
           std::to_string(workspace_end_));
    }
    workspace_end_ = s.workspace_offset + s.workspace_bytes;
  }

  // Megakernel cubins: each a cubin blob, one per source.
  void check_megakernels() {
    std::set<std::string> sources;
    for (size_t i = 0; i < plan_.megakernels.size(); ++i) {
      const MegakernelRecord& r = plan_.megakernels[i];
      const std::string who = "megakernel " + std::to_string(i);
      if (!sources.insert(r.source_sha256).second) fail(who + ": a second cubin for source " + r.source_sha256);
      if (blob(who, r.cubin, BlobKind::cubin).bytes.empty()) fail(who + ": its cubin is empty");
    }
  }

  // The plan's blobs as the engines' checks read them; every blob read is marked used.
  class UsedBlobs : public BlobStore {
   public:
    explicit UsedBlobs(Checker& c) : c_(c) {}
    std::string put(BlobKind, std::span<const char>) override {
      throw Error(ErrorCode::internal, "a plan check may not add blobs");
    }
    std::span<const char> get(const std::string& key, BlobKind kind) const override {
      return c_.blob("the step", key, kind).bytes;
    }

   private:
    Checker& c_;
  };

  const Blob& blob(const std::string& who, const std::string& key, BlobKind kind) {
    auto it = plan_.blobs.find(key);
    if (it == plan_.blobs.end()) fail(who + ": blob " + key + " is not in the bundle");
    if (it->second.kind != kind) {
      fail(who + ": blob " + key + " is a " + std::string(to_string(it->second.kind)) + ", expected a " +
           std::string(to_string(kind)));
    }
    used_.insert(key);
    return it->second;
  }

  // Every output of a jit step's region is bound to some kernel, by a pointer or a TMA map: a
  // bundle whose kernels write none of an output would run and leave it unwritten.
  void check_outputs_written(const std::string& who, const Step& s, const fuse::Region& r) {
    std::vector<bool> written(r.outputs.size(), false);
    for (const KernelRecord& k : s.saved.kernels) {
      for (const PointerRecord& p : k.pointers) {
        if (p.source == PointerSource::output && static_cast<size_t>(p.index) < written.size()) written[p.index] = true;
      }
      for (const TensorMapRecord& t : k.tensor_maps) {
        if (t.source == PointerSource::output && static_cast<size_t>(t.index) < written.size()) written[t.index] = true;
      }
    }
    for (size_t i = 0; i < written.size(); ++i) {
      if (!written[i]) fail(who + ": none of its kernels is given output '" + g_.tensor(r.outputs[i]).name + "'");
    }
  }

  // The largest dynamic shared memory a block may opt into on the plan's architecture.
  uint64_t max_dynamic_shared_memory() const {
    const std::string& a = plan_.target.arch;
    if (a == "sm_80") return 166912;                                  // 163 KiB
    if (a == "sm_86" || a == "sm_87" || a == "sm_89") return 101376;  // 99 KiB
    return 232448;                                                    // sm_90 and later: 227 KiB
  }

  void check_kernel(const std::string& who, const Step& s, const fuse::Region& r, const KernelRecord& k) {
    blob(who, k.cubin, BlobKind::cubin);
    if (k.dynamic_shared_memory > max_dynamic_shared_memory()) {
      fail(who + ": " + std::to_string(k.dynamic_shared_memory) + " bytes of dynamic shared memory; a block on " +
           plan_.target.arch + " takes at most " + std::to_string(max_dynamic_shared_memory()));
    }
    const uint64_t threads = uint64_t{k.block[0]} * k.block[1] * k.block[2];
    if (threads > kMaxBlockThreads) {
      fail(who + ": a block of " + std::to_string(threads) + " threads; at most " + std::to_string(kMaxBlockThreads));
    }
    if (k.cluster) {
      const uint64_t blocks = uint64_t{(*k.cluster)[0]} * (*k.cluster)[1] * (*k.cluster)[2];
      if (blocks > kMaxClusterBlocks) fail(who + ": a cluster of " + std::to_string(blocks) + " blocks; at most 16");
      for (int d = 0; d < 3; ++d) {
        if (k.grid[d] % (*k.cluster)[d] != 0) fail(who + ": the grid is not a multiple of the cluster shape");
      }
    }
    std::set<uint64_t> taken;
    for (size_t j = 0; j < k.pointers.size(); ++j) {
      const PointerRecord& p = k.pointers[j];
      const std::string slot = who + ", pointer slot " + std::to_string(j);
      if (p.arg_offset % 8 != 0 || p.arg_offset + 8 > k.args.size()) {
        fail(slot + ": the 8-byte pointer at argument offset " + std::to_string(p.arg_offset) +
             " must be 8-aligned and inside the " + std::to_string(k.args.size()) + " argument bytes");
      }
      if (!taken.insert(p.arg_offset).second) {
        fail(slot + ": overlaps another slot at argument offset " + std::to_string(p.arg_offset));
      }
      for (size_t b = 0; b < 8; ++b) {
        if (k.args[p.arg_offset + b] != 0) {
          fail(slot + ": the argument bytes under it are not zero (a bundle never stores addresses)");
        }
      }
      uint64_t extent = 0;  // bytes the pointer may address from its base
      switch (p.source) {
        case PointerSource::input:
        case PointerSource::output: {
          const auto& list = p.source == PointerSource::input ? r.inputs : r.outputs;
          if (static_cast<size_t>(p.index) >= list.size()) {
            fail(slot + ": " + std::string(to_string(p.source)) + " " + std::to_string(p.index) + ", but the region has " +
                 std::to_string(list.size()));
          }
          extent = storage_bytes(g_.tensor(list[p.index]));
          if (p.workspace_offset != 0) fail(slot + ": a workspace offset on a tensor pointer");
          break;
        }
        case PointerSource::workspace:
          if (p.index != 0 || p.byte_offset != 0) fail(slot + ": a workspace pointer has index 0 and byte offset 0");
          if (p.workspace_offset >= s.workspace_bytes) {
            fail(slot + ": workspace offset " + std::to_string(p.workspace_offset) + " is outside the step's " +
                 std::to_string(s.workspace_bytes) + " workspace bytes");
          }
          if (p.workspace_offset % p.alignment != 0) fail(slot + ": the workspace offset breaks its alignment");
          continue;
      }
      if (p.byte_offset < 0 || static_cast<uint64_t>(p.byte_offset) >= extent) {
        fail(slot + ": byte offset " + std::to_string(p.byte_offset) + " is outside the tensor's " +
             std::to_string(extent) + " bytes");
      }
      if (static_cast<uint64_t>(p.byte_offset) % p.alignment != 0) {
        fail(slot + ": byte offset " + std::to_string(p.byte_offset) + " breaks its " + std::to_string(p.alignment) +
             "-byte alignment");
      }
    }
    for (size_t j = 0; j < k.tensor_maps.size(); ++j) check_tensor_map(who + ", tensor map " + std::to_string(j), r, k, k.tensor_maps[j]);
  }

  // A TMA map must sit in its own 128 zeroed argument bytes and may address only its tensor:
  // TMA checks a box against the map's dims, not against the buffer.
  void check_tensor_map(const std::string& where, const fuse::Region& r, const KernelRecord& k,
                        const TensorMapRecord& t) {
    if (t.arg_offset % 64 != 0 || t.arg_offset + 128 > k.args.size()) {
      fail(where + ": the 128-byte map at argument offset " + std::to_string(t.arg_offset) +
           " must be 64-aligned and inside the " + std::to_string(k.args.size()) + " argument bytes");
    }
    for (const PointerRecord& p : k.pointers) {
      if (p.arg_offset + 8 > t.arg_offset && p.arg_offset < t.arg_offset + 128) {
        fail(where + ": overlaps the pointer slot at argument offset " + std::to_string(p.arg_offset));
      }
    }
    for (const TensorMapRecord& o : k.tensor_maps) {
      if (&o != &t && o.arg_offset < t.arg_offset + 128 && t.arg_offset < o.arg_offset + 128) {
        fail(where + ": overlaps the tensor map at argument offset " + std::to_string(o.arg_offset));
      }
    }
    for (size_t b = 0; b < 128; ++b) {
      if (k.args[t.arg_offset + b] != 0) fail(where + ": the argument bytes under it are not zero (a bundle never stores addresses)");
    }
    if (t.data_type != CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && t.data_type != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 &&
        t.data_type != CU_TENSOR_MAP_DATA_TYPE_UINT8) {
      fail(where + ": data type " + std::to_string(t.data_type) + " is not f16, bf16 or uint8 (fp8)");
    }
    const auto& list = t.source == PointerSource::input ? r.inputs : r.outputs;
    if (t.source == PointerSource::workspace || static_cast<size_t>(t.index) >= list.size()) {
      fail(where + ": " + std::string(to_string(t.source)) + " " + std::to_string(t.index) +
           " is not a tensor of the region");
    }
    const DType dt = g_.tensor(list[t.index]).dtype;
    if (t.data_type != tensor_map_record_type(dt)) {
      fail(where + ": its data type does not match the tensor's " + std::string(to_string(dt)));
    }
    for (int i = 0; i < 2; ++i) {
      if (t.strides[i] == 0 || t.strides[i] % 16 != 0) {
        fail(where + ": stride " + std::to_string(t.strides[i]) + " is not a positive multiple of 16 bytes");
      }
    }
    // TMA needs a 16-byte aligned global address; arena buffers are aligned, so the offset must be
    if (t.byte_offset % 16 != 0) fail(where + ": byte offset " + std::to_string(t.byte_offset) + " is not a multiple of 16");
    if (t.box[0] * dtype_size(dt) > 128) fail(where + ": an inner box of " + std::to_string(t.box[0]) + " elements exceeds the 128-byte swizzle");
    const uint64_t extent = storage_bytes(g_.tensor(list[t.index]));
    // the furthest byte the map reaches, in 128-bit arithmetic against overflow
    const unsigned __int128 last = static_cast<unsigned __int128>(t.dims[0]) * dtype_size(dt) +
                                   static_cast<unsigned __int128>(t.dims[1] - 1) * t.strides[0] +
                                   static_cast<unsigned __int128>(t.dims[2] - 1) * t.strides[1];
    if (t.byte_offset < 0 || static_cast<unsigned __int128>(t.byte_offset) + last > extent) {
      fail(where + ": the map reaches past the tensor's " + std::to_string(extent) + " bytes");
    }
  }

  void check_workspace_layout() const {
    const WorkspaceLayout& w = plan_.workspace;
    const uint64_t at = align_up(plan_.memory.arena_bytes, kArenaAlignment);
    if (w.offset != at) {
      fail("the workspace area starts at " + std::to_string(w.offset) + ", expected " + std::to_string(at) +
           " (the arena's " + std::to_string(plan_.memory.arena_bytes) + " bytes rounded up to " +
           std::to_string(kArenaAlignment) + ")");
    }
    if (w.bytes != workspace_end_) {
      fail("the workspace area has " + std::to_string(w.bytes) + " bytes, but the steps' workspaces end at " +
           std::to_string(workspace_end_));
    }
  }

  void check_memory() const {
    const MemoryPlan& m = plan_.memory;
    // What must be stored, and for how long, follows from the graph, the partition and the
    // aliases: plan_memory computes it. The offsets are the bundle's; verify_memory_plan checks them.
    const MemoryPlan need = plan_memory(g_, partition_, alias_of_);
    std::vector<const BufferAssignment*> stored(g_.tensors().size(), nullptr);
    uint64_t total = 0;
    for (const BufferAssignment& b : m.buffers) {
      const std::string& name = g_.tensor(b.tensor).name;
      if (stored[b.tensor]) fail("memory plan: tensor '" + name + "' has two buffers");
      stored[b.tensor] = &b;
      if (b.offset % kArenaAlignment != 0 || b.offset + b.bytes > m.arena_bytes) {
        fail("memory plan: the buffer of '" + name + "' at " + std::to_string(b.offset) + " (" +
             std::to_string(b.bytes) + " bytes) is not " + std::to_string(kArenaAlignment) +
             "-aligned inside the " + std::to_string(m.arena_bytes) + "-byte arena");
      }
      total += b.bytes;
    }
    std::vector<bool> needed(g_.tensors().size(), false);
    for (const BufferAssignment& want : need.buffers) {
      needed[want.tensor] = true;
      const std::string& name = g_.tensor(want.tensor).name;
      const BufferAssignment* b = stored[want.tensor];
      if (!b) fail("memory plan: '" + name + "' is stored by step " + std::to_string(want.first_step) + " but has no buffer");
      const size_t bytes = storage_bytes(g_.tensor(want.tensor));
      if (b->bytes < bytes) {
        fail("memory plan: '" + name + "' needs " + std::to_string(bytes) + " bytes, its buffer has " + std::to_string(b->bytes));
      }
      if (b->first_step > want.first_step || b->last_step < want.last_step ||
          b->last_step > static_cast<int>(plan_.steps.size())) {
        fail("memory plan: the buffer of '" + name + "' lives for steps [" + std::to_string(b->first_step) + ", " +
             std::to_string(b->last_step) + "], but the tensor is live for [" + std::to_string(want.first_step) + ", " +
             std::to_string(want.last_step) + "]");
      }
    }
    for (const BufferAssignment& b : m.buffers) {
      if (!needed[b.tensor]) {
        fail("memory plan: '" + g_.tensor(b.tensor).name +
             "' has a buffer, but no step stores it (a graph input, a reshape alias or a fused value)");
      }
    }
    if (m.naive_bytes != total) {
      fail("memory plan: naive_bytes is " + std::to_string(m.naive_bytes) + ", but the buffers add up to " +
           std::to_string(total));
    }
    try {
      verify_memory_plan(g_, m);
    } catch (const Error& e) {
      fail(e.message());
    }
  }

  const Plan& plan_;
  const Graph& g_;
  std::string_view source_;
  fuse::Partition partition_;
  std::vector<TensorId> alias_of_;
  uint64_t workspace_end_ = 0;
  std::set<std::string> used_;
};

}  // namespace

void check_plan(const Plan& plan, const std::vector<StepMembership>& recorded, std::string_view source) {
  Checker(plan, source).run(recorded);
}

}  // namespace sinter::plan::bundle_detail

#include "engines/jit/saved_kernels.hpp"

#include <cstring>

#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

PointerSource to_plan(PointerSlot::Source s) {
  switch (s) {
    case PointerSlot::Source::input: return PointerSource::input;
    case PointerSlot::Source::output: return PointerSource::output;
    case PointerSlot::Source::workspace: return PointerSource::workspace;
  }
  throw Error(ErrorCode::internal, "kernel record: unknown pointer source");
}

PointerSlot::Source to_jit(PointerSource s) {
  switch (s) {
    case PointerSource::input: return PointerSlot::Source::input;
    case PointerSource::output: return PointerSlot::Source::output;
    case PointerSource::workspace: return PointerSlot::Source::workspace;
  }
  throw Error(ErrorCode::internal, "kernel record: unknown pointer source");
}

Dim3 to_dim3(const dim3& d) { return {d.x, d.y, d.z}; }
dim3 from_dim3(const Dim3& d) { return dim3(d[0], d[1], d[2]); }

}  // namespace

KernelRecord to_kernel_record(const KernelSpec& spec, std::string cubin_key, std::string cache_key) {
  KernelRecord r;
  r.entry = spec.entry;
  r.description = spec.description;
  r.grid = to_dim3(spec.launch.grid);
  r.block = to_dim3(spec.launch.block);
  if (spec.launch.dynamic_shared_memory > UINT32_MAX) {
    throw Error(ErrorCode::internal, "kernel '" + spec.description + "': dynamic shared memory " +
                                         std::to_string(spec.launch.dynamic_shared_memory) +
                                         " does not fit a plan record");
  }
  r.dynamic_shared_memory = static_cast<uint32_t>(spec.launch.dynamic_shared_memory);
  if (spec.launch.cluster) r.cluster = to_dim3(*spec.launch.cluster);
  r.cooperative = spec.launch.cooperative;
  r.programmatic = spec.launch.programmatic;
  r.persistent_work = spec.persistent_work;
  r.persistent_fill = spec.persistent_fill;
  const auto* bytes = static_cast<const uint8_t*>(spec.args.data());
  r.args.assign(bytes, bytes + spec.args.size());
  for (const PointerSlot& p : spec.pointers) {
    if (p.arg_offset > r.args.size() || r.args.size() - p.arg_offset < sizeof(void*)) {
      throw Error(ErrorCode::internal, "kernel '" + spec.description + "': a pointer slot at " +
                                           std::to_string(p.arg_offset) + " is outside its " +
                                           std::to_string(r.args.size()) + " argument bytes");
    }
    // Whatever a launch last bound there is an address of this process: never save it.
    std::memset(r.args.data() + p.arg_offset, 0, sizeof(void*));
    r.pointers.push_back({to_plan(p.source), p.index, p.workspace_offset, p.arg_offset,
                          static_cast<uint32_t>(p.alignment), p.byte_offset});
  }
  for (const TensorMapSlot& t : spec.tensor_maps) {
    if (t.arg_offset > r.args.size() || r.args.size() - t.arg_offset < 128) {
      throw Error(ErrorCode::internal, "kernel '" + spec.description + "': a tensor map at " +
                                           std::to_string(t.arg_offset) + " is outside its " +
                                           std::to_string(r.args.size()) + " argument bytes");
    }
    // an encoded map holds this process's address: the runner encodes its own
    std::memset(r.args.data() + t.arg_offset, 0, 128);
    r.tensor_maps.push_back({to_plan(t.source), t.index, t.byte_offset, t.arg_offset, t.data_type,
                             {t.dims[0], t.dims[1], t.dims[2]}, {t.strides[0], t.strides[1]},
                             {t.box[0], t.box[1], t.box[2]}});
  }
  r.cubin = std::move(cubin_key);
  r.cache_key = std::move(cache_key);
  return r;
}

KernelSpec to_kernel_spec(const KernelRecord& r) {
  KernelSpec spec;
  spec.entry = r.entry;
  spec.source.clear();
  spec.description = r.description;
  spec.launch.grid = from_dim3(r.grid);
  spec.launch.block = from_dim3(r.block);
  spec.launch.dynamic_shared_memory = r.dynamic_shared_memory;
  if (r.cluster) spec.launch.cluster = from_dim3(*r.cluster);
  spec.launch.cooperative = r.cooperative;
  spec.launch.programmatic = r.programmatic;
  spec.persistent_work = r.persistent_work;
  spec.persistent_fill = r.persistent_fill;
  // ArgPacker only appends typed fields; one-byte fields have alignment 1, so appending the bytes
  // one at a time reproduces the struct exactly.
  for (uint8_t b : r.args) spec.args.add(b);
  for (const PointerRecord& p : r.pointers) {
    spec.pointers.push_back({to_jit(p.source), p.index, static_cast<size_t>(p.workspace_offset),
                             static_cast<size_t>(p.arg_offset), static_cast<int>(p.alignment),
                             p.byte_offset});
  }
  for (const TensorMapRecord& t : r.tensor_maps) {
    TensorMapSlot m;
    m.source = to_jit(t.source);
    m.index = t.index;
    m.byte_offset = t.byte_offset;
    m.arg_offset = static_cast<size_t>(t.arg_offset);
    m.data_type = t.data_type;
    for (int i = 0; i < 3; ++i) m.dims[i] = t.dims[i];
    for (int i = 0; i < 2; ++i) m.strides[i] = t.strides[i];
    for (int i = 0; i < 3; ++i) m.box[i] = t.box[i];
    spec.tensor_maps.push_back(m);
  }
  return spec;
}

}  // namespace sinter::jit

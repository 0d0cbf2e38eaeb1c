// Writing a plan bundle: the manifest (keys in the documented order, pretty-printed), the blob
// area (blobs in key order, each at a multiple of 256), the header around them. The same plan
// always gives the same bytes, and every bundle is loaded back before it is returned, so a plan
// the loader would reject is never written.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cuda/sha256.hpp"
#include "plan/bundle_format.hpp"
#include "sinter/json.hpp"

namespace sinter::plan {
namespace {

using namespace bundle_detail;
using OJson = nlohmann::ordered_json;  // keys stay in insertion order: the documented order

OJson dim3_json(const Dim3& d) { return OJson::array({d[0], d[1], d[2]}); }

std::string hex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

OJson kernel_json(const KernelRecord& k) {
  OJson j;
  j["entry"] = k.entry;
  j["description"] = k.description;
  j["grid"] = dim3_json(k.grid);
  j["block"] = dim3_json(k.block);
  j["dynamic_shared_memory"] = k.dynamic_shared_memory;
  if (k.cluster) j["cluster"] = dim3_json(*k.cluster);
  j["cooperative"] = k.cooperative;
  j["programmatic"] = k.programmatic;
  j["persistent_work"] = k.persistent_work;
  if (k.persistent_fill) j["persistent_fill"] = true;
  j["args"] = hex(k.args);
  OJson slots = OJson::array();
  for (const PointerRecord& p : k.pointers) {
    slots.push_back(OJson{{"source", std::string(to_string(p.source))},
                          {"index", p.index},
                          {"workspace_offset", p.workspace_offset},
                          {"arg_offset", p.arg_offset},
                          {"alignment", p.alignment},
                          {"byte_offset", p.byte_offset}});
  }
  j["pointers"] = std::move(slots);
  if (!k.tensor_maps.empty()) {
    OJson maps = OJson::array();
    for (const TensorMapRecord& t : k.tensor_maps) {
      maps.push_back(OJson{{"source", std::string(to_string(t.source))},
                           {"index", t.index},
                           {"byte_offset", t.byte_offset},
                           {"arg_offset", t.arg_offset},
                           {"data_type", t.data_type},
                           {"dims", OJson::array({t.dims[0], t.dims[1], t.dims[2]})},
                           {"strides", OJson::array({t.strides[0], t.strides[1]})},
                           {"box", OJson::array({t.box[0], t.box[1], t.box[2]})}});
    }
    j["tensor_maps"] = std::move(maps);
  }
  j["cubin"] = k.cubin;
  if (!k.cache_key.empty()) j["cache_key"] = k.cache_key;
  return j;
}

OJson names_json(const std::vector<std::string>& names) {
  OJson j = OJson::array();
  for (const std::string& n : names) j.push_back(n);
  return j;
}

OJson step_json(const Step& s, const StepMembership& m) {
  OJson j;
  j["region"] = s.region;
  j["kind"] = std::string(fuse::to_string(s.kind));
  j["nodes"] = names_json(m.nodes);
  j["inputs"] = names_json(m.inputs);
  j["outputs"] = names_json(m.outputs);
  j["engine"] = s.engine;
  j["candidate"] = s.candidate;
  j["config"] = s.config;
  j["description"] = s.description;
  if (!s.fallback.empty()) j["fallback"] = s.fallback;
  if (s.tuned_ms >= 0) j["tuned_ms"] = s.tuned_ms;
  j["workspace_offset"] = s.workspace_offset;
  j["workspace_bytes"] = s.workspace_bytes;
  if (!s.saved.kernels.empty()) {
    OJson kernels = OJson::array();
    for (const KernelRecord& k : s.saved.kernels) kernels.push_back(kernel_json(k));
    j["kernels"] = std::move(kernels);
  }
  if (!s.saved.config_blob.empty()) {
    j["config_blob"] = s.saved.config_blob;
    j["config_description"] = s.saved.config_description;
  }
  if (const auto& c = s.saved.collective) {
    OJson cj{{"op", c->op}, {"group", c->group}, {"world", c->world}};
    if (!c->reduce.empty()) cj["reduce"] = c->reduce;
    cj["axis"] = c->axis;
    cj["dtype"] = std::string(to_string(c->dtype));
    cj["count"] = c->count;
    j["collective"] = std::move(cj);
  }
  return j;
}

[[noreturn]] void cannot_save(const std::string& why) {
  throw Error(ErrorCode::invalid_argument, "cannot save the plan: " + why);
}

std::string write_manifest(const Plan& plan, const std::map<std::string, uint64_t>& offsets) {
  const Graph& g = plan.graph;
  fuse::Partition partition;
  try {
    partition = plan_partition(plan);
  } catch (const Error& e) {
    cannot_save("its graph cannot be partitioned: " + e.message());
  }
  OJson m;
  m["format"] = std::string(kManifestFormat);
  m["producer"] = plan.producer;
  m["target"] = OJson{{"arch", plan.target.arch}, {"device", plan.target.device}, {"sm_count", plan.target.sm_count}};
  m["fusion"] = OJson{{"fuse_epilogues", plan.fusion.fuse_epilogues},
                      {"fuse_prologues", plan.fusion.fuse_prologues},
                      {"fuse_reductions", plan.fusion.fuse_reductions},
                      {"fuse_pointwise", plan.fusion.fuse_pointwise},
                      {"fuse_layout_chains", plan.fusion.fuse_layout_chains},
                      {"fold_norms_into_matmuls", plan.fusion.fold_norms_into_matmuls}};
  m["graph"] = save_graph_json(g);
  OJson buffers = OJson::array();
  for (const BufferAssignment& b : plan.memory.buffers) {
    if (b.tensor < 0 || static_cast<size_t>(b.tensor) >= g.tensors().size()) {
      cannot_save("a memory plan buffer names tensor id " + std::to_string(b.tensor) + ", which the graph does not have");
    }
    buffers.push_back(OJson{{"tensor", g.tensor(b.tensor).name},
                            {"offset", b.offset},
                            {"bytes", b.bytes},
                            {"first_step", b.first_step},
                            {"last_step", b.last_step}});
  }
  m["memory"] = OJson{{"arena_bytes", plan.memory.arena_bytes},
                      {"naive_bytes", plan.memory.naive_bytes},
                      {"buffers", std::move(buffers)}};
  m["workspace"] = OJson{{"offset", plan.workspace.offset}, {"bytes", plan.workspace.bytes}};
  OJson steps = OJson::array();
  for (const Step& s : plan.steps) {
    // Membership comes from the partition; a step for a region that does not exist gets none,
    // and the load that checks every written bundle reports the mismatch.
    const bool known = s.region >= 0 && static_cast<size_t>(s.region) < partition.regions.size();
    steps.push_back(step_json(s, known ? membership_of(g, partition.regions[s.region]) : StepMembership{}));
  }
  m["steps"] = std::move(steps);
  if (!plan.megakernels.empty()) {  // absent otherwise: such bundles read as before
    OJson mk = OJson::array();
    for (const MegakernelRecord& r : plan.megakernels) {
      OJson j{{"source_sha256", r.source_sha256}, {"cubin", r.cubin}};
      if (r.megakernel_ms >= 0 && r.steps_ms >= 0) {  // timed (absent otherwise: such bundles read as before)
        j["megakernel_ms"] = r.megakernel_ms;
        j["steps_ms"] = r.steps_ms;
      }
      mk.push_back(std::move(j));
    }
    m["megakernels"] = std::move(mk);
  }
  OJson blobs = OJson::array();
  for (const auto& [key, blob] : plan.blobs) {
    blobs.push_back(OJson{{"key", key}, {"kind", std::string(to_string(blob.kind))}, {"offset", offsets.at(key)},
                          {"size", blob.bytes.size()}});
  }
  m["blobs"] = std::move(blobs);
  try {
    return m.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    cannot_save("a name or description is not valid UTF-8 (" + std::string(e.what()) + ")");
  }
}

[[noreturn]] void throw_io(const std::string& what, const std::string& path, int error) {
  throw Error(ErrorCode::io, "cannot " + what + " " + path + ": " + std::strerror(error));
}

void write_all(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("write", path, errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

std::vector<char> frame_plan_bundle(std::string_view manifest, std::span<const char> blob_area) {
  const uint64_t manifest_end = kBundleHeaderSize + manifest.size();
  const uint64_t area_at = align_up(manifest_end, kBundleAlignment);
  std::vector<char> out(area_at + blob_area.size(), 0);
  std::memcpy(out.data() + kBundleHeaderSize, manifest.data(), manifest.size());
  if (!blob_area.empty()) std::memcpy(out.data() + area_at, blob_area.data(), blob_area.size());
  char* h = out.data();
  std::memcpy(h + kMagicAt, kMagic.data(), kMagic.size());
  put_le(h + kVersionAt, kBundleVersion, 4);
  put_le(h + kHeaderSizeAt, kBundleHeaderSize, 4);
  put_le(h + kFlagsAt, 0, 8);
  put_le(h + kFileSizeAt, out.size(), 8);
  put_le(h + kManifestOffsetAt, kBundleHeaderSize, 8);
  put_le(h + kManifestSizeAt, manifest.size(), 8);
  put_le(h + kBlobAreaOffsetAt, area_at, 8);
  put_le(h + kBlobAreaSizeAt, blob_area.size(), 8);
  // the manifest and its padding; the blobs are covered by their keys, which the manifest holds
  const cuda::Sha256Digest sum = cuda::sha256(h + kBundleHeaderSize, area_at - kBundleHeaderSize);
  std::memcpy(h + kChecksumAt, sum.data(), sum.size());
  return out;
}

std::vector<char> plan_bundle_bytes(const Plan& plan) {
  std::vector<char> area;
  std::map<std::string, uint64_t> offsets;
  for (const auto& [key, blob] : plan.blobs) {  // key order: deterministic
    area.resize(align_up(area.size(), kBundleAlignment), 0);
    offsets[key] = area.size();
    area.insert(area.end(), blob.bytes.begin(), blob.bytes.end());
  }
  std::vector<char> bytes = frame_plan_bundle(write_manifest(plan, offsets), area);
  try {
    (void)load_plan_bundle(bytes, "(being saved)");
  } catch (const Error& e) {
    cannot_save(e.message());
  }
  return bytes;
}

void save_plan_bundle(const Plan& plan, const std::string& path) {
  const std::vector<char> bytes = plan_bundle_bytes(plan);
  // Unique per process and call, so concurrent writers never share a temporary file.
  static std::atomic<uint64_t> counter{0};
  const std::string temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("create", temporary, errno);
  try {
    write_all(fd, bytes.data(), bytes.size(), temporary);
    // The data must be on disk before the rename makes it visible under the final name.
    if (::fsync(fd) != 0) throw_io("fsync", temporary, errno);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) throw_io("close", temporary, errno);
    if (::rename(temporary.c_str(), path.c_str()) != 0) throw_io("rename into place", path, errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);  // makes the rename durable; failing here loses nothing already promised
    ::close(dir);
  }
}

}  // namespace sinter::plan

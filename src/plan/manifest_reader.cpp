// Reading the manifest (JSON) into a Plan: every key known, every field typed and within the
// limits of bundle_format.hpp, every name resolved. A problem is reported with its JSON pointer
// ("plan bundle m.plan: manifest: /steps/2/kernels/0/grid/1: expected an integer in [1, 65535],
// found 0"); the checks that need the whole plan come after, in plan_checks.cpp.
#include "plan/bundle_format.hpp"
#include "sinter/json.hpp"

namespace sinter::plan::bundle_detail {
namespace {

using json_detail::Cursor;
using json_detail::Json;

constexpr int64_t kMaxIndex = INT32_MAX;

std::string list(const std::vector<std::string_view>& names) {
  std::string s;
  for (std::string_view n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::string bounded_text(const Cursor& c, std::string_view what) {
  std::string s = c.as_string(what);
  if (s.size() > kMaxTextBytes) {
    c.fail(std::string(what) + " has " + std::to_string(s.size()) + " bytes; at most " +
           std::to_string(kMaxTextBytes) + " are allowed");
  }
  return s;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 1024 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

Dim3 read_dim3(const Cursor& c, const std::array<int64_t, 3>& max) {
  if (!c.json().is_array() || c.json().size() != 3) {
    c.fail("expected an array of 3 integers (x, y, z), found " + json_detail::describe(c.json()));
  }
  const std::vector<Cursor> items = c.items("integers", 3);
  Dim3 d{};
  for (size_t i = 0; i < 3; ++i) d[i] = static_cast<uint32_t>(items[i].as_int(1, max[i]));
  return d;
}

std::vector<uint8_t> read_hex(const Cursor& c) {
  const std::string s = c.as_string("argument bytes in hex");
  if (s.empty() || s.size() % 2 != 0 || s.size() > 2 * static_cast<size_t>(kMaxArgBytes)) {
    c.fail("expected 1 to " + std::to_string(kMaxArgBytes) +
           " argument bytes as an even number of hex digits, found " + std::to_string(s.size()) + " digits");
  }
  auto digit = [&](char ch) -> uint8_t {
    if (ch >= '0' && ch <= '9') return static_cast<uint8_t>(ch - '0');
    if (ch >= 'a' && ch <= 'f') return static_cast<uint8_t>(ch - 'a' + 10);
    c.fail("argument bytes: '" + std::string(1, ch) + "' is not a lower-case hex digit");
  };
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint8_t>(digit(s[2 * i]) << 4 | digit(s[2 * i + 1]));
  }
  return out;
}

std::vector<std::string> read_names(const Cursor& c, std::string_view what) {
  std::vector<std::string> out;
  for (const Cursor& n : c.items(what, SIZE_MAX)) out.push_back(n.as_name(what));
  return out;
}

// A measured time: a number of milliseconds in [0, 1e9).
double read_milliseconds(const Cursor& c) {
  const double ms = c.as_double();
  if (!(ms >= 0 && ms < 1e9)) c.fail("a measured time must be a number of milliseconds in [0, 1e9)");
  return ms;
}

std::string read_key(const Cursor& c, std::string_view what) {
  const std::string k = c.as_string(what);
  if (!is_blob_key(k)) {
    c.fail(std::string(what) + " is a blob key, 64 lower-case hex digits, found " +
           json_detail::describe(c.json()));
  }
  return k;
}

class ManifestReader {
 public:
  ManifestReader(std::string_view text, std::span<const char> area, std::string_view source)
      : label_("plan bundle " + std::string(source) + ": manifest"),
        doc_(json_detail::parse_json(text, label_)),
        root_(doc_, label_, ""),
        area_(area) {}

  Plan read(std::vector<StepMembership>& membership) {
    if (!doc_.is_object()) {
      root_.fail("expected a JSON object with \"format\": \"sinter.plan\", found " + json_detail::describe(doc_));
    }
    const auto format = root_.find("format");
    if (!format) root_.fail("missing key \"format\"; a plan manifest has \"format\": \"sinter.plan\"");
    if (format->as_string("the format name") != kManifestFormat) {
      format->fail("expected \"sinter.plan\", found " + json_detail::describe(format->json()));
    }
    root_.check_keys({"format", "producer", "target", "fusion", "graph", "memory", "workspace",
                      "steps", "megakernels", "blobs"},
                     "the manifest");
    Plan plan;
    plan.producer = bounded_text(root_.at("producer"), "the producer");
    plan.target = read_target(root_.at("target"));
    plan.fusion = read_fusion(root_.at("fusion"));
    plan.graph = read_graph(root_.at("graph"));
    plan.blobs = read_blob_table(root_.at("blobs"), area_);
    plan.memory = read_memory(root_.at("memory"), plan.graph);
    const Cursor ws = root_.at("workspace");
    ws.expect_object("the workspace layout");
    ws.check_keys({"offset", "bytes"}, "the workspace layout");
    plan.workspace.offset = static_cast<uint64_t>(ws.at("offset").as_int(0, kMaxDeviceBytes));
    plan.workspace.bytes = static_cast<uint64_t>(ws.at("bytes").as_int(0, kMaxDeviceBytes));
    for (const Cursor& s : root_.at("steps").items("steps", SIZE_MAX)) {
      membership.emplace_back();
      plan.steps.push_back(read_step(s, membership.back()));
    }
    if (const auto mk = root_.find("megakernels")) {
      for (const Cursor& r : mk->items("megakernels", SIZE_MAX)) {
        r.expect_object("a megakernel record");
        r.check_keys({"source_sha256", "cubin", "megakernel_ms", "steps_ms"}, "a megakernel record");
        MegakernelRecord record{read_key(r.at("source_sha256"), "a megakernel's source digest"),
                                read_key(r.at("cubin"), "a megakernel's cubin")};
        const auto mega_ms = r.find("megakernel_ms");
        const auto steps_ms = r.find("steps_ms");
        if (mega_ms.has_value() != steps_ms.has_value()) {
          r.fail("a megakernel record has megakernel_ms and steps_ms together or neither");
        }
        if (mega_ms) {
          record.megakernel_ms = read_milliseconds(*mega_ms);
          record.steps_ms = read_milliseconds(*steps_ms);
        }
        plan.megakernels.push_back(std::move(record));
      }
    }
    return plan;
  }

 private:
  Target read_target(const Cursor& c) const {
    c.expect_object("the target");
    c.check_keys({"arch", "device", "sm_count"}, "the target");
    Target t;
    t.arch = c.at("arch").as_string("the target arch");
    // sm_XY, sm_XYZ, optionally with a feature suffix (sm_90a): what NVRTC was given.
    const std::string& a = t.arch;
    bool ok = a.size() >= 5 && a.size() <= 8 && a.rfind("sm_", 0) == 0;
    size_t digits = 0;
    for (size_t i = 3; ok && i < a.size(); ++i) {
      if (a[i] >= '0' && a[i] <= '9' && i == 3 + digits) ++digits;
      else ok = i == a.size() - 1 && a[i] >= 'a' && a[i] <= 'z';
    }
    if (!ok || digits < 2) {
      c.at("arch").fail("expected an architecture such as \"sm_90a\", found " +
                        json_detail::describe(c.at("arch").json()));
    }
    t.device = bounded_text(c.at("device"), "the device name");
    t.sm_count = static_cast<int>(c.at("sm_count").as_int(1, kMaxSmCount));
    return t;
  }

  fuse::FusionOptions read_fusion(const Cursor& c) const {
    c.expect_object("the fusion options");
    c.check_keys({"fuse_epilogues", "fuse_prologues", "fuse_reductions", "fuse_pointwise", "fuse_layout_chains",
                  "fold_norms_into_matmuls"},
                 "the fusion options");
    fuse::FusionOptions f;
    f.fuse_epilogues = c.at("fuse_epilogues").as_bool();
    f.fuse_prologues = c.at("fuse_prologues").as_bool();
    f.fuse_reductions = c.at("fuse_reductions").as_bool();
    f.fuse_pointwise = c.at("fuse_pointwise").as_bool();
    // bundles written before layout chains existed were partitioned without them
    const auto chains = c.find("fuse_layout_chains");
    f.fuse_layout_chains = chains && chains->as_bool();
    // and those written before norms folded into matmuls without that
    const auto norms = c.find("fold_norms_into_matmuls");
    f.fold_norms_into_matmuls = norms && norms->as_bool();
    return f;
  }

  Graph read_graph(const Cursor& c) const {
    const std::string text = c.as_string("the graph (its JSON text)");
    try {
      return load_graph_json(text, "graph");
    } catch (const Error& e) {
      c.fail("the embedded graph does not load: " + e.message(), ErrorCode::corrupt_bundle);
    }
  }

  MemoryPlan read_memory(const Cursor& c, const Graph& g) const {
    c.expect_object("the memory plan");
    c.check_keys({"arena_bytes", "naive_bytes", "buffers"}, "the memory plan");
    MemoryPlan m;
    m.arena_bytes = static_cast<size_t>(c.at("arena_bytes").as_int(0, kMaxDeviceBytes));
    m.naive_bytes = static_cast<size_t>(c.at("naive_bytes").as_int(0, kMaxDeviceBytes));
    for (const Cursor& b : c.at("buffers").items("buffers", SIZE_MAX)) {
      b.expect_object("a buffer");
      b.check_keys({"tensor", "offset", "bytes", "first_step", "last_step"}, "a buffer");
      BufferAssignment a;
      const Cursor name = b.at("tensor");
      const auto t = g.find_tensor(name.as_name("a tensor name"));
      if (!t) name.fail("the graph has no tensor " + json_detail::describe(name.json()));
      a.tensor = t->id;
      a.offset = static_cast<size_t>(b.at("offset").as_int(0, kMaxDeviceBytes));
      a.bytes = static_cast<size_t>(b.at("bytes").as_int(1, kMaxDeviceBytes));
      a.first_step = static_cast<int>(b.at("first_step").as_int(0, kMaxIndex));
      a.last_step = static_cast<int>(b.at("last_step").as_int(0, kMaxIndex));
      m.buffers.push_back(a);
    }
    return m;
  }

  Step read_step(const Cursor& c, StepMembership& member) const {
    c.expect_object("a step");
    c.check_keys({"region", "kind", "nodes", "inputs", "outputs", "engine", "candidate", "config",
                  "description", "fallback", "tuned_ms", "workspace_offset", "workspace_bytes", "kernels",
                  "config_blob", "config_description", "collective"},
                 "a step");
    Step s;
    s.region = static_cast<int>(c.at("region").as_int(0, kMaxIndex));
    const Cursor kind = c.at("kind");
    const std::string kind_name = kind.as_string("a region kind");
    std::vector<std::string_view> kinds;
    bool found = false;
    for (int k = 0; k <= static_cast<int>(fuse::RegionKind::collective); ++k) {
      const auto rk = static_cast<fuse::RegionKind>(k);
      kinds.push_back(fuse::to_string(rk));
      if (kind_name == fuse::to_string(rk)) {
        s.kind = rk;
        found = true;
      }
    }
    if (!found) kind.fail("unknown region kind " + json_detail::describe(kind.json()) + "; known kinds: " + list(kinds));
    member.nodes = read_names(c.at("nodes"), "node names");
    member.inputs = read_names(c.at("inputs"), "tensor names");
    member.outputs = read_names(c.at("outputs"), "tensor names");
    s.engine = c.at("engine").as_name("an engine name");
    s.candidate = static_cast<int>(c.at("candidate").as_int(0, kMaxCandidate));
    s.config = c.at("config").as_string("a config");
    s.description = c.at("description").as_string("a description");
    if (auto f = c.find("fallback")) s.fallback = f->as_string("a fallback reason");
    if (auto t = c.find("tuned_ms")) s.tuned_ms = read_milliseconds(*t);
    s.workspace_offset = static_cast<uint64_t>(c.at("workspace_offset").as_int(0, kMaxDeviceBytes));
    s.workspace_bytes = static_cast<uint64_t>(c.at("workspace_bytes").as_int(0, kMaxDeviceBytes));
    if (auto k = c.find("kernels")) {
      for (const Cursor& kc : k->items("kernels", SIZE_MAX)) s.saved.kernels.push_back(read_kernel(kc));
    }
    const auto blob = c.find("config_blob");
    const auto config_description = c.find("config_description");
    if (blob.has_value() != config_description.has_value()) {
      c.fail("\"config_blob\" and \"config_description\" come together; this step has only one of them");
    }
    if (blob) {
      s.saved.config_blob = read_key(*blob, "the config blob");
      s.saved.config_description = config_description->as_string("a config description");
    }
    if (auto col = c.find("collective")) s.saved.collective = read_collective(*col);
    return s;
  }

  // Ranges and names only; the nccl engine checks the record against the graph's node.
  CollectiveRecord read_collective(const Cursor& c) const {
    c.expect_object("a collective record");
    c.check_keys({"op", "group", "world", "reduce", "axis", "dtype", "count"}, "a collective record");
    CollectiveRecord r;
    const Cursor op = c.at("op");
    r.op = op.as_string("a collective op");
    if (r.op != "all_reduce" && r.op != "all_gather" && r.op != "reduce_scatter") {
      op.fail("expected all_reduce, all_gather or reduce_scatter, found " + json_detail::describe(op.json()));
    }
    r.group = c.at("group").as_name("a group name");
    r.world = c.at("world").as_int(1, kMaxWorld);
    if (auto red = c.find("reduce")) {
      r.reduce = red->as_string("a reduction");
      if (!parse_collective_reduce(r.reduce)) red->fail("expected sum or max, found " + json_detail::describe(red->json()));
    }
    if (r.op == "all_gather" ? !r.reduce.empty() : r.reduce.empty()) {
      c.fail(r.op == "all_gather" ? "an all_gather reduces nothing: no \"reduce\"" : "the " + r.op + " needs its \"reduce\"");
    }
    r.axis = c.at("axis").as_int(0, kMaxIndex);
    r.dtype = c.at("dtype").as_dtype();
    r.count = static_cast<uint64_t>(c.at("count").as_int(0, kMaxDeviceBytes));
    return r;
  }

  KernelRecord read_kernel(const Cursor& c) const {
    c.expect_object("a kernel");
    c.check_keys({"entry", "description", "grid", "block", "dynamic_shared_memory", "cluster",
                  "cooperative", "programmatic", "persistent_work", "persistent_fill", "args", "pointers", "tensor_maps", "cubin",
                  "cache_key"},
                 "a kernel");
    KernelRecord k;
    const Cursor entry = c.at("entry");
    k.entry = entry.as_string("the kernel's entry name");
    if (!is_identifier(k.entry)) {
      entry.fail("expected an extern \"C\" kernel name (a C identifier), found " + json_detail::describe(entry.json()));
    }
    k.description = c.at("description").as_string("a description");
    k.grid = read_dim3(c.at("grid"), {kMaxGridX, kMaxGridYZ, kMaxGridYZ});
    k.block = read_dim3(c.at("block"), {kMaxBlockThreads, kMaxBlockThreads, kMaxBlockZ});
    k.dynamic_shared_memory =
        static_cast<uint32_t>(c.at("dynamic_shared_memory").as_int(0, kMaxDynamicSharedMemory));
    if (auto cl = c.find("cluster")) {
      k.cluster = read_dim3(*cl, {kMaxClusterBlocks, kMaxClusterBlocks, kMaxClusterBlocks});
    }
    k.cooperative = c.at("cooperative").as_bool();
    if (auto pr = c.find("programmatic")) k.programmatic = pr->as_bool();
    k.persistent_work = c.at("persistent_work").as_int(0, kMaxPersistentWork);
    if (auto f = c.find("persistent_fill")) k.persistent_fill = f->as_bool();
    k.args = read_hex(c.at("args"));
    for (const Cursor& p : c.at("pointers").items("pointer slots", SIZE_MAX)) {
      k.pointers.push_back(read_pointer(p));
    }
    if (auto maps = c.find("tensor_maps")) {
      for (const Cursor& t : maps->items("tensor maps", SIZE_MAX)) k.tensor_maps.push_back(read_tensor_map(t));
    }
    k.cubin = read_key(c.at("cubin"), "the cubin");
    if (auto key = c.find("cache_key")) k.cache_key = read_key(*key, "the kernel cache key");
    return k;
  }

  // Ranges only; what the map may address is checked against the region's tensors in plan_checks.
  TensorMapRecord read_tensor_map(const Cursor& c) const {
    c.expect_object("a tensor map");
    c.check_keys({"source", "index", "byte_offset", "arg_offset", "data_type", "dims", "strides", "box"},
                 "a tensor map");
    TensorMapRecord t;
    const Cursor source = c.at("source");
    const std::string name = source.as_string("a tensor map source");
    if (name == "input") t.source = PointerSource::input;
    else if (name == "output") t.source = PointerSource::output;
    else source.fail("a tensor map reads an input or an output, found " + json_detail::describe(source.json()));
    t.index = static_cast<int>(c.at("index").as_int(0, kMaxIndex));
    t.byte_offset = c.at("byte_offset").as_int(0, kMaxDeviceBytes);
    t.arg_offset = static_cast<uint64_t>(c.at("arg_offset").as_int(0, kMaxArgBytes));
    t.data_type = static_cast<int>(c.at("data_type").as_int(0, 64));
    const auto dims = c.at("dims").items("tensor map dims", 3);
    const auto strides = c.at("strides").items("tensor map strides", 2);
    const auto box = c.at("box").items("tensor map box", 3);
    if (dims.size() != 3 || strides.size() != 2 || box.size() != 3) {
      c.fail("a tensor map has 3 dims, 2 strides and a 3D box");
    }
    for (int i = 0; i < 3; ++i) t.dims[i] = static_cast<uint64_t>(dims[i].as_int(1, int64_t{1} << 32));
    for (int i = 0; i < 2; ++i) t.strides[i] = static_cast<uint64_t>(strides[i].as_int(0, (int64_t{1} << 40) - 1));
    for (int i = 0; i < 3; ++i) t.box[i] = static_cast<uint32_t>(box[i].as_int(1, 256));
    return t;
  }

  PointerRecord read_pointer(const Cursor& c) const {
    c.expect_object("a pointer slot");
    c.check_keys({"source", "index", "workspace_offset", "arg_offset", "alignment", "byte_offset"},
                 "a pointer slot");
    PointerRecord p;
    const Cursor source = c.at("source");
    const std::string name = source.as_string("a pointer source");
    if (name == "input") p.source = PointerSource::input;
    else if (name == "output") p.source = PointerSource::output;
    else if (name == "workspace") p.source = PointerSource::workspace;
    else source.fail("unknown pointer source " + json_detail::describe(source.json()) + "; known: input, output, workspace");
    p.index = static_cast<int>(c.at("index").as_int(0, kMaxIndex));
    p.workspace_offset = static_cast<uint64_t>(c.at("workspace_offset").as_int(0, kMaxDeviceBytes));
    p.arg_offset = static_cast<uint64_t>(c.at("arg_offset").as_int(0, kMaxArgBytes));
    const Cursor align = c.at("alignment");
    p.alignment = static_cast<uint32_t>(align.as_int(1, kMaxAlignment));
    if ((p.alignment & (p.alignment - 1)) != 0) {
      align.fail("an alignment is a power of two, found " + std::to_string(p.alignment));
    }
    p.byte_offset = c.at("byte_offset").as_int(-kMaxDeviceBytes, kMaxDeviceBytes);
    return p;
  }

  std::string label_;
  Json doc_;
  Cursor root_;
  std::span<const char> area_;
};

}  // namespace

Plan read_manifest(std::string_view manifest, std::span<const char> area, std::string_view source) {
  std::vector<StepMembership> membership;
  Plan plan;
  try {
    plan = ManifestReader(manifest, area, source).read(membership);
  } catch (const Error& e) {
    // The JSON helpers report content errors as parse errors; in a bundle they are corruption.
    if (e.code() == ErrorCode::corrupt_bundle) throw;
    throw Error(ErrorCode::corrupt_bundle, e.message());
  }
  check_plan(plan, membership, source);
  return plan;
}

}  // namespace sinter::plan::bundle_detail

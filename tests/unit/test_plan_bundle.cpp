// plan::Plan bundles (docs/plan-bundle.md): round trip, deterministic bytes, atomic save, and every
// class of damage rejected as Error(corrupt_bundle) with a message that says what is wrong.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "plan/bundle_format.hpp"
#include "plan/plan_state.hpp"
#include "engines/jit/saved_kernels.hpp"
#include "plan_fixture.hpp"
#include "sinter/json.hpp"

using namespace sinter;
using namespace sinter::plan;

namespace {

// Loads `bytes` expecting corrupt_bundle; returns the message.
std::string rejection(const std::vector<char>& bytes) {
  try {
    (void)load_plan_bundle(bytes, "t.plan");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_bundle) << e.message();
    EXPECT_EQ(e.message().rfind("plan bundle t.plan: ", 0), 0u) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "a damaged bundle loaded (" << bytes.size() << " bytes)";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The manifest and blob area of a well-formed bundle.
std::pair<std::string, std::vector<char>> split(const std::vector<char>& bytes) {
  using namespace bundle_detail;
  const uint64_t m_at = get_le(bytes.data() + kManifestOffsetAt, 8), m_size = get_le(bytes.data() + kManifestSizeAt, 8);
  const uint64_t a_at = get_le(bytes.data() + kBlobAreaOffsetAt, 8);
  return {std::string(bytes.data() + m_at, m_size), std::vector<char>(bytes.begin() + a_at, bytes.end())};
}

// Edits the manifest of a valid bundle as JSON and frames it again (checksum recomputed), so
// the loader's semantic checks, not the checksum, have to catch the edit.
std::vector<char> edited(const std::vector<char>& bytes, const std::function<void(nlohmann::ordered_json&)>& edit) {
  auto [manifest, area] = split(bytes);
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(manifest);
  edit(m);
  return frame_plan_bundle(m.dump(2) + "\n", area);
}

bool same_plan(const plan::Plan& a, const plan::Plan& b) {
  return a.producer == b.producer && save_graph_json(a.graph) == save_graph_json(b.graph) &&
         a.target == b.target && a.memory.arena_bytes == b.memory.arena_bytes &&
         a.memory.buffers.size() == b.memory.buffers.size() && a.workspace == b.workspace &&
         a.steps == b.steps && a.blobs == b.blobs;
}

}  // namespace

TEST(PlanBundle, RoundTripKeepsEveryField) {
  const plan::Plan p = test::make_fixture_plan();
  ASSERT_EQ(p.steps.size(), 4u);
  EXPECT_EQ(p.blobs.size(), 3u);  // relu and exp cubins (one shared by two steps), one config
  const std::vector<char> bytes = plan_bundle_bytes(p);
  const plan::Plan q = load_plan_bundle(bytes, "t.plan");
  EXPECT_TRUE(same_plan(p, q));
  for (size_t b = 0; b < p.memory.buffers.size(); ++b) {
    EXPECT_EQ(p.memory.buffers[b].tensor, q.memory.buffers[b].tensor);
    EXPECT_EQ(p.memory.buffers[b].offset, q.memory.buffers[b].offset);
  }
}

TEST(PlanBundle, BytesAreDeterministicAndAligned) {
  const std::vector<char> a = plan_bundle_bytes(test::make_fixture_plan());
  const std::vector<char> b = plan_bundle_bytes(test::make_fixture_plan());
  EXPECT_EQ(a, b);
  EXPECT_EQ(plan_bundle_bytes(load_plan_bundle(a, "t.plan")), a);  // load + save is the identity
  EXPECT_EQ(std::memcmp(a.data(), "SINTERPL", 8), 0);
  const uint64_t area = bundle_detail::get_le(a.data() + bundle_detail::kBlobAreaOffsetAt, 8);
  EXPECT_EQ(area % kBundleAlignment, 0u);
  const auto manifest = nlohmann::json::parse(split(a).first);
  for (const auto& blob : manifest["blobs"]) EXPECT_EQ(blob["offset"].get<uint64_t>() % kBundleAlignment, 0u);
}

TEST(PlanBundle, SaveIsAtomicAndLoadsBack) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("sinter-plan-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.plan").string();
  const plan::Plan p = test::make_fixture_plan();
  save_plan_bundle(p, path);
  save_plan_bundle(p, path);  // replacing an existing bundle
  EXPECT_TRUE(same_plan(p, load_plan_bundle(path)));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary left behind
  std::filesystem::remove_all(dir);
  try {
    (void)load_plan_bundle((dir / "missing.plan").string());
    ADD_FAILURE() << "a missing file loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_TRUE(contains(e.message(), "missing.plan")) << e.message();
  }
}

TEST(PlanBundle, TruncationAtAnyOffsetIsCorrupt) {
  const std::vector<char> bytes = plan_bundle_bytes(test::make_fixture_plan());
  for (size_t n = 0; n < bytes.size(); n += (n < 300 ? 1 : 97)) {
    const std::string m = rejection(std::vector<char>(bytes.begin(), bytes.begin() + n));
    if (n >= 8) {
      EXPECT_TRUE(contains(m, "truncated")) << "at " << n << ": " << m;
    }
  }
  std::vector<char> longer = bytes;
  longer.push_back(0);
  EXPECT_TRUE(contains(rejection(longer), "unexpected bytes after the end"));
}

TEST(PlanBundle, FlippedBytesAreCorrupt) {
  const std::vector<char> bytes = plan_bundle_bytes(test::make_fixture_plan());
  // Every header byte, then a spread over the manifest and the blob area.
  std::vector<size_t> at;
  for (size_t i = 0; i < kBundleHeaderSize; ++i) at.push_back(i);
  for (size_t i = kBundleHeaderSize; i < bytes.size(); i += 31) at.push_back(i);
  at.push_back(bytes.size() - 1);
  for (size_t i : at) {
    std::vector<char> bad = bytes;
    bad[i] ^= 0x10;
    SCOPED_TRACE("flipped byte " + std::to_string(i));
    const std::string m = rejection(bad);
    // Past the header: the checksum catches it (or, in the manifest's zero padding, the padding check).
    if (i >= kBundleHeaderSize) {
      EXPECT_TRUE(contains(m, "checksum mismatch") || contains(m, "padding")) << "at " << i << ": " << m;
    }
  }
}

TEST(PlanBundle, WrongMagicAndVersion) {
  std::vector<char> bytes = plan_bundle_bytes(test::make_fixture_plan());
  std::vector<char> magic = bytes;
  magic[3] = 'X';
  EXPECT_TRUE(contains(rejection(magic), "not a Sinter plan bundle"));
  EXPECT_TRUE(contains(rejection(std::vector<char>{'{', '}'}), "not a Sinter plan bundle"));
  std::vector<char> newer = bytes;
  bundle_detail::put_le(newer.data() + bundle_detail::kVersionAt, kBundleVersion + 1, 4);
  EXPECT_TRUE(contains(rejection(newer), "format version 4 is newer than this build reads (3)"));
  newer.resize(20);  // a newer file says so even when its layout is unknown (truncated here)
  EXPECT_TRUE(contains(rejection(newer), "newer"));
  std::vector<char> older = bytes;
  bundle_detail::put_le(older.data() + bundle_detail::kVersionAt, kBundleVersion - 1, 4);
  EXPECT_TRUE(contains(rejection(older), "format version 2 was written by an older Sinter"));
  std::vector<char> zero = bytes;
  bundle_detail::put_le(zero.data() + bundle_detail::kVersionAt, 0, 4);
  EXPECT_TRUE(contains(rejection(zero), "version 0"));
}

TEST(PlanBundle, WrongGraphIsCorrupt) {
  const std::vector<char> bytes = plan_bundle_bytes(test::make_fixture_plan(3));
  // The graph of another model (a longer chain): the steps no longer match its partition.
  const std::string other = save_graph_json(test::plan_fixture_graph(5));
  EXPECT_TRUE(contains(rejection(edited(bytes, [&](auto& m) { m["graph"] = other; })), "another graph"));
  // Same size, other ops (exp where relu was): the recorded region membership differs.
  Graph swapped("plan_fixture");
  Tensor x = swapped.input("x", DType::f32, {64, 32});
  Tensor w = swapped.input("w", DType::f32, {32, 16});
  Tensor h = swapped.exp(swapped.relu(swapped.exp(swapped.matmul(x, w))));
  swapped.output(h, "y");
  const std::string m = rejection(edited(bytes, [&](auto& j) { j["graph"] = save_graph_json(swapped); }));
  // Its tensors have other names (exp1 where relu1 was): the memory plan names a missing tensor.
  EXPECT_TRUE(contains(m, "another graph") || contains(m, "the graph has no tensor")) << m;
  // Other fusion options partition the same graph differently.
  EXPECT_TRUE(contains(rejection(edited(bytes, [](auto& j) { j["fusion"]["fuse_pointwise"] = true; })), "another graph"));
}

TEST(PlanBundle, WrongArchIsCorrupt) {
  const plan::Plan p = test::make_fixture_plan();
  cuda::DeviceProperties a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.arch = "sm_80";
  a100.sm_count = 108;
  try {
    (void)check_plan_target(p, a100);
    ADD_FAILURE() << "an sm_90a plan accepted an sm_80 GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_bundle);
    EXPECT_TRUE(contains(e.message(), "built for sm_90a")) << e.message();
    EXPECT_TRUE(contains(e.message(), "sm_80")) << e.message();
  }
  cuda::DeviceProperties smaller{};
  smaller.name = "NVIDIA H100 PCIe";
  smaller.arch = "sm_90a";
  smaller.sm_count = 114;
  EXPECT_TRUE(contains(check_plan_target(p, smaller), "114"));  // runs, with a note
  const std::vector<char> bytes = plan_bundle_bytes(p);
  EXPECT_TRUE(contains(rejection(edited(bytes, [](auto& m) { m["target"]["arch"] = "sm90"; })), "architecture"));
}

TEST(PlanBundle, SemanticDamageIsNamed) {
  const std::vector<char> bytes = plan_bundle_bytes(test::make_fixture_plan());
  struct Case {
    const char* expect;
    std::function<void(nlohmann::ordered_json&)> edit;
  };
  const std::vector<Case> cases = {
      {"unknown engine", [](auto& m) { m["steps"][1]["engine"] = "tensorrt"; }},
      {"inside the 24 argument bytes", [](auto& m) { m["steps"][1]["kernels"][0]["pointers"][0]["arg_offset"] = 24; }},
      {"not zero (a bundle never stores addresses)", [](auto& m) { m["steps"][1]["kernels"][0]["args"] = "01" + std::string(46, '0'); }},
      {"but the region has 1", [](auto& m) { m["steps"][1]["kernels"][0]["pointers"][0]["index"] = 1; }},
      {"is not in the bundle", [](auto& m) { m["steps"][1]["kernels"][0]["cubin"] = std::string(64, 'a'); }},
      {"not used by any step", [](auto& m) { m["steps"][2]["kernels"][0]["cubin"] = m["steps"][1]["kernels"][0]["cubin"]; }},
      {"needs its algorithm config", [](auto& m) { m["steps"][0].erase("config_blob"); m["steps"][0].erase("config_description"); }},
      {"expected an integer", [](auto& m) { m["steps"][1]["kernels"][0]["grid"][1] = 0; }},
      {"has no buffer", [](auto& m) { m["memory"]["buffers"].erase(size_t{0}); }},
      {"the workspace area", [](auto& m) { m["workspace"]["bytes"] = 4096; }},
      {"unknown", [](auto& m) { m["surprise"] = 1; }},
      {"checksum mismatch", [](auto& m) { m["blobs"][0]["key"] = std::string(64, 'b'); }},
      // a kernel given none of its region's outputs would run and leave
      // the output unwritten; more dynamic shared memory than the architecture has fails at launch
      {"none of its kernels is given output", [](auto& m) { m["steps"][1]["kernels"][0]["pointers"][1]["source"] = "input"; }},
      {"bytes of dynamic shared memory; a block on sm_90a takes at most 232448",
       [](auto& m) { m["steps"][1]["kernels"][0]["dynamic_shared_memory"] = 262144; }},
  };
  for (const Case& c : cases) {
    const std::string m = rejection(edited(bytes, c.edit));
    EXPECT_TRUE(contains(m, c.expect)) << "expected \"" << c.expect << "\" in: " << m;
  }
  // Not JSON at all, inside a well-framed bundle.
  EXPECT_TRUE(contains(rejection(frame_plan_bundle("{\"format\": ", split(bytes).second)), "manifest"));
}

TEST(PlanBundle, WriterRefusesPlansTheLoaderWouldReject) {
  plan::Plan p = test::make_fixture_plan();
  p.steps[1].saved.kernels[0].pointers[0].arg_offset = 64;
  try {
    (void)plan_bundle_bytes(p);
    ADD_FAILURE() << "a broken plan was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(e.message(), "cannot save the plan")) << e.message();
  }
}

// TMA tensor maps of a kernel (the Hopper GEMM's operands) travel in the bundle: their slots
// round trip, the 128 argument bytes under them are zero, and a map that could read past its
// tensor, overlaps a pointer or names a wrong type is refused by name.
TEST(PlanBundle, TensorMapsRoundTripAndAreChecked) {
  auto with_map = [](const std::function<void(TensorMapRecord&)>& edit) {
    plan::Plan p = test::make_fixture_plan(3, "plan_fixture", DType::bf16);
    KernelRecord& k = p.steps[1].saved.kernels[0];  // a pointwise step over [64, 16] bf16: 2048 bytes
    k.args.resize(256, 0);
    TensorMapRecord t;
    t.source = PointerSource::input;
    t.index = 0;
    t.arg_offset = 128;
    t.data_type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    t.dims = {16, 64, 1};
    t.strides = {32, 2048};
    t.box = {64, 64, 1};
    edit(t);
    k.tensor_maps.push_back(t);
    return p;
  };
  const plan::Plan p = with_map([](TensorMapRecord&) {});
  const plan::Plan q = load_plan_bundle(plan_bundle_bytes(p), "t.plan");
  ASSERT_EQ(q.steps[1].saved.kernels[0].tensor_maps.size(), 1u);
  EXPECT_EQ(q.steps[1].saved.kernels[0].tensor_maps[0], p.steps[1].saved.kernels[0].tensor_maps[0]);
  const sinter::jit::KernelSpec spec = jit::to_kernel_spec(q.steps[1].saved.kernels[0]);
  ASSERT_EQ(spec.tensor_maps.size(), 1u);
  EXPECT_EQ(spec.tensor_maps[0].arg_offset, 128u);
  EXPECT_EQ(spec.tensor_maps[0].dims[1], 64u);
  EXPECT_EQ(spec.tensor_maps[0].box[0], 64u);
  struct Case {
    const char* expect;
    std::function<void(TensorMapRecord&)> edit;
  };
  const std::vector<Case> cases = {
      {"reaches past the tensor's 2048 bytes", [](TensorMapRecord& t) { t.dims[1] = 65; }},
      {"reaches past", [](TensorMapRecord& t) { t.byte_offset = 32; }},
      {"must be 64-aligned", [](TensorMapRecord& t) { t.arg_offset = 96; }},
      {"inside the 256 argument bytes", [](TensorMapRecord& t) { t.arg_offset = 192; }},
      {"overlaps the pointer slot", [](TensorMapRecord& t) { t.arg_offset = 0; }},
      {"is not f16, bf16 or uint8 (fp8)", [](TensorMapRecord& t) { t.data_type = 7; }},
      {"does not match the tensor's bf16", [](TensorMapRecord& t) { t.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }},
      {"does not match the tensor's bf16", [](TensorMapRecord& t) { t.data_type = CU_TENSOR_MAP_DATA_TYPE_UINT8; }},
      {"exceeds the 128-byte swizzle", [](TensorMapRecord& t) { t.box[0] = 65; }},
      {"not a positive multiple of 16 bytes", [](TensorMapRecord& t) { t.strides[0] = 40; }},
      {"not a positive multiple of 16 bytes", [](TensorMapRecord& t) { t.strides[1] = 0; }},
      {"byte offset 8 is not a multiple of 16", [](TensorMapRecord& t) { t.byte_offset = 8; }},
      {"is not a tensor of the region", [](TensorMapRecord& t) { t.index = 3; }},
  };
  for (const Case& c : cases) {
    try {
      (void)plan_bundle_bytes(with_map(c.edit));
      ADD_FAILURE() << "a plan with a bad tensor map was written (expected \"" << c.expect << "\")";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.message(), c.expect)) << "expected \"" << c.expect << "\" in: " << e.message();
    }
  }
  // bytes under a map that are not zero (an address) are refused at load, too
  plan::Plan dirty = with_map([](TensorMapRecord&) {});
  const std::vector<char> bytes = plan_bundle_bytes(dirty);
  const std::string m = rejection(edited(bytes, [](auto& j) {
    std::string args = j["steps"][1]["kernels"][0]["args"];
    args[2 * 130] = '7';
    j["steps"][1]["kernels"][0]["args"] = args;
  }));
  EXPECT_TRUE(contains(m, "not zero")) << m;
}

// A cuDNN step is stored as its engine config text (version 1: engine and knobs; version 2 may
// end with cuDNN's serialized execution plan): it round trips, and a config that does not parse
// is refused by name.
TEST(PlanBundle, CudnnStepsCarryTheirEngineConfig) {
  auto with_cudnn_step = [](const std::string& config_text) {
    plan::Plan p = test::make_fixture_plan();
    const std::string old_blob = p.steps[0].saved.config_blob;  // the fixture's matmul step: a kind cuDNN lowers
    Step& mm = p.steps[0];
    mm.engine = "cudnn";
    mm.config = "eng 3 knobs {24=7} [heur A] ws 0 KiB";
    mm.description = "cudnn 9.14.0 matmul [f32] eng 3";
    mm.saved.config_blob = add_blob(p, BlobKind::vendor_config, config_text);
    mm.saved.config_description = "eng 3 knobs {24=7} [heur A] ws 0 KiB";
    p.blobs.erase(old_blob);  // the cuBLASLt algo is no longer used by any step
    return p;
  };
  for (const std::string& text : {std::string("sinter.cudnn.engine_config 1\nengine 3\nknob 24 7\n"),
                                 std::string("sinter.cudnn.engine_config 2\nengine 3\nknob 24 7\nplan_json 9\n{\"a\":\n1}\n"),
                                 "sinter.cudnn.engine_config 3\nengine 3\nknob 24 7\ngraph " + std::string(64, 'e') +
                                     "\nplan_json 9\n{\"a\":\n1}\n"}) {
    const plan::Plan p = with_cudnn_step(text);
    const plan::Plan q = load_plan_bundle(plan_bundle_bytes(p), "t.plan");
    EXPECT_EQ(q.steps[0].engine, "cudnn");
    EXPECT_EQ(q.blobs.at(q.steps[0].saved.config_blob).bytes, p.blobs.at(p.steps[0].saved.config_blob).bytes);
  }
  try {
    (void)plan_bundle_bytes(with_cudnn_step("sinter.cudnn.engine_config 2\nengine 3\nplan_json 20\n{}"));
    ADD_FAILURE() << "a cuDNN step with a truncated serialized plan was written";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.message(), "serialized plan should be 20 bytes")) << e.message();
  }
  try {
    (void)plan_bundle_bytes(with_cudnn_step("engine 3\n"));
    ADD_FAILURE() << "a cuDNN step with a config that does not parse was written";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.message(), "not a cuDNN engine config")) << e.message();
  }
}

// Megakernel records: their cubins, and what compile measured (each megakernel's segments as the
// megakernel and as their steps launched one by one), round trip; a record with one time of the
// two, or a time that is no number of milliseconds, is refused by name. A record never timed
// stores neither key (bundles without them read as before).
TEST(PlanBundle, MegakernelRecordsCarryTheirTimes) {
  plan::Plan p = test::make_fixture_plan();
  const std::string timed_cubin = plan::add_blob(p, BlobKind::cubin, std::string("\x7f" "ELF fake megakernel 1"));
  const std::string untimed_cubin = plan::add_blob(p, BlobKind::cubin, std::string("\x7f" "ELF fake megakernel 2"));
  MegakernelRecord timed{std::string(64, 'd'), timed_cubin, 0.25, 0.125};
  MegakernelRecord untimed{std::string(64, 'e'), untimed_cubin};
  p.megakernels = {timed, untimed};
  EXPECT_TRUE(timed.steps_faster());
  EXPECT_FALSE(untimed.steps_faster());
  const std::vector<char> bytes = plan_bundle_bytes(p);
  const plan::Plan q = load_plan_bundle(bytes, "t.plan");
  ASSERT_EQ(q.megakernels.size(), 2u);
  EXPECT_EQ(q.megakernels[0], timed);
  EXPECT_EQ(q.megakernels[1], untimed);
  const auto manifest = nlohmann::ordered_json::parse(split(bytes).first);
  EXPECT_FALSE(manifest["megakernels"][1].contains("megakernel_ms"));
  EXPECT_DOUBLE_EQ(manifest["megakernels"][0]["steps_ms"].get<double>(), 0.125);

  const std::vector<std::pair<const char*, std::function<void(nlohmann::ordered_json&)>>> cases = {
      {"megakernel_ms and steps_ms together or neither", [](auto& m) { m["megakernels"][0].erase("steps_ms"); }},
      {"a number of milliseconds in [0, 1e9)", [](auto& m) { m["megakernels"][0]["steps_ms"] = -1.0; }},
      {"unknown", [](auto& m) { m["megakernels"][1]["launch"] = "steps"; }},
  };
  for (const auto& [expect, edit] : cases) {
    const std::string m = rejection(edited(bytes, edit));
    EXPECT_TRUE(contains(m, expect)) << "expected \"" << expect << "\" in: " << m;
  }
}

// Plan::describe (sinter inspect) shows each megakernel the plan carries and what compile measured.
TEST(PlanBundle, DescriptionShowsTheMegakernelsAndTheirTimes) {
  auto state = std::make_shared<sinter::Plan::State>();
  state->data = test::make_fixture_plan();
  plan::Plan& p = state->data;
  const std::string timed_cubin = plan::add_blob(p, BlobKind::cubin, std::string("\x7f" "ELF fake megakernel 1"));
  const std::string untimed_cubin = plan::add_blob(p, BlobKind::cubin, std::string("\x7f" "ELF fake megakernel 2"));
  p.megakernels = {{std::string(64, 'd'), timed_cubin, 0.25, 0.125}, {std::string(64, 'e'), untimed_cubin}};
  const PlanDescription d = sinter::Plan(state).describe();
  ASSERT_EQ(d.megakernels.size(), 2u);
  EXPECT_TRUE(d.megakernels[0].steps_faster);
  EXPECT_EQ(d.megakernels[0].cubin_bytes, 22u);
  EXPECT_FALSE(d.megakernels[1].steps_faster);
  EXPECT_LT(d.megakernels[1].megakernel_ms, 0);
  const std::string text = to_text(d);
  EXPECT_TRUE(contains(text, "a segment 0.2500 ms as the megakernel, 0.1250 ms as its steps: runs as its steps")) << text;
  EXPECT_TRUE(contains(text, "not timed: runs as the megakernel")) << text;
  const auto j = nlohmann::json::parse(to_json(d));
  ASSERT_EQ(j["megakernels"].size(), 2u);
  EXPECT_EQ(j["megakernels"][0]["steps_faster"], true);
  EXPECT_EQ(j["megakernels"][1]["source_sha256"], std::string(64, 'e'));
}

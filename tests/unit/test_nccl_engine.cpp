// The nccl engine on the CPU: the NCCL loader's reasons, what a collective step runs (NCCL
// datatype, count, the outermost-axis rule) and every reason it refuses one, the communicator
// checks a Runner's steps make when they load, collective steps in plan bundles (round trip and
// damaged records), and explain's answer for a collective region. The GPU tests (tests/gpu/test_gpu_collectives.cpp)
// run the steps.
#include <nlohmann/json.hpp>

#include "comm/communicator_state.hpp"
#include "comm/nccl_library.hpp"
#include "engines/nccl/collective_config.hpp"
#include "engines/nccl/nccl_engine.hpp"
#include "fuse/region.hpp"
#include "plan/bundle.hpp"
#include "plan/bundle_format.hpp"
#include "plan/memory_plan.hpp"
#include "plan/plan.hpp"
#include "sinter/explain.hpp"
#include "test_ref_util.hpp"

using namespace ref_test;

namespace {

// The partition of a validated graph, and the region anchored on the `nth` node of op `op`.
struct Regions {
  Graph g;
  fuse::Partition p;
  const fuse::Region& of(OpKind op, int nth = 0) const {
    for (const fuse::Region& r : p.regions) {
      if (r.anchor >= 0 && g.node(r.anchor).op == op && nth-- == 0) return r;
    }
    throw Error(ErrorCode::internal, "test: no region anchored on " + std::string(to_string(op)));
  }
};
Regions partitioned(Graph g) {
  g.validate();
  fuse::Partition p = fuse::partition_graph(g);
  return {std::move(g), std::move(p)};
}

nccl::CollectiveMatch match(const Regions& rs, OpKind op, int nth = 0) { return nccl::match_collective(rs.g, rs.of(op, nth)); }

// A communicator handle with no NCCL communicator behind it: rank, world and device only.
Communicator fake_communicator(int rank, int world, int device) {
  auto s = std::make_shared<Communicator::State>();
  s->rank = rank;
  s->world = world;
  s->device = device;
  return CommunicatorAccess::wrap(std::move(s));
}

// y = all_reduce(x), z = all_gather(x, axis 0) among `world` ranks of group "tp", both outputs;
// each region's step made and saved by the nccl engine.
plan::Plan collective_plan(int64_t world) {
  Graph g("tp_pair");
  Tensor x = g.input("x", DType::bf16, {8, 16});
  g.output(g.all_reduce(x, "tp", world), "y");
  g.output(g.all_gather(x, 0, "tp", world), "z");
  g.validate();
  plan::Plan p;
  p.producer = "sinter unit test";
  p.graph = g;
  p.target = {"sm_90a", "NVIDIA H200", 132};
  const fuse::Partition part = plan::plan_partition(p);
  p.memory = plan::plan_memory(p.graph, part, std::vector<TensorId>(p.graph.tensors().size(), -1));
  const nccl::NcclEngine engine;
  cuda::KernelCache cache("");
  EngineContext ctx{cache, cuda::assumed_h200(), {}, 1, {}};
  plan::PlanBlobs blobs(p);
  for (const fuse::Region& r : part.regions) {
    const std::vector<Candidate> c = engine.candidates(p.graph, r, ctx);
    EXPECT_EQ(c.size(), 1u);
    auto step = engine.prepare(p.graph, r, c.at(0), ctx);
    plan::Step s;
    s.region = r.id;
    s.kind = r.kind;
    s.engine = "nccl";
    s.config = c[0].config;
    s.description = step->describe();
    s.saved = engine.save_step(*step, blobs);
    p.steps.push_back(std::move(s));
  }
  return p;
}

std::vector<char> edited(const std::vector<char>& bytes, const std::function<void(nlohmann::ordered_json&)>& edit) {
  using namespace plan::bundle_detail;
  const uint64_t m_at = get_le(bytes.data() + kManifestOffsetAt, 8), m_size = get_le(bytes.data() + kManifestSizeAt, 8);
  const uint64_t a_at = get_le(bytes.data() + kBlobAreaOffsetAt, 8);
  nlohmann::ordered_json m = nlohmann::ordered_json::parse(std::string(bytes.data() + m_at, m_size));
  edit(m);
  return plan::frame_plan_bundle(m.dump(2) + "\n", std::vector<char>(bytes.begin() + a_at, bytes.end()));
}

std::string rejection(const std::vector<char>& bytes) {
  const Error e = error_of([&] { (void)plan::load_plan_bundle(bytes, "t.plan"); });
  EXPECT_EQ(e.code(), ErrorCode::corrupt_bundle) << e.message();
  return e.message();
}

}  // namespace

TEST(NcclLibrary, SaysWhyItCannotLoad) {
  const nccl::Library missing = nccl::load_library("/nonexistent/libnccl.so.2");
  EXPECT_FALSE(missing.loaded);
  expect_contains(missing.reason, {"dlopen /nonexistent/libnccl.so.2: ", "No such file"});
  // a library that is not NCCL
  const nccl::Library libc = nccl::load_library("libc.so.6");
  EXPECT_FALSE(libc.loaded);
  expect_contains(libc.reason, {"dlsym ncclGetVersion in libc.so.6: symbol missing"});
  EXPECT_EQ(nccl::version_string(22809), "2.28.9");
  EXPECT_EQ(nccl::version_string(2804), "2.8.4");
  // what the process found, said either way
  const NcclStatus s = nccl_status();
  EXPECT_EQ(s.available, s.reason.empty()) << s.reason;
  EXPECT_EQ(s.available, !s.version.empty());
}

TEST(NcclCollective, DTypesAndCounts) {
  Graph g;
  Tensor a = g.input("a", DType::bf16, {4, 6});
  g.output(g.all_reduce(a, "tp", 2, CollectiveReduce::max), "ar");
  g.output(g.all_gather(g.input("b", DType::fp8_e4m3, {3, 5}), 0, "tp", 2), "ag");
  g.output(g.reduce_scatter(g.input("c", DType::f32, {8, 3}), 0, "tp", 4), "rs");
  g.output(g.all_gather(g.input("d", DType::boolean, {1, 4}), 1, "tp", 2), "agb");
  g.output(g.all_reduce(g.input("e", DType::i64, {5}), "tp", 2), "ari");
  const Regions rs = partitioned(g);
  const nccl::CollectiveConfig ar = *match(rs, OpKind::all_reduce).config;
  EXPECT_EQ(ar.type, ncclBfloat16);
  EXPECT_EQ(ar.reduce, ncclMax);
  EXPECT_EQ(ar.count, 24u);
  EXPECT_EQ(nccl::config_text(ar), "all_reduce max bf16 count=24 group=tp world=2");
  const nccl::CollectiveConfig ag = *match(rs, OpKind::all_gather).config;
  EXPECT_EQ(ag.type, ncclFloat8e4m3);
  EXPECT_EQ(ag.count, 15u);  // sent per rank; 30 received
  EXPECT_EQ(ag.output_bytes, 30u);
  const nccl::CollectiveConfig rsc = *match(rs, OpKind::reduce_scatter).config;
  EXPECT_EQ(rsc.type, ncclFloat32);
  EXPECT_EQ(rsc.count, 6u);  // received per rank: 2 x 3
  EXPECT_EQ(nccl::config_text(rsc), "reduce_scatter sum axis=0 f32 count=6 group=tp world=4");
  // bool gathers as bytes; axis 1 of [1, 4] has nothing outside it
  EXPECT_EQ(match(rs, OpKind::all_gather, 1).config->type, ncclUint8);
  EXPECT_EQ(match(rs, OpKind::all_reduce, 1).config->type, ncclInt64);
}

TEST(NcclCollective, OnlyTheOutermostAxisGathersOrScatters) {
  Graph g;
  Tensor x = g.input("x", DType::f16, {4, 8});
  g.output(g.all_gather(x, 1, "tp", 2), "ag");
  g.output(g.reduce_scatter(x, -1, "tp", 2), "rs");
  const Regions rs = partitioned(g);
  for (OpKind op : {OpKind::all_gather, OpKind::reduce_scatter}) {
    const nccl::CollectiveMatch m = match(rs, op);
    EXPECT_FALSE(m.config) << to_string(op);
    expect_contains(m.reason, {"along axis 1 of 'x' with dims [4, 8]", "outermost axis only",
                               "axis 1 has 4 elements outside it", "permute axis 1 to the front"});
  }
}

TEST(NcclCollective, RefusesStridedTensorsAndOtherRegions) {
  Graph g;
  Tensor wt = g.input("wt", DType::f32, {8, 4}, {1, 8});  // a transposed view
  g.output(g.all_reduce(wt, "tp", 2), "y");
  g.output(g.relu(g.input("v", DType::f32, {4})), "r");
  const Regions rs = partitioned(g);
  const nccl::CollectiveMatch m = match(rs, OpKind::all_reduce);
  EXPECT_FALSE(m.config);
  expect_contains(m.reason, {"'wt' is a strided view (strides [1, 8], dims [8, 4])", "contiguous buffers"});
  const fuse::Region& relu = rs.p.regions.at(1);  // pointwise: no anchor
  ASSERT_EQ(relu.kind, fuse::RegionKind::pointwise);
  expect_contains(nccl::match_collective(rs.g, relu).reason,
                  {"only collectives (all_reduce, all_gather, reduce_scatter) run on NCCL"});
  cuda::KernelCache cache("");
  const EngineContext ctx{cache, cuda::assumed_h200(), {}, 1, {}};
  EXPECT_FALSE(nccl::NcclEngine().supports(rs.g, relu, ctx).ok);
}

TEST(NcclCollective, LibraryProblems) {
  Graph g;
  g.output(g.all_reduce(g.input("x", DType::fp8_e5m2, {8}), "tp", 2), "y");
  g.output(g.all_reduce(g.input("w", DType::f32, {8}), "solo", 1), "z");
  const Regions rs = partitioned(g);
  const nccl::CollectiveConfig fp8 = *match(rs, OpKind::all_reduce).config;
  const nccl::CollectiveConfig solo = *match(rs, OpKind::all_reduce, 1).config;
  const nccl::Library missing = nccl::load_library("/nonexistent/libnccl.so.2");
  expect_contains(nccl::library_problem(fp8, missing),
                  {"NCCL not found (dlopen /nonexistent/libnccl.so.2", "a collective of world 1 runs without it"});
  EXPECT_EQ(nccl::library_problem(solo, missing), "");  // world 1: a copy
  nccl::Library old;
  old.loaded = true;
  old.path = "libnccl.so.2";
  old.version = 22304;
  expect_contains(nccl::library_problem(fp8, old), {"libnccl.so.2 is NCCL 2.23.4", "no fp8 types", "fp8_e5m2 needs NCCL 2.24.0"});
  old.version = 22809;
  EXPECT_EQ(nccl::library_problem(fp8, old), "");
}

TEST(NcclCollective, CommunicatorProblems) {
  Graph g;
  g.output(g.all_gather(g.input("x", DType::bf16, {2, 8}), 0, "tp", 2), "y");
  g.output(g.all_reduce(g.input("w", DType::f32, {8}), "solo", 1), "z");
  const Regions rs = partitioned(g);
  const nccl::CollectiveConfig tp = *match(rs, OpKind::all_gather).config;
  const nccl::CollectiveConfig solo = *match(rs, OpKind::all_reduce).config;
  expect_contains(nccl::communicator_problem(tp, nullptr, 0),
                  {"no communicator is bound to group 'tp' (world 2)", "RunnerOptions::communicators[\"tp\"]"});
  const Communicator one = fake_communicator(0, 1, 0);
  expect_contains(nccl::communicator_problem(tp, &one, 0),
                  {"group 'tp' has world 1 (rank 0 of 1 on GPU 0)", "all_gather runs among world 2 ranks"});
  const Communicator two = fake_communicator(1, 2, 1);
  expect_contains(nccl::communicator_problem(tp, &two, 0), {"is on GPU 1", "this runner runs on GPU 0"});
  EXPECT_EQ(nccl::communicator_problem(tp, &two, 1), "");
  EXPECT_EQ(nccl::communicator_problem(solo, nullptr, 0), "");  // world 1 needs none
  expect_contains(nccl::communicator_problem(solo, &two, 1), {"group 'solo' has world 2", "among world 1 ranks"});
}

// load_step is where a Runner's communicators meet the steps: refused by name, before any GPU work.
TEST(NcclEngine, LoadStepNeedsTheGroupsCommunicator) {
  const plan::Plan p = collective_plan(2);
  const fuse::Partition part = plan::plan_partition(p);
  const nccl::NcclEngine engine;
  const plan::PlanBlobs blobs(p);
  LibraryCache libraries;
  LoadContext none{0, libraries, "", nullptr};
  const Error e = error_of([&] { engine.load_step(p.graph, part.regions[0], p.steps[0].saved, blobs, 0, none); });
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  expect_contains(e.message(), {"no communicator is bound to group 'tp' (world 2)"});
  const CommunicatorBindings wrong{{"tp", fake_communicator(0, 4, 0)}};
  LoadContext four{0, libraries, "", &wrong};
  expect_contains(error_of([&] { engine.load_step(p.graph, part.regions[0], p.steps[0].saved, blobs, 0, four); }).message(),
                  {"group 'tp' has world 4", "world 2 ranks"});
  if (nccl::library().loaded) {
    const CommunicatorBindings right{{"tp", fake_communicator(1, 2, 0)}};
    LoadContext ok{0, libraries, "", &right};
    auto step = engine.load_step(p.graph, part.regions[0], p.steps[0].saved, blobs, 0, ok);
    EXPECT_EQ(step->describe(), "nccl all_reduce sum bf16 count=128 group=tp world=2");
  }
  // world 1 loads with no communicator and copies
  const plan::Plan solo = collective_plan(1);
  auto copy = engine.load_step(solo.graph, plan::plan_partition(solo).regions[1], solo.steps[1].saved, plan::PlanBlobs(solo), 0, none);
  EXPECT_EQ(copy->describe(), "all_gather axis=0 bf16 count=128 group=tp world=1 (world 1: a copy)");
}

TEST(NcclPlanBundle, CollectiveStepsRoundTrip) {
  const plan::Plan p = collective_plan(2);
  ASSERT_EQ(p.steps.size(), 2u);
  ASSERT_TRUE(p.steps[1].saved.collective);
  EXPECT_EQ(p.steps[1].saved.collective->op, "all_gather");
  EXPECT_EQ(p.steps[1].saved.collective->reduce, "");
  const std::vector<char> bytes = plan::plan_bundle_bytes(p);
  const plan::Plan q = plan::load_plan_bundle(bytes, "t.plan");
  EXPECT_EQ(q.steps, p.steps);
  EXPECT_EQ(q.steps[0].kind, fuse::RegionKind::collective);
  EXPECT_EQ(plan::plan_bundle_bytes(q), bytes);
  const std::string manifest(bytes.begin(), bytes.end());
  expect_contains(manifest, {"\"kind\": \"collective\"", "\"engine\": \"nccl\"",
                             "\"collective\": {\n        \"op\": \"all_reduce\",\n        \"group\": \"tp\",\n        \"world\": 2,\n        \"reduce\": \"sum\""});
}

TEST(NcclPlanBundle, DamagedCollectiveRecordsAreRefused) {
  const std::vector<char> bytes = plan::plan_bundle_bytes(collective_plan(2));
  auto step = [](nlohmann::ordered_json& m) -> nlohmann::ordered_json& { return m["steps"][0]; };
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["world"] = 3; })),
                  {"step 0 (collective, nccl)", "its collective record says world 3, the graph's node has 2"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["group"] = "dp"; })),
                  {"group 'dp', the graph's node has 'tp'"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["count"] = 64; })), {"count 64"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["op"] = "all_to_all"; })),
                  {"expected all_reduce, all_gather or reduce_scatter, found \"all_to_all\""});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["reduce"] = "prod"; })),
                  {"expected sum or max, found \"prod\""});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"].erase("reduce"); })),
                  {"the all_reduce needs its \"reduce\""});
  expect_contains(rejection(edited(bytes, [&](auto& m) { m["steps"][1]["collective"]["reduce"] = "sum"; })),
                  {"an all_gather reduces nothing"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["world"] = 0; })), {"/collective/world"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["collective"]["extra"] = 1; })), {"extra"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m).erase("collective"); })),
                  {"a collective step needs its \"collective\" record"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["kind"] = "scatter"; })),
                  {"unknown region kind \"scatter\"", "collective"});
  expect_contains(rejection(edited(bytes, [&](auto& m) { step(m)["engine"] = "jit"; })), {"step 0 (collective, jit)"});
}

TEST(NcclExplain, CollectiveRegionsShowTheirEngine) {
  Graph g("tp");
  g.output(g.all_reduce(g.input("x", DType::bf16, {4, 8}), "tp", 4), "y");
  g.output(g.all_gather(g.input("w", DType::bf16, {4, 8}), 1, "tp", 4), "z");
  const std::string text = to_text(explain(g));
  if (nccl::library().loaded) {
    expect_contains(text, {"engine:     nccl: all_reduce: one NCCL call on the runner's communicator"});
  } else {
    expect_contains(text, {"engine:     none: nccl: NCCL not found ("});
  }
  // the all_gather along axis 1 is refused by every engine, each saying why
  expect_contains(text, {"engine:     none: ", "along axis 1 of 'w' with dims [4, 8]",
                         "jit: collectives run on the nccl engine (NCCL), not in generated kernels"});
}

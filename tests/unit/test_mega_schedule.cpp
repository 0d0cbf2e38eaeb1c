// The megakernel's host side without a GPU: segments (which steps join a megakernel), the task
// graph's dependencies, and the static schedule with its checker.
#include <gtest/gtest.h>

#include "mega/schedule.hpp"
#include "mega/segments.hpp"
#include "mega/task_graph.hpp"
#include "sinter/error.hpp"

using namespace sinter;
using namespace sinter::mega;

namespace {

MegaTaskKernel kernel(unsigned tasks, const std::string& source = "k") {
  MegaTaskKernel k;
  k.source = source;
  k.entry = "sinter_region";
  k.grid[0] = tasks;
  k.threads = 256;
  return k;
}

SegmentStep step(size_t index, std::vector<TensorId> reads, std::vector<TensorId> writes, std::vector<MegaTaskKernel> ks) {
  SegmentStep s;
  s.step = index;
  s.reads = std::move(reads);
  s.writes = std::move(writes);
  s.bytes = 4096;
  s.kernels = std::move(ks);
  return s;
}

}  // namespace

TEST(MegaSegments, VendorStepsSplitAndAliasesJoin) {
  MegaStep* const task = reinterpret_cast<MegaStep*>(uintptr_t{8});  // only tested for null
  std::vector<StepView> v(7);
  v[0].mega = task;
  v[1].launches_nothing = true;
  v[2].mega = task;
  // 3: a vendor step
  v[4].launches_nothing = true;  // an alias between a vendor step and the end: nothing to run
  v[5].mega = nullptr;
  v[6].mega = task;
  const std::vector<Piece> p = split_segments(v);
  ASSERT_EQ(p.size(), 5u);
  EXPECT_TRUE(p[0].mega);
  EXPECT_EQ(p[0].steps, (std::vector<size_t>{0, 1, 2}));
  EXPECT_FALSE(p[1].mega);
  EXPECT_EQ(p[1].steps, (std::vector<size_t>{3}));
  EXPECT_FALSE(p[2].mega);  // the alias alone
  EXPECT_FALSE(p[3].mega);
  EXPECT_TRUE(p[4].mega);
  EXPECT_EQ(p[4].steps, (std::vector<size_t>{6}));
}

TEST(MegaTaskGraph, WaitsFollowTensorsAndKernelOrder) {
  // 0 writes t1; 1 reads t1 (two kernels); 2 reads t0 (a graph input) only; 3 reads t1 and t2
  std::vector<SegmentStep> s;
  s.push_back(step(0, {0}, {1}, {kernel(4, "a")}));
  s.push_back(step(1, {1}, {2}, {kernel(8, "b"), kernel(1, "c")}));
  s.push_back(step(2, {0}, {3}, {kernel(2, "a")}));  // same source as step 0: one function
  s.push_back(step(3, {1, 2}, {4}, {kernel(1, "d // a comment differs")}));
  s.push_back(step(4, {4}, {5}, {kernel(1, "d // only in comments")}));
  const TaskGraph g = build_task_graph(std::move(s));
  ASSERT_EQ(g.kernels.size(), 6u);
  EXPECT_TRUE(g.kernels[0].waits.empty());
  EXPECT_EQ(g.kernels[1].waits, (std::vector<unsigned>{0}));
  EXPECT_EQ(g.kernels[2].waits, (std::vector<unsigned>{1}));  // the step's previous kernel
  EXPECT_TRUE(g.kernels[3].waits.empty());                    // reads a graph input only
  EXPECT_EQ(g.kernels[4].waits, (std::vector<unsigned>{0, 2}));  // t1 from kernel 0, t2 from kernel 2
  EXPECT_EQ(g.kernels[5].waits, (std::vector<unsigned>{4}));
  EXPECT_EQ(g.kernels[0].function, g.kernels[3].function);
  EXPECT_EQ(g.kernels[4].function, g.kernels[5].function);  // comments do not make a new function
  EXPECT_EQ(g.functions.size(), 4u);
  EXPECT_EQ(g.tasks, 17u);
}

TEST(MegaSchedule, EveryTaskOnceInGlobalOrderAndChecked) {
  std::vector<SegmentStep> s;
  s.push_back(step(0, {0}, {1}, {kernel(300)}));
  s.push_back(step(1, {1}, {2}, {kernel(7)}));
  s.push_back(step(2, {0}, {3}, {kernel(50)}));
  s.push_back(step(3, {2, 3}, {4}, {kernel(1)}));
  const TaskGraph g = build_task_graph(std::move(s));
  for (int ctas : {1, 3, 132, 264}) {
    const Schedule sch = schedule_tasks(g, ctas);
    EXPECT_NO_THROW(check_schedule(g, sch)) << ctas;
    EXPECT_EQ(sch.tasks.size(), g.tasks);
    EXPECT_GT(sch.estimated_us, 0);
  }
}

TEST(MegaSchedule, AChainOfOneTaskKernelsStaysOnOneCtaWithoutWaits) {
  std::vector<SegmentStep> s;
  for (int i = 0; i < 20; ++i) s.push_back(step(i, {i}, {i + 1}, {kernel(1)}));
  const TaskGraph g = build_task_graph(std::move(s));
  const Schedule sch = schedule_tasks(g, 132);
  check_schedule(g, sch);
  int busy = 0;
  for (int c = 0; c < sch.ctas; ++c) busy += sch.queue_start[c + 1] > sch.queue_start[c];
  EXPECT_EQ(busy, 1);
  for (size_t i = 1; i < sch.tasks.size(); ++i) EXPECT_TRUE(sch.tasks[i].waits_met_locally) << i;
  EXPECT_FALSE(sch.tasks[0].waits_met_locally);  // it waits for nothing
}

TEST(MegaSchedule, CheckerCatchesBrokenSchedules) {
  std::vector<SegmentStep> s;
  s.push_back(step(0, {0}, {1}, {kernel(2)}));
  s.push_back(step(1, {1}, {2}, {kernel(2)}));
  const TaskGraph g = build_task_graph(std::move(s));
  const Schedule good = schedule_tasks(g, 2);
  check_schedule(g, good);
  {
    Schedule bad = good;  // a task run twice, another missing
    bad.tasks[0] = bad.tasks[1];
    EXPECT_THROW(check_schedule(g, bad), Error);
  }
  {
    Schedule bad;  // one CTA, a consumer before its producer
    bad.ctas = 1;
    bad.tasks = {{1, 0}, {1, 1}, {0, 0}, {0, 1}};
    bad.queue_start = {0, 4};
    EXPECT_THROW(check_schedule(g, bad), Error);
  }
  {
    Schedule bad;  // a skipped wait whose producer ran elsewhere
    bad.ctas = 2;
    bad.tasks = {{0, 0}, {1, 0, true}, {0, 1}, {1, 1}};
    bad.queue_start = {0, 2, 4};
    EXPECT_THROW(check_schedule(g, bad), Error);
  }
}

// The megakernel's host side without a GPU: segments (which steps join a megakernel), the task
// graph's dependencies, and the static schedule with its checker.
#include <gtest/gtest.h>

#include "mega/mega_source.hpp"
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

// Task b of a `tasks`-task kernel reads (or writes) rows [b * rows, (b + 1) * rows) of its step's
// tensor `slot`, a [tasks * rows, 64] f32 matrix.
TaskBox row_blocks(bool write, int slot, unsigned tasks, int64_t rows) {
  TaskBox b;
  b.write = write;
  b.slot = slot;
  b.elem_bytes = 4;
  b.rows = tasks * rows;
  b.cols = b.pitch = 64;
  b.digits = {{tasks, rows, 0}};
  b.box_rows = rows;
  b.box_cols = 64;
  return b;
}

MegaTaskKernel rows_kernel(unsigned tasks, int64_t rows, std::vector<TaskBox> boxes) {
  MegaTaskKernel k = kernel(tasks);
  k.boxes = std::move(boxes);
  return k;
}

// The CTAs whose queues are not empty.
int busy_ctas(const Schedule& s) {
  int busy = 0;
  for (int c = 0; c < s.ctas; ++c) busy += s.queue_start[c + 1] > s.queue_start[c];
  return busy;
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
  const int busy = busy_ctas(sch);
  EXPECT_EQ(busy, 1);
  for (size_t i = 1; i < sch.tasks.size(); ++i) EXPECT_TRUE(sch.tasks[i].waits_met_locally) << i;
  EXPECT_FALSE(sch.tasks[0].waits_met_locally);  // it waits for nothing
}

// Row-block kernels: a consumer task waits only for the producer tasks that wrote its rows,
// through range counters; a consumer block of two producer blocks waits for both; one that reads
// a tensor without a box waits for the whole producer.
TEST(MegaTaskGraph, BoxesGiveTileLevelWaits) {
  std::vector<SegmentStep> s;
  // step 0: 8 tasks write 4 rows each of t1
  s.push_back(step(0, {0}, {1}, {rows_kernel(8, 4, {row_blocks(true, 0, 8, 4)})}));
  // step 1: 8 tasks read the same rows of t1 and write t2 row by row
  s.push_back(step(1, {1}, {2}, {rows_kernel(8, 4, {row_blocks(false, 0, 8, 4), row_blocks(true, 0, 8, 4)})}));
  // step 2: 4 tasks read 8 rows each of t2 (two producer tasks each)
  s.push_back(step(2, {2}, {3}, {rows_kernel(4, 8, {row_blocks(false, 0, 4, 8)})}));
  // step 3: reads t1 without a box: every task of step 0
  s.push_back(step(3, {1}, {4}, {kernel(2)}));
  // step 4: 3 tasks read rows [0, 12), [12, 24), [24, 32) of t2: ranges cut by step 2's too
  TaskBox thirds = row_blocks(false, 0, 3, 12);
  thirds.rows = 32;
  s.push_back(step(4, {2}, {5}, {rows_kernel(3, 12, {thirds})}));
  const TaskGraph g = build_task_graph(std::move(s));
  ASSERT_EQ(g.kernels.size(), 5u);
  const TaskKernel& k1 = g.kernels[1];
  for (unsigned b = 0; b < 8; ++b) {
    ASSERT_EQ(k1.task_waits[b].size(), 1u) << b;
    const Counter& c = g.counters[k1.task_waits[b][0]];
    EXPECT_EQ(c.kernel, 0u);
    EXPECT_EQ(c.lo, b);
    EXPECT_EQ(c.hi, b + 1);
    EXPECT_EQ(g.kernels[0].group_counter(b), static_cast<long>(k1.task_waits[b][0]));
  }
  const TaskKernel& k2 = g.kernels[2];  // kernel 1's counters are cut where its consumers' needs are
  for (unsigned b = 0; b < 4; ++b) {
    const std::vector<unsigned>& w = k2.task_waits[b];
    ASSERT_FALSE(w.empty());
    EXPECT_EQ(g.counters[w.front()].lo, 2 * b) << b;
    EXPECT_EQ(g.counters[w.back()].hi, 2 * b + 2) << b;
    for (size_t i = 1; i < w.size(); ++i) EXPECT_EQ(g.counters[w[i]].lo, g.counters[w[i - 1]].hi);
  }
  for (unsigned b = 0; b < 2; ++b) EXPECT_EQ(g.kernels[3].task_waits[b], (std::vector<unsigned>{0}));  // whole grid
  EXPECT_EQ(g.kernels[3].waits, (std::vector<unsigned>{0}));
  // kernel 1 (8 tasks of 4 rows) is cut at 0, 2, 3, 4, 6, 8: step 4's task 1 (rows 12..23, blocks
  // 3..5) waits for the counters of [3, 4) and [4, 6)
  EXPECT_EQ(g.kernels[1].group_bounds, (std::vector<unsigned>{0, 2, 3, 4, 6, 8}));
  const std::vector<unsigned>& w = g.kernels[4].task_waits[1];
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(g.counters[w[0]].lo, 3u);
  EXPECT_EQ(g.counters[w[0]].hi, 4u);
  EXPECT_EQ(g.counters[w[1]].lo, 4u);
  EXPECT_EQ(g.counters[w[1]].hi, 6u);
}

// A box whose origin starts before the matrix (TaskBox::row0 < 0) is empty for the first blocks
// and clipped for the block that straddles the edge; a consumer task with an empty read box
// waits for nothing of that producer.
TEST(MegaTaskGraph, BoxesBeforeTheMatrixAreEmpty) {
  TaskBox b = row_blocks(false, 0, 6, 2);  // 6 blocks of 2 rows
  b.rows = 8;
  b.row0 = -4;  // blocks 0 and 1 before the matrix, block 2 at rows [0, 2), block 5 at [6, 8)
  EXPECT_TRUE(place_box(b, 0).empty());
  EXPECT_TRUE(place_box(b, 1).empty());
  EXPECT_EQ(place_box(b, 2).row, 0);
  EXPECT_EQ(place_box(b, 2).rows, 2);
  EXPECT_EQ(place_box(b, 5).row, 6);
  b.row0 = -3;  // block 1 straddles the edge: rows [0, 1)
  EXPECT_EQ(place_box(b, 1).row, 0);
  EXPECT_EQ(place_box(b, 1).rows, 1);
  std::vector<SegmentStep> s;
  s.push_back(step(0, {0}, {1}, {rows_kernel(4, 2, {row_blocks(true, 0, 4, 2)})}));  // t1: 8 rows
  TaskBox late = row_blocks(false, 0, 6, 2);
  late.rows = 8;
  late.row0 = -4;
  s.push_back(step(1, {1}, {2}, {rows_kernel(6, 2, {late})}));
  const TaskGraph g = build_task_graph(std::move(s));
  EXPECT_TRUE(g.kernels[1].task_waits[0].empty());
  EXPECT_TRUE(g.kernels[1].task_waits[1].empty());
  for (unsigned t = 2; t < 6; ++t) EXPECT_FALSE(g.kernels[1].task_waits[t].empty()) << t;
}

// A chain of row-block kernels over 4 tasks each stays in 4 columns, one per CTA, and no task
// waits on a counter: each reads only what the task before it on its CTA wrote.
TEST(MegaSchedule, RowBlockChainsStayOnTheirCtas) {
  std::vector<SegmentStep> s;
  for (int i = 0; i < 10; ++i) {
    s.push_back(step(i, {i}, {i + 1}, {rows_kernel(4, 16, {row_blocks(false, 0, 4, 16), row_blocks(true, 0, 4, 16)})}));
  }
  const TaskGraph g = build_task_graph(std::move(s));
  const Schedule sch = schedule_tasks(g, 132);
  check_schedule(g, sch);
  const int busy = busy_ctas(sch);
  EXPECT_EQ(busy, 4);
  for (const ScheduledTask& t : sch.tasks) EXPECT_EQ(t.waits_met_locally, t.kernel > 0) << t.kernel << " " << t.block;
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

// A collective's push kernel (MegaRankArrivals) counts each block's arrivals from every rank in a
// counter of its own; task b of the next kernel (the combine) waits for block b's counter, all
// `world` ranks' worth of it, never skipped as met on its CTA, even where the push ran there.
TEST(MegaTaskGraph, CollectiveArrivalsAreCountedPerBlockFromEveryRank) {
  MegaTaskKernel producer = rows_kernel(4, 8, {row_blocks(true, 0, 4, 8)});
  MegaTaskKernel push = rows_kernel(2, 16, {row_blocks(false, 0, 2, 16)});
  push.arrivals.world = 4;
  push.arrivals.group = "tp";
  MegaTaskKernel combine = rows_kernel(2, 16, {row_blocks(true, 0, 2, 16)});
  MegaTaskKernel consumer = rows_kernel(4, 8, {row_blocks(false, 0, 4, 8)});
  const TaskGraph g = build_task_graph({step(0, {1}, {2}, {producer}), step(1, {2}, {3}, {push, combine}),
                                        step(2, {3}, {4}, {consumer})});
  ASSERT_EQ(g.kernels.size(), 4u);
  EXPECT_EQ(g.kernels[1].rank_arrivals, 4u);
  // the push's blocks: one arrival counter each, counting 4 ranks
  ASSERT_EQ(g.kernels[1].group_bounds, (std::vector<unsigned>{0, 1, 2}));
  for (unsigned b = 0; b < 2; ++b) {
    const Counter& c = g.counters[g.kernels[1].group_counter(b)];
    EXPECT_EQ(c.ranks, 4u);
    EXPECT_EQ(c.target(), 4u);
    // push block b reads rows [16b, 16b + 16): producer blocks 2b and 2b + 1 only
    ASSERT_EQ(g.kernels[1].task_waits[b].size(), 1u);
    const Counter& need = g.counters[g.kernels[1].task_waits[b][0]];
    EXPECT_EQ(need.kernel, 0u);
    EXPECT_EQ(need.lo, 2 * b);
    EXPECT_EQ(need.hi, 2 * b + 2);
    // combine block b waits for push block b's arrivals and nothing else
    EXPECT_EQ(g.kernels[2].task_waits[b], (std::vector<unsigned>{static_cast<unsigned>(g.kernels[1].group_counter(b))}));
  }
  for (int ctas : {1, 3, 132}) {
    const Schedule s = schedule_tasks(g, ctas);
    check_schedule(g, s);
    for (const ScheduledTask& t : s.tasks) {
      if (t.kernel == 2) {
        EXPECT_FALSE(t.waits_met_locally) << "a combine task skipped its arrivals on " << ctas << " CTAs";
      }
    }
  }
  // a schedule claiming the arrivals were met on the CTA is refused
  Schedule bad = schedule_tasks(g, 1);
  for (ScheduledTask& t : bad.tasks) t.waits_met_locally = t.kernel == 2 || t.waits_met_locally;
  try {
    check_schedule(g, bad);
    ADD_FAILURE() << "accepted a combine task that skips its arrivals";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("skips its wait for arrivals from other ranks"), std::string::npos) << e.message();
  }
}

TEST(MegaTaskGraph, APrologueRunsOnlyWhereNoEarlierStepWritesWhatItReads) {
  // steps 1 and 2 run the same function, whose prologue reads slot 1 (a weight): a graph input in
  // step 1 (t9), a tensor step 0 writes in step 2 (t1); step 0's function has no prologue
  auto entry = [](const std::string& body) {
    return "struct Args {};\n" + body + "\nextern \"C\" __global__ void __launch_bounds__(256) sinter_region(const "
           "__grid_constant__ Args a) {}\n";
  };
  auto with_prologue = [&](unsigned tasks) {
    MegaTaskKernel k = kernel(tasks, entry("__device__ void sinter_task_prologue(const Args&, bool) {}"));
    k.prologue_slot = 1;
    return k;
  };
  std::vector<SegmentStep> s;
  s.push_back(step(0, {0}, {1}, {kernel(4, entry(""))}));
  s.push_back(step(1, {1, 9}, {2}, {with_prologue(8)}));
  s.push_back(step(2, {2, 1}, {3}, {with_prologue(8)}));
  const TaskGraph g = build_task_graph(std::move(s));
  ASSERT_EQ(g.kernels.size(), 3u);
  EXPECT_FALSE(g.kernels[0].prologue);
  EXPECT_TRUE(g.kernels[1].prologue);
  EXPECT_FALSE(g.kernels[2].prologue);
  ASSERT_EQ(g.functions.size(), 2u);
  EXPECT_FALSE(g.functions[g.kernels[0].function].prologue);
  EXPECT_TRUE(g.functions[g.kernels[1].function].prologue);
  // the prologue switch calls the one function that has a prologue
  const std::string src = megakernel_source(g);
  const std::string call = "sinter_task" + std::to_string(g.kernels[1].function) + "::sinter_task_prologue(";
  EXPECT_NE(src.find(call), std::string::npos) << src;
  EXPECT_EQ(src.find("sinter_task" + std::to_string(g.kernels[0].function) + "::sinter_task_prologue("),
            std::string::npos);
}

// The megakernel's CTAs an SM: as many as leave every thread 128 registers, or the registers the
// hungriest task's standalone kernel has where that is more.
TEST(MegaSource, MinBlocksFollowTheTasksRegisters) {
  TaskGraph g;
  g.max_threads = 256;
  EXPECT_EQ(megakernel_min_blocks(g), 2);  // none known: 128 registers
  g.max_registers = 200;
  EXPECT_EQ(megakernel_min_blocks(g), 1);
  g.max_registers = 129;                   // allocated as 136: 65536 / (256 x 136) = 1.9
  EXPECT_EQ(megakernel_min_blocks(g), 1);
  g.max_registers = 40;                    // small tasks: still 128 for the dispatcher
  EXPECT_EQ(megakernel_min_blocks(g), 2);
  g.max_threads = 128;
  EXPECT_EQ(megakernel_min_blocks(g), 4);
  g.max_threads = 1024;
  g.max_registers = 255;
  EXPECT_EQ(megakernel_min_blocks(g), 1);  // never below one
}

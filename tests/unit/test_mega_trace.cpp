// The megakernel trace's Chrome trace JSON and per-step summary (include/sinter/mega_trace.hpp),
// on synthetic events: no GPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sinter/error.hpp"
#include "sinter/mega_trace.hpp"

using namespace sinter;

namespace {

// Segment 0: steps 0 (kernel 0) and 2 (kernels 0, 1; step 1 an alias) on 2 CTAs. Segment 1:
// step 4 on 1 CTA.
MegaDescription two_segments() {
  MegaDescription d;
  MegaSegmentDescription s0;
  s0.steps = {0, 1, 2};
  s0.ctas = 2;
  s0.kernels.resize(3);
  s0.kernels[0].step = 0;
  s0.kernels[1].step = 2;
  s0.kernels[2].step = 2;
  s0.kernels[2].kernel = 1;
  MegaSegmentDescription s1;
  s1.steps = {4};
  s1.ctas = 1;
  s1.kernels.resize(1);
  s1.kernels[0].step = 4;
  d.segments = {s0, s1};
  d.outside = {{3, "cudnn steps run outside the megakernel"}};
  return d;
}

MegaTaskEvent event(int segment, int step, int kernel, int block, int cta, int sm, uint64_t start, uint64_t end,
                    uint64_t waited) {
  return MegaTaskEvent{segment, step, kernel, block, cta, sm, start, end, waited};
}

// Segment 0 spans 1000..5000 ns on 2 CTAs; segment 1 spans 9000..10000 ns on 1.
std::vector<MegaTaskEvent> events() {
  return {
      event(0, 0, 0, 0, 0, 7, 1000, 2000, 0),
      event(0, 0, 0, 1, 1, 9, 1000, 3000, 0),
      event(0, 2, 0, 0, 0, 7, 2500, 4000, 500),
      event(0, 2, 1, 0, 1, 9, 4000, 5000, 1000),
      event(1, 4, 0, 0, 0, 3, 9000, 10000, 200),
  };
}

}  // namespace

TEST(MegaTrace, ChromeJsonHasOneCompleteEventPerTask) {
  const nlohmann::json j = nlohmann::json::parse(mega_trace_json(two_segments(), events()));
  ASSERT_TRUE(j.contains("traceEvents"));
  std::vector<nlohmann::json> tasks;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") tasks.push_back(e);
  }
  ASSERT_EQ(tasks.size(), 5u);
  const nlohmann::json& t = tasks[2];
  EXPECT_EQ(t["name"], "step 2 kernel 0");
  EXPECT_EQ(t["pid"], 0);
  EXPECT_EQ(t["tid"], 0);
  EXPECT_DOUBLE_EQ(t["ts"].get<double>(), 1.5);  // microseconds from the first start (1000 ns)
  EXPECT_DOUBLE_EQ(t["dur"].get<double>(), 1.5);
  EXPECT_EQ(t["args"]["block"], 0);
  EXPECT_EQ(t["args"]["waited_ns"], 500);
  EXPECT_EQ(t["args"]["sm"], 7);
  EXPECT_EQ(tasks[4]["pid"], 1);
  EXPECT_DOUBLE_EQ(tasks[4]["ts"].get<double>(), 8.0);
}

TEST(MegaTrace, ChromeJsonNamesSegmentsAndCtas) {
  const nlohmann::json j = nlohmann::json::parse(mega_trace_json(two_segments(), events()));
  std::vector<std::string> processes, threads;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == "process_name") processes.push_back(e["args"]["name"]);
    if (e["name"] == "thread_name") threads.push_back(e["args"]["name"]);
  }
  EXPECT_EQ(processes, (std::vector<std::string>{"segment 0: steps 0-2", "segment 1: step 4"}));
  EXPECT_EQ(threads, (std::vector<std::string>{"CTA 0 on SM 7", "CTA 1 on SM 9", "CTA 0 on SM 3"}));
}

TEST(MegaTrace, TasksThatNeverRanAreLeftOut) {
  std::vector<MegaTaskEvent> e = events();
  e.push_back(event(0, 2, 1, 1, 0, 7, 0, 0, 0));         // no record
  e.push_back(event(0, 2, 1, 2, 0, 7, 6000, 5500, 0));   // stale: ends before it starts
  const nlohmann::json j = nlohmann::json::parse(mega_trace_json(two_segments(), e));
  int tasks = 0;
  for (const auto& x : j["traceEvents"]) tasks += x["ph"] == "X";
  EXPECT_EQ(tasks, 5);
  EXPECT_EQ(summarize_mega_trace(two_segments(), e)[0].tasks, 4);
}

TEST(MegaTrace, EmptyTraceIsValidJson) {
  const nlohmann::json j = nlohmann::json::parse(mega_trace_json(two_segments(), {}));
  EXPECT_TRUE(j["traceEvents"].empty());
}

TEST(MegaTrace, SummaryPerStep) {
  const std::vector<MegaSegmentTime> s = summarize_mega_trace(two_segments(), events());
  ASSERT_EQ(s.size(), 2u);
  const MegaSegmentTime& s0 = s[0];
  EXPECT_EQ(s0.ctas, 2);
  EXPECT_EQ(s0.tasks, 4);
  EXPECT_DOUBLE_EQ(s0.span_us, 4.0);
  ASSERT_EQ(s0.steps.size(), 2u);  // the alias step 1 has no task kernel
  EXPECT_EQ(s0.steps[0].step, 0);
  EXPECT_EQ(s0.steps[0].tasks, 2);
  EXPECT_DOUBLE_EQ(s0.steps[0].busy_us, 3.0);
  EXPECT_DOUBLE_EQ(s0.steps[0].waited_us, 0.0);
  EXPECT_DOUBLE_EQ(s0.steps[0].busy_percent, 100.0 * 3.0 / (4.0 * 2));
  EXPECT_EQ(s0.steps[1].step, 2);
  EXPECT_EQ(s0.steps[1].tasks, 2);
  EXPECT_DOUBLE_EQ(s0.steps[1].busy_us, 2.5);
  EXPECT_DOUBLE_EQ(s0.steps[1].waited_us, 1.5);
  EXPECT_DOUBLE_EQ(s0.busy_us, 5.5);
  EXPECT_DOUBLE_EQ(s0.busy_percent, 100.0 * 5.5 / 8.0);
  // windows from the segment's first start (1000 ns)
  EXPECT_DOUBLE_EQ(s0.steps[0].first_start_us, 0.0);
  EXPECT_DOUBLE_EQ(s0.steps[0].last_end_us, 2.0);
  EXPECT_DOUBLE_EQ(s0.steps[1].first_start_us, 1.5);
  EXPECT_DOUBLE_EQ(s0.steps[1].last_end_us, 4.0);
  EXPECT_DOUBLE_EQ(s[1].steps[0].first_start_us, 0.0);
  EXPECT_DOUBLE_EQ(s[1].steps[0].last_end_us, 1.0);
  EXPECT_DOUBLE_EQ(s[1].span_us, 1.0);
  EXPECT_DOUBLE_EQ(s[1].busy_percent, 100.0);
}

TEST(MegaTrace, SummaryOfNoEventsIsZero) {
  const std::vector<MegaSegmentTime> s = summarize_mega_trace(two_segments(), {});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tasks, 0);
  EXPECT_EQ(s[0].span_us, 0.0);
  EXPECT_EQ(s[0].busy_percent, 0.0);
  EXPECT_EQ(s[0].steps.size(), 2u);
  EXPECT_EQ(s[0].steps[1].last_end_us, 0.0);
}

TEST(MegaTrace, EventOfAnUnknownSegmentOrStepIsAnError) {
  std::vector<MegaTaskEvent> e = events();
  e.push_back(event(2, 0, 0, 0, 0, 0, 1000, 2000, 0));
  try {
    mega_trace_json(two_segments(), e);
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(err.what()).find("event 5 names segment 2; the description has 2"), std::string::npos)
        << err.what();
  }
  EXPECT_THROW(summarize_mega_trace(two_segments(), e), Error);
  e.back() = event(1, 0, 0, 0, 0, 0, 1000, 2000, 0);  // step 0 is in segment 0
  try {
    summarize_mega_trace(two_segments(), e);
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("step 0, which has no task kernel in segment 1"), std::string::npos)
        << err.what();
  }
}

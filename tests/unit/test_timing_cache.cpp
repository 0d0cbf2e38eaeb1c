// The timing cache: keys separate regions, shapes and devices; entries survive a save and load;
// a corrupt or foreign file is reported and not trusted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "example_graphs.hpp"
#include "tune/timing_cache.hpp"

using namespace sinter;

namespace {
std::filesystem::path temp_file(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("sinter_tc_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

tune::DeviceKey h200() {
  tune::DeviceKey d;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.arch = "sm_90a";
  d.driver_version = 13000;
  d.cublaslt_version = "13.0.0";
  d.sinter_version = "0.1.0";
  return d;
}
}  // namespace

TEST(TimingCache, KeysSeparateRegionsShapesAndDevices) {
  const Graph g = examples::transformer_block();
  const fuse::Partition p = fuse::partition_graph(g);
  std::set<std::string> keys;
  for (const fuse::Region& r : p.regions) keys.insert(tune::region_key(g, r, h200()));
  // q, k and v extraction are three structurally identical regions: they share keys
  EXPECT_LT(keys.size(), p.regions.size());
  EXPECT_GT(keys.size(), 5u);
  tune::DeviceKey other = h200();
  other.sm_count = 114;
  EXPECT_NE(tune::region_key(g, p.regions[0], h200()), tune::region_key(g, p.regions[0], other));
}

TEST(TimingCache, SaveLoadAndCorruption) {
  const auto file = temp_file("timing.json");
  {
    tune::TimingCache c(file);
    EXPECT_FALSE(c.load().has_value());  // a missing file is an empty cache
    tune::TimingEntry e{"cublaslt", 2, "algo=23", "algo 23", 0.125, {{"jit", 0, "matmul tile=generic", "simt", 0.5, ""}, {"cublaslt", 1, "algo=1", "x", -1, "needs 64 MiB"}}};
    c.put("k1", e);
    c.save();
  }
  {
    tune::TimingCache c(file);
    EXPECT_FALSE(c.load().has_value());
    const tune::TimingEntry* e = c.find("k1");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->engine, "cublaslt");
    EXPECT_EQ(e->index, 2);
    EXPECT_DOUBLE_EQ(e->median_ms, 0.125);
    ASSERT_EQ(e->tried.size(), 2u);
    EXPECT_EQ(e->tried[1].skipped, "needs 64 MiB");
  }
  { std::ofstream(file) << "{\"format\": \"sinter.timing_cache\", \"version\": 1, \"entries\": {\"k\": {"; }
  {
    tune::TimingCache c(file);
    const auto why = c.load();
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("corrupt"), std::string::npos) << *why;
    EXPECT_EQ(c.size(), 0u);
  }
  { std::ofstream(file) << "{\"format\": \"sinter.timing_cache\", \"version\": 9, \"entries\": {}}"; }
  {
    tune::TimingCache c(file);
    const auto why = c.load();
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("version 9"), std::string::npos) << *why;
  }
  std::filesystem::remove_all(file.parent_path());
}

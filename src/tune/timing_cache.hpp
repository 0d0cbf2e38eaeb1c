// TimingCache: what tuning measured, so a second build of the same graph on the same machine
// performs no timing. An entry is keyed by the region's structure and shapes (with dtypes and
// strides) and by the device and library versions the times were measured with; it holds the
// winning engine and candidate and the time of every candidate tried.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fuse/region.hpp"

namespace sinter::tune {

// What a measurement depends on besides the region: a change in any field invalidates it.
struct DeviceKey {
  std::string name;       // "NVIDIA H200"
  int sm_count = 0;
  std::string arch;       // "sm_90a"
  int driver_version = 0;
  std::string cublaslt_version;
  std::string cudnn_version;  // "" when the cuDNN engine is not in use
  std::string sinter_version;
  std::string to_string() const;
};

struct CandidateTime {
  std::string engine;
  int index = 0;
  std::string config;  // Candidate::config
  std::string description;
  double median_ms = -1;  // < 0: not timed, see `skipped`
  std::string skipped;    // why it was not timed (failed to build, too much workspace, ...)
};

struct TimingEntry {
  std::string engine;  // the winner
  int index = 0;
  std::string config;  // the winner's Candidate::config: what a hit is matched by
  std::string description;
  double median_ms = 0;
  std::vector<CandidateTime> tried;
};

// The region's key: its subgraph's structural hash with shapes, the structure hash and the
// iteration shape for humans, and the device key.
std::string region_key(const Graph& g, const fuse::Region& r, const DeviceKey& device);

class TimingCache {
 public:
  // An empty path keeps the cache in memory only.
  explicit TimingCache(std::filesystem::path file = {});
  // SINTER_TIMING_CACHE, else $XDG_CACHE_HOME/sinter/timing.json, else ~/.cache/sinter/timing.json.
  static std::filesystem::path default_file();

  // Reads the file; a missing file is an empty cache. A corrupt or foreign file is not trusted:
  // the cache starts empty and load() returns why (the caller reports it).
  std::optional<std::string> load();
  // Writes atomically (temporary file, fsync, rename). Throws Error(io) naming the path.
  void save() const;

  const TimingEntry* find(const std::string& key) const;
  void put(const std::string& key, TimingEntry entry);
  size_t size() const { return entries_.size(); }
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  std::map<std::string, TimingEntry> entries_;
};

}  // namespace sinter::tune

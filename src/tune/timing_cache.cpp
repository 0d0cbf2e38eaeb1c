#include "tune/timing_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sinter/error.hpp"

namespace sinter::tune {
namespace {

constexpr const char* kFormat = "sinter.timing_cache";
constexpr int kVersion = 2;

}  // namespace

std::string DeviceKey::to_string() const {
  return name + "|sm" + std::to_string(sm_count) + "|" + arch + "|driver" +
         std::to_string(driver_version) + "|cublaslt " + cublaslt_version + "|cudnn " +
         (cudnn_version.empty() ? "none" : cudnn_version) + "|sinter " + sinter_version;
}

std::string region_key(const Graph& g, const fuse::Region& r, const DeviceKey& device) {
  return std::string(to_string(r.kind)) + " " + dims_to_string(r.iteration_shape) + " " +
         fuse::region_structure_hash(g, r) + " @ " + device.to_string();
}

TimingCache::TimingCache(std::filesystem::path file) : file_(std::move(file)) {}

std::filesystem::path TimingCache::default_file() {
  if (const char* v = std::getenv("SINTER_TIMING_CACHE"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) {
    return std::filesystem::path(v) / "sinter" / "timing.json";
  }
  if (const char* v = std::getenv("HOME"); v && *v) {
    return std::filesystem::path(v) / ".cache" / "sinter" / "timing.json";
  }
  throw Error(ErrorCode::io, "no folder for the timing cache: set SINTER_TIMING_CACHE or HOME");
}

std::optional<std::string> TimingCache::load() {
  entries_.clear();
  if (file_.empty() || !std::filesystem::exists(file_)) return std::nullopt;
  std::ifstream in(file_, std::ios::binary);
  if (!in) return "cannot read '" + file_.string() + "'";
  std::stringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    if (!j.is_object() || j.value("format", "") != kFormat) {
      return "'" + file_.string() + "' is not a Sinter timing cache";
    }
    if (j.value("version", 0) != kVersion) {
      return "'" + file_.string() + "' has timing-cache version " +
             std::to_string(j.value("version", 0)) + "; this build reads " + std::to_string(kVersion);
    }
    std::map<std::string, TimingEntry> entries;
    for (const auto& [key, e] : j.at("entries").items()) {
      TimingEntry t;
      t.engine = e.at("engine").get<std::string>();
      t.index = e.at("index").get<int>();
      t.config = e.at("config").get<std::string>();
      t.description = e.at("description").get<std::string>();
      t.median_ms = e.at("median_ms").get<double>();
      for (const auto& c : e.at("tried")) {
        t.tried.push_back({c.at("engine").get<std::string>(), c.at("index").get<int>(),
                           c.at("config").get<std::string>(), c.at("description").get<std::string>(), c.at("median_ms").get<double>(),
                           c.at("skipped").get<std::string>()});
      }
      entries.emplace(key, std::move(t));
    }
    entries_ = std::move(entries);
  } catch (const nlohmann::json::exception& e) {
    entries_.clear();
    return "'" + file_.string() + "' is corrupt (" + e.what() + ")";
  }
  return std::nullopt;
}

void TimingCache::save() const {
  if (file_.empty()) return;
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [key, t] : entries_) {
    nlohmann::json tried = nlohmann::json::array();
    for (const CandidateTime& c : t.tried) {
      tried.push_back({{"engine", c.engine}, {"index", c.index}, {"config", c.config}, {"description", c.description},
                       {"median_ms", c.median_ms}, {"skipped", c.skipped}});
    }
    entries[key] = {{"engine", t.engine}, {"index", t.index}, {"config", t.config}, {"description", t.description},
                    {"median_ms", t.median_ms}, {"tried", tried}};
  }
  const nlohmann::json j = {{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
  const std::string text = j.dump(1);
  std::error_code ec;
  if (file_.has_parent_path()) std::filesystem::create_directories(file_.parent_path(), ec);
  const std::filesystem::path tmp =
      file_.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(ErrorCode::io, "cannot write the timing cache '" + tmp.string() + "'");
  const ssize_t n = ::write(fd, text.data(), text.size());
  const bool ok = n == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), file_.c_str()) != 0) {
    std::filesystem::remove(tmp, ec);
    throw Error(ErrorCode::io, "writing the timing cache '" + file_.string() + "' failed");
  }
}

const TimingEntry* TimingCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void TimingCache::put(const std::string& key, TimingEntry entry) { entries_[key] = std::move(entry); }

}  // namespace sinter::tune

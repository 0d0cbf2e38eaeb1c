// KernelCache without a GPU: memory hits, disk hits across cache objects and processes, corrupt
// entries rebuilt, keys that change with everything that changes the binary, thread safety.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "cuda/cache_file.hpp"
#include "cuda/kernel_cache.hpp"
#include "jit/temp_dir.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

namespace fs = std::filesystem;
using sinter::testing::ScopedEnv;
using sinter::testing::TempDir;

KernelRequest scale_request(const std::string& factor = "2.0f") {
  return {"scale.cu",
          "extern \"C\" __global__ void scale(float* x, int n) {\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) x[i] *= " + factor + ";\n"
          "}\n",
          {}};
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  return files;
}

TEST(JitKernelCache, SecondRequestIsAMemoryHit) {
  TempDir dir;
  KernelCache cache(dir.path());
  auto first = cache.get_binary(scale_request());
  auto second = cache.get_binary(scale_request());
  EXPECT_EQ(first, second);
  EXPECT_FALSE(first->from_disk);
  KernelCacheStats stats = cache.stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.memory_hits, 1u);
  EXPECT_EQ(stats.disk_hits, 0u);
  EXPECT_GT(stats.compile_ms, 0.0);
  EXPECT_EQ(files_in(dir.path()), std::vector<fs::path>{cache.entry_path(first->key)});
}

TEST(JitKernelCache, FreshCacheOnTheSameFolderGetsADiskHit) {
  TempDir dir;
  std::vector<char> compiled = KernelCache(dir.path()).get_binary(scale_request())->cubin;
  KernelCache fresh(dir.path());
  auto binary = fresh.get_binary(scale_request());
  EXPECT_TRUE(binary->from_disk);
  EXPECT_EQ(binary->cubin, compiled);
  KernelCacheStats stats = fresh.stats();
  EXPECT_EQ(stats.disk_hits, 1u);
  EXPECT_EQ(stats.misses, 0u);
  EXPECT_EQ(stats.compile_ms, 0.0);
}

void damage_and_expect_rebuild(const std::function<void(const fs::path&)>& damage,
                               const char* what) {
  TempDir dir;
  const KernelRequest request = scale_request();
  const fs::path entry = KernelCache(dir.path()).entry_path(KernelCache::key_of(request));
  std::vector<char> compiled = KernelCache(dir.path()).get_binary(request)->cubin;
  damage(entry);

  KernelCache cache(dir.path());
  auto binary = cache.get_binary(request);
  EXPECT_EQ(binary->cubin, compiled) << what;
  EXPECT_FALSE(binary->from_disk) << what;
  KernelCacheStats stats = cache.stats();
  EXPECT_EQ(stats.corrupt_entries, 1u) << what;
  EXPECT_EQ(stats.misses, 1u) << what;
  EXPECT_EQ(stats.disk_hits, 0u) << what;
  EXPECT_NE(stats.last_corrupt_entry.find(entry.string()), std::string::npos)
      << stats.last_corrupt_entry;
  EXPECT_NE(to_string(stats).find("1 corrupt entry"), std::string::npos) << to_string(stats);
  // Counted once: the rebuilt entry is a plain memory hit now, and a disk hit for a new object.
  cache.get_binary(request);
  EXPECT_EQ(cache.stats().corrupt_entries, 1u) << what;
  EXPECT_EQ(read_cache_file(entry, binary->key).status, CacheFileStatus::ok) << what;
  KernelCache again(dir.path());
  again.get_binary(request);
  EXPECT_EQ(again.stats().disk_hits, 1u) << what;
  EXPECT_EQ(again.stats().corrupt_entries, 0u) << what;
}

TEST(JitKernelCache, FlippedByteIsDetectedAndRebuilt) {
  damage_and_expect_rebuild(
      [](const fs::path& entry) {
        std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
        file.seekg(kCacheFileHeaderSize + 100);
        char byte = 0;
        file.read(&byte, 1);
        byte ^= 0x01;
        file.seekp(kCacheFileHeaderSize + 100);
        file.write(&byte, 1);
      },
      "flipped byte");
}

TEST(JitKernelCache, TruncatedEntryIsDetectedAndRebuilt) {
  damage_and_expect_rebuild(
      [](const fs::path& entry) { fs::resize_file(entry, fs::file_size(entry) / 2); },
      "truncated");
}

TEST(JitKernelCache, KeyCoversEverythingThatShapesTheBinary) {
  const KernelRequest base = scale_request();
  const Sha256Digest key = KernelCache::key_of(base);
  EXPECT_EQ(KernelCache::key_of(scale_request()), key);

  KernelRequest other = base;
  other.source += " ";
  EXPECT_NE(KernelCache::key_of(other), key) << "source";
  other = base;
  other.name = "scale2.cu";
  EXPECT_EQ(KernelCache::key_of(other), key) << "the file name is a label, not the kernel";
  other = base;
  other.source = "// another region's kernel of the same structure\n" + base.source + "  // trailing\n";
  EXPECT_NE(KernelCache::key_of(other), key) << "a comment line is a line (line numbers)";
  other = base;
  other.source.insert(other.source.find('\n'), "  // a trailing comment naming a region");
  EXPECT_EQ(KernelCache::key_of(other), key) << "comments are not the kernel";
  other = base;
  other.options.arch = "sm_100";
  EXPECT_NE(KernelCache::key_of(other), key) << "arch";
  other = base;
  other.options.extra_options = {"-DX=1"};
  EXPECT_NE(KernelCache::key_of(other), key) << "options";
  other = base;
  other.options.extra_headers = {{"common/x.cuh", ""}};
  EXPECT_NE(KernelCache::key_of(other), key) << "headers";
}

TEST(JitKernelCache, ConcurrentThreadsCompileOnce) {
  TempDir dir;
  KernelCache cache(dir.path());
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const KernelBinary>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { results[t] = cache.get_binary(scale_request()); });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, results[0]);
  KernelCacheStats stats = cache.stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.memory_hits, unsigned(kThreads - 1));
}

TEST(JitKernelCache, ConcurrentProcessesLeaveAValidEntry) {
  TempDir dir;
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 1;
      try {
        KernelCache cache(dir.path());
        status = cache.get_binary(scale_request())->cubin.empty() ? 2 : 0;
      } catch (...) {
        status = 3;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  KernelCache cache(dir.path());
  auto binary = cache.get_binary(scale_request());
  EXPECT_TRUE(binary->from_disk);
  EXPECT_EQ(cache.stats().corrupt_entries, 0u);
  EXPECT_EQ(files_in(dir.path()), std::vector<fs::path>{cache.entry_path(binary->key)})
      << "temporary files left behind";
}

TEST(JitKernelCache, HonoursSinterCacheDir) {
  TempDir dir;
  const fs::path folder = dir.path() / "from-env";
  ScopedEnv env("SINTER_CACHE_DIR", folder.string());
  KernelCache cache;
  EXPECT_EQ(cache.directory(), folder);
  auto binary = cache.get_binary(scale_request());
  EXPECT_TRUE(fs::exists(folder / (to_hex(binary->key) + ".kc")));
}

TEST(JitKernelCache, DefaultDirectoryFallbacks) {
  ScopedEnv no_sinter("SINTER_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
    EXPECT_EQ(KernelCache::default_directory(), fs::path("/xdg/cache/sinter/kernels"));
  }
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv relative_xdg("XDG_CACHE_HOME", "relative/cache");  // ignored, per the XDG spec
    EXPECT_EQ(KernelCache::default_directory(), fs::path("/home/someone/.cache/sinter/kernels"));
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
  EXPECT_EQ(KernelCache::default_directory(), fs::path("/home/someone/.cache/sinter/kernels"));
  ScopedEnv no_home("HOME", std::nullopt);
  try {
    KernelCache::default_directory();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(e.message().find("SINTER_CACHE_DIR"), std::string::npos);
  }
}

TEST(JitKernelCache, CompileErrorsAreNotCached) {
  TempDir dir;
  KernelCache cache(dir.path());
  const KernelRequest broken{"broken.cu", "extern \"C\" __global__ void k() { nope; }\n", {}};
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      cache.get_binary(broken);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::compile);
      EXPECT_NE(e.message().find("broken.cu(1): error"), std::string::npos) << e.message();
    }
  }
  EXPECT_TRUE(files_in(dir.path()).empty());
  EXPECT_EQ(cache.stats().memory_hits, 0u);
}

TEST(JitKernelCache, MemoryOnlyCacheWritesNothing) {
  TempDir dir;
  ScopedEnv env("SINTER_CACHE_DIR", dir.path().string());
  KernelCache cache{fs::path()};
  cache.get_binary(scale_request());
  cache.get_binary(scale_request());
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
  EXPECT_TRUE(files_in(dir.path()).empty());
}

TEST(JitKernelCache, StatsReadWell) {
  KernelCacheStats stats;
  stats.memory_hits = 3;
  stats.disk_hits = 1;
  stats.misses = 2;
  stats.compile_ms = 812.44;
  EXPECT_EQ(to_string(stats),
            "kernel cache: 3 memory hits, 1 disk hit, 2 compiles (812.4 ms), 0 corrupt entries");
}

}  // namespace
}  // namespace sinter::cuda

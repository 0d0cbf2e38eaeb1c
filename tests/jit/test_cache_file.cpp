// The on-disk entry format: every kind of damage is detected, and concurrent writers never
// expose a partial file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "cuda/cache_file.hpp"
#include "jit/temp_dir.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

namespace fs = std::filesystem;

std::vector<char> read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& file, const std::vector<char>& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

std::vector<char> payload_of(std::size_t size, char seed) {
  std::vector<char> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = char(seed + i * 31);
  return bytes;
}

TEST(JitCacheFile, RoundTrip) {
  sinter::testing::TempDir dir;
  const fs::path file = dir.path() / "sub" / "entry.kc";
  const Sha256Digest key = sha256("key");
  EXPECT_EQ(read_cache_file(file, key).status, CacheFileStatus::missing);
  const std::vector<char> payload = payload_of(1000, 7);
  write_cache_file(file, key, payload);
  CacheFileRead read = read_cache_file(file, key);
  ASSERT_EQ(read.status, CacheFileStatus::ok) << read.problem;
  EXPECT_EQ(read.payload, payload);
  EXPECT_EQ(fs::file_size(file), kCacheFileHeaderSize + payload.size());
}

TEST(JitCacheFile, EveryFlippedByteIsDetected) {
  sinter::testing::TempDir dir;
  const fs::path file = dir.path() / "entry.kc";
  const Sha256Digest key = sha256("key");
  write_cache_file(file, key, payload_of(300, 1));
  const std::vector<char> good = read_bytes(file);
  for (std::size_t at = 0; at < good.size(); ++at) {
    std::vector<char> bad = good;
    bad[at] ^= 0x10;
    write_bytes(file, bad);
    CacheFileRead read = read_cache_file(file, key);
    EXPECT_EQ(read.status, CacheFileStatus::corrupt) << "flipped byte " << at;
    EXPECT_TRUE(read.payload.empty());
  }
}

TEST(JitCacheFile, TruncationAndTrailingBytesAreDetected) {
  sinter::testing::TempDir dir;
  const fs::path file = dir.path() / "entry.kc";
  const Sha256Digest key = sha256("key");
  write_cache_file(file, key, payload_of(300, 2));
  const std::vector<char> good = read_bytes(file);
  for (std::size_t size : {std::size_t(0), std::size_t(5), kCacheFileHeaderSize - 1,
                           kCacheFileHeaderSize, good.size() - 1}) {
    write_bytes(file, std::vector<char>(good.begin(), good.begin() + size));
    CacheFileRead read = read_cache_file(file, key);
    EXPECT_EQ(read.status, CacheFileStatus::corrupt) << "truncated to " << size;
    EXPECT_NE(read.problem.find(file.string()), std::string::npos) << read.problem;
  }
  std::vector<char> longer = good;
  longer.push_back('x');
  write_bytes(file, longer);
  EXPECT_EQ(read_cache_file(file, key).status, CacheFileStatus::corrupt);
}

TEST(JitCacheFile, AnotherKeysEntryIsNotServed) {
  sinter::testing::TempDir dir;
  const fs::path file = dir.path() / "entry.kc";
  write_cache_file(file, sha256("one"), payload_of(100, 3));
  CacheFileRead read = read_cache_file(file, sha256("two"));
  EXPECT_EQ(read.status, CacheFileStatus::corrupt);
  EXPECT_NE(read.problem.find("key mismatch"), std::string::npos);
}

TEST(JitCacheFile, UnwritableFolderIsAnIoError) {
  sinter::testing::TempDir dir;
  const fs::path blocker = dir.path() / "not_a_folder";
  write_bytes(blocker, {'x'});
  try {
    write_cache_file(blocker / "entry.kc", sha256("key"), payload_of(10, 4));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(e.message().find(blocker.string()), std::string::npos) << e.message();
  }
}

// Writers in several processes replace the same entry over and over with different (each
// self-consistent) payloads while this process reads it: every read sees a whole file.
TEST(JitCacheFile, ConcurrentProcessWritersNeverExposeAPartialFile) {
  sinter::testing::TempDir dir;
  const fs::path file = dir.path() / "entry.kc";
  const Sha256Digest key = sha256("shared key");
  constexpr int kWriters = 4;
  constexpr int kWritesEach = 40;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int i = 0; i < kWritesEach; ++i) {
          write_cache_file(file, key, payload_of(200000 + 1000 * w + i, char(w * 50 + i)));
        }
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  int reads = 0, corrupt = 0;
  std::vector<int> exit_status(children.size(), -1);
  for (std::size_t done = 0; done < children.size();) {
    CacheFileRead read = read_cache_file(file, key);
    ++reads;
    if (read.status == CacheFileStatus::corrupt) {
      ++corrupt;
      ADD_FAILURE() << read.problem;
    }
    for (std::size_t c = 0; c < children.size(); ++c) {
      int status = 0;
      if (exit_status[c] < 0 && ::waitpid(children[c], &status, WNOHANG) == children[c]) {
        exit_status[c] = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        ++done;
      }
    }
  }
  for (int status : exit_status) EXPECT_EQ(status, 0) << "a writer failed";
  EXPECT_EQ(corrupt, 0) << "of " << reads << " reads";
  EXPECT_EQ(read_cache_file(file, key).status, CacheFileStatus::ok);
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "entry.kc") << "left behind: " << entry.path();
  }
}

}  // namespace
}  // namespace sinter::cuda

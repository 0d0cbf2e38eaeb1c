// Every *.cuh, *.cu and *.h under kernels/ is embedded in the library, byte for byte, and every
// header compiles on its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cuda/kernel_sources.hpp"
#include "cuda/nvrtc.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

namespace fs = std::filesystem;

TEST(JitKernelSources, EveryKernelFileIsEmbedded) {
  const fs::path root = SINTER_KERNELS_DIR;
  std::set<std::string> on_disk;
  if (fs::exists(root)) {
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() ||
          (extension != ".cuh" && extension != ".cu" && extension != ".h")) {
        continue;
      }
      const std::string relative = entry.path().lexically_relative(root).generic_string();
      on_disk.insert(relative);
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream contents;
      contents << in.rdbuf();
      auto embedded = find_kernel_source(relative);
      ASSERT_TRUE(embedded.has_value()) << relative << " is not embedded: rebuild, or check "
                                        << "cmake/sinter_cuda.cmake's glob";
      EXPECT_EQ(*embedded, contents.str()) << relative << " is embedded with stale contents";
    }
  }
  std::set<std::string> embedded;
  for (const KernelSourceFile& file : kernel_source_files()) embedded.emplace(file.path);
  EXPECT_EQ(embedded, on_disk) << "embedded files that no longer exist under kernels/";
}

// A header that includes what it uses can be included first, anywhere: compile each one alone.
TEST(JitKernelSources, EveryHeaderCompilesOnItsOwn) {
  for (const KernelSourceFile& file : kernel_source_files()) {
    if (file.path.ends_with(".cu")) continue;
    const std::string source = "#include \"" + std::string(file.path) + "\"\n";
    try {
      compile_cuda("include_" + std::string(fs::path(file.path).stem()) + ".cu", source);
    } catch (const Error& e) {
      ADD_FAILURE() << file.path << " does not compile on its own:\n" << e.message();
    }
  }
}

TEST(JitKernelSources, ListIsSortedAndUnique) {
  auto files = kernel_source_files();
  for (std::size_t i = 1; i < files.size(); ++i) EXPECT_LT(files[i - 1].path, files[i].path);
}

TEST(JitKernelSources, UnknownPathIsAnError) {
  EXPECT_FALSE(find_kernel_source("no/such/file.cuh").has_value());
  try {
    kernel_source("no/such/file.cuh");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(e.message().find("no/such/file.cuh"), std::string::npos);
  }
}

TEST(JitKernelSources, DigestIsStable) {
  EXPECT_EQ(kernel_sources_digest(), kernel_sources_digest());
  EXPECT_NE(to_hex(kernel_sources_digest()), std::string(64, '0'));
}

}  // namespace
}  // namespace sinter::cuda

// The kernels/ sources (*.cuh, *.cu, *.h), embedded into the library at build time so that a binary
// compiles its kernels with NVRTC wherever it runs, with no source tree next to it. Paths are
// relative to kernels/ ("common/types.cuh") and are also the names NVRTC resolves #include
// "common/types.cuh" against.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "cuda/sha256.hpp"

namespace sinter::cuda {

struct KernelSourceFile {
  std::string_view path;
  std::string_view contents;
};

// Every embedded file, sorted by path. May be empty.
std::span<const KernelSourceFile> kernel_source_files();

std::optional<std::string_view> find_kernel_source(std::string_view path);
// Throws ErrorCode::invalid_argument naming the path when there is no such embedded file.
std::string_view kernel_source(std::string_view path);

// One digest over all paths and contents: any edit to kernels/ changes it, so the kernel cache
// can key on it and never serve a cubin built against older headers.
const Sha256Digest& kernel_sources_digest();

namespace detail {
// The generated table (see cmake/sinter_embed_kernels.cmake) is plain data with no constructors,
// so it is ready before any static initializer could ask for it.
struct EmbeddedFileRecord {
  const char* path;
  const unsigned char* data;
  std::size_t size;
};
std::span<const EmbeddedFileRecord> embedded_file_records();
}  // namespace detail

}  // namespace sinter::cuda

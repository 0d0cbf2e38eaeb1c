#include "cuda/kernel_sources.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

std::vector<KernelSourceFile> build_index() {
  std::vector<KernelSourceFile> files;
  for (const detail::EmbeddedFileRecord& record : detail::embedded_file_records()) {
    files.push_back({record.path,
                     std::string_view(reinterpret_cast<const char*>(record.data), record.size)});
  }
  std::sort(files.begin(), files.end(),
            [](const KernelSourceFile& a, const KernelSourceFile& b) { return a.path < b.path; });
  return files;
}

const std::vector<KernelSourceFile>& index() {
  static const std::vector<KernelSourceFile> files = build_index();
  return files;
}

Sha256Digest compute_digest() {
  Sha256 hasher;
  hasher.update_field("sinter kernels/ v1");
  for (const KernelSourceFile& file : index()) {
    hasher.update_field(file.path);
    hasher.update_field(file.contents);
  }
  return hasher.finish();
}

}  // namespace

std::span<const KernelSourceFile> kernel_source_files() { return index(); }

std::optional<std::string_view> find_kernel_source(std::string_view path) {
  const auto& files = index();
  auto it = std::lower_bound(files.begin(), files.end(), path,
                             [](const KernelSourceFile& f, std::string_view p) { return f.path < p; });
  if (it == files.end() || it->path != path) return std::nullopt;
  return it->contents;
}

std::string_view kernel_source(std::string_view path) {
  if (auto contents = find_kernel_source(path)) return *contents;
  throw Error(ErrorCode::invalid_argument,
              "no kernel source \"" + std::string(path) + "\" is embedded (" +
                  std::to_string(index().size()) + " files from kernels/ are)");
}

const Sha256Digest& kernel_sources_digest() {
  static const Sha256Digest digest = compute_digest();
  return digest;
}

}  // namespace sinter::cuda

// Cubins loaded as CUDA libraries once per blob key and shared by every step of a plan that runs
// them, and by every runner of that plan (a library serves every device). Thread-safe: runners
// may load from different threads.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "cuda/library.hpp"

namespace sinter {

class LibraryCache {
 public:
  // The library of the cubin stored under `key`, loading `cubin` the first time.
  std::shared_ptr<const cuda::Library> get(const std::string& key, std::span<const char> cubin) {
    std::lock_guard lock(mutex_);
    std::shared_ptr<const cuda::Library>& lib = libraries_[key];
    if (!lib) lib = std::make_shared<const cuda::Library>(cuda::Library::load(cubin));
    return lib;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return libraries_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const cuda::Library>> libraries_;
};

}  // namespace sinter

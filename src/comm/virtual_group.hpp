// The group of virtual ranks (Communicator::create_virtual): W ranks on one GPU whose symmetric
// memory is plain allocations there. Allocation k holds every rank's part, made when the first
// rank asks for its k-th allocation and handed to the others when they ask for theirs; once
// every rank has its part the group lets go, and the ranks' buffers alone keep it alive.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/buffer.hpp"

namespace sinter::comm {

struct VirtualGroup {
  struct Parts {
    size_t bytes = 0;
    std::string what;
    int asked_by = 0;  // the rank that made it
    std::vector<cuda::DeviceBuffer> parts;
  };
  int world = 1;
  int device = 0;
  std::mutex mutex;
  std::vector<std::shared_ptr<Parts>> pending;  // by allocation index; null once every rank took its part
  std::vector<int> taken;                       // how many ranks took allocation k
};

}  // namespace sinter::comm

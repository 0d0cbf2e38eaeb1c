#include "mega/queue_image.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "sinter/error.hpp"

namespace sinter::mega {
namespace {

size_t align16(size_t n) { return (n + 15) / 16 * 16; }
// Argument structs and chunks start on 64 bytes: a struct may hold a CUtensorMap, which TMA reads
// from the image in global memory at a 64-aligned address (kernels/gemm/decode_tma.cuh).
size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// Where a chunk's argument structs start: after the header, the records and the waits.
size_t args_start(size_t tasks, size_t waits) {
  return align64(sizeof(SinterMegaChunk) + tasks * sizeof(SinterMegaTask) + waits * sizeof(SinterMegaWait));
}
// A chunk's bytes, with `args` bytes of argument structs (each 64-aligned), a multiple of 64.
size_t chunk_size(size_t tasks, size_t waits, size_t args) { return args_start(tasks, waits) + args; }

}  // namespace

size_t chunk_bytes_for_one_task(size_t arg_bytes, size_t waits) { return chunk_size(1, waits, align64(arg_bytes)); }

QueueImage lay_out_queues(const std::vector<std::vector<QueuedTask>>& ctas, const std::vector<size_t>& arg_bytes,
                          size_t chunk_bytes) {
  if (chunk_bytes % 64 != 0) throw Error(ErrorCode::internal, "megakernel: a chunk size not a multiple of 64");
  QueueImage image;
  image.arg_copies.resize(arg_bytes.size());
  image.arg_bytes = arg_bytes;
  unsigned first_task = 0;  // the segment's task order: CTA by CTA
  for (const std::vector<QueuedTask>& queue : ctas) {
    SinterMegaQueue q{};
    q.offset = image.bytes.size();
    size_t previous_header = ~size_t{0};  // where the chunk before this one has its header
    for (size_t begin = 0; begin < queue.size();) {
      // as many tasks as fit
      size_t end = begin, waits = 0, args = 0;
      std::map<unsigned, size_t> kernels;  // task kernel -> its argument struct's place among the chunk's
      for (; end < queue.size(); ++end) {
        const QueuedTask& t = queue[end];
        if (t.record.kernel >= arg_bytes.size()) {
          throw Error(ErrorCode::internal, "megakernel: a task of task kernel " + std::to_string(t.record.kernel) +
                                               " beyond the " + std::to_string(arg_bytes.size()) + " argument structs");
        }
        const bool new_kernel = kernels.count(t.record.kernel) == 0;
        const size_t more_args = new_kernel ? align64(arg_bytes[t.record.kernel]) : 0;
        if (chunk_size(end - begin + 1, waits + t.waits.size(), args + more_args) > chunk_bytes) break;
        if (new_kernel) kernels[t.record.kernel] = args;
        waits += t.waits.size();
        args += more_args;
      }
      if (end == begin) {
        throw Error(ErrorCode::internal,
                    "megakernel: a task of task kernel " + std::to_string(queue[begin].record.kernel) + " needs " +
                        std::to_string(chunk_bytes_for_one_task(arg_bytes[queue[begin].record.kernel],
                                                                queue[begin].waits.size())) +
                        " bytes of queue chunk; chunks hold " + std::to_string(chunk_bytes));
      }
      const size_t at = image.bytes.size(), size = chunk_size(end - begin, waits, args);
      image.bytes.resize(at + size, 0);
      char* chunk = image.bytes.data() + at;
      SinterMegaChunk h{};
      h.tasks = static_cast<unsigned>(end - begin);
      h.first_task = first_task + static_cast<unsigned>(begin);
      std::memcpy(chunk, &h, sizeof h);
      const size_t records_at = sizeof(SinterMegaChunk), waits_at = records_at + h.tasks * sizeof(SinterMegaTask);
      const size_t args_at = args_start(h.tasks, waits);
      size_t wait_at = waits_at;
      for (size_t i = begin; i < end; ++i) {
        SinterMegaTask r = queue[i].record;
        r.first_wait = static_cast<unsigned>(wait_at);
        r.wait_count = static_cast<unsigned>(queue[i].waits.size());
        r.args_offset = static_cast<unsigned>(args_at + kernels.at(r.kernel));
        r.args_bytes = static_cast<unsigned>(align16(arg_bytes[r.kernel]));
        std::memcpy(chunk + records_at + (i - begin) * sizeof(SinterMegaTask), &r, sizeof r);
        for (const SinterMegaWait& w : queue[i].waits) {
          std::memcpy(chunk + wait_at, &w, sizeof w);
          wait_at += sizeof w;
        }
      }
      for (const auto& [k, off] : kernels) image.arg_copies[k].push_back(at + args_at + off);
      if (previous_header != ~size_t{0}) {
        SinterMegaChunk prev;
        std::memcpy(&prev, image.bytes.data() + previous_header, sizeof prev);
        prev.next_bytes = static_cast<unsigned>(size);
        std::memcpy(image.bytes.data() + previous_header, &prev, sizeof prev);
      } else {
        q.bytes = static_cast<unsigned>(size);
      }
      previous_header = at;
      image.largest_chunk = std::max(image.largest_chunk, size);
      ++image.chunks;
      begin = end;
    }
    first_task += static_cast<unsigned>(queue.size());
    image.queues.push_back(q);
  }
  return image;
}

void write_arguments(QueueImage& image, size_t kernel, const void* data, size_t size) {
  if (kernel >= image.arg_copies.size()) {
    throw Error(ErrorCode::internal, "megakernel: arguments of task kernel " + std::to_string(kernel) + " of " +
                                         std::to_string(image.arg_copies.size()));
  }
  if (size != image.arg_bytes[kernel]) {
    throw Error(ErrorCode::internal, "megakernel: task kernel " + std::to_string(kernel) + "'s arguments are " +
                                         std::to_string(size) + " bytes; its struct has " +
                                         std::to_string(image.arg_bytes[kernel]));
  }
  for (size_t at : image.arg_copies[kernel]) std::memcpy(image.bytes.data() + at, data, size);
}

}  // namespace sinter::mega

// The megakernel's queues as its dispatcher reads them (kernels/mega/mega_abi.h): each CTA's
// tasks cut into chunks of at most `chunk_bytes`, a chunk being its header, its task records,
// their waits and one copy of the argument struct of every task kernel its tasks belong to, so
// that one bulk copy brings everything its tasks need into shared memory. A function from the
// CTAs' task lists to the image; the arguments are written into it later (write_arguments), when
// the runner binds pointers.
#pragma once

#include <cstddef>
#include <vector>

#include "mega/mega_abi.h"

namespace sinter::mega {

struct QueuedTask {
  SinterMegaTask record;  // everything but first_wait and args_offset, which the layout sets
  std::vector<SinterMegaWait> waits;
};

struct QueueImage {
  std::vector<char> bytes;                      // every CTA's chunks, CTA by CTA
  std::vector<SinterMegaQueue> queues;          // by CTA
  std::vector<std::vector<size_t>> arg_copies;  // by task kernel: where its argument struct's copies are
  std::vector<size_t> arg_bytes;                // by task kernel: its argument struct's size
  size_t chunks = 0;
  size_t largest_chunk = 0;
};

// The bytes a chunk holding one task with an argument struct of `arg_bytes` and `waits` waits
// needs: the smallest chunk size every task of a graph fits in.
size_t chunk_bytes_for_one_task(size_t arg_bytes, size_t waits);

// `ctas[c]`: CTA c's tasks in order; `arg_bytes[k]`: task kernel k's argument struct (the tasks'
// record.kernel index it). Each chunk takes as many of a CTA's next tasks as fit in `chunk_bytes`
// (a multiple of 64); Error(internal) when one task alone does not fit. Chunks and the argument
// structs in them start on 64 bytes.
QueueImage lay_out_queues(const std::vector<std::vector<QueuedTask>>& ctas, const std::vector<size_t>& arg_bytes,
                          size_t chunk_bytes);

// Writes task kernel `kernel`'s argument struct (arg_bytes[kernel] bytes) into every copy of it.
void write_arguments(QueueImage& image, size_t kernel, const void* data, size_t size);

}  // namespace sinter::mega

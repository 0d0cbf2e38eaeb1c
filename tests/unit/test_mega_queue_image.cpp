// The megakernel's queue image without a GPU: each CTA's tasks cut into chunks that fit, every
// task's record pointing at its own waits and at a copy of its kernel's argument struct inside its
// chunk, the chunks linked by size, and arguments written into every copy. The checks walk the
// image as the dispatcher does (kernels/mega/megakernel.cuh).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "mega/queue_image.hpp"
#include "sinter/error.hpp"

using namespace sinter;
using namespace sinter::mega;

namespace {

QueuedTask task(unsigned kernel, unsigned block, std::vector<SinterMegaWait> waits = {}) {
  QueuedTask t{};
  t.record.kernel = kernel;
  t.record.block_x = block;
  t.record.function = kernel * 10 + 1;
  t.waits = std::move(waits);
  return t;
}

template <class T>
T read(const QueueImage& im, size_t at) {
  T v;
  EXPECT_LE(at + sizeof(T), im.bytes.size());
  std::memcpy(&v, im.bytes.data() + at, sizeof v);
  return v;
}

// Walks CTA c's chunks as the dispatcher does; returns its records with the waits and the first
// argument word each task would read, and checks each chunk against `chunk_bytes`.
struct Seen {
  SinterMegaTask record;
  std::vector<SinterMegaWait> waits;
  unsigned first_arg_word;
  unsigned index;  // its task index (chunk first_task + k)
};
std::vector<Seen> walk(const QueueImage& im, size_t c, size_t chunk_bytes) {
  std::vector<Seen> out;
  const SinterMegaQueue q = im.queues.at(c);
  size_t at = q.offset, bytes = q.bytes;
  while (bytes != 0) {
    EXPECT_EQ(at % 64, 0u);
    EXPECT_EQ(bytes % 64, 0u);
    EXPECT_LE(bytes, chunk_bytes);
    const SinterMegaChunk h = read<SinterMegaChunk>(im, at);
    EXPECT_GT(h.tasks, 0u);
    for (unsigned k = 0; k < h.tasks; ++k) {
      Seen s;
      s.record = read<SinterMegaTask>(im, at + sizeof(SinterMegaChunk) + k * sizeof(SinterMegaTask));
      EXPECT_EQ(s.record.args_offset % 64, 0u);  // a tensor map in it is read from the image by TMA
      EXPECT_LE(s.record.args_offset + s.record.args_bytes, bytes);  // inside its own chunk
      EXPECT_LE(s.record.first_wait + s.record.wait_count * sizeof(SinterMegaWait), bytes);
      for (unsigned w = 0; w < s.record.wait_count; ++w) {
        s.waits.push_back(read<SinterMegaWait>(im, at + s.record.first_wait + w * sizeof(SinterMegaWait)));
      }
      s.first_arg_word = read<unsigned>(im, at + s.record.args_offset);
      s.index = h.first_task + k;
      out.push_back(s);
    }
    at += bytes;
    bytes = h.next_bytes;
  }
  return out;
}

}  // namespace

TEST(MegaQueueImage, ChunksFitAndEveryTaskFindsItsWaitsAndArguments) {
  std::mt19937 rng(7);
  const std::vector<size_t> arg_bytes = {8, 192, 200, 1000, 56};
  for (size_t chunk_bytes : {size_t{1280}, size_t{4096}, size_t{8192}}) {
    std::vector<std::vector<QueuedTask>> ctas(5);
    for (size_t c = 0; c < ctas.size(); ++c) {
      const int n = c == 3 ? 0 : 1 + static_cast<int>(rng() % 60);  // CTA 3 has no tasks
      for (int i = 0; i < n; ++i) {
        std::vector<SinterMegaWait> waits;
        for (unsigned w = rng() % 4; w > 0; --w) waits.push_back({static_cast<unsigned>(rng() % 50), 1 + w});
        ctas[c].push_back(task(static_cast<unsigned>(rng() % arg_bytes.size()), static_cast<unsigned>(i), waits));
      }
    }
    QueueImage im = lay_out_queues(ctas, arg_bytes, chunk_bytes);
    // each kernel's struct starts with its index + 1000, in every copy
    for (size_t k = 0; k < arg_bytes.size(); ++k) {
      std::vector<char> a(arg_bytes[k], 0);
      const unsigned word = static_cast<unsigned>(1000 + k);
      std::memcpy(a.data(), &word, std::min(sizeof word, a.size()));
      write_arguments(im, k, a.data(), a.size());
    }
    ASSERT_EQ(im.queues.size(), ctas.size());
    EXPECT_LE(im.largest_chunk, chunk_bytes);
    unsigned next_index = 0;
    for (size_t c = 0; c < ctas.size(); ++c) {
      const std::vector<Seen> seen = walk(im, c, chunk_bytes);
      ASSERT_EQ(seen.size(), ctas[c].size()) << "CTA " << c << ", chunks of " << chunk_bytes;
      for (size_t i = 0; i < seen.size(); ++i) {
        const QueuedTask& want = ctas[c][i];
        EXPECT_EQ(seen[i].record.kernel, want.record.kernel);
        EXPECT_EQ(seen[i].record.block_x, want.record.block_x);
        EXPECT_EQ(seen[i].record.function, want.record.function);
        EXPECT_EQ(seen[i].record.args_bytes, (arg_bytes[want.record.kernel] + 15) / 16 * 16);
        ASSERT_EQ(seen[i].waits.size(), want.waits.size());
        for (size_t w = 0; w < want.waits.size(); ++w) {
          EXPECT_EQ(seen[i].waits[w].counter, want.waits[w].counter);
          EXPECT_EQ(seen[i].waits[w].tasks, want.waits[w].tasks);
        }
        EXPECT_EQ(seen[i].first_arg_word, 1000 + want.record.kernel);
        EXPECT_EQ(seen[i].index, next_index++);  // the segment's task order, CTA by CTA
      }
    }
    if (chunk_bytes == 1280) {
      EXPECT_GT(im.chunks, ctas.size());  // small chunks: several a CTA
    }
  }
}

TEST(MegaQueueImage, TasksOfOneKernelInAChunkShareOneArgumentCopy) {
  std::vector<std::vector<QueuedTask>> ctas(1);
  for (unsigned b = 0; b < 10; ++b) ctas[0].push_back(task(b % 2, b));
  const QueueImage im = lay_out_queues(ctas, {512, 512}, 8192);
  EXPECT_EQ(im.chunks, 1u);
  EXPECT_EQ(im.arg_copies[0].size(), 1u);
  EXPECT_EQ(im.arg_copies[1].size(), 1u);
  // 16 header + 10 records (656, up to 704), then two 512-byte structs
  EXPECT_EQ(im.bytes.size(), 704u + 2 * 512);
}

TEST(MegaQueueImage, ATaskThatFitsNoChunkAndWrongArgumentsAreErrors) {
  std::vector<std::vector<QueuedTask>> ctas(1);
  ctas[0].push_back(task(0, 0));
  EXPECT_EQ(chunk_bytes_for_one_task(1000, 0), 128u + 1024);  // header + record up to 128, the struct up to 1024
  try {
    lay_out_queues(ctas, {1000}, 1088);
    FAIL() << "a 1000-byte argument struct fit a 1088-byte chunk";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1152 bytes of queue chunk; chunks hold 1088"), std::string::npos) << e.what();
  }
  QueueImage im = lay_out_queues(ctas, {1000}, 1152);
  std::vector<char> wrong(999);
  EXPECT_THROW(write_arguments(im, 0, wrong.data(), wrong.size()), Error);
  EXPECT_THROW(write_arguments(im, 1, wrong.data(), wrong.size()), Error);
}

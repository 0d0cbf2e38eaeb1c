// What one task (one CTA) of a kernel reads or writes of a tensor: a box of the tensor's
// elements whose origin moves with the task's block index. Code generators that know their
// tiling declare boxes (KernelSpec::task_boxes); the megakernel derives tile-level dependencies
// from them (a consumer task waits only for the producer tasks whose written box meets the box
// it reads). A tensor without a box is read or written whole by every task.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sinter {

// One digit of the block index, innermost first: digit j = block / (radix_0 ... radix_{j-1}) %
// radix_j; the box origin moves by `rows` and `cols` per unit of it.
struct BoxDigit {
  int64_t radix = 1;
  int64_t rows = 0, cols = 0;
};

struct TaskBox {
  bool write = false;
  int slot = 0;            // region input index (a read) or output index (a write)
  int elem_bytes = 2;
  // The tensor in storage as a matrix: element (r, c) at r * pitch + c, r < rows, c < cols.
  int64_t rows = 1, cols = 1, pitch = 1;
  std::vector<BoxDigit> digits;
  int64_t box_rows = 1, box_cols = 1;  // the box's size; clipped to the matrix
  // The row where block 0's box starts; negative moves the first blocks' boxes before the
  // matrix, where they are empty (a copy's tasks of an earlier part read nothing of this one).
  int64_t row0 = 0;
};

// A box placed for one block, clipped: rows [row, row + rows), columns [col, col + cols).
struct PlacedBox {
  int64_t row = 0, rows = 0, col = 0, cols = 0;
  bool empty() const { return rows <= 0 || cols <= 0; }
};

inline PlacedBox place_box(const TaskBox& b, uint64_t block) {
  PlacedBox p;
  p.row = b.row0;
  uint64_t rest = block;
  for (const BoxDigit& d : b.digits) {
    const uint64_t radix = static_cast<uint64_t>(std::max<int64_t>(d.radix, 1));
    const int64_t digit = static_cast<int64_t>(rest % radix);
    rest /= radix;
    p.row += digit * d.rows;
    p.col += digit * d.cols;
  }
  const int64_t row = std::max<int64_t>(p.row, 0);
  p.rows = std::min(p.row + b.box_rows, b.rows) - row;
  p.row = row;
  p.cols = std::min(b.box_cols, b.cols - p.col);
  return p;
}

// The box's elements as one interval of storage elements [lo, hi) that covers them (exact when
// the box spans whole rows or one row); empty (lo == hi) when the box is.
struct ElementRange {
  int64_t lo = 0, hi = 0;
  bool meets(const ElementRange& o) const { return lo < o.hi && o.lo < hi; }
};

inline ElementRange element_range(const TaskBox& b, const PlacedBox& p) {
  if (p.empty()) return {};
  return {p.row * b.pitch + p.col, (p.row + p.rows - 1) * b.pitch + p.col + p.cols};
}

}  // namespace sinter

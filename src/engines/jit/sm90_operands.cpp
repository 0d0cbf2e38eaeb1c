#include "engines/jit/sm90_operands.hpp"

#include <cuda.h>

#include <string>

#include "sinter/error.hpp"

namespace sinter::jit {

namespace {

// A weight broadcast over the batch and A's rows evenly spaced across batches (batch stride = M
// x row stride): the batched GEMM is one GEMM of batches x M rows. The epilogue indexes by the
// flattened output row (batch x M + row), which is the same number either way.
void fold_broadcast_batch(Sm90Operands& o) {
  if (o.batch.numel <= 1 || o.batch.sizes.size() != 1) return;
  if (o.batch.strides[1][0] != 0 || o.batch.strides[0][0] != o.m * o.a_stride_m || o.a_stride_m <= 0) return;
  o.m *= o.batch.numel;
  o.batch = collapse(Dims{}, {Dims{}, Dims{}});
  o.batch_folded = true;
}

}  // namespace

Sm90Operands sm90_operands(const Graph& g, const fuse::Region& r) {
  Sm90Operands o;
  o.mm = &g.node(r.anchor);
  const TensorInfo& ta = g.tensor(o.mm->inputs[0]);
  const TensorInfo& tb = g.tensor(o.mm->inputs[1]);
  const TensorInfo& ty = g.tensor(o.mm->outputs[0]);
  const size_t ra = ta.dims.size(), rb = tb.dims.size();
  o.dtype = ta.dtype;
  o.dtype_b = tb.dtype;
  o.m = ta.dims[ra - 2];
  o.k = ta.dims[ra - 1];
  o.n = tb.dims[rb - 1];
  o.a_stride_m = ta.strides[ra - 2];
  o.a_stride_k = ta.strides[ra - 1];
  o.b_stride_k = tb.strides[rb - 2];
  o.b_stride_n = tb.strides[rb - 1];
  o.b_mn_major = !(o.b_stride_k == 1 || o.k == 1) && (o.b_stride_n == 1 || o.n == 1);
  const Dims batch(ty.dims.begin(), ty.dims.end() - 2);
  const Dims a_batch = broadcast_strides(Dims(ta.dims.begin(), ta.dims.end() - 2),
                                         Dims(ta.strides.begin(), ta.strides.end() - 2), batch);
  const Dims b_batch = broadcast_strides(Dims(tb.dims.begin(), tb.dims.end() - 2),
                                         Dims(tb.strides.begin(), tb.strides.end() - 2), batch);
  o.batch = collapse(batch, {a_batch, b_batch});
  fold_broadcast_batch(o);
  return o;
}

namespace {
// A TMA stride over a dim of size 1 is never used; any valid one (the packed size) will do.
int64_t tma_stride(int64_t size, int64_t stride, int64_t packed) { return size == 1 ? packed : stride; }
}  // namespace

std::pair<int64_t, int64_t> sm90_operand_strides(const Sm90Operands& o, bool is_a) {
  const int64_t es = static_cast<int64_t>(dtype_size(o.dtype));
  if (!is_a && o.b_mn_major) {
    const int64_t row = tma_stride(o.k, o.b_stride_k * es, (o.n * es + 15) / 16 * 16);
    return {row, o.batch.numel == 1 ? row * o.k : o.batch.strides[1][0] * es};
  }
  const int64_t rows = is_a ? o.m : o.n;
  const int64_t row_packed = (o.k * es + 15) / 16 * 16;
  const int64_t row = tma_stride(rows, (is_a ? o.a_stride_m : o.b_stride_n) * es, row_packed);
  const int64_t batch_packed = row * rows;
  const int64_t batch = o.batch.numel == 1 ? batch_packed : o.batch.strides[is_a ? 0 : 1][0] * es;
  return {row, batch};
}

int tensor_map_data_type(DType t) {
  switch (t) {
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    default: return -1;
  }
}

TensorMapSlot sm90_tensor_map(const fuse::Region& r, const Sm90Operands& o, bool is_a, uint32_t box_rows) {
  const auto [row, batch] = sm90_operand_strides(o, is_a);
  TensorMapSlot t;
  t.source = PointerSlot::Source::input;
  t.index = region_input_index(r, o.mm->inputs[is_a ? 0 : 1]);
  if (t.index < 0) throw Error(ErrorCode::internal, "sm90 gemm: an operand is not a region input");
  t.data_type = tensor_map_data_type(o.dtype);
  const bool mn_major = !is_a && o.b_mn_major;
  t.dims[0] = static_cast<uint64_t>(mn_major ? o.n : o.k);
  t.dims[1] = static_cast<uint64_t>(is_a ? o.m : mn_major ? o.k : o.n);
  t.dims[2] = static_cast<uint64_t>(o.batch.numel);
  t.strides[0] = static_cast<uint64_t>(row);
  t.strides[1] = static_cast<uint64_t>(batch);
  t.box[0] = static_cast<uint32_t>(128 / dtype_size(o.dtype));  // 128 bytes: the widest inner box the 128-byte swizzle allows
  t.box[1] = mn_major ? 64 : box_rows;  // MN-major: 64 k rows; the kernel loads the tile's 64-column atoms
  t.box[2] = 1;
  return t;
}

SinterGemmShape sm90_gemm_shape(const Sm90Operands& o) {
  SinterGemmShape shape{};
  shape.m = o.m;
  shape.n = o.n;
  shape.k = o.k;
  shape.batches = o.batch.numel;
  shape.a_stride_m = o.a_stride_m;
  shape.a_stride_k = o.a_stride_k;
  shape.b_stride_k = o.b_stride_k;
  shape.b_stride_n = o.b_stride_n;
  shape.batch = make_iter_shape(o.batch);
  shape.a_batch = make_view(o.batch.strides[0]);
  shape.b_batch = make_view(o.batch.strides[1]);
  return shape;
}

}  // namespace sinter::jit

// Batched matmul with numpy-broadcast batch dims. The compute type and out_dtype of MatmulAttrs do
// not enter here: the reference always accumulates in float64 and the executor rounds the result
// to the output dtype.
#include <algorithm>

#include "ref/ops.hpp"

namespace sinter::ref {
namespace {

// c[M, N] = a[M, K] x b[K, N], all row-major and contiguous. The i-k-j order streams through
// rows of b and c, so the inner loop is a contiguous axpy the compiler vectorizes; each c[i][j]
// still sums its K products in order k = 0, 1, ..., K-1, as a plain dot product would.
void gemm(const double* a, const double* b, double* c, int64_t m, int64_t k, int64_t n) {
  std::fill(c, c + m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    double* crow = c + i * n;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double aik = a[i * k + kk];
      const double* brow = b + kk * n;
      for (int64_t j = 0; j < n; ++j) crow[j] += aik * brow[j];
    }
  }
}

}  // namespace

// a: [..., M, K], b: [..., K, N]
// out: [broadcast(a..., b...), M, N]
RefTensor matmul(const RefTensor& a, const RefTensor& b) {
  const int64_t m = a.dims[a.dims.size() - 2], k = a.dims.back(), n = b.dims.back();
  const Dims batch_a(a.dims.begin(), a.dims.end() - 2);
  const Dims batch_b(b.dims.begin(), b.dims.end() - 2);
  const Dims batch = *broadcast_dims(batch_a, batch_b);

  Dims out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  RefTensor out(out_dims);

  BroadcastCursor ca(batch_a, batch), cb(batch_b, batch);
  const int64_t batches = num_elements(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const double* pa = a.data.data() + ca.next() * m * k;
    const double* pb = b.data.data() + cb.next() * k * n;
    gemm(pa, pb, out.data.data() + bi * m * n, m, k, n);
  }
  return out;
}

}  // namespace sinter::ref

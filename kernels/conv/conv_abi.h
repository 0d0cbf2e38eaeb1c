/* Run-time sizes of a conv2d as an implicit GEMM, shared by the host packer and the generated
   kernels. x NHWC [n, h, w, c], w KRSC [k, r, s, c / groups], out NPQK [n, p, q, k]. Per group the
   GEMM is M = n*p*q output pixels, N = kg = k / groups output channels, and a reduction over
   kdim = r*s*cg with cg = c / groups, ordered (r, s, c) like the filter's memory. */
#ifndef SINTER_KERNELS_CONV_ABI_H
#define SINTER_KERNELS_CONV_ABI_H

#include "common/abi.h"

struct SinterConvShape {
  long long n, h, w, c, k, r, s, p, q;
  long long groups, cg, kg;
  long long m, kdim;
  long long x_stride[4], w_stride[4];  /* element strides, NHWC and KRSC */
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w; /* pad_*: the top and left padding */
  struct SinterFastDivmod div_q, div_p;   /* output pixel index -> (n, p, q) */
  struct SinterFastDivmod div_cg, div_s;  /* reduction index -> (r, s, c) */
  int pad_;
};

#endif

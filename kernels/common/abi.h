/* Argument building blocks shared by the host (C++) and run-time compiled kernels (NVRTC).
   Only fixed-size plain types, so both compilers lay them out identically. A generated kernel's
   argument struct is a sequence of these blocks and pointers; the host packs the same sequence
   (src/engines/jit/kernel_args.hpp), with C layout rules. */
#ifndef SINTER_KERNELS_ABI_H
#define SINTER_KERNELS_ABI_H

#define SINTER_MAX_RANK 8

/* Division by a run-time divisor d (1 <= d < 2^31) for numerators below 2^31. */
struct SinterFastDivmod {
  unsigned int d, mul, shift;
};

/* A collapsed iteration shape, innermost dimension first. */
struct SinterIterShape {
  int rank;
  int pad_;
  long long numel;
  struct SinterFastDivmod dim[SINTER_MAX_RANK];
  long long size[SINTER_MAX_RANK];
};

/* Element strides of one operand over an iteration shape, innermost first; 0 on broadcast dims. */
struct SinterStridedView {
  long long stride[SINTER_MAX_RANK];
};

/* An exit reduction's state: a float accumulator in workspace memory, the CTA counter that elects
   the last CTA to finalize, and the output (in the reduction's dtype). The workspace is zeroed
   once when allocated; the last CTA resets it, so launches need no memset in between. */
struct SinterReduceSlot {
  float* acc;           /* one per output element of the reduction */
  unsigned int* count;  /* CTAs done, per launch */
  void* out;
  long long n_out;      /* output elements */
  float scale;          /* 1/count for mean, else 1 */
  int pad_;
};

#endif

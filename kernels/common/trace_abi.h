/* The layout of the per-CTA time stamps of a traced kernel (common/trace.cuh), shared by the
   kernels and the host that reads them (src/engines/jit/jit_engine.cpp, SINTER_TRACE_FILE): the
   module global SINTER_TRACE_GLOBAL holds SINTER_TRACE_WORDS 64-bit words for each of the first
   SINTER_TRACE_MAX_CTAS CTAs: the SM's id, then (globaltimer ns, clock64 cycles) per stamp. */
#ifndef SINTER_KERNELS_TRACE_ABI_H
#define SINTER_KERNELS_TRACE_ABI_H

#define SINTER_TRACE_GLOBAL "sinter_trace"
#define SINTER_TRACE_STAMPS 5
#define SINTER_TRACE_WORDS (1 + 2 * SINTER_TRACE_STAMPS)
#define SINTER_TRACE_MAX_CTAS 1024

#endif

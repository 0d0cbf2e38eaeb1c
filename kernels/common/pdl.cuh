// Programmatic dependent launch (sm_90+). Every generated kernel begins with
// sinter_kernel_begin(): it waits until the kernel launched before it on the stream has finished
// and its writes are visible (griddepcontrol.wait), then lets the kernel after it launch early
// (griddepcontrol.launch_dependents). Launched with the programmatic-serialization attribute
// (cuda::LaunchConfig::programmatic), a kernel's blocks are scheduled while its predecessor drains
// and only then wait, so the launch latency between dependent kernels overlaps the predecessor's
// tail. The wait comes before any global memory access, reads and writes alike: an arena buffer
// this kernel writes may be one the predecessor still reads. Launched without the attribute,
// both instructions do nothing.
#pragma once

// Inside a megakernel (SINTER_MEGAKERNEL) a task is not a launch: the megakernel is launched
// without the attribute, so both instructions would do nothing, and they are left out.
__device__ __forceinline__ void sinter_kernel_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(SINTER_MEGAKERNEL)
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

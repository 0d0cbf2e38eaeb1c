// Conversions between the jit engine's KernelSpec (what codegen produces, launched by a JitStep)
// and a KernelRecord (what a plan stores). Saving turns each prepared kernel into a record with
// its cubin in the plan's blobs; loading turns a record back into a spec (with no source: the
// cubin is already compiled) that launches exactly as a freshly built JitStep would.
#pragma once

#include <span>
#include <string>

#include "engines/jit/kernel_spec.hpp"
#include "engines/saved_step.hpp"

namespace sinter::jit {

// `spec` must be final (after the engine resized a persistent grid). Every pointer and tensor map
// is zeroed in the record's argument bytes. Throws Error(internal) when a slot does not fit the
// arguments.
KernelRecord to_kernel_record(const KernelSpec& spec, std::string cubin_key, std::string cache_key = "");

// The spec a runner launches: entry, description, launch shape (stream unset), argument bytes,
// pointer and tensor map slots; `source` is empty.
KernelSpec to_kernel_spec(const KernelRecord& record);

}  // namespace sinter::jit

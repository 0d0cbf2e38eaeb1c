// The engines, listed once. Everything above engines/ finds an engine here: by the list (in
// preference order) or by the name a plan records.
#pragma once

#include <span>
#include <string_view>

#include "engines/engine.hpp"

namespace sinter {

// In preference order: alias (a reshape that shares memory runs nothing), cublaslt, cudnn, nccl
// (collectives only), jit.
// Ties in tuning go to the earlier engine.
std::span<const Engine* const> registered_engines();
// The engine of that name, or null.
const Engine* find_engine(std::string_view name);
// "alias, cublaslt, cudnn, nccl, jit": for messages.
std::string registered_engine_names();

}  // namespace sinter

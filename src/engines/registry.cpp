#include "engines/registry.hpp"

#include <algorithm>
#include <string>

#include "engines/alias_engine.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/jit/jit_engine.hpp"
#include "engines/nccl/nccl_engine.hpp"

namespace sinter {

std::span<const Engine* const> registered_engines() {
  static const AliasEngine alias;
  static const cublaslt::CublasLtEngine cublaslt;
  static const cudnn::CudnnEngine cudnn;
  static const nccl::NcclEngine nccl;
  static const jit::JitEngine jit;
  static const Engine* const engines[] = {&alias, &cublaslt, &cudnn, &nccl, &jit};
  return engines;
}

const Engine* find_engine(std::string_view name) {
  for (const Engine* e : registered_engines()) {
    if (e->name() == name) return e;
  }
  return nullptr;
}

std::string registered_engine_names() {
  std::string out;
  for (const Engine* e : registered_engines()) out += (out.empty() ? "" : ", ") + std::string(e->name());
  return out;
}

bool EngineContext::named(std::string_view engine) const {
  return std::find(named_engines.begin(), named_engines.end(), engine) != named_engines.end();
}

}  // namespace sinter

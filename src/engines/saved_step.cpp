#include "engines/saved_step.hpp"

#include <cuda.h>

namespace sinter {

std::string_view to_string(PointerSource s) {
  switch (s) {
    case PointerSource::input: return "input";
    case PointerSource::output: return "output";
    case PointerSource::workspace: return "workspace";
  }
  return "?";
}

std::string_view to_string(BlobKind k) {
  switch (k) {
    case BlobKind::cubin: return "cubin";
    case BlobKind::vendor_config: return "vendor-config";
  }
  return "?";
}

int tensor_map_record_type(DType t) {
  switch (t) {
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    default: return -1;
  }
}

}  // namespace sinter

# The GPU side of the `sinter` library: the CUDA toolkit, src/cuda, and the kernels/ sources
# embedded for NVRTC. Included by the top-level CMakeLists.txt right after `sinter` is defined.
#
# Linking: the CUDA runtime is static (binaries run on any machine with a new enough driver, and
# on CI machines with none); libcuda is never linked (driver functions come from
# cudaGetDriverEntryPointByVersion at run time); NVRTC is a shared library present wherever we run.
# 12.5: the first toolkit with cudaGetDriverEntryPointByVersion (development and CI use 13.0).
find_package(CUDAToolkit 12.5 REQUIRED)

file(GLOB SINTER_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda/*.cpp)
target_sources(sinter PRIVATE ${SINTER_CUDA_SOURCES})
# cudart_static brings its own needs (pthread, dl, rt); dl is also ours (device.cpp probes for
# libcuda.so.1 to explain a missing driver).
target_link_libraries(sinter PUBLIC CUDA::cudart_static CUDA::nvrtc CUDA::cublasLt ${CMAKE_DL_LIBS})
# NCCL: its header only (src/comm/nccl_library.hpp loads libnccl.so.2 with dlopen at run time,
# so binaries run where NCCL is absent and say so). The toolkit's include folder usually has it.
find_path(SINTER_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
if(NOT SINTER_NCCL_INCLUDE_DIR)
  message(FATAL_ERROR "nccl.h not found (looked in ${CUDAToolkit_INCLUDE_DIRS} and /usr/include): install the NCCL "
                      "development headers or set SINTER_NCCL_INCLUDE_DIR; libnccl itself is not linked")
endif()
target_include_directories(sinter PRIVATE ${SINTER_NCCL_INCLUDE_DIR})
target_include_directories(sinter_internals INTERFACE ${SINTER_NCCL_INCLUDE_DIR})

# Where NVRTC finds <cuda_fp16.h>, <cuda/barrier> and friends when no environment variable says
# otherwise (see src/cuda/nvrtc.cpp).
list(GET CUDAToolkit_INCLUDE_DIRS 0 SINTER_CUDA_INCLUDE_DIR)
target_compile_definitions(sinter PRIVATE SINTER_CUDA_INCLUDE_DIR="${SINTER_CUDA_INCLUDE_DIR}")

# --- kernels/ embedded into the library ---------------------------------------------------------
# The glob re-runs on every build (CONFIGURE_DEPENDS), so an added or removed file reconfigures;
# the manifest then changes, and the generator re-runs. An edited file re-runs it through DEPENDS.
# *.h too: plain C headers such as kernels/common/abi.h are shared by host code and kernels.
file(GLOB_RECURSE SINTER_KERNEL_FILES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/kernels/*.cuh
  ${PROJECT_SOURCE_DIR}/kernels/*.cu
  ${PROJECT_SOURCE_DIR}/kernels/*.h)
list(SORT SINTER_KERNEL_FILES)
list(JOIN SINTER_KERNEL_FILES "\n" SINTER_KERNEL_MANIFEST)
set(SINTER_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
# file(CONFIGURE) leaves the file untouched when its content is unchanged.
file(CONFIGURE OUTPUT ${SINTER_GENERATED_DIR}/kernel_manifest.txt
  CONTENT "${SINTER_KERNEL_MANIFEST}\n" @ONLY)

set(SINTER_EMBEDDED_KERNELS_CPP ${SINTER_GENERATED_DIR}/embedded_kernels.cpp)
add_custom_command(
  OUTPUT ${SINTER_EMBEDDED_KERNELS_CPP}
  COMMAND ${CMAKE_COMMAND}
    -DKERNELS_DIR=${PROJECT_SOURCE_DIR}/kernels
    -DMANIFEST=${SINTER_GENERATED_DIR}/kernel_manifest.txt
    -DOUTPUT=${SINTER_EMBEDDED_KERNELS_CPP}
    -P ${PROJECT_SOURCE_DIR}/cmake/sinter_embed_kernels.cmake
  DEPENDS
    ${SINTER_KERNEL_FILES}
    ${SINTER_GENERATED_DIR}/kernel_manifest.txt
    ${PROJECT_SOURCE_DIR}/cmake/sinter_embed_kernels.cmake
  COMMENT "Embedding kernels/ sources"
  VERBATIM)
target_sources(sinter PRIVATE ${SINTER_EMBEDDED_KERNELS_CPP})

# Build-time script (cmake -P): writes a C++ file holding every kernels/ source listed in MANIFEST
# as bytes, for src/cuda/kernel_sources.cpp. Inputs:
#   KERNELS_DIR  the kernels/ folder
#   MANIFEST     a file with one absolute path per line (written at configure time from a glob)
#   OUTPUT       the .cpp to write; left untouched when its contents would not change
cmake_minimum_required(VERSION 3.25)

file(STRINGS "${MANIFEST}" files)
list(FILTER files EXCLUDE REGEX "^$")
list(SORT files)

# CMake regular expressions have no {n} repetition: spell out one line's worth of bytes.
string(REPEAT "0x[0-9a-f][0-9a-f]," 32 line_of_bytes)

set(arrays "")
set(records "")
set(index 0)
foreach(path IN LISTS files)
  file(RELATIVE_PATH relative "${KERNELS_DIR}" "${path}")
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  # 0xNN, per byte, 32 to a line; a trailing 0 makes the array non-empty for empty files and lets
  # the text double as a C string when debugging.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(${line_of_bytes})" "\\1\n  " bytes "${bytes}")
  string(REPLACE "\\" "\\\\" relative_c "${relative}")
  string(REPLACE "\"" "\\\"" relative_c "${relative_c}")
  string(APPEND arrays "// ${relative}\nconst unsigned char file_${index}[] = {\n  ${bytes}0x00};\n\n")
  string(APPEND records "    {\"${relative_c}\", file_${index}, ${size}},\n")
  math(EXPR index "${index} + 1")
endforeach()

set(content "// Generated from kernels/ by cmake/sinter_embed_kernels.cmake. Do not edit.\n")
string(APPEND content "#include \"cuda/kernel_sources.hpp\"\n\n")
string(APPEND content "namespace sinter::cuda::detail {\n")
if(index EQUAL 0)
  string(APPEND content "\nstd::span<const EmbeddedFileRecord> embedded_file_records() { return {}; }\n")
else()
  string(APPEND content "namespace {\n\n${arrays}")
  string(APPEND content "const EmbeddedFileRecord records[] = {\n${records}};\n\n}  // namespace\n\n")
  string(APPEND content "std::span<const EmbeddedFileRecord> embedded_file_records() { return records; }\n")
endif()
string(APPEND content "\n}  // namespace sinter::cuda::detail\n")

# Write through a temporary file and copy only on change, so an unrelated reconfigure does not
# force the library to recompile and relink.
file(WRITE "${OUTPUT}.tmp" "${content}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")

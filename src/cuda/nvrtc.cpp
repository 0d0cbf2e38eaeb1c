#include "cuda/nvrtc.hpp"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "cuda/check.hpp"
#include "cuda/kernel_sources.hpp"
#include "sinter/error.hpp"

namespace sinter::cuda {
namespace {

namespace fs = std::filesystem;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string find_toolkit_include() {
  std::vector<std::string> candidates;
  if (auto dir = environment("SINTER_CUDA_INCLUDE_DIR"); !dir.empty()) {
    // An explicit choice is honoured as is: if it is wrong, NVRTC's "cannot open" says so.
    return dir;
  }
  if (auto home = environment("CUDA_HOME"); !home.empty()) candidates.push_back(home + "/include");
  if (auto path = environment("CUDA_PATH"); !path.empty()) candidates.push_back(path + "/include");
#ifdef SINTER_CUDA_INCLUDE_DIR
  candidates.push_back(SINTER_CUDA_INCLUDE_DIR);
#endif
  candidates.push_back("/usr/local/cuda/include");
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "cuda_fp16.h", ec)) return dir;
  }
  return "";
}

// nvrtcProgram owner, so every exit path destroys it.
struct ProgramDeleter {
  void operator()(nvrtcProgram* program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};
using ProgramPtr = std::unique_ptr<nvrtcProgram, ProgramDeleter>;

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  SINTER_NVRTC_CHECK(nvrtcGetProgramLogSize(program, &size));
  std::string log(size, '\0');
  if (size > 0) SINTER_NVRTC_CHECK(nvrtcGetProgramLog(program, log.data()));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

}  // namespace

NvrtcVersion nvrtc_version() {
  NvrtcVersion version;
  SINTER_NVRTC_CHECK(nvrtcVersion(&version.major, &version.minor));
  return version;
}

std::vector<std::string> cuda_include_directories() {
  // Looked up once: the answer feeds cache keys, which must not drift within a process.
  static const std::vector<std::string> directories = [] {
    std::vector<std::string> result;
    std::string include = find_toolkit_include();
    if (include.empty()) return result;
    result.push_back(include);
    std::error_code ec;
    if (fs::is_directory(fs::path(include) / "cccl", ec)) result.push_back(include + "/cccl");
    return result;
  }();
  return directories;
}

std::vector<std::string> compile_options(const CompileOptions& options) {
  std::vector<std::string> result = {"--gpu-architecture=" + options.arch, "-lineinfo",
                                     "--std=c++17", "-default-device"};
  for (const std::string& dir : cuda_include_directories()) result.push_back("-I" + dir);
  result.insert(result.end(), options.extra_options.begin(), options.extra_options.end());
  return result;
}

CompileResult compile_cuda(std::string_view name, std::string_view source,
                           const CompileOptions& options) {
  if (!options.arch.starts_with("sm_")) {
    throw Error(ErrorCode::invalid_argument,
                "NVRTC target \"" + options.arch +
                    "\" is not a real GPU architecture (expected sm_XY or sm_XYa); a cubin "
                    "needs one");
  }
  // NVRTC wants NUL-terminated strings; keep copies alive for the program's lifetime.
  std::vector<std::string> header_names, header_texts;
  for (const SourceHeader& header : options.extra_headers) {
    header_names.push_back(header.name);
    header_texts.push_back(header.contents);
  }
  for (const KernelSourceFile& file : kernel_source_files()) {
    bool replaced = false;
    for (const SourceHeader& header : options.extra_headers) replaced |= header.name == file.path;
    if (replaced) continue;
    header_names.emplace_back(file.path);
    header_texts.emplace_back(file.contents);
  }
  std::vector<const char*> name_ptrs, text_ptrs;
  for (std::size_t i = 0; i < header_names.size(); ++i) {
    name_ptrs.push_back(header_names[i].c_str());
    text_ptrs.push_back(header_texts[i].c_str());
  }
  const std::string source_text(source), program_name(name);

  ProgramPtr program(new nvrtcProgram(nullptr));
  SINTER_NVRTC_CHECK(nvrtcCreateProgram(program.get(), source_text.c_str(), program_name.c_str(),
                                        int(name_ptrs.size()), text_ptrs.data(),
                                        name_ptrs.data()));

  const std::vector<std::string> option_strings = compile_options(options);
  std::vector<const char*> option_ptrs;
  for (const std::string& option : option_strings) option_ptrs.push_back(option.c_str());

  const auto start = std::chrono::steady_clock::now();
  const nvrtcResult status =
      nvrtcCompileProgram(*program, int(option_ptrs.size()), option_ptrs.data());
  CompileResult result;
  result.log = program_log(*program);
  if (status != NVRTC_SUCCESS) {
    std::string options_text;
    for (const std::string& option : option_strings) options_text += " " + option;
    throw Error(ErrorCode::compile, "NVRTC could not compile \"" + program_name + "\" for " +
                                        options.arch + " (" + nvrtcGetErrorString(status) +
                                        "):\n" + result.log + "\noptions:" + options_text);
  }
  std::size_t size = 0;
  SINTER_NVRTC_CHECK(nvrtcGetCUBINSize(*program, &size));
  result.cubin.resize(size);
  if (size > 0) SINTER_NVRTC_CHECK(nvrtcGetCUBIN(*program, result.cubin.data()));
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (result.cubin.empty()) {
    throw Error(ErrorCode::compile,
                "NVRTC compiled \"" + program_name + "\" but produced no cubin for " + options.arch);
  }
  return result;
}

}  // namespace sinter::cuda

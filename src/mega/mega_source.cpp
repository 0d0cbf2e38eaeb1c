#include "mega/mega_source.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "sinter/error.hpp"

namespace sinter::mega {
namespace {

struct Rewritten {
  std::vector<std::string> includes;  // in order
  std::string body;                   // the source without them, the entry a device function
  std::string args_type;              // the entry's parameter type
};

Rewritten rewrite(const TaskFunction& f, unsigned index) {
  Rewritten r;
  std::istringstream in(f.source);
  std::string line, body;
  while (std::getline(in, line)) {
    if (line.rfind("#include", 0) == 0) {
      r.includes.push_back(line);
    } else {
      body += line + "\n";
    }
  }
  // extern "C" __global__ void __launch_bounds__(...) ENTRY(const __grid_constant__ T a)
  const std::regex entry("extern \"C\" __global__ void __launch_bounds__\\((?:[^()]|\\([^()]*\\))*\\)\\s*" + f.entry +
                         "\\(const __grid_constant__ ([A-Za-z_][A-Za-z_0-9:<>, ]*?) a\\)");
  std::smatch m;
  if (!std::regex_search(body, m, entry)) {
    throw Error(ErrorCode::internal, "megakernel: task function " + std::to_string(index) + " has no entry '" + f.entry +
                                         "(const __grid_constant__ Args a)' to call");
  }
  r.args_type = m[1].str();
  // inlined into the dispatcher's switch: a call would save the callee-saved registers the task
  // uses on the stack every task (the call ABI), spills its standalone kernel does not have
  r.body = m.prefix().str() + "__device__ __forceinline__ void " + f.entry + "(const " + r.args_type + "& a)" +
           m.suffix().str() + "using SinterTaskArgs = " + r.args_type + ";\n";
  return r;
}

}  // namespace

int megakernel_min_blocks(const TaskGraph& g) {
  // each thread at least 128 registers (the dispatcher's loop, and every task of a small kernel
  // beside it) and the registers the hungriest task's standalone kernel has, in the allocation's
  // steps of 8
  const unsigned registers = std::max(128u, (g.max_registers + 7) / 8 * 8);
  return std::max(1, static_cast<int>(65536 / (std::max(g.max_threads, 32u) * registers)));
}

std::string megakernel_source(const TaskGraph& g) {
  std::vector<Rewritten> functions;
  for (size_t i = 0; i < g.functions.size(); ++i) functions.push_back(rewrite(g.functions[i], static_cast<unsigned>(i)));
  std::ostringstream s;
  s << "// megakernel of " << g.steps.size() << " steps, " << g.kernels.size() << " task kernels, " << g.functions.size()
    << " task functions, " << g.tasks << " tasks\n"
    << "#define SINTER_MEGAKERNEL 1\n"
    << "#include \"mega/megakernel.cuh\"\n";
  std::set<std::string> included;
  for (const Rewritten& f : functions) {
    for (const std::string& inc : f.includes) {
      if (included.insert(inc).second) s << inc << "\n";
    }
  }
  for (size_t i = 0; i < functions.size(); ++i) {
    s << "\n// ---- task function " << i << " ----\nnamespace sinter_task" << i << " {\n"
      << functions[i].body << "}  // namespace sinter_task" << i << "\n";
  }
  s << "\nstruct SinterMegaDispatch {\n"
    << "  __device__ __forceinline__ void operator()(u32 function, const char* args) const {\n"
    << "    switch (function) {\n";
  for (size_t i = 0; i < functions.size(); ++i) {
    s << "      case " << i << ": sinter_task" << i << "::" << g.functions[i].entry << "(*reinterpret_cast<const sinter_task"
      << i << "::SinterTaskArgs*>(args)); return;\n";
  }
  s << "      default: return;\n    }\n  }\n};\n\n"
    << "struct SinterMegaPrologue {\n"
    << "  __device__ __forceinline__ void operator()(u32 function, const char* args, bool drain) const {\n"
    << "    switch (function) {\n";
  for (size_t i = 0; i < functions.size(); ++i) {
    if (!g.functions[i].prologue) continue;
    s << "      case " << i << ": sinter_task" << i << "::sinter_task_prologue(*reinterpret_cast<const sinter_task" << i
      << "::SinterTaskArgs*>(args), drain); return;\n";
  }
  s << "      default: (void)args; (void)drain; return;\n    }\n  }\n};\n\n"
    << "extern \"C\" __global__ void __launch_bounds__(" << g.max_threads << ", " << megakernel_min_blocks(g) << ") "
    << kMegakernelEntry
    << "(const __grid_constant__ SinterMegaParams p) {\n"
    << "  sinter_mega_main(p, SinterMegaDispatch{}, SinterMegaPrologue{});\n}\n";
  return s.str();
}

}  // namespace sinter::mega

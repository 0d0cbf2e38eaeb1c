// Sinter's one exception type. Every user-facing failure (a bad graph, a malformed file, an
// unsupported pattern, a failed CUDA call) is a sinter::Error with a code that says which kind of
// failure it is and a message that names the node or tensor and says what was expected and found.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace sinter {

enum class ErrorCode {
  invalid_graph,    // the graph breaks a rule of the IR (shapes, dtypes, topology)
  invalid_argument, // a bad argument to an API call or the CLI
  invalid_state,    // a call made before what it needs (an enqueue before every tensor is bound)
  parse,            // a malformed or inconsistent file (JSON graph, plan bundle, cache entry)
  unsupported,      // a valid request that this build or engine cannot do
  io,               // reading or writing a file failed
  cuda,             // a CUDA runtime or driver call failed
  compile,          // run-time compilation of a kernel failed
  corrupt_bundle,   // a plan bundle fails its checks
  timeout,          // a megakernel task waited past the watchdog's limit for a producer
  internal,         // a broken invariant inside Sinter: a bug, please report it
};

std::string_view to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }
  // The message without the "[code] " prefix that what() carries.
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace sinter

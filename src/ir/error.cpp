#include "sinter/error.hpp"
#include "sinter/log.hpp"

namespace sinter {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_graph: return "invalid graph";
    case ErrorCode::invalid_argument: return "invalid argument";
    case ErrorCode::invalid_state: return "invalid state";
    case ErrorCode::parse: return "parse error";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::io: return "I/O error";
    case ErrorCode::cuda: return "CUDA error";
    case ErrorCode::compile: return "compile error";
    case ErrorCode::corrupt_bundle: return "corrupt bundle";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::internal: return "internal error";
  }
  return "error";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(to_string(code)) + ": " + message),
      code_(code),
      message_(message) {}

std::string_view to_string(LogSeverity s) {
  switch (s) {
    case LogSeverity::error: return "error";
    case LogSeverity::warning: return "warning";
    case LogSeverity::info: return "info";
    case LogSeverity::debug: return "debug";
  }
  return "?";
}

}  // namespace sinter

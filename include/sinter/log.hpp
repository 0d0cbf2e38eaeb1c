// Messages from the library. Sinter never writes to stdout or stderr itself: what it has to say
// (each compile pass's time, a candidate an engine could not offer, a fallback, a timing cache it
// ignored) goes to the log callback of the call that caused it, or nowhere when there is none.
#pragma once

#include <functional>
#include <string_view>

namespace sinter {

enum class LogSeverity { error, warning, info, debug };
std::string_view to_string(LogSeverity s);  // "error", "warning", "info", "debug"

using LogCallback = std::function<void(LogSeverity, std::string_view message)>;

}  // namespace sinter

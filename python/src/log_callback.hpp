// A Python callable as the library's LogCallback: called as fn(severity: str, message: str).
#pragma once

#include <nanobind/nanobind.h>

#include "sinter/log.hpp"

namespace sinter::python {

namespace nb = nanobind;

// None gives an empty callback. The callable may run while the GIL is released (a compile); the
// callback takes the GIL for each call, and for the callable's last reference when it goes.
LogCallback python_log_callback(nb::object fn);

}  // namespace sinter::python

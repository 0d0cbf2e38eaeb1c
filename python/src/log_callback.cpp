#include "log_callback.hpp"

#include <nanobind/stl/string_view.h>

#include <memory>

namespace sinter::python {

LogCallback python_log_callback(nb::object fn) {
  if (fn.is_none()) return {};
  // Copies of a std::function copy what it holds; a shared_ptr keeps those copies from touching
  // the Python reference count, which needs the GIL, and drops the last reference under the GIL.
  std::shared_ptr<nb::object> held(new nb::object(std::move(fn)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
  return [held](LogSeverity severity, std::string_view message) {
    nb::gil_scoped_acquire gil;
    (*held)(to_string(severity), message);
  };
}

}  // namespace sinter::python

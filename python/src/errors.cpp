// sinter::Error as a Python exception. The exception classes live in python/sinter/errors.py
// (sinter.Error and one subclass per ErrorCode); the translator here asks that module for the
// instance that matches the C++ error's code, so the mapping is written once, in Python.
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "sinter/error.hpp"

namespace sinter::python {

void bind_errors(nb::module_& m) {
  nb::enum_<ErrorCode>(m, "ErrorCode", "Which kind of failure a sinter.Error is")
      .value("invalid_graph", ErrorCode::invalid_graph)
      .value("invalid_argument", ErrorCode::invalid_argument)
      .value("invalid_state", ErrorCode::invalid_state)
      .value("parse", ErrorCode::parse)
      .value("unsupported", ErrorCode::unsupported)
      .value("io", ErrorCode::io)
      .value("cuda", ErrorCode::cuda)
      .value("compile", ErrorCode::compile)
      .value("corrupt_bundle", ErrorCode::corrupt_bundle)
      .value("timeout", ErrorCode::timeout)
      .value("internal", ErrorCode::internal);

  // The label that starts what() ("invalid graph", "I/O error"), so that str() of a Python error
  // reads exactly as the C++ one.
  m.def("_error_label", [](ErrorCode code) { return std::string(to_string(code)); });

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      nb::object error = nb::module_::import_("sinter.errors").attr("_from_library")(e.code(), e.message());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    }
  });
}

}  // namespace sinter::python

// sinter._core: the public C++ API of Sinter (include/sinter) as a Python extension. The package
// python/sinter re-exports it and adds the numpy conventions of the CPU reference.
#include "bindings.hpp"

NB_MODULE(_core, m) {
  using namespace sinter::python;
  m.doc() = "Sinter's C++ library: graphs, the CPU reference, compile, Plan and Runner";
  m.attr("__version__") = SINTER_VERSION;
  bind_errors(m);
  bind_enums(m);
  bind_tensor(m);
  bind_graph(m);
  bind_reference(m);
  bind_ranks(m);
  bind_plan(m);
  bind_runner(m);
}

// Writes examples/*.json from the C++ builders in example_graphs.cpp.
//   sinter_make_examples [OUTPUT_DIR]
#include <cstdio>
#include <exception>

#include "example_graphs.hpp"
#include "sinter/json.hpp"

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : SINTER_EXAMPLES_DIR;
  try {
    for (const auto& ex : sinter::examples::all_examples()) {
      sinter::Graph g = ex.build();
      g.validate();
      sinter::save_graph_file(g, dir + "/" + ex.file);
      std::printf("wrote %s/%s\n", dir.c_str(), ex.file.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sinter_make_examples: %s\n", e.what());
    return 1;
  }
  return 0;
}
